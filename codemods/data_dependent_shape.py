"""SFX205: ops whose output shape depends on GPU data (the host must read it)."""

from __future__ import annotations

import libcst as cst

from syncfix.analysis import Device, Kind, ModuleAnalysis, keyword, last_name, positional, root_name
from syncfix.rules import Fix, Invalid, Rule

from ._support import (
    append_kwarg,
    code,
    loader_item,
    method_call_on,
    unplaced_message,
    unplaced_tensor,
)

_MAYBE_CUDA = (Device.CUDA, Device.CUDA_OR_CPU)
# Indexes that are never boolean masks (checked before any fact is asked).
_NOT_MASKS = (cst.Integer, cst.SimpleString, cst.Ellipsis, cst.Tuple, cst.Slice)
# Parts of a ``*mask*`` name that make it an index tensor, not a mask (``mask_idx``, ``mask_ids``).
_INDEX_WORDS = frozenset({
    "i", "j", "n", "id", "idx", "idxs", "ids", "ind", "inds", "index", "indices", "num", "pos", "positions", "slice", "slices",
})


def _likely_mask(a: ModuleAnalysis, m: cst.BaseExpression) -> str | None:
    """Is index ``m`` likely a boolean mask not on the CPU: "dtype" when its likely dtype is
    bool, "named" when its dtype is unknown but its name says mask (``mask_k``, ``~valid_mask``;
    not ``mask_idx``), "named, maybe a tensor" when syncfix cannot even tell it is a tensor (a
    mask of a tensor only, then), None otherwise."""
    v = a.likely.value(m)
    if v.kind is Kind.UNKNOWN and _named_mask(m):
        return "named, maybe a tensor"  # a parameter ``condition_mask``: only of a tensor
    if not v.is_tensor or v.device is Device.CPU:
        return None
    dtype = a.likely.dtype_of(m)
    if dtype == "torch.bool":
        return "dtype"
    return "named" if dtype is None and _named_mask(m) else None


def _indexed_by_a_mask(a: ModuleAnalysis, node: cst.Subscript) -> bool:
    """A value syncfix cannot name (``cond_data``, one branch's ``torch.cat`` and the other's
    normalizer output) indexed, where code repeats, by a likely mask tensor: a tensor too, as
    nothing else is indexed by one (diffusion_policy's ``cond_data[condition_mask]``)."""
    receiver = node.value
    return (
        a.is_hot(node) and a.likely.value(receiver).kind is Kind.UNKNOWN
        and not a.used_as_module(receiver) and not loader_item(a, receiver)
    )


def _named_mask(m: cst.BaseExpression) -> bool:
    """``mask_k``, ``~valid_mask``, ``padmask``, a row ``mask[i]``, and ``mask[i] & (ids >= 0)``
    (flair's): a name with a part that is a mask (not ``mask_idx``, nor Megatron's
    ``masked_target_1d``, a target with some entries masked), combined only with others or
    with comparisons."""
    if isinstance(m, cst.UnaryOperation):
        return isinstance(m.operator, cst.BitInvert) and _named_mask(m.expression)
    if isinstance(m, cst.BinaryOperation):
        sides = (m.left, m.right)
        return (
            isinstance(m.operator, (cst.BitAnd, cst.BitOr))
            and all(_named_mask(x) or isinstance(x, cst.Comparison) for x in sides)
            and any(_named_mask(x) for x in sides)
        )
    if isinstance(m, cst.Subscript):
        m = m.value  # a row of a mask
    parts = last_name(m).lower().split("_")
    return any(p.endswith(("mask", "masks")) for p in parts) and not _INDEX_WORDS.intersection(parts)


def _named_mask_said(a: ModuleAnalysis, m: cst.BaseExpression) -> str:
    return f" (if `{code(a, m)}` is boolean, as its name says: syncfix cannot read its dtype)"


def _may_be_mask(e: cst.BaseExpression) -> bool:
    """Not a literal index: ``~mask`` may be a mask, ``-1`` is not."""
    if isinstance(e, cst.UnaryOperation):
        return isinstance(e.operator, cst.BitInvert)
    return not isinstance(e, _NOT_MASKS)
_ADVICE = {
    "nonzero": "`torch.nonzero_static(x, size=k)` is sync-free (pads or truncates); element-wise "
    "uses can stay masks (`torch.where`, `masked_fill`)",
    "argwhere": "`torch.nonzero_static(x, size=k)` is sync-free (pads or truncates)",
    "where": "with one argument it is `nonzero(as_tuple=True)`: `torch.nonzero_static(x, size=k)` is "
    "sync-free (pads or truncates); element-wise uses can stay masks (`torch.where(mask, x, y)`)",
    "masked_select": "keep the mask: `torch.where(mask, x, 0)` for element-wise use or reductions",
    "unique": "no sync-free equivalent; hoist it out of the hot loop, or count into a fixed-size "
    "tensor with `scatter_add_` when the values are bounded",
    "unique_consecutive": "no sync-free equivalent; hoist it out of the hot loop",
    "bincount": "`torch.zeros(n).scatter_add_(0, idx, ones)` with a known `n` is sync-free",
    "histc": "pass `min=` and `max=` (sync-free; identical only if they equal the data's range)",
    "one_hot": "pass `num_classes=` (sync-free; identical only if it equals `idx.max() + 1`)",
    "repeat_interleave": "pass `output_size=` (sync-free; identical only if it equals "
    "`repeats.sum()` and `repeats >= 0`)",
}

# Why a finding has no fix, per op (default: _NEEDS_A_NUMBER).
_NEEDS_A_NUMBER = "the sync-free form needs a number only the author knows (a size, a bound, a class count)"
_NO_FIX = {
    "unique": "moving it out of the loop is the author's call",
    "unique_consecutive": "moving it out of the loop is the author's call",
    "repeat_interleave": "`output_size` must equal `repeats.sum()`; syncfix passes it when that total "
    "was just read on the host (`n = int(repeats.sum())`) with `repeats` unchanged since",
    # a count needs no number: attention-is-all-you-need's ``pred.eq(gold).masked_select(mask).sum()``
    "masked_select": "which form keeps the mask depends on how the selected values are used; a count "
    "of a bool tensor's selected values is `(x & mask).sum()` (the same int64), a sum of other "
    "values `torch.where(mask, x, 0).sum()` (which may round differently)",
}
_KEEP_THE_MASK = "keep the mask (`torch.where(mask, x, 0)`) when the result is used element-wise or reduced"
_MASK_NO_FIX = (
    "which form keeps the mask depends on how the selected values are used; syncfix rewrites "
    "`x[mask].sum()` when `mask` provably has `x`'s shape"
)


# Methods only tensors have (numpy's arrays have ``nonzero``, pandas' ``unique``): ``x.masked_select(m)``
# of a value syncfix cannot name is a tensor's (FastSpeech2's loss, nine a step)
_TENSOR_ONLY = frozenset({"masked_select"})


class DataDependentShape(Rule):
    """
    ## What it finds
    GPU operations whose output *shape* depends on the data, so PyTorch reads a count on the host:
    boolean-mask reads `x[mask]`, `nonzero`/`argwhere` (and `torch.where(cond)` with one argument,
    which is `nonzero(as_tuple=True)`), `masked_select`, `unique`,
    `unique_consecutive`, `bincount`, `histc` without a range, `repeat_interleave` with a tensor of
    repeats and no `output_size`, `F.one_hot` without `num_classes`, and slicing or indexing with a
    CUDA scalar (`x[:n]`, `x[i]` with `n`, `i` 0-d CUDA tensors).
    Where the code repeats (a loop body, a step-like function or a function called from one), a
    tensor whose device syncfix cannot name (a parameter's `.grad`, a model output passed in, or
    an unannotated parameter its function uses as only a tensor is used, `target.index_select(0,
    i)` or `torch.zeros_like(target)`, unless it defaults to `None` or its type is tested) is
    reported too, as likely on the GPU, with no fix: the message says the device is unknown.
    `torch.tensor(x)` without `device=`, of a value syncfix cannot name, is likely a copy of
    host data (a list, an array): a CPU tensor, not reported. A
    mask whose dtype syncfix cannot read but whose name says it is one (`x[mask_k]`,
    `x[~valid_mask]`; not `x[mask_idx]`) counts as boolean, and the message says so. Indexed by a
    likely mask tensor, a value syncfix cannot name is taken for a tensor (nothing else is indexed
    by one); a name that says mask, of a value syncfix cannot name, is a mask only where it
    indexes a tensor. `x.masked_select(m)` of a value syncfix cannot name is a tensor's (no other
    type has that method).

    ## Why it costs
    The output must be allocated before the kernel that fills it runs, so the host waits for the
    GPU to finish everything queued and copies the size back (one or two syncs per call;
    docs/semantics.md#data-dependent-shapes).

    ## Example
    ```python
    pos = x[x > 0].sum()
    y = torch.repeat_interleave(x, reps)
    ```

    ## Use instead
    ```python
    pos = torch.where(x > 0, x, 0).sum()
    y = torch.repeat_interleave(x, reps, output_size=total)  # total known on the host
    ```

    ## Fix safety
    Most findings have no fix: each alternative needs a number only the author knows (a bound, a
    class count, a range). Two **unsafe** fixes exist:
    - `x[mask].sum()` → `torch.where(mask, x, 0).sum()` when `mask` provably has `x`'s shape: the
      same sum, but summed in another order (float results may differ in the last bits);
    - `repeat_interleave(..., repeats)` → `repeat_interleave(..., repeats, output_size=n)` when
      `n = repeats.sum().item()` (or `int(repeats.sum())`) was computed just before in the same
      block and `repeats` is unchanged since: the result is identical, but `output_size` skips the
      check that `repeats >= 0`, so invalid input no longer raises.
    """

    CODE = "SFX205"
    NAME = "data-dependent-shape"
    MESSAGE = "Data-dependent output shape: the host reads a count from the GPU (a sync)"
    FIX = "sometimes"
    SAFETY = ("unsafe",)
    TRIGGERS = ("[", "nonzero", "argwhere", "where", "masked_select", "unique", "bincount", "histc",
                "one_hot", "repeat_interleave")
    VALID = [
        # explicit sizes: sync-free
        "import torch\nimport torch.nn.functional as F\nidx = torch.zeros(4, dtype=torch.long, device='cuda')\n"
        "y = F.one_hot(idx, num_classes=10)\nz = torch.histc(idx.float(), bins=4, min=0, max=4)\n",
        # a CPU tensor: nothing to wait for
        "import torch\nx = torch.randn(8)\ny = x[x > 0]\n",
        # repeats given as a Python int
        "import torch\nx = torch.randn(8, device='cuda')\ny = x.repeat_interleave(2)\n",
    ]
    INVALID = [
        Invalid("import torch\nx = torch.randn(8, device='cuda')\ni = x.nonzero()\n"),
        Invalid(
            "import torch\nx = torch.randn(8, device='cuda')\ns = x[x > 0].sum()\n",
            "import torch\nx = torch.randn(8, device='cuda')\ns = torch.where(x > 0, x, 0).sum()\n",
            unsafe=True,
        ),
        Invalid(
            "import torch\nx = torch.randn(4, device='cuda')\nr = torch.tensor([1, 2, 0, 3], device='cuda')\n"
            "n = int(r.sum())\ny = torch.repeat_interleave(x, r)\n",
            "import torch\nx = torch.randn(4, device='cuda')\nr = torch.tensor([1, 2, 0, 3], device='cuda')\n"
            "n = int(r.sum())\ny = torch.repeat_interleave(x, r, output_size=n)\n",
            unsafe=True,
        ),
    ]

    def _cuda(self, e: cst.BaseExpression) -> bool:
        v = self.analysis.value(e)
        return v.is_tensor and v.device in _MAYBE_CUDA

    def visit_Call(self, node: cst.Call) -> None:
        a = self.analysis
        func = node.func
        if not a.may_end_in(func, _ADVICE):
            return  # neither ``torch.<op>`` nor ``x.<op>`` for an op this rule knows
        name = a.callee(node)
        args = positional(node)
        if name is not None and name.startswith("torch."):
            op = name.rsplit(".", 1)[-1]
            subject = args[0].value if args else None
        elif isinstance(func, cst.Attribute) and (a.likely.is_tensor(func.value) or func.attr.value in _TENSOR_ONLY):
            op = func.attr.value
            subject = func.value
            args = [cst.Arg(func.value), *args]  # as if torch.op(x, ...)
        else:
            return
        if op not in _ADVICE or subject is None:
            return
        if op == "where" and (len(args) != 1 or len(node.args) != 1):
            return  # ``torch.where(cond, x, y)`` selects element-wise: its shape is known
        unplaced = not self._cuda(subject)
        if unplaced and not unplaced_tensor(a, subject) and not (
            # ``torch.nonzero(vis[0])`` takes a tensor only: where the code repeats, its result
            # is a tensor of the argument's device (a loader's item stays on the CPU)
            (name is not None and name.startswith("torch.") or op in _TENSOR_ONLY)
            and not loader_item(a, subject) and unplaced_tensor(a, node)
        ):
            return
        if op == "histc" and _has_range(node, args):
            return
        if op == "one_hot" and (keyword(node, "num_classes") is not None or len(args) >= 2):
            return
        fix = None
        if op == "repeat_interleave":
            if keyword(node, "output_size") is not None:
                return
            repeats = args[1].value if len(args) >= 2 else keyword(node, "repeats")
            if isinstance(repeats, cst.Arg):
                repeats = repeats.value
            repeats = repeats if repeats is not None else subject  # repeat_interleave(reps)
            if not a.is_tensor(repeats):
                return  # an int number of repeats: no sync
            fix = None if unplaced else self._output_size_fix(node, repeats)
        message = f"{self.MESSAGE}: `{op}`; {_ADVICE[op]}" + (unplaced_message(self.analysis, node) if unplaced else "")
        self.report(node, message if fix is not None else f"{message}; no fix: {_NO_FIX.get(op, _NEEDS_A_NUMBER)}", fix=fix)

    def visit_Subscript(self, node: cst.Subscript) -> None:
        a = self.analysis
        if _is_store(a, node):
            return
        if not self._cuda(node.value):
            masks = [
                e.slice.value
                for e in node.slice
                if isinstance(e.slice, cst.Index) and _may_be_mask(e.slice.value)
            ]
            likely = [(m, _likely_mask(a, m)) for m in masks]
            named = [m for m, how in likely if how and how.startswith("named")]
            tensor = unplaced_tensor(a, node.value)
            a_mask_tensor = any(how in ("dtype", "named") for _, how in likely)
            # a mask tensor indexes a tensor, named or not; a mask only by its name, a known tensor
            if named and tensor or a_mask_tensor and (tensor or _indexed_by_a_mask(a, node)):
                said = "" if any(how == "dtype" for _, how in likely) else _named_mask_said(a, named[0])
                self.report(
                    node, f"{self.MESSAGE}: boolean-mask read{said}; {_KEEP_THE_MASK}" + unplaced_message(a, node)
                    + f"; no fix: {_MASK_NO_FIX}"
                )
            return
        for element in node.slice:
            index = element.slice
            if isinstance(index, cst.Index):
                v = a.value(index.value)
                if not v.is_tensor or v.device not in _MAYBE_CUDA:
                    continue
                dtype = a.dtype_of(index.value)
                if dtype == "torch.bool":
                    fix = self._masked_sum_fix(node, index.value)
                    message = f"{self.MESSAGE}: boolean-mask read; {_KEEP_THE_MASK}"
                    self.report(node, message if fix is not None else f"{message}; no fix: {_MASK_NO_FIX}", fix=fix)
                elif dtype is None and _named_mask(index.value):
                    said = _named_mask_said(a, index.value)
                    self.report(node, f"{self.MESSAGE}: boolean-mask read{said}; {_KEEP_THE_MASK}; no fix: {_MASK_NO_FIX}")
                elif a.is_zero_dim(index.value):
                    self.report(
                        node,
                        "Indexing with a CUDA scalar reads it on the host (`__index__`, a sync); "
                        "`x.index_select(0, i.view(1))` is sync-free (a copy of shape (1, ...)); no fix: "
                        "that copy is not the view `x[i]` is (writes through either differ)",
                    )
            elif isinstance(index, cst.Slice):
                bounds = [b for b in (index.lower, index.upper, index.step) if b is not None]
                if any(a.is_tensor(b) and self._cuda(b) for b in bounds):
                    self.report(
                        node,
                        "Slicing with a CUDA scalar bound reads it on the host (a sync); keep the bound "
                        "on the host, or mask instead of slicing; no fix: only the code that computes "
                        "the bound can keep it on the host",
                    )

    # ---- fixes ----------------------------------------------------------------------------
    def _masked_sum_fix(self, node: cst.Subscript, mask: cst.BaseExpression) -> Fix | None:
        a = self.analysis
        call = method_call_on(a, node, "sum")
        if not (
            call is not None
            and not call.args
            and len(node.slice) == 1
            and a.torch_alias_at(node) is not None
        ):
            return None
        x = node.value
        key = a.shape_key(x)
        if key is None or key != a.shape_key(mask) or not a.is_effect_free(x):
            return None
        new = cst.parse_expression(f"{a.torch_alias_at(node)}.where({code(a, mask)}, {code(a, x)}, 0).sum()")
        return self.unsafe_fix(
            {call: new}, "Sum through torch.where (unsafe: the summation order changes)"
        )

    def _output_size_fix(self, call: cst.Call, repeats: cst.BaseExpression) -> Fix | None:
        """``output_size=n`` when ``n = repeats.sum().item()`` (or ``int(repeats.sum())``) was just
        computed in this block and ``repeats`` is unchanged since."""
        a = self.analysis
        root = root_name(repeats)
        stmt = a.statement_of(call)
        block = a.block_of(stmt) if stmt is not None else None
        if root is None or block is None:
            return None
        body = list(block[1])
        index = next(i for i, s in enumerate(body) if s is stmt)
        wanted = code(a, repeats)
        for j in range(index - 1, -1, -1):
            s = body[j]
            fx = a.effects(s)
            if isinstance(s, cst.SimpleStatementLine) and len(s.body) == 1:
                small = s.body[0]
                if (
                    isinstance(small, cst.Assign)
                    and len(small.targets) == 1
                    and isinstance(small.targets[0].target, cst.Name)
                    and _is_host_sum_of(a, small.value, wanted)
                ):
                    n = small.targets[0].target.value
                    later = body[j + 1 : index]
                    if any((a.effects(t).writes | a.effects(t).inplace) & {n, root} for t in later):
                        return None
                    if any(a.effects(t).may_mutate_anything for t in later):
                        return None
                    return self.unsafe_fix(
                        {call: append_kwarg(call, "output_size", cst.Name(n))},
                        "Pass output_size (unsafe: repeats >= 0 is no longer checked)",
                    )
            if (fx.writes | fx.inplace) & {root} or fx.may_mutate_anything:
                return None
        return None


def _is_host_sum_of(a: ModuleAnalysis, e: cst.BaseExpression, wanted: str) -> bool:
    """``R.sum().item()``, ``int(R.sum())`` or ``int(R.sum().item())`` with ``R`` == wanted."""
    if isinstance(e, cst.Call) and a.callee(e) == "builtins.int" and len(e.args) == 1:
        e = e.args[0].value
    if (
        isinstance(e, cst.Call)
        and isinstance(e.func, cst.Attribute)
        and e.func.attr.value == "item"
        and not e.args
    ):
        e = e.func.value
    return (
        isinstance(e, cst.Call)
        and isinstance(e.func, cst.Attribute)
        and e.func.attr.value == "sum"
        and not e.args
        and code(a, e.func.value) == wanted
    )


def _has_range(call: cst.Call, args: list[cst.Arg]) -> bool:
    lo = keyword(call, "min") or (args[2] if len(args) > 2 else None)
    hi = keyword(call, "max") or (args[3] if len(args) > 3 else None)
    if lo is None or hi is None:
        return False
    return not (code_eq_zero(lo.value) and code_eq_zero(hi.value))  # min=max=0: data range


def code_eq_zero(e: cst.BaseExpression) -> bool | None:
    if isinstance(e, (cst.Integer, cst.Float)):
        return float(e.value) == 0
    return None


def _is_store(a: ModuleAnalysis, node: cst.Subscript) -> bool:
    parent = a.parent(node)
    if isinstance(parent, (cst.AssignTarget, cst.Del)):
        return True
    if isinstance(parent, cst.AugAssign) and parent.target is node:
        return True
    return False


