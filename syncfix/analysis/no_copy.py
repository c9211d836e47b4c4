"""Is ``x.to(d)`` no copy at all: ``x`` already on ``d``, placed with the same device
expression, or made like a tensor whose ``.device`` ``d`` names (``torch.ones_like(s).to(s.device)``)?
``.to`` then returns ``x`` itself: no copy, no wait."""

from __future__ import annotations

from typing import TYPE_CHECKING

import libcst as cst

from .bindings import bound_once
from .navigation import sets_default_device_here
from .syntax import keyword, positional
from .torch_api import CPU_KEEPING_ATTRS, CPU_KEEPING_METHODS, DEFAULT_DEVICE_FACTORIES

if TYPE_CHECKING:
    from .module import ModuleAnalysis


def already_on_target(a: ModuleAnalysis, call: cst.Call) -> bool:
    """Was the receiver of ``x.to(d)`` placed with the same device expression ``d`` names, one
    that means one device wherever it is read (a string, or a name bound once)? ``.to`` then
    returns ``x`` itself: no copy, no wait."""
    func = call.func
    assert isinstance(func, cst.Attribute)
    if _like_its_target(a, func.value, call) or _both_on_the_default_device(a, func.value, call):
        return True
    origin = a.device_origin(func.value)
    if origin is None or origin != a.device_origin(call):
        return False
    if origin.startswith('"'):
        return True
    scope = a.scope(call)
    if scope is None or not origin.isidentifier():
        return False
    try:
        return len(scope[origin]) == 1
    except Exception:  # LibCST's scope lookup of a name it does not know
        return False


def _like_its_target(a: ModuleAnalysis, receiver: cst.BaseExpression, call: cst.Call) -> bool:
    """``torch.ones_like(s).to(s.device)`` (DPM-Solver's): a ``*_like`` factory without
    ``device=`` builds on ``s``'s device, which ``.to`` then names again (``s`` a plain name)."""
    if not isinstance(receiver, cst.Call) or keyword(receiver, "device") is not None:
        return False
    name = a.callee(receiver) or ""
    args = positional(receiver)
    if not (name.startswith("torch.") and name.endswith("_like") and args):
        return False
    target = positional(call)
    dev = target[0].value if len(target) == 1 and len(call.args) == 1 else None
    if not (isinstance(dev, cst.Attribute) and dev.attr.value == "device" and isinstance(dev.value, cst.Name)):
        return False
    made_from = args[0].value
    if isinstance(made_from, cst.Name) and made_from.value == dev.value.value:
        return True  # ``torch.ones_like(s).to(s.device)``: one name, read in one expression
    root = _device_root(a, made_from, 4)
    # through a binding (``rot_vel = data[..., 0]``), the name ``.to`` reads must be that one
    return root is not None and root[0] == dev.value.value and (not root[1] or bound_once(a, dev.value))


def _device_root(a: ModuleAnalysis, expr: cst.BaseExpression, depth: int) -> tuple[str, bool] | None:
    """The name of the tensor whose device ``expr`` is on by how it was made from it: the name
    itself, an index or view of it (``data[..., 0]``, ``x.view(-1)``, ``x.data``), or a name
    bound once to one of these (motion-diffusion-model's ``rot_vel = data[..., 0]``); with
    whether a binding was followed."""
    if isinstance(expr, cst.Subscript):
        return _device_root(a, expr.value, depth)
    if isinstance(expr, cst.Attribute) and expr.attr.value in CPU_KEEPING_ATTRS:
        return _device_root(a, expr.value, depth)
    if isinstance(expr, cst.Call) and isinstance(expr.func, cst.Attribute) and expr.func.attr.value in _DEVICE_KEEPING:
        return _device_root(a, expr.func.value, depth)
    if not isinstance(expr, cst.Name):
        return None
    values = a.reaching_values(expr) if depth > 0 and bound_once(a, expr) else None
    if values and len(values) == 1 and isinstance(values[0], (cst.Subscript, cst.Attribute, cst.Call)):
        inner = _device_root(a, values[0], depth - 1)
        if inner is not None:
            return inner[0], True
    return expr.value, False


# Tensor methods whose result is on their receiver's device, whatever its arguments.
_DEVICE_KEEPING = frozenset(CPU_KEEPING_METHODS - {"pin_memory"})


def _both_on_the_default_device(a: ModuleAnalysis, receiver: cst.BaseExpression, call: cst.Call) -> bool:
    """``torch.zeros(b, 1).to(z)`` where the one binding of ``z`` that reaches it is ``z =
    torch.zeros(b, d, q)`` in the same function (DEQ's): both built without ``device=`` on the default device, whatever it is, where
    no ``with`` (``with torch.device("cuda"):``) is around either and the module sets no
    default device between them."""
    target = positional(call)
    if len(target) != 1 or len(call.args) != 1 or not isinstance(target[0].value, cst.Name):
        return False
    other = target[0].value
    values = a.reaching_values(other)
    made = values[0] if values and len(values) == 1 else None
    if isinstance(receiver, cst.Name):
        found = a.reaching_values(receiver)
        receiver = found[0] if found and len(found) == 1 and isinstance(found[0], cst.BaseExpression) else receiver
    return (
        isinstance(made, cst.Call)
        and _default_factory(a, made)
        and isinstance(receiver, cst.Call)
        and _default_factory(a, receiver)
        and a.enclosing_function(made) is a.enclosing_function(call)
        and not any(isinstance(anc, cst.With) for node in (made, receiver) for anc in a.ancestors(node))
        and not sets_default_device_here(a)
    )


def _default_factory(a: ModuleAnalysis, call: cst.Call) -> bool:
    name = a.callee(call) or ""
    return name.removeprefix("torch.") in DEFAULT_DEVICE_FACTORIES and name.startswith("torch.") and keyword(call, "device") is None
