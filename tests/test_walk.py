"""The record-and-replay walks (syncfix/walk.py) must be indistinguishable from LibCST's visits."""

from __future__ import annotations

import libcst as cst
import pytest
from libcst.metadata import MetadataWrapper, ScopeProvider

import syncfix.walk as walk_module
from syncfix.walk import Structure, may_call_typing, replaying, walk

from .sources import ROOT, sources

EXTRA = [ROOT / "syncfix" / "engine.py", ROOT / "codemods" / "accumulate_on_device.py"]

MODERN = (
    "def f[T](x: T) -> T:\n    match x:\n        case [1, *rest] if rest:\n            return x\n"
    "try:\n    pass\nexcept* ValueError:\n    pass\n"
    "class C(B, metaclass=M):\n    async def g(self):\n        return [y async for y in self]\n"
    'z = f"{a!r:>{w}} {b=}"\nlambda *a, k=1, **kw: (yield)\n'
)


class Log(cst.CSTVisitor):
    """Logs every callback, so two walks can be compared event by event."""

    def __init__(self, stop_at: type | None = None) -> None:
        self.log: list[tuple] = []
        self.stop_at = stop_at

    def on_visit(self, node):
        self.log.append(("visit", id(node)))
        return not isinstance(node, self.stop_at) if self.stop_at else True

    def on_leave(self, node):
        self.log.append(("leave", id(node)))

    def on_visit_attribute(self, node, attribute):
        self.log.append(("+", id(node), attribute))

    def on_leave_attribute(self, node, attribute):
        self.log.append(("-", id(node), attribute))




@pytest.mark.parametrize("source", sources({"modern-syntax": MODERN}, EXTRA))
@pytest.mark.parametrize("stop_at", [None, cst.Call])
def test_walk_and_replay_make_the_same_calls_as_libcst(source, stop_at):
    module = cst.parse_module(source)
    reference = Log(stop_at)
    module.visit(reference)
    Structure(module)
    fast = Log(stop_at)
    walk(module, fast)
    with replaying():
        replayed = Log(stop_at)
        module.visit(replayed)
    assert fast.log == [e for e in reference.log if e[0] in ("visit", "leave")]
    assert replayed.log == reference.log


TYPING_CALLS = (
    "from typing import cast, TypeVar\nT = TypeVar('T', bound='Base')\nx = cast('Base', y)\n"
    "def f(z):\n    return cast('Other', z)\nclass Base: pass\nclass Other: pass\n"
)


def _scope_summary(source: str, replay: bool, no_typing_calls: bool = False) -> list:
    module = cst.parse_module(source)
    wrapper = MetadataWrapper(module, unsafe_skip_copy=True)
    Structure(module)
    if replay:
        with replaying(no_typing_calls=no_typing_calls):
            scopes = wrapper.resolve(ScopeProvider)
    else:
        scopes = wrapper.resolve(ScopeProvider)
    return _summarize(scopes)


@pytest.mark.parametrize("source", sources({"modern-syntax": MODERN, "typing-calls": TYPING_CALLS}, EXTRA))
def test_scopes_resolved_over_the_replay_are_libcsts(source):
    libcst = _scope_summary(source, replay=False)
    assert _scope_summary(source, replay=True) == libcst
    if not may_call_typing(source):  # what ModuleAnalysis asks for such a module
        assert _scope_summary(source, replay=True, no_typing_calls=True) == libcst


def test_calls_skip_the_qualified_name_lookup_only_where_typing_cannot_be_called(monkeypatch):
    from libcst.metadata.scope_provider import Scope, ScopeVisitor

    assert may_call_typing(TYPING_CALLS)
    assert not may_call_typing("import torch\nx = torch.ones(3).cuda()\nprint(x.sum())\n")
    assert not may_call_typing("from typing import Optional\ny = broadcast(x)\n")  # a word, not a part
    assert may_call_typing("import typing as t\ny = t.cast(int, x)\n")
    # the strings in cast(...)/TypeVar(...) are annotations: LibCST counts the names in them as
    # accesses, and so does the replay unless told (wrongly) that the module has no such calls
    assert _scope_summary(TYPING_CALLS, replay=True, no_typing_calls=True) != _scope_summary(TYPING_CALLS, replay=False)
    lookups: list[cst.CSTNode] = []
    real = Scope.get_qualified_names_for

    def counted(self, node):
        lookups.append(node)
        return real(self, node)

    monkeypatch.setattr(Scope, "get_qualified_names_for", counted)
    source = "import torch\nfor i in range(3):\n    x = torch.ones(i).cuda()\n    print(x.sum().item())\n"
    _scope_summary(source, replay=True, no_typing_calls=True)
    assert not any(isinstance(n, cst.Call) for n in lookups)
    lookups.clear()
    _scope_summary(source, replay=True)
    assert sum(isinstance(n, cst.Call) for n in lookups) == 6  # one per call
    assert ScopeVisitor.visit_Call is walk_module._libcst_scope_visit_call()  # put back


def test_the_scope_visitors_call_is_replaced_only_while_its_body_is_known(monkeypatch):
    from libcst.metadata.scope_provider import ScopeVisitor

    monkeypatch.setattr(walk_module, "_scope_visit_call", None)
    monkeypatch.setattr(walk_module, "_SCOPE_VISIT_CALL_BODY", "def visit_Call(self, node): return True\n")
    libcst_call = ScopeVisitor.visit_Call
    with replaying(no_typing_calls=True):
        assert ScopeVisitor.visit_Call is libcst_call
    assert _scope_summary(TYPING_CALLS, replay=True, no_typing_calls=True) == _scope_summary(TYPING_CALLS, replay=False)


def _summarize(scopes) -> list:
    out = []
    for i, (node, scope) in enumerate(scopes.items()):
        if scope is None:
            out.append((i, type(node).__name__, None))
            continue
        names = sorted(q.name for q in scope.get_qualified_names_for(node)) if isinstance(node, (cst.Name, cst.Attribute)) else []
        # the indices order assignments and accesses (the replay counts assignment-like
        # nodes inline, not through the scope visitor's on_leave)
        out.append((i, type(node).__name__, type(scope).__name__, names,
                    sorted((a.name, getattr(a, "_index", None), len(scope.accesses[a.name]))
                           for a in scope.assignments),
                    sorted((a.node.value if isinstance(a.node, cst.Name) else "", a._index)
                           for a in scope.accesses),
                    scope._assignment_count))
    return out


def test_a_node_outside_the_record_is_visited_by_libcst():
    module = cst.parse_module("x = f(1)\n")
    Structure(cst.parse_module("y = 2\n"))  # another module's record is active
    log = Log()
    walk(module, log)
    reference = Log()
    module.visit(reference)
    assert log.log == reference.log


class TypedLog(cst.CSTVisitor):
    """Typed callbacks only (the dispatch the replay calls directly): a ``visit_<Type>`` that
    prunes, ``leave_<Type>`` and field hooks."""

    def __init__(self) -> None:
        self.log: list[tuple] = []

    def visit_FunctionDef(self, node):
        self.log.append(("def", id(node)))
        return node.name.value != "pruned"

    def visit_Name(self, node):
        self.log.append(("name", node.value))

    def leave_Call(self, node):
        self.log.append(("call", id(node)))

    def visit_ClassDef_bases(self, node):
        self.log.append(("+bases", id(node)))

    def leave_ClassDef_bases(self, node):
        self.log.append(("-bases", id(node)))


class LeavingLog(TypedLog):
    """Overrides ``on_leave`` (as LibCST's scope visitor does), still dispatching by type."""

    def on_leave(self, original_node):
        self.log.append(("leave", type(original_node).__name__))
        super().on_leave(original_node)


PRUNED = "def pruned(a):\n    return f(a)\nclass C(B, D):\n    def kept(self):\n        return g(self)\n"


@pytest.mark.parametrize("visitor", [TypedLog, LeavingLog])
@pytest.mark.parametrize("source", [PRUNED, MODERN, *sources({"modern-syntax": MODERN}, EXTRA)[:5]])
def test_typed_visitors_replayed_make_the_same_calls_as_libcst(source, visitor):
    module = cst.parse_module(source)
    reference = visitor()
    module.visit(reference)
    Structure(module)
    with replaying():
        replayed = visitor()
        module.visit(replayed)
    assert replayed.log == reference.log
    assert ("name", "a") not in reference.log or "pruned" not in source  # the prune is exercised


@pytest.mark.parametrize("source", [PRUNED, MODERN, *sources({"modern-syntax": MODERN}, EXTRA)[:5]])
def test_nodes_of_a_type_are_what_a_walk_finds_in_order(source):
    module = cst.parse_module(source)
    found: list[cst.CSTNode] = []

    class Finder(cst.CSTVisitor):
        def on_visit(self, node):
            if type(node) in (cst.Name, cst.Attribute):
                found.append(node)
            return True

    module.visit(Finder())
    structure = Structure(module)
    assert structure.of_type(cst.Name, cst.Attribute) == found
    assert structure.of_type(cst.Name) == [n for n in found if type(n) is cst.Name]
    assert structure.of_type(cst.Lambda) == [] or "lambda" in source


@pytest.mark.parametrize("source", [PRUNED, MODERN, *sources({"modern-syntax": MODERN}, EXTRA)[:5]])
def test_nodes_within_a_subtree_are_what_walking_it_finds(source):
    module = cst.parse_module(source)
    structure = Structure(module)
    kinds = (cst.Call, cst.Name, cst.SimpleStatementLine, cst.Lambda)
    for node in structure.descendants(module):
        below = list(structure.descendants(node))
        for kind in kinds:
            assert list(structure.within(node, kind)) == [n for n in below if type(n) is kind]


@pytest.mark.parametrize("source", sources({"modern-syntax": MODERN}, EXTRA))
def test_structure_read_off_the_fields_is_libcsts_walk(source):
    # the recorder reads each node class's visit order from LibCST's own source; it must
    # record exactly what LibCST's walk reports (parents, children, field marks, order)
    from syncfix.walk import _record, _Recorder

    module = cst.parse_module(source)
    walked, read = _Recorder(), _Recorder()
    module.visit(walked)
    assert _record(module, read)
    assert read.parent == walked.parent
    assert read.children == walked.children
    assert read.order == walked.order
    assert read.by_type == walked.by_type
    structure = Structure(module)  # field marks are made on demand, from the same fields
    assert {n: list(structure.marks(n)) for n in walked.events} == walked.events


def test_fields_that_disagree_with_libcst_fall_back_to_its_walk(monkeypatch):
    # a class whose fields were read wrongly (here: a call's arguments before its callee) is
    # caught on its first node, by LibCST's own list of children, and LibCST's walk records
    import syncfix.walk as w

    monkeypatch.setattr(w, "_FIELDS", {cst.Call: ("args", "func")})
    monkeypatch.setattr(w, "_CHECKED", set())
    module = cst.parse_module("x = f(a, b)\n")
    assert not w._record(module, w._Recorder())
    structure = Structure(module)
    call = module.body[0].body[0].value
    assert structure.children[call][0] is call.func  # LibCST's order


def test_visitor_classes_of_one_name_keep_their_own_methods():
    # a class statement run twice makes two classes of one qualified name; each is replayed
    # with its own methods (the replay's method tables are per class, not per name)
    def make(calls: bool):
        if calls:
            class V(cst.CSTVisitor):
                def __init__(self):
                    self.seen = []

                def visit_Call(self, node):
                    self.seen.append("call")
        else:
            class V(cst.CSTVisitor):  # type: ignore[no-redef]
                def __init__(self):
                    self.seen = []

                def visit_Name(self, node):
                    self.seen.append("name")
        return V

    module = cst.parse_module("f(x)\n")
    Structure(module)
    with replaying():
        first, second = make(True)(), make(False)()
        module.visit(first)
        module.visit(second)
    assert first.seen == ["call"]
    assert second.seen == ["name", "name"]


def test_the_scope_visitors_leave_is_inlined_only_while_its_body_is_known(monkeypatch):
    # another LibCST's scope visitor (another on_leave body), or a subclass with its own
    # on_leave, keeps the generic call: the inline copy would otherwise drift from it
    from libcst.metadata.scope_provider import ScopeVisitor

    import syncfix.walk as w

    monkeypatch.setattr(w, "_scope_assignment_types", None)
    monkeypatch.setattr(w, "_SCOPE_ON_LEAVE_BODY", "def on_leave(self, original_node): pass\n")
    assert not w._scope_leave_inline(ScopeVisitor)

    class Own(ScopeVisitor):
        def on_leave(self, original_node):
            super().on_leave(original_node)

    monkeypatch.setattr(w, "_scope_assignment_types", None)
    assert not w._scope_leave_inline(Own)


def test_nodes_still_compare_and_hash_by_identity():
    # walk.py swaps LibCST's Python-level __hash__/__eq__ for object's (identity, in C)
    import libcst as cst

    import syncfix.walk  # noqa: F401

    a, b = cst.Name("x"), cst.Name("x")
    assert a != b and a == a and a.deep_equals(b)
    assert len({a, b, a}) == 2 and {a: 1}.get(b) is None
    assert type(a).__hash__ is object.__hash__ and type(a).__eq__ is object.__eq__
    module = cst.parse_module("x = 1\n")
    assert module.deep_equals(cst.parse_module("x = 1\n")) and module != cst.parse_module("x = 1\n")


class _TriviaLog(cst.CSTVisitor):
    """A plain visitor (LibCST's dispatch) of a trivia type: it needs them recorded."""

    def __init__(self) -> None:
        self.log: list[tuple] = []

    def visit_Comment(self, node):
        self.log.append(("comment", id(node)))

    def visit_Name(self, node):
        self.log.append(("name", id(node)))


@pytest.mark.parametrize("source", sources({"modern-syntax": MODERN, "typing-calls": TYPING_CALLS}, EXTRA))
def test_a_record_without_trivia_replays_all_else_and_resolves_the_same_scopes(source):
    # whitespace, newlines and comments (walk.TRIVIA) are over half the nodes; left out of the
    # record, replays make the same calls for every other node and scopes are LibCST's
    module = cst.parse_module(source)
    reference = Log()
    module.visit(reference)
    full = Structure(module)
    slim = Structure(module, trivia=False)
    assert not any(type(n) in walk_module.TRIVIA for n in slim.order)
    assert len(slim.order) < len(full.order)
    assert [n for n in full.order if type(n) not in walk_module.TRIVIA] == list(slim.order)
    with replaying():  # a visitor with its own on_visit is replayed from the fields: in full
        replayed = Log()
        module.visit(replayed)
    assert replayed.log == reference.log
    wrapper = MetadataWrapper(module, unsafe_skip_copy=True)
    with replaying():
        scopes = wrapper.resolve(ScopeProvider)

    def non_trivia(summary: list) -> list:  # trivia get no scope: the rest must be LibCST's
        names = {kind.__name__ for kind in walk_module.TRIVIA}
        return [entry[1:] for entry in summary if entry[1] not in names]

    assert non_trivia(_summarize(scopes)) == non_trivia(_scope_summary(source, replay=False))


def test_a_visitor_of_trivia_is_walked_by_libcst_over_a_record_without_them():
    module = cst.parse_module("x = 1  # one\n# two\ny = 2\n")
    reference = _TriviaLog()
    module.visit(reference)
    structure = Structure(module, trivia=False)
    with pytest.raises(ValueError):
        structure.visit_batched([_BatchedComments()])
    with replaying():
        replayed = _TriviaLog()
        module.visit(replayed)
    assert replayed.log == reference.log
    assert [e for e in replayed.log if e[0] == "comment"] and walk_module.visits_trivia(_TriviaLog)
    assert not walk_module.visits_trivia(Log)


class _BatchedComments(cst.BatchableCSTVisitor):
    def visit_Comment(self, node):
        pass
