"""Reading every value of a mapping with one stack (SFX303; SFX105 leaves these reads to it).

``{k: v.item() / n for k, v in d.items()}`` and ``for k, v in d.items(): ... v.item() ...``
read one value per key, one sync each. Both iterate instead over

    zip(d.keys(), torch.stack([v.reshape(()) for v in d.values()]).tolist() if d else [])

with the read replaced by ``v``: one sync. What makes it exact (one-element tensors of one dtype
on one device) is a likely fact, so the fix is unsafe; what is checked here is that ``v`` is
used once, in that read, after methods that keep its values.
"""

from __future__ import annotations

import libcst as cst

from syncfix.analysis import Device, ModuleAnalysis, dotted_name
from syncfix.walk import walk

#: Methods that keep a tensor's values (``cpu`` copies them exactly; a cast rounds the same
#: way on every device), and reductions, which may sum in another order on another device.
_KEEPS_VALUES = frozenset({"detach", "cpu", "clone", "contiguous", "float", "double"})
_REDUCES = frozenset({"sum", "mean"})


def stacked_items(
    a: ModuleAnalysis,
    node: cst.CSTNode,
    target: cst.BaseAssignTargetExpression,
    source: cst.BaseExpression,
    parts: list[cst.CSTNode],
    *,
    other_uses: bool = False,
) -> tuple[cst.Call, str, cst.BaseExpression, str] | None:
    """For ``k, v`` in ``d.items()`` (``target``, ``source``) whose ``parts`` read ``v`` in one
    ``.item()`` after value-preserving methods (``cpu`` dropped: the stack goes to the host once;
    a reduction only before it) and use it nowhere else (unless ``other_uses``): that read,
    ``v``, the mapping, and the stacked values (``torch.stack([...]).tolist() if d else []``)."""
    torch = a.torch_alias_at(node)
    if (
        torch is None
        or not isinstance(target, cst.Tuple)
        or len(target.elements) != 2
        or not all(isinstance(e, cst.Element) and isinstance(e.value, cst.Name) for e in target.elements)
        or not isinstance(source, cst.Call)
        or source.args
        or not isinstance(source.func, cst.Attribute)
        or source.func.attr.value != "items"
    ):
        return None
    key, var = (e.value.value for e in target.elements)  # type: ignore[attr-defined]
    mapping = source.func.value
    if key == var or not isinstance(mapping, cst.Name) or mapping.value in (key, var):
        return None  # the mapping is read three times: a plain name only (a property may change)
    reads: list[cst.Call] = []
    uses = 0
    nested = 0

    class V(cst.CSTVisitor):
        def visit_Name(self, n: cst.Name) -> None:
            nonlocal uses
            uses += n.value == var

        def visit_Call(self, call: cst.Call) -> None:
            read = a.host_read(call) or a.likely.host_read(call)
            if not nested and read is not None and read.form == "item" and _value_methods(read.receiver, var) is not None:
                reads.append(call)

        def visit_Lambda(self, n: cst.Lambda) -> None:
            nonlocal nested
            nested += 1  # a read there runs later, or never: not moved up front

        def leave_Lambda(self, n: cst.Lambda) -> None:
            nonlocal nested
            nested -= 1

        visit_ListComp = visit_SetComp = visit_DictComp = visit_GeneratorExp = visit_Lambda  # type: ignore[assignment]
        leave_ListComp = leave_SetComp = leave_DictComp = leave_GeneratorExp = leave_Lambda  # type: ignore[assignment]

    for part in parts:
        walk(part, V())
    if len(reads) != 1 or (uses != 1 and not other_uses):
        return None  # ``v`` used elsewhere (as a tensor), in a nested scope, or not read with ``.item()``
    read = a.likely.host_read(reads[0])
    assert read is not None
    methods = _value_methods(read.receiver, var)
    assert methods is not None
    if a.likely.value(root_name(reads[0])).device is Device.CPU or _unstackable(a, mapping):
        return None  # no sync to save (the value before ``.cpu()``: that copy is a sync too)
    if _tensordict(a, mapping):
        return None  # not a plain dict: ``if d`` of a TensorDict raises
    element = "".join(f".{m}()" for m in methods if m != "cpu")
    m = a.module.code_for_node(mapping)
    stack = f"{torch}.stack([{var}{element}.reshape(()) for {var} in {m}.values()]).tolist() if {m} else []"
    return reads[0], var, mapping, stack


def dict_values(a: ModuleAnalysis, node: cst.DictComp) -> tuple[cst.Call, cst.DictComp] | None:
    """``{k: v.item() / n for k, v in d.items()}`` where code repeats: the read, and the
    comprehension over the stack's values with the read as ``v``."""
    comp = node.for_in
    if comp.inner_for_in is not None or comp.ifs or comp.asynchronous or not a.is_hot(node):
        return None
    stacked = stacked_items(a, node, comp.target, comp.iter, [node.key, node.value])
    if stacked is None:
        return None
    read, var, mapping, stack = stacked
    pairs = cst.parse_expression(f"zip({a.module.code_for_node(mapping)}.keys(), {stack})")
    new = node.with_changes(value=node.value.deep_replace(read, cst.Name(var)), for_in=comp.with_changes(iter=pairs))
    return read, new


def items_loop(a: ModuleAnalysis, loop: cst.For) -> tuple[cst.Call, dict] | None:
    """``for k, v in d.items(): ... v.item() ...`` where code repeats: the read and the changes
    that iterate the stack's values instead. Where ``v`` is bound only by this loop and used only
    in that read (after the loop it would be a number, not a tensor), the read becomes ``v``;
    where later statements of the body use ``v`` too, the loop keeps it and names the read:
    ``for (k, v), v_mean in zip(d.items(), ...)``."""
    if loop.orelse is not None or loop.asynchronous is not None or not a.is_hot(loop):
        return None
    stacked = stacked_items(a, loop, loop.target, loop.iter, [loop.body], other_uses=True)
    if stacked is None:
        return None
    read, var, mapping, stack = stacked
    m = a.module.code_for_node(mapping)
    scope = a.scope(read)
    target = loop.target
    assert isinstance(target, cst.Tuple)
    name = target.elements[1].value
    mine = [asg for asg in scope.assignments[var] if getattr(asg, "node", None) is name] if scope else []
    if len(mine) != 1:
        return None
    if _used_up_to_read(a, loop, read, var, m):
        return None  # the read moved up front would run before code that may write the tensor
    root = root_name(read)
    if any(  # LibCST's references: every use of the name in reach of the scope
        access.node is not root
        and (access.scope is not scope or not isinstance(access.node, cst.Name) or mine[0] in a.bindings(access.node))
        for access in mine[0].references
    ):
        # ``v`` stays the tensor (used later in the body, after the loop, or in a closure); the
        # read gets a name of its own
        number = a.fresh_name(f"{var}_{_read_name(read, var)}")
        pair = cst.parse_expression(f"({a.module.code_for_node(target.elements[0].value)}, {var})")
        comma = cst.Comma(whitespace_after=cst.SimpleWhitespace(" "))
        new_target = cst.Tuple([cst.Element(pair, comma=comma), cst.Element(cst.Name(number))], lpar=[], rpar=[])
        pairs = cst.parse_expression(f"zip({m}.items(), {stack})")
        return read, {loop.iter: pairs, target: new_target, read: cst.Name(number)}
    return read, {loop.iter: cst.parse_expression(f"zip({m}.keys(), {stack})"), read: cst.Name(var)}


def _used_up_to_read(a: ModuleAnalysis, loop: cst.For, read: cst.Call, var: str, mapping: str) -> bool:
    """Could code the read now runs ahead of touch the values: a use of ``var`` or of the mapping
    in or before the body's statement that reads it, a call there that runs before the read (it
    may write the tensor through another name: ``all_reduce(d[k])``), a use of the mapping or an
    in-place write after it (it runs before the next value's read), or a ``yield``/``await`` in
    the body (its caller runs between reads)? True also when the read is not in the body."""
    body = loop.body.body if isinstance(loop.body, cst.IndentedBlock) else [loop.body]
    holder = next((i for i, stmt in enumerate(body) if any(n is stmt for n in a.ancestors(read))), None)
    if holder is None or any(a.nodes_within(stmt, cst.Yield) or a.nodes_within(stmt, cst.Await) for stmt in body):
        return True
    root = root_name(read)
    upto = body[: holder + 1]
    if any(n is not root for stmt in upto for n in _names(a, stmt, var)) or any(_names(a, stmt, mapping) for stmt in upto):
        return True
    # the statements after the read run before the next value's read too: no use of the mapping
    # there (``for t in d.values(): t.zero_()``) and no in-place write through any name
    after = body[holder + 1 :]
    if any(_names(a, stmt, mapping) or a.effects(stmt).inplace for stmt in after):
        return True
    around = set(map(id, a.ancestors(read)))
    inside = set(map(id, a.nodes_within(read, cst.Call)))
    calls = [c for stmt in upto for c in a.nodes_within(stmt, cst.Call)]
    return any(id(c) not in around and id(c) not in inside for c in calls)


def _names(a: ModuleAnalysis, node: cst.CSTNode, var: str) -> list[cst.CSTNode]:
    return [n for n in a.nodes_within(node, cst.Name) if isinstance(n, cst.Name) and n.value == var]


def _read_name(read: cst.Call, var: str) -> str:
    """``mean`` for ``v.mean().item()``, ``item`` for ``v.detach().item()``."""
    methods = _value_methods(read.func.value, var) if isinstance(read.func, cst.Attribute) else None
    return next((m for m in reversed(methods or []) if m in _REDUCES), "item")


def stacked_read(a: ModuleAnalysis, call: cst.Call) -> bool:
    """Is ``call`` (``v.item()``, or a method call before it: ``v.cpu()``) a read of a mapping's
    value that :func:`dict_values` or :func:`items_loop` reads with one stack?"""
    node: cst.CSTNode = call
    while True:  # up the method chain to the ``.item()`` call
        parent = a.parent(node)
        grand = a.parent(parent) if isinstance(parent, cst.Attribute) and parent.value is node else None
        if not isinstance(grand, cst.Call) or grand.func is not parent:
            break
        node = grand
    for anc in a.ancestors(node):
        if isinstance(anc, cst.DictComp):
            found = dict_values(a, anc)
            return found is not None and found[0] is node
        if isinstance(anc, cst.For):
            loop = items_loop(a, anc) if isinstance(anc.target, cst.Tuple) else None
            return loop is not None and loop[0] is node
        if isinstance(anc, (cst.FunctionDef, cst.Lambda, cst.ClassDef, cst.ListComp, cst.SetComp, cst.GeneratorExp)):
            return False
    return False


def host_dict(a: ModuleAnalysis, mapping: cst.BaseExpression) -> bool:
    """Is ``mapping`` a name bound only to dict displays of values provably on the host (CPU
    tensors, numbers, numpy values)? Reading them syncs nothing."""
    values = _display_values(a, mapping)
    return values is not None and all(_on_host(a, v) for v in values)


def _unstackable(a: ModuleAnalysis, mapping: cst.BaseExpression) -> bool:
    """Is ``mapping`` a name bound only to dict displays where some value is provably on the host
    (a stack with GPU tensors raises), or whose tensors provably differ in dtype kind (a stack
    would promote them: a bool read back as ``1``)?"""
    values = _display_values(a, mapping)
    if values is None:
        return False
    return any(_on_host(a, v) for v in values) or len({a.dtype_kind(v) for v in values} - {None}) > 1


def _tensordict(a: ModuleAnalysis, mapping: cst.BaseExpression, depth: int = 0) -> bool:
    """Is ``mapping`` (through its bindings, and the receivers of methods called on them) made by
    a ``TensorDict`` class (torchrl's ``losses.apply(...)`` of ``TensorDict(...)``)? Its truth
    value raises, which the stack's ``if d else []`` takes: not a plain dict."""
    if depth > 4:
        return False
    if isinstance(mapping, cst.Call):
        func = mapping.func
        if "TensorDict" in (a.callee(mapping) or dotted_name(func) or ""):
            return True
        return isinstance(func, cst.Attribute) and _tensordict(a, func.value, depth + 1)
    if isinstance(mapping, cst.Name):
        return any(_tensordict(a, v, depth + 1) for v in a.reaching_values(mapping) or ())  # type: ignore[arg-type]
    return False


def _display_values(a: ModuleAnalysis, mapping: cst.BaseExpression) -> list[cst.BaseExpression] | None:
    if not isinstance(mapping, cst.Name):
        return None
    bound = a.reaching_values(mapping)
    if not bound or not all(isinstance(d, cst.Dict) for d in bound):
        return None
    return [e.value for d in bound for e in d.elements if isinstance(e, cst.DictElement)]  # type: ignore[attr-defined]


def _on_host(a: ModuleAnalysis, value: cst.BaseExpression) -> bool:
    return a.value(value).device is Device.CPU or a.is_host_data(value)


def root_name(call: cst.BaseExpression) -> cst.BaseExpression:
    """``v`` of ``v.detach().cpu().item()``."""
    while isinstance(call, cst.Call) and isinstance(call.func, cst.Attribute):
        call = call.func.value
    return call


def _value_methods(expr: cst.BaseExpression, var: str) -> list[str] | None:
    """``var.m1().m2()`` -> ``["m1", "m2"]``, for methods that keep the values (a reduction only
    before any ``cpu()``: moved to the device, its sum may be ordered differently)."""
    methods: list[str] = []
    while isinstance(expr, cst.Call) and isinstance(expr.func, cst.Attribute) and not expr.args:
        methods.append(expr.func.attr.value)
        expr = expr.func.value
    if not (isinstance(expr, cst.Name) and expr.value == var):
        return None
    methods.reverse()
    for i, name in enumerate(methods):
        if name in _REDUCES and "cpu" in methods[:i]:
            return None
        if name not in _KEEPS_VALUES | _REDUCES:
            return None
    return methods
