"""Run the analysis of one file on a thread whose stack fits long chains of definitions.

The facts of a name recurse through the definitions that reach it, so a function of a few
thousand chained updates (``x = x + ...``) recurses a few thousand levels deep: more than the
interpreter's default limit and the main thread's C stack allow. Pages of the large stack are
only touched as deep as the recursion goes.
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")

STACK_BYTES = 512 * 1024 * 1024
RECURSION_LIMIT = 200_000
_THREAD_NAME = "syncfix-analysis"


def call_deep(fn: Callable[..., T], *args: object, **kwargs: object) -> T:
    """``fn(*args, **kwargs)`` on a thread with a large stack (inline when already on one)."""
    if threading.current_thread().name == _THREAD_NAME:
        return fn(*args, **kwargs)
    outcome: list = []

    def run() -> None:
        try:
            outcome.append((True, fn(*args, **kwargs)))
        except BaseException as exc:  # re-raised on the calling thread
            outcome.append((False, exc))

    if sys.getrecursionlimit() < RECURSION_LIMIT:
        sys.setrecursionlimit(RECURSION_LIMIT)
    previous = threading.stack_size(STACK_BYTES)
    try:
        thread = threading.Thread(target=run, name=_THREAD_NAME, daemon=True)
        thread.start()
    finally:
        threading.stack_size(previous)
    thread.join()
    ok, value = outcome[0]
    if not ok:
        raise value
    return value
