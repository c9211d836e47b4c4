"""What the rules share (the one support module; no rule imports another rule).

- Node builders for the code rules write: :func:`comma`, :func:`kwarg`.
- Turning a Python test on GPU values into a bool tensor (SFX2xx): :func:`as_tensor_condition`
  gives the same decision as a 0-d bool tensor expression (``t > c`` for ``t.item() > c``), and
  says whether that is *exact*: a tensor comparison is not a Python comparison (float32
  ``t = 0.1``: ``t.item() > 0.1`` is True, ``t > 0.1`` is False, because the scalar is cast to
  the tensor's dtype; see docs/semantics.md#comparisons-in-the-tensors-dtype). It is exact when
  the literal is representable in the tensor's dtype (:func:`representable`).
- Whether a copy's source may be written after a non-blocking copy is queued (SFX101, SFX103):
  :func:`source_may_change`.
- Whether an error must surface where it is raised (a ``try`` that catches it):
  :func:`caught_by_enclosing_try`.
- Whether an expression is a Python int, proven or as sizes are (SFX102, SFX105):
  :func:`int_like`.
- Syntax: the method call made on a node (:func:`method_call_on`); nodes swapped for others in
  a copy of a statement (:class:`ReplaceNodes`).
"""

from __future__ import annotations

import math
import struct
from dataclasses import dataclass, field
from typing import TypeVar

import libcst as cst

from syncfix.analysis import (
    METHOD_MAYBE_SELF,
    TORCH_VIEWS,
    Device,
    Kind,
    ModuleAnalysis,
    dotted_name,
    literal_number,
    root_name,
    stored_names,
)
from syncfix.walk import walk


def method_call_on(a: ModuleAnalysis, node: cst.CSTNode, method: str) -> cst.Call | None:
    """The call ``node.method(...)`` made on ``node`` (``node`` its receiver), or None."""
    attr = a.parent(node)
    call = a.parent(attr) if isinstance(attr, cst.Attribute) else None
    if (
        isinstance(attr, cst.Attribute)
        and attr.value is node
        and attr.attr.value == method
        and isinstance(call, cst.Call)
        and call.func is attr
    ):
        return call
    return None


class ReplaceNodes(cst.CSTTransformer):
    """Each key node (by identity) replaced by its value: ``stmt.visit(ReplaceNodes({...}))``."""

    def __init__(self, mapping: dict[cst.CSTNode, cst.BaseExpression]) -> None:
        super().__init__()
        self.mapping = mapping

    def on_leave(self, original_node, updated_node):
        return self.mapping.get(original_node, updated_node)


def comma() -> cst.Comma:
    """``, `` (a comma and one space)."""
    return cst.Comma(whitespace_after=cst.SimpleWhitespace(" "))


def kwarg(name: str, value: cst.BaseExpression) -> cst.Arg:
    """``name=value`` with no spaces around ``=`` (PEP 8 for keyword arguments)."""
    return cst.Arg(
        value=value,
        keyword=cst.Name(name),
        equal=cst.AssignEqual(cst.SimpleWhitespace(""), cst.SimpleWhitespace("")),
    )


_INT_RANGES = {
    "torch.bool": (0, 1),
    "torch.uint8": (0, 2**8 - 1),
    "torch.int8": (-(2**7), 2**7 - 1),
    "torch.int16": (-(2**15), 2**15 - 1),
    "torch.int32": (-(2**31), 2**31 - 1),
    "torch.int64": (-(2**63), 2**63 - 1),
}
_COMPARISONS = (
    cst.GreaterThan, cst.GreaterThanEqual, cst.LessThan, cst.LessThanEqual, cst.Equal, cst.NotEqual,
)


@dataclass
class Condition:
    code: str  # a bool tensor expression
    exact: bool  # the same decision as the Python test, for every value
    zero_dim: bool  # provably 0-d (so it broadcasts to anything without changing shapes)
    devices: set[Device] = field(default_factory=set)
    why_inexact: list[str] = field(default_factory=list)
    origins: set[str | None] = field(default_factory=set)  # the tensors' device origins (Value.origin)


def code(a: ModuleAnalysis, node: cst.CSTNode) -> str:
    return a.module.code_for_node(node).strip()


def atom(a: ModuleAnalysis, node: cst.CSTNode) -> str:
    """``node``'s code, parenthesised when it binds looser than a comparison operand."""
    text = code(a, node)
    low = (cst.BooleanOperation, cst.Comparison, cst.IfExp, cst.Lambda, cst.NamedExpr)
    if isinstance(node, low) or (
        isinstance(node, cst.UnaryOperation) and isinstance(node.operator, cst.Not)
    ):
        return text if node.lpar else f"({text})"
    return text


def representable(value: int | float | bool, dtype: str) -> bool:
    """Is ``value`` exactly a value of ``dtype`` (so casting it for a comparison loses nothing)?"""
    if isinstance(value, bool):
        value = int(value)
    if dtype in _INT_RANGES:
        lo, hi = _INT_RANGES[dtype]
        return isinstance(value, int) and lo <= value <= hi
    if not math.isfinite(float(value)) or float(value) != value:
        return False  # an int beyond float64 precision
    fmt = {"torch.float32": "f", "torch.float16": "e", "torch.bfloat16": "f"}.get(dtype)
    if dtype == "torch.float64":
        return True
    if fmt is None:
        return False
    try:
        packed = struct.pack(fmt, float(value))
    except (OverflowError, struct.error):
        return False  # beyond the dtype's range
    if struct.unpack(fmt, packed)[0] != value:
        return False
    if dtype == "torch.bfloat16":  # float32 with the low 16 mantissa bits zero
        return struct.unpack("<I", struct.pack("<f", float(value)))[0] & 0xFFFF == 0
    return True


def _item_receiver(node: cst.BaseExpression) -> cst.BaseExpression | None:
    if (
        isinstance(node, cst.Call)
        and not node.args
        and isinstance(node.func, cst.Attribute)
        and node.func.attr.value == "item"
    ):
        return node.func.value
    return None


def as_tensor_condition(a: ModuleAnalysis, test: cst.BaseExpression) -> Condition | None:
    """A bool tensor expression deciding like the Python test ``test``, or None."""
    if not a.is_effect_free(test):
        return None
    if isinstance(test, cst.BooleanOperation):
        left, right = as_tensor_condition(a, test.left), as_tensor_condition(a, test.right)
        if left is None or right is None:
            return None
        op = "&" if isinstance(test.operator, cst.And) else "|"
        return Condition(
            f"({left.code}) {op} ({right.code})",
            left.exact and right.exact,
            left.zero_dim and right.zero_dim,
            left.devices | right.devices,
            left.why_inexact + right.why_inexact,
            left.origins | right.origins,
        )
    if isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
        inner = as_tensor_condition(a, test.expression)
        if inner is None:
            return None
        return Condition(
            f"~({inner.code})", inner.exact, inner.zero_dim, inner.devices, inner.why_inexact, inner.origins
        )
    if isinstance(test, cst.Comparison) and len(test.comparisons) > 1:
        return None  # ``0 < t < 1`` is ``(0 < t) and (t < 1)``: a host read even inside where()
    if isinstance(test, cst.Comparison) and len(test.comparisons) == 1:
        cmp = test.comparisons[0]
        if isinstance(cmp.operator, _COMPARISONS):
            item_cond = _item_comparison(a, test.left, cmp, cmp.comparator)
            if item_cond is not None:
                return item_cond
    if isinstance(test, cst.Call) and a.callee(test) == "builtins.bool":
        args = test.args
        if len(args) == 1 and args[0].keyword is None and not args[0].star:
            return _truth(a, args[0].value)
    if a.value(test).is_tensor:
        return _truth(a, test)
    return None


def _truth(a: ModuleAnalysis, t: cst.BaseExpression) -> Condition | None:
    """``bool(t)`` as a tensor: ``t`` itself for a bool tensor, else ``t != 0`` (NaN is True
    both ways)."""
    v = a.value(t)
    if not v.is_tensor or a.host_read_syncs(t):
        return None  # ``t.item() > u`` with a tensor ``u``: the rewrite would still sync
    dtype = a.dtype_of(t)
    text = code(a, t) if dtype == "torch.bool" else f"{atom(a, t)} != 0"
    return Condition(text, True, a.is_zero_dim(t), {v.device}, origins={v.origin})


def _item_comparison(a, left, cmp, right) -> Condition | None:
    lt, rt = _item_receiver(left), _item_receiver(right)
    if lt is None and rt is None:
        return None
    op = code(a, cmp.operator).strip()
    parts, exact, why, zero, devices, origins = [], True, [], True, set(), set()
    dtypes = []
    for side, recv in ((left, lt), (right, rt)):
        if recv is not None:
            v = a.value(recv)
            if not v.is_tensor:
                return None
            parts.append(atom(a, recv))
            devices.add(v.device)
            origins.add(v.origin)
            zero = zero and a.is_zero_dim(recv)
            dtypes.append(a.dtype_of(recv))
        else:
            number = literal_number(side, nested_signs=False)
            if number is None and a.value(side).kind.value != "number":
                return None
            parts.append(atom(a, side))
    tensor_dtypes = [d for d in dtypes]
    if any(d is None for d in tensor_dtypes):
        exact = False
        why.append("the tensor's dtype is unknown")
    elif len(tensor_dtypes) == 2:
        if tensor_dtypes[0] != tensor_dtypes[1]:
            exact = False
            why.append("the two tensors have different dtypes")
    else:
        dtype = tensor_dtypes[0]
        other = right if lt is not None else left
        number = literal_number(other, nested_signs=False)
        if number is None:
            exact = False
            why.append("the Python operand's value is unknown, so its cast to the tensor's dtype may round")
        elif not representable(number, dtype):
            exact = False
            why.append(
                f"{code(a, other)} is not exactly a {dtype} value: the tensor comparison rounds to a "
                "common dtype and can decide differently (float32 0.1 > 0.1)"
            )
    return Condition(f"{parts[0]} {op} {parts[1]}", exact, zero, devices, why, origins)


def syncs_on_gpu(a: ModuleAnalysis, test: cst.BaseExpression) -> bool:
    return bool(a.host_read_syncs(test, truth=True))


#: Said of a finding on a tensor whose device syncfix cannot name (reported where code repeats).
UNPLACED = "; that is, every step if the tensor is on a GPU: syncfix cannot tell which device it is on"


def unplaced_tensor(a: ModuleAnalysis, expr: cst.BaseExpression) -> bool:
    """Is ``expr`` a tensor of a device syncfix cannot name, in code that runs every step (so
    likely on the GPU)? Read in the likely view (``p.grad``, ``x.eq(y)`` are tensors there).
    Such findings get no fix: it would pay only on a GPU, and the device is not known."""
    if not a.is_hot(expr):
        return False
    v = a.likely.value(expr)
    return v.is_tensor and v.device is Device.UNKNOWN


def unplaced_reads(a: ModuleAnalysis, test: cst.BaseExpression) -> bool:
    """Does ``test`` read on the host a tensor that :func:`unplaced_tensor` describes?"""
    return a.is_hot(test) and bool(a.likely.host_read_syncs(test, truth=True, any_device=True))


def assignments(suite: cst.BaseSuite | None) -> dict[str, cst.BaseExpression] | None:
    """``{name: value}`` when the suite only assigns each name once (``name = value``)."""
    if suite is None:
        return None
    if isinstance(suite, cst.SimpleStatementSuite):
        smalls = list(suite.body)
    else:
        smalls = []
        for stmt in suite.body:
            if not isinstance(stmt, cst.SimpleStatementLine):
                return None
            smalls.extend(stmt.body)
    out: dict[str, cst.BaseExpression] = {}
    for small in smalls:
        if not (
            isinstance(small, cst.Assign)
            and len(small.targets) == 1
            and isinstance(small.targets[0].target, cst.Name)
        ):
            return None
        name = small.targets[0].target.value
        if name in out:
            return None
        out[name] = small.value
    return out


# ``x.shape[i]``, ``x.size(i)``: an int for a tensor or an array (a likely fact for others)
_SIZE_METHODS = frozenset({"size", "numel", "dim"})


def int_like(a: ModuleAnalysis, expr: cst.BaseExpression) -> bool:
    """A Python int, provably (``len(x)``, int arithmetic) or by the likely fact that sizes
    are ints (``x.shape[i]``, ``x.size(i)``, ``x.numel()``: true of tensors and numpy arrays).
    For unsafe fixes only."""
    if a.python_number_type(expr) == "int":
        return True
    if isinstance(expr, cst.Subscript) and len(expr.slice) == 1:
        holder = expr.value
        return (
            isinstance(holder, cst.Attribute)
            and holder.attr.value == "shape"
            and isinstance(expr.slice[0].slice, cst.Index)
        )
    if isinstance(expr, cst.Call) and isinstance(expr.func, cst.Attribute) and not any(arg.keyword for arg in expr.args):
        return expr.func.attr.value in _SIZE_METHODS and len(expr.args) == (expr.func.attr.value == "size")
    return False


def is_new_tensor(a: ModuleAnalysis, e: cst.BaseExpression, *, follow_names: bool = False) -> bool:
    """Is ``e`` always a freshly allocated tensor (never an existing one or a view of one)?

    With ``follow_names``, a name counts when every value it may hold is such an expression."""
    if isinstance(e, cst.Name) and follow_names:
        values = a.reaching_values(e)
        return bool(values) and all(
            isinstance(v, cst.BaseExpression) and is_new_tensor(a, v, follow_names=False)
            for v in values or ()
        )
    if isinstance(e, (cst.BinaryOperation, cst.Comparison)):
        return True
    if isinstance(e, cst.UnaryOperation):
        return not isinstance(e.operator, cst.Plus)
    if isinstance(e, cst.Call):
        name = a.callee(e)
        if name is not None and name.startswith("torch."):
            return name.rsplit(".", 1)[-1] not in TORCH_VIEWS | {"where"} or name == "torch.where"
        func = e.func
        if isinstance(func, cst.Attribute) and a.is_tensor(func.value):
            method = func.attr.value
            return method == "clone" or (
                method not in METHOD_MAYBE_SELF and not method.endswith("_")
                and method not in ("cuda", "cpu", "max", "min")
            )
    return False


# ---- copies: may the source change after a non-blocking copy is queued? ----

def source_may_change(
    a: ModuleAnalysis, call: cst.Call, *, passed_on: bool = True, escapes: bool = True, strict: bool = False
) -> bool:
    """Could the memory ``call`` (``x.cuda()``, ``x.to(...)``) copies from be written after the
    copy is queued (so a non-blocking copy could read the new data)? Used by SFX101 and SFX103.
    With ``passed_on=False`` only writes in this function count, not code the source is passed
    to (for a source already assumed fresh, whose loader nothing else refills). With
    ``escapes=False`` a source other code can reach without its name (:func:`_escapes`) counts
    as unchanged (for an unsafe fix, which names that assumption). With ``strict`` (for a safe
    fix), ``y = x.to(device)`` to a device syncfix cannot name is another name for ``x`` (the
    device may be the CPU, and then ``.to`` returns ``x`` itself)."""
    assert isinstance(call.func, cst.Attribute)
    source = call.func.value
    while isinstance(source, cst.Call) and (callee := a.callee(source) or "").startswith("torch."):
        if callee.rsplit(".", 1)[-1] not in TORCH_VIEWS:
            return False  # a torch op's result owns new storage: nothing else can reach it
        args = [arg for arg in source.args if arg.keyword is None]
        if not args:
            return False
        source = args[0].value  # a view (torch.narrow(buf, ...)): the base is what matters
    walrus = isinstance(source, cst.NamedExpr) and isinstance(source.target, cst.Name)
    if isinstance(source, cst.NamedExpr) and isinstance(source.target, cst.Name):
        source = source.target  # ``(z := staging).cuda()``: the name keeps it (it is no copy)
    root = root_name(source)
    if root is None:
        return False  # a temporary: nothing else can reach it
    stmt = a.statement_of(call)
    scope_node = a.enclosing_function(call) or a.module
    statements = list(_simple_statements(scope_node))
    # Name pairs that may share memory, in both directions: a view of the source, and what
    # the source is a view or an item of (``view = staging[:n]``, ``for t in batch``,
    # ``x, y = batch``): a write to ``staging``/``batch`` reaches the copied bytes too.
    # A rebinding of the source's own name reaches the copy only from before it, or round a loop
    # that does not rebind the name first (``for x in loader: x = x.cuda(); x = vae(x)``: the
    # last line's ``x`` never reaches the copy).
    root_node = _root_node(source)
    carried = a.carrying_loops(root_node) if root_node is not None else []
    order = a.structure.order

    def reaches(s: cst.CSTNode) -> bool:
        return order.get(s, -1) < order.get(call, -1) or any(
            anc in carried for anc in a.ancestors(s)
        )

    pairs = [
        (target, _alias_root(value, a, strict))
        for s in statements
        if s is not stmt
        for target, value in _assigned_pairs(s)
        if target != root or reaches(s)
    ]
    # ``(z := staging)``: z is the source too
    pairs += [
        (n.target.value, _alias_root(n.value, a))
        for n in _within(a, scope_node, cst.NamedExpr)
        if isinstance(n.target, cst.Name)
    ]
    # A batch of a loader whose batches are fresh is no part of the loader (it keeps none): its
    # items are items of that one batch only.
    pairs += [
        (target, f"\0batch{id(it)}" if _fresh_batches(a, it) else _alias_root(it, a))
        for target, it in _iteration_bindings(scope_node)
    ]
    # Up from the source to what it is a view or an item of, then down to every view or item
    # of those. (Not up from a view found on the way down: ``x = vae(x)`` after the loop's
    # ``for x, y in loader`` binds a new ``x``, which makes ``vae`` no part of the batch.)
    aliases = {root}
    for upward in (True, False):
        changed = True
        while changed:
            changed = False
            for target, origin in pairs:
                if origin is None:
                    continue
                new, old = (origin, target) if upward else (target, origin)
                if old in aliases and new not in aliases:
                    aliases.add(new)
                    changed = True
    # ``x = x.cuda()`` rebinds x: later uses of x are the copy, not the source.
    rebinds = stmt is not None and root in a.effects(stmt).writes and not walrus
    watched = aliases - {root} if rebinds else aliases
    if escapes and passed_on and (_escapes(a, scope_node, watched) or _free(a, root_node, scope_node)):
        return True
    for s in statements:
        fx = a.effects(s)
        if fx.inplace & watched:
            return True
        if passed_on and s is not stmt and fx.may_mutate_anything and _reads_shared(
            a, s, fx.reads & watched, watched
        ):
            return True
    return False


def _escapes(a: ModuleAnalysis, scope_node: cst.CSTNode, names: set[str]) -> bool:
    """Can the memory of ``names`` (the source and what shares it) be reached by code that
    writes it without naming it here? Kept in a container or on an object (``keep = [x]``,
    ``h.x = x``), written through a call's view (``np.asarray(x)[:] = v``), handed out
    (``return x``, ``yield x``), shared with a nested function or lambda, or a global."""
    if not names:
        return False

    def rooted(expr: cst.CSTNode | None) -> bool:
        """Does ``expr`` evaluate to memory of ``names`` (not ``x.shape[0]``; not a name bound
        since to something else, as ``x`` after ``x = x.cuda()``)?"""
        if not isinstance(expr, cst.BaseExpression) or _alias_root(expr, a) not in names:
            return False
        if any(isinstance(n, cst.Attribute) and n.attr.value in _METADATA for n in _within(a, expr, cst.Attribute)):
            return False
        node = _root_node(expr)
        values = a.binding_values(node) if node is not None else None
        return values is None or not values or any(_alias_root(v, a) in names for v in values)

    def mentions(expr: cst.CSTNode | None) -> bool:
        return expr is not None and any(n.value in names for n in _within(a, expr, cst.Name))

    inner: list[cst.CSTNode] = [
        *_within(a, scope_node, cst.FunctionDef), *_within(a, scope_node, cst.Lambda), *_within(a, scope_node, cst.ClassDef)
    ]
    if any(n is not scope_node and mentions(n) for n in inner):
        return True
    decls: list[cst.Global | cst.Nonlocal] = [*_within(a, scope_node, cst.Global), *_within(a, scope_node, cst.Nonlocal)]
    if any(item.name.value in names for decl in decls for item in decl.names):
        return True
    displays: list[cst.List | cst.Tuple | cst.Set] = [
        *_within(a, scope_node, cst.List), *_within(a, scope_node, cst.Tuple), *_within(a, scope_node, cst.Set)
    ]
    for display in displays:
        if _is_target(a, display) or _unpacked(a, display):
            continue  # ``x, y = batch``, ``a, b = x, y``: names bound, not stored
        if any(isinstance(el, cst.Element) and rooted(el.value) for el in display.elements):
            return True
    for d in _within(a, scope_node, cst.Dict):
        if any(isinstance(el, cst.DictElement) and rooted(el.value) for el in d.elements):
            return True
    outs: list[cst.Return | cst.Yield] = [*_within(a, scope_node, cst.Return), *_within(a, scope_node, cst.Yield)]
    if any(rooted(out.value) for out in outs):
        return True
    for assign in _within(a, scope_node, cst.Assign):
        for t in assign.targets:
            if isinstance(t.target, (cst.Attribute, cst.Subscript)):
                # a store through the name itself (``x[0] = v``) is a write the caller sees
                if rooted(assign.value) or mentions(t.target) and root_name(t.target) not in names:
                    return True  # ``h.x = x``; ``np.asarray(x)[:] = v`` (``x[0] = v`` is a write)
    return False


def _free(a: ModuleAnalysis, name: cst.Name | None, scope_node: cst.CSTNode) -> bool:
    """Is ``name`` a function's free variable (a module global, an enclosing function's): code
    elsewhere (``refill()``) reaches it by that name."""
    if name is None or not isinstance(scope_node, cst.FunctionDef):
        return False
    scope = a.scope(name)
    if scope is None:
        return True
    return any(assignment.scope is not scope for assignment in scope[name.value])


N = TypeVar("N", bound=cst.CSTNode)


def _within(a: ModuleAnalysis, node: cst.CSTNode, kind: type[N]) -> list[N]:
    return [n for n in a.nodes_within(node, kind) if isinstance(n, kind)]


def _unpacked(a: ModuleAnalysis, display: cst.CSTNode) -> bool:
    """Is ``display`` the value of an assignment to names item by item (``a, b = x, y``)?"""
    parent = a.parent(display)
    return (
        isinstance(parent, cst.Assign)
        and parent.value is display
        and all(isinstance(t.target, (cst.Tuple, cst.List)) for t in parent.targets)
    )


# Attributes that describe a tensor rather than hold its memory
_METADATA = {"shape", "dtype", "device", "ndim", "size", "numel", "dim", "is_cuda", "requires_grad"}


def _is_target(a: ModuleAnalysis, node: cst.CSTNode) -> bool:
    """Is ``node`` (a tuple or list) a binding target (``x, y = ...``, ``for x, y in ...``)?"""
    child, parent = node, a.parent(node)
    while isinstance(parent, (cst.Element, cst.StarredElement, cst.Tuple, cst.List)):
        child, parent = parent, a.parent(parent)
    if isinstance(parent, cst.AssignTarget):
        return True
    if isinstance(parent, (cst.For, cst.CompFor)):
        return parent.target is child
    return False


def _reads_shared(
    a: ModuleAnalysis, stmt: cst.SimpleStatementLine, names: set[str], watched: set[str]
) -> bool:
    """Does ``stmt`` read one of ``names`` where it may still share the source's memory? A read
    whose nearest binding is a copy (``x = x.cuda()`` before ``model(x)``), or a value rooted in
    no watched name (``x = vae(x)``), does not."""
    if not names:
        return False
    reads: list[cst.Name] = []

    class V(cst.CSTVisitor):
        def visit_Name(self, n: cst.Name) -> None:
            if n.value in names:
                reads.append(n)

        def visit_AssignTarget(self, n: cst.AssignTarget) -> bool:
            return False

        def visit_CompFor(self, n: cst.CompFor) -> bool:
            for part in (n.iter, *n.ifs, n.inner_for_in):
                if part is not None:
                    part.visit(self)
            return False  # its target is bound here, not read

        def visit_Attribute(self, n: cst.Attribute) -> bool:
            n.value.visit(self)
            return False

    walk(stmt, V())
    for name in reads:
        if _only_read(a, name):
            continue
        values = a.binding_values(name)
        if values is None or any(_alias_root(v, a) in watched for v in values):
            return True
    return False


def _only_read(a: ModuleAnalysis, name: cst.Name) -> bool:
    """Is ``name`` only read where it is used: the receiver of a copy or a dict view
    (``batch["x"].to(device)``, ``batch.items()``), or the iterable of a loop or comprehension?"""
    child: cst.CSTNode = name
    parent = a.parent(child)
    while True:
        if isinstance(parent, cst.Subscript) and parent.value is child:
            child, parent = parent, a.parent(parent)
            continue
        if isinstance(parent, (cst.For, cst.CompFor)):
            return parent.iter is child
        if isinstance(parent, cst.Arg) and isinstance(call := a.parent(parent), cst.Call):
            return (a.callee(call) or "") in _READING_BUILTINS  # ``len(loader.dataset)``
        if not (isinstance(parent, cst.Attribute) and parent.value is child):
            return False
        call = a.parent(parent)
        if not (isinstance(call, cst.Call) and call.func is parent):
            child, parent = parent, call  # an attribute read (``loader.dataset``)
            continue
        if parent.attr.value in _READING:
            return True
        if parent.attr.value not in METHOD_MAYBE_SELF or parent.attr.value == "requires_grad_":
            return False
        child, parent = call, a.parent(call)  # a cast or view (``batch[1].float().cuda()``)


_COPYING = {"cuda", "clone", "tolist", "item"}
# (``.numpy()`` and a CPU tensor's ``.cpu()`` hand out its memory, which may then be written)
_READING = _COPYING | {"to", "items", "values", "keys"}
# ``.to(...)`` targets that make a CPU tensor's copy new memory (an unknown device too, except
# for a safe fix: ``strict``, where it may be the CPU and ``.to`` the tensor itself).
_COPY_TARGETS = {Device.CUDA, Device.UNKNOWN}
# Calls whose result shares the memory of their first argument.
_SHARING_CALLS = {
    "builtins.memoryview", "numpy.asarray", "numpy.asanyarray", "numpy.frombuffer",
    "torch.as_tensor", "torch.asarray", "torch.from_numpy", "torch.frombuffer",
}
_READING_BUILTINS = {"builtins.len", "builtins.isinstance", "builtins.print", "builtins.str",
                     "builtins.repr", "builtins.format", "builtins.type", "builtins.id"}


def _root_node(expr: cst.BaseExpression) -> cst.Name | None:
    while isinstance(expr, (cst.Subscript, cst.Attribute, cst.Call)):
        expr = expr.func if isinstance(expr, cst.Call) else expr.value
        if isinstance(expr, cst.Attribute) and isinstance(expr.value, cst.Call):
            expr = expr.value
    return expr if isinstance(expr, cst.Name) else None


def _alias_root(expr: cst.BaseExpression, a: ModuleAnalysis | None = None, strict: bool = False) -> str | None:
    """Like ``root_name``, but a copy (``.cuda()``, ``.clone()``...) of a CPU source is no alias.
    ``.cpu()``, ``.numpy()`` and ``.to()`` of a CPU tensor may be the tensor itself (or its
    memory), and so are ``memoryview(x)``, ``np.asarray(x)``, ``torch.as_tensor(x)``...; with
    the analysis ``a``, ``.to(...)`` to a CUDA device is a copy."""
    cur = expr
    while isinstance(cur, (cst.Subscript, cst.Attribute, cst.Call, cst.IfExp)):
        if isinstance(cur, cst.IfExp):  # ``x if c else None``: either branch
            body = _alias_root(cur.body, a, strict)
            cur = cur.orelse if body is None else cur.body
        elif isinstance(cur, cst.Call):
            args = [arg for arg in cur.args if arg.keyword is None and not arg.star]
            if a is not None and args and a.callee(cur) in _SHARING_CALLS:
                cur = args[0].value
                continue
            if not isinstance(cur.func, cst.Attribute) or cur.func.attr.value in _COPYING:
                return None
            if cur.func.attr.value == "to" and (
                a is None or a.to_target(cur) in ({Device.CUDA} if strict else _COPY_TARGETS)
            ):
                return None  # a cast, or a copy to the CPU, may return the tensor itself
            cur = cur.func.value
        else:
            cur = cur.value
    return cur.value if isinstance(cur, cst.Name) else None


def _simple_statements(node: cst.CSTNode):
    """Every simple statement line under ``node``, not entering nested defs or classes."""
    found: list[cst.SimpleStatementLine] = []

    class V(cst.CSTVisitor):
        def visit_SimpleStatementLine(self, n: cst.SimpleStatementLine) -> bool:
            found.append(n)
            return False

        def visit_FunctionDef(self, n: cst.FunctionDef) -> bool:
            return n is node

        def visit_ClassDef(self, n: cst.ClassDef) -> bool:
            return False

    walk(node, V())
    return found


def _assigned_pairs(stmt: cst.SimpleStatementLine):
    for small in stmt.body:
        if isinstance(small, cst.Assign):
            for t in small.targets:
                if isinstance(t.target, cst.Name):
                    yield t.target.value, small.value
                elif isinstance(t.target, (cst.Tuple, cst.List)) and isinstance(small.value, (cst.Tuple, cst.List)):
                    for el_t, el_v in zip(t.target.elements, small.value.elements, strict=False):
                        if isinstance(el_t.value, cst.Name):
                            yield el_t.value.value, el_v.value
                elif isinstance(t.target, (cst.Tuple, cst.List)):
                    # ``x, y = batch``: each name is an item of the container
                    for name in _names_in(t.target):
                        yield name, small.value
        elif isinstance(small, cst.AnnAssign) and small.value is not None and isinstance(small.target, cst.Name):
            yield small.target.value, small.value


def _names_in(target: cst.BaseExpression):
    if isinstance(target, cst.Name):
        yield target.value
    elif isinstance(target, (cst.Tuple, cst.List)):
        for el in target.elements:
            yield from _names_in(el.value)
    elif isinstance(target, cst.StarredElement):
        yield from _names_in(target.value)


def _fresh_batches(a: ModuleAnalysis, iterable: cst.BaseExpression) -> bool:
    """Is ``iterable`` a loader whose every batch is new memory (a ``DataLoader`` with the
    default collate: it hands each batch on and keeps no reference to it)?"""
    v = a.value(iterable)
    return v.kind is Kind.LOADER and v.fresh


def _iteration_bindings(node: cst.CSTNode):
    """(name, iterable) for every ``for`` and comprehension target under ``node`` (not entering
    nested defs or classes): each name is an item of the iterable (``for t in batch``)."""
    found: list[tuple[str, cst.BaseExpression]] = []

    def items(target: cst.BaseExpression, it: cst.BaseExpression):
        # the keys of ``d.items()``/``d.keys()`` are no part of ``d``'s tensors
        view = it.func.attr.value if isinstance(it, cst.Call) and isinstance(it.func, cst.Attribute) else None
        if view == "keys":
            return
        if view == "items" and isinstance(target, (cst.Tuple, cst.List)) and len(target.elements) == 2:
            target = target.elements[1].value
        found.extend((name, it) for name in _names_in(target))

    class V(cst.CSTVisitor):
        def visit_For(self, n: cst.For) -> None:
            items(n.target, n.iter)

        def visit_CompFor(self, n: cst.CompFor) -> None:
            items(n.target, n.iter)

        def visit_FunctionDef(self, n: cst.FunctionDef) -> bool:
            return n is node

        def visit_ClassDef(self, n: cst.ClassDef) -> bool:
            return False

    walk(node, V())
    return found


# ---- errors that must surface where they are raised ----------------------------------------
# A blocking copy raises a CUDA error (a bad device, an earlier kernel's fault, out of memory) at
# the call; made non-blocking, the same error surfaces at some later sync, outside the ``try``
# written to catch it (a "can this GPU take data" health check).

# Handlers that cannot catch a RuntimeError (or its subclasses). Anything else may.
_NOT_RUNTIME_ERRORS = {
    "ArithmeticError", "AssertionError", "AttributeError", "BufferError", "EOFError",
    "FileNotFoundError", "FloatingPointError", "GeneratorExit", "ImportError", "IndexError",
    "KeyError", "KeyboardInterrupt", "LookupError", "ModuleNotFoundError", "NameError",
    "OSError", "IOError", "OverflowError", "StopAsyncIteration", "StopIteration", "SyntaxError",
    "SystemExit", "TypeError", "UnicodeDecodeError", "UnicodeEncodeError", "UnicodeError",
    "ValueError", "ZeroDivisionError", "PermissionError", "TimeoutError", "ConnectionError",
}


def caught_by_enclosing_try(
    analysis: ModuleAnalysis, node: cst.CSTNode, _seen: set[cst.FunctionDef] | None = None
) -> bool:
    """Is ``node`` in the body of a ``try`` whose handlers may catch a RuntimeError raised
    there, or of ``with contextlib.suppress(...)`` of such an error: in its function, or around
    a call of that function in this module (``try: g = helper()``), through callers of callers?
    (Callers in other files are not seen.)"""
    child: cst.CSTNode = node
    for anc in analysis.ancestors(node):
        if isinstance(anc, cst.FunctionDef):
            seen = _seen if _seen is not None else set()
            if anc in seen:
                return False
            seen.add(anc)
            return any(caught_by_enclosing_try(analysis, call, seen) for call in _calls_by_name(analysis, anc.name.value))
        if isinstance(anc, (cst.ClassDef, cst.Lambda)):
            return False
        if isinstance(anc, (cst.Try, cst.TryStar)) and child is anc.body:
            if any(_may_catch_runtime_error(h.type) for h in anc.handlers):
                return True
        if isinstance(anc, cst.With) and child is anc.body:
            for item in anc.items:
                call = item.item
                if (
                    isinstance(call, cst.Call)
                    and (analysis.callee(call) or "").endswith("contextlib.suppress")
                    and any(_may_catch_runtime_error(arg.value) for arg in call.args)
                ):
                    return True
        child = anc
    return False


def _calls_by_name(a: ModuleAnalysis, name: str) -> list[cst.Call]:
    """Calls in this module of a function or method named ``name`` (``name(...)``,
    ``obj.name(...)``): what may run it."""
    return [
        c for c in a.structure.of_type(cst.Call)
        if isinstance(c, cst.Call) and (
            isinstance(c.func, cst.Name) and c.func.value == name
            or isinstance(c.func, cst.Attribute) and c.func.attr.value == name
        )
    ]


def _may_catch_runtime_error(kind: cst.BaseExpression | None) -> bool:
    if kind is None:
        return True  # a bare ``except:``
    if isinstance(kind, cst.Tuple):
        return any(_may_catch_runtime_error(el.value) for el in kind.elements)
    name = dotted_name(kind)
    return name is None or name.rsplit(".", 1)[-1] not in _NOT_RUNTIME_ERRORS


def is_backward_of(stmt: cst.CSTNode, names: set[str]) -> bool:
    """``loss.backward()``: it fills gradients but leaves ``loss`` itself unchanged."""
    if not (isinstance(stmt, cst.SimpleStatementLine) and len(stmt.body) == 1):
        return False
    small = stmt.body[0]
    if not (isinstance(small, cst.Expr) and isinstance(small.value, cst.Call)):
        return False
    func = small.value.func
    return (
        isinstance(func, cst.Attribute)
        and func.attr.value == "backward"
        and isinstance(func.value, cst.Name)
        and not any(isinstance(n, cst.Name) and n.value in names for n in _arg_names(small.value))
    )


def _arg_names(call: cst.Call):
    for arg in call.args:
        if isinstance(arg.value, cst.Name):
            yield arg.value


def measures_itself(a: ModuleAnalysis, loop: cst.For | cst.While) -> bool:
    """Does ``loop`` read a clock or a memory counter? Then it is a benchmark, whose reads are
    deliberate: they pin what it measures to the step (SFX105, SFX404)."""
    return any(
        a.is_clock_read(c) for s in loop.body.body for c in a.effects(s).calls
    ) or "memory_" in a.module.code_for_node(loop)


_DYNAMIC_READS = {"builtins.locals", "builtins.vars", "builtins.eval", "builtins.exec"}


def reads_names_by_string(a: ModuleAnalysis, fn: cst.FunctionDef) -> bool:
    """Does ``fn`` call ``locals()``, ``vars()``, ``eval`` or ``exec``? Any of its names may then be
    read where no ``Name`` shows it (SFX302)."""
    return any(a.callee(c) in _DYNAMIC_READS for c in _within(a, fn, cst.Call))


# ---- reads another rule owns -----------------------------------------------------------------

def per_element_read(a: ModuleAnalysis, call: cst.Call) -> bool:
    """Is ``call`` a host read of the element a ``for`` over a tensor binds (``for v in idx:
    ... v.item()``), which SFX303 reports (and reads with one ``.tolist()`` where it can)?"""
    loop = a.enclosing_loop(call)
    if not isinstance(loop, cst.For) or not isinstance(loop.target, cst.Name):
        return False
    if a.value(loop.iter).kind is not Kind.TENSOR:
        return False
    read = a.host_read(call)
    if read is None or a.value(read.receiver).device is Device.CPU:
        return False
    expr = read.receiver
    while isinstance(expr, (cst.Attribute, cst.Subscript, cst.Call)):
        expr = expr.func if isinstance(expr, cst.Call) else expr.value
    return isinstance(expr, cst.Name) and expr.value == loop.target.value


def runs_every_iteration(a: ModuleAnalysis, node: cst.CSTNode) -> bool:
    """Does ``node`` run on every iteration of its loop (no ``if`` or ``try`` between)? A log
    line under ``if step % 100 == 0:`` runs once per hundred steps."""
    for anc in a.ancestors(node):
        if isinstance(anc, (cst.For, cst.While)):
            return True
        if isinstance(anc, (cst.If, cst.Try, cst.TryStar, cst.FunctionDef)):
            return False
    return False


# ---- names that may share a tensor's memory --------------------------------------------------
# Attributes and methods whose result is no part of the tensor's memory.
_DETACHED_USES = {"item", "tolist", "shape", "dtype", "device", "numel", "size", "dim", "ndim"}


def aliases_in(a: ModuleAnalysis, scope: cst.CSTNode, names: set[str], *, upward: bool = False) -> set[str]:
    """``names`` and every name bound in ``scope`` (not inside nested functions) to a value that
    mentions one of them, to a fixpoint: what may share their memory (``d = loss.detach()``,
    ``box = [loss]``, ``ema = loss`` in an earlier iteration, ``for t in box``); with
    ``upward``, also what they were bound from (``v = x.flatten()``: ``x``). Conservative: a new
    tensor computed from them (``s = loss * 2``) counts too."""
    out = set(names)
    pairs = [(t, v) for s in _simple_statements(scope) for t, v in _assigned_pairs(s)]
    pairs += list(_iteration_bindings(scope))
    changed = True
    while changed:
        changed = False
        for target, value in pairs:
            if target not in out and _shares(a, value, out):
                out.add(target)
                changed = True
            elif upward and target in out:
                root = _alias_root(value, a)  # ``v = x.flatten()``: x (not ``torch`` of ``torch.f(x)``)
                if root is not None and root not in out and root not in imported_modules(a):
                    out.add(root)
                    changed = True
    return out


def _shares(a: ModuleAnalysis, value: cst.CSTNode, names: set[str]) -> bool:
    for n in _within(a, value, cst.Name):
        if n.value not in names:
            continue
        parent = a.parent(n)
        if isinstance(parent, cst.Attribute) and parent.value is n and parent.attr.value in _DETACHED_USES:
            continue  # ``loss.item()``, ``x.shape``: a Python value
        return True
    return False


def imported_modules(a: ModuleAnalysis) -> set[str]:
    """Names bound by the module's top-level ``import`` statements (``torch``, ``F``...)."""
    found: set[str] = set()
    for stmt in a.module.body:
        if isinstance(stmt, cst.SimpleStatementLine) and all(
            isinstance(s, (cst.Import, cst.ImportFrom)) for s in stmt.body
        ):
            found |= stored_names(stmt)
    return found
