"""Type tests that narrow a name: inside ``if isinstance(x, torch.Tensor):`` or ``if
torch.is_tensor(x):`` (or an ``elif``, or one operand of an ``and`` test, or the first branch of
``a if test else b``), ``x`` is a tensor, whatever reached it; inside
``if isinstance(x, (int, float)):`` it is a host number (a Python ``int``/``float``/``bool``, or a
NumPy float64, which subclasses ``float``); inside ``if isinstance(x, list):`` (or ``tuple``,
``dict``) it is that container, whose item stores write no tensor's memory.

Only the ``if`` body is narrowed, and only where the body never rebinds the name (so the value
tested is the value used). The device, dtype and shape stay unknown: the test says nothing
about them, and subclasses of ``torch.Tensor`` pass it too (as they pass a ``torch.Tensor``
annotation).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import libcst as cst

from .syntax import positional
from .torch_api import TENSOR_TYPES
from .values import Kind

if TYPE_CHECKING:
    from .module import ModuleAnalysis

_SCOPES = (cst.FunctionDef, cst.ClassDef, cst.Lambda)


def narrowed_kind(a: ModuleAnalysis, name: cst.Name) -> Kind | None:
    """``Kind.TENSOR``, ``Kind.NUMBER`` or ``Kind.OTHER`` (a list, tuple or dict) where this use
    of ``name`` is inside the body of an ``if`` whose test proves it one; None elsewhere."""
    child: cst.CSTNode = name
    for anc in a.ancestors(name):
        if isinstance(anc, _SCOPES):
            return None  # a test outside the function says nothing about a call made later
        if isinstance(anc, cst.IfExp) and child is anc.body:
            # ``val.to(device) if torch.is_tensor(val) else val``: an expression binds no name
            # (but a walrus, which none of these tests holds)
            kind = _proven_kind(a, anc.test, name.value)
            if kind is not None and not a.nodes_within(anc.body, cst.NamedExpr):
                return kind
        if isinstance(anc, cst.If) and child is anc.body:
            # the test first: most are no type test, and a body's effects cost a walk of it
            kind = _proven_kind(a, anc.test, name.value)
            if kind is not None and name.value not in a.effects(anc.body).writes:
                return kind
        child = anc
    return None


def _proven_kind(a: ModuleAnalysis, test: cst.BaseExpression, var: str) -> Kind | None:
    if isinstance(test, cst.BooleanOperation) and isinstance(test.operator, cst.And):
        return _proven_kind(a, test.left, var) or _proven_kind(a, test.right, var)
    if isinstance(test, cst.Call) and a.callee(test) == "torch.is_tensor" and len(test.args) == 1:
        subject = test.args[0].value
        return Kind.TENSOR if isinstance(subject, cst.Name) and subject.value == var and not test.args[0].star else None
    if not isinstance(test, cst.Call) or a.callee(test) != "builtins.isinstance":
        return None
    args = positional(test)
    if len(args) != 2 or len(test.args) != 2:
        return None
    subject, kind = args[0].value, args[1].value
    if not (isinstance(subject, cst.Name) and subject.value == var):
        return None
    kinds = [a.qualname(el.value) for el in kind.elements] if isinstance(kind, cst.Tuple) else [a.qualname(kind)]
    if kinds and all(k in TENSOR_TYPES for k in kinds):
        return Kind.TENSOR
    if kinds and all(k in _NUMBER_TYPES for k in kinds):
        return Kind.NUMBER
    if kinds and all(k in _CONTAINER_TYPES for k in kinds):
        return Kind.OTHER
    return None


_NUMBER_TYPES = {"builtins.int", "builtins.float", "builtins.bool"}
_CONTAINER_TYPES = {"builtins.list", "builtins.tuple", "builtins.dict"}
