"""What SFX101 asks of one copy call (``x.to(...)``, ``x.cuda()``): which device it names, whether
it also converts the dtype, what its receiver is likely to be, and its non-blocking form.

Kept apart from the rule (codemods/blocking_host_to_device.py), which decides from these facts
whether the copy is reported and which fix it gets.
"""

from __future__ import annotations

import libcst as cst

from syncfix.analysis import (
    HOST_FACTORIES,
    LEGACY_CONSTRUCTORS,
    METHOD_MAYBE_SELF,
    Device,
    Kind,
    keyword,
    module_state,
    named_as_device,
    positional,
)

from ._memory import non_blocking_flag
from ._support import append_kwarg, code, kwarg

_ARRAY_CALLS = {"torch.from_numpy", "torch.as_tensor", "torch.asarray"}


_SIZED_FACTORIES = {"torch.empty", "torch.zeros", "torch.ones"}


def converts_dtype(a, call: cst.Call) -> bool:
    """Does ``.to(device, dtype)`` / ``.to(device, dtype=...)`` also convert the dtype (to one
    that is not provably the source's own)?"""
    if call.func.attr.value != "to":  # type: ignore[attr-defined]
        return False
    dtype = keyword(call, "dtype")
    args = positional(call)
    if dtype is None and len(args) == 1 and keyword(call, "device") is None:
        # ``.to(src_tokens)``: another tensor's device *and dtype*, unless it is provably a device
        first = args[0].value
        other = a.value(first)
        if (
            not (other.is_tensor or other.kind is Kind.UNKNOWN)
            or isinstance(first, cst.SimpleString)
            or named_as_device(first.func if isinstance(first, cst.Call) else first)
        ):
            return False  # a device (``args.device``, ``self.gpu_id``, ``"cuda"``), not a tensor
        own, theirs = a.canonical_dtype(call.func.value), a.canonical_dtype(args[0].value)  # type: ignore[attr-defined]
        return own is None or own != theirs
    value = dtype.value if dtype is not None else args[1].value if len(args) >= 2 else None
    if value is None or isinstance(value, cst.Name) and value.value == "None":
        return False
    own, result = a.canonical_dtype(call.func.value), a.canonical_dtype(call)  # type: ignore[attr-defined]
    return own is None or own != result


def from_array(a, expr: cst.BaseExpression) -> bool:
    """Is ``expr`` (through casts such as ``.float()``) a tensor made from an array
    (``torch.from_numpy(x)``, ``torch.as_tensor(x)``, ``torch.asarray(x)``), likely in numpy's
    own memory? Not an array that views another framework's buffer (``t.numpy()``,
    score_sde's ``tf_batch._numpy()``), which may be pinned and reused."""
    while isinstance(expr, cst.Call) and isinstance(expr.func, cst.Attribute) and expr.func.attr.value in METHOD_MAYBE_SELF:
        expr = expr.func.value
    if not (isinstance(expr, cst.Call) and a.callee(expr) in _ARRAY_CALLS):
        return False
    data = expr.args[0].value if expr.args else None
    return not (
        isinstance(data, cst.Call) and isinstance(data.func, cst.Attribute) and data.func.attr.value in ("numpy", "_numpy")
    )


def is_false(expr: cst.BaseExpression) -> bool:
    return isinstance(expr, cst.Name) and expr.value == "False"


def to_names_device(a, call: cst.Call) -> bool:
    """Does ``.to(...)`` name a device at all (rather than another tensor or a dtype)?"""
    if keyword(call, "device") is not None:
        return True
    args = positional(call)
    return bool(args) and not a.value(args[0].value).is_tensor


def likely_other_tensor(a, call: cst.Call) -> bool:
    """``self.q_norm(q).to(v)``, ``(mu.float() - mean).to(mu)``: ``.to`` of one name syncfix
    cannot read whose name says nothing of a device (``v``, ``mu``): in model code, another
    tensor whose dtype (and device) the result takes, seldom a device. Enough to leave a copy of
    a computed tensor unreported (not of one a factory made: ``torch.rand(n).to(y_0)`` copies
    to ``y_0``'s device); never proof of anything."""
    if len(call.args) != 1 or call.args[0].keyword is not None or call.args[0].star:
        return False
    first = call.args[0].value
    if not (isinstance(first, (cst.Name, cst.Attribute)) and a.value(first).kind is Kind.UNKNOWN):
        return False
    receiver = call.func.value  # type: ignore[attr-defined]
    while isinstance(receiver, cst.Call) and isinstance(receiver.func, cst.Attribute) and receiver.func.attr.value in METHOD_MAYBE_SELF:
        receiver = receiver.func.value
    made = a.callee(receiver) if isinstance(receiver, cst.Call) else None
    return not named_as_device(first) and made not in HOST_FACTORIES


def state_to_its_outputs(a, call: cst.Call) -> bool:
    """``self.relative_position_bias_table[idx].view(...).to(dtype=q.dtype, device=q.device)``
    (Swin's attention, every block): a module's own parameter or buffer (through indexing and
    views) moved to the device of a tensor its method computed. The parameter moves with the
    module, so it is on that device already, likely (a model split across devices by hand
    aside): a cast, not a copy. Enough to leave it unreported; never proof of anything."""
    device = device_argument(call)
    if not (
        isinstance(device, cst.Attribute) and device.attr.value == "device" and isinstance(device.value, (cst.Name, cst.Attribute))
        or isinstance(device, cst.Name) and keyword(call, "device") is None and len(call.args) == 1 and not named_as_device(device)
    ):
        return False
    receiver = call.func.value  # type: ignore[attr-defined]
    while True:
        if isinstance(receiver, cst.Subscript):
            receiver = receiver.value
        elif isinstance(receiver, cst.Call) and isinstance(receiver.func, cst.Attribute) and receiver.func.attr.value in METHOD_MAYBE_SELF:
            receiver = receiver.func.value
        else:
            break
    return module_state(a, receiver)


def onto_accumulator(a, call: cst.Call) -> bool:
    """``total += x.to(total.device)``: the summand follows the total's device (as SFX302 writes
    its device totals); the summand was a device value, so no host-to-device copy is expected."""
    target = device_argument(call)
    parent = a.parent(call)
    return (
        isinstance(target, cst.Attribute)
        and target.attr.value == "device"
        and isinstance(target.value, cst.Name)
        and isinstance(parent, cst.AugAssign)
        and parent.value is call
        and isinstance(parent.target, cst.Name)
        and parent.target.value == target.value.value
    )


def expanded(expr: cst.BaseExpression) -> bool:
    """``p.expand(b, -1, -1)``, ``p.repeat(b, 1)`` (through other calls and indexing): a copy
    of the result moves every repeated element, a copy of ``p`` each once."""
    while isinstance(expr, (cst.Call, cst.Subscript)):
        if isinstance(expr, cst.Subscript):
            expr = expr.value
            continue
        if not isinstance(expr.func, cst.Attribute):
            return False
        if expr.func.attr.value in ("expand", "repeat"):
            return True
        expr = expr.func.value
    return False


def after_type_as(call: cst.Call) -> bool:
    """``p.type_as(x).to(x.device)``: ``type_as`` put ``p`` on ``x``'s kind of device already."""
    func = call.func
    assert isinstance(func, cst.Attribute)
    inner = func.value
    if not (isinstance(inner, cst.Call) and isinstance(inner.func, cst.Attribute) and inner.func.attr.value == "type_as"):
        return False
    other = positional(inner)
    device = device_argument(call)
    return (
        len(other) == 1
        and isinstance(other[0].value, cst.Name)
        and isinstance(device, cst.Attribute)
        and device.attr.value == "device"
        and isinstance(device.value, cst.Name)
        and device.value.value == other[0].value.value
    )


def unpacked(a, call: cst.Call) -> bool:
    """``x, y, z = call``: the result is unpacked, as a tuple of tensors is, a tensor rarely."""
    parent = a.parent(call)
    return (
        isinstance(parent, cst.Assign)
        and parent.value is call
        and any(isinstance(t.target, (cst.Tuple, cst.List)) for t in parent.targets)
    )


def device_argument(call: cst.Call) -> cst.BaseExpression | None:
    """The expression naming the target device: ``device=`` or the first argument of ``.to``."""
    func = call.func
    if isinstance(func, cst.Attribute) and func.attr.value == "cuda":
        return None  # ``.cuda(i)``: CUDA whatever ``i`` is
    kw = keyword(call, "device")
    if kw is not None:
        return kw.value
    args = positional(call)
    return args[0].value if args else None


def non_blocking_call(a, node: cst.Call) -> cst.Call:
    func = node.func
    assert isinstance(func, cst.Attribute)
    true = cst.Name("True")
    flag = non_blocking_flag(a, node)
    if flag is not None:  # ``non_blocking=False`` or a positional ``False``
        return node.with_deep_changes(flag, value=true)
    if func.attr.value == "cuda" and not node.args:
        return node.with_changes(
            func=func.with_changes(attr=cst.Name("to")),
            args=[cst.Arg(cst.SimpleString('"cuda"')), kwarg("non_blocking", true)],
        )
    return append_kwarg(node, "non_blocking", true)


def result_dropped(a, node: cst.Call) -> bool:
    """Is the call a statement of its own, its result unused?"""
    parent = a.parent(node)
    return isinstance(parent, cst.Expr) and parent.value is node


def project_narrow_to(a) -> bool:
    """Does a class of the project (any of its files) define a ``to`` that takes no
    ``non_blocking``, so that an object syncfix cannot name may be one of its instances?"""
    return bool(a.narrow_to)


def places_a_module(a, call: cst.Call) -> bool:
    """``model.cuda()``, or ``m = rpc_sync(...).cuda()``, where the name is used as an
    ``nn.Module`` in its function (``m.eval()``, ``m.cpu().parameters()``)."""
    func = call.func
    assert isinstance(func, cst.Attribute)
    if a.used_as_module(func.value):
        return True
    assign = a.parent(call)
    return (
        isinstance(assign, cst.Assign)
        and len(assign.targets) == 1
        and a.used_as_module(assign.targets[0].target)
    )


def _changed_in_place(a, name: cst.Name) -> bool:
    """May a statement of ``name``'s function change its object in place (``holder.set_(buf)``,
    ``shown.data = buf``, an unknown call it is passed to)?"""
    scope = a.enclosing_function(name) or a.module
    for stmt in a.nodes_within(scope, cst.SimpleStatementLine):
        fx = a.effects(stmt)
        if name.value in fx.inplace or (fx.may_mutate_anything and name.value in fx.reads):
            return True
    return False


# Methods that convert a tensor's dtype and keep its elements (none stay none).
_CASTS = frozenset({"long", "int", "float", "double", "half", "bfloat16", "bool", "byte", "short"})


def no_elements(a, expr: cst.BaseExpression, hops: int = 2) -> bool:
    """A tensor made here with no elements: ``torch.empty(0)``, ``torch.zeros((0, n))``,
    ``torch.tensor([])``, ``torch.Tensor([])``, a cast of one (``.long()``), or a name every
    binding of which reaching here is one (retinanet's ``scores = torch.Tensor([])`` before
    ``if torch.cuda.is_available(): scores = scores.cuda()``)."""
    if isinstance(expr, cst.Name) and hops:
        values = a.reaching_values(expr)
        return bool(values) and all(
            isinstance(v, cst.BaseExpression) and no_elements(a, v, hops - 1) for v in values
        ) and not _changed_in_place(a, expr)  # the function's scan last: only for empty bindings
    if not isinstance(expr, cst.Call):
        return False
    func = expr.func
    if isinstance(func, cst.Attribute) and func.attr.value in _CASTS and not expr.args:
        return no_elements(a, func.value, hops)
    name = a.callee(expr) or ""
    args = positional(expr)
    legacy = name.removeprefix("torch.") in LEGACY_CONSTRUCTORS
    if (legacy or name in ("torch.tensor", "torch.as_tensor")) and len(args) == 1 and isinstance(args[0].value, (cst.List, cst.Tuple)):
        return not args[0].value.elements
    if legacy and len(args) >= 2 and len(args) == len(expr.args):
        # ``torch.LongTensor(b, k, 0)``: sizes, one of them 0 (self-critical's beam tables)
        return any(isinstance(s.value, cst.Integer) and s.value.evaluated_value == 0 for s in args)
    if name in _SIZED_FACTORIES and args:
        sizes = args[0].value.elements if len(args) == 1 and isinstance(args[0].value, (cst.Tuple, cst.List)) else args
        return any(isinstance(s.value, cst.Integer) and s.value.evaluated_value == 0 for s in sizes)
    return False


# ---- a CPU tensor copied again each time ----------------------------------------------------

APPENDED_ON_HOST = (
    " (`{}` is a CPU copy the loop keeps (`{}`), copied back to the GPU: keep the device tensor for "
    "the next step and copy only what the host needs; no fix)"
)
KEPT_ON_HOST = (
    " (`{}` is a CPU tensor its class keeps, copied again each time: move it to the device once, "
    "or register it as a buffer; no fix)"
)


def appended_on_host(a, expr: cst.BaseExpression) -> str | None:
    """``xs[-1]`` of a list its loop appends host copies to (ddim's sampler:
    ``xs.append(xt_next.to('cpu'))``, then ``xs[-1].to('cuda')`` the next step): the append's
    text, where every append to the list in the function is of a CPU tensor; else None."""
    if not (isinstance(expr, cst.Subscript) and isinstance(expr.value, cst.Name)):
        return None
    loop, fn = a.enclosing_loop(expr), a.enclosing_function(expr)
    if loop is None or fn is None:
        return None
    name = expr.value.value
    appends = [
        call
        for call in a.structure.within(fn, cst.Call)
        if isinstance(call, cst.Call)
        and isinstance(call.func, cst.Attribute)
        and call.func.attr.value == "append"
        and isinstance(call.func.value, cst.Name)
        and call.func.value.value == name
    ]
    if not appends or not any(any(anc is loop for anc in a.ancestors(c)) for c in appends):
        return None
    for call in appends:
        args = positional(call)
        held = a.likely.value(args[0].value) if len(call.args) == 1 and args else None
        if held is None or not held.is_tensor or held.device is not Device.CPU:
            return None
    text = code(a, appends[-1])
    return text if len(text) <= 60 else f"{name}.append(...)"


def kept_on_host(a, expr: cst.BaseExpression) -> bool:
    """``self.t_array`` that every method of its class sets to a CPU tensor (DPM-Solver's
    ``self.t_array.to(t.device)``, nine times a step): the likely view's attribute value."""
    if not (isinstance(expr, cst.Attribute) and isinstance(expr.value, cst.Name) and expr.value.value == "self"):
        return False
    held = a.likely.value(expr)
    return held.is_tensor and held.device is Device.CPU


def joined_batch(a, expr: cst.BaseExpression) -> bool:
    """Is ``expr`` (or what its name is bound to just before) ``torch.cat``/``torch.stack`` of a
    loader's batch or its parts (SimCLR's ``images = torch.cat(images, dim=0)`` of two views)?"""
    if isinstance(expr, cst.Name):
        bound = a.straight_line_binding(expr, reevaluable=False)
        expr = bound if bound is not None else expr
    if not isinstance(expr, cst.Call) or a.callee(expr) not in ("torch.cat", "torch.stack"):
        return False
    args = positional(expr)
    return bool(args) and a.is_likely_batch_item(args[0].value)
