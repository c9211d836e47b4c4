"""The project index for a run: every Python file under each project root (the nearest folder
holding ``pyproject.toml`` or ``.git``), not only the files named on the command line, read once
per run. Each checked file gets a :class:`~syncfix.analysis.project.ModuleContext` (its module
name, the names other files import from it); the results cache keys on it, so a file's cached
findings are dropped exactly when what other files import from it changes.
"""

from __future__ import annotations

import ast
import os
import re
import sys
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

from .analysis.accelerators import names_other_accelerator
from .analysis.ast_reading import may_catch_tree
from .analysis.async_copies import counts_on_later_syncs, uses_streams
from .analysis.handlers import may_catch_text
from .analysis.hotness import FileCalls, file_calls, one_time
from .analysis.hotness import hot_functions as hot_functions_of
from .analysis.import_names import LOCAL
from .analysis.imported import forget
from .analysis.loaders import places_items
from .analysis.members import EMPTY, MemberUse, kept, member_use
from .analysis.project import ModuleContext, ModuleFile, ProjectIndex, digest, imports_torch
from .config import DEFAULT_EXCLUDE, DEFAULT_HOT_FUNCTIONS
from .repetition import is_test_path

MARKERS = ("pyproject.toml", ".git")
#: Above this many modules a project is not treated as closed (see :class:`Project`).
CLOSED_MODULES = 400


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


def python_files(root: Path, deep: bool = True) -> Iterable[Path]:
    """The ``.py`` files under ``root`` (only those directly in it unless ``deep``)."""
    skip = set(DEFAULT_EXCLUDE)
    for folder, dirs, files in os.walk(root):
        dirs[:] = [d for d in dirs if d not in skip and not d.startswith(".")] if deep else []
        for name in files:
            if name.endswith(".py"):
                yield Path(folder) / name


def package_of(path: Path, name: str) -> str:
    """What the relative imports of module ``name`` at ``path`` start from."""
    return name if path.stem == "__init__" else name.rpartition(".")[0]


class Project:
    """One project root's index: imports between its modules, the functions called from
    repeating code, and each module's file (for the facts one module takes from another)."""

    def __init__(
        self,
        root: Path,
        hot_functions: Iterable[str] = DEFAULT_HOT_FUNCTIONS,
        summarize: Summarize | None = None,
        closed: bool | None = None,
        deep: bool = True,
    ) -> None:
        summarize = summarize or summarize_here
        self.index = ProjectIndex()
        # memos of the import graph's questions, asked once per module and again per context
        self._direct: dict[str, frozenset[str]] = {}
        self._through: dict[str, frozenset[str]] = {}
        self._importers: dict[str, frozenset[str]] = {}
        sources: dict[str, tuple[Path, bytes]] = {}
        for path in python_files(root, deep):
            try:
                data = path.read_bytes()
            except OSError:
                continue  # unreadable files import nothing
            name = module_name(path, root)
            self.index.add(name, data, package_of(path, name))
            sources[name] = (path, data)
        candidates = _candidates(sources)
        self.resolve = _suffixes(candidates)
        # a script's folder is first on ``sys.path``: there ``import models`` is the ``models.py``
        # beside it, whatever other folders hold one (PyTorch-GAN's ``implementations/<gan>/``)
        self.local = _beside(sources, self.index, candidates)
        for importer, chosen in self.local.items():
            self.resolve.update({f"{importer}{LOCAL}{t}": m for t, m in chosen.items()})
        # each file of a closed project carries the whole project's table: bounded, so that a
        # big project's contexts stay small (beyond it, the installable policy holds); ``closed``
        # is the user's word for it (``closed-project``), None: what the root shows
        self.closed = len(sources) <= CLOSED_MODULES and (is_closed(root) if closed is None else closed)
        calls = []
        uses: dict[str, MemberUse] = {}  # names read across files where all files are in sight
        todo = []
        for name, (path, data) in sources.items():
            test = is_test_path(str(path.relative_to(root)), data)
            if not test or self.closed:
                todo.append((name, data, not test, self.closed, package_of(path, name)))
        hot = tuple(hot_functions)
        for (name, *_), (called, used) in zip(todo, summarize(todo, hot, self.resolve), strict=True):
            if called is not None:
                calls.append(called)
            if used is not None:
                uses[name] = used
        uses = kept(uses)
        self.hot = hot_functions_of(calls)
        # modules that star-import, directly or through others, a module importing torch
        stars = {f.module: f.stars for f in calls if f.stars}
        with_torch = {m for starred in stars.values() for m in starred if m in sources and imports_torch(sources[m][1])}
        self.torch_by_star: set[str] = set()
        changed = True
        while changed:
            changed = False
            for name, starred in stars.items():
                if name not in self.torch_by_star and any(m in with_torch or m in self.torch_by_star for m in starred):
                    self.torch_by_star.add(name)
                    changed = True
        # modules deriving a class from one a torch-importing project module defines (OpenPCDet's
        # ``class PointPillar(Detector3DTemplate)``): torch code without a torch import of their own
        self.torch_by_star |= {
            f.module for f in calls
            if any(
                b in f.imported and f.imported[b][0] in sources and imports_torch(sources[f.imported[b][0]][1])
                for b in f.bases
            )
        }
        self.one_time = {f.module for f in calls if one_time(f, self.hot.get(f.module, frozenset()))}
        self.narrow_to = next(
            (f"`{f.narrow_to}` (module `{f.module}`)" for f in sorted(calls, key=lambda f: f.module) if f.narrow_to), ""
        )
        aliases: dict[str, list[str]] = {}
        for suffix, name in self.resolve.items():
            if LOCAL not in suffix:
                aliases.setdefault(name, []).append(suffix)
        # and the name a script beside it imports it by (sam-hq's ``train/train.py``: ``import
        # utils.misc`` of ``train/utils/misc.py``, where ``sam-hq2/sam2/utils/misc.py`` ends so too):
        # read only by the modules that import it, whose own imports chose it (``imports_of``)
        for chosen in self.local.values():
            for target, name in chosen.items():
                if target not in aliases.setdefault(name, []):
                    aliases[name].append(target)
        importers: dict[str, set[str]] = {}
        for name in sources:
            for target in self.imports_of(name):
                importers.setdefault(target, set()).add(name)
        # a module a file with a handler imports, directly or through others, or that file
        # read with Python's parser where the index has it, else judged from the text (tests)
        parsed = {f.module: f.catches for f in calls}
        catching = {name for name, (_, data) in sources.items() if parsed.get(name, may_catch_text(data))}
        around = catching.union(*(self._imported_through(c) for c in catching))
        ambiguous = {  # a name some file imports that may be either of several modules
            m
            for name in sources
            for target in self.index.targets.get(name, ())
            if len(candidates.get(target, ())) > 1 and target not in self.local.get(name, {})
            for m in candidates[target]
        }
        self.files = {
            name: ModuleFile(
                name,
                str(path),
                digest(data),
                package_of(path, name),
                self.index.imported_from(name),
                tuple(sorted(aliases.get(name, ()))),
                tuple(sorted(importers.get(name, ()))),
                name in ambiguous,
                uses.get(name, EMPTY),
                name in around,
            )
            for name, (path, data) in sources.items()
        }
        self._closures: dict[str, tuple[ModuleFile, ...]] = {}
        # modules some project module using CUDA streams imports, directly or through others:
        # a function there may run under that module's side stream; and the modules that import
        # it: a tensor they copy may be handed to a function of it that reads it on a side stream
        # (a non-blocking copy would then race that read)
        streams = [name for name, (_, data) in sources.items() if uses_streams(data)]
        # each module with the stream-using module that reaches it (named in the findings)
        self.streams_around: dict[str, str] = {}
        for s in sorted(streams):
            for m in [*(f.name for f in self.closure(s)), *sorted(self.importer_closure(s))]:
                self.streams_around.setdefault(m, s)
        # modules that copy without waiting, and those they import: a sync there may be the
        # wait such a copy counts on
        waiting = [name for name, (_, data) in sources.items() if counts_on_later_syncs(data)]
        self.later_syncs_around = {n for s in waiting for n in (s, *(m.name for m in self.closure(s)))}
        # torch's default dtype and device are the process's: a module that changes them does
        # so for every module a program that imports it runs (not a test's: its own process)
        programs = {name for name, (path, data) in sources.items() if not is_test_path(str(path.relative_to(root)), data)}
        # (each kind apart: ``set_default_dtype`` moves no tensor off the CPU)
        self.defaults_changed: dict[str, set[str]] = {}
        for kind, pattern in CHANGES_DEFAULTS.items():
            changers = {name for name in programs if pattern.search(sources[name][1])}
            for name in programs if changers else ():
                reached = {m.name for m in self.closure(name)}
                if name in changers or reached & changers:
                    for m in {name} | reached:
                        self.defaults_changed.setdefault(m, set()).add(kind)

        # a dataset that places its items reaches the loaders of every module of a program
        # that imports it: the program's own, and what the program imports (main.py builds the
        # dataset and hands it to train.py's loader), not those of unrelated programs or tests
        self.datasets_placed: set[str] = set()
        for placing in (name for name, (_, data) in sources.items() if places_items(data)):
            for program in {placing} | self.importer_closure(placing):
                self.datasets_placed |= {program, *(m.name for m in self.closure(program))}

        # a device picked in one module may reach any module of a program that includes it (as
        # a placing dataset does): each module with one such naming module; a program that
        # imports by a computed name may include any module
        self.other_accelerator: dict[str, str] = {}
        dynamic = {f.module for f in calls if f.dynamic_imports}
        loads_any: list[str] = []  # naming modules of a program that imports by a computed name
        for naming in sorted(f.module for f in calls if f.other_accelerator):
            for program in {naming} | self.importer_closure(naming):
                reached = {program, *(f.name for f in self.closure(program))}
                if reached & dynamic:
                    loads_any.append(naming)
                for m in sorted(reached):
                    self.other_accelerator.setdefault(m, naming)
        for naming in loads_any:  # after the others: a module is named with one it imports
            for m in sorted(programs):
                self.other_accelerator.setdefault(m, naming)

    def imports_of(self, name: str) -> frozenset[str]:
        """The project modules ``name`` imports directly."""
        known = self._direct.get(name)
        if known is None:
            beside = self.local.get(name, {})
            found = {beside.get(t) or self.resolve.get(t) for t in self.index.targets.get(name, ())}
            known = self._direct[name] = frozenset(m for m in found if m is not None and m != name)
        return known

    def closure(self, name: str) -> tuple[ModuleFile, ...]:
        """The project modules ``name`` imports, directly or through each other."""
        cached = self._closures.get(name)
        if cached is None:
            cached = self._closures[name] = tuple(self.files[m] for m in sorted(self._imported_through(name)))
        return cached

    def _imported_through(self, name: str) -> frozenset[str]:
        """The names of the project modules ``name`` imports, directly or through each other."""
        known = self._through.get(name)
        if known is None:
            known = self._through[name] = frozenset(self._reach(name))
        return known

    def _reach(self, name: str) -> set[str]:
        seen: set[str] = set()
        todo = [name]
        while todo:
            for m in self.imports_of(todo.pop()):
                if m not in seen and m != name:
                    seen.add(m)
                    todo.append(m)
        return seen

    def importer_closure(self, name: str) -> set[str]:
        """The project modules that import ``name``, directly or through each other."""
        known = self._importers.get(name)
        if known is None:
            known = self._importers[name] = frozenset(self._reached_by(name))
        return set(known)

    def _reached_by(self, name: str) -> set[str]:
        seen: set[str] = set()
        todo = [name]
        while todo:
            current = self.files.get(todo.pop())
            for m in current.importers if current is not None else ():
                if m not in seen and m != name and m in self.files:
                    seen.add(m)
                    todo.append(m)
        return seen

    def context(self, path: Path, name: str) -> ModuleContext:
        if self.closed:  # a parameter's facts may come from any file: all of them (its own too)
            modules = tuple(m for _, m in sorted(self.files.items()))
        else:
            # what it imports (their functions' results), and itself with the files that import
            # it, through each other: a try around a call in any of them sees its errors
            # (analysis/handlers.py), whether or not other code may import it too
            around = self.importer_closure(name)
            if around:
                around.add(name)
            modules = tuple(sorted({*self.closure(name), *(self.files[m] for m in around)}, key=lambda m: m.name))
        return ModuleContext(
            name,
            self.index.imported_from(name),
            self.hot.get(name, frozenset()),
            package_of(path, name),
            modules,
            self.closed,
            self.streams_around.get(name, ""),
            name in self.later_syncs_around,
            frozenset(self.defaults_changed.get(name, ())),
            name in self.datasets_placed,
            self.other_accelerator.get(name, ""),
            name in self.one_time,
            name in self.torch_by_star,
            self.narrow_to,
            tuple(sorted(self.local.get(name, {}).items())),
        )


#: Text a file that changes torch's default dtype or device holds.
CHANGES_DEFAULTS = {
    "dtype": re.compile(rb"set_default_(?:dtype|tensor_type)\s*\("),
    "device": re.compile(rb"set_default_(?:device|tensor_type)\s*\("),
}


# One file to summarize: (module name, source, whether to keep its calls, whether its names)
Item = tuple[str, bytes, bool, bool, str]  # name, source, with calls, with names, package
Summary = tuple[FileCalls | None, MemberUse | None]
Summarize = Callable[[Sequence[Item], tuple[str, ...], Mapping[str, str]], list[Summary]]


def file_summary(item: Item, hot_functions: tuple[str, ...], resolve: Mapping[str, str]) -> Summary:
    """What the index keeps of one file: the calls it makes and the attribute names it uses,
    from one parse with Python's parser."""
    name, data, with_calls, with_names, package = item
    tree = _parsed(data)
    # an unparsable file: ``file_calls`` fails to read it too, and says so (not ``parsed``)
    called = file_calls(name, tree if tree is not None else data, hot_functions, resolve, package) if with_calls else None
    if called is not None:
        # the text first (cheap): most files hold no handler at all
        called.catches = may_catch_text(data) and (tree is None or may_catch_tree(tree))
        called.other_accelerator = names_other_accelerator(data, tree)
        called.dynamic_imports = tree is not None and imports_dynamically(data, tree)
    used = (member_use(tree) if tree is not None else EMPTY) if with_names else None
    return called, used


_DYNAMIC_IMPORT = re.compile(rb"\bimport_module\b|\b__import__\b")


def imports_dynamically(data: bytes, tree: ast.Module) -> bool:
    """Does the module import by a computed name (``importlib.import_module(module_path)``,
    ``__import__(name)``)? Time-Series-Library loads each model module so."""
    if not _DYNAMIC_IMPORT.search(data):
        return False
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and node.args and not isinstance(node.args[0], ast.Constant):
            func = node.func
            name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
            if name in ("import_module", "__import__"):
                return True
    return False


def summarize_here(items: Sequence[Item], hot_functions: tuple[str, ...], resolve: Mapping[str, str]) -> list[Summary]:
    return [file_summary(item, hot_functions, resolve) for item in items]


def _parsed(data: bytes) -> ast.Module | None:
    try:
        return ast.parse(data)
    except (SyntaxError, ValueError):
        return None  # an unparsable file calls nothing and uses no names


def is_closed(root: Path) -> bool:
    """Can only the project's own files import its modules? Not when it can be installed (a
    ``setup.py``, ``setup.cfg``, or a ``[project]``/``[tool.poetry]`` table in
    ``pyproject.toml``: other code may import it) or holds notebooks (they import its modules
    where the index does not look)."""
    if (root / "setup.py").exists() or (root / "setup.cfg").exists():
        return False
    pyproject = root / "pyproject.toml"
    if pyproject.exists():
        try:
            data = tomllib.loads(pyproject.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
            return False
        if "project" in data or "poetry" in data.get("tool", {}):
            return False
    skip = set(DEFAULT_EXCLUDE)
    for _folder, dirs, files in os.walk(root):
        dirs[:] = [d for d in dirs if d not in skip and not d.startswith(".")]
        if any(f.endswith(".ipynb") for f in files):
            return False
    return True


def build_index(
    root: Path, hot_functions: Iterable[str] = DEFAULT_HOT_FUNCTIONS
) -> tuple[ProjectIndex, dict[str, frozenset[str]]]:
    """The imports of every Python file under ``root`` (unreadable files import nothing), and per
    module the functions other code calls from repeating code (analysis/hotness.py)."""
    project = Project(root, hot_functions)
    return project.index, project.hot


def _candidates(modules: Iterable[str]) -> dict[str, set[str]]:
    """Each dotted suffix of a module's name (``pkg.nn`` is also ``nn``: a folder on sys.path),
    with every module it may name."""
    seen: dict[str, set[str]] = {}
    for m in modules:
        parts = m.split(".")
        for i in range(len(parts)):
            seen.setdefault(".".join(parts[i:]), set()).add(m)
    return seen


def _beside(
    sources: Mapping[str, tuple[Path, bytes]], index: ProjectIndex, candidates: Mapping[str, set[str]]
) -> dict[str, dict[str, str]]:
    """Per module in a folder that is no package (a script's), each import target several
    modules may be that names one beside it (``models`` -> ``implementations.ccgan.models``),
    and no module at the project's root (``candidates``: :func:`_candidates` of the modules)."""
    packages = {name for name, (path, _) in sources.items() if path.stem == "__init__"}
    found: dict[str, dict[str, str]] = {}
    for name, (path, _) in sources.items():
        folder = name.rpartition(".")[0]
        if path.stem == "__init__" or not folder or folder in packages:
            continue  # a package's module: no implicit import of its neighbours
        for target in index.targets.get(name, ()):
            beside = f"{folder}.{target}"
            # not where the root holds that module too: run from the root as a module
            # (``python -m scripts.train``), the root's is the one imported
            if len(candidates.get(target, ())) > 1 and beside in sources and target not in sources:
                found.setdefault(name, {})[target] = beside
    return found


def _suffixes(candidates: Mapping[str, set[str]]) -> dict[str, str]:
    """Each dotted suffix of a module's name (``candidates``: :func:`_candidates`) that names one
    module only, or a module's whole name (which names that module, whatever other modules end
    with it)."""
    return {
        suffix: suffix if suffix in ms else next(iter(ms))
        for suffix, ms in candidates.items()
        if suffix in ms or len(ms) == 1 and suffix.partition(".")[0] not in sys.stdlib_module_names
    }  # ``import logging`` is the standard library's, not UniFormer's ``slowfast/utils/logging.py``


def contexts(
    files: Iterable[str],
    hot_functions: Iterable[str] = DEFAULT_HOT_FUNCTIONS,
    summarize: Summarize | None = None,
    closed: bool | None = None,
    given: Iterable[str | Path] = (),
) -> dict[str, ModuleContext]:
    """Each file's context, one index per project root. A file under no ``pyproject.toml`` or
    ``.git`` belongs to a loose project: every file under the outermost folder named on the
    command line (``given``) that holds it, or else the files directly in its folder (the
    scripts beside it may import it, or run it under a CUDA stream); open to other code unless
    ``closed`` says otherwise. (Facts other files gave an earlier run in this process are
    forgotten.) ``summarize`` reads the files of a project (by default here; the command line
    spreads them over its workers); ``closed`` overrides :func:`is_closed` (the
    ``closed-project`` setting)."""
    forget()
    indexes: dict[Path, Project] = {}
    roots: dict[Path, tuple[Path, bool, bool]] = {}  # folder -> (root, marked, deep)
    out: dict[str, ModuleContext] = {}
    hot_names = tuple(hot_functions)
    # outermost first: a folder named inside another named one belongs to the outer one's project
    folders = sorted({Path(g).resolve() for g in given if Path(g).is_dir()}, key=lambda p: len(p.parts))
    for f in files:
        path = Path(f)
        folder = path.resolve().parent
        if folder not in roots:
            marked = project_root(path)
            named = next((g for g in folders if folder == g or g in folder.parents), None)
            roots[folder] = (
                (marked, True, True) if marked is not None
                else (named, False, True) if named is not None
                else (folder, False, False)
            )
        root, is_marked, deep = roots[folder]
        if root not in indexes:
            loose_closed = closed if closed is not None else False
            indexes[root] = (
                Project(root, hot_names, summarize, closed)
                if is_marked
                else Project(root, hot_names, summarize, loose_closed, deep=deep)
            )
        out[f] = indexes[root].context(path, module_name(path, root))
    return out

