"""Losses: the reduction of a call to a torch loss, a function (``F.cross_entropy(out, y)``) or a
loss module (``criterion(out, y)`` with ``criterion = nn.CrossEntropyLoss()`` bound at module
level, as ``self.criterion`` in any method of the class, or locally).

:func:`loss_reduction` answers ``"mean"``/``"sum"`` (a 0-d result), ``"none"``, or None when the
call is no torch loss we can name or its reduction is not a literal. Every such loss returns a
floating tensor (integer inputs raise), which dtypes.py and shapes.py read from here.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import libcst as cst

from .syntax import keyword, positional, stored_names
from .torch_api import FLOAT_LOSSES, LOSS_LEGACY_KEYWORDS, LOSS_MODULES, MODULE_SELF_METHODS

if TYPE_CHECKING:
    from .module import ModuleAnalysis

_FUNCTIONAL = "torch.nn.functional."


def loss_reduction(a: ModuleAnalysis, call: cst.Call) -> str | None:
    """The reduction of a call of a torch loss function or loss module, or None."""
    result: str | None = a.solver.get("loss-reduction", call, lambda c: _loss_reduction(a, c), None, None)
    return result


def _loss_reduction(a: ModuleAnalysis, call: cst.Call) -> str | None:
    name = a.direct_callee(call)
    if name is not None and name.startswith(_FUNCTIONAL):
        if name[len(_FUNCTIONAL) :] not in FLOAT_LOSSES or len(positional(call)) > 3:
            return None  # the 4th positional argument of several is the legacy size_average
        return _reduction(call)
    func = call.func
    if not a.solver.get("mentions-loss", a.module, lambda m: _names_a_loss(a), False, False):
        return None  # no loss module in this file (a cheap filter before following bindings)
    if isinstance(func, cst.Name):
        makers = a.reaching_values(func)
    elif isinstance(func, cst.Attribute) and isinstance(func.value, cst.Name) and func.value.value == "self":
        makers = _self_values(a, func)
    elif isinstance(func, cst.Call):
        makers = [func]  # ``nn.CrossEntropyLoss()(output, target)``: made and called at once
    else:
        return None
    if not makers:
        return None
    reductions = {_module_reduction(a, m) for m in makers}
    return reductions.pop() if len(reductions) == 1 else None


def _names_a_loss(a: ModuleAnalysis) -> bool:
    """Does a name in the module spell a loss module (``...Loss``)? Every loss module's name is
    written somewhere in the code that makes one (``nn.MSELoss``, an import of it)."""
    return any("Loss" in n.value for n in a.structure.of_type(cst.Name) if isinstance(n, cst.Name))


def _reduction(call: cst.Call) -> str | None:
    """The literal ``reduction=`` of a loss call or constructor (``"mean"`` when absent), or
    what literal legacy ``size_average=``/``reduce=`` make of it (they override ``reduction=``,
    as ``torch.nn._reduction.legacy_get_string`` does: both default to True)."""
    legacy = [keyword(call, k) for k in LOSS_LEGACY_KEYWORDS]
    if any(arg is not None for arg in legacy):
        flags = [_literal_flag(arg.value) if arg is not None else True for arg in legacy]
        if None in flags:
            return None
        size_average, reduce = flags
        return "mean" if size_average and reduce else "sum" if reduce else "none"
    arg = keyword(call, "reduction")
    if arg is None:
        return "mean"
    value = arg.value.evaluated_value if isinstance(arg.value, cst.SimpleString) else None
    return value if value in ("mean", "sum", "none") else None


def _literal_flag(value: cst.BaseExpression) -> bool | None:
    """``True``/``False`` (and ``None``, the default: True) as written, else None (unknown)."""
    if isinstance(value, cst.Name) and value.value in ("True", "False", "None"):
        return value.value != "False"
    return None


def _module_reduction(a: ModuleAnalysis, maker: cst.CSTNode) -> str | None:
    """``nn.CrossEntropyLoss(...)`` (through ``.to(...)``/``.cuda()``...): its reduction."""
    while (
        isinstance(maker, cst.Call)
        and isinstance(maker.func, cst.Attribute)
        and maker.func.attr.value in MODULE_SELF_METHODS
        and isinstance(maker.func.value, cst.Call)
    ):
        maker = maker.func.value
    if not isinstance(maker, cst.Call) or positional(maker):
        return None  # positional arguments may be the legacy size_average/reduce
    name = a.direct_callee(maker)
    if name is None or not name.startswith("torch.nn.") or name.rsplit(".", 1)[-1] not in LOSS_MODULES:
        return None
    if name.startswith(("torch.nn.functional.", "torch.nn.utils.")):
        return None
    return _reduction(maker)


def _self_values(a: ModuleAnalysis, attr: cst.Attribute) -> list[cst.CSTNode] | None:
    """Every value assigned to ``self.<attr>`` in the class around ``attr``, or None when the
    attribute is bound in some other way (a tuple target, ``op=``, a class attribute)."""
    cls = next((n for n in a.ancestors(attr) if isinstance(n, cst.ClassDef)), None)
    if cls is None:
        return None
    wanted = attr.attr.value
    values: list[cst.CSTNode] = []
    other = False

    def is_self_attr(t: cst.BaseExpression) -> bool:
        return (
            isinstance(t, cst.Attribute)
            and isinstance(t.value, cst.Name)
            and t.value.value == "self"
            and t.attr.value == wanted
        )

    class V(cst.CSTVisitor):
        def visit_Assign(self, node: cst.Assign) -> None:
            nonlocal other
            for t in node.targets:
                if is_self_attr(t.target):
                    values.append(node.value)
                elif isinstance(t.target, (cst.Tuple, cst.List)) and any(
                    is_self_attr(el.value) for el in t.target.elements
                ):
                    other = True  # ``self.a, self.b = ...``: not followed

        def visit_AugAssign(self, node: cst.AugAssign) -> None:
            nonlocal other
            other = other or is_self_attr(node.target)

        def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
            if is_self_attr(node.target) and node.value is not None:
                values.append(node.value)

    a.walk(cls.body, V())
    class_level: set[str] = set()
    for stmt in cls.body.body:  # a class attribute of that name is another binding
        if isinstance(stmt, cst.SimpleStatementLine):
            class_level |= stored_names(stmt)
    if other or wanted in class_level:
        return None
    code = a.module.code_for_node(cls)
    if "setattr" in code or "__dict__" in code:
        return None  # ``setattr(self, "criterion", ...)`` would escape this scan
    return values
