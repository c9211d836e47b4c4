"""Copies to the host that a loop only collects for later (``feats.append(out.cpu())``): what
SFX105 says of them, and when such a copy is known to be a tensor's."""

from __future__ import annotations

import libcst as cst

from syncfix.analysis import Kind, root_name

# Calls that only collect a value for later (the loop does not look at it now). Not ``put``: a
# queue's consumer or a streamer (``streamer.put(tokens.cpu())``) reads the value at once.
_COLLECTORS = {"append", "extend"}
# Joins of a list of tensors (a list of anything else raises).
_JOINS = frozenset({"torch.cat", "torch.concat", "torch.concatenate", "torch.stack", "torch.vstack", "torch.hstack"})
# Applied to the copy without reading its bytes (``.tolist()``/``.float()`` read them;
# ``.numpy()`` is a view of them: stylegan2's ``distances.append(dist.to("cpu").numpy())``).
_NO_READ = {"detach", "numpy"}


def collected_for_joining(a, node: cst.Call) -> bool:
    """``feats.append(out.cpu())`` in repeating code, where the function later joins
    ``feats`` with ``torch.cat``/``torch.stack``: the copies are tensors (a module's
    ``.cpu()`` returns the module, which cannot be joined), of a device syncfix cannot name
    (open_clip's evaluation: the model passed in)."""
    func = node.func
    if not (isinstance(func, cst.Attribute) and func.attr.value == "cpu" and not node.args and a.is_hot(node)):
        return False
    parent = a.parent(node)
    call = a.parent(parent) if isinstance(parent, cst.Arg) else None
    added = _added_to(a, node)
    if added is not None:
        name = added.value
    elif (
        isinstance(call, cst.Call)
        and isinstance(call.func, cst.Attribute)
        and call.func.attr.value == "append"
        and isinstance(call.func.value, cst.Name)
        and len(call.args) == 1
    ):
        name = call.func.value.value
    else:
        return False
    scope = a.enclosing_function(node) or a.module
    return any(
        (a.callee(c) or "") in _JOINS
        and bool(c.args)
        and isinstance(c.args[0].value, cst.Name)
        and c.args[0].value.value == name
        for c in a.structure.within(scope, cst.Call)
        if isinstance(c, cst.Call)
    )


def collected(a, node: cst.Call) -> bool:
    """Is the copied value only stored away (appended, put in a container) at this point?"""
    cur: cst.CSTNode = node
    parent = a.parent(cur)
    as_array = False
    while (  # ``x.cpu().detach()`` is still just the copy
        isinstance(parent, cst.Attribute)
        and parent.attr.value in _NO_READ
        and isinstance(call := a.parent(parent), cst.Call)
    ):
        as_array = as_array or parent.attr.value == "numpy"
        cur = call
        parent = a.parent(cur)
    if isinstance(parent, cst.Arg):
        call = a.parent(parent)
        if not (
            isinstance(call, cst.Call)
            and isinstance(call.func, cst.Attribute)
            and call.func.attr.value in _COLLECTORS
        ) or _own_method(a, call):
            return False
        containers = [call.func.value]
    elif isinstance(parent, cst.Assign) and all(_keeps_reference(a, t.target, as_array) for t in parent.targets):
        containers = [t.target for t in parent.targets]
    elif (added := _added_to(a, cur)) is not None:
        containers = [added]
    else:
        return False
    # and nothing else in the loop reads the container (``images[k] = torch.clamp(images[k])``
    # on the next line would read the host copy before a non-blocking copy filled it)
    loop = a.enclosing_loop(node)
    stmt = a.statement_of(node)
    if loop is None or stmt is None:
        return True
    names = {root_name(c) for c in containers}
    if None in names:
        return False
    return not any(
        names & a.effects(other).reads
        for other in _statements_in(a, loop.body)
        if other is not stmt
    )


def _keeps_reference(a, target: cst.BaseExpression, as_array: bool = False) -> bool:
    """``outs[k] = v``: an item store that may keep ``v`` itself (a list's, a dict's). Not a
    slice store, nor a store into an array or tensor: those copy the values at once
    (``embeddings[i:j] = out.cpu()`` into a numpy array reads the bytes there). An array
    (``as_array``: ``v`` is ``.numpy()`` of the copy) stored into a container syncfix cannot
    name is taken to go into an array too (RETRO's ``memmap[sl] = out.cpu().numpy()``)."""
    if not isinstance(target, cst.Subscript):
        return False
    if any(isinstance(element.slice, cst.Slice) for element in target.slice):
        return False
    held = a.value(target.value)
    if as_array and held.kind is Kind.UNKNOWN:
        return False
    return not (held.is_tensor or held.kind is Kind.NDARRAY)


def _added_to(a, node: cst.CSTNode) -> cst.Name | None:
    """The list ``name`` of ``name += [..., node, ...]`` (BigGAN's ``ims += [o.data.cpu()]``,
    an append), where it is bound to a list display; else None."""
    element = a.parent(node)
    display = a.parent(element) if isinstance(element, cst.Element) else None
    aug = a.parent(display) if isinstance(display, cst.List) else None
    if not (isinstance(aug, cst.AugAssign) and aug.value is display and isinstance(aug.operator, cst.AddAssign)):
        return None
    target = aug.target
    made = a.reaching_values(target) if isinstance(target, cst.Name) else None
    # ``x += [t]`` of an array or tensor would add, not store: only a name bound to lists
    if not made or not all(isinstance(m, (cst.List, cst.ListComp)) or m is aug for m in made):
        return None
    return target  # type: ignore[return-value]


# What a name bound to one of these holds is a builtin container: its ``append`` stores.
_CONTAINER_DISPLAYS = (cst.List, cst.ListComp, cst.Dict, cst.DictComp, cst.Set, cst.SetComp)


def _own_method(a, call: cst.Call) -> bool:
    """``self.append(x)``, or ``stats.append(x)`` where a class of this module defines a method of
    that name and ``stats`` is not bound to a list: the class's code runs, and may read the value
    at once (stylegan2's ``FeatureStats.append`` sums the array it is given), not list.append."""
    func = call.func
    assert isinstance(func, cst.Attribute)
    receiver = func.value
    if isinstance(receiver, cst.Name) and receiver.value in ("self", "cls"):
        return True
    if func.attr.value not in a.class_method_names:
        return False
    made = a.reaching_values(receiver) if isinstance(receiver, cst.Name) else None
    return not made or not all(isinstance(m, _CONTAINER_DISPLAYS) for m in made)


def _statements_in(a, block: cst.CSTNode) -> list[cst.CSTNode]:
    """The simple statements (and one-line bodies) of ``block``, nested blocks included."""
    return [*a.structure.within(block, cst.SimpleStatementLine), *a.structure.within(block, cst.SimpleStatementSuite)]


_GUARDS = (cst.If, cst.IfExp, cst.Try, cst.For, cst.While, cst.BooleanOperation)


def read_again_in(a, loop: cst.CSTNode, read: cst.Call, receiver: cst.BaseExpression) -> int | None:
    """The line of another host read of the same named tensor in ``loop`` (torchtune's
    ``generated_tokens.append(token.item())`` with ``if token.item() in stop_tokens`` at the
    loop's top), or None. Collecting that tensor for later would save no sync: the loop reads
    it anyway."""
    if not isinstance(receiver, cst.Name):
        return None
    # each ancestor of the read, with the child on the way to it (an ``if``'s branch)
    guards: dict[int, cst.CSTNode] = {}
    child: cst.CSTNode = read
    for anc in a.ancestors(read):
        guards[id(anc)] = child
        child = anc
    for call in a.structure.within(loop, cst.Call):
        if call is read:
            continue
        sometimes, child = False, call  # read only sometimes (``if step % 100 == 0: print(...)``)
        for anc in a.ancestors(call):
            if anc is loop:
                break
            in_test = isinstance(anc, (cst.If, cst.While)) and child is anc.test
            if isinstance(anc, _GUARDS) and not in_test and id(anc) not in guards:
                sometimes = True
            if isinstance(anc, cst.If) and id(anc) in guards and guards[id(anc)] is not child:
                sometimes = sometimes or not (child is anc.test or guards[id(anc)] is anc.test)
            child = anc
        if sometimes:
            continue  # not on every pass, or in the other branch of an ``if`` (``use_amp``/``else``)
        other = a.likely.host_read(call)
        if other is not None and isinstance(other.receiver, cst.Name) and other.receiver.value == receiver.value:
            return a.positions[call].start.line
    return None
