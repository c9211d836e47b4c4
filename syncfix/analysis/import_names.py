"""What a file's imports bind, as the project index reads them with Python's parser: names of
project functions, project modules, names of what is not the project's, star imports."""

from __future__ import annotations

import ast
from collections.abc import Iterator, Mapping

from .ast_reading import statements

# A call, resolved as far as one file can: (module, function) with module "" for the file itself
# and ``ANY`` for a method called through another object (resolved by name in the fixpoint).
Callee = tuple[str, str]

#: In the import resolution table, ``importer + LOCAL + target``: the module ``target`` names
#: for that importer alone (one beside it; syncfix/projects.py ``_beside``).
LOCAL = "\0"


def imports(
    tree: ast.Module, package: str, resolve: Mapping[str, str], module: str = ""
) -> tuple[dict[str, Callee], dict[str, str], frozenset[str], list[str]]:
    """What a file's imports bind: names of project functions, project modules, names of what
    is not the project's, and the project modules it star-imports. ``module``'s own entries of
    ``resolve`` (``module + LOCAL + target``: a module beside a script) come first."""
    if module:
        resolve = Beside(resolve, module)
    names: dict[str, Callee] = {}  # local name -> (project module, function) it was imported as
    modules: dict[str, str] = {}  # local name -> project module (``import pkg.nn as nn``)
    foreign: set[str] = set()  # local names bound to what is not the project's
    stars: list[str] = []  # project modules star-imported
    for node in statements(tree):
        if isinstance(node, ast.ImportFrom):
            base = absolute(package, node.module or "", node.level)
            for alias in node.names:
                local = alias.asname or alias.name
                target = resolve.get(base or "")
                if local == "*" and target is not None:
                    stars.append(target)
                if target is not None:
                    names[local] = (target, alias.name)
                sub = resolve.get(f"{base}.{alias.name}" if base else alias.name)
                if sub is not None:
                    modules[local] = sub
                elif target is None and node.level == 0:
                    foreign.add(local)
        elif isinstance(node, ast.Import):
            for alias in node.names:
                target = resolve.get(alias.name)
                local = alias.asname or alias.name.split(".")[0]
                if target is not None:
                    modules[local] = target
                elif alias.asname or "." not in alias.name:
                    foreign.add(local)
    return names, modules, frozenset(foreign - modules.keys() - names.keys()), stars


class Beside(Mapping[str, str]):
    """``resolve`` as one module sees it: its own entries (a module beside a script) first."""

    def __init__(self, resolve: Mapping[str, str], module: str) -> None:
        self.resolve, self.prefix = resolve, module + LOCAL

    def __getitem__(self, target: str) -> str:
        own = self.resolve.get(self.prefix + target)
        return own if own is not None else self.resolve[target]

    def __iter__(self) -> Iterator[str]:
        return iter(self.resolve)

    def __len__(self) -> int:
        return len(self.resolve)


def absolute(package: str, module: str, level: int) -> str | None:
    if level == 0:
        return module
    parts = package.split(".") if package else []
    if level - 1 > len(parts):
        return None
    base = parts[: len(parts) - (level - 1)]
    return ".".join([*base, module] if module else base)
