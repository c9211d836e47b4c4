"""Lists of tensors the code builds itself, whose elements are provably alike.

``sizes = [torch.zeros(1, dtype=torch.int32, device=d) for _ in range(world)]`` filled by
``dist.all_gather(sizes, t)`` holds tensors of one dtype, device and shape: one expression made
each of them, with the same inputs, and the collective writes into them in place. That is what a
single ``torch.stack``/``torch.cat`` of the list needs to read exactly what per-element reads
read (SFX303).
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

import libcst as cst
from libcst.metadata import Assignment, FunctionScope

from ..walk import walk
from .bindings import fact_of_name
from .syntax import keyword, target_names
from .values import Device, Kind, Memory, Value, join_all

if TYPE_CHECKING:
    from .module import ModuleAnalysis

# Calls that write into the tensors of the list given as their first argument, in place, keeping
# each tensor's dtype, device and shape, and never add, drop or replace list items.
IN_PLACE_LIST_FILLERS = frozenset({"torch.distributed.all_gather"})


def uniform_list_element(
    a: ModuleAnalysis, name: cst.Name, read: cst.CSTNode
) -> cst.BaseExpression | None:
    """The element expression ``e`` when ``name``, used inside ``read``, is provably a list
    ``[e for v in it]`` of tensors alike in dtype, device and shape, else None.

    Proven when: exactly one binding reaches ``name`` and it is such a list comprehension (one
    ``for``, not async); ``e`` is a fresh tensor, evaluated without effects and without the
    loop's names, so every evaluation sees the same inputs and gives the same dtype, device and
    shape; and the list is used nowhere but inside ``read`` and as the output list of a call that
    fills it in place (``torch.distributed.all_gather`` without ``async_op``), so nothing adds,
    replaces or reshapes an item before ``read``."""
    reaching = a.bindings(name)
    if len(reaching) != 1:
        return None
    (asg,) = reaching
    values = a.reaching_values(name)
    if not isinstance(asg, Assignment) or not values or len(values) != 1:
        return None
    comp = values[0]
    if not isinstance(comp, cst.ListComp):
        return None
    loop = comp.for_in
    if loop.inner_for_in is not None or loop.asynchronous is not None:
        return None
    if any(not a.is_effect_free(cond.test) for cond in loop.ifs):
        return None  # ``if (n := n + 1)`` would change the element's inputs between elements
    elt = comp.elt
    if _mentions(elt, {n.value for n in target_names(loop.target)}):
        return None
    value = a.value(elt)
    if not value.is_tensor or not value.fresh or not a.is_effect_free(elt):
        return None
    for access in asg.references:  # LibCST's are every use of the name in the scope
        node = access.node
        if isinstance(node, cst.Name) and _served_by_another(a, node, comp):
            continue  # a use after the name is bound again
        if not (_inside(a, node, read) or _filled_in_place(a, node)):
            return None
    return elt


def is_scalar_list(a: ModuleAnalysis, expr: cst.BaseExpression) -> bool:
    """Is ``expr`` provably a list of Python scalars, never of sequences: ``[v.item() for v in
    xs]`` over a list of alike tensors built here, ``t.tolist()`` of a 1-D tensor, a display
    or comprehension of Python numbers, or either branch of a conditional of those (``[]``)?"""
    if isinstance(expr, cst.Name):  # every binding that holds here is one
        return fact_of_name(a, expr, a.is_scalar_list) is True
    if isinstance(expr, cst.IfExp):
        return is_scalar_list(a, expr.body) and is_scalar_list(a, expr.orelse)
    if isinstance(expr, cst.List):
        return all(
            not isinstance(el, cst.StarredElement) and a.python_number_type(el.value) is not None
            for el in expr.elements
        )
    if isinstance(expr, cst.ListComp):
        elt, loop = expr.elt, expr.for_in
        if a.python_number_type(elt) is not None:
            return True
        return (  # ``[v.item() for v in xs]``: item() gives a Python scalar or raises
            isinstance(elt, cst.Call)
            and not elt.args
            and isinstance(elt.func, cst.Attribute)
            and elt.func.attr.value == "item"
            and isinstance(elt.func.value, cst.Name)
            and isinstance(loop.target, cst.Name)
            and elt.func.value.value == loop.target.value
            and loop.inner_for_in is None
            and isinstance(loop.iter, cst.Name)
            and uniform_list_element(a, loop.iter, expr) is not None
        )
    if isinstance(expr, cst.Call) and isinstance(expr.func, cst.Attribute) and not expr.args:
        return expr.func.attr.value == "tolist" and a.is_one_dim(expr.func.value)
    return False


def _served_by_another(a: ModuleAnalysis, use: cst.Name, comp: cst.ListComp) -> bool:
    nearest = a.binding_values(use)
    return nearest is not None and all(v is not comp for v in nearest)


def _mentions(expr: cst.CSTNode, names: set[str]) -> bool:
    found = False

    class V(cst.CSTVisitor):
        def visit_Name(self, node: cst.Name) -> None:
            nonlocal found
            found = found or node.value in names

    walk(expr, V())
    return found


def _inside(a: ModuleAnalysis, node: cst.CSTNode, outer: cst.CSTNode) -> bool:
    return node is outer or any(anc is outer for anc in a.ancestors(node))


def _filled_in_place(a: ModuleAnalysis, node: cst.CSTNode) -> bool:
    """Is ``node`` the first argument of a synchronous ``all_gather``-like call?"""
    arg = a.parent(node)
    call = a.parent(arg) if isinstance(arg, cst.Arg) else None
    if not isinstance(call, cst.Call) or not call.args or call.args[0] is not arg or arg.keyword or arg.star:
        return False
    if a.callee(call) not in IN_PLACE_LIST_FILLERS:
        return False
    async_op = keyword(call, "async_op")
    return async_op is None or (isinstance(async_op.value, cst.Name) and async_op.value.value == "False")


# Methods of a dict or list that read it without changing it.
_READING_METHODS = frozenset({"items", "values", "keys", "get", "index", "count", "copy"})
# Builtins that read a dict or list given alone, and put nothing in it.
_READING_BUILTINS = frozenset({"builtins.len", "builtins.sorted", "builtins.list", "builtins.tuple", "builtins.set"})


def held_item(a: ModuleAnalysis, expr: cst.Subscript) -> Value | None:
    """``dataloaders[phase]`` of ``dataloaders = {x: DataLoader(...) for x in ...}`` (a dict or
    list display or comprehension whose every value is a loader): the join of those loaders; and
    likewise an item of one whose every value is a tensor on a device syncfix names (EDVR's
    ``{folder: torch.mean(t, dim=0).cpu() for ...}``): where the items are, not their memory.
    None otherwise. Only a name bound once, that no other file imports, whose every other use in
    the module reads an item (``d[k]``, ``d.items()``...) or stores one of the same kind
    (``d["DG"] = DataLoader(...)``): nothing else can put another object in it (Person_reID's,
    the transfer-learning tutorial's)."""
    return held_by(a, expr.value)


def held_by(a: ModuleAnalysis, holder: cst.BaseExpression) -> Value | None:
    """What each item of the dict or list ``holder`` is, as :func:`held_item` says, or None."""
    if not isinstance(holder, cst.Name) or a.imported_elsewhere(holder.value):
        return None
    values = a.reaching_values(holder)
    if not values or len(values) != 1:
        return None
    items = _held_items(values[0])
    if not items or not all(_held_kind(a.value(item)) for item in items):
        return None  # (before the scan of the module's names below: most containers hold neither)
    # a function's own variable is used only there (a same-named one elsewhere is another)
    scopes = {asg.scope for asg in a.bindings(holder)}
    scope = next(iter(scopes)) if len(scopes) == 1 else None
    own = scope.node if isinstance(scope, FunctionScope) else None
    for use in a.structure.of_type(cst.Name):
        if not isinstance(use, cst.Name) or use.value != holder.value or use is holder:
            continue
        if own is not None and not any(anc is own for anc in a.ancestors(use)):
            continue
        parent = a.parent(use)
        if isinstance(parent, cst.Subscript) and parent.value is use:
            store = _stored_item(a, parent)
            if isinstance(store, bool):
                return None
            if store is not None:
                items.append(store)
            continue
        if isinstance(parent, cst.Attribute) and parent.value is use and parent.attr.value in _READING_METHODS:
            continue
        call = a.parent(parent) if isinstance(parent, cst.Arg) else None
        if isinstance(call, cst.Call) and len(call.args) == 1 and a.callee(call) in _READING_BUILTINS:
            continue  # ``len(d)``: reads it
        if _bound_here(a, use, values[0]):
            continue
        return None
    held = [a.value(item) for item in items]
    kinds = {_held_kind(v) for v in held}
    if len(kinds) != 1 or None in kinds:
        return None
    if kinds == {Kind.TENSOR}:
        # where the tensors are, not that nothing else holds them: an item read may be written
        # through another read of the container
        return replace(join_all(held), memory=Memory.UNKNOWN, fresh=False)
    return join_all(held)


def _held_kind(v: Value) -> Kind | None:
    """The kinds of item :func:`held_item` follows: loaders, and tensors on a device it names."""
    if v.kind is Kind.LOADER:
        return Kind.LOADER
    if v.kind is Kind.TENSOR and v.device in (Device.CPU, Device.CUDA):
        return Kind.TENSOR
    return None


def _held_items(value: cst.CSTNode) -> list[cst.BaseExpression]:
    if isinstance(value, cst.DictComp):
        return [value.value]
    if isinstance(value, cst.ListComp):
        return [value.elt]
    if isinstance(value, cst.Dict) and all(isinstance(el, cst.DictElement) for el in value.elements):
        return [el.value for el in value.elements]
    if isinstance(value, cst.List) and all(isinstance(el, cst.Element) for el in value.elements):
        return [el.value for el in value.elements]
    return []


def _stored_item(a: ModuleAnalysis, sub: cst.Subscript) -> cst.BaseExpression | bool | None:
    """For ``d[k]``: None where it is read, the value where ``d[k] = value`` stores it, False
    where it is deleted, augmented or stored otherwise."""
    parent = a.parent(sub)
    if isinstance(parent, cst.AssignTarget):
        assign = a.parent(parent)
        return assign.value if isinstance(assign, cst.Assign) and len(assign.targets) == 1 else False
    node: cst.CSTNode = sub
    while isinstance(parent, (cst.Element, cst.StarredElement, cst.Tuple, cst.List)):
        node, parent = parent, a.parent(parent)  # ``a, d[k] = ...``: a target inside a target
    if isinstance(parent, (cst.AssignTarget, cst.AugAssign, cst.AnnAssign, cst.Del)):
        return False
    if isinstance(parent, (cst.For, cst.CompFor)) and parent.target is node:
        return False
    if isinstance(parent, cst.AsName) and parent.name is node:
        return False
    return None


def _bound_here(a: ModuleAnalysis, use: cst.Name, value: cst.CSTNode) -> bool:
    """Is ``use`` the target of the one binding (``dataloaders = {...}``)?"""
    parent = a.parent(use)
    assign = a.parent(parent) if isinstance(parent, cst.AssignTarget) else None
    return isinstance(assign, cst.Assign) and assign.value is value


def filled_items(a: ModuleAnalysis, name: cst.Name) -> list[cst.BaseExpression]:
    """What the list ``name`` holds where it is read: the items its function puts into a
    ``name = []`` with ``name.append(x)`` or ``name += [x, y]``, where every binding reaching
    this use is such an empty list; empty where syncfix cannot list them (the list is changed,
    passed on or read otherwise: ``ims[0]`` and ``len(ims)`` only look). In a loop, uses after
    this one count too (they may come round before it)."""
    fn = a.enclosing_function(name)
    bound = a.reaching_values(name)
    if fn is None or not bound or not all(_empty_list_or_added(v) for v in bound):
        return []
    items: list[cst.BaseExpression] = []
    order = a.structure.order
    looped = a.enclosing_loop(name) is not None
    for use in a.structure.within(fn, cst.Name):
        if not isinstance(use, cst.Name) or use.value != name.value or use is name:
            continue
        if not looped and order.get(use, -1) > order.get(name, -1):
            continue  # after the list is read (``return losses``)
        parent = a.parent(use)
        grand = a.parent(parent) if parent is not None else None
        if isinstance(parent, cst.Attribute) and parent.value is use and isinstance(grand, cst.Call) and parent.attr.value == "append":
            if len(grand.args) != 1 or grand.args[0].keyword is not None or grand.args[0].star:
                return []
            items.append(grand.args[0].value)
        elif isinstance(parent, cst.AugAssign) and parent.target is use:
            added = _empty_list_or_added(parent) and parent.value
            if not isinstance(added, cst.List):
                return []
            items.extend(el.value for el in added.elements if isinstance(el, cst.Element))
        elif isinstance(parent, cst.Subscript) and parent.value is use:
            if isinstance(grand, (cst.AssignTarget, cst.AugAssign, cst.Del)):
                return []  # ``ims[0] = t``: a store
        elif isinstance(parent, cst.Arg) and isinstance(grand, cst.Call) and a.callee(grand) == "builtins.len":
            continue
        elif not isinstance(parent, cst.AssignTarget):
            return []  # read or changed otherwise: its items are not only the ones put in
    return items


def _empty_list_or_added(value: cst.CSTNode) -> bool:
    """``[]``, or ``name += [x, ...]`` (a display of plain items: it adds them)."""
    if isinstance(value, cst.List):
        return not value.elements
    return (
        isinstance(value, cst.AugAssign)
        and isinstance(value.operator, cst.AddAssign)
        and isinstance(value.value, cst.List)
        and all(isinstance(el, cst.Element) for el in value.value.elements)
    )

