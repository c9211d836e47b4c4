"""What the legacy constructors (``torch.Tensor(...)``, ``torch.LongTensor(...)``) make: a new
host tensor copied from a list (of numbers, or one the code built), new host memory of the sizes given, or a tensor in a
NumPy array's memory; a typed constructor (``torch.FloatTensor``) of any other one argument, a
host tensor in memory that may be the argument's (``torch.Tensor`` of a CUDA tensor is that
tensor's: not modelled). Where the project sets a default device or tensor type, the new tensor's device is
unknown."""

from __future__ import annotations

from typing import TYPE_CHECKING

import libcst as cst

from .torch_api import LEGACY_CONSTRUCTORS
from .values import UNKNOWN, Device, Kind, Memory, Value

if TYPE_CHECKING:
    from .module import ModuleAnalysis


def legacy_value(a: ModuleAnalysis, short: str, call: cst.Call) -> Value | None:
    """The value of ``torch.<short>(...)`` for a legacy constructor ``short``; None where the
    call is none of the forms above."""
    device = Device.UNKNOWN if a.sets_default_device else Device.CPU
    origin = '"cpu"' if device is Device.CPU else None
    if _legacy_copy(a, call) or _legacy_sizes(a, call):
        # ``torch.Tensor([0, n])``: copied from the list; ``torch.Tensor(n, 4)``: new memory
        return Value(Kind.TENSOR, device, Memory.PAGEABLE, True, LEGACY_CONSTRUCTORS[short], origin)
    one = len(call.args) == 1 and not call.args[0].keyword and not call.args[0].star
    data = a.value(call.args[0].value) if one else UNKNOWN
    if data.kind is Kind.NDARRAY:  # ``torch.FloatTensor(buf[idx])``: in the array's memory (or a copy)
        memory = Memory.PAGEABLE if data.memory is Memory.PAGEABLE else Memory.UNKNOWN
        return Value(Kind.TENSOR, device, memory, False, LEGACY_CONSTRUCTORS[short], origin)
    if data.kind is Kind.OTHER:  # a list the code built (FastSpeech2's ``torch.LongTensor(mel_len)``): copied
        return Value(Kind.TENSOR, device, Memory.PAGEABLE, True, LEGACY_CONSTRUCTORS[short], origin)
    if one and (short != "Tensor" or isinstance(call.args[0].value, (cst.List, cst.Tuple, cst.ListComp))):
        # a typed constructor makes a host tensor of its type from anything else it takes (data,
        # a size, a CPU tensor of that type to share), or raises (a CUDA tensor: "expected
        # TensorOptions(... device=cpu ...)", measured on an H200); the memory may be the
        # argument's (fast-reid's ``torch.FloatTensor(M[k]).cuda()``). Plain ``torch.Tensor(t)``
        # of a CUDA tensor returns a CUDA tensor: only a Python sequence is known to stay here
        return Value(Kind.TENSOR, device, Memory.UNKNOWN, False, LEGACY_CONSTRUCTORS[short], origin)
    return None


def _legacy_sizes(a: ModuleAnalysis, call: cst.Call) -> bool:
    """Positional arguments that can only be sizes (``torch.LongTensor(num, num_priors)``): two
    or more (one may be data to copy or a tensor to share), or numbers. A call that does not
    raise makes a new tensor of that size."""
    args = call.args
    if not args or any(arg.keyword is not None or arg.star for arg in args):
        return False
    return len(args) >= 2 or a.value(args[0].value).kind is Kind.NUMBER


def _legacy_copy(a: ModuleAnalysis, call: cst.Call) -> bool:
    """One argument, a list or tuple display of numbers (``torch.Tensor([0, n])``) or one repeated an int
    number of times (``[end] * n``), a list comprehension
    of such (``torch.Tensor([t.shape for t in ts])``), a ``range`` (``torch.LongTensor(range(n))``),
    or a sum with a display (``torch.FloatTensor(x.size() + (n,))``)."""
    value = call.args[0].value if len(call.args) == 1 and call.args[0].keyword is None and not call.args[0].star else None
    if value is None or isinstance(value, cst.Call) and a.callee(value) == "builtins.range":
        return value is not None
    if isinstance(value, cst.ListComp):
        return not isinstance(value.elt, (cst.List, cst.Tuple, cst.Call))
    if isinstance(value, cst.BinaryOperation) and isinstance(value.operator, cst.Add):
        # ``x.size() + (n,)``: a new tuple (sizes), or a new array where ``x.size()`` is one;
        # never a tensor, which refuses to add a tuple
        return any(isinstance(side, (cst.List, cst.Tuple)) for side in (value.left, value.right))
    if isinstance(value, cst.BinaryOperation) and isinstance(value.operator, cst.Multiply):
        # ``[end] * n``: a new list where ``n`` is an int (a tensor there would take ``*`` first)
        display, count = (value.left, value.right) if isinstance(value.left, cst.List) else (value.right, value.left)
        return isinstance(display, cst.List) and a.python_number_type(count) == "int" and _legacy_copy_items(display)
    return isinstance(value, (cst.List, cst.Tuple)) and _legacy_copy_items(value)


def _legacy_copy_items(display: cst.List | cst.Tuple) -> bool:
    return all(
        isinstance(el, cst.Element) and not isinstance(el.value, (cst.List, cst.Tuple, cst.Call))
        for el in display.elements
    )


def legacy_type(a: ModuleAnalysis, expr: cst.BaseExpression, depth: int = 0) -> tuple[str, Device] | None:
    """The legacy tensor type ``expr`` names and the device of its tensors: ``torch.cuda.FloatTensor``
    (CUDA), ``torch.FloatTensor`` (the CPU), a name bound only to one, or to ``torch.cuda.FloatTensor
    if cuda else torch.FloatTensor`` (PyTorch-GAN's ``Tensor``: CUDA or the CPU); else None."""
    name = a.qualname(expr)
    if name is not None and name.startswith("torch."):
        short = name.rsplit(".", 1)[-1]
        if short not in LEGACY_CONSTRUCTORS or short == "Tensor":
            return None
        if name == f"torch.cuda.{short}":
            return short, Device.CUDA
        return (short, Device.CPU) if name == f"torch.{short}" else None
    if isinstance(expr, cst.IfExp):
        body, orelse = legacy_type(a, expr.body, depth), legacy_type(a, expr.orelse, depth)
        if body is None or orelse is None or body[0] != orelse[0]:
            return None
        return (body[0], body[1]) if body[1] is orelse[1] else (body[0], Device.CUDA_OR_CPU)
    if isinstance(expr, cst.Name) and depth < 4 and _names_a_cuda_type(a):
        values = a.binding_values(expr)
        if values and len(values) == 1 and values[0] is not expr:
            return legacy_type(a, values[0], depth + 1)
    return None


def _names_a_cuda_type(a: ModuleAnalysis) -> bool:
    """Does the module spell a typed legacy constructor (``cuda.FloatTensor``, or a
    ``FloatTensor`` imported by name)? Only then may a name be bound to one: a cheap test before
    following the bindings of every name called."""
    typed = set(LEGACY_CONSTRUCTORS) - {"Tensor"}

    def spelled(module: cst.Module) -> bool:
        return any(
            (n.attr.value if isinstance(n, cst.Attribute) else n.value) in typed
            for kind in (cst.Attribute, cst.Name)
            for n in a.structure.of_type(kind)
            if isinstance(n, (cst.Attribute, cst.Name))
        )

    found: bool = a.solver.get("names-cuda-type", a.module, spelled, False, False)
    return found


def legacy_cuda_value(a: ModuleAnalysis, call: cst.Call) -> Value | None:
    """``torch.cuda.FloatTensor(n, k)`` or ``Tensor(data)`` of a type :func:`legacy_type` places
    on CUDA (or on CUDA or the CPU): a tensor there, of the type's dtype."""
    typed = legacy_type(a, call.func)
    if typed is None or typed[1] is Device.CPU:
        return None
    short, device = typed
    sizes = _legacy_sizes(a, call)
    return Value(Kind.TENSOR, device, Memory.UNKNOWN, sizes or _legacy_copy(a, call), LEGACY_CONSTRUCTORS[short])
