"""SFX102's ``x.new_tensor(data)``: built on the host, then copied to ``x``'s device.

``new_tensor`` takes ``x``'s dtype and device unless told otherwise, so a number (or a
one-element list of one) is filled there with ``torch.full``, with no copy at all: semseg's
``count = target.new_tensor([n], dtype=torch.long)`` every step.
"""

from __future__ import annotations

import libcst as cst

from syncfix.analysis import Device, Kind, ModuleAnalysis, keyword, positional
from syncfix.rules import Fix, Rule

from ._support import code, int_like

_KEYWORDS = {"dtype", "device", "requires_grad"}
_INT64 = {"torch.int64", "torch.long"}

MESSAGE = "Tensor built on the host and copied to another tensor's device with a blocking copy (`new_tensor`)"
NO_FIX = (
    "; no fix: the data is not provably a number, or a one-element list of one; build it with "
    "`torch.tensor(data, dtype=x.dtype).to(x.device, non_blocking=True)`"
)
_FILL = "Fill on the device with torch.full: the same value, shape, dtype and device"
_UNSAFE = (
    " (unsafe: {}; torch.full converts it to the dtype directly, and an int beyond 2**24 may"
    " round differently to a 32-bit float dtype, which torch.tensor reaches through a double)"
)


def receiver_of(a: ModuleAnalysis, node: cst.Call) -> cst.BaseExpression | None:
    """``x`` of ``x.new_tensor(data, ...)`` where ``x`` is not provably on the CPU (a method only
    tensors have: an unknown receiver is taken for one)."""
    func = node.func
    if not (isinstance(func, cst.Attribute) and func.attr.value == "new_tensor"):
        return None
    x = func.value
    held = a.likely.value(x)
    if held.kind not in (Kind.TENSOR, Kind.UNKNOWN) or held.device is Device.CPU:
        return None
    if held.kind is Kind.UNKNOWN and not a.torch_code:
        return None  # a ``new_tensor`` of something else, in a file that is no torch code
    return x


def fill_fix(rule: Rule, a: ModuleAnalysis, node: cst.Call, x: cst.BaseExpression) -> Fix | None:
    """``x.new_tensor(v)`` -> ``torch.full((), v, dtype=x.dtype, device=x.device)`` (``(1,)``
    for ``[v]``), keeping the call's own ``dtype``/``device``/``requires_grad``."""
    args = positional(node)
    torch = a.torch_alias_at(node)
    if torch is None or len(args) != 1 or any(arg.star for arg in node.args):
        return None
    if {arg.keyword.value for arg in node.args if arg.keyword is not None} - _KEYWORDS:
        return None
    data = args[0].value
    shape = "()"
    if isinstance(data, cst.List) and len(data.elements) == 1 and isinstance(data.elements[0], cst.Element):
        data, shape = data.elements[0].value, "(1,)"
    number = a.python_number_type(data)
    if number is None and not int_like(a, data, follow=True):
        return None
    dtype = keyword(node, "dtype")
    device = keyword(node, "device")
    xs = code(a, x)
    parts = [shape, code(a, data)]
    parts.append(f"dtype={code(a, dtype.value) if dtype is not None else xs + '.dtype'}")
    parts.append(f"device={code(a, device.value) if device is not None else xs + '.device'}")
    grad = keyword(node, "requires_grad")
    if grad is not None:
        parts.append(f"requires_grad={code(a, grad.value)}")
    if not (a.is_effect_free(x) and a.is_effect_free(data)):
        return None  # ``x`` is read after ``data`` in the fill (and twice without ``device=``)
    new = cst.parse_expression(f"{torch}.full({', '.join(parts)})")
    exact_int = (
        number == "int"
        and a.int64_by_construction(data)
        and dtype is not None
        and a.qualname(dtype.value) in _INT64
    )
    if exact_int and a.value(x).is_tensor:
        return rule.safe_fix({node: new}, _FILL)
    if exact_int:
        return rule.unsafe_fix({node: new}, _FILL + f" (unsafe: `{xs}` is taken to be a tensor)")
    what = f"`{code(a, data)}` is a Python {number}" if number else f"`{code(a, data)}` is taken to be a Python int, as sizes are"
    return rule.unsafe_fix({node: new}, _FILL + _UNSAFE.format(what))
