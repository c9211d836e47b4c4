"""Type tests that narrow a name: inside ``if isinstance(x, torch.Tensor):`` (or an ``elif``, or
one operand of an ``and`` test), ``x`` is a tensor, whatever reached it.

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

if TYPE_CHECKING:
    from .module import ModuleAnalysis

_SCOPES = (cst.FunctionDef, cst.ClassDef, cst.Lambda)


def narrowed_to_tensor(a: ModuleAnalysis, name: cst.Name) -> bool:
    """Is this use of ``name`` inside the body of an ``if`` whose test proves it a tensor?"""
    child: cst.CSTNode = name
    for anc in a.ancestors(name):
        if isinstance(anc, _SCOPES):
            return False  # a test outside the function says nothing about a call made later
        if (
            isinstance(anc, cst.If)
            and child is anc.body
            and _proves_tensor(a, anc.test, name.value)
            and name.value not in a.effects(anc.body).writes
        ):
            return True
        child = anc
    return False


def _proves_tensor(a: ModuleAnalysis, test: cst.BaseExpression, var: str) -> bool:
    if isinstance(test, cst.BooleanOperation) and isinstance(test.operator, cst.And):
        return _proves_tensor(a, test.left, var) or _proves_tensor(a, test.right, var)
    if not isinstance(test, cst.Call) or a.callee(test) != "builtins.isinstance":
        return False
    args = positional(test)
    if len(args) != 2 or len(test.args) != 2:
        return False
    subject, kind = args[0].value, args[1].value
    if not (isinstance(subject, cst.Name) and subject.value == var):
        return False
    kinds = [el.value for el in kind.elements] if isinstance(kind, cst.Tuple) else [kind]
    return bool(kinds) and all(a.qualname(k) in TENSOR_TYPES for k in kinds)
