"""Shapes: proofs that expressions have one shape, are 0-d, hold one element or are 1-D.

:func:`shape_key` gives keys equal for two expressions of one shape at one program point
(``"()"`` = 0-d, see :func:`is_zero_dim`); :func:`one_element_shape` and :func:`is_one_dim`
serve the SFX3xx/4xx rewrites and follow names through :func:`~.bindings.binding_values`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, cast

import libcst as cst

from .bindings import display_items, fact_of_name
from .fixpoint import CYCLE, agree, solve
from .losses import loss_reduction
from .pynumbers import number_kind
from .syntax import int_args, keyword, literal_kind, only_dtype_args, positional, shape_item_of
from .torch_api import (
    BOOL_ELEMENTWISE,
    CAST_METHODS,
    ELEMENTWISE_FNS,
    ELEMENTWISE_METHODS,
    FULL_REDUCTIONS,
    REDUCTIONS,
    SCALAR_REDUCTIONS,
    SHAPE_KEEPING,
    TENSOR_NAMESPACES,
)
from .values import Kind

if TYPE_CHECKING:
    from .module import ModuleAnalysis


def shape_key(a: ModuleAnalysis, expr: cst.CSTNode) -> str | None:
    """A key such that two expressions evaluated at one program point with equal keys have
    equal shapes: ``"()"`` for a proven 0-d tensor, ``"name:x"`` for element-wise
    functions of the tensor bound to ``x`` (with Python numbers or 0-d tensors), a literal
    shape for factories. None when unknown.
    """
    return cast("str | None", solve(a.solver, "shape", expr, lambda n: _shape_key(a, n), CYCLE))


def is_zero_dim(a: ModuleAnalysis, expr: cst.CSTNode) -> bool:
    return a.shape_key(expr) == "()"


def _shape_key(a: ModuleAnalysis, e: cst.CSTNode) -> str | None | object:
    if isinstance(e, cst.Name):
        if not a.is_tensor(e):
            # a value still unknown in this round of a loop-carried cycle says nothing yet
            return CYCLE if a.value(e).kind is Kind.BOTTOM else None
        values: Sequence[cst.CSTNode] | None = a.reaching_values(e)
        if values is None:
            values = display_items(a, e)  # ``for l in (g_loss, d_loss)``: each item in turn
        if values is not None:
            keys = [a.shape_key(v) for v in values]
            if agree(keys) == "()":
                return "()"
            single = a.straight_line_binding(e)
            if single is not None:
                key = a.shape_key(single)
                if isinstance(key, str):
                    return key
        return "name:" + e.value
    if isinstance(e, cst.Attribute) and e.attr.value == "data" and a.is_tensor(e.value):
        return a.shape_key(e.value)  # the same tensor's values, without autograd
    if isinstance(e, cst.AugAssign):
        target = a.value(e.target)
        if target.kind is Kind.BOTTOM:
            return CYCLE  # unknown in this round of a cycle: no information yet
        if not isinstance(e.operator, cst.MatrixMultiplyAssign) and target.is_tensor:
            return a.shape_key(e.target)  # in place: the tensor keeps its shape, or the op raises
        return _broadcast_key(a, [e.target, e.value])
    if isinstance(e, (cst.Comparison, cst.BinaryOperation)):
        operands = (
            [e.left, *(c.comparator for c in e.comparisons)]
            if isinstance(e, cst.Comparison)
            else [e.left, e.right]
        )
        if isinstance(e, cst.BinaryOperation) and isinstance(e.operator, cst.MatrixMultiply):
            return None
        return _broadcast_key(a, operands)
    if isinstance(e, cst.UnaryOperation) and not isinstance(e.operator, cst.Not):
        return a.shape_key(e.expression)
    if isinstance(e, cst.IfExp):
        return agree([a.shape_key(e.body), a.shape_key(e.orelse)])
    if isinstance(e, cst.Call):
        return _call_shape_key(a, e)
    return None


def _broadcast_key(a: ModuleAnalysis, operands: Sequence[cst.BaseExpression]) -> str | None:
    keys = []
    for o in operands:
        if a.value(o).kind is Kind.BOTTOM:
            continue  # unknown in this round of a cycle: no information yet
        if a.value(o).is_tensor:
            k = a.shape_key(o)
            if k is None:
                return None
            if k is not CYCLE:
                keys.append(k)
        elif number_kind(a, o) is None:
            return None
    if not keys:
        return cast("str | None", CYCLE)  # no information yet: the cycle marker
    wide = {k for k in keys if k != "()"}  # a 0-d operand broadcasts to anything
    if len(wide) > 1:
        return None
    return wide.pop() if wide else "()"


def _call_shape_key(a: ModuleAnalysis, call: cst.Call) -> str | None:
    name = a.callee(call)
    args = positional(call)
    func = call.func
    if loss_reduction(a, call) in SCALAR_REDUCTIONS or name == "torch.nn.utils.clip_grad_norm_":
        return "()"
    if name is not None and name.startswith(TENSOR_NAMESPACES):
        short = name.rsplit(".", 1)[-1]
        if short in ("tensor", "scalar_tensor") and args and literal_kind(args[0].value):
            return "()"
        if short in ("zeros", "ones", "empty", "full", "rand", "randn") and args:
            first = args[0].value
            if isinstance(first, cst.Tuple) and not first.elements:
                return "()"
            if isinstance(first, cst.List) and not first.elements:
                return "()"
            return None
        if short.endswith("_like") and args:
            return a.shape_key(args[0].value)
        if short == "where" and len(args) == 3:
            return _broadcast_key(a, [arg.value for arg in args])
        if short in REDUCTIONS and len(call.args) == 1 and args:
            return "()"
        if (short in ELEMENTWISE_FNS or short in BOOL_ELEMENTWISE) and args:
            if short in ("maximum", "minimum", "logical_and", "logical_or", "logical_xor"):
                return _broadcast_key(a, [arg.value for arg in args[:2]])
            return a.shape_key(args[0].value) if len(call.args) == 1 else None
        return None
    if isinstance(func, cst.Attribute) and a.is_tensor(func.value):
        method = func.attr.value
        if method in REDUCTIONS and not call.args:
            return "()"
        if method in ELEMENTWISE_METHODS and not call.args:
            return a.shape_key(func.value)
        if method in CAST_METHODS and not call.args:
            return a.shape_key(func.value)
        if method in ("clamp", "clip", "masked_fill") and all(
            not a.value(arg.value).is_tensor or a.is_zero_dim(arg.value) for arg in call.args
        ) and method != "masked_fill":
            return a.shape_key(func.value)
    return None


def one_element_shape(a: ModuleAnalysis, expr: cst.BaseExpression) -> tuple[int, ...] | None:
    """The shape of a tensor that provably holds exactly one element (``()``, ``(1,)``,
    ``(1, 1)``...), or None. 0-d: full reductions (``t.sum()``, ``t.mean()``,
    ``torch.sum(t)``), default- or sum-reduced losses, ``clip_grad_norm_``, ``torch.tensor(3.0)``."""
    if isinstance(expr, cst.Attribute) and expr.attr.value == "data" and a.is_tensor(expr.value):
        return a.one_element_shape(expr.value)
    if isinstance(expr, cst.Name):
        shape = fact_of_name(a, expr, a.one_element_shape)
        # a 0-d total a loop adds to in place (``acc += v``) has no single binding to ask
        return shape if shape is not None or a.shape_key(expr) != "()" else ()
    if isinstance(expr, (cst.BinaryOperation, cst.Comparison)):
        operands = (
            [expr.left, expr.right]
            if isinstance(expr, cst.BinaryOperation)
            else [expr.left, *(c.comparator for c in expr.comparisons)]
        )
        ndim = 0
        for o in operands:
            if literal_kind(o, one_minus=True) is not None:
                continue
            if not a.is_tensor(o):
                return None
            shape = a.one_element_shape(o)
            if shape is None:
                return None
            ndim = max(ndim, len(shape))
        return (1,) * ndim  # one-element shapes broadcast to all-ones
    if isinstance(expr, cst.UnaryOperation) and isinstance(expr.operator, cst.Minus):
        return a.one_element_shape(expr.expression)
    if not isinstance(expr, cst.Call):
        return None
    if loss_reduction(a, expr) in SCALAR_REDUCTIONS:
        return ()  # a loss function or module with the default (or "sum") reduction
    name = a.direct_callee(expr)
    if name is not None and name.startswith("torch."):
        return _torch_call_shape(a, name, expr)
    func = expr.func
    if not isinstance(func, cst.Attribute) or not a.is_tensor(func.value):
        return None
    method = func.attr.value
    if method in FULL_REDUCTIONS:
        return () if only_dtype_args(expr) else None
    if method in SHAPE_KEEPING:
        return a.one_element_shape(func.value)
    base = a.one_element_shape(func.value)
    if base is None:
        return None
    if method in ("squeeze",) and not expr.args:
        return ()
    if method in ("flatten", "ravel") and not expr.args:
        return (1,)
    if method == "unsqueeze":
        dims = int_args(expr)
        return (1, *base) if dims is not None and len(dims) == 1 and -len(base) - 1 <= dims[0] <= len(base) else None
    if method in ("reshape", "view"):
        dims = int_args(expr)
        if dims is not None and all(d in (1, -1) for d in dims) and dims.count(-1) <= 1:
            return (1,) * len(dims)
    return None


def _torch_call_shape(a: ModuleAnalysis, name: str, call: cst.Call) -> tuple[int, ...] | None:
    short = name.rsplit(".", 1)[-1]
    args = positional(call)
    if name == "torch.nn.utils.clip_grad_norm_":
        return ()
    if name == "torch.linalg.vector_norm" and len(args) == 1 and keyword(call, "dim") is None:
        return ()
    if name in ("torch.full", "torch.zeros", "torch.ones", "torch.empty") and args:
        size = args[0].value
        if isinstance(size, (cst.Tuple, cst.List)):
            dims = [el.value for el in size.elements]
        elif name == "torch.full":
            return None  # its size is one sequence
        else:
            dims = [arg.value for arg in args]  # ``torch.zeros(1, 1)``
        if all(isinstance(d, cst.Integer) and d.evaluated_value == 1 for d in dims):
            return (1,) * len(dims)
        return None
    if name == "torch.tensor" and len(args) == 1:
        value = args[0].value
        if literal_kind(value, one_minus=True) is not None:
            return ()
        if isinstance(value, cst.List) and len(value.elements) == 1 and literal_kind(value.elements[0].value, one_minus=True):
            return (1,)
        return None
    if short in FULL_REDUCTIONS and len(args) == 1 and only_dtype_args(call.with_changes(args=call.args[1:])):
        return ()
    return None


def is_one_dim(a: ModuleAnalysis, expr: cst.BaseExpression) -> bool:
    """Is ``expr`` provably a 1-D tensor (``x.flatten()``, ``x.view(-1)``, ``torch.arange(n)``,
    ``torch.randn(n)``, ``torch.tensor([...])`` of numbers)?"""
    if isinstance(expr, cst.Name):
        return fact_of_name(a, expr, a.is_one_dim) is True
    if isinstance(expr, cst.Subscript):
        return _item_of_index_tuple(a, expr)
    if not isinstance(expr, cst.Call) or not a.is_tensor(expr):
        return False
    name = a.direct_callee(expr)
    args = positional(expr)
    if name in ("torch.arange", "torch.linspace", "torch.randperm"):
        return True
    if name in ("torch.zeros", "torch.ones", "torch.randn", "torch.rand", "torch.empty"):
        # one size that is a number: a name bound to a tuple (``torch.zeros(shape)``) is not 1-D
        return len(args) == 1 and _scalar_size(a, args[0].value)
    if name == "torch.tensor" and len(args) == 1 and isinstance(args[0].value, cst.List):
        return all(literal_kind(el.value, one_minus=True) for el in args[0].value.elements)
    func = expr.func
    if isinstance(func, cst.Attribute) and a.is_tensor(func.value):
        method = func.attr.value
        if method in ("flatten", "ravel") and not expr.args:
            return True
        if method in ("view", "reshape"):
            args = positional(expr)
            return int_args(expr) == [-1] or (
                len(args) == len(expr.args) == 1 and a.is_element_count(args[0].value)
            )
        if method in SHAPE_KEEPING:
            return a.is_one_dim(func.value)
    return False


def _scalar_size(a: ModuleAnalysis, expr: cst.BaseExpression) -> bool:
    """Is ``expr`` one size, never a sequence of them: an int, a count of elements, or the
    ``max``/``min`` of a list of Python scalars (``max(sizes)`` of gathered batch sizes)?"""
    if a.python_number_type(expr) == "int" or a.is_element_count(expr):
        return True
    if isinstance(expr, cst.Name):

        def scalar_size(value: cst.BaseExpression) -> bool:  # named: fact_of_name memoises by name
            return _scalar_size(a, value)

        return fact_of_name(a, expr, scalar_size) is True
    if not isinstance(expr, cst.Call) or a.callee(expr) not in ("builtins.max", "builtins.min"):
        return False
    args = positional(expr)
    return len(args) == len(expr.args) == 1 and a.is_scalar_list(args[0].value)


def _item_of_index_tuple(a: ModuleAnalysis, expr: cst.Subscript) -> bool:
    """``x.nonzero(as_tuple=True)[i]``, ``torch.nonzero(x, as_tuple=True)[i]``,
    ``torch.where(cond)[i]``: each item of these tuples is a 1-D tensor of indices (a 0-d input
    is read as 1-D)."""
    call = expr.value
    if not (
        isinstance(call, cst.Call)
        and len(expr.slice) == 1
        and isinstance(expr.slice[0].slice, cst.Index)
        and isinstance(expr.slice[0].slice.value, cst.Integer)
    ):
        return False
    as_tuple = keyword(call, "as_tuple")
    literal_true = as_tuple is not None and isinstance(as_tuple.value, cst.Name) and as_tuple.value.value == "True"
    func = call.func
    if isinstance(func, cst.Attribute) and func.attr.value == "nonzero":
        return literal_true and a.is_tensor(func.value)
    name = a.direct_callee(call)
    args = positional(call)
    if name == "torch.nonzero":
        return literal_true and len(args) == 1 and a.is_tensor(args[0].value)
    if name == "torch.where":
        return len(call.args) == 1 and len(args) == 1 and a.is_tensor(args[0].value)
    return False


def is_element_count(a: ModuleAnalysis, expr: cst.BaseExpression) -> bool:
    """A count of elements that is a Python int well under 2**53 (so float64 holds it exactly)
    and has no side effects: ``len(name)``, ``t.size(i)``, ``t.shape[i]``, ``t.numel()``, or an
    int literal; or a name bound only to one of those (``n = out.size(0)``)."""
    if isinstance(expr, cst.Integer):
        return int(expr.value.replace("_", ""), 0) < 2**53
    if isinstance(expr, cst.Name):
        values = a.binding_values(expr) or []
        return bool(values) and all(not isinstance(v, cst.Name) and is_element_count(a, v) for v in values)
    if isinstance(expr, cst.Call):
        func = expr.func
        if isinstance(func, cst.Name) and func.value == "len" and a.callee(expr) in ("len", "builtins.len"):
            return len(expr.args) == 1 and isinstance(expr.args[0].value, cst.Name)
        if isinstance(func, cst.Attribute) and func.attr.value in ("size", "numel") and _sized(a, func.value):
            return isinstance(func.value, cst.Name) and all(isinstance(arg.value, cst.Integer) for arg in expr.args)
        return False
    sized = shape_item_of(expr)  # ``t.shape[i]``, ``t.size()[i]``
    return isinstance(sized, cst.Name) and _sized(a, sized)


def _sized(a: ModuleAnalysis, expr: cst.BaseExpression) -> bool:
    """A tensor, or an item of a loader batch (whose ``size(0)`` is the batch size)."""
    return a.value(expr).kind in (Kind.TENSOR, Kind.BATCH)


def at_least_one_dim(a: ModuleAnalysis, expr: cst.BaseExpression) -> bool:
    """Is ``expr`` a tensor of one dimension or more, by how it was made: ``x.view(n, -1)`` (two
    sizes or more, or one int: ``x.reshape(-1)``), ``x.flatten()``, ``x.unsqueeze(i)``,
    ``torch.cat``/``torch.stack``, or a name every binding of which is one of these? (Not 0-d,
    so it decides the device of an op it takes part in: only a 0-d CPU tensor joins others.)"""
    return bool(a.solver.get("one-dim-or-more", expr, lambda e: _at_least_one_dim(a, e), True, False))


def _at_least_one_dim(a: ModuleAnalysis, expr: cst.BaseExpression) -> bool:
    if isinstance(expr, cst.Name):
        values = a.binding_values(expr) or []
        return bool(values) and all(isinstance(v, cst.BaseExpression) and at_least_one_dim(a, v) for v in values)
    if not isinstance(expr, cst.Call) or not a.is_tensor(expr):
        return False
    func, args = expr.func, expr.args
    if any(arg.star or arg.keyword is not None for arg in args):
        return False
    if isinstance(func, cst.Attribute) and func.attr.value in ("view", "reshape"):
        return len(args) >= 2 or len(args) == 1 and literal_kind(args[0].value) == "int"
    if isinstance(func, cst.Attribute) and func.attr.value in ("flatten", "unsqueeze"):
        return True
    return a.callee(expr) in ("torch.cat", "torch.stack", "torch.flatten", "torch.unsqueeze")
