"""Lists a loop fills with values read from the GPU (``losses.append(loss.item())``): which of
them SFX404 keeps on the device until the loop ends, so that SFX105 leaves their reads to it
and reports the others."""

from __future__ import annotations

import libcst as cst
from libcst.metadata import Assignment

from syncfix.walk import walk


def append_of(stmt: cst.BaseStatement) -> cst.Call | None:
    """``name.append(value)`` as a whole statement line."""
    if not (isinstance(stmt, cst.SimpleStatementLine) and len(stmt.body) == 1 and isinstance(stmt.body[0], cst.Expr)):
        return None
    call = stmt.body[0].value
    if (
        isinstance(call, cst.Call)
        and isinstance(call.func, cst.Attribute)
        and call.func.attr.value == "append"
        and isinstance(call.func.value, cst.Name)
        and len(call.args) == 1
        and call.args[0].keyword is None
        and not call.args[0].star
    ):
        return call
    return None


def collected_after_loop(a, call: cst.Call) -> bool:
    """Is ``call`` an append, at the top of a repeating loop's body, to a list nothing reads
    until the loop ends (SFX404's to report)? Not one read in the loop every N steps
    (pytorch-vqvae's ``np.asarray(train_loss)[-100:]``): SFX105 reports those reads."""
    stmt = a.statement_of(call)
    block = a.parent(stmt) if stmt is not None else None
    loop = a.parent(block) if block is not None else None
    if not (isinstance(loop, (cst.For, cst.While)) and isinstance(block, cst.IndentedBlock) and loop.body is block and append_of(stmt) is call):
        return False
    if not a.repeats_here(block):
        return False
    name = call.func.value.value  # type: ignore[attr-defined]
    appends = [c for s in block.body if (c := append_of(s)) is not None and c.func.value.value == name]  # type: ignore[attr-defined]
    return list_problem(a, loop, name, appends) is None


def list_problem(a, loop: cst.For | cst.While, name: str, appends: list[cst.Call]) -> str | None:
    """Why the list ``name`` that ``appends`` fill is not a local ``[]`` unseen until ``loop``
    ends (None: it is one)."""
    fn = a.enclosing_function(loop)
    if fn is None:
        return "the list is not local to a function"
    if loop.orelse is not None:
        return "the loop has an `else`"
    if any(c for n in ("locals", "vars", "eval", "exec") for c in a.calls_named(n) if a.enclosing_function(c) is fn):
        return "the function reads names by string (`locals()`, `vars()`, `eval`, `exec`), which could see the list"
    for outer in a.ancestors(loop):
        if outer is fn:
            break
        if isinstance(outer, (cst.Try, cst.TryStar, cst.With)):
            return "a `try` or `with` around the loop could see the list while it is incomplete"
    uses = uses_of(fn, name)
    append_names = {c.func.value for c in appends}  # type: ignore[attr-defined]
    target = next(iter(append_names))
    bindings = a.bindings(target)
    if len(bindings) != 1:
        return f"`{name}` is bound more than once"
    (binding,) = bindings
    if not isinstance(binding, Assignment) or a.enclosing_function(binding.node) is not fn:
        return f"`{name}` is not a local of this function"
    target_parent = a.parent(binding.node) if isinstance(binding.node, cst.Name) else None
    assign = a.parent(target_parent) if target_parent is not None else None
    if not (
        isinstance(assign, cst.Assign)
        and len(assign.targets) == 1
        and assign.targets[0].target is binding.node
        and isinstance(assign.value, cst.List)
        and not assign.value.elements
    ):
        return f"`{name}` is not a new empty list (`{name} = []`)"
    if _yields(fn):
        return "the function is a generator"
    end = a.positions[loop].end
    start = a.positions[loop].start
    for use in uses:
        if use is binding.node or use in append_names:
            continue
        pos = a.positions[use].start
        if (pos.line, pos.column) < (start.line, start.column):
            return f"`{name}` is used before the loop"
        if (pos.line, pos.column) <= (end.line, end.column):
            return f"`{name}` is used in the loop other than by appends at the top of its body"
    return None


def uses_of(node: cst.CSTNode, name: str) -> list[cst.Name]:
    """Every `Name` under ``node`` spelled ``name`` (not the names a target binds: see
    _bound_names.names_in)."""
    found: list[cst.Name] = []

    class V(cst.CSTVisitor):
        def visit_Name(self, n: cst.Name) -> None:
            if n.value == name:
                found.append(n)

    walk(node, V())
    return found


def _yields(fn: cst.FunctionDef) -> bool:
    found: list[bool] = []

    class V(cst.CSTVisitor):
        def visit_Yield(self, node: cst.Yield) -> None:
            found.append(True)

        def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
            return node is fn

        def visit_Lambda(self, node: cst.Lambda) -> bool:
            return False

    walk(fn, V())
    return bool(found)
