"""What an annotation promises: ``torch.Tensor`` (and its legacy typed classes) a tensor, a
fixed-length ``tuple[...]`` its items, a sequence of tensors (``list[Tensor]``) tensors,
``np.ndarray`` an array; in the likely view, ``Optional[T]`` where it is used is ``T``."""

from __future__ import annotations

from typing import TYPE_CHECKING

import libcst as cst

from .torch_api import TENSOR_TYPES
from .values import UNKNOWN, Kind, TupleValue, Value

if TYPE_CHECKING:
    from .module import ModuleAnalysis


def annotation_value(a: ModuleAnalysis, ann: cst.Annotation) -> Value:
    """What a parameter's or a binding's annotation promises (:func:`_type_value`)."""
    return _type_value(a, ann.annotation)


def _type_value(a: ModuleAnalysis, expr: cst.BaseExpression) -> Value:
    """What an annotation promises: a tensor (device unknown, maybe pinned, not fresh) for
    ``torch.Tensor``; a fixed-length tuple's items for ``tuple[...]``/``Tuple[...]``."""
    if a.qualname(expr) in TENSOR_TYPES:
        return Value(Kind.TENSOR)
    inner = _optional_of(a, expr) if a.assume_tensors else None
    if inner is not None:
        # the likely view: ``Optional[torch.LongTensor]`` where it is used is the tensor (nanotron's
        # ``position_ids``); a proof would have to follow the ``is None`` tests
        return _type_value(a, inner)
    if a.qualname(expr.value if isinstance(expr, cst.Subscript) else expr) in _ARRAY_TYPES:
        return Value(Kind.NDARRAY)  # ``np.ndarray``, ``npt.NDArray[np.int64]``: no tensor
    if isinstance(expr, cst.Subscript) and _tensor_sequence(a, expr):
        return Value(Kind.TENSORS)  # a container of tensors: its items are tensors
    if isinstance(expr, cst.Subscript) and a.qualname(expr.value) in ("builtins.tuple", "typing.Tuple"):
        items = []
        for el in expr.slice:
            if not isinstance(el.slice, cst.Index) or getattr(el.slice, "star", None) is not None:
                return UNKNOWN
            if isinstance(el.slice.value, cst.Ellipsis):
                return UNKNOWN  # ``tuple[T, ...]``: any length
            items.append(_type_value(a, el.slice.value))
        return TupleValue(tuple(items))
    return UNKNOWN


def _optional_of(a: ModuleAnalysis, expr: cst.BaseExpression) -> cst.BaseExpression | None:
    """``T`` of ``Optional[T]``, ``Union[T, None]`` or ``T | None``; else None."""
    if isinstance(expr, cst.BinaryOperation) and isinstance(expr.operator, cst.BitOr):
        if isinstance(expr.right, cst.Name) and expr.right.value == "None":
            return expr.left
        if isinstance(expr.left, cst.Name) and expr.left.value == "None":
            return expr.right
        return None
    if not isinstance(expr, cst.Subscript):
        return None
    args = [el.slice.value for el in expr.slice if isinstance(el.slice, cst.Index)]
    name = a.qualname(expr.value)
    if name == "typing.Optional" and len(args) == 1:
        return args[0]
    if name == "typing.Union" and len(args) == 2:
        others = [x for x in args if not (isinstance(x, cst.Name) and x.value == "None")]
        return others[0] if len(others) == 1 else None
    return None


_ARRAY_TYPES = {"numpy.ndarray", "numpy.typing.NDArray"}
_SEQUENCES = {
    "builtins.list", "typing.List", "typing.Sequence", "collections.abc.Sequence",
    "builtins.tuple", "typing.Tuple",
}


def _tensor_sequence(a: ModuleAnalysis, expr: cst.Subscript) -> bool:
    """``Sequence[torch.Tensor]``, ``list[Tensor]``, ``tuple[Tensor, ...]``."""
    if a.qualname(expr.value) not in _SEQUENCES or not expr.slice:
        return False
    first = expr.slice[0].slice
    if not isinstance(first, cst.Index) or a.qualname(first.value) not in TENSOR_TYPES:
        return False
    rest = [e.slice for e in expr.slice[1:]]
    is_tuple = a.qualname(expr.value) in ("builtins.tuple", "typing.Tuple")
    if is_tuple:  # only the homogeneous form; ``tuple[T, U]`` is a TupleValue
        return len(rest) == 1 and isinstance(rest[0], cst.Index) and isinstance(rest[0].value, cst.Ellipsis)
    return not rest


# Methods tensors have and numpy arrays, Python numbers and containers do not: a parameter that
# its function uses so is a tensor wherever the call does not fail (a likely fact, as an
# annotation the author left out).
TENSOR_USE_METHODS = frozenset({
    "index_select", "masked_fill", "masked_fill_", "masked_select", "unsqueeze", "unsqueeze_",
    "view_as", "type_as", "new_zeros", "new_ones", "new_full", "new_empty", "new_tensor",
    "index_fill_", "index_add_", "index_copy_", "scatter_", "scatter_add_", "element_size",
    "numel", "contiguous", "detach", "expand_as",
})


def used_as_tensor(a: ModuleAnalysis, param: cst.Param) -> bool:
    """In the likely view: is an unannotated parameter its function never rebinds used as only a
    tensor is (the receiver of ``TENSOR_USE_METHODS``, or the first argument of
    ``torch.*_like``)? transformer-xl's ``forward(self, hidden, target)`` with
    ``target.index_select(0, i)``. Not one that defaults to ``None`` (``if scale:`` tests that
    it was given) or whose type the function tests (``isinstance(x, torch.Tensor)``: ignite's
    ``x.unsqueeze(0)`` of a tensor, ``torch.tensor([x])`` of a number)."""
    scope = a.scope(param.name)
    if scope is None or not a.assume_tensors or not a.torch_code or param.annotation is not None:
        return False
    if isinstance(param.default, cst.Name) and param.default.value == "None":
        return False
    bound = list(scope.assignments[param.name.value])
    if len(bound) != 1:
        return False
    uses = [access.node for access in bound[0].references]
    if any(_type_tested(a, use) for use in uses):
        return False
    for use in uses:
        parent = a.parent(use)
        if (
            isinstance(parent, cst.Attribute)
            and parent.value is use
            and parent.attr.value in TENSOR_USE_METHODS
            and parent.attr.value not in a.class_method_names
            and isinstance(a.parent(parent), cst.Call)
        ):
            return True
        arg = a.parent(parent) if isinstance(parent, cst.Arg) else None
        if (
            isinstance(arg, cst.Call)
            and arg.args
            and arg.args[0] is parent
            and (a.callee(arg) or "").startswith("torch.")
            and (a.callee(arg) or "").endswith("_like")
        ):
            return True
    return False


def _type_tested(a: ModuleAnalysis, use: cst.CSTNode) -> bool:
    """Is ``use`` the first argument of ``isinstance``/``type``/``torch.is_tensor``?"""
    arg = a.parent(use)
    call = a.parent(arg) if isinstance(arg, cst.Arg) else None
    return (
        isinstance(call, cst.Call)
        and call.args[0] is arg
        and a.callee(call) in ("builtins.isinstance", "builtins.type", "torch.is_tensor")
    )
