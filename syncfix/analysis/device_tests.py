"""Tests of a tensor's device around code: in the ``else`` of ``if not x.is_cuda:`` (or the body
of ``if x.is_cuda:``), ``x`` is on a GPU, and so is a tensor made with ``device=x.device``
(semseg's ``output = torch.zeros(..., device=input.device)`` before its CUDA kernel branch):
its ``.cuda()`` copies nothing the host waits for.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import libcst as cst
from libcst.metadata import Assignment

from .syntax import keyword

if TYPE_CHECKING:
    from .module import ModuleAnalysis

_SCOPES = (cst.FunctionDef, cst.ClassDef, cst.Lambda)


def tested_on_cuda(a: ModuleAnalysis, x: cst.BaseExpression) -> bool:
    """Is ``x`` provably on a GPU by an ``is_cuda`` test around it, of ``x`` itself or of the
    tensor whose device it was made on (a name bound once to ``torch.zeros(..., device=t.device)``)?"""
    subjects = {a.module.code_for_node(x)}
    if isinstance(x, cst.Name):
        values = a.reaching_values(x)
        if values and len(values) == 1 and isinstance(values[0], cst.Call):
            dev = keyword(values[0], "device")
            if dev is not None and isinstance(dev.value, cst.Attribute) and dev.value.attr.value == "device":
                subjects.add(a.module.code_for_node(dev.value.value))
    child: cst.CSTNode = x
    for anc in a.ancestors(x):
        if isinstance(anc, _SCOPES):
            return False
        if isinstance(anc, (cst.If, cst.IfExp)):
            says = _is_cuda_test(a, anc.test, subjects)
            if says is not None and child is (anc.body if says else anc.orelse):
                return True
        if isinstance(anc, (cst.IndentedBlock, cst.Module)) and isinstance(x, cst.Name):
            if any(_guards(a, stmt, subjects, x) for stmt in _before(anc, child)):
                return True
        child = anc
    return False


def _before(block: cst.IndentedBlock | cst.Module, child: cst.CSTNode) -> list[cst.CSTNode]:
    """The statements of ``block`` before the one holding ``child``."""
    body: list[cst.CSTNode] = list(block.body)
    return body[: body.index(child)] if child in body else []


def _guards(a: ModuleAnalysis, stmt: cst.CSTNode, subjects: set[str], x: cst.Name) -> bool:
    """Is ``stmt`` an ``if`` that leaves (``raise``, ``return``) unless ``x`` is on a GPU (dist
    syncbn's ``if x.is_cuda: ... else: raise NotImplemented``), with ``x`` bound before it only?"""
    if not isinstance(stmt, cst.If) or stmt.orelse is not None and not isinstance(stmt.orelse, cst.Else):
        return False
    says = _is_cuda_test(a, stmt.test, subjects)
    if says is None:
        return False
    other = stmt.orelse.body if says and stmt.orelse is not None else None if says else stmt.body
    if other is None or not _leaves(other):
        return False
    order = a.structure.order
    return all(
        isinstance(asg, Assignment) and order.get(asg.node, -1) < order.get(stmt, -1) for asg in a.bindings(x)
    )


def _leaves(block: cst.BaseSuite) -> bool:
    last: cst.CSTNode | None = block.body[-1] if isinstance(block, cst.IndentedBlock) and block.body else block
    small = last.body[-1] if isinstance(last, (cst.SimpleStatementLine, cst.SimpleStatementSuite)) and last.body else None
    return isinstance(small, (cst.Raise, cst.Return))


def _is_cuda_test(a: ModuleAnalysis, test: cst.BaseExpression, subjects: set[str]) -> bool | None:
    """True for ``s.is_cuda``, False for ``not s.is_cuda`` (``s`` one of ``subjects``); else None."""
    negated = isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not)
    inner = test.expression if isinstance(test, cst.UnaryOperation) and negated else test
    if isinstance(inner, cst.Attribute) and inner.attr.value == "is_cuda" and a.module.code_for_node(inner.value) in subjects:
        return not negated
    return None
