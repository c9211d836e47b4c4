"""Where SFX302's running total is used and where it starts: its reads and resets inside the
loop (:func:`periodic_uses`, :func:`reset_ok`), its one start before it (:func:`start_value`),
and whether another scope shares it (:func:`shared_with_other_scope`)."""

from __future__ import annotations

import libcst as cst

from syncfix.analysis import FULL_REDUCTIONS, literal_kind, stored_names
from syncfix.walk import walk

_SCOPES = (cst.FunctionDef, cst.ClassDef, cst.Lambda, cst.ListComp, cst.SetComp, cst.DictComp, cst.GeneratorExp)
# Largest Python int start that converts to float64 exactly (so ``0 + 1.5`` matches the device sum).
EXACT_FLOAT_INT = 2**53


def shared_with_other_scope(a, fn: cst.FunctionDef | cst.Module, name: str) -> bool:
    """Does a nested scope of ``fn`` mention ``name``, or ``fn`` declare it global/nonlocal?
    (Read off the index of nodes by type: no walk of the function.)"""
    body = fn.body if isinstance(fn, cst.FunctionDef) else fn  # a script's module: all of it
    for kind in _SCOPES:
        for scope in a.nodes_within(body, kind):
            if any(n.value == name for n in a.nodes_within(scope, cst.Name)):
                return True
    return any(
        n.name.value == name
        for kind in (cst.Global, cst.Nonlocal)
        for decl in a.nodes_within(body, kind)
        for n in decl.names
    )


def periodic_uses(
    a, loop: cst.For | cst.While, total: str, update: cst.SimpleStatementLine
) -> tuple[list[cst.CSTNode], list[cst.SimpleStatementLine]] | None:
    """The statements of the loop that read ``total`` (each under an ``if`` inside the loop, so
    not every step) and those that reset it (``total = <literal>``); None for any other use.

    A read statement gets the host value read back before it; a reset starts the accumulator
    afresh. Uses in the loop's ``else``, in a ``while`` test or in a nested scope are not handled.
    """
    if loop.orelse is not None and _mentions_in(loop.orelse, total):
        return None
    reads: list[cst.CSTNode] = []
    resets: list[cst.SimpleStatementLine] = []
    for name in _names_in(loop.body, total, skip=update):
        stmt, header = _statement_of(a, name, loop)
        if stmt is None:
            return None
        while isinstance(parent := a.parent(stmt), cst.If) and parent.orelse is stmt:
            stmt = parent  # an ``elif`` test: the read-back goes before the whole ``if`` chain
        if isinstance(stmt, cst.SimpleStatementLine) and total in stored_names(stmt):
            small = stmt.body[0] if len(stmt.body) == 1 else None
            if not (
                isinstance(small, cst.Assign)
                and len(small.targets) == 1
                and isinstance(small.targets[0].target, cst.Name)
                and small.targets[0].target.value == total
                and literal_kind(small.value, one_minus=True) is not None
            ):
                return None  # any other write (or a read and write in one statement)
            if stmt not in resets:
                resets.append(stmt)
            continue
        if not header and not isinstance(stmt, cst.SimpleStatementLine):
            return None
        if not any(isinstance(n, cst.If) for n in ancestors_until(a, stmt, loop)):
            return None  # read every step: a read-back there would only move the sync
        if stmt not in reads:
            reads.append(stmt)
    if not reads:
        return None
    return reads, resets


def _statement_of(a, name: cst.Name, loop: cst.CSTNode) -> tuple[cst.CSTNode | None, bool]:
    """The statement in the loop holding ``name``: its simple statement line, or the compound
    statement whose header (an ``if``/``while`` test, a ``for`` iterable, ``with`` items) holds
    it (second item True)."""
    child: cst.CSTNode = name
    for anc in a.ancestors(name):
        if isinstance(anc, cst.SimpleStatementLine):
            return anc, False
        if isinstance(anc, (cst.If, cst.While, cst.For, cst.With)) and child is not anc.body and (
            not isinstance(anc, (cst.If, cst.While, cst.For)) or child is not anc.orelse
        ):
            if isinstance(anc, cst.While) or (isinstance(anc, cst.For) and child is anc.target):
                return None, False  # a test read again and again, or ``for total in ...``
            return anc, True
        if anc is loop:
            return None, False
        child = anc
    return None, False


def reset_ok(stmt: cst.SimpleStatementLine, kind: str | None) -> bool:
    """A reset the accumulator can follow exactly: an int count restarts at an int, a float total
    at a float or an int the float64 start represents exactly."""
    small = stmt.body[0]
    assert isinstance(small, cst.Assign)
    lit = literal_kind(small.value, one_minus=True)
    if lit == "float":
        return kind == "float"
    if lit != "int":
        return False
    text = cst.Module([]).code_for_node(small.value).replace("_", "")
    return abs(int(text, 0)) <= (EXACT_FLOAT_INT if kind == "float" else 2**62 - 1)


def _names_in(node: cst.CSTNode, name: str, *, skip: cst.CSTNode | None) -> list[cst.Name]:
    found: list[cst.Name] = []

    class V(cst.CSTVisitor):
        def on_visit(self, n: cst.CSTNode) -> bool:
            if n is skip:
                return False
            if isinstance(n, cst.Name) and n.value == name:
                found.append(n)
            return True

    walk(node, V())
    return found


def _mentions_in(node: cst.CSTNode, name: str) -> bool:
    return bool(_names_in(node, name, skip=None))


def ancestors_until(a, node: cst.CSTNode, stop: cst.CSTNode):
    for anc in a.ancestors(node):
        if anc is stop:
            return
        yield anc


def mentions(loop: cst.For | cst.While, name: str, *, skip: cst.CSTNode, header: bool) -> bool:
    """Is ``name`` used in the loop (body, ``else``, a ``while`` test) outside ``skip``?"""
    parts: list[cst.CSTNode] = [loop.body]
    if loop.orelse is not None:
        parts.append(loop.orelse)
    if header and isinstance(loop, cst.While):
        parts.append(loop.test)
    return any(_names_in(part, name, skip=skip) for part in parts)


def start_value(
    a, fn: cst.FunctionDef | cst.Module, loop: cst.CSTNode, total: str, update: cst.SimpleStatementLine,
    resets: list[cst.SimpleStatementLine],
) -> tuple[str | None, bool]:
    """``"pyfloat"``/``"pyint"`` when ``total``'s only other binding (``update`` and ``resets``
    aside) is ``total = <literal>`` in a block enclosing the loop, before it (bindings after the
    loop that no loop around it carries back, ``test_loss /= n``, see the value read back after
    the loop); else None. Second: an int start that converts to float64 exactly."""
    given = fn.params if isinstance(fn, cst.FunctionDef) else None  # a script's module has none
    params = {p.name.value for p in (*given.params, *given.posonly_params, *given.kwonly_params)} if given else set()
    if total in params:
        return None, False
    starts: list[cst.CSTNode] = []
    order = a.structure.order
    # loops around ``loop`` that may carry a binding after it back to it: not one whose every
    # pass binds the total again before ``loop`` (``for epoch ...: epoch_loss = 0.0``, then
    # ``for batch ...: epoch_loss += ...``, then ``epoch_loss /= n``: e2-tts's trainer)
    outer_loops = {
        id(n) for n in a.ancestors(loop)
        if isinstance(n, (cst.For, cst.While)) and not _restarts_before(a, n, loop, total)
    }

    def after_the_loop(stmt: cst.CSTNode) -> bool:
        ancestors = list(a.ancestors(stmt))
        return (
            order.get(stmt, -1) > order.get(loop, -1)
            and all(n is not loop for n in ancestors)
            and not any(id(n) in outer_loops for n in ancestors)
        )

    class V(cst.CSTVisitor):
        def visit_SimpleStatementLine(self, node: cst.SimpleStatementLine) -> bool:
            if (
                node is not update
                and node not in resets
                and total in stored_names(node)
                and not after_the_loop(node)
            ):
                starts.append(node)
            return False

        def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
            return node is fn

        def on_visit(self, node: cst.CSTNode) -> bool:
            if isinstance(node, cst.BaseCompoundStatement) and not isinstance(node, cst.FunctionDef):
                header_binds = isinstance(node, cst.For) and total in stored_names(node.target)
                header_binds |= isinstance(node, cst.With) and any(
                    item.asname is not None and total in stored_names(item.asname) for item in node.items
                )
                if header_binds:
                    starts.append(node)
            return super().on_visit(node)

    walk(fn, V())
    if len(starts) != 1 or not isinstance(starts[0], cst.SimpleStatementLine):
        return None, False
    start = starts[0]
    small = start.body[0] if len(start.body) == 1 else None
    value = _assigned_to(small, total) if isinstance(small, cst.Assign) else None
    if value is None:
        return None, False
    block = a.block_of(start)
    if block is None:
        return None, False
    loop_ancestors = {id(loop), *(id(n) for n in a.ancestors(loop))}
    body = list(block[1])
    index = body.index(start)
    if not any(id(s) in loop_ancestors for s in body[index + 1 :]):
        return None, False  # not in a block enclosing the loop, before it
    lit = literal_kind(value, one_minus=True)
    kind = None if lit is None else "py" + lit
    if kind == "pyint":
        text = cst.Module([]).code_for_node(value).replace("_", "")
        if abs(int(text, 0)) >= 2**62:
            return None, False  # torch.full would not take it as int64
        return kind, abs(int(text, 0)) <= EXACT_FLOAT_INT
    return kind, False


def _restarts_before(a, outer: cst.CSTNode, loop: cst.CSTNode, total: str) -> bool:
    """Does a plain ``total = <number literal>`` run on every pass of ``outer`` before
    ``loop``: a statement before it in its block, or in a block around it within ``outer``?"""
    node: cst.CSTNode = loop
    while node is not outer:
        for before in a.statements_before(node) or ():
            small = before.body[0] if isinstance(before, cst.SimpleStatementLine) and len(before.body) == 1 else None
            if isinstance(small, cst.Assign) and len(small.targets) == 1:
                target = small.targets[0].target
                if isinstance(target, cst.Name) and target.value == total and literal_kind(small.value) is not None:
                    return True
        parent = a.parent(node)
        while parent is not None and parent is not outer and not isinstance(parent, cst.BaseStatement):
            parent = a.parent(parent)
        if parent is None or isinstance(parent, (cst.If, cst.Try, cst.With)) and parent is not outer:
            return False  # under a branch the pass may skip
        node = parent
    return False


def _assigned_to(assign: cst.Assign, name: str) -> cst.BaseExpression | None:
    """What ``name = <value>``, ``a, name = <x>, <value>`` (a display of as many plain items)
    or ``a = name = <value>`` (chained: one value, a literal the totals cannot share) binds to
    ``name``."""
    if len(assign.targets) > 1:
        names = [t.target for t in assign.targets]
        if all(isinstance(t, cst.Name) for t in names) and any(t.value == name for t in names):  # type: ignore[attr-defined]
            return assign.value if literal_kind(assign.value, one_minus=True) is not None else None
        return None
    target, value = assign.targets[0].target, assign.value
    if isinstance(target, cst.Name):
        return value if target.value == name else None
    if not isinstance(target, (cst.Tuple, cst.List)) or not isinstance(value, (cst.Tuple, cst.List)):
        return None
    if len(target.elements) != len(value.elements) or any(
        not isinstance(el, cst.Element) for el in (*target.elements, *value.elements)
    ):
        return None  # ``a, *rest = ...``: not item by item
    for t, v in zip(target.elements, value.elements, strict=True):
        if isinstance(t.value, cst.Name) and t.value.value == name:
            return v.value
    return None



def bound_before(a, name: str, loop: cst.CSTNode) -> bool:
    """Is every binding of ``name`` seen from the loop made before the loop starts?"""
    scope = a.scope(loop)
    if scope is None:
        return False
    try:
        assignments = list(scope[name])
    except Exception:
        return False
    order = a.structure.order  # source order (a binding never contains the loop)
    for asg in assignments:
        node = getattr(asg, "node", None)
        if not isinstance(node, cst.CSTNode) or node not in order:
            return False
        if asg.scope is scope and order[node] >= order[loop]:
            return False
    return bool(assignments)


# Dtypes a tensor total adds a 0-d tensor into exactly as it adds that tensor's ``.item()``: an
# int64 total refuses a float either way (the same error); float64 adds any summand as its
# ``.item()``, float32 any but a float64 one (below). float16/bfloat16 totals differ: a Python
# number is added there in float32, a tensor first rounded to 16 bits.
_EXACT_TOTAL_DTYPES = {"torch.int64", "torch.float32", "torch.float64"}
_INTEGERS = {"torch.bool", "torch.uint8", "torch.int8", "torch.int16", "torch.int32", "torch.int64"}
# The summands each total adds as it adds their ``.item()``: an int64 total takes integers only
# (uint16/32/64 do not promote with int64 at all; a float raises, but its message names the
# summand's dtype, not the Python float's), a float total any real dtype no wider than itself.
_SUMMANDS = {
    "torch.int64": _INTEGERS,
    "torch.float32": _INTEGERS | {"torch.float16", "torch.bfloat16", "torch.float32"},
    "torch.float64": _INTEGERS | {"torch.float16", "torch.bfloat16", "torch.float32", "torch.float64"},
}


def tensor_total(a, aug: cst.AugAssign) -> list[cst.BaseExpression] | None:
    """``t += x.item()`` where every value ``t`` may hold is a tensor of one dtype among int64,
    float32 and float64: the expressions that made those tensors, else None. ``t`` is a local
    name whose every binding is such a tensor or an augmented assignment (a tensor's ``+=`` works
    in place: the same tensor), or ``d[key]`` of a local dict display of such tensors that the
    function only reads, iterates and augments item by item (no item is ever replaced)."""
    target = aug.target
    if isinstance(target, cst.Name):
        made = _name_totals(a, target)
    elif isinstance(target, cst.Subscript) and isinstance(target.value, cst.Name):
        made = _dict_totals(a, target.value)
    else:
        return None
    if not made or not all(a.value(e).is_tensor for e in made) or _replaces_storage(a, aug):
        return None
    dtypes = {a.canonical_dtype(e) for e in made}
    return made if len(dtypes) == 1 and dtypes <= _EXACT_TOTAL_DTYPES else None


def _local_assignments(a, name: cst.Name) -> list | None:
    fn = a.enclosing_function(name)
    scope = a.scope(name)
    if fn is None or scope is None or shared_with_other_scope(a, fn, name.value) or a.bound_unseen(name.value):
        return None
    return list(scope.assignments[name.value])


def _name_totals(a, name: cst.Name) -> list[cst.BaseExpression] | None:
    assignments = _local_assignments(a, name)
    if not assignments:
        return None
    made: list[cst.BaseExpression] = []
    for asg in assignments:
        node = getattr(asg, "node", None)
        parent = a.parent(node) if node is not None else None
        if isinstance(parent, cst.AugAssign) and parent.target is node:
            continue  # in place on a tensor: the same tensor
        value = _assigned_value(a, parent, node)
        if value is None:
            return None  # a parameter, a loop target, an import...: not a tensor made here
        made.append(value)
    return made


def _assigned_value(a, parent: cst.CSTNode | None, node: cst.CSTNode | None) -> cst.BaseExpression | None:
    """``e`` of ``name = e`` (one target) or ``name: T = e``."""
    if isinstance(parent, cst.AssignTarget) and parent.target is node:
        assign = a.parent(parent)
        if isinstance(assign, cst.Assign) and len(assign.targets) == 1:
            return assign.value
    if isinstance(parent, cst.AnnAssign) and parent.target is node:
        return parent.value
    return None


# What a function may do with its dict of totals, besides augmenting an item: read items, iterate
# or size it, return it.
_DICT_READS = {"items", "keys", "values", "get"}


def _dict_totals(a, d: cst.Name) -> list[cst.BaseExpression] | None:
    assignments = _local_assignments(a, d)
    if not assignments or len(assignments) != 1:
        return None
    node = getattr(assignments[0], "node", None)
    display = _assigned_value(a, a.parent(node) if node is not None else None, node)
    if not isinstance(display, cst.Dict) or not all(isinstance(e, cst.DictElement) for e in display.elements):
        return None  # ``**other``: items made elsewhere
    scope = a.scope(d)
    for access in scope.accesses[d.value]:
        if not _reads_dict(a, access.node):
            return None
    return [e.value for e in display.elements]


def _reads_dict(a, use: cst.CSTNode) -> bool:
    """Is this use of the dict one that keeps every item the tensor it was?"""
    parent = a.parent(use)
    if isinstance(parent, cst.Subscript) and parent.value is use:
        holder = a.parent(parent)
        if isinstance(holder, cst.AugAssign) and holder.target is parent:
            return True
        child: cst.CSTNode = parent
        while isinstance(holder, (cst.Element, cst.StarredElement, cst.Tuple, cst.List)):
            child, holder = holder, a.parent(holder)  # ``d["a"], n = ...``: a target inside
        if isinstance(holder, (cst.AssignTarget, cst.Del, cst.AnnAssign)):
            return False
        return not (
            isinstance(holder, (cst.For, cst.CompFor, cst.AsName, cst.NamedExpr))
            and getattr(holder, "target", getattr(holder, "name", None)) is child
        )
    if isinstance(parent, cst.Attribute) and parent.value is use and parent.attr.value in _DICT_READS:
        call = a.parent(parent)
        return isinstance(call, cst.Call) and call.func is parent
    if isinstance(parent, (cst.For, cst.CompFor)) and parent.iter is use:
        return True
    while isinstance(parent, cst.Element) and isinstance(holder := a.parent(parent), cst.Tuple):
        parent = a.parent(holder)  # ``return total, counts``
    if isinstance(parent, cst.Return):
        return True
    if isinstance(parent, cst.Arg):
        call = a.parent(parent)
        return isinstance(call, cst.Call) and a.callee(call) == "builtins.len"
    return False


def added_to_total(small: cst.BaseSmallStatement) -> tuple[str, cst.BaseExpression] | None:
    """``total += v`` or ``total = total + v`` (a name): the total's name and the summand."""
    if isinstance(small, cst.AugAssign) and isinstance(small.operator, cst.AddAssign) and isinstance(small.target, cst.Name):
        return small.target.value, small.value
    if (
        isinstance(small, cst.Assign)
        and len(small.targets) == 1
        and isinstance(small.targets[0].target, cst.Name)
        and isinstance(small.value, cst.BinaryOperation)
        and isinstance(small.value.operator, cst.Add)
        and isinstance(small.value.left, cst.Name)
        and small.value.left.value == small.targets[0].target.value
    ):
        return small.value.left.value, small.value.right
    return None


INTO_TENSOR_TOTAL = "Add the tensor to the tensor total instead of its value"
INTO_TENSOR_TOTAL_LIKELY = (
    " (unsafe: it rests on the likely fact that the value is a 0-d tensor on the total's device, or on"
    " the CPU, of an integer dtype for an integer total and a real one for a float total; a tensor on"
    " another device cannot be added in place, and a uint16/32/64 one cannot be added to int64)"
)


def into_tensor_total(a, aug: cst.AugAssign, read: cst.Call) -> tuple[dict, bool] | None:
    """``t += x.item()``, ``t`` a tensor total (:func:`tensor_total`) and ``x`` a 0-d
    tensor: the changes that add ``x`` itself (``x.detach()`` unless it is provably grad-free, so
    that the total joins no graph), and whether that is proven exact (``x`` provably a 0-d tensor
    from the total's own device expression) rather than likely."""
    func = read.func
    if (
        aug.value is not read
        or read.args
        or not isinstance(func, cst.Attribute)
        or func.attr.value != "item"
        or not isinstance(aug.operator, cst.AddAssign)  # ``-=`` refuses a bool tensor, not a bool
    ):
        return None
    made = tensor_total(a, aug)
    if made is None:
        return None
    x = func.value
    summand = a.canonical_dtype(x) or a.likely.canonical_dtype(x)
    total = a.canonical_dtype(made[0])
    if summand is not None and summand not in _SUMMANDS[total]:
        return None
    if summand is None and total == "torch.float32":
        return None  # it may be float64: a 0-d float32 total adds that in float64, a Python float in float32
    proven = a.value(x).is_tensor and a.is_zero_dim(x) and summand is not None
    if not proven and not (a.likely.value(x).is_tensor and (a.likely.is_zero_dim(x) or _full_reduction(x))):
        return None
    origins = {a.device_origin(x), *(a.device_origin(e) for e in made)}
    one_device = len(origins) == 1 and None not in origins and not (origins == {'"cuda"'} and a.may_use_several_devices)
    exact = proven and one_device
    added = x if a.is_grad_free(x) else cst.Call(cst.Attribute(x, cst.Name("detach")))
    return {read: added.with_changes(lpar=read.lpar, rpar=read.rpar)}, exact  # ``(\n    t.item()\n)``


def _full_reduction(x: cst.BaseExpression) -> bool:
    """``t.sum()``: a method reducing a tensor to 0-d (no dim given)."""
    return (
        isinstance(x, cst.Call)
        and not x.args
        and isinstance(x.func, cst.Attribute)
        and x.func.attr.value in FULL_REDUCTIONS
    )


def _replaces_storage(a, node: cst.CSTNode) -> bool:
    """Does the function give some tensor new data of its own choosing (``t.data = ...``,
    ``t.set_(...)``), which may change a total's dtype without rebinding its name?"""
    fn = a.enclosing_function(node)
    if fn is None:
        return True
    for target in a.nodes_within(fn, cst.AssignTarget):
        t = target.target
        if isinstance(t, cst.Attribute) and t.attr.value == "data":
            return True
    return any(
        isinstance(c.func, cst.Attribute) and c.func.attr.value == "set_"
        for c in a.nodes_within(fn, cst.Call)
    )
