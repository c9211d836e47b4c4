"""What a closed project's files do with attributes, by name: the summary that lets a method's
parameters and an attribute's value be read across files (calls through objects).

Where ``trainer.fit(loader)`` is called, the object's class is not known, so the project is
read by attribute *name*: every ``.fit(...)`` call in any file is taken to be a possible call of
every method named ``fit`` (more calls than the real ones: joining more arguments only weakens
a fact), and a name used any other way (``hook = trainer.fit``, ``getattr(t, "fit")``,
``Trainer.fit(t, ...)`` on a class, a call with ``*args``) leaves the method's callers unknown.
Likewise an attribute some file stores on an object other than ``self`` (``trainer.loader =
...``) holds more than its class's own assignments, and a class another file derives from may
override its methods and set its attributes.

Each file's summary is read off Python's own parse when the project index reads the file, and
kept only for the names some class of the project defines as a method or stores on ``self``.

Not seen: a method fetched with ``getattr`` under a computed name and called later, and an
attribute set through ``__dict__`` or ``vars()``. ``getattr(x, name)(...)`` called at once and
``setattr(x, name, v)`` with a computed name are seen, and make every name unknown.
"""

from __future__ import annotations

import ast
from collections.abc import Collection, Mapping
from dataclasses import dataclass

from .ast_reading import statements


@dataclass(frozen=True)
class MemberUse:
    """One file's use of attribute names (see the module docstring)."""

    calls: frozenset[str] = frozenset()  # ``x.name(...)`` with plain arguments
    other_uses: frozenset[str] = frozenset()  # any other read of ``.name`` (or a literal getattr)
    stores: frozenset[str] = frozenset()  # ``x.name = ...`` (``del``, ``+=``...) where x is not self
    bases: frozenset[str] = frozenset()  # the names classes of the file derive from (last part)
    # methods and class attributes its classes define, and its module-level names (which
    # ``module.name = ...`` in another file may set)
    methods: frozenset[str] = frozenset()
    self_stores: frozenset[str] = frozenset()  # ``self.name = ...``
    dynamic_calls: bool = False  # ``getattr(x, computed)(...)``
    dynamic_stores: bool = False  # ``setattr(x, computed, v)``, x not ``self``
    dynamic_self_stores: bool = False  # ``setattr(self, computed, v)``: any ``self.name`` of its class
    builds_by_type: bool = False  # ``type(x)(...)``, ``x.__class__(...)``: a class called unnamed

    def keep(self, names: frozenset[str]) -> MemberUse:
        """The summary for ``names`` only (what the project's classes define)."""
        return MemberUse(
            self.calls & names,
            self.other_uses & names,
            self.stores & names,
            self.bases,
            frozenset(),
            self.self_stores & names,
            self.dynamic_calls,
            self.dynamic_stores,
            self.dynamic_self_stores,
            self.builds_by_type,
        )


EMPTY = MemberUse()
#: Attributes of a parsed command line whose stores every file's summary keeps (namespaces.py).
NAMESPACE_ATTRS = frozenset({"device"})
_DYNAMIC = {"getattr", "hasattr", "setattr", "delattr"}


def member_use(tree: ast.Module) -> MemberUse:
    """What ``tree`` does with attribute names (one walk: a call comes before its callee)."""
    calls: set[str] = set()
    other: set[str] = set()
    stores: set[str] = set()
    self_stores: set[str] = set()
    bases: set[str] = set()
    methods: set[str] = set()
    classes = {n.name for n in statements(tree) if isinstance(n, ast.ClassDef)}
    for stmt in tree.body:
        targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target] if isinstance(stmt, ast.AnnAssign) else []
        methods.update(t.id for t in targets if isinstance(t, ast.Name))
    callees: set[int] = set()  # ids of Attribute nodes that are a plain call's callee
    dynamic_calls = dynamic_stores = dynamic_self_stores = builds_by_type = False
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute):
            if isinstance(node.ctx, (ast.Store, ast.Del)):
                on_self = isinstance(node.value, ast.Name) and node.value.id == "self"
                (self_stores if on_self else stores).add(node.attr)
            elif id(node) in callees:
                calls.add(node.attr)
            else:
                other.add(node.attr)
        elif isinstance(node, ast.Call):
            func = node.func
            if (
                isinstance(func, ast.Call) and isinstance(func.func, ast.Name) and func.func.id == "type"
                or isinstance(func, ast.Attribute) and func.attr == "__class__"
            ):
                builds_by_type = True
            if isinstance(func, ast.Attribute):
                receiver = func.value
                on_class = isinstance(receiver, ast.Name) and (receiver.id in classes or receiver.id[:1].isupper())
                starred = any(isinstance(a, ast.Starred) for a in node.args) or any(k.arg is None for k in node.keywords)
                if not on_class and not starred:
                    callees.add(id(func))
            elif isinstance(func, ast.Call) and isinstance(func.func, ast.Name) and func.func.id == "getattr":
                if not _literal_name(func):
                    dynamic_calls = True
            if isinstance(func, ast.Name) and func.id in _DYNAMIC and len(node.args) >= 2:
                name = _literal_name(node)
                # ``setattr(self, k, v)`` reaches only instances of its class, as ``self.k = v`` does
                on_self = isinstance(node.args[0], ast.Name) and node.args[0].id == "self"
                if func.id not in ("setattr", "delattr"):
                    if name is not None:
                        other.add(name)
                elif name is not None:
                    (self_stores if on_self else stores).add(name)
                elif on_self:
                    dynamic_self_stores = True
                else:
                    dynamic_stores = True
        elif isinstance(node, ast.ClassDef):
            for base in node.bases:
                last = base.attr if isinstance(base, ast.Attribute) else base.id if isinstance(base, ast.Name) else None
                if last is not None:
                    bases.add(last)
            methods.update(
                s.name for s in node.body if isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef))
            )
            for s in node.body:  # ``device = "cuda"`` in the class body: ``Trainer.device = ...`` may set it
                targets = s.targets if isinstance(s, ast.Assign) else [s.target] if isinstance(s, ast.AnnAssign) else []
                methods.update(t.id for t in targets if isinstance(t, ast.Name))
    return MemberUse(
        frozenset(calls),
        frozenset(other),
        frozenset(stores),
        frozenset(bases),
        frozenset(methods),
        frozenset(self_stores),
        dynamic_calls,
        dynamic_stores,
        dynamic_self_stores,
        builds_by_type,
    )


def _literal_name(call: ast.Call) -> str | None:
    arg = call.args[1] if len(call.args) >= 2 else None
    return arg.value if isinstance(arg, ast.Constant) and isinstance(arg.value, str) else None


def kept(uses: Mapping[str, MemberUse]) -> dict[str, MemberUse]:
    """Each file's summary reduced to the names the project's classes define (small enough to
    travel with every file's context)."""
    names = frozenset().union(NAMESPACE_ATTRS, *(u.methods | u.self_stores for u in uses.values()))
    return {module: use.keep(names) for module, use in uses.items()}


@dataclass(frozen=True)
class Members:
    """The whole project's use of attribute names, by module (every file's :class:`MemberUse`)."""

    uses: Mapping[str, MemberUse]

    def callers(self, name: str) -> list[str]:
        """The modules that call ``.name(...)``."""
        return sorted(m for m, use in self.uses.items() if name in use.calls)

    def escapes(self, name: str) -> bool:
        """Does some file use ``.name`` other than as the callee of a plain call (or call
        a computed attribute)?"""
        return any(name in u.other_uses or u.dynamic_calls for u in self.uses.values())

    def stored(
        self, name: str, skip: str | None = None, *, computed: bool = True, computed_from: Collection[str] | None = None
    ) -> bool:
        """Does some file (other than ``skip``) store ``.name`` on an object other than ``self``
        (or, unless ``computed`` is off, set a computed attribute: of the files in
        ``computed_from`` only, where it is given)?"""
        return any(
            name in u.stores or computed and u.dynamic_stores and (computed_from is None or m in computed_from)
            for m, u in self.uses.items()
            if m != skip
        )

    def builds_by_type(self, skip: str | None = None) -> bool:
        """Does some file (other than ``skip``) call a class it does not name (``type(x)(...)``)?"""
        return any(u.builds_by_type for m, u in self.uses.items() if m != skip)

    def self_stored(self, name: str, skip: str | None = None) -> bool:
        """Does a method of some file (other than ``skip``) store ``self.name`` (or a computed
        attribute of ``self``)?"""
        return any(name in u.self_stores or u.dynamic_self_stores for m, u in self.uses.items() if m != skip)

    def derived(self, cls: str, skip: str | None = None) -> bool:
        """Does a class of some file (other than ``skip``) name ``cls`` among its bases?"""
        return any(cls in u.bases for m, u in self.uses.items() if m != skip)
