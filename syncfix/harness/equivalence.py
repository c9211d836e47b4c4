"""Numeric equivalence of two runs: snapshots of values, and a comparison that names what differs.

``snapshot`` turns a value (any nesting of tensors, NumPy arrays, numbers, strings, lists,
tuples, dicts) into plain picklable data: tensors become CPU copies with their dtype, shape and
device recorded; objects of other types are kept as their ``repr`` (memory addresses masked).
``compare`` walks two snapshots and returns every difference, with a path such as
``return['loss'][2]``:

* the default is **bitwise**: floats must have the same bits, except that NaN equals NaN
  whatever its payload (so ``-0.0`` differs from ``0.0``);
* with ``rtol``/``atol`` numbers match when ``|new - orig| <= atol + rtol * |orig|`` (NaN still
  equals NaN, infinities must match exactly);
* Python types, dtypes, shapes and devices always have to match (``True`` is not ``1``).

Printed output is compared line by line with numbers compared as numbers (``compare_text``).
torch and NumPy are imported only when a tensor or array is met.
"""

from __future__ import annotations

import math
import re
import struct
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

# ----------------------------------------------------------------------------- snapshots


@dataclass(frozen=True)
class Scalar:
    type: str
    value: Any  # None, bool, int, float, complex, str or bytes


@dataclass(frozen=True)
class Seq:
    type: str
    items: tuple[Any, ...]


@dataclass(frozen=True)
class Map:
    type: str
    items: tuple[tuple[str, Any], ...]  # (repr of key, snapshot)


@dataclass(frozen=True)
class TensorValue:
    type: str
    dtype: str
    shape: tuple[int, ...]
    device: str
    data: Any  # a dense CPU tensor (kept as a torch object; pickles as such)


@dataclass(frozen=True)
class ArrayValue:
    type: str
    dtype: str
    shape: tuple[int, ...]
    data: Any  # numpy.ndarray


@dataclass(frozen=True)
class Opaque:
    type: str
    text: str


_ADDR = re.compile(r"0x[0-9a-fA-F]+")
_MAX_DEPTH = 64


def _type_name(obj: Any) -> str:
    t = type(obj)
    return t.__qualname__ if t.__module__ == "builtins" else f"{t.__module__}.{t.__qualname__}"


def snapshot(value: Any, _depth: int = 0) -> Any:
    """A picklable, comparable copy of ``value`` (call it where the value is produced)."""
    if _depth > _MAX_DEPTH:
        return Opaque(_type_name(value), "<nested too deep>")
    if value is None or isinstance(value, (bool, int, float, complex, str, bytes)):
        base = value
        if isinstance(value, bool):
            base = bool(value)
        elif isinstance(value, int):
            base = int(value)
        elif isinstance(value, float):
            base = float(value)
        return Scalar(_type_name(value), base)
    mod = type(value).__module__ or ""
    if mod.startswith("torch"):
        import torch

        if isinstance(value, torch.Tensor):
            t = value.detach()
            device = str(t.device)
            if t.layout != torch.strided:
                t = t.to_dense()
            if t.is_quantized:
                t = t.dequantize()
            data = t.to("cpu", copy=True).contiguous()
            return TensorValue(
                _type_name(value), str(value.dtype), tuple(value.shape), device, data
            )
        if isinstance(value, (torch.Size,)):
            return Seq(_type_name(value), tuple(Scalar("int", int(v)) for v in value))
        if isinstance(value, (torch.dtype, torch.device)):
            return Scalar(_type_name(value), str(value))
    if mod == "numpy" or mod.startswith("numpy."):
        import numpy as np

        if isinstance(value, np.ndarray):
            return ArrayValue(_type_name(value), str(value.dtype), tuple(value.shape), value.copy())
        if isinstance(value, np.generic):
            return Scalar(_type_name(value), value.item())
    if isinstance(value, dict):
        return Map(
            _type_name(value), tuple((repr(k), snapshot(v, _depth + 1)) for k, v in value.items())
        )
    if isinstance(value, (list, tuple, set, frozenset)):
        items: Iterable[Any] = value
        if isinstance(value, (set, frozenset)):
            items = sorted(value, key=repr)
        return Seq(_type_name(value), tuple(snapshot(v, _depth + 1) for v in items))
    try:
        text = repr(value)
    except Exception as exc:  # a broken __repr__ should not break the harness
        text = f"<repr failed: {type(exc).__name__}>"
    return Opaque(_type_name(value), _ADDR.sub("0x…", text))


# ----------------------------------------------------------------------------- comparison


@dataclass(frozen=True)
class Tolerance:
    rtol: float = 0.0
    atol: float = 0.0

    @property
    def exact(self) -> bool:
        return self.rtol == 0.0 and self.atol == 0.0

    def describe(self) -> str:
        return "bitwise" if self.exact else f"rtol={self.rtol:g}, atol={self.atol:g}"


BITWISE = Tolerance()


@dataclass(frozen=True)
class Mismatch:
    path: str
    reason: str
    original: str
    rewritten: str

    def to_dict(self) -> dict[str, str]:
        return {
            "path": self.path,
            "reason": self.reason,
            "original": self.original,
            "rewritten": self.rewritten,
        }


@dataclass
class Comparison:
    compared: int = 0  # leaves (numbers, strings, tensors...) compared
    mismatches: list[Mismatch] = field(default_factory=list)

    @property
    def equal(self) -> bool:
        return not self.mismatches

    def add(self, path: str, reason: str, a: Any, b: Any) -> None:
        self.mismatches.append(Mismatch(path, reason, _show(a), _show(b)))


def _show(v: Any, limit: int = 300) -> str:
    if isinstance(v, Scalar):
        text = repr(v.value)
    elif isinstance(v, TensorValue):
        text = _tensor_text(v)
    elif isinstance(v, ArrayValue):
        text = f"array(shape={v.shape}, dtype={v.dtype}) {v.data!r}"
    elif isinstance(v, Opaque):
        text = v.text
    elif isinstance(v, (Seq, Map)):
        text = f"{v.type} of {len(v.items)}"
    else:
        text = repr(v)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _tensor_text(v: TensorValue) -> str:
    import torch

    with torch._tensor_str.printoptions(threshold=20, edgeitems=3, precision=8):
        body = repr(v.data)
    return f"{body} (dtype={v.dtype}, shape={tuple(v.shape)}, device={v.device})"


def _float_equal(a: float, b: float, tol: Tolerance) -> bool:
    if math.isnan(a) or math.isnan(b):
        return math.isnan(a) and math.isnan(b)
    if tol.exact:
        return struct.pack("<d", a) == struct.pack("<d", b)
    if math.isinf(a) or math.isinf(b):
        return a == b
    return abs(b - a) <= tol.atol + tol.rtol * abs(a)


def _number_equal(a: Any, b: Any, tol: Tolerance) -> bool:
    """``a`` is the original. Ints compare exactly unless a tolerance is given."""
    if isinstance(a, complex) or isinstance(b, complex):
        a, b = complex(a), complex(b)
        return _float_equal(a.real, b.real, tol) and _float_equal(a.imag, b.imag, tol)
    if isinstance(a, int) and isinstance(b, int):
        return a == b or (not tol.exact and abs(b - a) <= tol.atol + tol.rtol * abs(a))
    return _float_equal(float(a), float(b), tol)


def compare(
    original: Any, rewritten: Any, tol: Tolerance = BITWISE, path: str = "value"
) -> Comparison:
    """Every difference between two snapshots."""
    result = Comparison()
    _compare(original, rewritten, tol, path, result)
    return result


def _compare(a: Any, b: Any, tol: Tolerance, path: str, out: Comparison) -> None:
    if type(a) is not type(b) or getattr(a, "type", None) != getattr(b, "type", None):
        out.compared += 1
        out.add(path, f"type differs: {_kind(a)} vs {_kind(b)}", a, b)
        return
    if isinstance(a, Scalar):
        out.compared += 1
        if isinstance(a.value, (int, float, complex)) and not isinstance(a.value, bool):
            if not _number_equal(a.value, b.value, tol):
                out.add(path, f"value differs ({tol.describe()})", a, b)
        elif a.value != b.value:
            out.add(path, "value differs", a, b)
    elif isinstance(a, Seq):
        if len(a.items) != len(b.items):
            out.compared += 1
            out.add(path, f"length differs: {len(a.items)} vs {len(b.items)}", a, b)
            return
        for i, (x, y) in enumerate(zip(a.items, b.items, strict=True)):
            _compare(x, y, tol, f"{path}[{i}]", out)
    elif isinstance(a, Map):
        da, db = dict(a.items), dict(b.items)
        for k in da.keys() - db.keys():
            out.compared += 1
            out.add(f"{path}[{k}]", "key missing from the rewritten run", da[k], "<missing>")
        for k in db.keys() - da.keys():
            out.compared += 1
            out.add(f"{path}[{k}]", "key only in the rewritten run", "<missing>", db[k])
        for k, x in a.items:
            if k in db:
                _compare(x, db[k], tol, f"{path}[{k}]", out)
    elif isinstance(a, TensorValue):
        out.compared += 1
        _compare_tensor(a, b, tol, path, out)
    elif isinstance(a, ArrayValue):
        out.compared += 1
        _compare_array(a, b, tol, path, out)
    else:  # Opaque
        out.compared += 1
        if a.text != b.text:
            out.add(path, "repr differs", a, b)


def _kind(v: Any) -> str:
    if isinstance(v, TensorValue):
        return v.type
    return getattr(v, "type", type(v).__name__)


def _compare_tensor(
    a: TensorValue, b: TensorValue, tol: Tolerance, path: str, out: Comparison
) -> None:
    for attr in ("dtype", "shape", "device"):
        if getattr(a, attr) != getattr(b, attr):
            out.add(path, f"{attr} differs: {getattr(a, attr)} vs {getattr(b, attr)}", a, b)
            return
    import torch

    x, y = a.data, b.data
    if x.numel() == 0:
        return
    if x.dtype == torch.bool or not (x.is_floating_point() or x.is_complex()):
        if tol.exact or x.dtype == torch.bool:
            same = x == y
        else:
            same = torch.isclose(x, y, rtol=tol.rtol, atol=tol.atol)
    elif x.is_complex():
        xr, yr = torch.view_as_real(x), torch.view_as_real(y)
        same = _float_same(xr, yr, tol).all(dim=-1)
    else:
        same = _float_same(x, y, tol)
    if bool(same.all()):
        return
    bad = (~same).nonzero()
    first = tuple(int(i) for i in bad[0])
    n_bad, n = int(bad.shape[0]), x.numel()
    detail = f"{n_bad} of {n} elements differ ({tol.describe()}); first at index {list(first)}: "
    detail += f"{x[first].item()!r} vs {y[first].item()!r}"
    if x.is_floating_point():
        diff = (x.double() - y.double()).abs()
        finite = diff[torch.isfinite(diff)]
        if finite.numel():
            detail += f"; max abs diff {finite.max().item():.6g}"
    out.add(path, detail, a, b)


def _float_same(x: Any, y: Any, tol: Tolerance) -> Any:
    import torch

    both_nan = torch.isnan(x) & torch.isnan(y)
    if tol.exact:
        int_type = {1: torch.uint8, 2: torch.int16, 4: torch.int32, 8: torch.int64}[
            x.element_size()
        ]
        return (x.view(int_type) == y.view(int_type)) | both_nan
    xd, yd = x.double(), y.double()
    close = (yd - xd).abs() <= tol.atol + tol.rtol * xd.abs()
    inf = torch.isinf(xd) | torch.isinf(yd)
    close = torch.where(inf, xd == yd, close)
    return close | both_nan


def _np_float_same(x: Any, y: Any, tol: Tolerance) -> Any:
    import numpy as np

    if not tol.exact:
        return np.isclose(y, x, rtol=tol.rtol, atol=tol.atol, equal_nan=True)
    nan = np.isnan(x) & np.isnan(y)
    if x.dtype.itemsize in (1, 2, 4, 8):
        kind = f"u{x.dtype.itemsize}"
        return (np.ascontiguousarray(x).view(kind) == np.ascontiguousarray(y).view(kind)) | nan
    return (x == y) | nan


def _compare_array(
    a: ArrayValue, b: ArrayValue, tol: Tolerance, path: str, out: Comparison
) -> None:
    for attr in ("dtype", "shape"):
        if getattr(a, attr) != getattr(b, attr):
            out.add(path, f"{attr} differs: {getattr(a, attr)} vs {getattr(b, attr)}", a, b)
            return
    import numpy as np

    x, y = a.data, b.data
    if x.dtype.kind == "c":
        pairs = (x.size, 2)
        xr = np.ascontiguousarray(x).reshape(-1).view(x.real.dtype).reshape(pairs)
        yr = np.ascontiguousarray(y).reshape(-1).view(y.real.dtype).reshape(pairs)
        same = _np_float_same(xr, yr, tol).all(axis=1).reshape(x.shape)
    elif x.dtype.kind == "f":
        same = _np_float_same(x, y, tol)
    elif x.dtype.kind in "iu" and not tol.exact:
        same = np.isclose(y, x, rtol=tol.rtol, atol=tol.atol)
    else:
        same = x == y
    same = np.asarray(same)
    if same.all():
        return
    idx = np.argwhere(~same)
    first = tuple(int(i) for i in idx[0])
    out.add(
        path,
        f"{len(idx)} of {x.size} elements differ ({tol.describe()}); first at index {list(first)}: "
        f"{x[first]!r} vs {y[first]!r}",
        a,
        b,
    )


# ----------------------------------------------------------------------------- printed text

_NUMBER = re.compile(
    r"(?<![\w.])[-+]?(?:(?:\d+\.\d*|\.\d+|\d+)(?:[eE][-+]?\d+)?|nan|inf|infinity)(?![\w.])",
    re.IGNORECASE,
)


def split_numbers(line: str) -> tuple[str, list[str]]:
    """``"loss 0.25 at step 3"`` → (``"loss {} at step {}"``, ``["0.25", "3"]``)."""
    numbers: list[str] = []

    def take(m: re.Match[str]) -> str:
        numbers.append(m.group(0))
        return "\x00"

    template = _NUMBER.sub(take, line)
    return template, numbers


def _parse_number(text: str) -> int | float:
    try:
        return int(text)
    except ValueError:
        return float(text)


def compare_text(
    original: str, rewritten: str, tol: Tolerance = BITWISE, path: str = "stdout"
) -> Comparison:
    """Printed output, line by line; numbers compared as numbers (``1.0`` equals ``1.00``)."""
    out = Comparison()
    la, lb = original.splitlines(), rewritten.splitlines()
    for i, (x, y) in enumerate(zip(la, lb, strict=False), start=1):
        tx, nx = split_numbers(x)
        ty, ny = split_numbers(y)
        out.compared += max(1, len(nx))  # each printed number is a value; a line without one too
        where = f"{path} line {i}"
        if tx != ty or len(nx) != len(ny):
            out.mismatches.append(Mismatch(where, "text differs", x, y))
            continue
        for k, (p, q) in enumerate(zip(nx, ny, strict=True), start=1):
            if not _number_equal(_parse_number(p), _parse_number(q), tol):
                out.mismatches.append(
                    Mismatch(where, f"number {k} differs ({p} vs {q}, {tol.describe()})", x, y)
                )
                break
    if len(la) != len(lb):
        out.compared += 1
        out.mismatches.append(
            Mismatch(
                f"{path} line {min(len(la), len(lb)) + 1}",
                f"{len(la)} lines vs {len(lb)} lines",
                la[len(lb)] if len(la) > len(lb) else "<end of output>",
                lb[len(la)] if len(lb) > len(la) else "<end of output>",
            )
        )
    return out


def compare_records(
    original: list[tuple[str, Any]], rewritten: list[tuple[str, Any]], tol: Tolerance = BITWISE
) -> Comparison:
    """Values handed to ``syncfix.verify.record``, matched by name and order of recording."""
    out = Comparison()

    def group(items: list[tuple[str, Any]]) -> dict[str, list[Any]]:
        g: dict[str, list[Any]] = {}
        for name, v in items:
            g.setdefault(name, []).append(v)
        return g

    ga, gb = group(original), group(rewritten)
    for name in list(ga) + [n for n in gb if n not in ga]:
        xs, ys = ga.get(name, []), gb.get(name, [])
        if len(xs) != len(ys):
            out.compared += 1
            out.mismatches.append(
                Mismatch(
                    f"record({name!r})",
                    f"recorded {len(xs)} times vs {len(ys)} times",
                    str(len(xs)),
                    str(len(ys)),
                )
            )
        for i, (x, y) in enumerate(zip(xs, ys, strict=False)):
            label = f"record({name!r})" + (f"[{i}]" if max(len(xs), len(ys)) > 1 else "")
            sub = compare(x, y, tol, label)
            out.compared += sub.compared
            out.mismatches.extend(sub.mismatches)
    return out


def merge(*parts: Comparison) -> Comparison:
    out = Comparison()
    for p in parts:
        out.compared += p.compared
        out.mismatches.extend(p.mismatches)
    return out
