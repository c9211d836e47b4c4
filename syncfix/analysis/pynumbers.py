"""Python numbers and host data: values that are provably not tensors.

Three questions, from strict to loose:

- :func:`python_number_type`: provably a Python ``bool``/``int``/``float`` of that exact type
  (literals, ``float(x)``, ``len(x)``, arithmetic of such, ``for i in range()`` counters, a
  parameter every call passes one, ``self.<attr>`` its class only assigns one); never a numpy
  scalar, never trusted from an annotation.
- :func:`number_kind`: the kind of a literal (``"int"``...), ``"number"`` for any other value the
  provenance calls a Python number, or the kind an ``int``/``float``/``bool`` annotation of a
  parameter promises (what dtype promotion with a tensor needs).
- :func:`is_host_data`: a Python number, a list/tuple of such, or a numpy array/scalar from a
  numpy constructor (never a tensor).

Literals themselves are classified by :func:`~.syntax.literal_kind` and
:func:`~.syntax.literal_number`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import libcst as cst

from . import callgraph
from .attributes import self_attribute_values
from .bindings import is_range_counter, range_calls
from .narrowing import narrowed_kind
from .syntax import dotted_name, keyword, literal_kind, literal_number, positional
from .torch_api import (
    DEVICE_INDEX_FUNCTIONS,
    FLOAT_CONSTANTS,
    NUMPY_CONSTRUCTORS,
    PY_NUMBER_BUILTINS,
)
from .values import Kind

if TYPE_CHECKING:
    from .module import ModuleAnalysis


def python_number_type(a: ModuleAnalysis, expr: cst.BaseExpression) -> str | None:
    """``"bool"``, ``"int"`` or ``"float"`` when ``expr`` is *provably* a Python number of that
    exact built-in type (a literal, ``-3``, ``float(x)``/``int(x)``/``bool(x)``/``len(x)``,
    ``not x``, arithmetic and comparisons of such, a name whose every binding is one); else None.
    Unlike ``value(expr).kind is Kind.NUMBER`` this never answers for what may be a numpy scalar
    (``arr.sum()``, ``max(arr)``) or for a parameter annotated ``int`` (annotations are not
    enforced)."""
    if isinstance(expr, cst.Integer):
        return "int"
    if isinstance(expr, cst.Float):
        return "float"
    if isinstance(expr, cst.Name):
        if expr.value in ("True", "False"):
            return "bool"
        return a.solver.get("pynumber", expr, lambda n: _name_number_type(a, n), None, None)
    if isinstance(expr, cst.Attribute) and isinstance(expr.value, cst.Name) and expr.value.value == "self":
        return a.solver.get("pynumber", expr, lambda n: _attribute_number_type(a, n), None, None)
    if isinstance(expr, cst.Attribute) and a.qualname(expr) in FLOAT_CONSTANTS:
        return "float"  # ``math.inf``, ``np.pi``
    if isinstance(expr, cst.UnaryOperation):
        if isinstance(expr.operator, cst.Not):
            return "bool"
        inner = a.python_number_type(expr.expression)
        if isinstance(expr.operator, (cst.Minus, cst.Plus)) and inner in ("int", "float"):
            return inner
        return None
    if isinstance(expr, cst.Call) and not expr.args[1:] and all(not arg.star for arg in expr.args):
        func = expr.func
        if (
            not expr.args
            and isinstance(func, cst.Attribute)
            and func.attr.value in ("numel", "dim", "ndimension", "element_size")
            and a.value(func.value).is_tensor
        ):
            return "int"  # DETR's ``torch.tensor([tensor.numel()], device="cuda")``: a Python int
        callee = a.callee(expr) or ""
        return PY_NUMBER_BUILTINS.get(callee) or DEVICE_INDEX_FUNCTIONS.get(callee)
    if isinstance(expr, cst.Comparison):
        operands = [expr.left, *(c.comparator for c in expr.comparisons)]
        if all(a.python_number_type(o) for o in operands):
            return "bool"
        return None
    if isinstance(expr, cst.BinaryOperation):
        left = a.python_number_type(expr.left)
        right = a.python_number_type(expr.right)
        if not left or not right or isinstance(expr.operator, (cst.MatrixMultiply, cst.Power)):
            return None  # int ** -1 is a float, (-8.0) ** 0.5 a complex
        if isinstance(expr.operator, cst.Divide) or "float" in (left, right):
            return "float"
        if isinstance(expr.operator, (cst.BitAnd, cst.BitOr, cst.BitXor)) and left == right == "bool":
            return "bool"
        return "int"
    return None


#: From a start within this, a counter counting up by one passes 2**63 only after 2**62
#: iterations (about 146 years at one a nanosecond): no run gets there.
_COUNTER_START_LIMIT = 2**62


def int64_by_construction(a: ModuleAnalysis, expr: cst.BaseExpression) -> bool:
    """Is ``expr`` a Python int that lies in int64's range in any run that ends? ``len(x)`` (at
    most ``sys.maxsize``), a tensor's ``numel()`` or ``dim()``, or the counter of ``for i in
    range(...)`` counting up by one from no start or a literal one within 2**62: to pass 2**63
    it would first run 2**62 iterations."""
    if isinstance(expr, cst.Call):
        func = expr.func
        if not expr.args and isinstance(func, cst.Attribute) and func.attr.value in ("numel", "dim"):
            return a.value(func.value).is_tensor  # a tensor's sizes are int64 in torch itself
        return a.callee(expr) == "builtins.len" and len(expr.args) == 1 and not expr.args[0].star
    if not isinstance(expr, cst.Name):
        return False
    calls = range_calls(a, expr)
    if calls is None:
        return False
    for call in calls:
        args = call.args
        if any(arg.keyword is not None or arg.star for arg in args) or not 1 <= len(args) <= 3:
            return False
        start = literal_number(args[0].value) if len(args) > 1 else 0
        step = literal_number(args[2].value) if len(args) > 2 else 1
        if not (type(start) is int and abs(start) <= _COUNTER_START_LIMIT and type(step) is int and step == 1):
            return False  # a larger step passes 2**63 sooner: 2**40 after about 8 million steps
    return True


def _name_number_type(a: ModuleAnalysis, name: cst.Name) -> str | None:
    values = a.reaching_values(name)
    if not values:
        if is_range_counter(a, name):
            return "int"  # range() yields ints
        bound = a.bindings(name)
        param = getattr(next(iter(bound)), "node", None) if len(bound) == 1 else None
        if isinstance(param, cst.Param):
            # what every call of the function passes (or the default), when all are in sight
            return _one_type(a, callgraph.param_arguments(a, param))
        return None
    return _one_type(a, values)


def _attribute_number_type(a: ModuleAnalysis, expr: cst.Attribute) -> str | None:
    """``self.<attr>``: the one type of everything its class assigns to it."""
    return _one_type(a, self_attribute_values(a, expr))


def _one_type(a: ModuleAnalysis, values: Sequence[object] | None) -> str | None:
    if not values:
        return None
    types = {a.python_number_type(v) if isinstance(v, cst.BaseExpression) else None for v in values}
    return types.pop() if len(types) == 1 else None


def is_host_data(a: ModuleAnalysis, expr: cst.BaseExpression) -> bool:
    """Is ``expr`` provably host data and never a tensor: a provable Python number, a
    list/tuple of such (nested, or made by a comprehension or ``a if c else b`` of such), an array or numpy scalar from a numpy constructor
    (``np.array``, ``np.arange``, ``np.float32(...)``, ``np.random.*``...), a method result,
    element or arithmetic of such, or a name bound only to these? Stricter than
    ``value(expr).kind is Kind.NDARRAY``: numpy functions such as ``np.round(t)`` call the
    tensor's own method and return a tensor."""
    if a.python_number_type(expr) is not None or a.literal_number(expr) is not None:
        return True
    if isinstance(expr, (cst.List, cst.Tuple)):
        return all(
            not isinstance(el, cst.StarredElement) and a.is_host_data(el.value)
            for el in expr.elements
        )
    if isinstance(expr, cst.Name):
        if narrowed_kind(a, expr) is Kind.NUMBER:
            return True  # inside ``if isinstance(x, (int, float)):``
        return a.solver.get("host-data", expr, lambda n: _name_is_host_data(a, n), False, False)
    if isinstance(expr, cst.Subscript):
        return a.is_host_data(expr.value)
    if isinstance(expr, cst.BinaryOperation):
        return a.is_host_data(expr.left) and a.is_host_data(expr.right)
    if isinstance(expr, cst.IfExp):  # ``[0.0] if done else [1.0]``: either is
        return a.is_host_data(expr.body) and a.is_host_data(expr.orelse)
    if isinstance(expr, cst.ListComp):  # ``[[0.0] if d else [1.0] for d in done]``
        return a.is_host_data(expr.elt)
    if isinstance(expr, cst.Call):
        name = a.callee(expr) if dotted_name(expr.func) is not None else None
        if name is not None and name.startswith("numpy."):
            short = name[len("numpy.") :]
            if short in _MAY_SHARE or (short == "array" and keyword(expr, "copy") is not None):
                # ``np.asarray(x)`` is ``x``'s own memory when it can be (a CPU tensor's, perhaps
                # a pinned buffer refilled later): host data only if ``x`` is
                data = positional(expr)
                return bool(data) and (a.is_host_data(data[0].value) or _never_shared(a, data[0].value))
            return short in NUMPY_CONSTRUCTORS or short.startswith("random.")
        func = expr.func
        if isinstance(func, cst.Attribute) and not isinstance(func.value, (cst.List, cst.Tuple)):
            # a method of an ndarray gives arrays, numpy scalars or Python objects
            return _is_ndarray_source(a, func.value)
    return False


# numpy constructors whose array may be their argument's own memory (no copy when none is needed).
_MAY_SHARE = frozenset({"asarray", "asanyarray", "ascontiguousarray", "asfortranarray", "frombuffer"})


def _never_shared(a: ModuleAnalysis, data: cst.BaseExpression) -> bool:
    """A list, tuple, str, dict... (known not to be a tensor, array or buffer: ``xs: list``),
    whose ``np.asarray`` is always new memory."""
    if isinstance(data, (cst.List, cst.Tuple, cst.ListComp)):
        return True
    if isinstance(data, cst.Name):
        params = [getattr(b, "node", None) for b in a.bindings(data)]
        if params and all(isinstance(p, cst.Param) and p.annotation is not None for p in params):
            return all(_container_hint(a, p.annotation.annotation) for p in params)  # type: ignore[union-attr]
    return a.value(data).kind is Kind.OTHER and not (
        isinstance(data, cst.Call) and a.callee(data) in ("builtins.memoryview", "builtins.bytearray")
    )


_CONTAINER_HINTS = frozenset(
    {"builtins.list", "builtins.tuple", "typing.List", "typing.Tuple", "typing.Sequence", "collections.abc.Sequence"}
)


def _container_hint(a: ModuleAnalysis, hint: cst.BaseExpression) -> bool:
    """``list``, ``List[float]``, ``tuple[int, ...]``, ``Sequence[float]``: never a buffer."""
    base = hint.value if isinstance(hint, cst.Subscript) else hint
    return a.qualname(base) in _CONTAINER_HINTS


def _name_is_host_data(a: ModuleAnalysis, name: cst.Name) -> bool:
    values = a.reaching_values(name)
    if not values:
        return False
    if not all(isinstance(v, cst.BaseExpression) and a.is_host_data(v) for v in values):
        return False
    if any(isinstance(v, (cst.List, cst.ListComp)) for v in values):
        return _filled_with_host_data(a, name)
    return True


# List methods that put their arguments into the list.
_FILLING = frozenset({"append", "extend", "insert"})


def _filled_with_host_data(a: ModuleAnalysis, name: cst.Name) -> bool:
    """A list bound to ``name`` stays host data only if whatever its scope puts into it by name
    is (``xs.append(t.sum())`` makes ``xs = []`` a list of tensors): every ``.append``/``.extend``
    /``.insert`` argument, ``xs[i] = v`` and ``xs += v`` value of that name in the scope, and in
    functions nested in it that use the same binding (a closure that appends)."""
    scope = a.scope(name)
    if scope is None:
        return False
    uses = {id(acc.node): acc.node for acc in scope.accesses[name.value]}
    for binding in a.bindings(name):
        uses.update((id(ref.node), ref.node) for ref in getattr(binding, "references", ()))
    for use in uses.values():
        parent = a.parent(use)
        if isinstance(parent, cst.Attribute) and parent.value is use and parent.attr.value in _FILLING:
            call = a.parent(parent)
            if isinstance(call, cst.Call) and not all(a.is_host_data(arg.value) for arg in call.args):
                return False
        elif isinstance(parent, cst.Subscript) and parent.value is use:
            target = a.parent(parent)
            store = a.parent(target) if isinstance(target, cst.AssignTarget) else None
            if isinstance(store, cst.Assign) and not a.is_host_data(store.value):
                return False
        elif isinstance(parent, cst.AugAssign) and parent.target is use and not a.is_host_data(parent.value):
            return False
    return True


def _is_ndarray_source(a: ModuleAnalysis, expr: cst.BaseExpression) -> bool:
    """Host data that is an ndarray (not a Python number or list, whose methods differ)."""
    return (
        a.python_number_type(expr) is None
        and not isinstance(expr, (cst.List, cst.Tuple))
        and a.is_host_data(expr)
    )


def number_kind(a: ModuleAnalysis, expr: cst.CSTNode) -> str | None:
    """Like :func:`literal_kind`, plus "number" for any other Python bool/int/float value."""
    kind = literal_kind(expr)
    if kind is not None:
        return kind
    if a.value(expr).kind is Kind.NUMBER:
        return "number"
    if isinstance(expr, cst.Name):  # a parameter annotated ``int``/``float``/``bool``
        scope = a.scope(expr)
        refs = [r for acc in (scope.accesses[expr.value] if scope else ()) if acc.node is expr for r in acc.referents]
        param = getattr(refs[0], "node", None) if len(refs) == 1 else None
        if isinstance(param, cst.Param):
            ann = param.annotation
            if ann is not None and isinstance(ann.annotation, cst.Name):
                return {"int": "int", "bool": "bool", "float": "float"}.get(ann.annotation.value)
    return None
