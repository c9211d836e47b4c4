"""Host reads: where a tensor's value is read on the host (``.item()``, ``.tolist()``,
``float(t)``, the truth value of a test), and whether a name flows to such a read later.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import libcst as cst

from ..walk import walk
from .syntax import positional
from .torch_api import HOST_BUILTINS, HOST_METHODS, READ_BUILTIN_NAMES, READ_BUILTINS, READ_METHODS
from .values import Device, Kind

if TYPE_CHECKING:
    from .module import ModuleAnalysis


@dataclass(frozen=True)


class HostRead:
    """One host read of a tensor: ``node`` (the whole call), its ``receiver`` and ``form``
    (``"item"``, ``"tolist"``, ``"float"``, ``"int"`` or ``"bool"``)."""

    node: cst.Call
    receiver: cst.BaseExpression
    form: str


def may_be_host_read(a: ModuleAnalysis, call: cst.Call) -> bool:
    """Could ``call`` be a host read, judged on its syntax alone (no value asked)? What
    :func:`host_read` accepts always passes: a cheap filter before asking it."""
    func = call.func
    if isinstance(func, cst.Attribute) and func.attr.value in READ_METHODS:
        return True
    return a.may_end_in(func, READ_BUILTIN_NAMES)


def host_read(a: ModuleAnalysis, call: cst.Call) -> HostRead | None:
    """``call`` as a host read of a tensor's value (``t.item()``, ``t.tolist()``,
    ``float(t)``, ``int(t)``, ``bool(t)``), or None. The receiver is provably a tensor."""
    func = call.func
    if isinstance(func, cst.Attribute) and func.attr.value in READ_METHODS and not call.args:
        if a.is_tensor(func.value):
            return HostRead(call, func.value, func.attr.value)
        if a.assume_tensors and a.torch_code and a.value(func.value).kind is Kind.UNKNOWN:
            # the likely view: what is read with ``.item()`` in torch code is a tensor (in a file
            # that imports torch, or only a torch library: deep-person-reid's engines)
            return HostRead(call, func.value, func.attr.value)
        return None
    if not a.may_end_in(func, READ_BUILTIN_NAMES):
        return None
    name = a.callee(call)
    if name in READ_BUILTINS and len(call.args) == 1:
        arg = call.args[0]
        if arg.keyword is None and not arg.star and a.is_tensor(arg.value):
            return HostRead(call, arg.value, name.rsplit(".", 1)[-1])
    return None


def host_read_syncs(
    a: ModuleAnalysis, expr: cst.CSTNode, *, truth: bool = False, any_device: bool = False
) -> list[cst.CSTNode]:
    """The nodes of ``expr`` that read a (possibly) CUDA tensor's value on the host:
    ``.item()``/``.tolist()``, ``bool/int/float(t)``, and with ``truth`` (``expr`` is an
    ``if``/``while``/``assert`` test) the implicit ``bool()`` of a tensor-valued test. With
    ``any_device``, also of tensors whose device syncfix cannot name (not those on the CPU)."""
    devices = (Device.CUDA, Device.CUDA_OR_CPU, Device.UNKNOWN) if any_device else (Device.CUDA, Device.CUDA_OR_CPU)
    v = _HostReads(a, devices, any_device)
    if truth and isinstance(expr, cst.BaseExpression):
        v.truthy(expr)
    walk(expr, v)
    found = v.found
    return list({id(n): n for n in found}.values())


class _HostReads(cst.CSTVisitor):
    """The walk of :func:`host_read_syncs` (one class for every call: classes made per call
    cost their creation and a cycle for the collector, thousands of times a run)."""

    def __init__(self, a: ModuleAnalysis, devices: tuple[Device, ...], any_device: bool) -> None:
        super().__init__()
        self.a, self.devices, self.any_device = a, devices, any_device
        self.found: list[cst.CSTNode] = []

    def maybe_cuda(self, e: cst.CSTNode) -> bool:
        v = self.a.value(e)
        return v.is_tensor and v.device in self.devices

    def truthy(self, e: cst.BaseExpression) -> None:
        if isinstance(e, cst.BooleanOperation):
            self.truthy(e.left)
            self.truthy(e.right)
        elif isinstance(e, cst.UnaryOperation) and isinstance(e.operator, cst.Not):
            self.truthy(e.expression)
        elif isinstance(e, cst.IfExp):  # the test takes the truth of the value picked
            self.truthy(e.body)
            self.truthy(e.orelse)
        elif self.maybe_cuda(e):
            self.found.append(e)

    # ``a or b``, ``x if t else y``, ``not t`` inside an expression take a truth value too
    def visit_BooleanOperation(self, node: cst.BooleanOperation) -> None:
        self.truthy(node.left)

    def visit_IfExp(self, node: cst.IfExp) -> None:
        self.truthy(node.test)

    def visit_UnaryOperation(self, node: cst.UnaryOperation) -> None:
        if isinstance(node.operator, cst.Not):
            self.truthy(node.expression)

    def visit_Comparison(self, node: cst.Comparison) -> None:
        if len(node.comparisons) > 1:  # a chain is an ``and`` of its links
            self.truthy(node)
        # ``x in t`` of a tensor: ``Tensor.__contains__`` reads ``(t == x).any()`` on the host
        # (parler-tts's ``if pad_token_id in input_ids:``); not in the likely view, where a
        # dict batch or ``args.weight`` could pass for one
        if not self.a.assume_tensors and any(
            isinstance(c.operator, (cst.In, cst.NotIn)) and self.maybe_cuda(c.comparator) for c in node.comparisons
        ):
            self.found.append(node)

    def visit_Call(self, node: cst.Call) -> None:
        a, func = self.a, node.func
        if isinstance(func, cst.Attribute) and func.attr.value in ("item", "tolist"):
            if self.maybe_cuda(func.value) or (
                # the likely view: a value syncfix cannot name, read with ``.item()``
                self.any_device and a.value(func.value).kind is Kind.UNKNOWN and host_read(a, node) is not None
            ):
                self.found.append(node)
        elif isinstance(func, cst.Name) and func.value in ("any", "all") and a.callee(node) in _TRUTH_CALLS:
            # ``any(torch.isnan(l) for l in losses)`` takes the truth of each item, one read each
            # (lightweight-gan's NaN check every step); ``any(t)`` of a tensor is SFX303's
            args = positional(node)
            if len(args) == 1 and isinstance(args[0].value, (cst.GeneratorExp, cst.ListComp, cst.SetComp)):
                self.truthy(args[0].value.elt)
        elif isinstance(func, cst.Attribute) and func.attr.value in ("allclose", "equal"):
            # ``torch.allclose(x_next, x)``: a Python bool, read from the device (mdlm's sampler,
            # every step); ``t.equal(u)`` too
            operands = [arg.value for arg in node.args if not arg.star]
            if a.callee(node) not in _COMPARING_CALLS:
                operands.append(func.value)
            if any(self.maybe_cuda(o) for o in operands):
                self.found.append(node)
        elif a.callee(node) in _CONVERTING_CALLS:
            # ``math.isnan(loss)`` converts the tensor with ``float()`` first (SlowFast's
            # per-step NaN check)
            args = positional(node)
            if len(args) == 1 and self.maybe_cuda(args[0].value):
                self.found.append(node)

    def visit_Lambda(self, node: cst.Lambda) -> bool:
        return False


_TRUTH_CALLS = frozenset({"builtins.any", "builtins.all"})

# torch functions that compare tensors into a Python bool (read from the device).
_COMPARING_CALLS = frozenset({"torch.allclose", "torch.equal"})

# Calls that read one tensor argument on the host as a Python number.
_CONVERTING_CALLS = frozenset({
    "builtins.bool", "builtins.int", "builtins.float", "math.isnan", "math.isinf", "math.isfinite",
})

# ``math`` functions that take their arguments as Python floats (``float()`` of a tensor: its
# ``.item()``). Not ``floor``, ``ceil``, ``trunc``: they call a tensor's own ``__floor__``...
MATH_CONVERTING = frozenset(
    "acos acosh asin asinh atan atan2 atanh cbrt copysign cos cosh degrees erf erfc exp exp2 expm1 "
    "fabs fmod gamma hypot isclose isfinite isinf isnan ldexp lgamma log log10 log1p log2 pow "
    "radians remainder sin sinh sqrt tan tanh".split()
)


def math_read(a: ModuleAnalysis, call: cst.Call) -> cst.BaseExpression | None:
    """The tensor, not provably on the CPU, that a ``math.sqrt(t)``-like call reads as a Python
    float (the first such argument), or None."""
    func = call.func
    short = func.attr.value if isinstance(func, cst.Attribute) else func.value if isinstance(func, cst.Name) else ""
    if short not in MATH_CONVERTING or a.callee(call) != f"math.{short}":
        return None
    for arg in call.args:
        if arg.keyword is None and not arg.star:
            v = a.value(arg.value)
            if v.is_tensor and v.device is not Device.CPU:
                return arg.value
    return None


def flows_to_host(a: ModuleAnalysis, name: str, after: cst.CSTNode) -> bool:
    """Might the tensor bound to ``name`` be read on the host (Python control flow,
    ``.item()``, ``bool()``/``float()``, printing) after ``after``? Over-approximates:
    every later use of the name in the enclosing function (or loop) counts."""
    scope_node = a.enclosing_function(after) or a.module
    pos = a.positions.get(after)
    loops = a.loops_around(after)
    found = False

    class V(cst.CSTVisitor):
        def visit_Name(self, node: cst.Name) -> None:
            nonlocal found
            if found or node.value != name:
                return
            p = a.positions.get(node)
            later = pos is None or p is None or p.start.line > pos.end.line
            in_loop = bool(loops) and any(anc is loops[-1] for anc in a.ancestors(node))
            if (later or in_loop) and _is_host_use(a, node):
                found = True

    walk(scope_node, V())
    return found


def _is_host_use(a: ModuleAnalysis, node: cst.CSTNode) -> bool:
    child = node
    for anc in a.ancestors(node):
        if isinstance(anc, (cst.If, cst.While, cst.IfExp)) and child is anc.test:
            return True
        if isinstance(anc, cst.Assert):
            return True
        if isinstance(anc, cst.FormattedStringExpression):
            return True
        if isinstance(anc, cst.Call):
            func = anc.func
            if isinstance(func, cst.Attribute) and child is func and func.attr.value in HOST_METHODS:
                return True
            if a.callee(anc) in HOST_BUILTINS:
                return True
            if child is not func and not a.is_pure_call(anc):
                return True  # passed to code we cannot see
        if isinstance(anc, (cst.BaseSmallStatement, cst.BaseCompoundStatement)):
            return False  # stored or returned: not a host read here
        child = anc
    return False
