"""The abstract values facts are computed in: what an expression may be (:class:`Kind`), and for
tensors on which :class:`Device`, in which :class:`Memory`, whether *fresh* and of which dtype.

Values form a lattice: :meth:`Value.join` merges the values of two bindings that may reach one
use; ``BOTTOM`` (no binding seen yet, inside a cycle) is its identity and ``UNKNOWN`` its top.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable
from dataclasses import dataclass


class Kind(enum.Enum):
    BOTTOM = "bottom"  # no binding seen yet (inside a cycle): the identity of join
    TENSOR = "tensor"
    DEVICE = "device"
    MODULE = "module"  # an nn.Module instance
    LOADER = "loader"  # a torch DataLoader
    BATCH = "batch"  # one item of a DataLoader (tensor, or container of tensors)
    TENSORS = "tensors"  # a list or tuple of tensors (``Sequence[Tensor]``): not itself a tensor
    NUMBER = "number"  # a Python bool/int/float
    NDARRAY = "ndarray"
    OTHER = "other"  # known not to be any of the above (str, list, dict, None...)
    UNKNOWN = "unknown"


class Device(enum.Enum):
    CUDA = "cuda"
    CPU = "cpu"
    CUDA_OR_CPU = "cuda|cpu"
    UNKNOWN = "unknown"

    def join(self, other: Device) -> Device:
        if self is other:
            return self
        if Device.UNKNOWN in (self, other):
            return Device.UNKNOWN
        return Device.CUDA_OR_CPU  # any mix of cuda, cpu and cuda|cpu


class Memory(enum.Enum):
    """For CPU tensors: where the bytes live."""

    PAGEABLE = "pageable"
    PINNED = "pinned"
    UNKNOWN = "unknown"

    def join(self, other: Memory) -> Memory:
        return self if self is other else Memory.UNKNOWN


@dataclass(frozen=True)
class Value:
    kind: Kind
    device: Device = Device.UNKNOWN
    memory: Memory = Memory.UNKNOWN
    fresh: bool = False  # made by this code, so no other code can refill it
    dtype: str | None = None  # e.g. "torch.float32" when known
    #: For tensors: the one device expression that placed it and every operand it was computed
    #: from (``'"cuda"'``, ``'"cpu"'``, or a module-level name bound once, like ``device``), so two
    #: tensors of one origin are on one device whatever that device is; None when not provable.
    origin: str | None = None

    def join(self, other: Value) -> Value:
        if self.kind is Kind.BOTTOM:
            return other
        if other.kind is Kind.BOTTOM:
            return self
        kind = self.kind
        if self.kind is not other.kind:
            if {self.kind, other.kind} != {Kind.TENSOR, Kind.BATCH}:
                return UNKNOWN
            kind = Kind.BATCH  # a batch may be a tensor: the join of the two is a batch
        return Value(
            kind,
            self.device.join(other.device),
            self.memory.join(other.memory),
            self.fresh and other.fresh,
            self.dtype if self.dtype == other.dtype else None,
            self.origin if self.origin == other.origin else None,
        )

    @property
    def is_tensor(self) -> bool:
        return self.kind is Kind.TENSOR or self.kind is Kind.BATCH

    @property
    def on_cuda(self) -> bool:
        return self.is_tensor and self.device is Device.CUDA


UNKNOWN = Value(Kind.UNKNOWN)
BOTTOM = Value(Kind.BOTTOM)
OTHER = Value(Kind.OTHER)
NUMBER = Value(Kind.NUMBER)


def join_all(values: Iterable[Value]) -> Value:
    result: Value | None = None
    for v in values:
        result = v if result is None else result.join(v)
    return result or UNKNOWN


class TupleValue(Value):
    """A tuple of values (for ``enumerate``/``zip`` destructuring only)."""

    items: tuple[Value, ...]

    def __init__(self, items: tuple[Value, ...]) -> None:
        object.__setattr__(self, "items", items)
        super().__init__(Kind.OTHER)


def tensor_origin(values: Iterable[Value]) -> str | None:
    """The origin of an op's result: the one origin every tensor operand has (strict: an operand
    of unknown origin, or two origins, give None; a CPU 0-d operand may mix with a CUDA one)."""
    origins = {v.origin for v in values if v.is_tensor}
    return origins.pop() if len(origins) == 1 else None


def tensor_device(values: Iterable[Value]) -> Device:
    """The device of an op's result from its operands' values (non-tensors ignored)."""
    devices = [v.device for v in values if v.is_tensor]
    if not devices:
        return Device.UNKNOWN
    if any(d is Device.CUDA for d in devices):
        return Device.CUDA  # mixing a CUDA tensor with CPU ones only works for 0-d CPU tensors
    result = devices[0]
    for d in devices[1:]:
        result = result.join(d)
    return result
