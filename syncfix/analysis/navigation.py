"""Navigation: where a node sits (statement, block, function, loops), whether code is hot, and
module-wide facts found by a scan (streams, default device, ``torch`` alias, every name).

:func:`is_hot` says whether code looks like a hot path: a loop body, ``forward``, a function
calling ``backward()``/``step()``, or a configured name (``hot-functions``).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Sequence
from typing import TYPE_CHECKING

import libcst as cst
from libcst.metadata import (
    BuiltinAssignment,
    GlobalScope,
    QualifiedName,
    QualifiedNameSource,
    Scope,
)

from .project import imports_torch
from .syntax import dotted_name, stored_names, target_names
from .torch_api import (
    METHOD_HOOKS,
    MODEL_WALKS,
    PASS_THROUGH_ITER,
    STREAM_APIS,
    STREAM_METHODS,
    STREAM_WORDS,
    WALK_WRAPPERS,
)

if TYPE_CHECKING:
    from .module import ModuleAnalysis


def statement_of(a: ModuleAnalysis, node: cst.CSTNode) -> cst.BaseStatement | None:
    """The statement (simple line or compound) that directly contains ``node``."""
    cur: cst.CSTNode | None = node
    while cur is not None:
        if isinstance(cur, (cst.SimpleStatementLine, cst.BaseCompoundStatement)):
            return cur
        cur = a.parent(cur)
    return None


def block_of(a: ModuleAnalysis, stmt: cst.CSTNode) -> tuple[cst.CSTNode, Sequence[cst.BaseStatement]] | None:
    """The block holding ``stmt`` and its statements (so a rule can look before/after)."""
    parent = a.parent(stmt)
    if isinstance(parent, (cst.IndentedBlock, cst.Module)):
        return parent, parent.body
    return None


def statements_before(a: ModuleAnalysis, stmt: cst.CSTNode | None) -> list[cst.BaseStatement] | None:
    """The statements before ``stmt`` in its block, nearest first (None: not in a block)."""
    split = _split_block(a, stmt)
    return None if split is None else split[0][::-1]


def statements_after(a: ModuleAnalysis, stmt: cst.CSTNode | None) -> list[cst.BaseStatement] | None:
    """The statements after ``stmt`` in its block, nearest first (None: not in a block)."""
    split = _split_block(a, stmt)
    return None if split is None else split[1]


def _split_block(
    a: ModuleAnalysis, stmt: cst.CSTNode | None
) -> tuple[list[cst.BaseStatement], list[cst.BaseStatement]] | None:
    block = block_of(a, stmt) if stmt is not None else None
    if block is None:
        return None
    body = list(block[1])
    index = next((i for i, s in enumerate(body) if s is stmt), None)
    return None if index is None else (body[:index], body[index + 1 :])


# Exact node types (LibCST's node classes are final; ``type() in`` skips the slow ABC check of
# ``isinstance``, and these walks up the tree run for nearly every name the rules ask about).
_SCOPES = frozenset({cst.FunctionDef, cst.ClassDef, cst.Lambda})
_LOOPS = frozenset({cst.For, cst.While})


def enclosing_function(a: ModuleAnalysis, node: cst.CSTNode) -> cst.FunctionDef | None:
    for anc in a.ancestors(node):
        kind = type(anc)
        if kind is cst.FunctionDef:
            return anc  # type: ignore[return-value]
        if kind is cst.Lambda:
            return None
    return None


def enclosing_loop(a: ModuleAnalysis, node: cst.CSTNode) -> cst.For | cst.While | None:
    """The innermost ``for``/``while`` whose *body* holds ``node`` (not crossing a def)."""
    child = node
    for anc in a.ancestors(node):
        kind = type(anc)
        if kind in _SCOPES:
            return None
        if kind in _LOOPS and child is anc.body:  # type: ignore[attr-defined]
            return anc  # type: ignore[return-value]
        child = anc
    return None


def repeating_loop(a: ModuleAnalysis, node: cst.CSTNode) -> cst.For | cst.While | None:
    """:func:`enclosing_loop`, unless that loop calls ``input(...)``: it then waits for a
    person each time round, and a sync in it costs nothing anyone waits for (a chat or
    translation prompt). A loop nested in it repeats as any loop does. A ``for`` over a
    one-item display (yolov7's ``for opt.weights in ['yolov7.pt']:``) runs its body once, and
    a branch ``if i == last:`` on the loop's counter once per pass: the loop around it decides."""
    loop = enclosing_loop(a, node)
    while loop is not None and (runs_once(a, loop) or _once_per_pass(a, node, loop)):
        node, loop = loop, enclosing_loop(a, loop)
    return None if loop is not None and loop in interactive_loops(a) else loop


def _once_per_pass(a: ModuleAnalysis, node: cst.CSTNode, loop: cst.For | cst.While) -> bool:
    """Is ``node`` under an ``if i == last:`` of ``loop``, whose counter ``i`` (``for i in
    range(n)``, ``for i, x in enumerate(xs)``) the body never rebinds, compared with a value
    the body does not change (edm2's ``if batch_idx == num_batches - 1:``)? Then it runs at most
    once per pass of the loop."""
    if not isinstance(loop, cst.For) or not isinstance(loop.iter, cst.Call):
        return False
    it: cst.BaseExpression = loop.iter
    while isinstance(it, cst.Call) and it.args and a.callee(it) in _PROGRESS:
        it = it.args[0].value  # ``tqdm(range(runs))`` counts as ``range(runs)`` does
    func = it.func if isinstance(it, cst.Call) else None
    if not (isinstance(func, cst.Name) and func.value in ("range", "enumerate")):
        return False
    target: cst.BaseExpression | None = loop.target
    if func.value == "enumerate":
        whole = loop.target
        target = whole.elements[0].value if isinstance(whole, cst.Tuple) and whole.elements else None
    if not isinstance(target, cst.Name):
        return False
    child = node
    for anc in a.ancestors(node):
        if anc is loop:
            return False
        if isinstance(anc, cst.If) and child is anc.body and _counter_equals(a, anc.test, target.value, set()):
            # the counter compared with a value: neither may change in the loop
            stored = stored_names(loop.body) | {n.value for n in target_names(loop.target)}
            return target.value not in stored_names(loop.body) and _counter_equals(a, anc.test, target.value, stored - {target.value})
        child = anc
    return False


# Wrappers that yield what they wrap, in order: a progress bar, a list of it.
_PROGRESS = PASS_THROUGH_ITER - {"itertools.islice", "iter"}


def _counter_equals(a: ModuleAnalysis, test: cst.BaseExpression, counter: str, changing: set[str]) -> bool:
    """``counter == e`` or ``e == counter``, ``e`` reading none of ``changing``."""
    if not (isinstance(test, cst.Comparison) and len(test.comparisons) == 1 and isinstance(test.comparisons[0].operator, cst.Equal)):
        return False
    left, right = test.left, test.comparisons[0].comparator
    if isinstance(right, cst.Name) and right.value == counter:
        left, right = right, left
    if not (isinstance(left, cst.Name) and left.value == counter):
        return False
    return not any(n.value in changing for n in a.nodes_within(right, cst.Name))  # type: ignore[attr-defined]


def runs_once(a: ModuleAnalysis, loop: cst.CSTNode) -> bool:
    """A ``for`` over a list, tuple or set display of one item (no ``*``), or a loop whose body
    ends in a ``break`` or ``return`` that no ``continue`` skips (vits's ``evaluate``: one
    batch, then ``break``; FocalNet's ``throughput``: one batch, then ``return``)."""
    it = loop.iter if isinstance(loop, cst.For) else None
    if (
        isinstance(it, (cst.List, cst.Tuple, cst.Set))
        and len(it.elements) == 1
        and not isinstance(it.elements[0], cst.StarredElement)
    ):
        return True
    body = getattr(loop, "body", None)
    if not isinstance(body, cst.IndentedBlock) or not body.body:
        return False
    last = body.body[-1]
    return (
        isinstance(last, cst.SimpleStatementLine)
        and isinstance(last.body[-1], (cst.Break, cst.Return))
        and not a.nodes_within(body, cst.Continue)
    )


def walks_model(loop: cst.CSTNode) -> bool:
    """A ``for`` over a model's layers or tensors: ``model.named_modules()``, ``m.parameters()``
    (through ``enumerate``, ``list``, ``sorted``), ``model.state_dict().items()``, or a name
    ``state_dict``'s (``*_state_dict``) ``.keys()``/``.items()``/``.values()``. It runs once per layer, and
    repeats only where the code around it does (repetition.py)."""
    it = loop.iter if isinstance(loop, cst.For) else None
    if isinstance(it, cst.Call) and isinstance(it.func, cst.Name) and it.func.value in WALK_WRAPPERS and it.args:
        it = it.args[0].value
    if not isinstance(it, cst.Call) or not isinstance(it.func, cst.Attribute):
        return False
    method = it.func.attr.value
    if method in MODEL_WALKS:
        return True
    inner = it.func.value
    return method in ("items", "values", "keys") and (
        isinstance(inner, cst.Call) and isinstance(inner.func, cst.Attribute) and inner.func.attr.value == "state_dict"
        # a state dict passed in or loaded (moco's ``for k in list(state_dict.keys()):``)
        or isinstance(inner, cst.Name) and inner.value.endswith("state_dict")
    )


def interactive_loops(a: ModuleAnalysis) -> frozenset[cst.CSTNode]:
    """The innermost loop around each ``input(...)`` call that runs every time round it: in
    the loop's body, test or iterable (``while (line := input()) != "q":``, ``for p in
    iter(lambda: input(), "")``), through ``try`` and ``with`` bodies but not an ``if``, an
    ``except`` or a later operand of ``and``/``or``; not crossing a def or class. The project
    index (hotness.py) reads Python's tree the same way."""
    if a.cache.interactive_loops is None:
        found: set[cst.CSTNode] = set()
        for call in a.calls_named("input"):
            if type(call.func) is not cst.Name:
                continue
            child: cst.CSTNode = call
            for anc in a.ancestors(call):
                kind = type(anc)
                if kind is cst.FunctionDef or kind is cst.ClassDef:
                    break
                if kind in _LOOPS:
                    if child is not anc.orelse:  # type: ignore[attr-defined]
                        found.add(anc)
                    break
                if not _runs_with(anc, child):
                    break
                child = anc
        a.cache.interactive_loops = frozenset(found)
    return a.cache.interactive_loops


def _runs_with(parent: cst.CSTNode, child: cst.CSTNode) -> bool:
    """Does ``child`` run whenever ``parent`` does (as far as its syntax says)?"""
    kind = type(parent)
    if kind is cst.If or kind is cst.IfExp:
        return child is parent.test  # type: ignore[attr-defined]
    if kind is cst.Try or kind is cst.TryStar:
        return child is parent.body or child is parent.finalbody  # type: ignore[attr-defined]
    if kind is cst.Match:
        return child is parent.subject  # type: ignore[attr-defined]
    if kind is cst.BooleanOperation:
        return child is parent.left  # type: ignore[attr-defined]
    return True


def loops_around(a: ModuleAnalysis, node: cst.CSTNode) -> list[cst.For | cst.While]:
    loops = []
    cur: cst.CSTNode | None = node
    while cur is not None:
        loop = a.enclosing_loop(cur)
        if loop is None:
            break
        loops.append(loop)
        cur = loop
    return loops


def target_path(a: ModuleAnalysis, target: cst.Name) -> tuple[list[int], cst.CSTNode | None]:
    """The positions of ``target`` in the destructuring targets around it, outermost first
    (``(i, (x, y))`` -> ``[1, 0]`` for ``x``), and the node that binds them (a ``for``, an
    ``AssignTarget``..., or the ``StarredElement`` of ``*x``)."""
    path: list[int] = []
    child: cst.CSTNode = target
    parent = a.parent(child)
    while isinstance(parent, (cst.Element, cst.Tuple, cst.List)):
        if isinstance(parent, (cst.Tuple, cst.List)):
            path.append(next(i for i, el in enumerate(parent.elements) if el is child))
        child, parent = parent, a.parent(parent)
    path.reverse()
    return path, parent


def is_hot(a: ModuleAnalysis, node: cst.CSTNode, *, project: bool = True) -> bool:
    """In a loop body, or in a function that looks like a training/inference step (or, with
    ``project``, that other project files call from repeating code). Not the message of an
    ``assert`` or what a ``raise`` raises: that runs only as the code fails."""
    if _on_failure_only(a, node):
        return False
    if repeating_loop(a, node) is not None:
        return True
    fn = a.enclosing_function(node)
    while fn is not None:
        if is_memoized(fn, a):
            return False  # its body runs once per distinct arguments, however often it is called
        name = fn.name.value
        if is_step_function(a, fn) or (project and name in a.called_from_loops) or _calls_training_step(a, fn):
            return True
        if project and name == "__init__" and _made_in_loops(a, fn):
            return True
        fn = a.enclosing_function(fn)
    return False


def _on_failure_only(a: ModuleAnalysis, node: cst.CSTNode) -> bool:
    """Is ``node`` in an ``assert``'s message (glide's ``f"Tokens {tokens.cpu()...}"``) or in a
    ``raise`` statement: evaluated only on the way to an error?"""
    child = node
    for anc in a.ancestors(node):
        if isinstance(anc, cst.Assert):
            return child is anc.msg
        if isinstance(anc, cst.Raise):
            return True
        if isinstance(anc, (cst.BaseSmallStatement, cst.BaseCompoundStatement, cst.Lambda, cst.FunctionDef)):
            return False
        child = anc
    return False


def _made_in_loops(a: ModuleAnalysis, init: cst.FunctionDef) -> bool:
    """Is ``init`` the ``__init__`` of a class the project makes where code repeats (hotness
    names it ``Class.__init__``)?"""
    block = a.parent(init)
    cls = a.parent(block) if isinstance(block, cst.IndentedBlock) else None
    return isinstance(cls, cst.ClassDef) and f"{cls.name.value}.__init__" in a.called_from_loops


def is_step_function(a: ModuleAnalysis, fn: cst.FunctionDef) -> bool:
    """Is ``fn`` named as a step hook (``hot-functions``)? The framework hooks of
    :data:`METHOD_HOOKS` not as a module's top-level function (a method, or a function nested in
    another and handed to an engine: ignite's ``Engine(test_step)``)."""
    name = fn.name.value
    return name in a.hot_functions and (name not in METHOD_HOOKS or not isinstance(a.parent(fn), cst.Module))


_MEMOIZING = {"lru_cache", "cache", "cached_property"}


def is_memoized(fn: cst.FunctionDef, a: ModuleAnalysis | None = None) -> bool:
    """Is ``fn`` decorated with ``functools.lru_cache``/``cache``/``cached_property``, or (with
    ``a``) a method its class wraps so, ``self.get = lru_cache(100)(self.get)`` (audiocraft's
    codebook patterns)? Its body runs once per distinct arguments."""
    for dec in fn.decorators:
        expr = dec.decorator.func if isinstance(dec.decorator, cst.Call) else dec.decorator
        if _memoizing(expr):
            return True
    if a is None:
        return False
    block = a.parent(fn)
    cls = a.parent(block) if block is not None else None
    if not isinstance(cls, cst.ClassDef):
        return False
    wrapped = a.cache.memo_wrapped.get(cls)
    if wrapped is None:
        wrapped = a.cache.memo_wrapped[cls] = frozenset(_wrapped_methods(a, cls))
    return fn.name.value in wrapped


def _memoizing(expr: cst.BaseExpression) -> bool:
    name = dotted_name(expr)
    return name is not None and name.rsplit(".", 1)[-1] in _MEMOIZING


def _wrapped_methods(a: ModuleAnalysis, cls: cst.ClassDef) -> Iterator[str]:
    """``m`` for each ``self.m = lru_cache(...)(self.m)`` / ``self.m = cache(self.m)`` in ``cls``."""
    for assign in a.nodes_within(cls.body, cst.Assign):
        value = assign.value  # type: ignore[attr-defined]
        if not (isinstance(value, cst.Call) and len(value.args) == 1):
            continue
        wrapper = value.func.func if isinstance(value.func, cst.Call) else value.func
        arg = value.args[0].value
        if _memoizing(wrapper) and isinstance(arg, cst.Attribute) and dotted_name(arg) == f"self.{arg.attr.value}":
            yield arg.attr.value


def _calls_training_step(a: ModuleAnalysis, fn: cst.FunctionDef) -> bool:
    memo = a.cache.steps
    if fn not in memo:
        memo[fn] = _walk_for_step(a, fn)
    return memo[fn]


def _walk_for_step(a: ModuleAnalysis, fn: cst.FunctionDef) -> bool:
    found = False

    class V(cst.CSTVisitor):
        def visit_Call(self, node: cst.Call) -> None:
            nonlocal found
            if isinstance(node.func, cst.Attribute) and node.func.attr.value in (
                "backward",
                "step",
            ):
                found = True

    a.walk(fn.body, V())
    return found


def uses_streams(a: ModuleAnalysis) -> bool:
    """Does the module touch CUDA streams or graphs (then copy ordering is not ours to prove)?"""
    for node in _names_ending_in(a, STREAM_WORDS):
        if isinstance(node, cst.Attribute) and node.attr.value in STREAM_METHODS:
            return True
        names = a.qualnames(node)
        if any(n == api or n.startswith(api + ".") for n in names for api in STREAM_APIS):
            return True
    return False


def sets_default_device(a: ModuleAnalysis) -> bool:
    if "device" in a.defaults_changed:
        return True  # another file of the project may set it
    return sets_default_device_here(a)


def sets_default_device_here(a: ModuleAnalysis) -> bool:
    """Does this module call ``torch.set_default_device`` (or ``set_default_tensor_type``)?"""
    return any(
        a.qualnames(node) & {"torch.set_default_device", "torch.set_default_tensor_type"}
        for node in _names_ending_in(a, {"set_default_device", "set_default_tensor_type"})
    )


def _names_ending_in(a: ModuleAnalysis, words: set[str]) -> list[cst.CSTNode]:
    """Names and attribute chains whose last part is one of ``words`` (a cheap pre-filter)."""
    return [
        node
        for node in a.structure.of_type(cst.Attribute, cst.Name)
        if isinstance(node, cst.Attribute) and node.attr.value in words
        or isinstance(node, cst.Name) and node.value in words
    ]


def may_use_several_devices(a: ModuleAnalysis) -> bool:
    """Does the module name a CUDA device by index or switch the current one (``set_device``,
    ``with torch.cuda.device(i):``)? Then "on CUDA" need not mean one device."""
    return bool(
        re.search(
            r"cuda:\s*[\d{]|\.cuda\(\s*[^)\s]|set_device|cuda\.device\(|torch\.device\([^)]*,|\.to\(\s*\d",
            a.code,
        )
    )


def torch_alias(a: ModuleAnalysis) -> str | None:
    """The name the module binds ``torch`` to with a top-level ``import torch [as t]``."""
    for small in _top_level_imports(a):
        for alias in small.names:
            name = _torch_binding(alias)
            if name is not None:
                return name
    return None


def torch_code(a: ModuleAnalysis) -> bool:
    """Does the module import torch, or a module named for it (``from torchreid import
    metrics``)? The engine's own test for rules that need torch (``project.imports_torch``).
    Such code's ``.item()`` reads a tensor (a likely fact)."""
    return a.torch_alias is not None or imports_torch(a.code.encode())


def _top_level_imports(a: ModuleAnalysis) -> Iterator[cst.Import]:
    """The module's top-level ``import`` statements, those in the body of a top-level ``try``
    (``try: import torch except ImportError: ...``) included."""
    for stmt in a.module.body:
        lines = stmt.body.body if isinstance(stmt, cst.Try) else [stmt]
        for line in lines:
            for small in line.body if isinstance(line, cst.SimpleStatementLine) else ():
                if isinstance(small, cst.Import):
                    yield small


def _torch_binding(alias: cst.ImportAlias) -> str | None:
    """The name an ``import`` alias binds to the ``torch`` module: ``torch`` for ``import torch``
    and ``import torch.utils.data``, ``t`` for ``import torch as t``; None otherwise."""
    dotted = dotted_name(alias.name)
    if alias.asname is None:
        return "torch" if dotted is not None and dotted.split(".", 1)[0] == "torch" else None
    if dotted == "torch" and isinstance(alias.asname.name, cst.Name):
        return alias.asname.name.value
    return None


def torch_alias_at(a: ModuleAnalysis, node: cst.CSTNode) -> str | None:
    """A name that refers to the ``torch`` module where ``node`` is: a top-level ``import torch
    [as t]`` that no nearer binding (a parameter, a local, another assignment of the name, a
    local import) shadows there. Fixes write their new code with it."""
    scope = None
    for here in (node, *a.ancestors(node)):
        scope = a.scope(here)
        if scope is not None:
            break
    for small in _top_level_imports(a):
        for alias in small.names:
            bound_as = _torch_binding(alias)
            if bound_as is None:
                continue
            name = cst.Name(bound_as)
            bound = scope[name.value] if scope is not None else ()
            # module-level bindings only: a function's own ``import torch.distributed``
            # makes ``torch`` local to it, unbound before that line runs
            if bound and all(
                isinstance(x.scope, GlobalScope) and _imports_torch(getattr(x, "node", None), name.value)
                for x in bound
            ):
                return name.value
    # ``torch`` bound only by ``from utils.utils import *`` of a project module that imports it
    # (Towards-Realtime-MOT's models), where nothing here binds the name
    for local, target in a.star_aliases.items() if a.torch_elsewhere else ():
        if target == "torch" and scope is not None and all(isinstance(x, BuiltinAssignment) for x in scope[local]):
            return local
    return None


def _imports_torch(node: cst.CSTNode | None, name: str) -> bool:
    """Does ``node`` (the statement behind one binding of ``name``) bind it to ``torch``?
    ``import torch``, ``import torch.nn`` and ``import torch as name`` do."""
    return isinstance(node, cst.Import) and any(_torch_binding(alias) == name for alias in node.names)


def all_names(a: ModuleAnalysis) -> frozenset[str]:
    """Every identifier in the module (to pick new names that clash with nothing)."""
    cached = a.cache.all_names
    if cached is not None:
        return cached
    found: set[str] = set()

    class V(cst.CSTVisitor):
        def visit_Name(self, node: cst.Name) -> None:
            found.add(node.value)

    a.walk(a.module, V())
    a.cache.all_names = result = frozenset(found)
    return result


def fresh_name(a: ModuleAnalysis, base: str, taken: set[str] | None = None) -> str:
    """``base``, or ``base_2``, ``base_3``... whichever clashes with no name in the module."""
    taken = taken or set()
    candidate, n = base, 1
    while candidate in a.all_names() or candidate in taken:
        n += 1
        candidate = f"{base}_{n}"
    return candidate


def _import_aliases(a: ModuleAnalysis) -> frozenset[str]:
    a = a._syntax_of or a  # syntax: the likely view shares it
    if a.cache.import_aliases is not None:
        return a.cache.import_aliases
    out: set[str] = set()
    for node in a.structure.of_type(cst.ImportAlias):
        if isinstance(node, cst.ImportAlias) and node.asname is not None:
            out.update(n.value for n in target_names(node.asname.name))
    a.cache.import_aliases = frozenset(out)
    return a.cache.import_aliases


def may_end_in(a: ModuleAnalysis, node: cst.CSTNode, last_parts: Iterable[str]) -> bool:
    """Could a qualified name of ``node`` end in one of ``last_parts``? A syntactic test that
    needs no scopes, so callers can skip resolving them for the many calls that cannot
    match. A qualified name keeps the expression's last part, except for a name an
    ``import ... as`` binds (``from torch import nonzero as nz``), which is always let pass."""
    if isinstance(node, cst.Attribute):
        return node.attr.value in last_parts
    if isinstance(node, cst.Name):
        return node.value in last_parts or node.value in _import_aliases(a)
    return True


def is_script(a: ModuleAnalysis) -> bool:
    """A top-level ``if __name__ == "__main__":`` (either operand order), or ``__main__.py``."""
    if a.module_name is not None and a.module_name.rsplit(".", 1)[-1] == "__main__":
        return True
    return any(_is_main_block(stmt) for stmt in a.module.body)


def in_main_block(a: ModuleAnalysis, node: cst.CSTNode) -> bool:
    """Is ``node`` in the body of a top-level ``if __name__ == "__main__":``? That code runs
    only as ``__main__``, whose globals no other file's ``import`` reaches."""
    if a.cache.main_blocks is None:
        # each block with the pre-order numbers of its subtree (the next top-level statement's
        # number bounds it), so most nodes are answered without a walk up
        order = a.structure.order
        body = list(a.module.body)
        blocks = []
        for i, s in enumerate(body):
            if isinstance(s, cst.If) and _is_main_block(s):
                end = order[body[i + 1]] if i + 1 < len(body) else len(order)
                blocks.append((order[s], end))
        a.cache.main_blocks = tuple(blocks)
    if not a.cache.main_blocks:
        return False
    at = a.structure.order.get(node)
    if at is not None and not any(start < at < end for start, end in a.cache.main_blocks):
        return False
    top = None
    for anc in a.ancestors(node):
        if isinstance(anc, (cst.FunctionDef, cst.ClassDef, cst.Lambda)):
            return False  # run when called, perhaps from a module that imported this one
        if isinstance(anc, cst.Module):
            break
        top = anc
    return isinstance(top, cst.If) and _is_main_block(top) and any(anc is top.body for anc in a.ancestors(node))


def _is_main_block(stmt: cst.CSTNode) -> bool:
    if isinstance(stmt, cst.If) and isinstance(stmt.test, cst.Comparison) and len(stmt.test.comparisons) == 1:
        comp = stmt.test.comparisons[0]
        sides = {stmt.test.left, comp.comparator}
        names = {s.value for s in sides if isinstance(s, cst.Name)}
        strings = {s.evaluated_value for s in sides if isinstance(s, cst.SimpleString)}
        return isinstance(comp.operator, cst.Equal) and names == {"__name__"} and strings == {"__main__"}
    return False


def without_identity_fallbacks(a: ModuleAnalysis, node: cst.CSTNode, found: frozenset[str]) -> frozenset[str]:
    """The qualified names of ``node`` less those of a local function that only returns its
    first argument, where another candidate remains: ``try: from tqdm import tqdm`` / ``except
    ImportError: def tqdm(x, **kw): return x`` iterates what it is given either way."""
    if len(found) < 2 or not isinstance(node, cst.Name):
        return found
    scope = a.scope(node)
    if scope is None:
        return found
    defs = [getattr(asg, "node", None) for asg in scope[node.value]]
    identity = {d.name.value for d in defs if isinstance(d, cst.FunctionDef) and _returns_first_argument(d)}
    kept = frozenset(q for q in found if q not in identity)
    return kept or found


def _returns_first_argument(fn: cst.FunctionDef) -> bool:
    params = [*fn.params.posonly_params, *fn.params.params]
    body = fn.body.body if isinstance(fn.body, cst.IndentedBlock) else [fn.body]
    if not params or fn.decorators or len(body) != 1:
        return False
    line = body[0]
    statements = line.body if isinstance(line, (cst.SimpleStatementLine, cst.SimpleStatementSuite)) else ()
    if len(statements) != 1 or not isinstance(statements[0], cst.Return):
        return False
    returned = statements[0].value
    return isinstance(returned, cst.Name) and returned.value == params[0].name.value


def reaching_qualified_names(a: ModuleAnalysis, node: cst.CSTNode, scope: Scope | None) -> set[QualifiedName]:
    """LibCST's qualified names of ``node`` (a name, or a dotted name), less those of the kind
    (an import's, or the module's own) no binding of its first name that reaches it has:
    arcface's ``data.DataLoader(...)`` after ``from torch.utils import data``, and the batch
    ``data`` of its later ``for ii, data in enumerate(trainloader):``."""
    if scope is None:
        return set()
    names = set(scope.get_qualified_names_for(node))
    sources = {q.source for q in names}
    if not {QualifiedNameSource.LOCAL, QualifiedNameSource.IMPORT} <= sources:
        return names
    root = node
    while isinstance(root, cst.Attribute):
        root = root.value
    reaching = a.bindings(root) if isinstance(root, cst.Name) else frozenset()
    imports = {isinstance(getattr(asg, "node", None), (cst.Import, cst.ImportFrom)) for asg in reaching}
    if imports == {True}:
        return {q for q in names if q.source is not QualifiedNameSource.LOCAL}
    if imports == {False}:
        return {q for q in names if q.source is not QualifiedNameSource.IMPORT}
    return names
