"""What may share or change a tensor's memory, for the rules that keep a tensor to read later or
make a copy non-blocking.

- Whether a copy's source may be written after a non-blocking copy is queued (SFX101, SFX103):
  :func:`source_may_change`, with everything that may share the source's memory (views, items
  of a batch, ``.numpy()``, ``memoryview``...) and what can reach it without its name
  (containers, objects, closures, globals).
- The other names for a tensor's memory bound in a function (``d = loss.detach()``, ``ema =
  loss``, ``box = [loss]``): :func:`aliases_in` (SFX401, SFX403, SFX404).
"""

from __future__ import annotations

from collections.abc import Collection
from typing import TypeVar

import libcst as cst

from syncfix.analysis import (
    METHOD_MAYBE_SELF,
    METHODS_TAKING_MEMORY,
    SHARING_CALLS,
    Device,
    Effects,
    Kind,
    ModuleAnalysis,
    dotted_name,
    is_inplace_method,
    keyword,
    positional,
    root_name,
)
from syncfix.walk import walk

from ._bound_names import (
    after_in_blocks,
    assigned_pairs,
    batch_items,
    fresh_batches,
    iteration_bindings,
    names_in,
    simple_statements,
)
from ._support import imported_modules

# ---- copies: may the source change after a non-blocking copy is queued? ----

# ``*args``/``**kwargs`` may pass ``non_blocking``: not a call whose flag we can judge
PASSED_ON = cst.Arg(cst.Name("_"))


def non_blocking_flag(a: ModuleAnalysis, call: cst.Call) -> cst.Arg | None:
    """The argument that passes ``non_blocking``, by keyword or by position (``.cuda(0, False)``,
    ``.to("cuda", torch.half, False)``, ``.to(other, False)``); None where none does, and
    ``PASSED_ON`` where a starred argument may."""
    kw = keyword(call, "non_blocking")
    if kw is not None:
        return kw
    if any(arg.star for arg in call.args):
        return PASSED_ON
    args = positional(call)
    func = call.func
    assert isinstance(func, cst.Attribute)
    # ``cuda(device, non_blocking)``, ``to(other, non_blocking)``, ``to(device, dtype, non_blocking)``
    # (``to(dtype, non_blocking)`` is a cast, never fixed)
    at = 2 if func.attr.value == "to" and args and not a.value(args[0].value).is_tensor else 1
    return args[at] if len(args) > at else None



def copies_without_waiting(a: ModuleAnalysis, call: cst.Call) -> bool:
    """Does ``x.cuda(...)``/``x.to(...)``/``x.copy_(...)`` pass ``non_blocking`` other than a
    literal False (by keyword, by position, or possibly through ``*args``)?"""
    flag = non_blocking_flag(a, call)
    return flag is PASSED_ON or (flag is not None and not (isinstance(flag.value, cst.Name) and flag.value.value == "False"))


def _derived_from(a: ModuleAnalysis, expr: cst.BaseExpression) -> bool:
    """Is ``expr`` an index of a tensor or a tensor method's result, whose memory is the
    tensor's (a view, an in-place method) or new (but ``METHODS_TAKING_MEMORY``, which the
    caller handles)?"""
    if isinstance(expr, cst.Subscript):
        return a.value(expr.value).is_tensor
    return (
        isinstance(expr, cst.Call)
        and isinstance(expr.func, cst.Attribute)
        and a.value(expr.func.value).is_tensor
        and a.value(expr).is_tensor
    )


def source_may_change(
    a: ModuleAnalysis,
    call: cst.Call,
    *,
    passed_on: bool = True,
    escapes: bool = True,
    strict: bool = False,
    on_cuda: bool = False,
) -> bool:
    """Could the memory ``call`` (``x.cuda()``, ``x.to(...)``) copies from be written after the
    copy is queued (so a non-blocking copy could read the new data)? Used by SFX101 and SFX103.
    With ``passed_on=False`` only writes in this function count, not code the source is passed
    to (for a source already assumed fresh, whose loader nothing else refills). With
    ``escapes=False`` a source other code can reach without its name (:func:`_escapes`) counts
    as unchanged (for an unsafe fix, which names that assumption). With ``strict`` (for a safe
    fix), ``y = x.to(device)`` to a device syncfix cannot name is another name for ``x`` (the
    device may be the CPU, and then ``.to`` returns ``x`` itself). With ``on_cuda`` (for a
    change that matters only where the copy is to CUDA: pinning), ``.to(device)`` to any device
    not provably the CPU is a copy."""
    assert isinstance(call.func, cst.Attribute)
    copies = Copies(_ON_CUDA_TARGETS if on_cuda else {Device.CUDA} if strict else _COPY_TARGETS)
    copies.device = _device_named(a, call)
    source = call.func.value
    while True:
        if isinstance(source, cst.Call) and (a.callee(source) or "").startswith("torch."):
            base = a.result_base(source)
            if base is None:
                return False  # a torch op's result owns new storage: nothing else can reach it
            source = base  # a view (torch.narrow(buf, ...)), ``out=``: the base is what matters
        elif isinstance(source, cst.Call) and a.callee(source) in SHARING_CALLS and positional(source):
            source = positional(source)[0].value  # ``np.asarray(buf)``: ``buf``'s memory
        elif (
            isinstance(source, cst.Call)
            and isinstance(source.func, cst.Attribute)
            and source.func.attr.value in METHODS_TAKING_MEMORY
            and source.args
        ):
            return True  # ``t.set_(buf)``, ``t.new(buf)``: another tensor's memory, whatever writes it
        elif _derived_from(a, source):
            # a view or a new tensor from a tensor (``torch.tensor(ids).reshape(1, -1)[None]``):
            # at most the receiver's memory
            if isinstance(source, cst.Call):
                assert isinstance(source.func, cst.Attribute)
                source = source.func.value
            else:
                assert isinstance(source, cst.Subscript)
                source = source.value
        else:
            break
    walrus = isinstance(source, cst.NamedExpr) and isinstance(source.target, cst.Name)
    if isinstance(source, cst.NamedExpr) and isinstance(source.target, cst.Name):
        source = source.target  # ``(z := staging).cuda()``: the name keeps it (it is no copy)
    root = root_name(source)
    if root is None:
        return False  # a temporary: nothing else can reach it
    stmt = a.statement_of(call)
    scope_node = a.enclosing_function(call) or a.module
    statements = list(simple_statements(scope_node))
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

    # Names the copy's own statement binds to new memory (``x = x.cuda()``, lightly's DINO loop
    # ``views = [v.to(d) for v in views]``): after it they name the copies, not the source.
    rebound: set[str] = set()
    if isinstance(stmt, (cst.SimpleStatementLine, cst.SimpleStatementSuite)) and not walrus:
        rebound = {
            t for t, value in assigned_pairs(stmt)
            if (origin := _alias_root(value, a, copies)) is None or origin.startswith("\0new")
        }

    def through_rebound(origin: str | None, node: cst.CSTNode) -> bool:
        return origin in rebound and order.get(node, -1) > order.get(call, -1)

    # Where the source is a comprehension's own variable (``[view.to(d) for view in views]``),
    # another binding of that name, outside the comprehension, is another variable (lightly's
    # DINO loop iterates ``for view in global_views`` later, over the copies).
    own, comprehension = None, None
    for anc in a.ancestors(call):
        if isinstance(anc, (cst.ListComp, cst.SetComp, cst.GeneratorExp, cst.DictComp)):
            clause: cst.CompFor | None = anc.for_in
            while clause is not None and root not in set(names_in(clause.target)):
                clause = clause.inner_for_in
            if clause is not None:
                own, comprehension = clause, anc
                break

    def other_variable(target: str, node: cst.CSTNode) -> bool:
        return (
            comprehension is not None and target == root
            and node is not own.iter  # type: ignore[union-attr]
            and not any(anc is comprehension for anc in a.ancestors(node))
        )

    pairs = [
        (target, origin)
        for s in statements
        if s is not stmt
        for target, value in assigned_pairs(s)
        if (target != root or reaches(s))
        and not through_rebound(origin := _alias_root(value, a, copies), s)
        and not other_variable(target, s)
    ]
    # ``(z := staging)``: z is the source too
    pairs += [
        (n.target.value, _alias_root(n.value, a, copies))
        for n in _within(a, scope_node, cst.NamedExpr)
        if isinstance(n.target, cst.Name)
    ]
    # A batch of a loader whose batches are fresh is no part of the loader (it keeps none): its
    # items are items of that one batch only.
    def inert(target: str, it: cst.CSTNode) -> bool:
        # another comprehension's variable that nothing in it writes through (yolo-v3's ``[(a[0]
        # / stride, ...) for a in anchors]``): no alias of the function's own ``a`` later
        clause = a.parent(it)
        if not isinstance(clause, cst.CompFor) or clause.iter is not it:
            return False
        comp: cst.CSTNode | None = clause
        while isinstance(comp, cst.CompFor):
            comp = a.parent(comp)
        if comp is None or comp is comprehension:
            return False
        fx = a.effects(comp)
        return target not in fx.inplace and not any(
            not a.is_pure_call(call) and any(n.value == target for n in _within(a, call, cst.Name))
            for call in fx.calls
        )

    pairs += [
        (target, f"\0batch{id(it)}" if fresh_batches(a, it) else _alias_root(it, a, copies))
        for target, it in iteration_bindings(scope_node, a)
        if not through_rebound(_alias_root(it, a, copies), it) and not other_variable(target, it)
        and not inert(target, it)
    ]
    # Items of one fresh batch unpacked into names (``for x, y in loader``, or ``x, y = data`` of
    # ``for data in loader``) are distinct tensors (the default collate stacks each anew): a write
    # to one reaches no other, so the way down from the batch skips the source's siblings
    # (Person_reID's ``model(inputs)`` after ``labels.cuda()``).
    items = batch_items(a, scope_node, statements)
    siblings = items if any(t == root for t, _ in items) else set()
    # Up from the source to what it is a view or an item of, then down to every view or item
    # of those. (Not up from a view found on the way down: ``x = vae(x)`` after the loop's
    # ``for x, y in loader`` binds a new ``x``, which makes ``vae`` no part of the batch.)
    aliases = {root}
    for upward in (True, False):
        changed = True
        while changed:
            changed = False
            for target, origin in pairs:
                if origin is None or not upward and (target, origin) in siblings:
                    continue
                new, old = (origin, target) if upward else (target, origin)
                if old in aliases and new not in aliases:
                    aliases.add(new)
                    changed = True
    # ``x = x.cuda()`` rebinds x: later uses of x are the copy, not the source.
    rebinds = stmt is not None and root in a.effects(stmt).writes and not walrus
    watched = aliases - ({root} | rebound if rebinds else rebound)
    # the comprehension's own variable is no name outside it
    outside = watched - {root} if comprehension is not None else watched
    if escapes and passed_on and (
        _escapes(a, scope_node, outside, copies)
        or comprehension is not None and root in watched and _escapes(a, comprehension, {root}, copies)
        or _free(a, root_node, scope_node)
    ):
        return True
    # The statement that binds the source, before the copy and in no loop of this function
    # around it (mbrl-lib's ``(states, actions) = memory.sample(n)``), makes it: a call there that
    # may write what it reads wrote before the copy was queued. (An in-place write before the
    # copy still counts: the next call of the function refills the buffer, ``buf.copy_(x)``.)
    loops = set()
    for anc in a.ancestors(call):
        if anc is scope_node:
            break
        if isinstance(anc, (cst.For, cst.While)):
            loops.add(id(anc))

    def binds_before(s: cst.CSTNode, fx: Effects) -> bool:
        # (the source's own name too, where the copy rebinds it: ``x = f(im); x = x.cuda()``)
        return bool(fx.writes & (watched | {root})) and order.get(s, -1) < order.get(call, -1) and not any(
            id(x) in loops for x in a.ancestors(s)
        )

    # Names a later statement of the copy's own block binds to new memory (yolov4-pytorch's
    # ``targets = [ann.cuda() for ann in targets]`` after ``images = images.cuda()``): from there
    # on they name that, not anything the source shares memory with.
    # So do later statements of each block around it, up to the function (YOLOP's validation:
    # ``for tgt in target: assign_target.append(tgt.to(device))``, then ``target = assign_target``
    # before ``target[0][:, 2:] *= ...``, which writes the copies).
    renewed = [
        (order.get(r, -1), t)
        for r in after_in_blocks(a, stmt, scope_node)
        if order.get(r, -1) > order.get(call, -1) and isinstance(r, cst.SimpleStatementLine)
        for t, value in assigned_pairs(r)
        if (origin := _alias_root(value, a, copies)) is None or origin.startswith("\0new")
        or isinstance(value, cst.Name) and _list_of_copies(a, value.value, scope_node, copies)
    ]
    for s in statements:
        fx = a.effects(s)
        seen = watched if s is stmt else outside
        seen = seen - {t for at, t in renewed if at < order.get(s, -1)}
        if (fx.inplace - _entry_store(a, s)) & seen:
            return True
        if passed_on and s is not stmt and fx.may_mutate_anything and not binds_before(s, fx) and _reads_shared(
            a, s, fx.reads & seen, seen, copies
        ):
            return True
    return False


def _list_of_copies(a: ModuleAnalysis, name: str, scope: cst.CSTNode, copies: Collection[Device]) -> bool:
    """Is ``name`` bound in ``scope`` only to empty lists, and used only to ``append`` copies
    (``assign_target.append(tgt.to(device))``) or read by index? Then it holds new memory."""
    uses = [n for n in _within(a, scope, cst.Name) if n.value == name]
    for n in uses:
        parent = a.parent(n)
        if isinstance(parent, cst.AssignTarget):
            assign = a.parent(parent)
            if not (isinstance(assign, cst.Assign) and isinstance(assign.value, cst.List) and not assign.value.elements):
                return False
        elif isinstance(parent, cst.Attribute) and parent.value is n:
            call = a.parent(parent)
            if parent.attr.value != "append" or not (isinstance(call, cst.Call) and call.func is parent and len(call.args) == 1):
                return False
            origin = _alias_root(call.args[0].value, a, copies)
            if origin is not None and not origin.startswith("\0new"):
                return False
        elif not (isinstance(parent, cst.Assign) and parent.value is n):
            return False  # handed on, iterated, indexed...: others may fill or write it
    return True


def _entry_store(a: ModuleAnalysis, s: cst.CSTNode) -> frozenset[str]:
    """``batch[k] = batch[k].to(device)`` in ``for k in batch.keys():``: the statement puts a
    new object under a key of a mapping (the one whose keys ``k`` runs over, or a string key),
    or into a list (``inputs[i] = inputs[i].cuda()`` under ``if isinstance(inputs, list):``),
    writing no tensor's memory. The name of that mapping or list, where nothing in the value
    writes in place; else nothing."""
    if not (isinstance(s, cst.SimpleStatementLine) and len(s.body) == 1 and isinstance(s.body[0], cst.Assign)):
        return frozenset()
    assign = s.body[0]
    targets = [t.target for t in assign.targets]
    if not all(isinstance(t, cst.Subscript) and isinstance(t.value, cst.Name) and len(t.slice) == 1 for t in targets):
        return frozenset()
    if any(
        isinstance(c.func, cst.Attribute) and is_inplace_method(c.func.attr.value) or keyword(c, "out") is not None
        for c in _within(a, assign.value, cst.Call)
    ):
        return frozenset()
    names = set()
    for t in targets:
        assert isinstance(t, cst.Subscript) and isinstance(t.value, cst.Name)
        index = t.slice[0].slice
        listed = a.narrowed_kind(t.value) is Kind.OTHER
        if not (isinstance(index, cst.Index) and (listed or _key_of(a, index.value, t.value))):
            return frozenset()
        names.add(t.value.value)
    return frozenset(names)


def _key_of(a: ModuleAnalysis, key: cst.BaseExpression, mapping: cst.Name) -> bool:
    """Is ``key`` a string, or a name a ``for`` binds to the keys of ``mapping`` (``for k in
    m.keys()``, ``for k, v in m.items()``, ``for k in m`` of a value that is no tensor)?"""
    if isinstance(key, (cst.SimpleString, cst.ConcatenatedString, cst.FormattedString)):
        return True
    if not isinstance(key, cst.Name):
        return False
    for anc in a.ancestors(key):
        if not isinstance(anc, cst.For):
            continue
        target, it = anc.target, anc.iter
        if isinstance(it, cst.Call) and isinstance(it.func, cst.Attribute) and not it.args:
            method, owner = it.func.attr.value, it.func.value
            if isinstance(owner, cst.Name) and owner.value == mapping.value:
                if method == "keys" and isinstance(target, cst.Name) and target.value == key.value:
                    return True
                if method == "items" and isinstance(target, cst.Tuple) and target.elements:
                    first = target.elements[0].value
                    return isinstance(first, cst.Name) and first.value == key.value
        if isinstance(it, cst.Name) and it.value == mapping.value and isinstance(target, cst.Name) and target.value == key.value:
            return not a.value(it).is_tensor and a.value(it).kind is not Kind.NDARRAY
    return False


def _escapes(
    a: ModuleAnalysis, scope_node: cst.CSTNode, names: set[str], copies: Collection[Device] = frozenset()
) -> bool:
    """Can the memory of ``names`` (the source and what shares it) be reached by code that
    writes it without naming it here? Kept in a container or on an object (``keep = [x]``,
    ``h.x = x``), written through a call's view (``np.asarray(x)[:] = v``), handed out
    (``return x``, ``yield x``), shared with a nested function or lambda, or a global."""
    if not names:
        return False

    def rooted(expr: cst.CSTNode | None) -> bool:
        """Does ``expr`` evaluate to memory of ``names`` (not ``x.shape[0]``; not a name bound
        since to something else, as ``x`` after ``x = x.cuda()``)?"""
        if not isinstance(expr, cst.BaseExpression) or _alias_root(expr, a, copies) not in names:
            return False
        if any(isinstance(n, cst.Attribute) and n.attr.value in _METADATA for n in _within(a, expr, cst.Attribute)):
            return False
        node = _root_node(expr)
        values = a.binding_values(node) if node is not None else None
        return values is None or not values or any(_alias_root(v, a, copies) in names for v in values)

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
    a: ModuleAnalysis,
    stmt: cst.SimpleStatementLine,
    names: set[str],
    watched: set[str],
    copies: Collection[Device] = frozenset(),
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
        if values is None or any(_alias_root(v, a, copies) in watched for v in values):
            return True
    return False


def _only_read(a: ModuleAnalysis, name: cst.Name) -> bool:
    """Is ``name`` only read where it is used: the receiver of a copy or a dict view
    (``batch["x"].to(device)``, ``batch.items()``), of a size or kind (``x.size(0)``), or the
    iterable of a loop or comprehension?"""
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
        if isinstance(parent, cst.FormattedStringExpression):
            return True
        if isinstance(parent, cst.BinaryOperation):
            top = parent
            while isinstance(up := a.parent(top), cst.BinaryOperation) and isinstance(up.operator, cst.Add):
                top = up
            # a batch's file name in a new string (MIRNet's ``dir + names[i][:-4] + ".png"``)
            return _text(top) or isinstance(parent.operator, cst.Modulo) and isinstance(parent.left, _STRINGS)
        if not (isinstance(parent, cst.Attribute) and parent.value is child):
            return False
        if parent.attr.value in _METADATA:
            return True  # ``x.size(0)``, ``x.shape``: sizes and kinds, none of its memory
        call = a.parent(parent)
        if not (isinstance(call, cst.Call) and call.func is parent):
            child, parent = parent, call  # an attribute read (``loader.dataset``)
            continue
        if parent.attr.value in _READING:
            return True
        if parent.attr.value not in METHOD_MAYBE_SELF or parent.attr.value == "requires_grad_":
            return False
        child, parent = call, a.parent(call)  # a cast or view (``batch[1].float().cuda()``)


_STRINGS = (cst.SimpleString, cst.FormattedString, cst.ConcatenatedString)


def _text(expr: cst.BaseExpression) -> bool:
    """A string literal, or a sum holding one (``args.result_dir + "png/"``): an operation with it
    makes a new string (or raises)."""
    return isinstance(expr, _STRINGS) or (
        isinstance(expr, cst.BinaryOperation) and isinstance(expr.operator, cst.Add) and (_text(expr.left) or _text(expr.right))
    )

_COPYING = {"cuda", "clone", "tolist", "item"}
# numpy functions whose result is always new memory (others, ``np.transpose``, may be a view)
_NUMPY_NEW = frozenset({
    "numpy.copy", "numpy.array", "numpy.concatenate", "numpy.stack", "numpy.vstack",
    "numpy.hstack", "numpy.zeros", "numpy.ones", "numpy.empty", "numpy.full", "numpy.arange",
    "numpy.linspace", "numpy.zeros_like", "numpy.ones_like", "numpy.full_like",
})
# (``.numpy()`` and a CPU tensor's ``.cpu()`` hand out its memory, which may then be written)
_READING = _COPYING | {"to", "items", "values", "keys"}
# ``.to(...)`` targets that make a CPU tensor's copy new memory (an unknown device too, except
# for a safe fix: ``strict``, where it may be the CPU and ``.to`` the tensor itself).
_COPY_TARGETS = {Device.CUDA, Device.UNKNOWN}
# With ``on_cuda``: a device that may be the CPU too (where nothing races).
_ON_CUDA_TARGETS = {Device.CUDA, Device.UNKNOWN, Device.CUDA_OR_CPU}


class Copies(frozenset):
    """The ``.to(...)`` targets that make new memory of a CPU tensor, and the device argument of
    the copy asked about (``device`` of ``x.to(device)``), where it holds one value wherever the
    function reads it. That copy races with a later write only where it goes to CUDA, and there
    every ``.to`` of the same device is a CUDA copy too, new memory (UNet's ``true_masks =
    true_masks.to(device=device, ...)`` after ``images.to(device=device, ...)``); where the device
    is the CPU, both return the tensor itself and nothing is copied asynchronously at all."""

    device: tuple[str, frozenset[object]] | None = None


def _device_named(a: ModuleAnalysis, call: cst.Call) -> tuple[str, frozenset[object]] | None:
    """``call``'s device argument, as its code and the one binding of its name that reaches it
    (``device``, or ``args.device`` of an attribute nothing in the module stores), or None."""
    if call.func.attr.value != "to":  # type: ignore[attr-defined]
        return None
    arg = keyword(call, "device")
    args = positional(call)
    expr = arg.value if arg is not None else args[0].value if args else None
    name = expr if isinstance(expr, cst.Name) else None
    if isinstance(expr, cst.Attribute) and isinstance(expr.value, cst.Name) and not a.attribute_set(expr.attr.value):
        name = expr.value
    if name is None or expr is None:
        return None
    bound = a.bindings(name)
    return (dotted_name(expr) or "", frozenset(bound)) if len(bound) == 1 else None


def _same_device(a: ModuleAnalysis, to: cst.Call, copies: Collection[Device]) -> bool:
    """Is ``to`` (a ``.to(...)``) to the device of the copy asked about (:class:`Copies`)?"""
    device = getattr(copies, "device", None)
    return device is not None and _device_named(a, to) == device


_READING_BUILTINS = {"builtins.len", "builtins.isinstance", "builtins.print", "builtins.str",
                     "builtins.repr", "builtins.format", "builtins.type", "builtins.id"}


def _root_node(expr: cst.BaseExpression) -> cst.Name | None:
    while isinstance(expr, (cst.Subscript, cst.Attribute, cst.Call)):
        expr = expr.func if isinstance(expr, cst.Call) else expr.value
        if isinstance(expr, cst.Attribute) and isinstance(expr.value, cst.Call):
            expr = expr.value
    return expr if isinstance(expr, cst.Name) else None


def _alias_root(
    expr: cst.BaseExpression, a: ModuleAnalysis | None = None, copies: Collection[Device] = frozenset()
) -> str | None:
    """Like ``root_name``, but a copy (``.cuda()``, ``.clone()``...) of a CPU source is no alias.
    ``.cpu()``, ``.numpy()`` and ``.to()`` of a CPU tensor may be the tensor itself (or its
    memory), and so are ``memoryview(x)``, ``np.asarray(x)``, ``torch.as_tensor(x)``...; with
    the analysis ``a``, ``.to(...)`` to a device in ``copies`` (:data:`_COPY_TARGETS` when
    empty) is a copy."""
    copies = copies or _COPY_TARGETS
    cur = expr
    while isinstance(cur, (cst.Subscript, cst.Attribute, cst.Call, cst.IfExp, cst.UnaryOperation)):
        if isinstance(cur, cst.UnaryOperation):
            if not isinstance(cur.operator, cst.Plus):
                return None  # ``-x``, ``~x``: new memory
            cur = cur.expression  # ``+x`` is ``x`` itself
        elif isinstance(cur, cst.IfExp):  # ``x if c else None``: either branch
            body = _alias_root(cur.body, a, copies)
            cur = cur.orelse if body is None else cur.body
        elif isinstance(cur, cst.Call):
            args = [arg for arg in cur.args if arg.keyword is None and not arg.star]
            callee = a.callee(cur) if a is not None else None
            if a is not None and args and callee in SHARING_CALLS:
                cur = args[0].value
                continue
            if a is not None and callee is not None and callee.startswith("numpy."):
                if callee in _NUMPY_NEW and not (callee == "numpy.array" and keyword(cur, "copy") is not None):
                    return None  # ``np.copy(x)``: new memory
                if not args:
                    return None
                cur = args[0].value  # ``np.transpose(x)`` may be a view of ``x`` (never ``np``'s own)
                continue
            if a is not None and callee is not None and callee.startswith("torch."):
                base = a.result_base(cur)  # ``torch.narrow(x, ...)``, ``out=x``: ``x``'s memory
                if base is None:
                    # new memory, made here: a root of its own (the names bound to it share it)
                    return f"\0new{id(cur)}"
                cur = base
                continue
            if not isinstance(cur.func, cst.Attribute) or cur.func.attr.value in _COPYING | _METADATA:
                return None  # new memory, or a size or kind (``n, c = x.size()``): none of it
            if cur.func.attr.value == "astype" and keyword(cur, "copy") is None:
                return None  # an array's copy (a tensor has no ``astype``)
            if cur.func.attr.value == "to" and (
                a is None or a.to_target(cur) in copies or _same_device(a, cur, copies)
            ):
                return None  # a cast, or a copy to the CPU, may return the tensor itself
            cur = cur.func.value
        elif isinstance(cur, cst.Attribute) and cur.attr.value in _METADATA:
            return None  # ``n, c, h, w = x.shape``: sizes, none of its memory
        elif isinstance(cur, cst.Subscript) and any(
            isinstance(el.slice, cst.Index) and isinstance(el.slice.value, cst.Comparison) for el in cur.slice
        ):
            return None  # ``t[t[:, 0] == i, 1:]``: indexed by a mask, a copy (YOLOP's ``labels``)
        else:
            cur = cur.value
    return cur.value if isinstance(cur, cst.Name) else None


# ---- names that may share a tensor's memory --------------------------------------------------
# Attributes and methods whose result is no part of the tensor's memory.
_DETACHED_USES = _METADATA | {"item", "tolist"}


def held_elsewhere(a: ModuleAnalysis, scope: cst.CSTNode, names: set[str]) -> bool:
    """May code that does not name them change the tensors ``names`` hold, between two
    statements of ``scope`` (a function)? They, or a tensor they were made from without a copy
    (``w_now = w.detach().float()``: ``w``), are given to an optimizer (``SGD([w])``: ``step()``
    updates them in place), made parameters or buffers, given a gradient hook, shared with a
    nested function, or a global (or an enclosing function's variable)."""
    shared = aliases_in(a, scope, names, upward=True)
    nodes = [n for n in _within(a, a.module, cst.Name) if n.value in shared]
    if any(_bound_outside(a, n, scope) for n in nodes if a.enclosing_function(n) is scope):
        return True
    for n in nodes:
        parent = a.parent(n)
        if isinstance(parent, cst.Attribute) and parent.attr is n or isinstance(parent, cst.Arg) and parent.keyword is n:
            continue  # not a variable
        fn = a.enclosing_function(n)
        if fn is not None and fn is not scope and any(anc is scope for anc in a.ancestors(fn)) and _free(a, n, fn):
            return True  # a nested function names it (not a local of its own)
        if fn is scope and any(isinstance(anc, cst.Lambda) for anc in a.ancestors(n)):
            return True  # a lambda (a hook) names it
        if _captured(a, n):
            return True
    return False


def _bound_outside(a: ModuleAnalysis, name: cst.Name, scope: cst.CSTNode) -> bool:
    """Is ``name`` (read in ``scope``, perhaps in a comprehension) bound outside ``scope``: a
    global, or an enclosing function's variable?"""
    parent = a.parent(name)
    if isinstance(parent, cst.Attribute) and parent.attr is name or isinstance(parent, cst.Arg) and parent.keyword is name:
        return False  # ``x.loss``, ``f(loss=...)``: not a variable
    bindings = a.bindings(name)
    if not bindings:
        return _free(a, name, scope)  # a target (bound here), or a name of no binding
    for asg in bindings:
        node = getattr(asg, "node", None)
        if node is None or not (node is scope or any(anc is scope for anc in a.ancestors(node))):
            return True
    return False


# Calls that keep a tensor to update it in place later (an optimizer's ``step()``, a module's
# parameters and buffers).
_KEEPERS = ("torch.optim.", "torch.nn.Parameter", "torch.nn.parameter.Parameter")
_KEEPING_METHODS = {"register_buffer", "register_parameter", "add_param_group", "register_hook"}


def _captured(a: ModuleAnalysis, name: cst.Name) -> bool:
    """Is ``name`` an argument (or an item of one) of a call that keeps it: ``SGD([w])``,
    ``nn.Parameter(w)``, ``m.register_buffer("b", w)``?"""
    for anc in a.ancestors(name):
        if isinstance(anc, cst.Call):
            func = anc.func
            if isinstance(func, cst.Attribute) and func.attr.value in _KEEPING_METHODS:
                return True
            return (a.callee(anc) or "").startswith(_KEEPERS)
        if not isinstance(anc, (cst.Arg, cst.Element, cst.List, cst.Tuple, cst.Set, cst.Dict, cst.DictElement, cst.StarredElement)):
            return False
    return False


def aliases_in(a: ModuleAnalysis, scope: cst.CSTNode, names: set[str], *, upward: bool = False) -> set[str]:
    """``names`` and every name bound in ``scope`` (not inside nested functions) to a value that
    mentions one of them, to a fixpoint: what may share their memory (``d = loss.detach()``,
    ``box = [loss]``, ``ema = loss`` in an earlier iteration, ``for t in box``); with
    ``upward``, also what they were bound from (``v = x.flatten()``: ``x``). Conservative: a new
    tensor computed from them (``s = loss * 2``) counts too."""
    out = set(names)
    pairs = [(t, v) for s in simple_statements(scope) for t, v in assigned_pairs(s)]
    pairs += list(iteration_bindings(scope))
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
