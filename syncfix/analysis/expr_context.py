"""LibCST's ``ExpressionContextProvider`` answer (load, store or del for each name, attribute,
subscript, tuple, list and starred element), read off the recorded tree.

LibCST's provider walks the whole module with a new visitor at every target; the scope
provider needs it, and it took about a quarter of resolving scopes. The same answer follows from
the few places that bind or delete: everything it reaches is a load, except the targets below
(``x`` in ``x = ...``, ``for x in``, ``as x``, ``def x``, parameters, ``del x``), down through
tuples, lists and starred elements to the names, attributes and subscripts they hold (whose own
parts are loads again). It never reaches an attribute's ``.attr`` name nor the type parameters
of a ``def`` or ``class``. tests/test_expr_context.py checks the two answers are equal on every
fixture, example and corpus-like source.
"""

from __future__ import annotations

import libcst as cst
from libcst.metadata import ExpressionContext

from ..walk import Structure

_HAS_CONTEXT = (cst.Name, cst.Attribute, cst.Subscript, cst.Tuple, cst.List, cst.StarredElement)
_ENDS = frozenset({cst.Name, cst.Attribute, cst.Subscript})  # below these, parts are loads


def expression_contexts(s: Structure) -> dict[cst.CSTNode, ExpressionContext]:
    """What ``ExpressionContextProvider`` resolves to for the recorded module."""
    load, store = ExpressionContext.LOAD, ExpressionContext.STORE
    out: dict[cst.CSTNode, ExpressionContext] = {}
    for node in s.of_type(*_HAS_CONTEXT):
        out[node] = load
    children = s.children

    def mark(target: cst.CSTNode, context: ExpressionContext) -> None:
        todo = [target]
        while todo:
            node = todo.pop()
            kind = type(node)
            if kind in _HAS_CONTEXT:
                out[node] = context
            if kind not in _ENDS:
                todo.extend(children[node])

    for node in s.of_type(cst.AnnAssign, cst.AugAssign, cst.NamedExpr, cst.CompFor, cst.For):
        mark(node.target, store)  # type: ignore[attr-defined]
    for node in s.of_type(cst.Assign):
        for target in node.targets:  # type: ignore[attr-defined]
            mark(target, store)
    for node in s.of_type(cst.AsName, cst.ClassDef, cst.FunctionDef, cst.Param):
        mark(node.name, store)  # type: ignore[attr-defined]
    for node in s.of_type(cst.Del):
        mark(node.target, ExpressionContext.DEL)  # type: ignore[attr-defined]
    # never reached
    for node in s.of_type(cst.Attribute):
        out.pop(node.attr, None)  # type: ignore[attr-defined]
    for node in s.of_type(cst.ClassDef, cst.FunctionDef):
        params = getattr(node, "type_parameters", None)
        if params is not None:
            for inner in _HAS_CONTEXT:
                for n in s.within(params, inner):
                    out.pop(n, None)
    return out
