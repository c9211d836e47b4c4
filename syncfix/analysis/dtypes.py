"""dtypes: what a tensor expression's dtype is, when provable.

Two answers, for two kinds of rules, kept apart because they answer differently:

- :func:`dtype_of` gives the exact dtype (``"torch.float32"``) for rewrites that must keep
  values exactly (SFX2xx): factories (``dtype=`` or the default float, see
  :func:`default_float`), casts, comparisons and predicates, dtype-keeping ops, arithmetic that
  cannot promote. A name's dtype is the one every binding of :func:`~.bindings.reaching_values`
  agrees on (loop-carried cycles solved as fixpoints).
- :func:`dtype_kind` gives only the kind (``"float"``, ``"int"``, ``"bool"``) for the
  accumulation and merge rewrites (SFX3xx): it also answers where the exact dtype is unknown
  (``torch.zeros(3)`` is floating whatever the default dtype; ``t.sum()`` of an int tensor is
  an int), and follows names through :func:`~.bindings.binding_values` (straight-line code).
  Deriving it from :func:`dtype_of` would change answers both ways, so it stays separate.

:func:`is_integer_tensor` (an integer dtype, not bool) uses the dtype of the value, then its own
cases (int64 factories, ``torch.arange`` of ints).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, cast

import libcst as cst

from .attributes import assumed_tensor
from .autograd import backward_checked
from .bindings import fact_of_name
from .fixpoint import CYCLE, agree, solve
from .losses import loss_reduction
from .pynumbers import number_kind
from .syntax import keyword, literal_kind, positional
from .torch_api import (
    BOOL_FNS,
    BOOL_INT,
    CAST_KIND,
    CAST_METHODS,
    DTYPE_ALIASES,
    DTYPE_KIND,
    DTYPES,
    FLOAT_FACTORIES,
    FLOAT_KEEPING,
    FLOAT_LOSSES,
    FLOAT_ONLY_FNS,
    FLOATING_RESULT,
    FLOATS,
    FULL_REDUCTIONS,
    INT64_FACTORIES,
    INT64_RESULTS,
    INT_DTYPES,
    KIND_KEEPING,
    LIKELY_TENSOR_METHODS,
    NORMS,
    PROMOTING_FNS,
    SAME_DTYPE_FNS,
    SAME_DTYPE_METHODS,
    TENSOR_NAMESPACES,
)
from .values import Kind

if TYPE_CHECKING:
    from .module import ModuleAnalysis


def default_float(a: ModuleAnalysis) -> str | None:
    """``torch.float32`` unless the module changes the default dtype (then unknown)."""
    code = a.code
    if "dtype" in a.defaults_changed or "set_default_dtype" in code or "set_default_tensor_type" in code:
        return None  # here, or in another file of the project
    return "torch.float32"


def dtype_of(a: ModuleAnalysis, expr: cst.CSTNode) -> str | None:
    """The dtype of a tensor expression (``"torch.float32"``...) when provable, else None.

    Covers factories (``dtype=`` or the default float), casts (``.float()``, ``.to(dtype)``),
    comparisons and predicates (bool), dtype-preserving element-wise ops and reductions,
    arithmetic between tensors of one dtype or with Python numbers that cannot promote, and
    names whose every reaching binding agrees. Mixed dtypes are never guessed.
    """
    return cast("str | None", solve(a.solver, "dtype", expr, lambda n: _dtype_of(a, n), CYCLE))


def _dtype_of(a: ModuleAnalysis, e: cst.CSTNode) -> str | None | object:
    if isinstance(e, cst.Name):
        values = a.reaching_values(e)
        if values is None:
            return None
        return agree(a.dtype_of(v) for v in values)
    if isinstance(e, cst.AugAssign):
        target = a.value(e.target)
        if target.kind is Kind.BOTTOM:
            return CYCLE  # unknown in this round of a cycle: no information yet
        if not isinstance(e.operator, cst.MatrixMultiplyAssign) and target.is_tensor:
            return a.dtype_of(e.target)  # in place: the tensor keeps its dtype, or the op raises
        return _binop_dtype(a, e.target, e.operator, e.value)
    if isinstance(e, cst.Subscript):
        return a.dtype_of(e.value) if a.is_tensor(e.value) else None
    if isinstance(e, cst.Attribute):
        if e.attr.value in ("T", "mT", "data") and a.is_tensor(e.value):
            return a.dtype_of(e.value)
        return None
    if isinstance(e, cst.Comparison):
        return "torch.bool" if a.value(e).is_tensor else None
    if isinstance(e, cst.IfExp):
        return agree([a.dtype_of(e.body), a.dtype_of(e.orelse)])
    if isinstance(e, cst.UnaryOperation):
        inner = a.dtype_of(e.expression)
        if isinstance(e.operator, cst.Minus) and inner not in (None, "torch.bool"):
            return inner
        if isinstance(e.operator, cst.BitInvert) and inner in BOOL_INT:
            return inner
        return None
    if isinstance(e, cst.BinaryOperation):
        return _binop_dtype(a, e.left, e.operator, e.right)
    if isinstance(e, cst.Call):
        return _call_dtype(a, e)
    return None


def _binop_dtype(
    a: ModuleAnalysis,
    left: cst.BaseExpression,
    op: cst.BaseBinaryOp | cst.BaseAugOp,
    right: cst.BaseExpression,
) -> str | None:
    lt, rt = a.value(left).is_tensor, a.value(right).is_tensor
    if not (lt or rt):
        return None
    bitwise = isinstance(op, (cst.BitAnd, cst.BitOr, cst.BitXor))
    arith = isinstance(op, (cst.Add, cst.Subtract, cst.Multiply))
    div = isinstance(op, cst.Divide) or isinstance(op, cst.MatrixMultiply)
    if lt and rt:
        da, db = a.dtype_of(left), a.dtype_of(right)
        if da is CYCLE or db is CYCLE:
            return cast("str | None", agree([da, db]))
        if da is None or da != db:
            return None
        if bitwise:
            return da if da in BOOL_INT else None
        if arith and da != "torch.bool" or div and da in FLOATS:
            return da
        if da == "torch.bool" and isinstance(op, (cst.Add, cst.Multiply, cst.AddAssign, cst.MultiplyAssign)):
            return da  # ``stopped + eos``: a logical or (``*``: and); ``-`` of two raises
        return None
    t, other = (left, right) if lt else (right, left)
    d = a.dtype_of(t)
    if d is CYCLE:
        return d
    kind = number_kind(a, other)
    if d is None or kind is None:
        return None
    if bitwise:
        return d if d in BOOL_INT and kind in ("bool", "int") and (d != "torch.bool" or kind == "bool") else None
    if d == "torch.bool":
        return None
    if arith or div:
        if d in FLOATS:
            return d  # a Python bool/int/float never promotes a floating tensor
        if arith and kind in ("int", "bool"):
            return d
    return None


def _call_dtype(a: ModuleAnalysis, call: cst.Call) -> str | None:
    name = a.callee(call)
    func = call.func
    args = positional(call)
    explicit = dtype_kw(a, call)
    if explicit is not None:
        return canon_dtype(explicit)
    given = keyword(call, "dtype")
    if given is not None and not (isinstance(given.value, cst.Name) and given.value.value == "None"):
        return None  # ``dtype=dtype``: a dtype syncfix cannot name, not the default
    if name is not None and name.startswith(TENSOR_NAMESPACES):
        short = name.rsplit(".", 1)[-1]
        if short in ("any", "all"):
            return _any_all_dtype(a, args[0].value) if args else None
        if short in BOOL_FNS:
            return "torch.bool"
        if short in INT64_RESULTS and args:
            return "torch.int64"
        if short in FLOAT_FACTORIES:
            return a.default_float
        if short.endswith("_like") and args:
            return a.dtype_of(args[0].value)
        if short in ("tensor", "full", "scalar_tensor") and args:
            lit = args[-1].value if short == "full" else args[0].value
            kind = number_kind(a, lit)
            return {"bool": "torch.bool", "int": "torch.int64", "float": a.default_float}.get(kind or "")
        if short == "where" and len(args) == 3:
            return cast("str | None", agree([a.dtype_of(args[1].value), a.dtype_of(args[2].value)]))
        if short in PROMOTING_FNS and args:
            return _promoting_dtype(a, args[0].value, [arg.value for arg in call.args[1:]])
        if short in SAME_DTYPE_FNS and args:
            return a.dtype_of(args[0].value)
        if short in FLOAT_ONLY_FNS and args:
            d = a.dtype_of(args[0].value)
            return d if d in FLOATS else None
        if short in ("sum", "cumsum", "prod") and args:
            return _summed_dtype(a.dtype_of(args[0].value))
        return None
    if isinstance(func, cst.Attribute) and tensor_receiver(a, func):
        method = func.attr.value
        if method in CAST_METHODS:
            return CAST_METHODS[method]
        if method == "to":
            if args and is_dtype(a, args[0].value):
                return qualified_dtype(a, args[0].value)
            if len(args) >= 2 and is_dtype(a, args[1].value):
                return qualified_dtype(a, args[1].value)
            if not a.names_device_only(call):
                return None  # ``.to(other)`` takes other's dtype; ``.to(dtype)`` casts
            return a.dtype_of(func.value)
        if method in ("any", "all"):
            return _any_all_dtype(a, func.value)
        if method in BOOL_FNS:
            return "torch.bool"
        if method in INT64_RESULTS:
            return "torch.int64"
        base = a.dtype_of(func.value)
        if method == "view" and args and is_dtype(a, args[0].value):
            return qualified_dtype(a, args[0].value)  # a reinterpreting view
        if method in ("max", "min") and call.args:
            return None  # ``x.max(dim)`` is a (values, indices) tuple
        if method in PROMOTING_FNS:
            return _promoting_dtype(a, func.value, [arg.value for arg in call.args])
        if method in SAME_DTYPE_METHODS:
            return base
        if method in FLOAT_ONLY_FNS:
            return base if base in FLOATS else None
        if method in ("sum", "cumsum", "prod") and keyword(call, "dtype") is None:
            return _summed_dtype(base)
    return None


def _summed_dtype(base: str | None | object) -> str | None:
    """A sum's (product's) dtype without ``dtype=``: a floating input's, int64 for bool and
    integer inputs (PyTorch widens them)."""
    return cast("str | None", base) if base in FLOATS else "torch.int64" if base in BOOL_INT else None


def _any_all_dtype(a: ModuleAnalysis, operand: cst.BaseExpression) -> str | None:
    """``x.any()``/``x.all()``: bool, but uint8 for a uint8 ``x`` (PyTorch keeps that dtype)."""
    exact = a.dtype_of(operand)
    if exact is not None:
        return "torch.uint8" if exact == "torch.uint8" else "torch.bool"
    return "torch.bool" if a.dtype_kind(operand) in ("bool", "float") else None


def _promoting_dtype(a: ModuleAnalysis, first: cst.BaseExpression, others: Sequence[cst.BaseExpression]) -> str | None:
    """``clamp``/``maximum``...: the first operand's dtype when no other operand can promote it
    (same-dtype tensors; Python numbers for a floating input; ints for an integer input)."""
    base = a.dtype_of(first)
    if base is None or base is CYCLE:
        return base
    for other in others:
        if a.value(other).is_tensor:
            d = a.dtype_of(other)
            if d is not CYCLE and d != base:
                return None
            continue
        kind = number_kind(a, other)
        if kind is None and not (isinstance(other, cst.Name) and other.value == "None"):
            return None
        if base not in FLOATS and kind not in ("int", "bool", None):
            return None
        if base == "torch.bool":
            return None
    return base


#: Python's types as dtypes: torch reads ``t.to(bool)``, ``dtype=float`` as these.
PYTHON_TYPE_DTYPES = {
    "builtins.bool": "torch.bool", "builtins.int": "torch.int64", "builtins.float": "torch.float64",
    "builtins.complex": "torch.complex128",
}


def is_dtype(a: ModuleAnalysis, expr: cst.BaseExpression) -> bool:
    return qualified_dtype(a, expr) is not None


def qualified_dtype(a: ModuleAnalysis, expr: cst.BaseExpression) -> str | None:
    """The dtype ``expr`` names (``torch.float16``, or a Python type: ``bool``), canonical."""
    name = a.qualname(expr)
    return PYTHON_TYPE_DTYPES.get(name) if name in PYTHON_TYPE_DTYPES else canon_dtype(name)


def tensor_receiver(a: ModuleAnalysis, method: cst.Attribute) -> bool:
    """Is the receiver of this method call a tensor, or, in the likely view only, read as one
    (an unknown value whose method is a tensor method: ``dr.float()``)?"""
    receiver = method.value
    if a.is_tensor(receiver):
        return True
    return a.assume_tensors and assumed_tensor(a, a.value(receiver), method.attr.value, LIKELY_TENSOR_METHODS)


def dtype_kind(a: ModuleAnalysis, expr: cst.BaseExpression) -> str | None:
    """``"float"``, ``"int"`` or ``"bool"``: the kind of a tensor's dtype, when provable.

    ``"float"`` means a real floating dtype no wider than float64 (float16, bfloat16,
    float32, float64), ``"int"`` a signed integer dtype or uint8; None when unknown.
    """
    if isinstance(expr, cst.Name):
        kind = fact_of_name(a, expr, a.dtype_kind)
        if kind is None:  # a total a loop adds to in place (``acc += v``) has no single binding
            exact = a.dtype_of(expr)
            kind = DTYPE_KIND.get(exact.rsplit(".", 1)[-1]) if isinstance(exact, str) else None  # not in a cycle
        # a ``backward()`` just before proves a real floating scalar whatever the binding
        return kind if kind is not None or not backward_checked(a, expr) else "float"
    if isinstance(expr, cst.Comparison):
        return "bool" if a.is_tensor(expr) else None
    if isinstance(expr, cst.UnaryOperation) and isinstance(expr.operator, cst.Minus):
        kind = a.dtype_kind(expr.expression)
        return kind if kind in ("float", "int") else None
    if isinstance(expr, cst.BinaryOperation):
        return _arith_kind(a, expr)
    if isinstance(expr, cst.Attribute) and expr.attr.value in ("T", "mT", "data") and a.is_tensor(expr.value):
        return a.dtype_kind(expr.value)  # the tensor's own dtype
    if not isinstance(expr, cst.Call):
        return None
    name = a.direct_callee(expr)
    if name is not None and name.startswith("torch."):
        return _torch_call_kind(a, name, expr)
    if loss_reduction(a, expr) is not None:
        return "float"  # a loss module's result (integer inputs raise)
    func = expr.func
    if not isinstance(func, cst.Attribute) or not tensor_receiver(a, func):
        return None
    method = func.attr.value
    if method in ("any", "all"):
        return _any_all_kind(a, func.value)
    dtype = keyword(expr, "dtype")
    if dtype is not None:  # ``x.sum(dtype=torch.int64)``
        return _dtype_name_kind(a, dtype.value)
    if method == "view" and expr.args and is_dtype(a, expr.args[0].value):
        return _dtype_name_kind(a, expr.args[0].value)  # a reinterpreting view
    if method in BOOL_FNS:
        return "bool"
    if method in CAST_KIND:
        return CAST_KIND[method]
    if method in ("to", "type"):
        dtypes = [arg.value for arg in expr.args if is_dtype(a, arg.value)]
        if dtypes:
            return _dtype_name_kind(a, dtypes[0]) if len(dtypes) == 1 else None
        if keyword(expr, "dtype") is not None or any(a.is_tensor(arg.value) for arg in expr.args):
            return None  # a dtype we cannot name, or ``.to(other_tensor)``
        return a.dtype_kind(func.value) if method == "to" and a.names_device_only(expr) else None
    if method in FLOAT_KEEPING:
        return "float" if a.dtype_kind(func.value) == "float" else None
    if method in FLOATING_RESULT:
        return "float" if a.dtype_kind(func.value) is not None else None
    return _reduction_kind(a, method, func.value)


def _any_all_kind(a: ModuleAnalysis, operand: cst.BaseExpression) -> str | None:
    exact = _any_all_dtype(a, operand)
    return "bool" if exact == "torch.bool" else "int" if exact == "torch.uint8" else None


def _dtype_name_kind(a: ModuleAnalysis, expr: cst.BaseExpression) -> str | None:
    name = qualified_dtype(a, expr) or a.qualname(expr)
    return DTYPE_KIND.get(name.rsplit(".", 1)[-1]) if name else None


def _reduction_kind(a: ModuleAnalysis, method: str, receiver: cst.BaseExpression) -> str | None:
    base = a.dtype_kind(receiver)
    if method in KIND_KEEPING:
        return base
    if method in ("sum", "nansum", "cumsum"):
        return "float" if base == "float" else "int" if base in ("int", "bool") else None
    if method in ("mean", "nanmean", "std", "var"):
        return "float" if base == "float" else None  # integers raise; complex stays complex
    if method in ("argmax", "argmin", "count_nonzero"):
        return "int"
    if method in ("all", "any"):
        return "bool"
    if method == "norm":
        return "float" if base == "float" else None
    return None


def _torch_call_kind(a: ModuleAnalysis, name: str, call: cst.Call) -> str | None:
    short = name.rsplit(".", 1)[-1]
    dtype = keyword(call, "dtype")
    if dtype is not None:
        return _dtype_name_kind(a, dtype.value)
    args = positional(call)
    if name in ("torch.tensor", "torch.full"):
        fill = args[-1].value if args else None
        return literal_kind(fill, one_minus=True) if fill is not None else None
    if name in ("torch.zeros", "torch.ones", "torch.rand", "torch.randn"):
        return "float"  # the default dtype is always a floating one
    if short in ("any", "all"):
        return _any_all_kind(a, args[0].value) if args else None
    if short in BOOL_FNS and args:
        return "bool"
    if short in INT64_RESULTS and args:
        return "int"
    if name.startswith("torch.nn.functional.") and short in FLOAT_LOSSES:
        return "float"
    if name in NORMS:
        return "float"
    if args and name.startswith("torch.") and short in FULL_REDUCTIONS | {"nansum", "cumsum"}:
        return _reduction_kind(a, short, args[0].value)
    return None


def _arith_kind(a: ModuleAnalysis, expr: cst.BinaryOperation) -> str | None:
    kinds: list[str | None] = []
    for side in (expr.left, expr.right):
        lit = literal_kind(side, one_minus=True)
        if lit is not None:
            kinds.append("py" + lit)  # a Python literal: "pyint", "pyfloat", "pybool"
        elif a.is_tensor(side):
            kinds.append(a.dtype_kind(side))
        else:
            return None
    if None in kinds or not any(k in ("float", "int", "bool") for k in kinds):
        return None
    if isinstance(expr.operator, cst.Divide):
        return "float"
    if not isinstance(expr.operator, (cst.Add, cst.Subtract, cst.Multiply)):
        return None
    if "float" in kinds:
        return "float"
    if "bool" in kinds or "pybool" in kinds:
        return None  # bool arithmetic has its own rules (bool + bool is bool)
    return "float" if "pyfloat" in kinds else "int"


def is_integer_tensor(a: ModuleAnalysis, expr: cst.BaseExpression) -> bool:
    """Is ``expr`` provably a tensor of an integer dtype (not bool)? From a ``dtype=`` keyword,
    ``.long()``/``.int()``, ``torch.arange`` of int literals, int64 factories (``randint``,
    ``argsort``...), ``torch.tensor`` of a list of int literals, or a name bound only to these."""
    if not a.is_tensor(expr):
        return False
    dtype = a.value(expr).dtype
    if dtype is not None:
        return dtype in INT_DTYPES
    if isinstance(expr, cst.Name):
        return a.solver.get("int-tensor", expr, lambda n: _name_is_integer_tensor(a, n), False, False)
    if not isinstance(expr, cst.Call):
        return False
    if keyword(expr, "dtype") is not None:
        return False  # a dtype we could not name
    func = expr.func
    if isinstance(func, cst.Attribute) and a.is_tensor(func.value):
        return func.attr.value in ("long", "int", "short") and not expr.args
    name = a.callee(expr)
    args = positional(expr)
    if name in INT64_FACTORIES:
        return True
    if name == "torch.arange":
        return bool(args) and all(a.python_number_type(arg.value) == "int" for arg in args)
    if name in ("torch.tensor", "torch.as_tensor") and args:
        data = args[0].value
        return (
            isinstance(data, (cst.List, cst.Tuple))
            and bool(data.elements)
            and all(isinstance(a.literal_number(e.value), int)
                    and not isinstance(a.literal_number(e.value), bool) for e in data.elements)
        )
    return False


def _name_is_integer_tensor(a: ModuleAnalysis, name: cst.Name) -> bool:
    values = a.reaching_values(name)
    if not values:
        return False
    # an ``n op= e`` binding (not an expression) is no integer tensor we can prove
    return all(isinstance(v, cst.BaseExpression) and a.is_integer_tensor(v) for v in values)


def dtype_kw(analysis: ModuleAnalysis, call: cst.Call) -> str | None:
    arg = keyword(call, "dtype")
    if arg is None:
        return None
    name = analysis.qualname(arg.value)
    return name if name and name.startswith("torch.") else None


def canon_dtype(name: str | None) -> str | None:
    if not name or not name.startswith("torch."):
        return None
    short = name[len("torch.") :]
    return "torch." + DTYPE_ALIASES.get(short, short) if short in DTYPES else None
