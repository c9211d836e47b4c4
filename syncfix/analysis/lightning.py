"""Lightning's batches: already on the module's device when a step gets them.

A ``LightningModule``'s ``training_step(self, batch, batch_idx)`` (and ``validation_step``,
``test_step``, ``predict_step``) receives a batch Lightning has moved to the module's device
(its ``transfer_batch_to_device`` hook), so ``batch["img"].to(self.device)`` there copies
nothing. A likely fact: it keeps a finding quiet, never makes a fix.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import libcst as cst
from libcst.metadata import Assignment

from . import callgraph
from .navigation import target_path
from .torch_api import CPU_KEEPING_ATTRS

if TYPE_CHECKING:
    from .module import ModuleAnalysis

LIGHTNING_MODULES = frozenset(
    {
        "pytorch_lightning.LightningModule",
        "pytorch_lightning.core.LightningModule",
        "pytorch_lightning.core.module.LightningModule",
        "lightning.LightningModule",
        "lightning.pytorch.LightningModule",
        "lightning.pytorch.core.LightningModule",
        "lightning.pytorch.core.module.LightningModule",
    }
)
LIGHTNING_STEPS = frozenset({"training_step", "validation_step", "test_step", "predict_step"})
#: a class that defines it may move its batches otherwise, or not at all
_TRANSFER_HOOK = "transfer_batch_to_device"
_MAX_DEPTH = 6
#: helpers passing the batch on (``test_step`` -> ``self.predict(batch)`` -> ``self._prepare(batch)``)
_MAX_HOPS = 2


def placed_by_lightning(a: ModuleAnalysis, expr: cst.BaseExpression) -> bool:
    """Is ``expr`` a batch, or a part of one, that a Lightning step received (directly, or
    passed on to a method of the same class: nanodet's ``self._preprocess_batch_input(batch)``)?"""
    param = _batch_param(a, expr, 0)
    return param is not None and _step_batch(a, param, _MAX_HOPS)


def _batch_param(a: ModuleAnalysis, expr: cst.BaseExpression, depth: int) -> cst.Param | None:
    """The one parameter ``expr`` is a part of: through subscripts, ``.data``, iteration and
    names bound to such parts (``imgs = batch["img"]; for img in imgs``)."""
    if depth > _MAX_DEPTH:
        return None
    if isinstance(expr, cst.Subscript):
        return _batch_param(a, expr.value, depth + 1)
    if isinstance(expr, cst.Attribute) and expr.attr.value in CPU_KEEPING_ATTRS:
        return _batch_param(a, expr.value, depth + 1)
    if not isinstance(expr, cst.Name):
        return None
    found: set[cst.Param] = set()
    for binding in a.bindings(expr):
        node = getattr(binding, "node", None)
        if isinstance(node, cst.Param):
            found.add(node)
            continue
        if not isinstance(binding, Assignment) or not isinstance(node, cst.Name):
            return None
        _, parent = target_path(a, node)
        if isinstance(parent, (cst.For, cst.CompFor)):
            source = parent.iter
        elif isinstance(parent, cst.AssignTarget):
            source = a.parent(parent).value  # type: ignore[union-attr]
            source = _handed_back(a, source) or source
        else:
            return None
        param = _batch_param(a, source, depth + 1)
        if param is None:
            return None
        found.add(param)
    return found.pop() if len(found) == 1 else None


def _handed_back(a: ModuleAnalysis, call: cst.BaseExpression) -> cst.BaseExpression | None:
    """The argument ``self.m(batch)`` returns, where the class's method ``m`` only ever
    returns that parameter (nanodet's ``batch = self._preprocess_batch_input(batch)``)."""
    if not (
        isinstance(call, cst.Call)
        and isinstance(call.func, cst.Attribute)
        and isinstance(call.func.value, cst.Name)
        and call.func.value.value == "self"
        and len(call.args) == 1
        and call.args[0].keyword is None
        and not call.args[0].star
    ):
        return None
    cls = next((up for up in a.ancestors(call) if isinstance(up, cst.ClassDef)), None)
    body = cls.body.body if cls is not None and isinstance(cls.body, cst.IndentedBlock) else ()
    method = next((s for s in body if isinstance(s, cst.FunctionDef) and s.name.value == call.func.attr.value), None)
    params = method.params.params if method is not None else ()
    if method is None or len(params) != 2 or isinstance(method.params.star_arg, cst.Param) or method.params.kwonly_params:
        return None
    returns = callgraph.return_statements(a, method)
    name = params[1].name.value
    if not returns or not all(isinstance(r.value, cst.Name) and r.value.value == name for r in returns):
        return None
    return call.args[0].value


def _step_batch(a: ModuleAnalysis, param: cst.Param, hops: int) -> bool:
    params = a.parent(param)
    fn = a.parent(params) if isinstance(params, cst.Parameters) else None
    block = a.parent(fn) if isinstance(fn, cst.FunctionDef) else None
    cls = a.parent(block) if isinstance(block, cst.IndentedBlock) else None
    if not isinstance(fn, cst.FunctionDef) or not isinstance(cls, cst.ClassDef) or not _lightning_class(a, cls):
        return False
    positional = [*params.posonly_params, *params.params]  # type: ignore[union-attr]
    if fn.name.value in LIGHTNING_STEPS:
        return len(positional) > 1 and positional[1] is param  # ``(self, batch, batch_idx)``
    if hops == 0:
        return False
    # a helper of the class: every call of it here passes a step's batch
    passed = callgraph.param_arguments(a, param, likely=True)
    if not passed:
        return False
    for arg in passed:
        source = _batch_param(a, arg, 0)
        if source is None or not _step_batch(a, source, hops - 1):
            return False
    return True


def lightning_log(a: ModuleAnalysis, call: cst.Call) -> bool:
    """Is ``call`` ``self.log(...)`` (or ``self.log_dict(...)``) in a method of a Lightning
    module? It takes tensors, and reads them when it writes a log line (mdlm's
    ``self.log(name, value=loss.item())`` reads every step, and turns the float back into a
    device tensor)."""
    func = call.func
    if not (isinstance(func, cst.Attribute) and func.attr.value in ("log", "log_dict")):
        return False
    if not (isinstance(func.value, cst.Name) and func.value.value == "self"):
        return False
    cls = next((anc for anc in a.ancestors(call) if isinstance(anc, cst.ClassDef)), None)
    return cls is not None and any(a.qualnames(base.value) & LIGHTNING_MODULES for base in cls.bases)


def _lightning_class(a: ModuleAnalysis, cls: cst.ClassDef) -> bool:
    if not any(a.qualnames(base.value) & LIGHTNING_MODULES for base in cls.bases):
        return False
    body = cls.body.body if isinstance(cls.body, cst.IndentedBlock) else ()
    return not any(isinstance(s, cst.FunctionDef) and s.name.value == _TRANSFER_HOOK for s in body)
