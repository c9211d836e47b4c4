"""Sizes: values that are Python ints by the likely fact that a shape's items are ints.

``x.shape[i]``, ``x.size(i)``, ``x.numel()`` and ``x.dim()`` are ints for tensors and numpy
arrays alike, so they are ints wherever ``x`` is either, without proving which. A fact of the
likely view: unsafe fixes may rest on it, and it may keep a value from being taken for a tensor
(a module's ``return x, T`` with ``B, C, T, H, W = x.shape``), never prove a safe fix.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import libcst as cst
from libcst.metadata import Assignment

from .syntax import element_at

if TYPE_CHECKING:
    from .module import ModuleAnalysis

SIZE_METHODS = frozenset({"size", "numel", "dim"})


def likely_size(a: ModuleAnalysis, expr: cst.BaseExpression, *, follow: bool = False) -> bool:
    """Is ``expr`` provably an int, or a size (``x.shape[i]``, ``x.size(i)``, ``x.numel()``)?
    With ``follow``, also a name every binding of which gives one: ``n = x.size(0)``, or an
    item of ``b, c, h, w = x.shape``."""
    if a.python_number_type(expr) == "int":
        return True
    if follow and isinstance(expr, cst.Name):
        bindings = a.bindings(expr)
        return bool(bindings) and all(_binds_size(a, binding) for binding in bindings)
    if isinstance(expr, cst.Subscript) and len(expr.slice) == 1:
        return _is_shape(expr.value) and isinstance(expr.slice[0].slice, cst.Index)
    if isinstance(expr, cst.Call) and isinstance(expr.func, cst.Attribute) and not any(arg.keyword or arg.star for arg in expr.args):
        method = expr.func.attr.value
        return method in SIZE_METHODS and len(expr.args) == (method == "size")
    return False


def _is_shape(expr: cst.BaseExpression) -> bool:
    return isinstance(expr, cst.Attribute) and expr.attr.value == "shape"


def _binds_size(a: ModuleAnalysis, binding: object) -> bool:
    """``n = <size>``, or ``n`` unpacked from ``x.shape`` or from a tuple display's size."""
    node = getattr(binding, "node", None)
    if not isinstance(binding, Assignment) or not isinstance(node, cst.Name):
        return False
    path, binder = a.target_path(node)
    if not isinstance(binder, cst.AssignTarget):
        return False
    value = a.parent(binder).value  # type: ignore[union-attr]
    if path and _is_shape(value):
        return len(path) == 1 and _unpacked_plainly(a, node)
    element = element_at(value, path)
    return element is not None and likely_size(a, element)


def _unpacked_plainly(a: ModuleAnalysis, node: cst.Name) -> bool:
    """Is ``node`` one plain item of a flat target (``b, c, h, w = x.shape``)? A starred target
    (``b, *rest = x.shape``) binds a list."""
    element = a.parent(node)
    target = a.parent(element) if isinstance(element, cst.Element) else None
    return isinstance(target, (cst.Tuple, cst.List)) and all(isinstance(el, cst.Element) for el in target.elements)
