"""The project index for a run: every Python file under each project root (the nearest folder
holding ``pyproject.toml`` or ``.git``), not only the files named on the command line, read once
per run. Each checked file gets a :class:`~syncfix.analysis.project.ModuleContext` (its module
name, the names other files import from it); the results cache keys on it, so a file's cached
findings are dropped exactly when what other files import from it changes.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path

from .analysis.hotness import file_calls
from .analysis.hotness import hot_functions as hot_functions_of
from .analysis.project import ModuleContext, ProjectIndex
from .config import DEFAULT_EXCLUDE, DEFAULT_HOT_FUNCTIONS
from .repetition import is_test_path

MARKERS = ("pyproject.toml", ".git")


def project_root(path: Path) -> Path | None:
    """The nearest folder above ``path`` that holds ``pyproject.toml`` or ``.git``."""
    for folder in path.resolve().parents:
        if any((folder / m).exists() for m in MARKERS):
            return folder
    return None


def module_name(path: Path, root: Path) -> str:
    rel = path.resolve().relative_to(root).with_suffix("")
    parts = list(rel.parts)
    if parts and parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def python_files(root: Path) -> Iterable[Path]:
    skip = set(DEFAULT_EXCLUDE)
    for folder, dirs, files in os.walk(root):
        dirs[:] = [d for d in dirs if d not in skip and not d.startswith(".")]
        for name in files:
            if name.endswith(".py"):
                yield Path(folder) / name


def build_index(
    root: Path, hot_functions: Iterable[str] = DEFAULT_HOT_FUNCTIONS
) -> tuple[ProjectIndex, dict[str, frozenset[str]]]:
    """The imports of every Python file under ``root`` (unreadable files import nothing), and per
    module the functions other code calls from repeating code (analysis/hotness.py)."""
    index = ProjectIndex()
    sources: dict[str, tuple[Path, bytes]] = {}
    for path in python_files(root):
        try:
            data = path.read_bytes()
        except OSError:
            continue
        name = module_name(path, root)
        index.add(name, data)
        sources[name] = (path, data)
    resolve = _suffixes(sources)
    calls = [
        file_calls(name, data, hot_functions, resolve)
        for name, (path, data) in sources.items()
        if not is_test_path(str(path.relative_to(root)))
    ]
    return index, hot_functions_of(calls)


def _suffixes(modules: Iterable[str]) -> dict[str, str]:
    """Each dotted suffix of a module's name (``pkg.nn`` is also ``nn``: a folder on sys.path)
    that names one module only."""
    seen: dict[str, set[str]] = {}
    for m in modules:
        parts = m.split(".")
        for i in range(len(parts)):
            seen.setdefault(".".join(parts[i:]), set()).add(m)
    return {suffix: next(iter(ms)) for suffix, ms in seen.items() if len(ms) == 1 or suffix in ms}


def contexts(files: Iterable[str], hot_functions: Iterable[str] = DEFAULT_HOT_FUNCTIONS) -> dict[str, ModuleContext]:
    """Each file's context, one index per project root; files outside any project get none."""
    indexes: dict[Path, tuple[ProjectIndex, dict[str, frozenset[str]]]] = {}
    roots: dict[Path, Path | None] = {}
    out: dict[str, ModuleContext] = {}
    hot_names = tuple(hot_functions)
    for f in files:
        path = Path(f)
        folder = path.resolve().parent
        if folder not in roots:
            roots[folder] = project_root(path)
        root = roots[folder]
        if root is None:
            continue
        if root not in indexes:
            indexes[root] = build_index(root, hot_names)
        index, hot = indexes[root]
        name = module_name(path, root)
        out[f] = ModuleContext(name, index.imported_from(name), hot.get(name, frozenset()))
    return out
