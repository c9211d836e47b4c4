"""SFX105's fixes of one scalar read the analysis cannot name the tensor of: read it once where a
line reads it again, read several elements with one transfer, or take a reduction from the host
list the tensor was built from. Each is unsafe (see ``syncfix rule SFX105``, Fix safety): it
returns the changes and the fix's message, or None where it does not apply."""

from __future__ import annotations

from typing import TypeAlias

import libcst as cst
from libcst.metadata import BuiltinAssignment

from syncfix.analysis import ModuleAnalysis, dotted_name

from ._support import ReplaceNodes, int_like, method_call_on

# The changes an unsafe fix makes and its message.
Unsafe: TypeAlias = tuple[dict[cst.CSTNode, cst.CSTNode | cst.FlattenSentinel[cst.CSTNode]], str]
# Applied to an element before ``.item()`` without changing its value.
_SAME_VALUE = frozenset({"cpu", "detach", "clone"})
# Where a later read of the same tensor may sit: evaluated every time, in textual order.
_ONCE_SKIP = frozenset({
    cst.Lambda, cst.IfExp, cst.BooleanOperation, cst.ListComp, cst.SetComp, cst.DictComp,
    cst.GeneratorExp, cst.NamedExpr,
})
# A whole-tensor reduction read with ``.item()`` -> the builtin giving the same Python int.
_HOST_REDUCTIONS = {"amax": "max", "max": "max", "amin": "min", "min": "min"}
# dtypes that hold a list of Python ints exactly (an int out of range raises at creation)
_INT_DTYPES = frozenset({"torch.int64", "torch.long", "torch.int32", "torch.int"})


def read_once(a: ModuleAnalysis, node: cst.Call, stmt: cst.SimpleStatementLine) -> Unsafe | None:
    """``n = int(t.item())`` followed by ``if abs(n - t.item()) > eps:`` (or a line reading
    ``t.item()`` again): read ``t`` once before the first line and use the value in both
    (unsafe: syncfix cannot name ``t``; a tensor's ``.item()`` gives the same value twice
    when nothing in between writes it)."""
    func = node.func
    after = a.statements_after(stmt)
    if not (isinstance(func, cst.Attribute) and func.attr.value == "item" and after):
        return None
    receiver = func.value
    if not isinstance(receiver, cst.Name):
        return None
    nxt = after[0]
    region: cst.CSTNode | None = nxt.test if isinstance(nxt, cst.If) else nxt
    if not isinstance(nxt, (cst.If, cst.SimpleStatementLine)) or region is None:
        return None
    again = _reads_of(a, region, receiver.value)
    if not again:
        return None
    # nothing between the two reads may write the tensor or run code that might
    name = receiver.value
    fx = a.effects(stmt)
    if name in fx.writes | fx.inplace or fx.exits or not _pure_besides(a, stmt, node):
        return None
    first_again = min(again, key=lambda n: a.structure.order.get(n, -1))
    region_fx = a.effects(region)
    if name in region_fx.writes | region_fx.inplace or not _pure_before(a, region, first_again):
        return None  # ``t = u; y = t.item()``: another tensor by then
    value = a.fresh_name(f"{name}_value")
    read = cst.parse_statement(f"{value} = {name}.item()\n")
    changes: dict[cst.CSTNode, cst.CSTNode | cst.FlattenSentinel[cst.CSTNode]] = {
        stmt: cst.FlattenSentinel(
            [
                read.with_changes(leading_lines=stmt.leading_lines),
                stmt.deep_replace(node, cst.Name(value)).with_changes(leading_lines=()),
            ]
        ),
    }
    for later in again:
        changes[later] = cst.Name(value)
    return (
        changes,
        f"Read `{name}` once and use the value twice (unsafe: syncfix cannot name `{name}`; "
        "a tensor read twice with nothing in between gives the same value)",
    )

def elements_at_once(a: ModuleAnalysis, node: cst.Call, stmt: cst.SimpleStatementLine) -> Unsafe | None:
    """``int(t[0].item()), int(t[1].item())`` in one line, ``t`` a name syncfix cannot read:
    ``t_values = t[0:2].reshape(2).tolist()`` before it and ``t_values[i]`` for each read
    (unsafe, see Fix safety)."""
    reads = a.likely.host_read_syncs(stmt, any_device=True)
    first = min(reads, key=lambda n: a.structure.order.get(n, -1)) if len(reads) > 1 else None
    if first is not node:
        return None
    at: dict[int, list[cst.CSTNode]] = {}
    tensor = None
    for read in reads:
        element = _element_read(read)
        if element is None or (tensor is not None and element[0] != tensor):
            return None
        tensor = element[0]
        at.setdefault(element[1], []).append(read)
    low, high = min(at), max(at)
    if tensor is None or len(at) < 2 or set(at) != set(range(low, high + 1)):
        return None
    if not all(_always_runs(a, read, stmt) for read in reads) or not _pure_besides(a, stmt, *reads):
        return None
    if tensor in a.effects(stmt).writes:  # ``(t := u)[1].item()``: another tensor by then
        return None
    values = a.fresh_name(f"{tensor}_values")
    n = high - low + 1
    read_all = cst.parse_statement(f"{values} = {tensor}[{low}:{high + 1}].reshape({n}).tolist()\n")
    new = stmt.visit(ReplaceNodes({read: cst.parse_expression(f"{values}[{k - low}]") for k, rs in at.items() for read in rs}))
    assert isinstance(new, cst.SimpleStatementLine)
    return (
        {stmt: cst.FlattenSentinel([read_all.with_changes(leading_lines=stmt.leading_lines), new.with_changes(leading_lines=())])},
        f"Read elements {low}..{high} of `{tensor}` with one transfer (unsafe: syncfix cannot prove "
        f"`{tensor}`'s shape; a tensor too short raises RuntimeError instead of IndexError)",
    )

def from_host_list(a: ModuleAnalysis, node: cst.Call, stmt: cst.SimpleStatementLine) -> Unsafe | None:
    """``t.max().item()`` where ``t = torch.tensor(ints)`` earlier in the block and untouched
    since: the builtin over the list instead (unsafe, see Fix safety)."""
    reduced = node.func.value if isinstance(node.func, cst.Attribute) else None
    if not (
        isinstance(reduced, cst.Call)
        and not reduced.args
        and isinstance(reduced.func, cst.Attribute)
        and reduced.func.attr.value in _HOST_REDUCTIONS
        and isinstance(reduced.func.value, cst.Name)
    ):
        return None
    builtin = _HOST_REDUCTIONS[reduced.func.attr.value]
    tensor = reduced.func.value
    made = _straight_assignment(a, tensor)
    if made is None or not _builtin_here(a, node, builtin):
        return None
    creation, call, binding = made
    if not (isinstance(call, cst.Call) and a.callee(call) == "torch.tensor"):
        return None
    data, *rest = call.args or (None,)
    if data is None or data.keyword or data.star or not _int_dtype(a, rest):
        return None
    if not (_untouched_until(a, binding, tensor, node) and _fresh_int_list(a, data.value, creation, call, tensor)):
        return None
    host = a.fresh_name(f"{tensor.value}_host")
    keep = cst.parse_statement(f"{host} = x\n")
    assert isinstance(keep, cst.SimpleStatementLine)
    keep_small = keep.body[0]
    assert isinstance(keep_small, cst.Assign)
    keep = keep.with_changes(
        body=[keep_small.with_changes(value=data.value)], leading_lines=creation.leading_lines
    )
    made_from_host = creation.deep_replace(data.value, cst.Name(host))
    assert isinstance(made_from_host, cst.SimpleStatementLine)
    return (
        {
            creation: cst.FlattenSentinel([keep, made_from_host.with_changes(leading_lines=())]),
            node: cst.parse_expression(f"{builtin}({host})"),
        },
        f"Take the value from the host list: `{builtin}({host})` (unsafe: an empty list raises "
        f"ValueError instead of RuntimeError; elements such as `x.shape[i]` are taken to be ints)",
    )


def _reads_of(a, region: cst.CSTNode, name: str) -> list[cst.Call]:
    """``name.item()`` calls in ``region`` that always run when it does (not under a condition,
    comprehension or lambda)."""
    found: list[cst.Call] = []

    class V(cst.CSTVisitor):
        def on_visit(self, node: cst.CSTNode) -> bool:
            if type(node) in _ONCE_SKIP:
                return False
            if (
                isinstance(node, cst.Call)
                and not node.args
                and isinstance(func := node.func, cst.Attribute)
                and func.attr.value == "item"
                and isinstance(func.value, cst.Name)
                and func.value.value == name
            ):
                found.append(node)
            return True

    a.walk(region, V())
    return found


def _pure_besides(a, stmt: cst.SimpleStatementLine, *reads: cst.CSTNode) -> bool:
    """Is ``stmt`` one statement that calls nothing but the reads (and their receivers' chains)
    and pure functions (``int(t.item())``)?"""
    chains = {id(anc) for read in reads for anc in _chain(read)}
    return len(stmt.body) == 1 and all(id(call) in chains or a.is_pure_call(call) for call in a.effects(stmt).calls)


def _chain(read: cst.CSTNode) -> list[cst.CSTNode]:
    """The read and the calls of its receiver chain (``t[0].cpu()`` of ``t[0].cpu().item()``)."""
    out = [read]
    cur = read
    while isinstance(cur, cst.Call) and isinstance(cur.func, cst.Attribute):
        cur = cur.func.value
        out.append(cur)
    return out


def _element_read(read: cst.CSTNode) -> tuple[str, int] | None:
    """``(t, k)`` for ``t[k].item()`` (``t[k].cpu().item()``...), ``t`` a name, ``k`` an int."""
    if not (isinstance(read, cst.Call) and isinstance(read.func, cst.Attribute) and read.func.attr.value == "item"):
        return None
    cur = read.func.value
    while isinstance(cur, cst.Call) and not cur.args and isinstance(cur.func, cst.Attribute) and cur.func.attr.value in _SAME_VALUE:
        cur = cur.func.value
    if not (isinstance(cur, cst.Subscript) and isinstance(cur.value, cst.Name) and len(cur.slice) == 1):
        return None
    index = cur.slice[0].slice
    if not (isinstance(index, cst.Index) and isinstance(index.value, cst.Integer)):
        return None
    return cur.value.value, int(index.value.value)


def _always_runs(a, node: cst.CSTNode, stmt: cst.CSTNode) -> bool:
    """Is ``node`` evaluated whenever ``stmt`` runs (not under a condition or comprehension)?"""
    for anc in a.ancestors(node):
        if anc is stmt:
            return True
        if type(anc) in _ONCE_SKIP:
            return False
    return False


def _pure_before(a, region: cst.CSTNode, read: cst.Call) -> bool:
    """Is every call of ``region`` that starts before ``read`` and does not enclose it pure?"""
    order = a.structure.order
    at = order.get(read, -1)
    enclosing = set(map(id, a.ancestors(read)))
    return all(
        call is read or id(call) in enclosing or order.get(call, -1) > at or a.is_pure_call(call)
        for call in a.effects(region).calls
    )


def _straight_assignment(a, name: cst.Name):
    """``(statement, value, binding)`` of the ``name = value`` line that provably holds at this
    use (the nearest earlier statement of its block to bind it); None if there is none."""
    value = a.straight_line_binding(name, reevaluable=False)
    stmt = a.statement_of(value) if value is not None else None
    assign = a.parent(value) if value is not None else None
    if not (
        isinstance(stmt, cst.SimpleStatementLine)
        and len(stmt.body) == 1
        and stmt.body[0] is assign
        and isinstance(assign, cst.Assign)
        and len(assign.targets) == 1
        and isinstance(target := assign.targets[0].target, cst.Name)
        and target.value == name.value
    ):
        return None
    binding = next((b for b in a.bindings(name) if getattr(b, "node", None) is target), None)
    return None if binding is None else (stmt, value, binding)


def _builtin_here(a, node: cst.CSTNode, name: str) -> bool:
    """Does ``name`` mean the builtin where ``node`` is (no binding of it shadows it)?"""
    scope = a.scope(node)
    found = scope[name] if scope is not None else ()
    return bool(found) and all(isinstance(asg, BuiltinAssignment) for asg in found)


def _int_dtype(a, rest: list[cst.Arg]) -> bool:
    """Only ``dtype=`` (absent or an int64/int32) and ``device=`` besides the data."""
    for arg in rest:
        name = arg.keyword.value if arg.keyword is not None else None
        if name == "device":
            continue
        if name != "dtype" or (a.qualname(arg.value) or dotted_name(arg.value)) not in _INT_DTYPES:
            return False
    return True


def _uses(a, binding, of: cst.Name) -> list[cst.Name] | None:
    """Every use linked to ``binding``, in the scope of ``of`` (LibCST links a use to each
    earlier binding of the name, so this over-approximates). None: a use in another scope (a
    closure, which may run at any call) or not a plain name (a string annotation)."""
    scope = a.scope(of)
    uses = [ref.node for ref in getattr(binding, "references", ())]
    if not all(isinstance(use, cst.Name) and a.scope(use) is scope for use in uses):
        return None
    return uses


def _untouched_until(a, binding, name: cst.Name, read: cst.CSTNode) -> bool:
    """No use of the tensor made at ``binding`` before ``read`` but ``name`` itself: it was
    just made, so no alias of it exists that could write it in between."""
    uses = _uses(a, binding, name)
    order = a.structure.order
    at = order.get(read)
    return uses is not None and at is not None and all(use is name or order.get(use, -1) > at for use in uses)


def _fresh_int_list(
    a, data: cst.BaseExpression, creation: cst.SimpleStatementLine, call: cst.Call, tensor: cst.Name
) -> bool:
    """Is ``data`` a list of ints that nothing else can change once the tensor is made: a
    display or comprehension, or a name bound to one (or ``[]``) earlier in the block that only
    ``.append(int)`` fills before ``creation``, and that ``creation`` rebinds to the tensor
    (every later use of the name in the block sees the tensor)?"""
    if isinstance(data, cst.ListComp):
        return int_like(a, data.elt)
    if isinstance(data, cst.List):
        return all(not isinstance(el, cst.StarredElement) and int_like(a, el.value) for el in data.elements)
    if not isinstance(data, cst.Name) or data.value != tensor.value:
        return False
    made = _straight_assignment(a, data)
    if made is None or not isinstance(made[1], (cst.List, cst.ListComp)):
        return False
    stmt, value, binding = made
    uses = _uses(a, binding, data)
    if uses is None or not _fresh_int_list(a, value, stmt, call, tensor):
        return False
    order = a.structure.order
    start = order.get(creation, -1)
    for use in uses:
        if use is data:
            continue
        if order.get(use, -1) > start:  # after the rebinding: must provably see the tensor
            if a.straight_line_binding(use, reevaluable=False) is not call:
                return False
            continue
        append = method_call_on(a, use, "append")
        if not (
            append is not None
            and len(append.args) == 1
            and not append.args[0].keyword
            and not append.args[0].star
            and int_like(a, append.args[0].value)
        ):
            return False
    return True
