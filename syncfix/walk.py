"""Read-only tree walks that do not rebuild the tree.

LibCST's ``node.visit(visitor)`` rebuilds every node it passes (each one is constructed and
validated again, even for a read-only ``CSTVisitor``); in a profile of ``syncfix check`` that
rebuilding was most of the run. So the module is walked with LibCST once, recording each node's
parent and its children in visit order, and every later read-only walk (the batched rule visit,
the analysis layer's and the rules' sub-walks) runs over that record instead.

A node the record does not hold (one a fix built, or one of another module) falls back to
LibCST's own ``visit``. The record of the module analysed last is the one ``walk`` consults, so
helpers need not be handed it. Nodes are keyed by identity and immutable, and the record keeps
them alive: a node's recorded children are its children in any module that shares it (a fixed
module reuses the unchanged subtrees), so an old record answers rightly or not at all.
"""

from __future__ import annotations

import ast
import inspect
import re
import textwrap
from bisect import bisect_left, bisect_right
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import libcst as cst
from libcst._batched_visitor import _BatchedCSTVisitor

_Fn = Callable[[cst.CSTNode], object]


def _identity_in_c() -> None:
    """LibCST gives every node class a Python-level ``__hash__`` (``id(self)``) and ``__eq__``
    (``self is other``); the analysis keys its tables by node, so those two ran millions of
    times a run (5-8 % of ``check``). ``object``'s own hash and equality compare identity too,
    in C: each node class that has LibCST's gets ``object``'s instead (same answers)."""
    own_hash, own_eq = cst.CSTNode.__dict__.get("__hash__"), cst.CSTNode.__dict__.get("__eq__")
    todo: list[type] = [cst.CSTNode]
    while todo:
        cls = todo.pop()
        todo.extend(cls.__subclasses__())
        if own_hash is not None and cls.__dict__.get("__hash__") is own_hash:
            cls.__hash__ = object.__hash__  # type: ignore[assignment]
        if own_eq is not None and cls.__dict__.get("__eq__") is own_eq:
            cls.__eq__ = object.__eq__  # type: ignore[assignment]


_identity_in_c()


class _Recorder(cst.CSTVisitor):
    def __init__(self) -> None:
        self.parent: dict[cst.CSTNode, cst.CSTNode] = {}
        self.children: dict[cst.CSTNode, list[cst.CSTNode]] = {}
        # children interleaved with (entering?, field) marks: what a visitor sees, in order
        self.events: dict[cst.CSTNode, list[cst.CSTNode | tuple[bool, str]]] = {}
        self.order: dict[cst.CSTNode, int] = {}
        self.by_type: dict[type, list[cst.CSTNode]] = {}
        self._stack: list[cst.CSTNode] = []

    def on_visit(self, node: cst.CSTNode) -> bool:
        kind = type(node)
        nodes = self.by_type.get(kind)
        if nodes is None:
            nodes = self.by_type[kind] = []
        nodes.append(node)
        if self._stack:
            up = self._stack[-1]
            self.parent[node] = up
            self.children[up].append(node)
            self.events[up].append(node)
        self.order[node] = len(self.order)
        self.children[node] = []
        self.events[node] = []
        self._stack.append(node)
        return True

    def on_visit_attribute(self, node: cst.CSTNode, attribute: str) -> None:
        self.events[node].append((True, attribute))

    def on_leave_attribute(self, original_node: cst.CSTNode, attribute: str) -> None:
        self.events[original_node].append((False, attribute))

    def on_leave(self, original_node: cst.CSTNode) -> None:
        self._stack.pop()


# Per node class, the fields its ``_visit_and_replace_children`` visits, in order, read once
# from that method's source (each is one ``visit_<how>(self, "field", ...)`` call, in argument
# order); None where they cannot be read, and LibCST's walk records that module instead.
_FIELDS: dict[type, tuple[str, ...] | None] = {}
_CHECKED: set[type] = set()  # classes whose fields gave LibCST's children for one node


def _fields_of(kind: type) -> tuple[str, ...] | None:
    if kind in _FIELDS:
        return _FIELDS[kind]
    fields: tuple[str, ...] | None = None
    try:
        source = textwrap.dedent(inspect.getsource(kind._visit_and_replace_children))  # type: ignore[attr-defined]
        found: list[str] = []
        for node in _in_order(ast.parse(source)):
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Name)
                and node.func.id.startswith("visit_")
                and len(node.args) >= 2
                and isinstance(node.args[1], ast.Constant)
                and isinstance(node.args[1].value, str)
            ):
                if node.args[1].value not in found:  # ``a if c else b`` visits one field either way
                    found.append(node.args[1].value)
        fields = tuple(found)
    except (OSError, TypeError, SyntaxError):
        fields = None
    _FIELDS[kind] = fields
    return fields


def _in_order(tree: ast.AST) -> Iterator[ast.AST]:
    """The nodes of ``tree`` in source order (pre-order, fields in the order Python evaluates
    a call's arguments)."""
    yield tree
    for child in ast.iter_child_nodes(tree):
        yield from _in_order(child)


#: Whitespace, newlines and comments: over half of a module's nodes, and of interest to no
#: analysis and to no rule but one (SFX900 reads comments). A record made without them
#: (``Structure(module, trivia=False)``) leaves them out of every replay, which calls no
#: ``visit_<Type>`` of a visitor for them (their scope and parent metadata are not set).
TRIVIA: frozenset[type] = frozenset(
    {cst.SimpleWhitespace, cst.ParenthesizedWhitespace, cst.TrailingWhitespace, cst.EmptyLine, cst.Newline, cst.Comment}
)
_TRIVIA_NAMES = frozenset(kind.__name__ for kind in TRIVIA)
_WANTS_TRIVIA: dict[type, bool] = {}


def visits_trivia(cls: type) -> bool:
    """Does a visitor class have a ``visit_``/``leave_`` method of a :data:`TRIVIA` type (so
    that a record without them would not call it)?"""
    wanted = _WANTS_TRIVIA.get(cls)
    if wanted is None:
        wanted = _WANTS_TRIVIA[cls] = any(
            callable(fn := getattr(cls, f"{prefix}{name}", None)) and not getattr(fn, "_is_no_op", False)
            for prefix in ("visit_", "leave_")
            for name in _TRIVIA_NAMES
        )
    return wanted


def _record(module: cst.Module, rec: _Recorder, trivia: bool = True) -> bool:
    """What ``module.visit(rec)`` records, read off the nodes' fields without rebuilding them
    (without :data:`TRIVIA` nodes unless ``trivia``); False (recording nothing) where a node
    class's fields cannot be read."""
    parent, children, order, by_type = rec.parent, rec.children, rec.order, rec.by_type
    skipped = frozenset() if trivia else TRIVIA
    fields_of: dict[type, tuple[str, ...] | None] = {}
    known = _NODE_CLASS
    stack: list[cst.CSTNode] = [module]
    # iterative pre-order: children pushed reversed; field marks are made when a replay asks
    while stack:
        node = stack.pop()
        kind = type(node)
        if kind in fields_of:
            fields = fields_of[kind]
        else:
            fields = fields_of[kind] = _fields_of(kind)
        if fields is None:
            return False
        order[node] = len(order)
        nodes = by_type.get(kind)
        if nodes is None:
            nodes = by_type[kind] = []
        nodes.append(node)
        mine: list[cst.CSTNode] = []
        for field in fields:
            value = getattr(node, field)
            vtype = type(value)
            if vtype is tuple or vtype is list:
                for item in value:
                    itype = type(item)
                    is_node = known.get(itype)
                    if is_node is None:
                        is_node = _is_node(itype)
                    if is_node and itype not in skipped:
                        mine.append(item)
            else:
                is_node = known.get(vtype)
                if is_node is None:
                    is_node = _is_node(vtype)
                if is_node and vtype not in skipped:
                    mine.append(value)
        if kind not in _CHECKED:  # the first node of a class: LibCST's own list must agree
            theirs = [id(c) for c in node.children if type(c) not in skipped]
            if theirs != [id(c) for c in mine]:
                _FIELDS[kind] = None
                return False
            _CHECKED.add(kind)
        children[node] = mine  # in order: the pre-order visits them in this order
        for child in mine:
            parent[child] = node
        stack.extend(reversed(mine))
    return True


def _marks_of(node: cst.CSTNode) -> list[cst.CSTNode | tuple[bool, str]]:
    """The children of a node whose class :func:`_record` read, with the field marks LibCST's
    walk reports around them (``(True, field)`` before a field, ``(False, field)`` after)."""
    kind = type(node)
    marks: list[cst.CSTNode | tuple[bool, str]] = []
    for field in _FIELDS[kind] or ():
        value = getattr(node, field)
        vtype = type(value)
        if value is None and kind is cst.FormattedStringExpression and field == "format_spec":
            continue  # LibCST does not visit an absent format spec at all
        marks.append((True, field))
        if vtype is tuple or vtype is list:
            marks.extend(item for item in value if _is_node(type(item)))
        elif _is_node(vtype):
            marks.append(value)
        marks.append((False, field))
    return marks


_NODE_CLASS: dict[type, bool] = {}  # is it a CSTNode class (subclass tests on ABCs are slow)


def _is_node(kind: type) -> bool:
    known = _NODE_CLASS.get(kind)
    if known is None:
        known = _NODE_CLASS[kind] = issubclass(kind, cst.CSTNode)
    return known


class Structure:
    """Parents and ordered children of every node of one module (one LibCST walk)."""

    def __init__(self, module: cst.Module, *, trivia: bool = True) -> None:
        rec = _Recorder()
        read = _record(module, rec, trivia)
        if not read:
            rec = _Recorder()
            module.visit(rec)
        #: are :data:`TRIVIA` nodes recorded (the slow path, LibCST's own walk, records them)
        self.trivia = trivia or not read
        self.root = module
        self.parent = rec.parent
        self.children = rec.children
        self._events = None if read else rec.events
        # Pre-order rank: source order for nodes that do not contain one another, without
        # resolving positions (a codegen pass over the whole module).
        self.order = rec.order
        self._by_type = rec.by_type
        self._ranks: dict[type, list[int]] = {}  # per type, the ranks of _by_type's nodes
        self.memo: dict[tuple[str, cst.CSTNode], object] = {}  # per-node facts helpers cache
        global _active
        _active = self

    def walk(self, node: cst.CSTNode, visitor: cst.CSTVisitor) -> None:
        """``node.visit(visitor)`` for a read-only visitor, same calls in the same order (no
        field hooks: ``visit_<Type>_<field>`` methods are not called)."""
        children = self.children.get(node)
        if children is None or (not self.trivia and visits_trivia(type(visitor))):
            _original_visit(node, visitor)
            return
        names = _plain_methods(type(visitor))
        if names is not None:
            _replay_plain(self, node, visitor, names, fields=False)
            return
        self._walk(node, visitor)

    def _walk(self, node: cst.CSTNode, visitor: cst.CSTVisitor) -> None:
        if visitor.on_visit(node):
            for child in self.children[node]:
                self._walk(child, visitor)
        visitor.on_leave(node)

    def marks(self, node: cst.CSTNode) -> Sequence[cst.CSTNode | tuple[bool, str]]:
        """The node's children with LibCST's field marks around them, in visit order."""
        return _marks_of(node) if self._events is None else self._events[node]

    def of_type(self, *kinds: type) -> list[cst.CSTNode]:
        """Every node of the module of these exact types, in visit (source) order: what a
        whole-module walk for them would find, without the walk."""
        if len(kinds) == 1:
            return list(self._by_type.get(kinds[0], ()))
        found = [n for kind in kinds for n in self._by_type.get(kind, ())]
        found.sort(key=self.order.__getitem__)
        return found

    def within(self, node: cst.CSTNode, kind: type) -> Sequence[cst.CSTNode]:
        """The nodes of exact type ``kind`` in ``node``'s subtree (``node`` included), in source
        order: read off the type index by pre-order rank (a subtree is one run of ranks), no
        walk. ``node`` must be part of the recorded module."""
        nodes = self._by_type.get(kind)
        if not nodes:
            return ()
        ranks = self._ranks.get(kind)
        if ranks is None:
            ranks = self._ranks[kind] = [self.order[n] for n in nodes]
        last = node
        while below := self.children.get(last):
            last = below[-1]
        return nodes[bisect_left(ranks, self.order[node]) : bisect_right(ranks, self.order[last])]

    def descendants(self, node: cst.CSTNode) -> Iterator[cst.CSTNode]:
        """``node`` and everything under it, in visit (source) order."""
        stack = [node]
        children = self.children
        while stack:
            cur = stack.pop()
            yield cur
            below = children.get(cur)
            if below:
                stack.extend(reversed(below))

    def visit_batched(
        self,
        visitors: Sequence[cst.BatchableCSTVisitor],
        skip: Callable[[cst.CSTNode], bool] = lambda node: False,
        skippable: Callable[[cst.BatchableCSTVisitor], bool] = lambda visitor: True,
    ) -> None:
        """What ``MetadataWrapper.visit_batched`` does (``visit_<Type>`` before the children,
        ``leave_<Type>`` after, visitors in order), without rebuilding or resolving metadata up
        front: the analysis resolves what a rule asks for, when it asks.

        With ``skip``: the subtree of a function or module-level statement for which
        ``skip(node)`` holds is visited only by the visitors that are not ``skippable`` (not at
        all when every visitor is)."""
        if not self.trivia and any(visits_trivia(type(v)) for v in visitors):
            raise ValueError("a visitor of whitespace or comments needs a record made with trivia=True")
        everyone = _Dispatch(visitors)
        some = _Dispatch([v for v in visitors if not skippable(v)])
        children = self.children
        root = self.root

        def go(node: cst.CSTNode, table: _Dispatch) -> None:
            kind = type(node)
            for fn in table.enter(kind):
                fn(node)
            for child in children[node]:
                if (
                    table is everyone
                    and (node is root or type(child) is cst.FunctionDef)
                    and skip(child)
                ):
                    if some.visitors:
                        go(child, some)
                else:
                    go(child, table)
            for fn in table.leave(kind):
                fn(node)

        if not skip(root):
            go(root, everyone)
        elif some.visitors:
            go(root, some)


class _Dispatch:
    """Per node type, the bound ``visit_<Type>`` and ``leave_<Type>`` methods of some visitors,
    looked up once per type."""

    def __init__(self, visitors: Sequence[cst.BatchableCSTVisitor]) -> None:
        self.visitors = visitors
        self._names = [_methods(type(v)) for v in visitors]
        self._enter: dict[type, list[_Fn]] = {}
        self._leave: dict[type, list[_Fn]] = {}

    def enter(self, kind: type) -> list[_Fn]:
        fns = self._enter.get(kind)
        if fns is None:
            fns = self._enter[kind] = self._lookup(kind, 0)
        return fns

    def leave(self, kind: type) -> list[_Fn]:
        fns = self._leave.get(kind)
        if fns is None:
            fns = self._leave[kind] = self._lookup(kind, 1)
        return fns

    def _lookup(self, kind: type, which: int) -> list[_Fn]:
        name = kind.__name__
        return [
            getattr(v, names[which][name])
            for v, names in zip(self.visitors, self._names, strict=True)
            if name in names[which]
        ]


_METHODS: dict[type, tuple[dict[str, str], dict[str, str]]] = {}


def _methods(cls: type) -> tuple[dict[str, str], dict[str, str]]:
    """Node type name → method name, for the class's ``visit_<Type>`` and ``leave_<Type>``."""
    cached = _METHODS.get(cls)
    if cached is None:
        enter: dict[str, str] = {}
        leave: dict[str, str] = {}
        for name in dir(cls):
            if getattr(getattr(cls, name), "_is_no_op", False):
                continue  # LibCST's empty stubs
            for prefix, into in (("visit_", enter), ("leave_", leave)):
                if name.startswith(prefix):
                    rest = name[len(prefix):]
                    if "_" in rest:
                        raise TypeError(f"{cls.__name__}.{name}: attribute visits are not supported")
                    into[rest] = name
        cached = _METHODS[cls] = (enter, leave)
    return cached


_active: Structure | None = None


@contextmanager
def keep_active() -> Iterator[None]:
    """Analyse another module within this block (its record becomes the active one) and make
    the record active before it active again afterwards, so that walks and memos of the module
    being analysed keep using it."""
    global _active
    before = _active
    try:
        yield
    finally:
        _active = before


def walk(node: cst.CSTNode, visitor: cst.CSTVisitor) -> None:
    """``node.visit(visitor)`` for a read-only visitor, over the record when it holds ``node``."""
    if _active is not None and node in _active.children:
        _active.walk(node, visitor)
    else:
        node.visit(visitor)


def memo(kind: str, node: cst.CSTNode) -> dict[tuple[str, cst.CSTNode], object] | None:
    """The cache for facts about ``node`` (None when no record holds it: do not cache)."""
    if _active is not None and node in _active.children:
        return _active.memo
    return None


# ---- LibCST's own visitors over the record ------------------------------------------------------

_original_visit = cst.CSTNode.visit


# visitor class (its _class_key) -> is it a read-only CSTVisitor (ABC checks are slow)
_READ_ONLY: dict[tuple[object, ...], bool] = {}


def _replaying_visit(self: cst.CSTNode, visitor: Any) -> Any:
    """``CSTNode.visit`` for a read-only visitor over a recorded node: the same callbacks, in
    the same order (field marks included), with no node rebuilt."""
    record = _active
    if record is not None:
        key = _class_key(type(visitor))
        read_only = _READ_ONLY.get(key)
        if read_only is None:
            read_only = _READ_ONLY[key] = isinstance(visitor, cst.CSTVisitor)
        if read_only and self in record.children and (record.trivia or not visits_trivia(type(visitor))):
            _replay(record, self, visitor)
            return self
    return _original_visit(self, visitor)


def _replay(record: Structure, node: cst.CSTNode, visitor: Any) -> None:
    if type(visitor) is _BatchedCSTVisitor and _replay_batched(node, visitor):
        return
    names = _plain_methods(type(visitor))
    if names is not None:
        _replay_plain(record, node, visitor, names, fields=True)
        return
    marks = record.marks
    # bound methods looked up once per replay, not once per node
    on_visit, on_leave = visitor.on_visit, visitor.on_leave
    enter_field, leave_field = visitor.on_visit_attribute, visitor.on_leave_attribute

    def go(n: cst.CSTNode) -> None:
        if on_visit(n):
            for e in marks(n):
                if isinstance(e, tuple):
                    if e[0]:
                        enter_field(n, e[1])
                    else:
                        leave_field(n, e[1])
                else:
                    go(e)
        on_leave(n)

    go(node)


# A visitor that keeps CSTVisitor's dispatch (``on_visit`` calls ``visit_<Type>``, and so on)
# is replayed by calling its methods directly, and only for the node types and fields it has
# methods for: LibCST's scope and expression-context visitors have a few dozen of each.
# (visit, leave, field visit, field leave method names; on_leave: LibCST's own, overridden, or
# the scope visitor's; types with field hooks)
_Names = tuple[
    dict[str, str], dict[str, str], dict[tuple[str, str], str], dict[tuple[str, str], str], str, frozenset[str]
]
_OWN_LEAVE, _CUSTOM_LEAVE, _SCOPE_LEAVE = "own", "custom", "scope"

# LibCST's scope visitor overrides ``on_leave`` to record each node's scope and count
# assignment-like nodes (an ``isinstance`` on a tuple of ABC-derived classes: a tenth of the
# scope analysis) before dispatching ``leave_<Type>``. Replayed inline when its body is still
# exactly this; any other body keeps the generic call.
_SCOPE_ON_LEAVE_BODY = """\
def on_leave(self, original_node: cst.CSTNode) -> None:
    self.provider.set_metadata(original_node, self.scope)
    if isinstance(original_node, _ASSIGNMENT_LIKE_NODES):
        self.scope._assignment_count += 1
    super().on_leave(original_node)
"""
_scope_assignment_types: frozenset[type] | None = None


def _scope_leave_inline(cls: type) -> bool:
    """Is ``cls.on_leave`` LibCST's scope visitor's, with the body above, over final classes?"""
    global _scope_assignment_types
    from libcst.metadata import scope_provider

    fn: Callable[..., object] = cls.on_leave  # type: ignore[attr-defined]
    if fn is not getattr(scope_provider.ScopeVisitor, "on_leave", None):
        return False
    if _scope_assignment_types is None:
        try:
            body = textwrap.dedent(inspect.getsource(fn))
        except (OSError, TypeError):
            body = ""
        kinds = getattr(scope_provider, "_ASSIGNMENT_LIKE_NODES", ())
        final = all(isinstance(k, type) and not k.__subclasses__() for k in kinds)
        _scope_assignment_types = frozenset(kinds) if body == _SCOPE_ON_LEAVE_BODY and final else frozenset()
    return bool(_scope_assignment_types)
_PLAIN: dict[tuple[object, ...], _Names | None] = {}


def _class_key(cls: type) -> tuple[object, ...]:
    """What a visitor class's method tables depend on: a class statement in a function makes a
    new class per call (not to be kept), but one of the same name, bases and own attributes."""
    return (cls.__module__, cls.__qualname__, cls.__bases__, tuple(cls.__dict__))


def _plain_methods(cls: type) -> _Names | None:
    """``visit_<Type>``/``leave_<Type>`` method names per node type name, attribute ones per
    (type, field), and whether ``on_leave`` is overridden; None unless ``cls`` keeps
    CSTVisitor's ``on_visit`` and attribute hooks."""
    key = _class_key(cls)
    if key in _PLAIN:
        return _PLAIN[key]
    names: _Names | None = None
    base = cst.CSTVisitor
    if (
        issubclass(cls, base)
        and cls.on_visit is base.on_visit
        and cls.on_visit_attribute is base.on_visit_attribute
        and cls.on_leave_attribute is base.on_leave_attribute
    ):
        visit: dict[str, str] = {}
        leave: dict[str, str] = {}
        visit_field: dict[tuple[str, str], str] = {}
        leave_field: dict[tuple[str, str], str] = {}
        for name in dir(cls):
            for prefix, by_type, by_field in (("visit_", visit, visit_field), ("leave_", leave, leave_field)):
                if not name.startswith(prefix):
                    continue
                fn = getattr(cls, name, None)
                if not callable(fn) or getattr(fn, "_is_no_op", False):
                    continue  # LibCST's empty stubs
                kind, _, field = name[len(prefix):].partition("_")
                if field:
                    by_field[(kind, field)] = name
                else:
                    by_type[kind] = name
        hooked = frozenset(kind for kind, _ in (*visit_field, *leave_field))
        if cls.on_leave is base.on_leave:
            leaving = _OWN_LEAVE
        elif _scope_leave_inline(cls):
            leaving = _SCOPE_LEAVE
        else:
            leaving = _CUSTOM_LEAVE
        names = (visit, leave, visit_field, leave_field, leaving, hooked)
    _PLAIN[key] = names
    return names


def _replay_plain(record: Structure, node: cst.CSTNode, visitor: Any, names: _Names, *, fields: bool) -> None:
    """What ``CSTVisitor``'s ``on_visit``/``on_leave`` and attribute hooks would call, called
    directly: a ``visit_<Type>`` returning False skips the children; an overridden ``on_leave``
    is called for every node (it dispatches ``leave_<Type>`` itself), the scope visitor's inline.
    Field hooks are called when ``fields`` (LibCST's walk calls them; :meth:`Structure.walk`
    does not)."""
    visit, leave, visit_field, leave_field, leaving, hooked = names
    on_leave = visitor.on_leave if leaving == _CUSTOM_LEAVE else None
    if leaving == _SCOPE_LEAVE:
        set_scope, assigning = visitor.provider.set_metadata, _scope_assignment_types or frozenset()
    else:
        set_scope = None
    if not fields:
        hooked = frozenset()
    children, marks = record.children, record.marks
    skipped = frozenset() if record.trivia else TRIVIA  # marks list them; the record does not

    def go(n: cst.CSTNode) -> None:
        kind = type(n).__name__
        name = visit.get(kind)
        if name is None or getattr(visitor, name)(n) is not False:
            if kind in hooked:  # only these node types need their field marks
                for e in marks(n):
                    if type(e) is tuple:
                        hook = (visit_field if e[0] else leave_field).get((kind, e[1]))
                        if hook is not None:
                            getattr(visitor, hook)(n)
                    elif type(e) not in skipped:
                        go(e)  # type: ignore[arg-type]  # noqa: F821 (bound until the walk ends)
            else:
                for child in children[n]:
                    go(child)  # noqa: F821 (bound until the walk ends)
        if on_leave is not None:
            on_leave(n)
        else:
            if set_scope is not None:
                scope = visitor.scope
                set_scope(n, scope)
                if type(n) in assigning:
                    scope._assignment_count += 1
            name = leave.get(kind)
            if name is not None:
                getattr(visitor, name)(n)

    try:
        go(node)
    finally:
        del go  # it refers to itself: a cycle the collector would have to find


def _replay_batched(node: cst.CSTNode, visitor: Any) -> bool:
    """The metadata wrapper's batched walk when its providers only act on the module node (the
    scope and expression-context providers run their own walk from ``visit_Module``): call
    those methods and skip the rest of the tree, where nothing would be called. False: not
    that case, replay it in full."""
    methods = visitor.visitor_methods
    if (
        type(node) is not cst.Module
        or visitor.before_visit is not None
        or visitor.after_leave is not None
        or any(key not in ("visit_Module", "leave_Module") for key in methods)
    ):
        return False
    for fn in methods.get("visit_Module", ()):
        fn(node)
    for fn in methods.get("leave_Module", ()):
        fn(node)
    return True


_original_get_visitors = cst.BatchableCSTVisitor.get_visitors
_VISITOR_NAMES: dict[type, tuple[str, ...]] = {}


def _cached_get_visitors(self: cst.BatchableCSTVisitor) -> dict[str, Any]:
    """``get_visitors`` with the method names found once per class: LibCST looks them up with
    ``inspect.getmembers`` for every provider of every file, a third of a small file's cost."""
    names = _VISITOR_NAMES.get(type(self))
    if names is None:
        names = _VISITOR_NAMES[type(self)] = tuple(_original_get_visitors(self))
    return {name: getattr(self, name) for name in names}


# LibCST's scope visitor looks up the qualified names of every call (a walk up the scopes per
# call) only to spot ``typing.cast``, ``TypeVar`` and ``NewType``, whose string arguments are
# annotations. Such a call needs the words ``typing`` and ``cast``, ``TypeVar`` or ``NewType`` in
# the module's text (an import names them, aliased or not); in a module without them, every call
# takes the visitor's ordinary path: LibCST's method (checked against its source, as above)
# without the lookup.
_SCOPE_VISIT_CALL_BODY = """\
def visit_Call(self, node: cst.Call) -> Optional[bool]:
    self.__top_level_attribute_stack.append(None)
    self.__in_type_hint_stack.append(False)
    qnames = {qn.name for qn in self.scope.get_qualified_names_for(node)}
    if "typing.NewType" in qnames or "typing.TypeVar" in qnames:
        node.func.visit(self)
        self.__in_type_hint_stack[-1] = True
        for arg in node.args[1:]:
            arg.visit(self)
        return False
    if "typing.cast" in qnames:
        node.func.visit(self)
        if len(node.args) > 0:
            self.__in_type_hint_stack.append(True)
            node.args[0].visit(self)
            self.__in_type_hint_stack.pop()
            for arg in node.args[1:]:
                arg.visit(self)
        return False
    return True
"""
_TYPING_CALL = re.compile(r"\b(?:cast|TypeVar|NewType)\b")


def may_call_typing(text: str) -> bool:
    """May a module of this text call ``typing.cast``, ``TypeVar`` or ``NewType``?"""
    return "typing" in text and _TYPING_CALL.search(text) is not None


_scope_visit_call: Callable[..., object] | None = None  # LibCST's, when its body is as above


def _plain_scope_call(self: Any, node: cst.Call) -> bool:
    """LibCST's ``ScopeVisitor.visit_Call`` for a call whose qualified names hold no ``typing.…``."""
    self._ScopeVisitor__top_level_attribute_stack.append(None)
    self._ScopeVisitor__in_type_hint_stack.append(False)
    return True


def _libcst_scope_visit_call() -> Callable[..., object] | None:
    global _scope_visit_call
    if _scope_visit_call is None:
        from libcst.metadata import scope_provider

        fn = scope_provider.ScopeVisitor.visit_Call
        try:
            body = textwrap.dedent(inspect.getsource(fn))
        except (OSError, TypeError):
            body = ""
        _scope_visit_call = fn if body == _SCOPE_VISIT_CALL_BODY else _plain_scope_call  # the latter: "not patchable"
    return None if _scope_visit_call is _plain_scope_call else _scope_visit_call


@contextmanager
def replaying(no_typing_calls: bool = False) -> Iterator[None]:
    """Within this block LibCST's read-only visitors (the scope provider's among them) replay
    the record instead of rebuilding the tree: resolving scopes costs about half as much.
    ``no_typing_calls``: the module's text cannot call those ``typing`` functions (see above)."""
    cst.CSTNode.visit = _replaying_visit  # type: ignore[method-assign]
    cst.BatchableCSTVisitor.get_visitors = _cached_get_visitors  # type: ignore[method-assign]
    libcst_call = _libcst_scope_visit_call()
    if libcst_call is not None:  # each block sets the method it needs, and puts back the one before
        from libcst.metadata import scope_provider

        before = scope_provider.ScopeVisitor.visit_Call
        scope_provider.ScopeVisitor.visit_Call = _plain_scope_call if no_typing_calls else libcst_call  # type: ignore[method-assign,assignment]
    try:
        yield
    finally:
        cst.CSTNode.visit = _original_visit  # type: ignore[method-assign]
        cst.BatchableCSTVisitor.get_visitors = _original_get_visitors  # type: ignore[method-assign]
        if libcst_call is not None:
            scope_provider.ScopeVisitor.visit_Call = before  # type: ignore[method-assign]
