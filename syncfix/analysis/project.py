"""The project around a file: which names other project files import from which module.

Built once per run by the engine over every Python file under the project root (the folder
holding ``pyproject.toml`` or ``.git``) with the standard library's ``ast`` (imports only, no
LibCST), so it stays cheap. callgraph.py asks it whether a module-level function may have callers
in other files: then its parameters join with unknown.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

#: ``imports[module]``: names imported from it by other files; ``"*"`` for ``import module``
#: (or a star import): then every name may be used.
ALL = "*"


@dataclass
class ProjectIndex:
    """Imports between the project's modules, keyed by dotted module name."""

    imports: dict[str, set[str]] = field(default_factory=dict)

    def imports_name(self, module: str | None, name: str) -> bool:
        """May a file other than ``module`` import ``name`` from it?"""
        if module is None:
            return False
        # Conservative about names: ``main`` may be imported as ``main`` or ``scripts.main``.
        parts = module.split(".")
        for i in range(len(parts)):
            got = self.imports.get(".".join(parts[i:]), set())
            if ALL in got or name in got:
                return True
        return False

    @classmethod
    def build(cls, sources: Mapping[str, bytes]) -> ProjectIndex:
        """From ``{dotted module name: source}``; unparsable files import nothing we can see."""
        index = cls()
        for module, data in sources.items():
            try:
                tree = ast.parse(data)
            except (SyntaxError, ValueError):
                continue
            index.add(module, ast.walk(tree))
        return index

    def add(self, module: str, nodes: Iterable[ast.AST]) -> None:
        package = module.rpartition(".")[0]
        for node in nodes:
            if isinstance(node, ast.Import):
                for alias in node.names:
                    self._record(alias.name, ALL, module)
            elif isinstance(node, ast.ImportFrom):
                base = _resolve(package, node.module, node.level)
                if base is None:
                    continue
                for alias in node.names:
                    self._record(base, alias.name, module)
                    # ``from pkg import module``: the submodule, whole
                    self._record(f"{base}.{alias.name}" if base else alias.name, ALL, module)

    def _record(self, target: str, name: str, importer: str) -> None:
        if target == importer:
            return
        self.imports.setdefault(target, set()).add(name)
        # A project file may be imported by a shorter or longer dotted name than ours (a
        # ``src/`` layout, a script folder on sys.path): record every suffix too.
        parts = target.split(".")
        for i in range(1, len(parts)):
            self.imports.setdefault(".".join(parts[i:]), set()).add(name)


def _resolve(package: str, module: str | None, level: int) -> str | None:
    if level == 0:
        return module or None
    parts = package.split(".") if package else []
    if level - 1 > len(parts):
        return None
    base = parts[: len(parts) - (level - 1)]
    return ".".join([*base, module] if module else base)
