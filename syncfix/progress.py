"""A progress bar on stderr for long runs: shown only on a terminal, and only after a second.

Commands report progress through a plain callback, ``tick(done, total, what="")``, so the counts
are testable without a terminal; :func:`progress_bar` turns it into a transient rich bar. Nothing
is ever written to stdout, where reports and diffs go.
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import IO, Any

Tick = Callable[..., None]  # tick(done: int, total: int, what: str = "")
DELAY_S = 1.0  # runs shorter than this show no bar


def no_tick(done: int, total: int, what: str = "") -> None:
    """The callback when no bar is shown."""


class ProgressBar:
    """The callback behind the bar: records the latest counts; a timer shows the bar late."""

    def __init__(self, label: str, stream: IO[str], delay: float) -> None:
        self.label = label
        self.stream = stream
        self.state: tuple[int, int, str] = (0, 0, "")
        self._lock = threading.Lock()
        self._progress: Any = None
        self._task: Any = None
        self._closed = False
        self._timer = threading.Timer(delay, self._show)
        self._timer.daemon = True
        self._timer.start()

    def __call__(self, done: int, total: int, what: str = "") -> None:
        with self._lock:
            self.state = (done, total, what)
            self._update()

    def _describe(self, what: str) -> str:
        return f"{self.label} {what}".strip()

    def _show(self) -> None:
        from rich.console import Console
        from rich.progress import (
            BarColumn,
            MofNCompleteColumn,
            Progress,
            TextColumn,
            TimeElapsedColumn,
        )

        with self._lock:
            if self._closed:
                return
            console = Console(file=self.stream, highlight=False)
            self._progress = Progress(
                TextColumn("{task.description}"),
                BarColumn(),
                MofNCompleteColumn(),
                TimeElapsedColumn(),
                console=console,
                transient=True,
            )
            done, total, what = self.state
            self._task = self._progress.add_task(self._describe(what), total=total or None, completed=done)
            self._progress.start()

    def _update(self) -> None:
        if self._progress is not None:
            done, total, what = self.state
            self._progress.update(self._task, completed=done, total=total or None, description=self._describe(what))

    def close(self) -> None:
        self._timer.cancel()
        with self._lock:
            self._closed = True
            if self._progress is not None:
                self._progress.stop()
                self._progress = None


@contextmanager
def progress_bar(
    label: str, *, enabled: bool = True, stream: IO[str] | None = None, delay: float | None = None
) -> Iterator[Tick]:
    """A ``tick`` callback that draws a bar on ``stream`` (stderr) once ``delay`` seconds have
    passed, when ``enabled`` and ``stream`` is a terminal; otherwise a callback that does nothing."""
    stream = sys.stderr if stream is None else stream
    isatty = getattr(stream, "isatty", None)
    if not enabled or isatty is None or not isatty():
        yield no_tick
        return
    bar = ProgressBar(label, stream, DELAY_S if delay is None else delay)
    try:
        yield bar
    finally:
        bar.close()
