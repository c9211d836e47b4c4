"""The programmatic API: check or fix source text in memory (no files touched)."""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from dataclasses import replace
from pathlib import Path

from .analysis.project import ModuleContext
from .config import Settings, load_settings
from .engine import process_source
from .model import Finding
from .observed import Need, Observations
from .projects import contexts


def _settings(
    select: Iterable[str] | None,
    ignore: Iterable[str] | None,
    unsafe_fixes: bool,
    include_cold: bool,
    observations: Observations | str | None = None,
    base: Settings | None = None,
) -> Settings:
    if isinstance(observations, str):
        observations = Observations.load(observations)
    s = replace(base or Settings(), unsafe_fixes=unsafe_fixes, include_cold=include_cold, observations=observations)
    if select is not None:
        s = replace(s, select=tuple(select))
    if ignore is not None:
        s = replace(s, ignore=tuple(ignore))
    return s


def _in_project(path: str, project: bool) -> tuple[Settings | None, ModuleContext | None]:
    """With ``project``, for a file on disk: its project's ``[tool.syncfix]`` settings and its
    place in the project (what ``syncfix check``/``apply`` on it would use); else nothing."""
    if not project or not os.path.isfile(path):
        return None, None
    settings = load_settings(Path(path).resolve().parent)
    places = contexts([path], settings.hot_functions, closed=settings.closed_project)
    return settings, places.get(path)


def check_code(
    source: str,
    *,
    path: str = "<string>",
    select: Iterable[str] | None = None,
    ignore: Iterable[str] | None = None,
    unsafe_fixes: bool = False,
    include_cold: bool = False,
    observations: Observations | str | None = None,
) -> list[Finding]:
    """Findings for ``source`` (each with its fix, if any, and whether it is safe). As in the CLI,
    only where the sync repeats (loops, step functions) unless ``include_cold``. With
    ``observations`` (an observation file or its path; ``path`` must then be the file's real
    path), fixes whose facts the recorded run showed come as *observed*."""
    _, findings, _ = process_source(
        source.encode("utf-8"), path, _settings(select, ignore, unsafe_fixes, include_cold, observations), fix=False
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
    observations: Observations | str | None = None,
    project: bool = False,
) -> tuple[str, list[Finding]]:
    """``source`` with syncfix's fixes applied, and the findings whose fixes were applied.
    ``project``: ``path`` is a file on disk; judge it with its project's settings and the
    facts of the project's other files, as ``syncfix apply`` would."""
    base, context = _in_project(path, project)
    new, _, applied = process_source(
        source.encode("utf-8"), path, _settings(select, ignore, unsafe_fixes, include_cold, observations, base),
        fix=True, context=context,
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
    observations: Observations | str | None = None,
    project: bool = False,
) -> str:
    """``source`` with syncfix's fixes applied (safe ones, plus unsafe ones if asked).
    ``project``: as for :func:`fix_code_with_findings`."""
    base, context = _in_project(path, project)
    new, _, _ = process_source(
        source.encode("utf-8"), path, _settings(select, ignore, unsafe_fixes, include_cold, observations, base),
        fix=True, with_edits=False, context=context,
    )
    return new.decode("utf-8")


def observable_needs(
    paths: Sequence[str],
    *,
    select: Iterable[str] | None = None,
    ignore: Iterable[str] | None = None,
    include_cold: bool = False,
) -> dict[str, list[Need]]:
    """Per file (absolute path), the facts that fixes there wait for: what ``syncfix trace
    --record`` watches. Files that cannot be read or parsed are left out."""
    settings = _settings(select, ignore, False, include_cold)
    out: dict[str, list[Need]] = {}
    for path in paths:
        full = os.path.abspath(path)
        try:
            with open(full, "rb") as fh:
                data = fh.read()
            _, findings, _ = process_source(data, full, settings, fix=False, with_edits=False)
        except Exception:  # noqa: BLE001 - a file syncfix cannot check has nothing to watch
            continue
        needs = list(dict.fromkeys(n for f in findings for n in f.needs))
        if needs:
            out[full] = needs
    return out
