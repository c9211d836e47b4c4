"""Which names ``from module import *`` may bind, so that a module that star-imports still knows
which of its names are Python's builtins.

``from models import *`` binds every public name of ``models`` (or those its ``__all__`` lists).
If one of them is ``len`` or ``range``, a call of it is not the builtin. For a module of the
project the names are read from its source with the standard library's parser (its top-level
bindings, following its own star imports), as a may-bind set: more names only make fewer
builtins trusted. A module outside the project, one another file of the project may stand for
(``models`` beside ``scripts/models.py``), or one whose names are set at run time (``globals()``,
``exec`` at module level, ``sys.modules``, an ``__all__`` built or changed at run time), binds names
syncfix cannot list: then no name of the importing module is taken for a builtin.
"""

from __future__ import annotations

import ast
import functools
from typing import TYPE_CHECKING

import libcst as cst

from ..fileio import read_source
from .project import ModuleFile, digest, resolve_relative
from .syntax import dotted_name

if TYPE_CHECKING:
    from .imported import ProjectModules
    from .module import ModuleAnalysis

# (path, digest) -> the names a star import of that module binds (None: cannot be listed)
_EXPORTS: dict[tuple[str, str], frozenset[str] | None] = {}
_KEEP = 1024


#: Python builtins taken to keep their meaning under a star import of a module outside the
#: project (a library's, which syncfix does not read): numpy's and torch's bind ``sum``, ``max``,
#: ``round``, even ``range`` (``torch.range``), but no library binds these iteration helpers.
NEVER_STAR_BOUND = frozenset({"enumerate", "zip", "iter", "next", "len", "isinstance"})
#: In :func:`star_bound`'s answer: a library's star import binds any name but those.
LIBRARY = "*"


def leaves_builtins(bound: frozenset[str] | None, names: set[str]) -> bool:
    """Does no star import :func:`star_bound` describes bind any of these builtin names?"""
    if bound is None:
        return False
    return not names & bound and (LIBRARY not in bound or names <= NEVER_STAR_BOUND)


def star_bound(a: ModuleAnalysis) -> frozenset[str] | None:
    """The names the module's star imports may bind (empty without any; :data:`LIBRARY` among
    them for a module outside the project), or None when a project module's cannot be listed
    (or, outside a project, which modules are the project's is not known)."""
    stars = a.structure.within(a.module, cst.ImportStar)
    if not stars:
        return frozenset()
    if a.project is None:
        return None
    names: set[str] = set()
    for star in stars:
        node = a.parent(star)
        if not isinstance(node, cst.ImportFrom):
            return None
        module = dotted_name(node.module) if node.module is not None else ""
        if module is None:
            return None
        target = resolve_relative(a.package, "." * len(node.relative) + module)
        if not node.relative and target is not None and a.project.module_file(target) is None:
            names.add(LIBRARY)  # ``from timm.models import *``
            continue
        found = _exports(a.project, target, set())
        if found is None:
            return None
        names |= found
    return frozenset(names)


def _exports(project: ProjectModules, name: str | None, seen: set[str]) -> frozenset[str] | None:
    target = project.module_file(name) if name else None
    if target is None or target.path in seen:
        return None  # not a project module, or a cycle of star imports
    key = (target.path, target.digest)
    if key in _EXPORTS:
        return _EXPORTS[key]
    seen.add(target.path)
    found = _read_exports(project, target, seen)
    if len(_EXPORTS) >= _KEEP:
        _EXPORTS.clear()
    _EXPORTS[key] = found
    return found


@functools.lru_cache(maxsize=16)
def _tree_of(path: str, expected: str) -> ast.Module | None:
    """Python's parse of a project module as the index read it (None: changed since, unreadable,
    unparsable), for its exports and its import aliases alike."""
    try:
        data = read_source(path).data
        return ast.parse(data) if digest(data) == expected else None
    except Exception:  # unreadable, unparsable: nothing known
        return None


def _read_exports(project: ProjectModules, target: ModuleFile, seen: set[str]) -> frozenset[str] | None:
    tree = _tree_of(target.path, target.digest)
    if tree is None:
        return None
    if target.ambiguous or _dynamic(tree):
        return None  # another file may be the one imported; names set at run time
    listed = _listed_all(tree)
    if listed is not None:
        return listed or None  # ``__all__`` set some other way: cannot be listed
    names: set[str] = set()
    for node in _module_level(tree):
        if isinstance(node, ast.ImportFrom) and any(alias.name == "*" for alias in node.names):
            base = resolve_relative(target.package, "." * node.level + (node.module or ""))
            more = _exports(project, base, seen)
            if more is None:
                return None
            names |= more
        names |= _bound_by(node)
    for node in ast.walk(tree):
        if isinstance(node, ast.Global):
            names.update(node.names)  # a function's ``global len`` may bind it at module level
    return frozenset(n for n in names if not n.startswith("_"))


_DYNAMIC_CALLS = frozenset({"globals", "vars", "__import__"})  # anywhere: they reach module names
_MODULE_LEVEL_CALLS = frozenset({"exec", "eval"})  # at module level, they bind module names


def _dynamic(tree: ast.Module) -> bool:
    """May the module set its names, or ``__all__``, at run time: ``globals()``, ``exec`` at
    module level, ``sys.modules`` (``setattr(sys.modules[__name__], ...)``, its ``__dict__``),
    ``builtins.x = ...``, an ``__all__`` changed in place or imported? Common attributes of the
    same names (``model.modules()``, ``self.__dict__``) do not count."""
    sys_names = {"sys"} | {
        alias.asname for node in ast.walk(tree) if isinstance(node, ast.Import)
        for alias in node.names if alias.name == "sys" and alias.asname
    }
    top = set(map(id, _module_level(tree)))
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and (
            node.func.id in _DYNAMIC_CALLS or (node.func.id in _MODULE_LEVEL_CALLS and id(node) in top)
        ):
            return True
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and (
            (node.attr == "modules" and node.value.id in sys_names) or node.value.id == "builtins"
        ):
            return True  # ``sys.modules[__name__]...``, ``builtins.len = ...``
        if isinstance(node, (ast.Subscript, ast.Attribute)) and isinstance(node.value, ast.Name) and node.value.id == "__all__":
            return True  # ``__all__[:] = ...``, ``__all__.extend(...)``
        if isinstance(node, (ast.Import, ast.ImportFrom)) and any(
            (alias.asname or alias.name) == "__all__" for alias in node.names
        ):
            return True
    return False


def _listed_all(tree: ast.Module) -> frozenset[str] | None:
    """``__all__``'s names when the module sets it once, to a list or tuple of strings; an empty
    set when it sets it some other way; None when it does not set it."""
    stores = [n for n in ast.walk(tree) if isinstance(n, ast.Name) and n.id == "__all__" and not isinstance(n.ctx, ast.Load)]
    changed = any(
        isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and isinstance(n.func.value, ast.Name)
        and n.func.value.id == "__all__"
        for n in ast.walk(tree)
    )
    if not stores:
        return frozenset() if changed else None
    if len(stores) > 1 or changed:
        return frozenset()
    for stmt in tree.body:
        if isinstance(stmt, ast.Assign) and any(t is stores[0] for t in stmt.targets):
            value = stmt.value
            if isinstance(value, (ast.List, ast.Tuple)) and all(
                isinstance(e, ast.Constant) and isinstance(e.value, str) for e in value.elts
            ):
                return frozenset(e.value for e in value.elts)  # type: ignore[attr-defined]
    return frozenset()


def _module_level(tree: ast.Module) -> list[ast.AST]:
    """Every node that runs at module level (not inside a def, lambda or class body)."""
    out: list[ast.AST] = []
    todo: list[ast.AST] = list(tree.body)
    while todo:
        node = todo.pop()
        out.append(node)
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            todo.extend(node.decorator_list)
            continue
        if isinstance(node, ast.Lambda):
            continue
        todo.extend(ast.iter_child_nodes(node))
    return out


def _bound_by(node: ast.AST) -> set[str]:
    """The names one module-level node binds (a may-bind over-approximation)."""
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return {node.name}
    if isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load):
        return {node.id}
    if isinstance(node, (ast.Import, ast.ImportFrom)):
        return {(alias.asname or alias.name).split(".")[0] for alias in node.names if alias.name != "*"}
    if isinstance(node, ast.ExceptHandler) and node.name:
        return {node.name}
    if isinstance(node, (ast.MatchAs, ast.MatchStar)) and node.name:
        return {node.name}
    if isinstance(node, ast.MatchMapping) and node.rest:
        return {node.rest}
    return set()


# (path, digest) -> the modules and module members its star import binds by import statements
_ALIASES: dict[tuple[str, str], dict[str, str]] = {}


def star_aliases(a: ModuleAnalysis) -> dict[str, str]:
    """What the module's star imports of project modules bind by an import there: local name ->
    qualified name (``from utils import *`` of a ``utils`` that does ``import torch`` binds
    ``torch`` to ``torch``; ``import torch.nn.functional as F``, ``F`` to
    ``torch.nn.functional``). Only names the star import exports, bound once in that module
    (not ``try: import apex`` / ``except: apex = None``); a name two star imports bind
    differently is left out."""
    stars = a.structure.within(a.module, cst.ImportStar)
    if not stars or a.project is None:
        return {}
    found: dict[str, str] = {}
    dropped: set[str] = set()
    for star in stars:
        node = a.parent(star)
        module = dotted_name(node.module) if isinstance(node, cst.ImportFrom) and node.module is not None else ""
        if not isinstance(node, cst.ImportFrom) or module is None:
            continue
        target = a.project.module_file(resolve_relative(a.package, "." * len(node.relative) + module) or "")
        for name, qualified in (_aliases_of(a.project, target, set()) if target is not None else {}).items():
            if found.setdefault(name, qualified) != qualified:
                dropped.add(name)
    return {k: v for k, v in found.items() if k not in dropped}


def _aliases_of(project: ProjectModules, target: ModuleFile, seen: set[str]) -> dict[str, str]:
    key = (target.path, target.digest)
    if key in _ALIASES:
        return _ALIASES[key]
    exported = _exports(project, target.name, set())
    out: dict[str, str] = {}
    tree = _tree_of(target.path, target.digest) if exported else None
    if tree is not None and exported is not None and target.path not in seen:
        seen.add(target.path)
        counts: dict[str, int] = {}
        imported: dict[str, str] = {}
        for node in _module_level(tree):
            for name in _bound_by(node):
                counts[name] = counts.get(name, 0) + 1
            if isinstance(node, (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
                imported[node.name] = f"{target.name}.{node.name}"  # defined there: ``Darknet``
            elif isinstance(node, ast.Import):
                for alias in node.names:
                    local = alias.asname or alias.name.split(".")[0]
                    imported[local] = alias.name if alias.asname else local
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                for alias in node.names:
                    if alias.name != "*":
                        imported[alias.asname or alias.name] = f"{node.module}.{alias.name}"
            elif isinstance(node, ast.ImportFrom) and any(alias.name == "*" for alias in node.names):
                base = resolve_relative(target.package, "." * node.level + (node.module or ""))
                inner = project.module_file(base) if base else None
                for name, qualified in (_aliases_of(project, inner, seen) if inner is not None else {}).items():
                    imported.setdefault(name, qualified)
                    counts[name] = counts.get(name, 0) + 1
        out = {k: v for k, v in imported.items() if k in exported and counts.get(k) == 1}
    if len(_ALIASES) >= _KEEP:
        _ALIASES.clear()
    _ALIASES[key] = out
    return out
