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

from .analysis.project import ModuleContext, ProjectIndex
from .config import DEFAULT_EXCLUDE

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


def build_index(root: Path) -> ProjectIndex:
    """The imports of every Python file under ``root`` (unreadable files import nothing)."""
    index = ProjectIndex()
    for path in python_files(root):
        try:
            data = path.read_bytes()
        except OSError:
            continue
        index.add(module_name(path, root), data)
    return index


def contexts(files: Iterable[str]) -> dict[str, ModuleContext]:
    """Each file's context, one index per project root; files outside any project get none."""
    indexes: dict[Path, ProjectIndex] = {}
    roots: dict[Path, Path | None] = {}
    out: dict[str, ModuleContext] = {}
    for f in files:
        path = Path(f)
        folder = path.resolve().parent
        if folder not in roots:
            roots[folder] = project_root(path)
        root = roots[folder]
        if root is None:
            continue
        if root not in indexes:
            indexes[root] = build_index(root)
        name = module_name(path, root)
        out[f] = ModuleContext(name, indexes[root].imported_from(name))
    return out
