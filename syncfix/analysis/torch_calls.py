"""What a ``torch.*`` call gives: a loader, a device, a module (an ``nn`` class), tensors of a
sequence op (``torch.meshgrid``), or a tensor: its device (a ``device=`` argument, the operands',
or the CPU for factories), its memory (pinned with ``pin_memory=True``; shared with the array
for ``torch.from_numpy``) and whether it is new. Read by provenance.py; the tables are in
torch_api.py.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import libcst as cst

from . import loaders
from .attributes import is_module_class
from .devices import origin_code
from .dtypes import dtype_kw
from .legacy_constructors import legacy_cuda_value, legacy_value
from .syntax import display_argument, in_place_keyword, keyword, positional
from .torch_api import (
    CREATION_DEVICE_ARG,
    DATALOADER,
    DEFAULT_DEVICE_FACTORIES,
    HOST_DATA,
    LEGACY_CONSTRUCTORS,
    NDARRAY_COPYING_METHODS,
    NON_TENSOR_NAMESPACES,
    SEQUENCE_OPS,
    SIZE_FACTORIES,
    TENSOR_NAMESPACES,
    TENSOR_SEQUENCES,
    TORCH_NON_TENSOR,
    shares_first_argument,
)
from .values import (
    BOTTOM,
    NUMBER,
    UNKNOWN,
    Device,
    Kind,
    Memory,
    Value,
    join_all,
    tensor_device,
    tensor_origin,
)

if TYPE_CHECKING:
    from .module import ModuleAnalysis


def torch_call_value(a: ModuleAnalysis, name: str, call: cst.Call) -> Value | None:
    """What calling ``name`` (a qualified ``torch.*`` name, or a DataLoader class) gives; None
    for a name that is no torch function syncfix reads here."""
    if name in DATALOADER:
        return loaders.loader_value(a, call)
    if name == "torch.device":
        args = positional(call)
        kw = keyword(call, "type")
        first = args[0].value if args else kw.value if kw else None
        if first is None:
            return Value(Kind.DEVICE)
        return Value(Kind.DEVICE, a.device_of(first))
    if name == "torch.cuda.is_available":
        return NUMBER
    if name == "torch.accelerator.current_accelerator":
        return Value(Kind.DEVICE)  # a ``torch.device`` of whatever accelerator there is
    if name == "torch.nn.utils.clip_grad_norm_":
        # the total norm: a new 0-d tensor where the parameters are (shapes.py, dtypes.py)
        args = positional(call)
        params = a.value(args[0].value) if args else UNKNOWN
        return Value(Kind.TENSOR, Device.UNKNOWN, Memory.UNKNOWN, True, origin=params.origin)
    if not name.startswith("torch."):
        return None
    short = name.rsplit(".", 1)[-1]
    namespace = name[: -len(short)]
    if name.startswith(NON_TENSOR_NAMESPACES) and name not in ("torch.autograd.Variable", "torch.autograd.variable.Variable"):
        return UNKNOWN
    if (
        short in ("Parameter", "Buffer") and namespace in ("torch.nn.", "torch.nn.parameter.")
        or short == "Variable" and namespace in ("torch.autograd.", "torch.autograd.variable.")
    ):
        # a tensor sharing its argument's storage (not a layer, though capitalised)
        args = positional(call)
        data = a.value(args[0].value) if args else UNKNOWN
        if data.is_tensor:
            return Value(Kind.TENSOR, data.device, data.memory, data.fresh, data.dtype)
        return Value(Kind.TENSOR)
    if namespace == "torch." and short in LEGACY_CONSTRUCTORS:
        made = legacy_value(a, short, call)
        if made is not None:
            return made
    if namespace == "torch.cuda." and short in LEGACY_CONSTRUCTORS:
        return legacy_cuda_value(a, call) or UNKNOWN
    if short[:1].isupper():  # a class: nn layers are modules, anything else we do not model
        return Value(Kind.MODULE) if is_module_class(a, call.func) else UNKNOWN
    if namespace == "torch." and short in TENSOR_SEQUENCES:
        # ``y, x = torch.meshgrid(torch.arange(h), torch.arange(w))``: tensors on the inputs'
        # device (one device: torch raises on a mix), views of their memory
        tensors = [v for v in (a.value(arg.value) for arg in call.args if arg.keyword is None) if v.is_tensor]
        if tensors and not any(arg.star for arg in call.args):
            return Value(Kind.TENSORS, join_all(tensors).device)
        return UNKNOWN
    if namespace not in TENSOR_NAMESPACES or short.startswith("_") or short in TORCH_NON_TENSOR:
        return UNKNOWN
    dev_arg = keyword(call, CREATION_DEVICE_ARG)
    pin_arg = keyword(call, "pin_memory")
    pinned = pin_arg is not None and not (
        isinstance(pin_arg.value, cst.Name) and pin_arg.value.value == "False"
    )
    memory = Memory.PINNED if pinned else Memory.PAGEABLE
    # ``F.interpolate(input=x, ...)``: ``input`` is the tensor argument of torch's functions
    operands = [
        a.value(arg.value)
        for arg in call.args
        if (arg.keyword is None or arg.keyword.value == "input") and not arg.star
    ]
    for arg in call.args:  # ``torch.stack([a, b])``, ``torch.cat((a, b))``: the items count
        if arg.keyword is None and isinstance(arg.value, (cst.List, cst.Tuple)):
            operands += [a.value(el.value) for el in arg.value.elements if isinstance(el, cst.Element)]
    # Tensors the op reads that syncfix cannot list: ``torch.cat(parts)``, ``torch.stack([t for
    # t in ts])``, ``torch.block_diag(*mats)``. Their device decides the result's.
    hidden = any(arg.star for arg in call.args)
    named = _tuple_bound(a, positional(call)[0].value) if short in SEQUENCE_OPS and positional(call) else None
    if named is not None:  # ``parts = (a, b, c)`` then ``torch.cat(parts)`` (sd-scripts' id chunks)
        operands += [a.value(el.value) for el in named.elements if isinstance(el, cst.Element)]
    elif short in SEQUENCE_OPS and namespace == "torch." and not display_argument(call) and positional(call):
        first = positional(call)[0].value
        items = a.value(first)
        operands.append(items)
        filled = a.filled_items(first) if isinstance(first, cst.Name) else []
        if items.kind in (Kind.TENSORS, Kind.BATCH) and items.device is not Device.UNKNOWN:
            # a batch's tensors (FlowNet's ``torch.cat(input, 1)`` of a loader's image pair)
            operands.append(Value(Kind.TENSOR, items.device, origin=items.origin))
        elif filled:  # ``ims.append(o.cpu())`` then ``torch.stack(ims)``: what was put in
            operands.extend(_joined(a, item) for item in filled)
        elif isinstance(first, (cst.ListComp, cst.GeneratorExp)) and _joined(a, first.elt).is_tensor:
            # SimCLR's ``torch.cat([torch.arange(n) for i in range(k)])``: each item is made alike
            operands.append(_joined(a, first.elt))
        else:
            hidden = True
    if any(v.kind is Kind.BOTTOM for v in operands):
        return BOTTOM  # inside a cycle: no information yet (an operand would decide the device)
    tensor_args = [v for v in operands if v.is_tensor]
    if dev_arg is not None:
        device = a.device_of(dev_arg.value)
    elif short in DEFAULT_DEVICE_FACTORIES or short == "tensor" and display_argument(call, repeated=True):
        device = Device.UNKNOWN if a.sets_default_device else Device.CPU  # whatever the arguments
    elif hidden:
        device = Device.UNKNOWN
    elif tensor_args:
        device = tensor_device(tensor_args)
    elif namespace == "torch." and short in SIZE_FACTORIES and keyword(call, "out") is None and not a.sets_default_device:
        device = Device.CPU  # ``torch.ones(batch_size, n)``: sizes decide no device
    elif Kind.UNKNOWN in {v.kind for v in operands} and not (a.assume_tensors and short in HOST_DATA):
        device = Device.UNKNOWN  # ``torch.isnan(unknown)`` may be on the GPU; ``torch.tensor(rows)``: data
    elif a.sets_default_device:
        device = Device.UNKNOWN
    else:
        device = Device.CPU
    if dev_arg is not None:
        origin = origin_code(a, dev_arg.value)
    elif device is Device.CPU:
        origin = '"cpu"'
    else:
        origin = tensor_origin(tensor_args)
    if keyword(call, "out") is not None:  # the result is ``out`` itself: memory others hold
        return Value(Kind.TENSOR, device, Memory.UNKNOWN, False, origin=origin)
    if shares_first_argument(short, in_place_keyword(call)):
        base = tensor_args[0] if tensor_args else UNKNOWN
        if short in ("as_tensor", "asarray", "from_numpy") and not tensor_args:
            # shares the array's memory (not fresh): pageable where numpy allocated it or the data
            # is Python's (copied); a view of a tensor (``t.numpy()``) may be pinned memory
            data = operands[0] if operands else UNKNOWN
            owned = data.kind in (Kind.NUMBER, Kind.OTHER) or data.kind is Kind.NDARRAY and data.memory is Memory.PAGEABLE
            if short == "from_numpy" and positional(call) and _copied_array(positional(call)[0].value):
                owned = True  # ``torch.from_numpy(im.astype(np.float32))``: only an ndarray's copy is accepted
            if short == "from_numpy":
                device, origin = Device.CPU, '"cpu"'
            return Value(Kind.TENSOR, device, Memory.PAGEABLE if owned else Memory.UNKNOWN, False, origin=origin)
        return Value(Kind.TENSOR, device, base.memory, base.fresh, origin=origin)
    if device is not Device.CPU:
        memory = Memory.UNKNOWN
    return Value(Kind.TENSOR, device, memory, True, dtype_kw(a, call), origin)


def _copied_array(expr: cst.BaseExpression) -> bool:
    """``im.astype(np.float32)``, ``im.copy()`` (no ``copy=False``), whatever ``im`` is: given to
    ``torch.from_numpy``, which takes nothing but an ndarray, it is an ndarray's copy, in memory
    numpy allocated (CRAFT's ``torch.from_numpy(normalize(image).astype(...))``)."""
    return (
        isinstance(expr, cst.Call)
        and isinstance(expr.func, cst.Attribute)
        and expr.func.attr.value in NDARRAY_COPYING_METHODS
        and keyword(expr, "copy") is None
    )


def _tuple_bound(a: ModuleAnalysis, expr: cst.BaseExpression) -> cst.Tuple | None:
    """The tuple display that every binding reaching the name ``expr`` is (one binding; a tuple
    cannot change after), or None."""
    if not isinstance(expr, cst.Name):
        return None
    values = a.reaching_values(expr)
    if not values or len(values) != 1 or not isinstance(values[0], cst.Tuple):
        return None
    if any(isinstance(el, cst.StarredElement) for el in values[0].elements):
        return None
    return values[0]


def _joined(a: ModuleAnalysis, item: cst.BaseExpression) -> Value:
    """An item a join (``torch.stack(ims)``) takes: ``x.cpu()`` is a CPU tensor there even
    where ``x`` may be a module (whose ``.cpu()`` is itself): a join of anything else raises."""
    v = a.value(item)
    if (
        not v.is_tensor
        and isinstance(item, cst.Call)
        and not item.args
        and isinstance(item.func, cst.Attribute)
        and item.func.attr.value == "cpu"
    ):
        return Value(Kind.TENSOR, Device.CPU, origin='"cpu"')
    return v

