"""A factory's tensor built on the device (``torch.zeros(n, device=d)``) rather than built on the
host and copied there (``torch.zeros(n).to(d)``): no host tensor and no copy, on every device.

SFX101 offers it where a non-blocking copy is not exact everywhere: a device syncfix cannot name,
which may be an accelerator other than CUDA (MPS, XLA) whose copies it does not prove.
"""

from __future__ import annotations

import libcst as cst

from syncfix.analysis import LEGACY_CONSTRUCTORS, Kind, keyword, named_as_device, positional

from ._support import append_kwarg, code, int_like, kwarg

# What each factory's result depends on besides its device: its own arguments, the same on every
# device. ``torch.arange`` only of Python ints, to an integer dtype (exact everywhere; float
# steps are summed differently on each device). Random factories draw other numbers on another
# device's generator, and ``torch.empty`` has no values to keep.
_ARGUMENTS = {
    "torch.zeros": {"size", "dtype"},
    "torch.ones": {"size", "dtype"},
    "torch.full": {"size", "fill_value", "dtype"},
    "torch.eye": {"n", "m", "dtype"},
    "torch.arange": {"start", "end", "step", "dtype"},
}
_INTEGER_DTYPES = {
    "torch.long", "torch.int64", "torch.int", "torch.int32", "torch.short", "torch.int16",
    "torch.int8", "torch.uint8",
}


def built_on_device(a, call: cst.Call) -> tuple[cst.Call, list[str]] | None:
    """For ``<factory>(...).to(d)`` (or ``.cuda()``): the factory call with ``device=d`` added,
    and the likely facts it rests on (empty where proven): ``"device"`` where only its name says
    ``d`` holds a device, ``"sizes"`` where ``torch.arange``'s bounds are sizes (``B`` of ``B =
    x.shape[0]``), ints of tensors and arrays; None where the factory or the call is not one
    whose result this keeps exactly.

    ``.to(None)`` returns the tensor where ``device=None`` picks the default device, and
    ``.to(t)``/``.to(dtype)`` take another tensor's dtype or a dtype, which ``device=`` does not:
    hence the proof. Under side streams a blocking copy has finished when the next line runs,
    and a factory's fill on the device has not: the caller checks ``uses_streams``.
    """
    func = call.func
    if not isinstance(func, cst.Attribute):
        return None
    top = func.value
    if not isinstance(top, cst.Call):
        return None
    if "#" in code(a, call).replace(code(a, top), "", 1):
        return None  # a comment among ``.to(...)``'s arguments, which the rewrite would drop
    # ``torch.zeros(n).long()``, ``torch.LongTensor(b, n).fill_(-1)``: the factory under methods
    # that give the same result on every device (casts and shape changes of its exact values)
    factory = top
    legacy = _legacy_filled(a, factory)
    while legacy is None and _exact_method(a, factory) and isinstance(factory.func, cst.Attribute) and isinstance(factory.func.value, cst.Call):
        factory = factory.func.value
        legacy = _legacy_filled(a, factory)
    if legacy is not None:
        made, likely = legacy
    elif _exact_everywhere(a, factory, methods=factory is not top):
        made, likely = factory, []
    elif _exact_everywhere(a, factory, likely_sizes=True, methods=factory is not top):
        made, likely = factory, ["sizes"]
    else:
        return None
    if func.attr.value == "cuda":
        if call.args:
            return None  # ``.cuda(None)`` is the current device, ``device=None`` the default one
        device: cst.BaseExpression | None = cst.SimpleString('"cuda"')
    else:
        device = _only_device_argument(call)
        if device is None:
            return None
        if a.value(device).kind is Kind.UNKNOWN and named_as_device(device):
            likely = ["device", *likely]
        elif a.value(device).kind is not Kind.DEVICE:
            return None
    assert device is not None
    built = append_kwarg(made, "device", device)
    return (built if factory is top else top.deep_replace(factory, built)), likely


# Methods whose result is the same on every device for a factory's exact values: casts (of
# zeros, ones and integer ranges, exact in every dtype), shape changes, and a fill with a number.
_CASTS = {"long", "int", "short", "byte", "char", "bool", "float", "double", "half", "bfloat16"}
# (Not ``expand``: its zero strides survive on the device, where a copy is dense and writable.)
_SHAPES = {"view", "reshape", "unsqueeze", "squeeze", "flatten", "t", "repeat", "contiguous"}


def _exact_method(a, call: cst.Call) -> bool:
    func = call.func
    if not isinstance(func, cst.Attribute) or any(arg.keyword is not None or arg.star for arg in call.args):
        return False
    name = func.attr.value
    if name in _CASTS or name == "zero_":
        return not call.args
    if name == "fill_":
        return len(call.args) == 1 and a.python_number_type(call.args[0].value) is not None
    return name in _SHAPES and all(a.python_number_type(arg.value) == "int" for arg in call.args)


def _legacy_filled(a, call: cst.Call) -> tuple[cst.Call, list[str]] | None:
    """``torch.LongTensor(b, n).fill_(v)`` (or ``.zero_()``): the same tensor made by
    ``torch.zeros``/``torch.full`` with its dtype, and the likely facts it rests on (``"sizes"``
    where the sizes are not provably ints); None for anything else. (The legacy constructor's
    memory is uninitialized until the fill.)"""
    func = call.func
    if not (isinstance(func, cst.Attribute) and func.attr.value in ("fill_", "zero_") and isinstance(func.value, cst.Call)):
        return None
    legacy = func.value
    name = a.callee(legacy) or ""
    dtype = LEGACY_CONSTRUCTORS.get(name.removeprefix("torch."), None) if name.count(".") == 1 else None
    torch = a.torch_alias_at(call)
    args = legacy.args
    if dtype is None or torch is None or not _exact_method(a, call) or not args:
        return None
    if any(arg.keyword is not None or arg.star for arg in args):
        return None
    if len(args) == 1 and a.python_number_type(args[0].value) != "int":
        return None  # one argument may be data to copy or a tensor to share
    likely = [] if all(a.python_number_type(arg.value) == "int" for arg in args) else ["sizes"]
    if likely and not all(_size_of(a, arg.value) or a.python_number_type(arg.value) == "int" for arg in args):
        return None
    fill = call.args[0].value if call.args else cst.Integer("0")
    number = a.literal_number(fill)
    sizes = [arg.with_changes(comma=cst.MaybeSentinel.DEFAULT) for arg in args]
    typed = kwarg("dtype", cst.parse_expression(dtype.replace("torch", torch, 1)))
    if number in (0, 1) and not isinstance(number, bool):
        return cst.Call(cst.parse_expression(f"{torch}.{'zeros' if number == 0 else 'ones'}"), [*sizes, typed]), likely
    shape = cst.Tuple([cst.Element(arg.value) for arg in args])
    return cst.Call(cst.parse_expression(f"{torch}.full"), [cst.Arg(shape), cst.Arg(fill), typed]), likely


# Factories whose values are 0 and 1 only, exact in every dtype: ``.to(other)`` may convert them.
_ZEROS_AND_ONES = {"torch.zeros", "torch.ones", "torch.eye"}


def built_like(a, call: cst.Call, *, likely: bool = False) -> cst.Call | None:
    """For ``torch.zeros(...).to(t)`` (or ``.type_as(t)``) with ``t`` provably a tensor (its
    device *and* dtype): the factory with ``dtype=t.dtype, device=t.device``; None otherwise. Only
    factories of zeros and ones, which every dtype holds exactly (a fill converted from float32
    would not match one made in float64), without a dtype of their own, and ``t`` a name or
    attribute (read twice). (``type_as`` moves to the *current* CUDA device, not ``t``'s: the
    caller says so.) With ``likely``, ``t`` may be a tensor in the likely view only (a parameter
    the function uses as a tensor), for an unsafe fix."""
    func = call.func
    if not (isinstance(func, cst.Attribute) and func.attr.value in ("to", "type_as") and isinstance(func.value, cst.Call)):
        return None
    factory = func.value
    if a.callee(factory) not in _ZEROS_AND_ONES or keyword(factory, "dtype") is not None:
        return None
    if not _exact_everywhere(a, factory):
        return None
    other = _only_device_argument(call)
    if other is None or not positional(call) or not _plain_reference(other):
        return None  # ``.to(device=t)`` of a tensor ``t`` raises: not a form to rewrite
    if not (a.value(other).is_tensor or likely and a.likely.value(other).is_tensor):
        return None
    built = append_kwarg(factory, "dtype", cst.Attribute(other, cst.Name("dtype")))
    return append_kwarg(built, "device", cst.Attribute(other, cst.Name("device")))


def _plain_reference(expr: cst.BaseExpression) -> bool:
    while isinstance(expr, cst.Attribute):
        expr = expr.value
    return isinstance(expr, cst.Name)


def _exact_everywhere(a, factory: cst.Call, *, likely_sizes: bool = False, methods: bool = False) -> bool:
    """With ``likely_sizes``, ``torch.arange``'s bounds may be sizes, ints by a likely fact.
    With ``methods`` (exact methods follow, casts among them), not ``torch.full``, whose fill
    a cast might take out of a dtype's range."""
    name = a.callee(factory)
    allowed = _ARGUMENTS.get(name or "")
    if allowed is None or methods and name == "torch.full":
        return False
    if any(arg.keyword is not None and arg.keyword.value not in allowed for arg in factory.args):
        return False  # ``device=``, ``out=``, ``requires_grad=``, ``pin_memory=``, ``layout=``...
    args = positional(factory)
    if any(arg.star for arg in factory.args) and name not in ("torch.zeros", "torch.ones"):
        return False
    if name == "torch.full":
        fill = keyword(factory, "fill_value") or (args[1] if len(args) > 1 else None)
        # a tensor fill is read on the host by the CPU factory: keep to Python numbers
        return fill is not None and a.python_number_type(fill.value) is not None
    if name == "torch.arange":
        dtype = keyword(factory, "dtype")
        if dtype is not None and not a.qualnames(dtype.value) & _INTEGER_DTYPES:
            return False
        return bool(args) and all(
            a.python_number_type(arg.value) == "int" or likely_sizes and _size_of(a, arg.value)
            for arg in factory.args
            if arg is not dtype
        )
    return True


def _size_of(a, expr: cst.BaseExpression) -> bool:
    """A size (``x.shape[0]``, ``x.size(0)``), or a name every binding of which is one."""
    if isinstance(expr, cst.Name):
        values = a.reaching_values(expr)
        return bool(values) and all(isinstance(v, cst.BaseExpression) and int_like(a, v) for v in values)
    return int_like(a, expr)


def _only_device_argument(call: cst.Call) -> cst.BaseExpression | None:
    """The device of ``.to(d)`` / ``.to(device=d)`` (also with ``non_blocking=False``)."""
    named = {arg.keyword.value: arg.value for arg in call.args if arg.keyword is not None}
    args = positional(call)
    flag = named.pop("non_blocking", None)
    if flag is not None and not (isinstance(flag, cst.Name) and flag.value == "False"):
        return None
    if any(arg.star for arg in call.args):
        return None
    if len(args) == 1 and not named:
        return args[0].value
    if not args and set(named) == {"device"}:
        return named["device"]
    return None
