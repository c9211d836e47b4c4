"""How often a statement runs in its loop: on every time round (no ``if`` that the loop changes,
no handler), and whether a read in the loop empties the GPU's queue each time round."""

from __future__ import annotations

import libcst as cst

from syncfix.analysis import (
    Device,
    ModuleAnalysis,
    dotted_name,
    root_name,
    stored_names,
    target_names,
)


def drained_each_iteration(a: ModuleAnalysis, node: cst.CSTNode) -> int | None:
    """The line of a read of a tensor's value on the host (``t.item()``, ``float(t)``,
    ``t.cpu()``) of a tensor not known to be on the CPU, in the body of ``node``'s loop itself and
    on every time round; None where there is none. Such a read waits for all queued work each
    iteration, so a copy in the loop made non-blocking saves only its own wait while it stays
    (Image_Segmentation's, HRNet's flip test: the helper reviews' most common useless fix)."""
    loop = a.enclosing_loop(node)
    if loop is None:
        return None
    fn = a.enclosing_function(node)
    for call in a.nodes_within(loop.body, cst.Call):
        if call is node or a.enclosing_loop(call) is not loop or a.enclosing_function(call) is not fn:
            continue
        assert isinstance(call, cst.Call)
        read = a.host_read(call) or a.likely.host_read(call)
        func = call.func
        receiver = read.receiver if read is not None else (
            func.value if isinstance(func, cst.Attribute) and func.attr.value == "cpu" and not call.args else None
        )
        if receiver is None:
            continue
        held = a.likely.value(receiver)
        stmt = a.statement_of(call)
        if not held.is_tensor or held.device is Device.CPU or stmt is None or not runs_every_iteration(a, stmt):
            continue
        # a running total's read (SFX302) or a logged one (SFX401) has fixes of its own
        total = any(isinstance(small, cst.AugAssign) for small in getattr(stmt, "body", ()))
        logged = any(isinstance(anc, cst.Call) and a.is_logging_call(anc) for anc in a.ancestors(call))
        if not total and not logged:
            return a.positions[call].start.line
    return None


def runs_every_iteration(a: ModuleAnalysis, node: cst.CSTNode) -> bool:
    """Does ``node`` run on every iteration of its loop (no ``if`` or ``try`` between)? A log
    line under ``if step % 100 == 0:`` runs once per hundred steps; one under ``if rank == 0:``,
    a test the loop does not change, runs on every step of the process it is true for
    (tacotron2's per-step ``print`` of ``grad_norm``)."""
    ifs: list[cst.If] = []
    child: cst.CSTNode = node
    for anc in a.ancestors(node):
        if isinstance(anc, (cst.For, cst.While)):
            return not ifs or loop_invariant(a, [i.test for i in ifs], anc)
        if isinstance(anc, cst.If) and child is anc.body:
            ifs.append(anc)
        elif isinstance(anc, (cst.If, cst.Try, cst.TryStar, cst.FunctionDef)):
            return False  # an ``else``, or a handler
        child = anc
    return False


def runs_on_every_call(a: ModuleAnalysis, node: cst.CSTNode) -> bool:
    """Does ``node`` run on every call of a function that repeats (a step-like function, or one
    called from a loop), outside any loop, ``if`` or ``try`` of that function? pygcn's
    ``train(epoch)``, called once per epoch, prints its losses on every call."""
    for anc in a.ancestors(node):
        if isinstance(anc, (cst.For, cst.While, cst.If, cst.Try, cst.TryStar, cst.ClassDef, cst.Lambda)):
            return False
        if isinstance(anc, cst.FunctionDef):
            return a.is_hot(node)
    return False


def filters_items(a: ModuleAnalysis, tests: list[cst.BaseExpression], loop: cst.For | cst.While) -> bool:
    """Do ``tests`` pick items of ``loop`` rather than steps: each names the loop's variable and
    none counts (``if p.grad is not None:`` in ``for n, p in named_params:``, ijepa's gradient
    logger; not ``if step % 10 == 0:`` nor ``if i == 0:``)?"""
    if not isinstance(loop, cst.For):
        return False
    names = {n.value for n in target_names(loop.target)}

    def counts(n: cst.CSTNode) -> bool:  # ``step % 10``, ``i == 0``: a test of the count
        if isinstance(n, cst.BinaryOperation):
            return isinstance(n.operator, cst.Modulo)
        return isinstance(n, cst.Comparison) and any(
            isinstance(c.operator, (cst.Equal, cst.NotEqual))
            and any(isinstance(side, cst.Name) and side.value in names for side in (n.left, c.comparator))
            for c in n.comparisons
        )

    return all(
        any(isinstance(n, cst.Name) and n.value in names for n in _nodes_of(test))
        and not any(counts(n) for n in _nodes_of(test))
        for test in tests
    )


def loop_invariant(a: ModuleAnalysis, tests: list[cst.BaseExpression], loop: cst.For | cst.While) -> bool:
    """Are ``tests`` made of names (``rank``, ``args.local_rank``), literals and operators only,
    none of the names bound in ``loop``?"""
    parts = [n for test in tests for n in _nodes_of(test)]
    if not all(isinstance(n, _INVARIANT_PARTS) for n in parts):
        return False  # the test first: most are a counter's, or call something
    bound = set(stored_names(loop.body))
    if isinstance(loop, cst.For):
        bound |= {n.value for n in target_names(loop.target)}
    targets = [
        getattr(t, "target", None)
        for kind in (cst.AssignTarget, cst.AugAssign, cst.AnnAssign)
        for t in a.nodes_within(loop.body, kind)
    ]
    bound |= {dotted_name(t) or "" for t in targets if isinstance(t, cst.Attribute)}  # ``self.step += 1``
    return not any(
        isinstance(n, (cst.Name, cst.Attribute)) and (root_name(n) in bound or dotted_name(n) in bound)
        for n in parts
    )


_INVARIANT_PARTS = (
    cst.Name, cst.Attribute, cst.Comparison, cst.ComparisonTarget, cst.BooleanOperation,
    cst.UnaryOperation, cst.Integer, cst.SimpleString, cst.BaseCompOp, cst.BaseBooleanOp,
    cst.BaseUnaryOp, cst.LeftParen, cst.RightParen, cst.BaseParenthesizableWhitespace,
    cst.Dot,
)


def _nodes_of(node: cst.CSTNode) -> list[cst.CSTNode]:
    found = [node]
    for child in node.children:
        found.extend(_nodes_of(child))
    return found
