"""Devices: which device an expression denotes (:func:`device_of`; strings, ints,
``torch.device``), where ``.to(...)`` moves a tensor (:func:`to_target`), and device *origins*:
the one device expression a tensor was placed with (``x.to(device)`` and every op of its result
share the origin ``device``), so a rewrite can create new tensors on it. The device of a tensor
value itself is part of its :class:`~.values.Value` (provenance.py).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import libcst as cst

from .bindings import fact_of_name
from .dtypes import is_dtype
from .syntax import keyword, positional
from .torch_api import NON_TENSOR_NAMESPACES
from .values import OTHER, Device, Kind, Value

if TYPE_CHECKING:
    from .module import ModuleAnalysis


def device_origin(a: ModuleAnalysis, expr: cst.BaseExpression) -> str | None:
    """The code of the one device expression a tensor was placed with (``device`` for
    ``x.to(device)``, ``"cuda"`` for ``x.cuda()``), or None when not provably one.

    Tensors with the same origin are on the same device. Operations keep the origin of their
    tensor operands; operands of unknown origin are ignored (a PyTorch op with tensors on two
    devices raises, except CPU 0-d operands, which do not decide the result's device).

    Known gap: if the operand with the known origin is itself a CPU 0-d tensor (its origin a
    device that may be the CPU) and the unknown one is on CUDA, an element-wise op runs on
    CUDA and the origin is wrong. A rewrite built on it then raises a device mismatch where
    the original ran; it never changes a number. Ruling it out needs a "not 0-d" fact the
    analysis does not track yet (requiring a CUDA origin instead loses the common
    ``x.to(device)`` evaluation loops).
    """
    if isinstance(expr, cst.Name):
        return fact_of_name(a, expr, a.device_origin)
    if isinstance(expr, cst.Subscript):
        return a.device_origin(expr.value)
    if isinstance(expr, (cst.BinaryOperation, cst.Comparison, cst.UnaryOperation)):
        operands: list[cst.BaseExpression]
        if isinstance(expr, cst.BinaryOperation):
            operands = [expr.left, expr.right]
        elif isinstance(expr, cst.Comparison):
            operands = [expr.left, *(c.comparator for c in expr.comparisons)]
        else:
            operands = [expr.expression]
        return _one_origin(a, operands)
    if not isinstance(expr, cst.Call):
        return None
    func = expr.func
    name = a.direct_callee(expr)
    if name is not None and name.startswith("torch."):
        dev = keyword(expr, "device")
        if dev is not None:
            return _device_code(a, dev.value)
        if name.startswith(NON_TENSOR_NAMESPACES) and name != "torch.nn.utils.clip_grad_norm_":
            return None
        return _one_origin(a, [arg.value for arg in expr.args])
    # ``x.to(device)`` of an ``x`` that may be a tensor (a batch of unknown origin) places it;
    # if ``x`` is something else it is no tensor operand of what follows, so it decides nothing.
    receiver_kind = a.value(func.value).kind if isinstance(func, cst.Attribute) else None
    if receiver_kind in (Kind.TENSOR, Kind.BATCH, Kind.UNKNOWN) and isinstance(func, cst.Attribute) and (
        receiver_kind is not Kind.UNKNOWN or func.attr.value in ("to", "cuda")
    ):
        method = func.attr.value
        if method == "cuda":
            return '"cuda"' if not expr.args else None
        if method == "cpu":
            return '"cpu"'
        if method == "to":
            target = a.to_target(expr)
            if target is None:
                return a.device_origin(func.value)
            dev = keyword(expr, "device") or next(iter(positional(expr)), None)
            return _device_code(a, dev.value) if dev is not None else None
        return a.device_origin(func.value)
    if a.value(func).kind is Kind.MODULE:
        return _one_origin(a, [arg.value for arg in expr.args])
    return None


def _one_origin(a: ModuleAnalysis, operands: Sequence[cst.BaseExpression]) -> str | None:
    # Only tensors have an origin, so Python numbers among the operands drop out here.
    origins = {a.device_origin(o) for o in operands}
    origins.discard(None)
    return origins.pop() if len(origins) == 1 else None


def _device_code(a: ModuleAnalysis, expr: cst.BaseExpression) -> str | None:
    """A device expression as stable code: a string literal, or a name bound once."""
    if a.value(expr).kind is not Kind.DEVICE:
        return None
    if isinstance(expr, cst.SimpleString):
        return '"' + expr.evaluated_value + '"' if isinstance(expr.evaluated_value, str) else None
    if isinstance(expr, cst.Name) and a.bound_once(expr):
        return expr.value
    return None


def device_of(a: ModuleAnalysis, expr: cst.CSTNode) -> Device:
    """The device a device-like expression (string, int, ``torch.device``, name) denotes."""
    v = a.value(expr)
    return v.device if v.kind is Kind.DEVICE else Device.UNKNOWN


def to_target(a: ModuleAnalysis, call: cst.Call) -> Device | None:
    """The device a ``.to(...)`` call moves to, or None when it names no device we know.

    ``Device.UNKNOWN`` means: it names a device, but which one is not provable.
    """
    dev = keyword(call, "device")
    if dev is not None:
        return a.device_of(dev.value)
    args = positional(call)
    if not args:
        return None
    first = args[0].value
    v = a.value(first)
    if v.kind is Kind.DEVICE:
        return v.device
    if v.kind is Kind.NUMBER and isinstance(first, cst.Integer):
        return Device.CUDA
    if v.is_tensor:
        return Device.UNKNOWN  # ``.to(other_tensor)``: device and dtype of another tensor
    if is_dtype(a, first):
        return None
    return Device.UNKNOWN


def string_device(expr: cst.BaseExpression) -> Value:
    """A string as a device: ``"cuda"``, ``"cuda:1"`` and ``"cpu"`` are devices, any other string is not."""
    text = expr.evaluated_value if hasattr(expr, "evaluated_value") else None
    if isinstance(text, bytes):
        return OTHER
    if text == "cuda" or (isinstance(text, str) and text.startswith("cuda:") and text[5:].isdigit()):
        return Value(Kind.DEVICE, Device.CUDA)
    if text == "cpu":
        return Value(Kind.DEVICE, Device.CPU)
    return OTHER  # "mps", "meta", or any other string: not a device we can prove


def fstring_device(expr: cst.FormattedString) -> Value:
    """``f"cuda:{rank}"`` is a CUDA device; any other f-string is not a device we can prove."""
    parts = expr.parts
    if (
        parts
        and isinstance(parts[0], cst.FormattedStringText)
        and parts[0].value == "cuda:"
        and len(parts) == 2
        and isinstance(parts[1], cst.FormattedStringExpression)
        and parts[1].format_spec is None
        and parts[1].conversion is None
    ):
        return Value(Kind.DEVICE, Device.CUDA)
    return OTHER
