"""The project around a file: which names other project files import from which module.

The engine builds one :class:`ProjectIndex` per run over every Python file under the project
root (the folder holding ``pyproject.toml`` or ``.git``) and gives each file's analysis only the
names other files import from it (:meth:`ProjectIndex.imported_from`). Imports are read with a
regular expression, not a parser, so the index costs one pass over the bytes; it errs on the side
of *more* imports (an ``import`` in a string or comment counts), which only makes more functions
escape (callgraph.py). Dynamic imports (``importlib.import_module("train")``) are not seen.
"""

from __future__ import annotations

import ast
import hashlib
import re
from dataclasses import dataclass, field

from .members import EMPTY, MemberUse

#: In an imported-names set: the whole module is imported (``import module``, a star import).
ALL = "*"

_FROM = re.compile(rb"\bfrom[ \t]+(\.*[\w.]*)[ \t]+import[ \t]*(\([^)]*\)|(?:[^\n\\]|\\\r?\n)*)")
# ``import a, b`` as a statement: at the start of a line or after ``;``/``:`` (not the ``import``
# of ``from x import a, b``, whose names are not modules of their own unless under ``x``)
_IMPORT = re.compile(rb"(?:^|[;:])[ \t]*import[ \t]+((?:[\w. \t,]|\\\r?\n)+)", re.M)
_AS = re.compile(r"\s+as\s+\w+$")


def module_imports(source: bytes, module: str, package: str | None = None) -> list[tuple[str, str]]:
    """``(imported module, name)`` pairs of a source (``name`` is :data:`ALL` for a whole module).
    ``package``: what relative imports start from (the module itself for an ``__init__.py``;
    by default the module's parent)."""
    if package is None:
        package = module.rpartition(".")[0]
    found: list[tuple[str, str]] = []
    for m in _FROM.finditer(source):
        base = resolve_relative(package, m.group(1).decode("ascii", "replace"))
        if base is None:
            continue
        for name in _names(m.group(2)):
            found.append((base, name))
            found.append((f"{base}.{name}" if base else name, ALL))  # ``from pkg import module``
    for m in _IMPORT.finditer(source):
        found.extend((name, ALL) for name in _names(m.group(1)))
    return found


def _names(text: bytes) -> list[str]:
    out = []
    cleaned = text.decode("utf-8", "replace").split("#", 1)[0]
    for part in cleaned.replace("\\", " ").strip("() \t\r\n").split(","):
        name = _AS.sub("", part.strip().strip("()").strip())
        if name:
            out.append(name)
    return out


def resolve_relative(package: str, module: str) -> str | None:
    level = len(module) - len(module.lstrip("."))
    module = module[level:]
    if level == 0:
        return module or None
    parts = package.split(".") if package else []
    if level - 1 > len(parts):
        return None
    base = parts[: len(parts) - (level - 1)]
    return ".".join([*base, module] if module else base)


@dataclass
class ProjectIndex:
    """Imports between the project's modules: ``imports[module]`` holds the names other files
    import from it, under every dotted suffix of its name too (``pkg.train`` is also ``train``:
    a script folder on ``sys.path``, a ``src/`` layout)."""

    imports: dict[str, set[str]] = field(default_factory=dict)
    #: per module, the modules it names in its imports (resolved against the project later)
    targets: dict[str, set[str]] = field(default_factory=dict)

    def add(self, module: str, source: bytes, package: str | None = None) -> None:
        mine = self.targets.setdefault(module, set())
        for target, name in module_imports(source, module, package):
            if target == module:
                continue
            mine.add(target)
            parts = target.split(".")
            for i in range(len(parts)):
                self.imports.setdefault(".".join(parts[i:]), set()).add(name)

    @classmethod
    def build(cls, sources: dict[str, bytes]) -> ProjectIndex:
        index = cls()
        for module, data in sources.items():
            index.add(module, data)
        return index

    def imported_from(self, module: str) -> frozenset[str]:
        """The names other files may import from ``module`` (:data:`ALL`: any)."""
        parts = module.split(".")
        found: set[str] = set()
        for i in range(len(parts)):
            found |= self.imports.get(".".join(parts[i:]), set())
        return frozenset(found)


def digest(data: bytes) -> str:
    """A short digest of a file's bytes (for cache keys and to notice a file changed)."""
    return hashlib.blake2b(data, digest_size=10).hexdigest()


@dataclass(frozen=True)
class ModuleFile:
    """Another module of the project that a file imports (directly or through other project
    modules): where it is, what its bytes were when the index read them, and its own place in
    the project (for its analysis, analysis/imported.py)."""

    name: str
    path: str
    digest: str
    package: str  # what its relative imports start from
    imported: frozenset[str]  # the names other files import from it
    #: the dotted names an import may reach it by: its name and each suffix no other module
    #: of the project shares (``pkg.util`` is also ``util``: a folder on ``sys.path``)
    aliases: tuple[str, ...] = ()
    #: the project modules that import it (names)
    importers: tuple[str, ...] = ()
    #: some file imports a name that may be this module or another one (``import util`` with
    #: ``a/util.py`` and ``b/util.py``): its importers are not all known
    ambiguous: bool = False
    #: what it does with attribute names (analysis/members.py); only in a closed project
    members: MemberUse = EMPTY
    #: it or a project module that imports it (directly or through others) has a handler that
    #: may catch a RuntimeError (analysis/handlers.py ``may_catch_text``): only then can a call
    #: it makes be inside a ``try`` that sees a wait's error
    handlers_around: bool = True


@dataclass(frozen=True)
class ModuleContext:
    """What one file's analysis takes from the project: its dotted name and the names other
    files import from it. Small, so that it travels to worker processes with each file."""

    module_name: str
    imported: frozenset[str]
    # its functions that other project files call from repeating code (analysis/hotness.py)
    hot: frozenset[str] = frozenset()
    #: what its relative imports start from (None: the module's parent)
    package: str | None = None
    #: the project modules it imports, directly or through each other (whose functions'
    #: results it may use: analysis/imported.py); in a closed project, every module
    modules: tuple[ModuleFile, ...] = ()
    #: nothing outside the project imports its modules (no packaging, no notebooks): a
    #: function's callers are all in the project's files (analysis/imported.py)
    closed: bool = False
    #: a project module that imports it (directly or through others) uses CUDA streams or
    #: graphs, so its functions may run on a side stream; or it imports such a module, whose
    #: functions may read on a side stream what it hands them (syncfix/projects.py): the name of
    #: one such stream-using module, or ""
    streams_around: str = ""
    #: a project module that imports it (directly or through others), or the module itself,
    #: copies without waiting and counts on a later sync to finish the copy
    #: (analysis/async_copies.py): no fix that removes a sync is safe in it
    later_syncs_around: bool = False
    #: which of torch's defaults, ``"dtype"`` and ``"device"``, a project file the module runs
    #: with changes (``set_default_dtype``, ``set_default_device``...): not provable in it
    defaults_changed: frozenset[str] = frozenset()
    #: a dataset that may place its items on a device (analysis/loaders.py ``places_items``) is
    #: in a program that runs this module (one that imports it, or what such a program
    #: imports): a DataLoader's batches are then not provably on the CPU
    datasets_placed: bool = False
    #: a project module (not a test) that names an accelerator other than CUDA (``"mps"``,
    #: ``torch.backends.mps``, ``torch_xla``: analysis/accelerators.py) in a program that runs
    #: this module (as for ``datasets_placed``), or "": a device syncfix cannot name may then be
    #: that accelerator, not only CUDA or the CPU
    other_accelerator: str = ""
    #: all of it is one-time code (no loop, no step-like function, none that other files call
    #: from repeating code: analysis/hotness.py ``one_time``); the rules reported only where
    #: syncs repeat are not run on it
    one_time: bool = False
    #: it star-imports (``from utils import *``), directly or through others, a project module
    #: that imports torch (``torch`` may be bound here without an import of its own), or derives
    #: a class from one such a module defines: torch code all the same
    torch_by_star: bool = False
    #: a class of the project defines a ``to`` that takes no ``non_blocking`` (maskrcnn-benchmark's
    #: ``BoxList.to(self, device)``): an object syncfix cannot name may be one of its instances;
    #: the class and its module, for messages (empty where none)
    narrow_to: str = ""
    #: import targets several project modules may be, that name the one beside this file (its
    #: folder is a script's, first on ``sys.path``): (target, module) pairs
    beside: tuple[tuple[str, str], ...] = ()

    def fingerprint(self) -> str:
        """For the results cache: a file's findings change when (only when) this does (a change
        in a module it imports, even through others, counts)."""
        return "\0".join(
            (
                self.module_name,
                ",".join(sorted(self.imported)),
                ",".join(sorted(self.hot)),
                self.package or "",
                str(self.closed),
                self.streams_around,
                str(self.later_syncs_around),
                ",".join(sorted(self.defaults_changed)),
                str(self.datasets_placed),
                self.other_accelerator,
                str(self.one_time),
                str(self.torch_by_star),
                self.narrow_to,
                ",".join(f"{t}={m}" for t, m in self.beside),
                ",".join(
                    sorted(
                        f"{m.name}:{m.digest}:{','.join(sorted(m.imported))}:{','.join(m.aliases)}:{','.join(m.importers)}:{m.ambiguous}:{m.handlers_around}"
                        for m in self.modules
                    )
                ),
            )
        )


TORCH_MARKER = b"torch"
_TORCH_IMPORT_LINE = re.compile(rb"^(?:import|from)[ \t]+torch\b", re.MULTILINE)


def imports_torch(data: bytes) -> bool:
    """Does any import statement of ``data`` name something with "torch" in it?

    Every tensor, device and torch call the analysis can prove is rooted in such an import (an
    unbound ``torch.randn`` proves nothing), so a rule that needs torch has nothing to find in a
    file without one. Python's own parser answers in a fraction of LibCST's time; a file it
    cannot parse is let through, for LibCST to judge.
    """
    if TORCH_MARKER not in data:
        return False
    if _TORCH_IMPORT_LINE.search(data):
        return True  # the usual ``import torch`` line (in a string it only costs the analysis)
    try:
        tree = ast.parse(data)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return True
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            if any("torch" in alias.name for alias in node.names):
                return True
        elif isinstance(node, ast.ImportFrom):
            if "torch" in (node.module or "") or any("torch" in alias.name for alias in node.names):
                return True
    return False
