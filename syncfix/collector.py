"""When Python's cycle collector runs during a run over many files (the command line only).

A file's trees and facts are a few hundred thousand objects that live while the file is
analysed and die together when it is done; the project index lives for the whole run. With
CPython's default thresholds the collector traverses both again and again: on four real code
bases it took about a quarter of a one-core run (docs/benchmarks.md, "Cycle collection"). So
the objects alive before the files are processed are frozen (never traversed again), and while
one file is processed automatic collection waits; one young collection after the file frees its
cycles, each object traversed about once. A file too large for its garbage to wait keeps the
collector on. The library API (:mod:`syncfix.api`) leaves the caller's collector alone.
"""

from __future__ import annotations

import gc
import os
from collections.abc import Iterator
from contextlib import contextmanager

# Bytes of source under which a file's cyclic garbage waits until the file is done: a 330 KB file
# then peaks about 18 MB higher, so a file of this size stays well inside the memory target.
HOLD_LIMIT = 1 << 20


@contextmanager
def long_lived_frozen() -> Iterator[None]:
    """Exclude every object alive now (modules, rules, the project index) from collections
    until the block ends (then they are ordinary old objects again)."""
    gc.freeze()
    try:
        yield
    finally:
        gc.unfreeze()


def freeze_for_worker() -> None:
    """In a worker process: what it inherited (or imported) lives as long as it does."""
    gc.freeze()


@contextmanager
def one_file(path: str) -> Iterator[None]:
    """Process one file with automatic collection held, then collect what it left in cycles."""
    try:
        size = os.path.getsize(path)
    except OSError:
        size = 0
    if size > HOLD_LIMIT or not gc.isenabled():
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.enable()
        gc.collect(1)
