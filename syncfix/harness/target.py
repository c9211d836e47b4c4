"""What ``syncfix verify|trace TARGET`` runs: a script, or a ``module:function`` to call."""

from __future__ import annotations

import importlib
import os
import sys
from dataclasses import dataclass
from typing import Any


class TargetError(ValueError):
    """TARGET names nothing runnable."""


@dataclass(frozen=True)
class Target:
    kind: str  # "script" | "function"
    spec: str  # as given
    path: str | None = None  # the script, or the file of a ``file.py:function`` target
    module: str | None = None  # the module of a ``module:function`` target
    attr: str | None = None  # the function (dotted attributes allowed)
    args: tuple[str, ...] = ()  # the script's arguments

    def to_dict(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "spec": self.spec,
            "path": self.path,
            "module": self.module,
            "attr": self.attr,
            "args": list(self.args),
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Target:
        return cls(d["kind"], d["spec"], d["path"], d["module"], d["attr"], tuple(d["args"]))


def parse_target(spec: str, args: tuple[str, ...] | list[str] = ()) -> Target:
    """``script.py`` (any existing file), ``file.py:function`` or ``package.module:function``."""
    if not spec:
        raise TargetError("empty TARGET")
    if os.path.isfile(spec):
        return Target("script", spec, path=os.path.abspath(spec), args=tuple(args))
    if ":" in spec:
        left, _, attr = spec.rpartition(":")
        if not attr or not all(p.isidentifier() for p in attr.split(".")):
            raise TargetError(f"{spec!r}: {attr!r} is not a function name")
        if args:
            raise TargetError(
                "arguments after -- are only for scripts, not module:function targets"
            )
        if left.endswith(".py"):
            if not os.path.isfile(left):
                raise TargetError(f"{left}: no such file")
            return Target("function", spec, path=os.path.abspath(left), attr=attr)
        if not all(p.isidentifier() for p in left.split(".")):
            raise TargetError(f"{spec!r}: {left!r} is neither a file nor a module name")
        return Target("function", spec, module=left, attr=attr)
    if spec.endswith(".py"):
        raise TargetError(f"{spec}: no such file")
    raise TargetError(f"{spec!r}: expected a script path or module:function")


def check_object_spec(spec: str) -> None:
    """Raise :class:`TargetError` unless ``module:attr`` / ``file.py:attr`` plausibly names
    something, without running any of the user's code (``file.py`` is parsed, not imported)."""
    left, sep, attr = spec.rpartition(":")
    if not sep or not left or not attr or not all(p.isidentifier() for p in attr.split(".")):
        raise TargetError(f"{spec!r}: expected module:name or file.py:name")
    if left.endswith(".py"):
        if not os.path.isfile(left):
            raise TargetError(f"{left}: no such file")
        import ast

        with open(left, "rb") as fh:
            try:
                tree = ast.parse(fh.read(), left)
            except SyntaxError as exc:
                raise TargetError(f"{left}: {exc}") from exc
        head = attr.split(".")[0]
        names = set()
        for node in tree.body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                names.add(node.name)
            elif isinstance(node, (ast.Assign, ast.AnnAssign)):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                names.update(t.id for t in targets if isinstance(t, ast.Name))
            elif isinstance(node, (ast.Import, ast.ImportFrom)):
                names.update((a.asname or a.name).split(".")[0] for a in node.names)
        if head not in names:
            raise TargetError(f"{left} defines no {head!r}")
        return
    import importlib.util

    try:
        found = importlib.util.find_spec(left)
    except (ImportError, ValueError) as exc:
        raise TargetError(f"{left}: {exc}") from exc
    if found is None:
        raise TargetError(f"no module named {left!r}")


def load_object(spec: str) -> Any:
    """Import ``module:attr`` or ``path/to/file.py:attr`` (the file's folder joins sys.path)."""
    left, sep, attr = spec.rpartition(":")
    if not sep or not left or not attr:
        raise TargetError(f"{spec!r}: expected module:name or file.py:name")
    if left.endswith(".py"):
        path = os.path.abspath(left)
        folder, name = os.path.split(path)
        if folder not in sys.path:
            sys.path.insert(0, folder)
        module = importlib.import_module(name[:-3])
        if os.path.abspath(getattr(module, "__file__", "") or "") != path:
            raise TargetError(
                f"{left}: importing {name[:-3]!r} found another module ({module.__file__})"
            )
    else:
        module = importlib.import_module(left)
    obj: Any = module
    for part in attr.split("."):
        try:
            obj = getattr(obj, part)
        except AttributeError as exc:
            raise TargetError(f"{spec!r}: {part!r} not found") from exc
    return obj
