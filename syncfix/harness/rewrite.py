"""Rewriting the user's program on the fly, in memory: the user's files are never written.

The rewritten run compiles the script, and every module it imports from the project root, from
syncfix's rewrite of the source instead of the file. A meta-path finder hands out a loader that
always compiles from source (never from a ``.pyc``, which may hold the *original* code) and writes
no bytecode. Code objects of changed files get a pseudo filename ``<syncfix:/abs/path.py>`` whose
text is put into ``linecache``, so tracebacks, ``inspect.getsource`` and ``torch.compile`` see the
rewritten text; ``__file__`` stays the real path. A line map (from a ``difflib`` alignment of the
two texts) takes a rewritten line back to the original line it came from, so syncs are compared
line by line between the two runs.
"""

from __future__ import annotations

import difflib
import importlib.abc
import importlib.machinery
import importlib.util
import linecache
import os
import sys
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from types import CodeType, ModuleType
from typing import Any

Fixer = Callable[[str, str], str]  # (source, path) -> rewritten source

PSEUDO_PREFIX = "<syncfix:"
_SKIP_DIRS = frozenset(
    {
        "site-packages",
        "dist-packages",
        ".venv",
        "venv",
        ".tox",
        ".nox",
        ".git",
        "__pycache__",
        "build",
    }
)
_SYNCFIX_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def make_fixer(
    *,
    select: Sequence[str] | None = None,
    ignore: Sequence[str] | None = None,
    unsafe_fixes: bool = False,
    spec: str | None = None,
    texts: dict[str, str] | None = None,
    observations: str | None = None,
) -> Fixer:
    """syncfix's own fixes (``fix_code``), a custom ``module:function(source, path) -> str``, or
    given ``texts`` (path -> rewritten source; ``apply --verify`` tries chosen fixes that way)."""
    if texts is not None:
        given = {os.path.abspath(p): t for p, t in texts.items()}
        return lambda source, path: given.get(os.path.abspath(path), source)
    if spec:
        from .target import load_object

        fn = load_object(spec)
        if not callable(fn):
            raise TypeError(f"fixer {spec!r} is not callable")
        return lambda source, path: fn(source, path)

    from syncfix import fix_code

    seen: Any = None
    if observations:
        from syncfix.observed import Observations

        seen = Observations.load(observations)  # once, not per file

    def fixer(source: str, path: str) -> str:
        # judged in its project, with its settings, as ``syncfix apply`` would judge it
        return fix_code(
            source, path=path, select=select, ignore=ignore, unsafe_fixes=unsafe_fixes, observations=seen,
            project=True,
        )

    return fixer


@dataclass(frozen=True)
class Hunk:
    """One changed region: original lines ``start..end`` (1-based, inclusive) became rewritten
    lines ``new_start..new_end``. A pure insertion has ``end == start - 1`` and is charged to the
    original line before it (``anchor``)."""

    start: int
    end: int
    new_start: int
    new_end: int
    before: str
    after: str

    @property
    def anchor(self) -> int:
        return max(self.start if self.end >= self.start else self.start - 1, 1)

    @property
    def lines(self) -> range:
        """Original lines this hunk answers for (the anchor for an insertion)."""
        if self.end >= self.start:
            return range(self.start, self.end + 1)
        return range(self.anchor, self.anchor + 1)

    def to_dict(self) -> dict[str, Any]:
        return {
            "start": self.start,
            "end": self.end,
            "new_start": self.new_start,
            "new_end": self.new_end,
            "before": self.before,
            "after": self.after,
        }


def align(old: str, new: str) -> tuple[list[Hunk], list[int]]:
    """Hunks between ``old`` and ``new``, and ``line_map[j]`` = original line of new line j+1."""
    a = old.splitlines(keepends=True)
    b = new.splitlines(keepends=True)
    hunks: list[Hunk] = []
    line_map: list[int] = [0] * len(b)
    sm = difflib.SequenceMatcher(None, a, b, autojunk=False)
    for tag, i1, i2, j1, j2 in sm.get_opcodes():
        if tag == "equal":
            for k in range(j2 - j1):
                line_map[j1 + k] = i1 + k + 1
            continue
        hunk = Hunk(i1 + 1, i2, j1 + 1, j2, "".join(a[i1:i2]), "".join(b[j1:j2]))
        hunks.append(hunk)
        for k in range(j2 - j1):
            if i2 > i1:  # replaced: spread over the old lines, the surplus to the last one
                line_map[j1 + k] = i1 + 1 + min(k, i2 - i1 - 1)
            else:  # inserted
                line_map[j1 + k] = hunk.anchor
    return hunks, line_map


@dataclass
class RewrittenFile:
    path: str
    source: str
    new_source: str
    hunks: list[Hunk]
    line_map: list[int]
    error: str | None = None  # the fixer failed; the original was run instead

    @property
    def changed(self) -> bool:
        return self.new_source != self.source

    @property
    def code_filename(self) -> str:
        return f"{PSEUDO_PREFIX}{self.path}>" if self.changed else self.path

    def original_line(self, new_line: int) -> int:
        if 1 <= new_line <= len(self.line_map):
            return self.line_map[new_line - 1]
        return new_line

    def to_dict(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "changed": self.changed,
            "hunks": [h.to_dict() for h in self.hunks],
            "error": self.error,
        }


@dataclass
class Rewriter:
    """Rewrites files under ``root`` as they are loaded. ``fixer=None`` runs the originals (the
    same code path, so both runs differ only by the rewrite)."""

    fixer: Fixer | None
    root: str
    files: dict[str, RewrittenFile] = field(default_factory=dict)  # by real path
    _by_code_name: dict[str, RewrittenFile] = field(default_factory=dict)
    _finder: Any = None
    _fixing: int = 0
    # ``(path, source) -> ast.Module | None``: an instrumented tree to compile instead (trace --record)
    instrument: Any = None

    def under_root(self, path: str) -> bool:
        path = os.path.abspath(path)
        root = os.path.abspath(self.root)
        return path == root or path.startswith(root.rstrip(os.sep) + os.sep)

    def wants(self, path: str) -> bool:
        """Is ``path`` the user's source under the root (not a venv, site-packages, syncfix)?"""
        if not path.endswith(".py"):
            return False
        path = os.path.abspath(path)
        root = os.path.abspath(self.root)
        if not self.under_root(path):
            return False
        if path.startswith(_SYNCFIX_DIR + os.sep):
            return False
        rel_parts = os.path.relpath(path, root).split(os.sep)[:-1]
        return not any(p in _SKIP_DIRS for p in rel_parts)

    def rewrite(self, path: str, source: str) -> RewrittenFile:
        path = os.path.abspath(path)
        done = self.files.get(path)
        if done is not None and done.source == source:
            return done
        new, error = source, None
        if self.fixer is not None:
            self._fixing += 1  # what the fixer imports itself (its rules) is loaded as is
            try:
                new = self.fixer(source, path)
            except Exception as exc:  # a parse error, a rule crash: run the original, say so
                error = f"{type(exc).__name__}: {exc}"
                new = source
            finally:
                self._fixing -= 1
        hunks, line_map = align(source, new) if new != source else ([], [])
        rf = RewrittenFile(path, source, new, hunks, line_map, error)
        self.files[path] = rf
        if rf.changed:
            self._by_code_name[rf.code_filename] = rf
            lines = new.splitlines(keepends=True)
            linecache.cache[rf.code_filename] = (len(new), None, lines, rf.code_filename)
        return rf

    def compile_file(self, path: str, data: bytes | None = None) -> CodeType:
        """The code object for ``path`` (rewritten if it is under the root)."""
        if data is None:
            with open(path, "rb") as fh:
                data = fh.read()
        source = importlib.util.decode_source(data)
        if not self.wants(path):
            return compile(source, path, "exec", dont_inherit=True)
        rf = self.rewrite(path, source)
        tree = self.instrument(path, rf.new_source) if self.instrument is not None else None
        if tree is not None:
            return compile(tree, rf.code_filename, "exec", dont_inherit=True)
        return compile(rf.new_source, rf.code_filename, "exec", dont_inherit=True)

    def resolve(self, filename: str, line: int) -> tuple[str, int]:
        """A code location → (the user's real file, the original line number)."""
        rf = self._by_code_name.get(filename)
        if rf is None:
            return filename, line
        return rf.path, rf.original_line(line)

    def changed_files(self) -> list[RewrittenFile]:
        return [rf for rf in self.files.values() if rf.changed or rf.error]

    # -- the import hook
    def install(self) -> None:
        if self._finder is None:
            self._finder = _Finder(self)
            sys.meta_path.insert(0, self._finder)

    def uninstall(self) -> None:
        if self._finder is not None and self._finder in sys.meta_path:
            sys.meta_path.remove(self._finder)
        self._finder = None


class _Loader(importlib.machinery.SourceFileLoader):
    def __init__(self, fullname: str, path: str, rewriter: Rewriter) -> None:
        super().__init__(fullname, path)
        self._rewriter = rewriter

    def get_code(self, fullname: str) -> CodeType:  # never a .pyc: it may hold the original code
        path = self.get_filename(fullname)
        return self._rewriter.compile_file(path, self.get_data(path))

    def get_source(self, fullname: str) -> str:
        path = self.get_filename(fullname)
        rf = self._rewriter.files.get(os.path.abspath(path))
        if rf is not None:
            return rf.new_source
        return super().get_source(fullname) or ""


class _Finder(importlib.abc.MetaPathFinder):
    def __init__(self, rewriter: Rewriter) -> None:
        self._rewriter = rewriter

    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        if self._rewriter._fixing:
            return None  # an import made by the fixer itself (syncfix's rules under the root)
        if path is not None and not any(self._rewriter.under_root(str(p)) for p in path):
            return None  # a submodule of a package outside the root: not ours (cheap exit)
        spec = importlib.machinery.PathFinder.find_spec(fullname, path)
        if spec is None or not isinstance(spec.loader, importlib.machinery.SourceFileLoader):
            return None
        origin = spec.origin or ""
        if not self._rewriter.wants(origin):
            return None
        spec.loader = _Loader(fullname, origin, self._rewriter)
        return spec


def changed_lines(hunks: Iterable[Hunk]) -> set[int]:
    out: set[int] = set()
    for h in hunks:
        out.update(h.lines)
    return out
