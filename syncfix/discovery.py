"""Which files to look at: named files, folders walked for ``*.py``, ``.gitignore`` (pathspec),
default and configured excludes. An explicitly named file is always processed unless
``--force-exclude``. Symlinked files are visited once (by their target) and never outside the
roots given; symlinked folders are not followed.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import pathspec

from .config import Settings

PYTHON_SUFFIXES = (".py", ".pyi")


@dataclass
class Discovered:
    files: list[str] = field(default_factory=list)
    errors: list[tuple[str, str]] = field(default_factory=list)  # (path, reason)
    notes: list[tuple[str, str]] = field(default_factory=list)  # skipped on purpose, with why


class _Ignores:
    """``.gitignore`` files from the repository root down, each matched relative to its folder."""

    def __init__(self, enabled: bool) -> None:
        self.enabled = enabled
        self._cache: dict[Path, pathspec.PathSpec | None] = {}
        self._chains: dict[Path, list[Path]] = {}  # folder -> it and its parents up to the repo

    def _spec(self, folder: Path) -> pathspec.PathSpec | None:
        if folder not in self._cache:
            spec = None
            gi = folder / ".gitignore"
            if self.enabled and gi.is_file():
                try:
                    lines = gi.read_text(encoding="utf-8", errors="replace").splitlines()
                    spec = pathspec.GitIgnoreSpec.from_lines(lines)
                except OSError:
                    spec = None
            self._cache[folder] = spec
        return self._cache[folder]

    def ignored(self, path: Path, is_dir: bool) -> bool:
        if not self.enabled:
            return False
        chain = self._chains.get(path.parent)
        if chain is None:  # one walk up per folder, not per file: each step stats a .git
            chain = self._chains[path.parent] = _folders_up_to_repo(path.parent)
        for folder in chain:
            spec = self._spec(folder)
            if spec is None:
                continue
            rel = path.relative_to(folder).as_posix() + ("/" if is_dir else "")
            if spec.match_file(rel):
                return True
        return False


def _folders_up_to_repo(folder: Path) -> list[Path]:
    out = []
    for f in (folder, *folder.parents):
        out.append(f)
        if (f / ".git").exists():
            break
    return out


def _exclude_spec(settings: Settings) -> pathspec.PathSpec:
    return pathspec.GitIgnoreSpec.from_lines([*settings.exclude, *settings.extend_exclude])


def _excluded(path: Path, spec: pathspec.PathSpec, root: Path, is_dir: bool) -> bool:
    suffix = "/" if is_dir else ""
    if spec.match_file(path.name + suffix):
        return True
    try:
        rel = path.relative_to(root).as_posix()
    except ValueError:
        rel = path.as_posix()
    return spec.match_file(rel + suffix)


def _in_excluded_folder(path: Path, spec: pathspec.PathSpec, ignores: _Ignores, root: Path) -> bool:
    """Is a named file inside a folder that a walk would have skipped (``build/gen.py``)?"""
    for folder in path.parents:
        if folder == root or root not in folder.parents:
            break
        if _excluded(folder, spec, root, True) or ignores.ignored(folder, True):
            return True
    return False


def discover(paths: Sequence[str], settings: Settings, *, force_exclude: bool | None = None) -> Discovered:
    force = settings.force_exclude if force_exclude is None else force_exclude
    out = Discovered()
    spec = _exclude_spec(settings)
    ignores = _Ignores(settings.respect_gitignore)
    root = (settings.root or Path.cwd()).resolve()
    seen: set[str] = set()
    roots = [Path(os.path.abspath(p)) for p in paths]

    def add(shown: str) -> None:
        real = os.path.realpath(shown)
        if real in seen:
            return
        seen.add(real)
        out.files.append(shown)

    for given, absolute in zip(paths, roots, strict=True):
        if not os.path.lexists(given):
            out.errors.append((given, "No such file or directory"))
            continue
        if os.path.isfile(given) or (os.path.islink(given) and not os.path.isdir(given)):
            if given.endswith(".ipynb"):
                out.notes.append((given, "notebooks are not supported yet; skipped"))
                continue
            if force and (
                _excluded(absolute, spec, root, False)
                or ignores.ignored(absolute, False)
                or _in_excluded_folder(absolute, spec, ignores, root)
            ):
                out.notes.append((given, "excluded"))
                continue
            add(given)
            continue
        if not os.path.isdir(given):
            out.errors.append((given, "not a file or directory"))
            continue
        for dirpath, dirnames, filenames in _walk(given, out):
            dpath = Path(os.path.abspath(dirpath))
            keep = []
            for d in sorted(dirnames):
                full = dpath / d
                if os.path.islink(full):
                    continue  # never follow folder links: no loops, no escaping the roots
                if _excluded(full, spec, root, True) or ignores.ignored(full, True):
                    continue
                keep.append(d)
            dirnames[:] = keep
            for name in sorted(filenames):
                if not name.endswith(PYTHON_SUFFIXES):
                    continue
                full = dpath / name
                if _excluded(full, spec, root, False) or ignores.ignored(full, False):
                    continue
                shown = os.path.join(dirpath, name)
                if os.path.islink(shown):
                    target = os.path.realpath(shown)
                    if not os.path.exists(target):
                        out.errors.append((shown, "broken symbolic link"))
                        continue
                    if not _inside_any(Path(target), roots):
                        out.notes.append((shown, "symbolic link to outside the given paths"))
                        continue
                add(shown)
    return out


def _walk(top: str, out: Discovered) -> Iterable[tuple[str, list[str], list[str]]]:
    def onerror(exc: OSError) -> None:
        out.errors.append((exc.filename or top, exc.strerror or str(exc)))

    return os.walk(top, onerror=onerror, followlinks=False)


def _inside_any(path: Path, roots: Sequence[Path]) -> bool:
    real_roots = [Path(os.path.realpath(r)) for r in roots]
    return any(path == r or r in path.parents for r in real_roots)
