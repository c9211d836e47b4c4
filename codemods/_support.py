"""What the rules share (the one support module; no rule imports another rule).

- Node builders for the code rules write: :func:`comma`, :func:`kwarg`.
- Turning a Python test on GPU values into a bool tensor (SFX2xx): :func:`as_tensor_condition`
  gives the same decision as a 0-d bool tensor expression (``t > c`` for ``t.item() > c``), and
  says whether that is *exact*: a tensor comparison is not a Python comparison (float32
  ``t = 0.1``: ``t.item() > 0.1`` is True, ``t > 0.1`` is False, because the scalar is cast to
  the tensor's dtype; see docs/semantics.md#comparisons-in-the-tensors-dtype). It is exact when
  the literal is representable in the tensor's dtype (:func:`representable`).
- Whether a copy's source may be written after a non-blocking copy is queued, and the other
  names for a tensor's memory: in ``_memory.py``.
- Whether a statement runs on every time round its loop (and whether a read there empties the
  GPU's queue each time): in ``_iterations.py``.
- Whether an expression is a Python int, proven or as sizes are (SFX102, SFX105):
  :func:`int_like`.
- Syntax: the method call made on a node (:func:`method_call_on`); nodes swapped for others in
  a copy of a statement (:class:`ReplaceNodes`).
"""

from __future__ import annotations

import math
import struct
from dataclasses import dataclass, field

import libcst as cst

from syncfix.analysis import (
    METHOD_MAYBE_SELF,
    RAISING_ON_EMPTY,
    Device,
    Kind,
    ModuleAnalysis,
    element_at,
    last_name,
    literal_number,
    stored_names,
)

from ._iterations import filters_items, loop_invariant, runs_every_iteration
from ._stacked_reads import stacked_read


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


def append_kwarg(call: cst.Call, name: str, value: cst.BaseExpression) -> cst.Call:
    """``f(a, b)`` -> ``f(a, b, name=value)``, keeping the call's layout: a trailing comma, a
    ``)`` on its own line, a comment after the last argument."""
    new = kwarg(name, value)
    args = list(call.args)
    if not args:
        return call.with_changes(args=[new])
    last = args[-1]
    if isinstance(last.comma, cst.MaybeSentinel):
        # what followed the last argument (a newline and a comment before a ``)`` on its own line)
        # now follows the new one: ``device=d, non_blocking=True  # comment``
        args[-1] = last.with_changes(comma=comma(), whitespace_after_arg=cst.SimpleWhitespace(""))
        args.append(new.with_changes(whitespace_after_arg=last.whitespace_after_arg))
    else:  # a trailing comma: the new argument gets it, and the new separator indents like the first argument
        first = call.whitespace_before_args
        indent: cst.BaseParenthesizableWhitespace = last.comma.whitespace_after
        if isinstance(first, cst.ParenthesizedWhitespace):  # its line break and indent, not its comment
            indent = cst.ParenthesizedWhitespace(indent=first.indent, last_line=first.last_line)
        args[-1] = last.with_changes(comma=last.comma.with_changes(whitespace_after=indent))
        args.append(new.with_changes(comma=last.comma))
    return call.with_changes(args=args)


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


def unplaced_message(a: ModuleAnalysis, node: cst.CSTNode) -> str:
    """Said of a finding on a tensor whose device syncfix cannot name (reported where code
    repeats): how often it syncs (:func:`how_often`), if the tensor is on a GPU."""
    return f"; that is, {how_often(a, node)}, if the tensor is on a GPU: syncfix cannot tell which device it is on"


def how_often(a: ModuleAnalysis, node: cst.CSTNode) -> str:
    """How often ``node``, in code that repeats, runs: every iteration of its loop; under an
    ``if`` of its loop or function (``if step % log_every == 0:``, or after ``if not log:
    return``), each time the ``if`` lets it (an ``if`` on the loop's items, ``if p.grad is not
    None:``, every iteration it lets through); outside a loop, as often as its function runs
    (``evaluate`` may be called every N steps); after an inner loop over a loader's batches,
    once per pass."""
    handler = False  # in an ``except`` of its function: runs on an error only
    for anc in a.ancestors(node):
        if isinstance(anc, cst.FunctionDef):
            break
        handler = handler or isinstance(anc, cst.ExceptHandler)
    often = "every iteration of its loop"
    in_loop = a.enclosing_loop(node) is not None
    child = node
    guards: list[cst.If] = []  # the ``if`` statements it sits under (body or ``else``)
    skipped = False
    for anc in a.ancestors(node):
        if isinstance(anc, (cst.For, cst.While)):
            # ``if rank == 0:``, a test the loop does not change: every iteration where it holds
            if guards and loop_invariant(a, [g.test for g in guards], anc):
                guards = []
            elif guards and not skipped and filters_items(a, [g.test for g in guards], anc):
                return "every iteration of its loop that its `if` lets through"
            break
        if isinstance(anc, cst.FunctionDef):
            often = f"each time `{anc.name.value}` runs"
            break
        if isinstance(anc, cst.If) and child is not anc.test:  # its test runs every time
            guards.append(anc)
        if isinstance(anc, cst.IndentedBlock) and _skipped_early(anc, child, in_loop):
            skipped = True  # ``if not should_log: return`` before it (torchtitan's train_step)
        child = anc
    conditional = bool(guards) or skipped
    if handler:
        often = "each time its `except` handles an error"
    elif conditional:
        often = "each time its `if` lets it run"
    elif often == "every iteration of its loop" and follows_inner_loop(a, node):
        often = "once per pass of its loop, after the loop before it (an epoch's end)"
    return often


_JUMPS = (cst.Return, cst.Continue, cst.Break, cst.Raise)


def _skipped_early(block: cst.IndentedBlock, stmt: cst.CSTNode, in_loop: bool = False) -> bool:
    """Does a statement before ``stmt`` in ``block`` leave it early on some condition: an ``if``
    without ``else`` whose body ends in ``return``/``continue``/``break``/``raise``? In a loop,
    only ``continue`` skips an iteration: the others end the loop (``if n > num_iter: break``),
    and ``stmt`` still runs on every iteration before that."""
    jumps = cst.Continue if in_loop else _JUMPS
    for before in block.body:
        if before is stmt:
            return False
        if isinstance(before, cst.If) and before.orelse is None:
            last: cst.CSTNode = before.body.body[-1]  # ``if c: return`` or an indented body
            if isinstance(last, cst.SimpleStatementLine):
                last = last.body[-1]
            if isinstance(last, jumps):
                return True
    return False


def follows_inner_loop(a: ModuleAnalysis, node: cst.CSTNode) -> bool:
    """Does a loop over a loader's batches, nested in ``node``'s loop, run before it in the same
    pass (``for epoch ...: for batch in loader: ...`` then ``print(train_ppl)``), so that
    ``node`` runs once per pass over those batches? Not any inner loop: a loop over a batch's
    keys, or a ``range`` of debug prints, runs inside a step, and so does any loop nested in a
    loop over batches (hysts's ``for data_chunk, target_chunk in zip(...)`` of sub-batches)."""
    outer = a.enclosing_loop(node)
    if outer is not None and _loop_of_batches(a, outer):
        return False
    return any(_loop_of_batches(a, inner) for inner in _inner_loops_before(a, node))


def timed_inner_loop(a: ModuleAnalysis, node: cst.CSTNode) -> bool:
    """Does a loop nested in ``node``'s loop run before it in the same pass, after a clock read
    of that pass (nanoGPT's ``bench.py``: ``t0 = time.time()``, ``for k in range(n): step()``,
    then ``torch.cuda.synchronize()``, ``t1 = time.time()``)? Then ``node`` ends the timing of
    that inner loop, once per pass."""
    if not runs_every_iteration(a, node):
        return False  # under an ``if`` of its loop: not what closes each pass
    body = _body_before(a, node) or []
    for i, stmt in enumerate(body):
        if isinstance(stmt, (cst.For, cst.While)) and any(a.is_clock_read(prev) for prev in body[:i]):
            return True
    return False


def _body_before(a: ModuleAnalysis, node: cst.CSTNode) -> list[cst.BaseStatement] | None:
    loop = a.enclosing_loop(node)
    if loop is None or not isinstance(loop.body, cst.IndentedBlock):
        return None
    body = list(loop.body.body)
    stmt: cst.CSTNode | None = node
    while stmt is not None and a.parent(stmt) is not loop.body:
        stmt = a.parent(stmt)
    if stmt is None or stmt not in body:
        return None
    return body[: body.index(stmt)]  # type: ignore[arg-type]


def _inner_loops_before(a: ModuleAnalysis, node: cst.CSTNode) -> list[cst.CSTNode]:
    body = _body_before(a, node) or []
    return [inner for s in body for inner in a.nodes_within(s, cst.For)]


def _loop_of_batches(a: ModuleAnalysis, loop: cst.CSTNode) -> bool:
    if not isinstance(loop, cst.For):
        return False
    source = loop.iter
    while isinstance(source, cst.Call) and source.args:  # enumerate(...), tqdm(...), zip(...)
        source = source.args[0].value
    if (
        isinstance(source, cst.Call)
        and isinstance(source.func, cst.Attribute)
        and source.func.attr.value in ("items", "values", "keys")
    ):
        source = source.func.value  # SlowFast's ``for key, val in meta.items():``
    if a.is_likely_batch_item(source) or a.value(source).kind is Kind.BATCH:
        return False  # over the images of one batch (na_vit's ``for image in images``): inside a step
    # a use of a name the loop binds (the target itself is a store): a batch, or a part of one
    # from a loader the code does not construct
    targets = {n.value for n in a.nodes_within(loop.target, cst.Name)}  # type: ignore[attr-defined]
    uses = [n for n in a.nodes_within(loop.body, cst.Name) if n.value in targets]  # type: ignore[attr-defined]
    return any(a.value(n).kind is Kind.BATCH or a.is_likely_batch_item(n) for n in uses[:len(targets)])  # type: ignore[arg-type]


def unplaced_tensor(a: ModuleAnalysis, expr: cst.BaseExpression) -> bool:
    """Is ``expr`` a tensor of a device syncfix cannot name, in code that runs every step (so
    likely on the GPU)? Read in the likely view (``p.grad``, ``x.eq(y)`` are tensors there).
    Such findings get no fix: it would pay only on a GPU, and the device is not known."""
    if not a.is_hot(expr) or a.used_as_module(expr) or loader_item(a, expr):
        return False
    v = a.likely.value(expr)
    if v.device in (Device.CUDA, Device.CUDA_OR_CPU):
        # ``(y.cuda() > 0)`` of a batch item ``y``: a CUDA tensor if ``y`` is a tensor at all;
        # a loss of a model fed ``x.cuda()``: a tensor, on CUDA if the model is
        proven = a.value(expr)
        return v.is_tensor and not (proven.is_tensor and proven.device is not Device.UNKNOWN)
    return v.is_tensor and v.device is Device.UNKNOWN


def loader_item(a: ModuleAnalysis, expr: cst.BaseExpression) -> bool:
    """A part of a batch from loaders named as such (``data_loader``, ``self.train_loader``) and
    never copied: by SFX101's likely fact a CPU tensor, whose reads wait for no GPU (BLIP's
    ``question_id``). Not one accelerate placed on its device."""
    if not a.is_likely_batch_item(expr):
        return False
    sources = a.batch_sources(expr)
    return sources is not None and bool(sources) and all(
        "loader" in last_name(loader).lower() and not a.placed_by_accelerate(loader)
        for loader, _ in sources
    )


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
def int_like(a: ModuleAnalysis, expr: cst.BaseExpression, *, follow: bool = False) -> bool:
    """A Python int, provably (``len(x)``, int arithmetic) or by the likely fact that sizes
    are ints (``x.shape[i]``, ``x.size(i)``, ``x.numel()``: true of tensors and numpy arrays).
    With ``follow``, also a name bound once to one (``n, d = x.shape[-2], x.device``). For
    unsafe fixes only."""
    if follow and isinstance(expr, cst.Name) and a.python_number_type(expr) != "int":
        bound = _bound_once_to(a, expr)
        return bound is not None and a.likely_size(bound)
    return a.likely_size(expr)


def _bound_once_to(a: ModuleAnalysis, name: cst.Name) -> cst.BaseExpression | None:
    """The expression the only binding of ``name`` gives it, through a tuple display
    (``n, d = x.shape[-2], x.device`` gives ``n`` ``x.shape[-2]``); else None."""
    bindings = a.bindings(name)
    if len(bindings) != 1:
        return None
    node = getattr(next(iter(bindings)), "node", None)
    if not isinstance(node, cst.Name):
        return None
    path, parent = a.target_path(node)
    if not isinstance(parent, cst.AssignTarget):
        return None
    return element_at(a.parent(parent).value, path)  # type: ignore[union-attr]


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
            return a.result_base(e) is None and (name.rsplit(".", 1)[-1] != "where" or name == "torch.where")
        func = e.func
        if isinstance(func, cst.Attribute) and a.is_tensor(func.value):
            method = func.attr.value
            return method == "clone" or (
                method not in METHOD_MAYBE_SELF and not method.endswith("_")
                and method not in ("cuda", "cpu", "max", "min")
            )
    return False


def may_raise(a: ModuleAnalysis, e: cst.BaseExpression) -> bool:
    """Could evaluating ``e`` raise for some input (where the code ran it only on a branch)?
    An index (out of range), a matrix product (0-d operands), or a reduction with no identity
    (``x.amax()`` of an empty tensor)."""
    if a.nodes_within(e, cst.Subscript):
        return True
    if any(
        isinstance(op, cst.BinaryOperation) and isinstance(op.operator, cst.MatrixMultiply)
        for op in a.nodes_within(e, cst.BinaryOperation)
    ):
        return True
    for call in a.nodes_within(e, cst.Call):
        assert isinstance(call, cst.Call)
        func = call.func
        name = func.attr.value if isinstance(func, cst.Attribute) else func.value if isinstance(func, cst.Name) else ""
        if name in RAISING_ON_EMPTY:
            return True
    return False


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
    """Does ``loop`` time each iteration (two clock reads on every iteration, or one whose value
    it collects), or read a memory counter? Then it is a benchmark, whose reads are deliberate:
    they pin what it measures to the step (SFX105, SFX404). A clock read under an ``if`` (a
    speed estimate every 100 steps, Time-Series-Library's training loops), or only a step's
    start time read on every iteration (pytorch-vqvae's ``start_time = time.time()``, shown
    every 100 steps), makes no benchmark of a training loop."""
    clocks = [c for s in loop.body.body for c in a.effects(s).calls if a.is_clock_read(c) and runs_every_iteration(a, c)]
    return (
        len(clocks) >= 2
        or any(isinstance(anc, cst.Call) and _called_method(anc) == "append" for c in clocks for anc in a.ancestors(c))
        or "memory_" in a.module.code_for_node(loop)
    )


def _called_method(call: cst.Call) -> str | None:
    return call.func.attr.value if isinstance(call.func, cst.Attribute) else None


_DYNAMIC_READS = {"builtins.locals", "builtins.vars", "builtins.eval", "builtins.exec", "builtins.globals"}


def reads_names_by_string(a: ModuleAnalysis, fn: cst.FunctionDef | cst.Module) -> bool:
    """Does ``fn`` call ``locals()``, ``vars()``, ``eval`` or ``exec``? Any of its names may then be
    read where no ``Name`` shows it (SFX302)."""
    return any(isinstance(c, cst.Call) and a.callee(c) in _DYNAMIC_READS for c in a.nodes_within(fn, cst.Call))


# ---- reads another rule owns -----------------------------------------------------------------

def per_element_read(a: ModuleAnalysis, call: cst.Call) -> bool:
    """Is ``call`` a host read of the element a ``for`` over a tensor binds (``for v in idx:
    ... v.item()``), which SFX303 reports (and reads with one ``.tolist()`` where it can), or
    the value ``for k, v in d.items()`` binds that SFX303 reads with one stack?"""
    loop = a.enclosing_loop(call)
    if isinstance(loop, cst.For) and isinstance(loop.target, cst.Tuple):
        return stacked_read(a, call)
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


def imported_modules(a: ModuleAnalysis) -> set[str]:
    """Names bound by the module's top-level ``import`` statements (``torch``, ``F``...)."""
    found: set[str] = set()
    for stmt in a.module.body:
        if isinstance(stmt, cst.SimpleStatementLine) and all(
            isinstance(s, (cst.Import, cst.ImportFrom)) for s in stmt.body
        ):
            found |= stored_names(stmt)
    return found


def other_accelerator(module: str, *, built: bool = False) -> str:
    """Why a copy to a device syncfix cannot name gets no fix in a project that names another
    accelerator (analysis/accelerators.py); ``built``: of a tensor built with ``device=``
    (SFX102), which takes no ``non_blocking``."""
    how = (
        "build it without `device=` and copy it with `.to(device, non_blocking=(torch.device(device).type == \"cuda\"))`"
        if built
        else "pass `non_blocking=(torch.device(device).type == \"cuda\")` yourself (it takes a device given as a string too)"
    )
    return (
        f"the project also names an accelerator other than CUDA (module `{module}` names it), where a "
        f"non-blocking copy is not proven exact; {how}, or declare `devices = [\"cuda\", \"cpu\"]` "
        "in [tool.syncfix.torch] if the project runs on nothing else"
    )


# ---- elements indexed out of one tensor -------------------------------------------------------

def indexed_base(a: ModuleAnalysis, expr: cst.BaseExpression, names: set[str]) -> cst.BaseExpression | None:
    """``t`` where ``expr`` indexes ``t`` with one of ``names`` (a loop's or a comprehension's
    variables: ``t[k]``, ``t[i, :3].mean()``, ``t[i][j]``) and ``t`` itself does not depend on
    them; else None."""

    def mentions(node: cst.CSTNode) -> bool:
        return any(n.value in names for n in a.nodes_within(node, cst.Name))  # type: ignore[attr-defined]

    base = None
    while isinstance(expr, (cst.Attribute, cst.Subscript, cst.Call)):
        if isinstance(expr, cst.Subscript) and any(mentions(el) for el in expr.slice):
            base = expr.value  # the innermost such subscript's (``t`` of ``t[i][j]``)
        expr = expr.func if isinstance(expr, cst.Call) else expr.value
    return None if base is None or mentions(base) else base


#: What to do where each element is indexed out of one tensor and read alone (SFX303, SFX105).
INDEXED_ELEMENTS = (
    "each element is indexed out of `{0}` and read alone; read the values once, before (e.g. "
    "`vals = {0}.tolist()`, then `vals[...]`), or gather them with one index tensor and read that "
    "once"
)


# ---- work on one iteration in N -----------------------------------------------------------

def every_n(stmt: cst.BaseStatement) -> bool:
    """``if step % N == 0:`` with no ``else`` (or ``not step % N``, or such a test in an
    ``and``): work that runs on one iteration in N."""
    if not isinstance(stmt, cst.If) or stmt.orelse is not None:
        return False
    return periodic(stmt.test)


def periodic(test: cst.BaseExpression) -> bool:
    """``step % N == 0`` or ``not step % N`` (alone or in an ``and``)."""
    if isinstance(test, cst.BooleanOperation):
        return isinstance(test.operator, cst.And) and (periodic(test.left) or periodic(test.right))
    if isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
        test = test.expression
        return isinstance(test, cst.BinaryOperation) and isinstance(test.operator, cst.Modulo)
    return (
        isinstance(test, cst.Comparison)
        and len(test.comparisons) == 1
        and isinstance(test.comparisons[0].operator, cst.Equal)
        and isinstance(test.left, cst.BinaryOperation)
        and isinstance(test.left.operator, cst.Modulo)
    )
