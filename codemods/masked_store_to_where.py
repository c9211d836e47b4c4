"""SFX204: ``x[mask] = v`` with a CUDA tensor value → ``x.copy_(torch.where(mask, v, x))``."""

from __future__ import annotations

import libcst as cst

from syncfix.analysis import Device, ModuleAnalysis
from syncfix.rules import Fix, Invalid, Rule

from ._support import code, is_new_tensor, unplaced_message

_MAYBE_CUDA = (Device.CUDA, Device.CUDA_OR_CPU)


class MaskedStoreToWhere(Rule):
    """
    ## What it finds
    A store through a boolean mask whose value is a CUDA tensor: `x[mask] = v` (a 0-d value, or a
    tensor of values), where `mask` is a bool tensor on the GPU; and a masked update
    `x[mask] += v` (or `-=`, `*=`, `/=`), which reads the selected elements and stores them back
    (reported where code repeats also when syncfix cannot tell the tensor's device).

    ## Why it costs
    With a CUDA value, `index_put_` cannot use its `masked_fill` fast path (that needs a host
    scalar): it turns the mask into indices with `nonzero`, which reads the count on the host —
    one sync per store (docs/semantics.md#masked-and-indexed-stores). `x[mask] = 0.0` (a Python number) is already
    sync-free and is not reported.

    ## Example
    ```python
    x = torch.randn(n, device="cuda")
    fill = x.mean()
    x[x < 0] = fill
    ```

    ## Use instead
    ```python
    x = torch.randn(n, device="cuda")
    fill = x.mean()
    x.copy_(torch.where(x < 0, fill, x))
    ```
    Values selected with the same mask from a tensor of `x`'s shape, `x[mask] = y[mask]`:
    `x.copy_(torch.where(mask, y, x))`. For other values, one per selected element:
    `x.masked_scatter_(mask, vals)`.

    ## Fix safety
    `x.copy_(torch.where(mask, v, x))` writes the same values in place. It is **safe** when syncfix
    proves what makes it exact:
    - `mask` is a bool tensor of exactly `x`'s shape (a mask over leading dimensions would
      broadcast from the trailing side in `where`), and `v` is 0-d;
    - `v` has `x`'s dtype: `index_put_` casts `v` to `x`'s dtype, `where` promotes instead;
    - all on the one CUDA device; `x` is a plain name (it is read twice) of a new tensor or a
      cast of one (`copy_` into an expanded view, whose elements share memory, raises where
      `x[mask] = v` did not); `v` and `mask` are side-effect free;
    - autograd cannot differ: inside `no_grad`, or `v` cannot require grad (its gradient would be
      summed in a different order).

    Otherwise the fix is **unsafe** (and casts `v` with `.to(x.dtype)` as `index_put_` would).
    `x[mask] = y[mask]`, with `y` provably of `x`'s shape and the same mask written alike, is
    rewritten the same way, with `y` in place of `v` (each selected element takes `y`'s element
    there, as the store does); the same conditions make it safe.
    `x[mask] += v` becomes `x.copy_(torch.where(mask, x + v, x))`: each selected element is
    computed as the update computes it (`x` and `v` in `x`'s dtype), the others keep their bits
    (a `-0.0` stays `-0.0`, as it would not under `x.add_(torch.where(mask, v, 0))`). It is
    **safe** when `mask` provably has `x`'s shape, `x` is a plain name of a tensor whose
    elements share no memory, `x`'s dtype is provably floating (on an integer tensor
    `x[mask] += 0.5` raises) and `v` is a Python number (or a 0-d tensor of `x`'s dtype that
    cannot require grad); otherwise **unsafe**, saying which of these is not proven. A value of
    another shape (`x[m] += y[m]`) gets no fix.
    `x[mask] = vals` with another values tensor becomes `x.masked_scatter_(mask, vals)`: **unsafe**,
    because `index_put_` raises when `vals` has the wrong number of elements while
    `masked_scatter_` silently uses the first ones (and broadcasts a 1-element `vals` differently).
    Where `vals` is itself selected with a mask (`f(y[mask])`), that selection syncs as well, so
    there is no fix; the finding says so. Without a proof that `mask` has `x`'s shape there is no
    fix.
    """

    CODE = "SFX204"
    NAME = "masked-store-to-where"
    MESSAGE = "Masked store of a CUDA tensor value syncs (index_put_ counts the mask on the host)"
    FIX = "sometimes"
    SAFETY = ("safe", "unsafe")
    TRIGGERS = ("] =", "] +=", "] -=", "] *=", "] /=")
    VALID = [
        # a Python number: the masked_fill fast path, no sync
        "import torch\nx = torch.randn(8, device='cuda')\nx[x < 0] = 0.0\n",
        # an integer index, not a mask
        "import torch\nx = torch.randn(8, device='cuda')\ni = torch.arange(3, device='cuda')\n"
        "x[i] = x.mean()\n",
    ]
    INVALID = [
        Invalid(
            "import torch\nwith torch.no_grad():\n    x = torch.randn(8, device='cuda')\n"
            "    x[x < 0] = x.mean()\n",
            "import torch\nwith torch.no_grad():\n    x = torch.randn(8, device='cuda')\n"
            "    x.copy_(torch.where(x < 0, x.mean(), x))\n",
        ),
        # the value is x itself (0-d): it may share memory with x → unsafe only
        Invalid(
            "import torch\nwith torch.no_grad():\n    x = torch.full((), 2.0, device='cuda')\n    v = x\n"
            "    x[x > 0] = v\n",
            "import torch\nwith torch.no_grad():\n    x = torch.full((), 2.0, device='cuda')\n    v = x\n"
            "    x.copy_(torch.where(x > 0, v, x))\n",
            unsafe=True,
        ),
        # the values selected with the store's own mask from a tensor of x's shape
        Invalid(
            "import torch\nx = torch.randn(8, device='cuda')\nm = x > 0\nv = torch.randn_like(x)\n"
            "x[m] = v[m]\n",
            "import torch\nx = torch.randn(8, device='cuda')\nm = x > 0\nv = torch.randn_like(x)\n"
            "x.copy_(torch.where(m, v, x))\n",
        ),
        # values from elsewhere, one per selected element
        Invalid(
            "import torch\nx = torch.randn(8, device='cuda')\nm = x > 0\nv = torch.randn(8, device='cuda')\n"
            "x[m] = v[:3]\n",
            "import torch\nx = torch.randn(8, device='cuda')\nm = x > 0\nv = torch.randn(8, device='cuda')\n"
            "x.masked_scatter_(m, v[:3])\n",
            unsafe=True,
        ),
    ]

    def visit_Assign(self, node: cst.Assign) -> None:
        a = self.analysis
        if len(node.targets) != 1:
            return
        target = node.targets[0].target
        mask = _mask_index(a, target)
        if mask is None:
            return
        assert isinstance(target, cst.Subscript)
        x = target.value
        v = node.value
        vv = a.value(v)
        if a.number_kind(v) is not None or not vv.is_tensor or vv.device not in _MAYBE_CUDA:
            return  # a host value: the sync-free masked_fill path (or a CPU tensor copy)
        fix = self._fix(node, x, mask, v)
        if fix is None and _reads_with_mask(a, v):
            self.report(node, self.MESSAGE + _VALUES_SELECTED)
            return
        self.report(node, fix=fix)

    def visit_AugAssign(self, node: cst.AugAssign) -> None:
        a = self.analysis
        target = node.target
        mask = _mask_index(a, target, unplaced=a.is_hot(node))
        if mask is None:
            return
        assert isinstance(target, cst.Subscript)
        placed = a.value(mask).device in _MAYBE_CUDA
        message = _UPDATE + ("" if placed else unplaced_message(a, node))
        self.report(node, message, fix=self._update_fix(node, target.value, mask))

    def _update_fix(self, node: cst.AugAssign, x: cst.BaseExpression, mask: cst.BaseExpression) -> Fix | None:
        """``x[mask] += v`` -> ``x.copy_(torch.where(mask, x + v, x))`` (muzero's
        ``scale[scale < 1e-5] += 1e-5``): each selected element gets ``x + v`` computed as the
        update computes it, the others keep theirs."""
        a = self.analysis
        op = _UPDATE_OPS.get(type(node.operator))
        torch = a.torch_alias_at(node)
        stmt = a.parent(node)
        v = node.value
        if op is None or torch is None or not isinstance(stmt, cst.SimpleStatementLine) or len(stmt.body) != 1:
            return None
        same_shape = a.shape_key(mask) is not None and a.shape_key(mask) == a.shape_key(x)
        number = a.python_number_type(v) in ("int", "float")
        if not (same_shape and (number or a.is_zero_dim(v))):
            return None
        if not (a.is_effect_free(v) and a.is_effect_free(mask) and a.is_effect_free(x)):
            return None
        xs, ms, vs = code(a, x), code(a, mask), code(a, v)
        value = vs if isinstance(v, (cst.Name, cst.Integer, cst.Float, cst.Attribute)) else f"({vs})"
        new = cst.parse_expression(f"{xs}.copy_({torch}.where({ms}, {xs} {op} {value}, {xs}))")
        why = []
        if a.dtype_kind(x) != "float" or not number and a.dtype_of(v) != a.dtype_of(x):
            # ``x[m] += 0.5`` on an int tensor raises (the selected copy is updated in place)
            why.append("x's dtype is not provably floating, or v's not provably x's")
        if not isinstance(x, cst.Name):
            why.append("x is evaluated more than once")
        if not _no_overlap(a, x):
            why.append("x may be an expanded view (copy_ refuses a tensor whose elements share memory)")
        if not (number or a.in_no_grad(node) or a.is_grad_free(v)):
            why.append("the value's gradient would be summed in another order")
        changes = {node: cst.Expr(new)}
        if not why:
            return self.safe_fix(changes, "Update with torch.where on the device")
        return self.unsafe_fix(changes, "Update with torch.where (unsafe: " + "; ".join(why) + ")")

    def _fix(self, node, x, mask, v):
        a = self.analysis
        torch = a.torch_alias_at(node)
        stmt = a.parent(node)
        if torch is None or not isinstance(stmt, cst.SimpleStatementLine) or len(stmt.body) != 1:
            return None
        same_shape = a.shape_key(mask) is not None and a.shape_key(mask) == a.shape_key(x)
        if not same_shape or not (a.is_effect_free(v) and a.is_effect_free(mask) and a.is_effect_free(x)):
            return None
        # ``x[m] = y[m]`` with ``y`` of ``x``'s shape: ``where`` takes ``y`` at the same elements
        selected = _same_mask_read(a, v, mask, x)
        source = v if selected is None else selected
        dx, dv = a.dtype_of(x), a.dtype_of(source)
        same_dtype = dx is not None and dx == dv
        xs, ms, vs = code(a, x), code(a, mask), code(a, source)
        value = vs if same_dtype else f"({vs}).to({xs}.dtype)"
        if a.is_zero_dim(v) or selected is not None:
            new = cst.parse_expression(f"{xs}.copy_({torch}.where({ms}, {value}, {xs}))")
            changes = {node: cst.Expr(new)}
            why = []
            if not same_dtype:
                why.append("the value's dtype is not provably x's")
            if not isinstance(x, cst.Name):
                why.append("x is evaluated twice")
            if selected is None and not is_new_tensor(a, v, follow_names=True):
                why.append("the value may share memory with x (index_put_ refuses overlap, where does not)")
            if not _no_overlap(a, x):
                why.append("x may be an expanded view (copy_ refuses a tensor whose elements share memory)")
            devices = {a.value(e).device for e in (x, mask, source)}
            if devices != {Device.CUDA} or a.may_use_several_devices:
                why.append("not provably one CUDA device")
            if not (a.in_no_grad(node) or a.is_grad_free(source)):
                why.append("the value's gradient would be summed in another order")
            if not why:
                return self.safe_fix(changes, "Store with torch.where on the device")
            return self.unsafe_fix(changes, "Store with torch.where (unsafe: " + "; ".join(why) + ")")
        if _reads_with_mask(a, v):
            return None  # ``masked_scatter_`` of values selected with a mask would sync as well
        new = cst.parse_expression(f"{xs}.masked_scatter_({ms}, {value})")
        return self.unsafe_fix(
            {node: cst.Expr(new)},
            "Store with masked_scatter_ (unsafe: a wrong number of values is no longer an error)",
        )


_UPDATE = (
    "Masked update `x[mask] op= v` syncs twice (a masked read and a masked store); "
    "`x.copy_(torch.where(mask, x op v, x))` updates the same elements on the device"
)
_UPDATE_OPS: dict[type, str] = {
    cst.AddAssign: "+", cst.SubtractAssign: "-", cst.MultiplyAssign: "*", cst.DivideAssign: "/",
}

_VALUES_SELECTED = (
    "; no fix: the values are themselves selected with a mask, which syncs as the store does (a "
    "`masked_scatter_` of them would sync too); where they are an element-wise function `f` of a "
    "tensor of `x`'s shape, `x.copy_(torch.where(mask, f(x), x))` needs no sync"
)


def _same_mask_read(
    a: ModuleAnalysis, v: cst.BaseExpression, mask: cst.BaseExpression, x: cst.BaseExpression
) -> cst.BaseExpression | None:
    """``y`` when ``v`` is ``y[mask]`` (the store's own mask, written alike) and ``y`` provably
    has ``x``'s shape: ``torch.where(mask, y, x)`` holds ``y``'s element at each selected one."""
    if not isinstance(v, cst.Subscript) or _mask_index(a, v) is None:
        return None
    index = v.slice[0].slice
    assert isinstance(index, cst.Index)
    if code(a, index.value) != code(a, mask):
        return None
    key = a.shape_key(v.value)
    return v.value if key is not None and key == a.shape_key(x) else None


def _reads_with_mask(a: ModuleAnalysis, expr: cst.BaseExpression) -> bool:
    """Does ``expr`` select values with a bool mask (``y[m]``, a sync of its own)?"""
    return any(
        isinstance(sub, cst.Subscript) and _mask_index(a, sub) is not None
        for sub in a.nodes_within(expr, cst.Subscript)
    )


def _mask_index(a: ModuleAnalysis, target: cst.BaseExpression, *, unplaced: bool = False) -> cst.BaseExpression | None:
    """``mask`` when ``target`` is ``x[mask]`` with a bool tensor mask that may be on CUDA (with
    ``unplaced``, also one on a device syncfix cannot name)."""
    if not isinstance(target, cst.Subscript) or len(target.slice) != 1:
        return None
    index = target.slice[0].slice
    if not isinstance(index, cst.Index) or index.star is not None:
        return None
    mask = index.value
    v = a.value(mask)
    devices = (*_MAYBE_CUDA, Device.UNKNOWN) if unplaced else _MAYBE_CUDA
    if not (v.is_tensor and v.device in devices and a.dtype_of(mask) == "torch.bool"):
        return None
    if not a.is_tensor(target.value):
        return None
    return mask


# Methods whose result has no elements sharing memory when their receiver has none (a cast, a
# contiguous copy, a detached alias; not ``expand``/``broadcast_to``/``unfold``/``as_strided``).
_KEEPS_NO_OVERLAP = {
    "float", "double", "half", "bfloat16", "int", "long", "short", "bool", "byte", "char",
    "contiguous", "detach", "clone", "to", "type", "cuda", "cpu",
}


def _no_overlap(a, expr: cst.BaseExpression, depth: int = 0) -> bool:
    """Is ``expr`` provably a tensor none of whose elements share memory (``copy_`` into an
    expanded view raises, where ``x[mask] = v`` did not)? A new tensor, a cast of one, or a name
    every binding of which is one."""
    if depth > 8:
        return False
    if isinstance(expr, cst.Name):
        values = a.reaching_values(expr)
        return bool(values) and all(
            isinstance(v, cst.BaseExpression) and _no_overlap(a, v, depth + 1) for v in values
        )
    if isinstance(expr, cst.Call) and isinstance(expr.func, cst.Attribute) and expr.func.attr.value in _KEEPS_NO_OVERLAP:
        return _no_overlap(a, expr.func.value, depth + 1)
    return is_new_tensor(a, expr)
