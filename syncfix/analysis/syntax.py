"""Syntax helpers: questions about LibCST nodes that need no scopes, bindings or values.

Names (:func:`root_name`, :func:`dotted_name`), call arguments (:func:`keyword`,
:func:`positional`, :func:`int_args`), the names a statement binds (:func:`target_names`,
:func:`stored_names`), and the one classifier of number literals (:func:`literal_kind`,
:func:`literal_number`).
"""

from __future__ import annotations

from collections.abc import Iterator

import libcst as cst

from ..walk import memo, walk
from .torch_api import DEVICE_NAME_WORDS


def root_name(expr: cst.BaseExpression) -> str | None:
    """``x`` for ``x``, ``x[0]``, ``x.a.b``, ``x.view(-1)[1:]``; None when there is no name root."""
    while True:
        if isinstance(expr, cst.Name):
            return expr.value
        if isinstance(expr, cst.Subscript):
            expr = expr.value
        elif isinstance(expr, cst.Attribute):
            expr = expr.value
        elif isinstance(expr, cst.Call) and isinstance(expr.func, cst.Attribute):
            expr = expr.func.value
        else:
            return None

def dotted_name(expr: cst.BaseExpression) -> str | None:
    """``a.b.c`` for an Attribute chain of Names, else None."""
    parts: list[str] = []
    while isinstance(expr, cst.Attribute):
        parts.append(expr.attr.value)
        expr = expr.value
    if isinstance(expr, cst.Name):
        parts.append(expr.value)
        return ".".join(reversed(parts))
    return None

def last_name(expr: cst.BaseExpression) -> str:
    """The name an expression ends in: ``x`` of ``x``, ``device`` of ``batch["ids"][i].device``
    ("" for anything else)."""
    return expr.attr.value if isinstance(expr, cst.Attribute) else expr.value if isinstance(expr, cst.Name) else ""


def named_as_device(expr: cst.BaseExpression) -> bool:
    """``args.device``, ``self.gpu_id``, ``local_rank``: a name or attribute whose last part says
    it holds a device or a device index (a hint, never a proof)."""
    lowered = last_name(expr).lower()
    return any(word in lowered for word in DEVICE_NAME_WORDS)


def keyword(call: cst.Call, name: str) -> cst.Arg | None:
    for arg in call.args:
        if arg.keyword is not None and arg.keyword.value == name:
            return arg
    return None

def positional(call: cst.Call) -> list[cst.Arg]:
    return [a for a in call.args if a.keyword is None and not a.star]

def shape_item_of(expr: cst.BaseExpression) -> cst.BaseExpression | None:
    """For ``x.shape[k]`` or ``x.size()[k]`` (``k`` an int literal): ``x``; else None."""
    if not (
        isinstance(expr, cst.Subscript) and len(expr.slice) == 1
        and isinstance(expr.slice[0].slice, cst.Index) and isinstance(expr.slice[0].slice.value, cst.Integer)
    ):
        return None
    holder = expr.value
    if isinstance(holder, cst.Attribute) and holder.attr.value == "shape":
        return holder.value
    if isinstance(holder, cst.Call) and not holder.args and isinstance(holder.func, cst.Attribute) and holder.func.attr.value == "size":
        return holder.func.value  # dgcnn's ``batch_size = data.size()[0]``
    return None


def display_argument(call: cst.Call, *, repeated: bool = False) -> bool:
    """Is the first positional argument a list or tuple display (with ``repeated``, also one
    repeated: ``[t] * n``, img2img's ``torch.tensor([t_enc] * batch_size)``)?"""
    args = positional(call)
    first = args[0].value if args else None
    if repeated and isinstance(first, cst.BinaryOperation) and isinstance(first.operator, cst.Multiply):
        first = first.left if isinstance(first.left, (cst.List, cst.Tuple)) else first.right
    return isinstance(first, (cst.List, cst.Tuple))

def target_names(target: cst.BaseExpression) -> Iterator[cst.Name]:
    if isinstance(target, cst.Name):
        yield target
    elif isinstance(target, (cst.Tuple, cst.List)):
        for el in target.elements:
            yield from target_names(el.value)
    elif isinstance(target, cst.StarredElement):
        yield from target_names(target.value)

def stored_names(node: cst.CSTNode) -> set[str]:
    """Names bound anywhere in ``node`` (targets, loop variables, imports; not nested defs)."""
    cache = memo("stores", node)
    if cache is not None:
        hit = cache.get(("stores", node))
        if hit is not None:
            return hit  # type: ignore[return-value]
    found: set[str] = set()

    class V(cst.CSTVisitor):
        def visit_FunctionDef(self, n: cst.FunctionDef) -> bool:
            found.add(n.name.value)
            return n is node

        def visit_ClassDef(self, n: cst.ClassDef) -> bool:
            found.add(n.name.value)
            return False

        def visit_AssignTarget(self, n: cst.AssignTarget) -> None:
            found.update(t.value for t in target_names(n.target))

        def visit_AnnAssign(self, n: cst.AnnAssign) -> None:
            found.update(t.value for t in target_names(n.target))

        def visit_AugAssign(self, n: cst.AugAssign) -> None:
            found.update(t.value for t in target_names(n.target))

        def visit_For(self, n: cst.For) -> None:
            found.update(t.value for t in target_names(n.target))

        def visit_CompFor(self, n: cst.CompFor) -> None:
            found.update(t.value for t in target_names(n.target))

        def visit_NamedExpr(self, n: cst.NamedExpr) -> None:
            found.update(t.value for t in target_names(n.target))

        def visit_AsName(self, n: cst.AsName) -> None:
            found.update(t.value for t in target_names(n.name))

        def visit_Del(self, n: cst.Del) -> None:
            found.update(t.value for t in target_names(n.target))

        def visit_Import(self, n: cst.Import) -> None:
            for alias in n.names:
                target: cst.BaseExpression = alias.asname.name if alias.asname else alias.name
                while isinstance(target, cst.Attribute):
                    target = target.value
                if isinstance(target, cst.Name):
                    found.add(target.value)

        def visit_ImportFrom(self, n: cst.ImportFrom) -> None:
            if not isinstance(n.names, cst.ImportStar):
                for alias in n.names:
                    target = alias.asname.name if alias.asname else alias.name
                    if isinstance(target, cst.Name):
                        found.add(target.value)

    walk(node, V())
    if cache is not None:
        cache[("stores", node)] = frozenset(found)
    return found

def parallel_element(
    target: cst.BaseExpression, value: cst.BaseExpression, name: str
) -> cst.BaseExpression | None:
    """``e2`` for ``b`` in ``a, b = e1, e2`` (same length, no starred items), else None."""
    if not (isinstance(target, (cst.Tuple, cst.List)) and isinstance(value, (cst.Tuple, cst.List))):
        return None
    if len(target.elements) != len(value.elements):
        return None
    if any(isinstance(e, cst.StarredElement) for e in (*target.elements, *value.elements)):
        return None
    hits = [
        v.value
        for t, v in zip(target.elements, value.elements, strict=True)
        if isinstance(t.value, cst.Name) and t.value.value == name
    ]
    return hits[0] if len(hits) == 1 else None

def through_call(expr: cst.BaseExpression) -> bool:
    """Is there a call in the attribute/subscript chain ``expr`` (``a.b().c``)?"""
    while isinstance(expr, (cst.Attribute, cst.Subscript, cst.Call)):
        if isinstance(expr, cst.Call):
            return True
        expr = expr.value
    return False

def is_none(arg: cst.Arg | None) -> bool:
    return arg is not None and isinstance(arg.value, cst.Name) and arg.value.value == "None"


# Where ``torch.nn.functional`` functions take ``inplace`` by position (``F.relu(x, True)``).
INPLACE_POSITION = {
    "relu": 1, "relu6": 1, "selu": 1, "silu": 1, "mish": 1, "hardswish": 1, "hardsigmoid": 1,
    "elu": 2, "celu": 2, "leaky_relu": 2, "threshold": 3, "hardtanh": 3, "rrelu": 4,
    "dropout": 3, "dropout1d": 3, "dropout2d": 3, "dropout3d": 3, "alpha_dropout": 3,
    "feature_alpha_dropout": 3,
}


def in_place_keyword(call: cst.Call) -> bool:
    """Is ``inplace`` given, by name or (for a function named as in :data:`INPLACE_POSITION`)
    by position, and not a literal ``False`` (``F.relu(x, inplace=True)``, ``F.relu(x, True)``)?"""
    arg = keyword(call, "inplace")
    if arg is None:
        func = call.func
        name = func.attr.value if isinstance(func, cst.Attribute) else func.value if isinstance(func, cst.Name) else ""
        at = INPLACE_POSITION.get(name)
        args = positional(call)
        if at is None or len(args) <= at:
            return any(a.star for a in call.args) and at is not None  # ``F.relu(*args)``: may be
        arg = args[at]
    return not (isinstance(arg.value, cst.Name) and arg.value.value == "False")

def only_dtype_args(call: cst.Call) -> bool:
    return all(a.keyword is not None and a.keyword.value == "dtype" for a in call.args)

def int_args(call: cst.Call) -> list[int] | None:
    """The arguments of ``reshape(1, 1)``/``view((1,))`` as ints, or None."""
    args = positional(call)
    if len(args) != len(call.args):
        return None
    items = [a.value for a in args]
    if len(items) == 1 and isinstance(items[0], (cst.Tuple, cst.List)):
        items = [el.value for el in items[0].elements]
    out = []
    for item in items:
        neg = isinstance(item, cst.UnaryOperation) and isinstance(item.operator, cst.Minus)
        inner = item.expression if isinstance(item, cst.UnaryOperation) and neg else item
        if not isinstance(inner, cst.Integer):
            return None
        out.append(-int(inner.value) if neg else int(inner.value))
    return out

def literal_kind(expr: cst.CSTNode, *, one_minus: bool = False) -> str | None:
    """``"bool"``, ``"int"`` or ``"float"`` for a literal Python number, else None: the one
    classifier of number literals.

    By default a literal under any chain of unary ``+``/``-`` counts (``--3``, ``+2.5``), a
    signed name does not (``-True`` is None). With ``one_minus``, the reading the dtype-kind and
    one-element-shape facts are built on: at most one leading ``-`` over any literal, so
    ``-True`` is ``"bool"`` while ``+3`` and ``--3`` are None.
    """
    if one_minus:
        if isinstance(expr, cst.UnaryOperation) and isinstance(expr.operator, cst.Minus):
            expr = expr.expression
    elif isinstance(expr, cst.UnaryOperation) and isinstance(expr.operator, (cst.Minus, cst.Plus)):
        return literal_kind(expr.expression) if not isinstance(expr.expression, cst.Name) else None
    if isinstance(expr, cst.Integer):
        return "int"
    if isinstance(expr, cst.Float):
        return "float"
    if isinstance(expr, cst.Name) and expr.value in ("True", "False"):
        return "bool"
    return None


def literal_number(expr: cst.BaseExpression, *, nested_signs: bool = True) -> bool | int | float | None:
    """The value of a number literal (``3``, ``-2.5``, ``True``), else None; a signed bool
    (``-True``) is None. Signs may be chained (``--3`` is 3) unless ``nested_signs`` is False:
    then at most one sign, as :func:`ast.literal_eval` reads literals (the reading the SFX2xx
    comparison rewrites were proven with)."""
    if isinstance(expr, cst.Name) and expr.value in ("True", "False"):
        return expr.value == "True"
    if isinstance(expr, (cst.Integer, cst.Float)):
        return expr.evaluated_value
    if isinstance(expr, cst.UnaryOperation) and isinstance(expr.operator, (cst.Minus, cst.Plus)):
        if not nested_signs and isinstance(expr.expression, cst.UnaryOperation):
            return None
        inner = literal_number(expr.expression)
        if isinstance(inner, (int, float)) and not isinstance(inner, bool):
            return -inner if isinstance(expr.operator, cst.Minus) else inner
    return None


def literal_index(expr: cst.Subscript) -> int | None:
    """``x[2]`` / ``x[-1]``: the one literal int index of a subscript, else None."""
    if len(expr.slice) != 1 or not isinstance(expr.slice[0].slice, cst.Index):
        return None
    value = expr.slice[0].slice.value
    negative = isinstance(value, cst.UnaryOperation) and isinstance(value.operator, cst.Minus)
    inner = value.expression if isinstance(value, cst.UnaryOperation) and negative else value
    if not isinstance(inner, cst.Integer):
        return None
    n = int(inner.value, 0)
    return -n if negative else n


def element_at(value: cst.BaseExpression, path: list[int]) -> cst.BaseExpression | None:
    """What a destructuring target at ``path`` takes from ``value`` when ``value`` is a display
    (``n, d = x.shape[-2], x.device`` gives ``n`` ``x.shape[-2]``, path ``[0]``); None where a
    step is no tuple or list display, or a starred element."""
    for index in path:
        if not isinstance(value, (cst.Tuple, cst.List)) or index >= len(value.elements):
            return None
        element = value.elements[index]
        if isinstance(element, cst.StarredElement):
            return None
        value = element.value
    return value

