"""Which reads of a GPU value another rule reports (SFX105 leaves them to it): a total kept in a
name (SFX302), a log line SFX401/SFX402 take, a branch or check (SFX2xx), a comprehension or an
element of a loop over a tensor (SFX303), reads in a row SFX301 merges, a list read after the
loop (SFX404); and a name its loop reads as a tensor (``loss.item()``, ``loss.backward()``),
and a tensor whose rows a counted loop copies one by one."""

from __future__ import annotations

import libcst as cst

from syncfix.analysis import Kind

from ._collected_lists import collected_after_loop
from ._iterations import runs_every_iteration, runs_on_every_call
from ._support import code, indexed_base, per_element_read, periodic
from ._totals import added_to_total

_HANDLED_CONTEXTS = (
    cst.If, cst.While, cst.Assert, cst.IfExp, cst.BooleanOperation, cst.ListComp, cst.SetComp,
    cst.DictComp, cst.GeneratorExp, cst.Lambda, cst.Comparison,
)


def _in_arithmetic(a, node: cst.CSTNode, term: cst.BaseExpression) -> bool:
    """Is ``node`` ``term`` itself or a number in its arithmetic (not an item of a tuple added to
    a tuple: ``out = out + (t.item(), ...)``)?"""
    for anc in (node, *a.ancestors(node)):
        if anc is term:
            return True
        if anc is not node and not isinstance(anc, (cst.BinaryOperation, cst.UnaryOperation)):
            return False
    return False


def _total_shaped(summand: cst.BaseExpression) -> bool:
    """A summand SFX302 reports: a read, or one side of an operation (``loss.item() * n``)."""
    return isinstance(summand, cst.Call) or isinstance(summand, cst.BinaryOperation) and any(
        isinstance(side, cst.Call) for side in (summand.left, summand.right)
    )


def in_log(a, call: cst.Call) -> bool:
    """Does ``call`` write a log line or a metric (``writer.add_scalar`` whatever the writer)?"""
    func = call.func
    return a.is_logging_call(call) or isinstance(func, cst.Attribute) and func.attr.value in ("add_scalar", "add_scalars")


def owned_elsewhere(a, node: cst.Call, stmt: cst.SimpleStatementLine, proven: bool) -> bool:
    """Is this read in a context another rule reports (see ``_scalar_read``)? SFX301 merges
    reads it can prove (``proven``); of reads it cannot, only the statement's first is reported."""
    for anc in a.ancestors(node):
        if anc is stmt:
            break
        if isinstance(anc, _HANDLED_CONTEXTS):
            return True
        if isinstance(anc, cst.Raise):
            return True  # the message of an error: read once, when raising
        method = anc.func.attr.value if isinstance(anc, cst.Call) and isinstance(anc.func, cst.Attribute) else None
        if isinstance(anc, cst.Call) and anc is not node and (
            # a log line is reported here where it runs every iteration (a metric written with
            # ``add_scalar``, whatever writes it: co-tracker's ``logger.writer.add_scalar(...,
            # loss.item(), step)``), with no fix: SFX401/SFX402 move or defer those of tensors
            # provably on CUDA, and where they report the read this finding gives way
            # (DEFERS_TO); cleanrl's five ``writer.add_scalar(..., v_loss.item(), ...)`` at the
            # end of each iteration neither moves nor defers
            # (under an ``if`` that lets it run one step in N: a warm-up's ``if step < n:``
            # runs every step it lets through, and no other rule reports that read)
            in_log(a, anc) and not (runs_every_iteration(a, stmt) or runs_on_every_call(a, stmt))
            and _under_periodic_test(a, stmt)
            # a meter's update: SFX302's
            or method == "update"
            # SFX404 reads a list's values after the loop, for tensors it can place on CUDA
            # (not a list read in the loop: SFX404 leaves that to this rule)
            or (proven and method == "append" and collected_after_loop(a, anc))
        ):
            return True
    if per_element_read(a, node):
        return True  # the element of a loop over a tensor: SFX303's
    small = stmt.body[0]
    added = added_to_total(small)
    if added is not None and _total_shaped(added[1]) and _in_arithmetic(a, node, added[1]):
        # ``total += t.item()``, ``total = total + k * t.item()``: a running total, SFX302's
        # (not ``start += n + k * t.item()``, nor ``x -= t.item()``, which it leaves)
        return True
    in_stmt = a.likely.host_read_syncs(stmt, any_device=True)
    if len(in_stmt) > 1:
        if proven and len(a.host_read_syncs(stmt, any_device=True)) == len(in_stmt):
            return True  # several reads in one statement: SFX301's (not where some are reads
            # only in the likely view, which SFX301 does not merge: pygcn's ``acc_train.item()``)
        first = min(in_stmt, key=lambda n: a.structure.order.get(n, -1))
        return first is not node  # one finding for the statement
    if not proven:
        return False
    reads = a.host_read_syncs
    # reads in a row: SFX301 merges them, in a run it can read as one (the earlier of two
    # lines calls nothing that may write a tensor: not cleanrl's ``writer.add_scalar(...)``)
    pairs = [*((b, b) for b in (a.statements_before(stmt) or [])[:1]), *((n, stmt) for n in (a.statements_after(stmt) or [])[:1])]
    for other, earlier in pairs:
        if isinstance(other, cst.SimpleStatementLine) and reads(other, any_device=True) and _quiet(a, earlier):
            return True
    return False


def _under_periodic_test(a, stmt: cst.CSTNode) -> bool:
    """Is ``stmt`` in the body of an ``if step % N == 0:`` (or another test that counts steps)
    within its loop, or in no loop (a function's log, as its calls decide)?"""
    child = stmt
    for anc in a.ancestors(stmt):
        if isinstance(anc, (cst.For, cst.While, cst.FunctionDef)):
            return not isinstance(anc, (cst.For, cst.While))
        if isinstance(anc, cst.If) and child is anc.body and (periodic(anc.test) or _ends_the_run(a, anc.body)):
            return True
        child = anc
    return True


_EXITS = frozenset({"sys.exit", "builtins.exit", "builtins.quit", "os._exit"})


def _ends_the_run(a, body: cst.BaseSuite) -> bool:
    """Does the block end by raising or exiting the process (dino's ``if not
    math.isfinite(loss.item()): print(...); sys.exit(1)``): what it logs is logged once?"""
    last = body.body[-1] if isinstance(body, cst.IndentedBlock) and body.body else None
    small = last.body[-1] if isinstance(last, cst.SimpleStatementLine) and last.body else None
    if isinstance(small, cst.Raise):
        return True
    call = small.value if isinstance(small, cst.Expr) else None
    return isinstance(call, cst.Call) and a.callee(call) in _EXITS


def _quiet(a, stmt: cst.CSTNode) -> bool:
    """Can ``stmt`` neither exit nor run code that may write a tensor (SFX301's run)?"""
    fx = a.effects(stmt)
    return not fx.exits and not fx.may_mutate_anything


def ancestors_in(a, node: cst.CSTNode, stmt: cst.CSTNode) -> list[cst.CSTNode]:
    """``node``'s ancestors up to (not including) its statement ``stmt``."""
    found = []
    for anc in a.ancestors(node):
        if anc is stmt:
            break
        found.append(anc)
    return found


def item_read_in_loop(a, expr: cst.BaseExpression) -> bool:
    """A name of a value syncfix cannot name that its loop also reads with ``.item()`` or
    calls ``.backward()`` on: a tensor (ddim's ``tb_logger.add_scalar("loss", loss, ...)``, then
    ``loss.item()`` in the log line)."""
    loop = a.enclosing_loop(expr)
    if (
        not isinstance(expr, cst.Name)
        or loop is None
        or not a.torch_code  # torch code: not another library's ``item()``
        or a.likely.value(expr).kind is not Kind.UNKNOWN
    ):
        return False
    for use in a.structure.within(loop, cst.Name):
        if use is expr or not isinstance(use, cst.Name) or use.value != expr.value:
            continue
        attr = a.parent(use)
        if (
            isinstance(attr, cst.Attribute)
            and attr.value is use
            and attr.attr.value in ("item", "backward")
            and isinstance(call := a.parent(attr), cst.Call)
        ):
            # ``v = v.item()`` before the write (VideoMAE's logger, under ``if isinstance(v,
            # torch.Tensor):``): there ``v`` is the number read, not a tensor
            assign = a.parent(call)
            converted = (
                isinstance(assign, cst.Assign) and len(assign.targets) == 1
                and isinstance(assign.targets[0].target, cst.Name) and assign.targets[0].target.value == expr.value
                and a.structure.order.get(assign, -1) < a.structure.order.get(expr, -1)
            )
            return not converted
    return False


def rows_copied(a, receiver: cst.BaseExpression) -> str | None:
    """The code of ``t`` where ``receiver`` indexes it with the counter of its ``for`` (``t[i]``,
    ``t.data[i]``), ``t`` a tensor (or a value syncfix cannot name) the loop does not write."""
    loop = a.enclosing_loop(receiver)
    it = loop.iter if isinstance(loop, cst.For) else None
    if not (isinstance(loop, cst.For) and isinstance(loop.target, cst.Name) and isinstance(it, cst.Call) and a.callee(it) == "builtins.range"):
        return None  # a count over the rows, not a loop over keys or items
    base = indexed_base(a, receiver, {loop.target.value})
    if base is None:
        return None
    held = a.likely.value(base)
    fx = a.effects(loop.body)
    names = {n.value for n in a.nodes_within(base, cst.Name)}
    text = code(a, base)
    if not (held.is_tensor or held.kind is Kind.UNKNOWN) or names & (fx.writes | fx.inplace) or len(text) > 40:
        return None
    return text
