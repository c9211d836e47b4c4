"""The programmatic API: check or fix source text in memory (no files touched)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace

from .config import Settings
from .engine import process_source
from .model import Finding


def _settings(
    select: Iterable[str] | None, ignore: Iterable[str] | None, unsafe_fixes: bool, include_cold: bool
) -> Settings:
    s = Settings(unsafe_fixes=unsafe_fixes, include_cold=include_cold)
    if select is not None:
        s = replace(s, select=tuple(select))
    if ignore is not None:
        s = replace(s, ignore=tuple(ignore))
    return s


def check_code(
    source: str,
    *,
    path: str = "<string>",
    select: Iterable[str] | None = None,
    ignore: Iterable[str] | None = None,
    unsafe_fixes: bool = False,
    include_cold: bool = False,
) -> list[Finding]:
    """Findings for ``source`` (each with its fix, if any, and whether it is safe). As in the CLI,
    only where the sync repeats (loops, step functions) unless ``include_cold``."""
    _, findings, _ = process_source(
        source.encode("utf-8"), path, _settings(select, ignore, unsafe_fixes, include_cold), fix=False
    )
    return findings


def fix_code_with_findings(
    source: str,
    *,
    path: str = "<string>",
    select: Iterable[str] | None = None,
    ignore: Iterable[str] | None = None,
    unsafe_fixes: bool = False,
    include_cold: bool = False,
) -> tuple[str, list[Finding]]:
    """``source`` with syncfix's fixes applied, and the findings whose fixes were applied."""
    new, _, applied = process_source(
        source.encode("utf-8"), path, _settings(select, ignore, unsafe_fixes, include_cold), fix=True
    )
    return new.decode("utf-8"), applied


def fix_code(
    source: str,
    *,
    path: str = "<string>",
    select: Iterable[str] | None = None,
    ignore: Iterable[str] | None = None,
    unsafe_fixes: bool = False,
    include_cold: bool = False,
) -> str:
    """``source`` with syncfix's fixes applied (safe ones, plus unsafe ones if asked)."""
    new, _, _ = process_source(
        source.encode("utf-8"), path, _settings(select, ignore, unsafe_fixes, include_cold), fix=True, with_edits=False
    )
    return new.decode("utf-8")
