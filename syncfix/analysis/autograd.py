"""Autograd: proofs that a value carries no autograd history, and that code runs with grad off."""

from __future__ import annotations

from typing import TYPE_CHECKING, cast

import libcst as cst
from libcst.metadata import GlobalScope

from .fixpoint import solve
from .pynumbers import number_kind
from .syntax import keyword, positional, stored_names
from .torch_api import BOOL_INT, FLOAT_FACTORIES, GRAD_ON, NO_GRAD, TENSOR_NAMESPACES
from .values import Kind

if TYPE_CHECKING:
    from .module import ModuleAnalysis


def is_grad_free(a: ModuleAnalysis, expr: cst.CSTNode) -> bool:
    """Provably carries no autograd history and does not require grad: integer/bool dtypes,
    factories without ``requires_grad``, ``.detach()``, and pure ops over such values."""
    return cast(bool, solve(a.solver, "grad", expr, lambda n: _is_grad_free(a, n), True))


def _is_grad_free(a: ModuleAnalysis, e: cst.CSTNode) -> bool:
    v = a.value(e)
    if not v.is_tensor:
        # a number, dtype, device, string...: cannot carry grad; unknown values might be tensors
        return v.kind not in (Kind.UNKNOWN, Kind.MODULE, Kind.BOTTOM) or number_kind(a, e) is not None
    if a.dtype_of(e) in BOOL_INT:
        return True
    if isinstance(e, cst.Name):
        values = a.reaching_values(e)
        if values is None or _requires_grad_set(a, e.value):
            return False
        return all(a.is_grad_free(v) for v in values)
    if isinstance(e, cst.AugAssign):
        return a.is_grad_free(e.target) and a.is_grad_free(e.value)
    if isinstance(e, (cst.BinaryOperation,)):
        return a.is_grad_free(e.left) and a.is_grad_free(e.right)
    if isinstance(e, cst.UnaryOperation):
        return a.is_grad_free(e.expression)
    if isinstance(e, cst.Comparison):
        return True
    if isinstance(e, cst.Subscript):
        return a.is_grad_free(e.value)
    if isinstance(e, cst.Attribute):
        return e.attr.value == "data" or e.attr.value in ("T", "mT") and a.is_grad_free(e.value)
    if isinstance(e, cst.Call):
        rg = keyword(e, "requires_grad")
        if rg is not None and not (isinstance(rg.value, cst.Name) and rg.value.value == "False"):
            return False
        if any(arg.star == "**" for arg in e.args):
            return False  # ``**kwargs`` may hold ``requires_grad=True``
        name = a.callee(e)
        func = e.func
        if isinstance(func, cst.Attribute) and a.is_tensor(func.value):
            if func.attr.value == "detach":
                return True
            if func.attr.value in ("requires_grad_", "backward", "register_hook"):
                return False
            return a.is_grad_free(func.value) and all(a.is_grad_free(arg.value) for arg in e.args)
        if name is None or not name.startswith(TENSOR_NAMESPACES) or not a.is_pure_call(e):
            return False
        short = name.rsplit(".", 1)[-1]
        if short in FLOAT_FACTORIES or short in ("tensor", "full", "arange", "scalar_tensor"):
            return True
        if short.endswith("_like"):
            return True
        return all(a.is_grad_free(arg.value) for arg in e.args)
    return False


def _requires_grad_set(a: ModuleAnalysis, name: str) -> bool:
    """May a tensor bound to ``name`` be made to require grad after it is made? Yes where the
    module turns ``requires_grad`` on for anything (``t.requires_grad_()``, ``t.requires_grad =
    True``, ``setattr(t, "requires_grad", ...)``): through a loop variable or a container it may
    be this tensor."""
    if a.cache.requires_grad_set is None:
        a.cache.requires_grad_set = _turns_grad_on(a)
    return a.cache.requires_grad_set


def _turns_grad_on(a: ModuleAnalysis) -> bool:
    for node in a.structure.of_type(cst.Attribute):
        assert isinstance(node, cst.Attribute)
        attr = node.attr.value
        parent = a.parent(node)
        if attr == "requires_grad_" and isinstance(parent, cst.Call) and parent.func is node:
            args = parent.args
            if not (len(args) == 1 and isinstance(args[0].value, cst.Name) and args[0].value.value == "False"):
                return True
        elif attr == "requires_grad" and isinstance(parent, (cst.AssignTarget, cst.AugAssign, cst.AnnAssign)):
            value = getattr(a.parent(parent), "value", None) if isinstance(parent, cst.AssignTarget) else parent.value
            if not (isinstance(value, cst.Name) and value.value == "False"):
                return True
    for call in a.calls_named("setattr"):
        args = positional(call)
        named = args[1].value if len(args) > 1 else None
        if not (isinstance(named, cst.SimpleString) and "requires_grad" not in named.value):
            return True
    return False


def in_no_grad(a: ModuleAnalysis, node: cst.CSTNode) -> bool:
    """Inside ``with torch.no_grad()``/``inference_mode()`` or a function decorated so."""
    def mode(expr: cst.BaseExpression) -> bool | None:
        """True: turns grad off; False: may turn it back on; None: unrelated."""
        target = expr.func if isinstance(expr, cst.Call) else expr
        name = a.qualname(target)
        if name in NO_GRAD:
            # ``inference_mode(False)`` (any argument) may leave grad on
            return not (isinstance(expr, cst.Call) and expr.args)
        if name in GRAD_ON:
            return False
        return None

    for anc in a.ancestors(node):  # innermost first: the nearest mode wins
        if isinstance(anc, cst.With):
            for item in reversed(anc.items):
                m = mode(item.item)
                if m is not None:
                    return m
        if isinstance(anc, (cst.FunctionDef, cst.Lambda)):
            if isinstance(anc, cst.FunctionDef):
                for dec in anc.decorators:
                    m = mode(dec.decorator)
                    if m is not None:
                        return m
            return False
    return False


def backward_checked(a: ModuleAnalysis, name: cst.CSTNode) -> bool:
    """Is ``name`` a tensor on which ``name.backward()`` (or ``torch.autograd.backward(name)``),
    with no gradient argument, ran earlier in the same block, the name unchanged since? Then it
    is a real floating tensor of one element: ``backward`` raises for anything else ("grad can
    be implicitly created only for real scalar outputs"; integer tensors cannot require grad).
    Statements in between that write the name, change it in place, or may run unknown code that
    reads it, void the proof (``resize_``/``set_`` could change its shape or dtype)."""
    if not isinstance(name, cst.Name):
        return False
    # a name other code can rebind (module-level, ``global``, ``nonlocal``): any unknown call
    # in between voids the proof, not only one that reads it
    scope = a.scope(name)
    shared = isinstance(scope, GlobalScope) or any(
        getattr(asg, "scope", scope) is not scope for asg in a.bindings(name)
    )
    for prev in a.statements_before(a.statement_of(name)) or ():
        if not isinstance(prev, cst.SimpleStatementLine) or name.value in stored_names(prev):
            return False
        if any(_is_plain_backward(a, small, name.value) for small in prev.body):
            return True
        fx = a.effects(prev)
        if name.value in fx.inplace or (fx.may_mutate_anything and (shared or name.value in fx.reads)):
            return False
    return False


def _is_plain_backward(a: ModuleAnalysis, small: cst.BaseSmallStatement, name: str) -> bool:
    call = small.value if isinstance(small, cst.Expr) else None
    if not isinstance(call, cst.Call):
        return False
    if any(arg.keyword is not None and arg.keyword.value in ("gradient", "grad_tensors") for arg in call.args):
        return False
    func = call.func
    if isinstance(func, cst.Attribute) and func.attr.value == "backward":
        receiver = func.value
        return isinstance(receiver, cst.Name) and receiver.value == name and not positional(call)
    if a.callee(call) == "torch.autograd.backward":
        args = positional(call)
        first = args[0].value if args else None
        return len(args) == 1 and isinstance(first, cst.Name) and first.value == name
    return False
