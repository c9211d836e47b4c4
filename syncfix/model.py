"""Plain data that crosses process boundaries: findings, fixes as text edits, file results.

Nothing here holds a CST node, so every object pickles cheaply back from worker processes.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field

from .observed import Need


class Applicability(str, enum.Enum):
    """How far a fix may be trusted (ruff's model)."""

    SAFE = "safe"  # keeps values, types, shapes, dtypes, errors and side effects exactly
    # rests on facts a recorded run observed on every execution (syncfix/observed.py); applied
    # only with --observed
    OBSERVED = "observed"
    UNSAFE = "unsafe"  # may change behaviour; applied only with --unsafe-fixes

    def __str__(self) -> str:  # pragma: no cover - trivial
        return self.value


@dataclass(frozen=True)
class Edit:
    """Replace whole lines ``start_line..end_line`` (1-based, inclusive) with ``content``.

    ``content`` holds complete lines with their line endings; an empty string deletes.
    A pure insertion before ``start_line`` has ``end_line == start_line - 1``.
    """

    start_line: int
    end_line: int
    content: str
    original: str  # the lines being replaced, for previews


@dataclass(frozen=True)
class FixInfo:
    applicability: Applicability
    description: str
    edit: Edit | None = None  # filled by the engine once the fix's text is known
    # the facts an observed fix rests on (empty for safe and unsafe fixes)
    needs: tuple[Need, ...] = ()


@dataclass(frozen=True)
class Finding:
    code: str
    name: str
    message: str
    path: str
    line: int  # 1-based
    column: int  # 1-based, in code points
    end_line: int
    end_column: int  # 1-based, exclusive, in code points
    fix: FixInfo | None = None
    # what a fix here would need observed on a run (``syncfix trace --record``) when it has none
    # yet, or only an unsafe one resting on a likely fact that a run could confirm
    needs: tuple[Need, ...] = ()

    @property
    def fixable(self) -> bool:
        return self.fix is not None

    def sort_key(self) -> tuple:
        return (self.path, self.line, self.column, self.code, self.message)


@dataclass(frozen=True)
class Problem:
    """A path syncfix could not check (or write): the machine formats report it beside the
    findings, as ruff reports a syntax error, so a CI reader sees it where the findings are."""

    path: str
    message: str
    line: int | None = None  # where the message points, if it points anywhere (a syntax error)
    column: int | None = None


@dataclass
class FileResult:
    """What processing one file produced."""

    path: str
    findings: list[Finding] = field(default_factory=list)  # left after fixing
    fixed: list[Finding] = field(default_factory=list)  # applied fixes
    source: str | None = None  # original text (decoded) when a diff is wanted
    new_source: str | None = None  # rewritten text when it changed
    error: str | None = None  # a per-file problem: unreadable, syntax error, unwritable...
    error_at: tuple[int, int] | None = None  # the (line, column) the error names, if any
    written: bool = False
    skipped: str | None = None  # why nothing was looked at (e.g. prefilter), for --verbose
    # new bytes to write once every file is analysed (``Job.defer_write``), with what was read
    # (a ``fileio.Snapshot``): no file's analysis sees another file this run already rewrote
    pending: tuple[bytes, object] | None = None

    @property
    def changed(self) -> bool:
        return self.new_source is not None
