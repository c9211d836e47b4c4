"""SFX104: a CUDA tensor indexed with a Python list or a CPU integer tensor (a blocking copy)."""

from __future__ import annotations

import libcst as cst

from syncfix.analysis import Device, Kind, Memory, handler_site, keyword, positional
from syncfix.rules import Fix, Invalid, Rule

from ._support import code, comma, kwarg, loader_item, unplaced_message, unplaced_tensor

# torch factories whose integer result is always 1-d (so it indexes like a list, never like an int)
_ONE_DIM = {"torch.arange", "torch.randperm"}


class CpuIndexOnDevice(Rule):
    """
    ## What it finds
    In a loop or a training step, a CUDA tensor indexed with a Python list of ints
    (`x[[1, 2, 3]]`, `x[:, [0, 2]]`, `x[[i, i + 1]]` with `i` provably a Python int) or with a CPU integer index tensor (`x[idx_cpu]`), read or
    assigned. A tensor whose device syncfix cannot name, indexed with a list of ints where code
    repeats (a model's `forward`: `self.lm_head(x[:, [-1], :])` once per generated token), or
    with a CPU integer index tensor (mixup's `inputs[torch.randperm(n)]` every step: a value so
    indexed in torch code is taken for a tensor), is reported too, as a copy if the tensor is on
    a GPU.

    ## Why it costs
    PyTorch moves the index to the GPU with a blocking `.to(device)` before indexing: the CPU waits
    for all queued GPU work, on every iteration (1 sync; `x[idx_cpu] = 0.0`
    costs 2: docs/semantics.md#masked-and-indexed-stores). A CPU *bool* mask no longer syncs (2.11, pytorch#156384) and is not flagged; neither
    is a CUDA index.

    ## Example
    ```python
    for step in range(n):
        y = x[[0, 2, 5]]
    ```

    ## Use instead
    ```python
    for step in range(n):
        y = x[torch.tensor([0, 2, 5], pin_memory=True).to(x.device, non_blocking=True)]
    ```
    (or build the index on the device once, before the loop).

    ## Fix safety
    No fix, safe or unsafe, is given inside a `try` whose handler may catch a `RuntimeError`
    (or around a call of the function, or in `contextlib.suppress`/`pytest.raises`), as for
    SFX101: the blocking copy is where an error from queued GPU work surfaces inside the `try`;
    without the wait it would be raised later, outside it.
    Where the index is made in place by `torch.arange(...)` (CLIP's
    `x[torch.arange(x.shape[0]), text.argmax(dim=-1)]`), the fix builds it where the tensor is,
    `torch.arange(n, device=x.device)`: the same int64 values on any device, and no copy at all.
    It is **safe** where `x` is provably a tensor, **unsafe** where only its use says so (it must
    have a `.device`), and needs `x` to be a plain name or attribute.
    Otherwise the fix builds the same int64 index in pinned memory and copies it without waiting. It is
    **unsafe** for a list of Python ints that are not literals (`x[[i, i + 1]]`): for an int
    outside int64 the error raised by the indexing path and by `torch.tensor` was not checked to
    be the same. It is **safe** when:
    - the list holds only int literals (not bools, which would make a mask; not empty, which would
      make a float index), or the index is a CPU int64 tensor that is provably 1-d
      (`torch.arange`, `torch.randperm`, `torch.tensor([ints])`) in pageable memory: a 0-d index
      tensor selects like an int and returns a view (and a CUDA one would sync anyway), and
      `.pin_memory()` of an already pinned index returns the index itself, which a later write
      could change before the copy runs;
    - the indexed tensor is provably on CUDA (pinning needs CUDA) and is a plain name or attribute
      (it is named again for its `.device`);
    - the file uses no CUDA streams, and `torch` is imported as `torch`.
    The pinned temporary (or the `.pin_memory()` copy of a CPU index) is referenced by nothing
    else, so nothing can write it before the copy runs
    (docs/semantics.md#copies-between-host-and-device). Out-of-range indices fail the same
    way (in the indexing kernel). Other CPU index tensors (dtype or rank unknown) get a finding
    without a fix, and so does a list index of a tensor whose device syncfix cannot name: the
    pinned index needs CUDA, and the slice that selects the same values (`x[:, -1:]` for
    `x[:, [-1]]`) returns a view where the list returns a new tensor, which a later in-place
    write or a `.view()` could tell apart. Where the indexed value is only an operand of a
    comparison or of arithmetic (`logits < v[:, [-1]]`, whose result is new memory) and every
    other index is a slice, the slice is an **unsafe** fix: the view cannot show there, but a
    dimension too short for the index gives an empty result (and perhaps a broadcasting error
    later) where the list raised `IndexError`.
    """

    CODE = "SFX104"
    NAME = "cpu-index-on-device"
    MESSAGE = "CUDA tensor indexed with a host index: the index is copied with a blocking copy"
    FIX = "sometimes"
    SAFETY = ("safe", "unsafe")
    TRIGGERS = ("[",)
    VALID = [
        # a CUDA index
        "import torch\nx = torch.ones(4, device='cuda')\ni = torch.arange(2, device='cuda')\n"
        "for _ in range(3):\n    y = x[i]\n",
        # a CPU tensor indexed with a list: no copy
        "import torch\nx = torch.ones(4)\nfor _ in range(3):\n    y = x[[0, 1]]\n",
        # a list of bools is a mask, and ints/slices are not host index tensors
        "import torch\nx = torch.ones(2, device='cuda')\nfor _ in range(3):\n"
        "    y = x[[True, False]], x[0], x[1:]\n",
    ]
    INVALID = [
        Invalid(
            "import torch\nx = torch.ones(4, device='cuda')\nfor _ in range(3):\n    y = x[[0, 2]]\n",
            "import torch\nx = torch.ones(4, device='cuda')\nfor _ in range(3):\n"
            "    y = x[torch.tensor([0, 2], pin_memory=True).to(x.device, non_blocking=True)]\n",
        ),
        Invalid(
            "import torch\nx = torch.ones(4, 4, device='cuda')\nidx = torch.arange(2)\n"
            "for _ in range(3):\n    x[:, idx] = 0.0\n",
            "import torch\nx = torch.ones(4, 4, device='cuda')\nidx = torch.arange(2)\n"
            "for _ in range(3):\n    x[:, idx.pin_memory().to(x.device, non_blocking=True)] = 0.0\n",
        ),
        # an integer CPU index of unknown rank (maybe 0-d): no fix
        Invalid(
            "import torch\nx = torch.ones(4, device='cuda')\ni = torch.randint(0, 4, ())\n"
            "for _ in range(3):\n    y = x[i]\n",
            None,
        ),
    ]

    def visit_Subscript(self, node: cst.Subscript) -> None:
        a = self.analysis
        if not a.is_hot(node):
            return
        if not a.is_cuda_tensor(node.value):
            self._unplaced(node)
            return
        changes: dict[cst.CSTNode, cst.CSTNode] = {}
        found = fixable = maybe = unsafe = 0
        for element in node.slice:
            index = element.slice
            if not isinstance(index, cst.Index):
                continue
            kind = self._host_index(index.value)
            if kind is None:
                continue
            found += 1
            maybe += kind == "maybe"
            unsafe += kind == "int-list"
            new = self._on_device(index.value, node.value, kind)
            if new is not None:
                fixable += 1
                changes[index.value] = new
        if not found:
            return
        fix = self._fix(node, changes, unsafe=unsafe > 0) if fixable == found else None
        message = self.MESSAGE
        if maybe:
            message += " (if the CPU index is an integer tensor of 1 or more dims; a bool mask does not sync)"
        self.report(node, message, fix=fix)

    def _unplaced(self, node: cst.Subscript) -> None:
        """A list of ints indexing a tensor whose device syncfix cannot name, where code repeats
        (nanoGPT's ``self.lm_head(x[:, [-1], :])`` once per generated token): if the tensor is
        on a GPU, the same blocking copy. No fix: pinning needs CUDA."""
        a = self.analysis
        proven = a.value(node.value)
        # on CUDA or the CPU (MixMatch's ``targets_x.cuda()`` under ``if use_cuda:``): a sync
        # when on CUDA, but pinning needs CUDA, so no fix either
        either = proven.is_tensor and proven.device is Device.CUDA_OR_CPU and not a.used_as_module(node.value)
        lists = [
            el.slice.value for el in node.slice
            if isinstance(el.slice, cst.Index) and isinstance(el.slice.value, cst.List)
            and self._host_index(el.slice.value) in ("list", "int-list")
        ]
        if not lists:
            tensors = [
                el.slice.value for el in node.slice
                if isinstance(el.slice, cst.Index) and self._likely_index_tensor(el.slice.value)
            ]
            # indexed with an integer tensor, in torch code that repeats: likely a tensor itself
            held = a.likely.value(node.value)
            likely = held.kind is Kind.UNKNOWN and a.torch_code and not a.used_as_module(node.value)
            if tensors and (either or unplaced_tensor(a, node.value) or likely and not loader_item(a, node.value)):
                built = self._built_on_device(node, tensors)
                if built is not None:
                    self.report(node, f"Tensor indexed with a CPU index tensor: the index is copied to the tensor's device with a blocking copy{unplaced_message(a, node)}", fix=built)
                    return
                # pycls's mixup: ``inputs[permutation, :]`` with ``permutation = torch.randperm(n)``
                index = code(a, tensors[0])
                head = (
                    "Tensor indexed with a CPU index tensor: the index is copied to the tensor's "
                    f"device with a blocking copy{unplaced_message(a, node)}; no fix: "
                )
                if a.caught_by_handler(node):
                    self.report(
                        node,
                        f"{head}it is inside a try whose handler may catch its error ({handler_site(a, node)}): "
                        "without this wait an error of queued GPU work would surface later, outside the try",
                    )
                    return
                self.report(
                    node,
                    f"{head}copy it without "
                    f"the wait, `{index}.to({code(a, node.value)}.device, non_blocking=True)`, once "
                    "where it is made (exact on CUDA and the CPU for an index nothing writes "
                    "afterwards; `torch.randperm(n, device=...)` would draw other numbers)",
                )
            return
        if not (either or unplaced_tensor(a, node.value)):
            return
        one = next((e for e in lists if len(e.elements) == 1), None)
        as_slice = _as_slice(a, one.elements[0].value) if one is not None else None
        message = (
            "Tensor indexed with a Python list: the index is copied to the tensor's device with a "
            f"blocking copy{unplaced_message(a, node)}"
        )
        if one is not None and as_slice and _operand_only(a, node, one) and not a.caught_by_handler(node):
            # makemore's ``logits < v[:, [-1]]``: a view nothing keeps or writes
            element = cst.parse_expression(f"x[{as_slice}]").slice[0]  # type: ignore[attr-defined]
            fix = self.unsafe_fix(
                {next(el for el in node.slice if isinstance(el.slice, cst.Index) and el.slice.value is one): element},
                f"Index with the slice `{as_slice}` (unsafe: a dimension too short for the index "
                "gives an empty result where the list raised IndexError; the view it returns "
                "where the list returned a copy is only an operand here)",
            )
            self.report(node, message, fix=fix)
            return
        hint = (
            f"the slice `{as_slice}` in place of `{code(a, one)}` selects the same values with no copy of "
            "the index, but returns a view where the list returns a copy"
            if one is not None and as_slice else
            "an index tensor built on the device once, before the loop, needs no copy"
        )
        self.report(node, f"{message}; no fix: {hint}")

    def _built_on_device(self, node: cst.Subscript, tensors: list[cst.BaseExpression]) -> Fix | None:
        """``x[torch.arange(x.shape[0]), idx]`` (CLIP's text pooling, UniFormer's mixup loss):
        the index built where ``x`` is, ``torch.arange(n, device=x.device)``: the same int64
        values on any device, so no copy at all. Safe where ``x`` is provably a tensor; unsafe
        where only likely (``x.device`` must exist)."""
        a = self.analysis
        made = [t for t in tensors if isinstance(t, cst.Call) and a.callee(t) == "torch.arange"]
        if len(made) != len(tensors) or not _is_plain(node.value) or a.caught_by_handler(node):
            return None
        if any(arg.keyword is not None or arg.star for t in made for arg in t.args) or not _torch_is_imported(a, node):
            return None
        device = cst.Attribute(node.value, cst.Name("device"))
        changes = {t: t.with_changes(args=[*t.args[:-1], t.args[-1].with_changes(comma=comma()), kwarg("device", device)]) for t in made}
        what = f"Build the index on `{code(a, node.value)}`'s device (`device={code(a, node.value)}.device`): no copy"
        if a.value(node.value).is_tensor:
            return self.safe_fix(changes, what)
        return self.unsafe_fix(changes, f"{what} (unsafe: `{code(a, node.value)}` is taken to be a tensor, as its use says)")

    def _host_index(self, expr: cst.BaseExpression) -> str | None:
        """"list" (a list of int literals), "tensor" (a provably 1-d CPU int tensor), "maybe"
        (a CPU tensor that may be an integer index), or None (not a host index that syncs)."""
        a = self.analysis
        if isinstance(expr, cst.List):
            if not expr.elements or any(isinstance(e, cst.StarredElement) for e in expr.elements):
                return None
            values = [a.literal_number(e.value) for e in expr.elements]
            if all(isinstance(v, int) and not isinstance(v, bool) for v in values):
                return "list"
            if all(a.python_number_type(e.value) == "int" for e in expr.elements):
                return "int-list"  # Python ints of unknown size
            return None  # may hold tensors (then it indexes like a tuple) or bools (a mask)
        value = a.value(expr)
        if not value.is_tensor or value.device is not Device.CPU:
            return None
        if value.dtype == "torch.bool":
            return None  # a CPU bool mask does not sync in 2.11
        # .pin_memory() returns an already pinned tensor itself, which later writes could reach
        # before the copy runs: only a pageable index is copied into a fresh pinned one.
        if a.is_integer_tensor(expr) and self._one_dim(expr) and value.memory is Memory.PAGEABLE:
            return "tensor"
        return "maybe"

    def _likely_index_tensor(self, expr: cst.BaseExpression) -> bool:
        """A 1-d CPU integer tensor, its dtype read in the likely view for a finding with no fix
        (Informer's ``torch.arange(B)`` of ``B = x.shape[0]``: an int, as sizes are)."""
        kind = self._host_index(expr)
        if kind != "maybe":
            return kind == "tensor"
        a = self.analysis
        while True:  # ``torch.arange(B)[:, None, None]``, ``torch.arange(L).unsqueeze(1)``: its values
            if isinstance(expr, cst.Subscript) and all(
                isinstance(el.slice, cst.Slice) and el.slice.lower is el.slice.upper is el.slice.step is None
                or isinstance(el.slice, cst.Index) and isinstance(el.slice.value, cst.Name) and el.slice.value.value == "None"
                for el in expr.slice
            ):
                expr = expr.value
            elif isinstance(expr, cst.Call) and isinstance(expr.func, cst.Attribute) and expr.func.attr.value == "unsqueeze":
                expr = expr.func.value
            else:
                break
        if not self._one_dim(expr):
            return False
        values = (a.reaching_values(expr) or []) if isinstance(expr, cst.Name) else [expr]
        return bool(values) and all(
            isinstance(v, cst.Call) and a.callee(v) == "torch.arange" and keyword(v, "dtype") is None
            and all(a.likely_size(arg.value, follow=True) for arg in positional(v))
            for v in values
        )

    def _one_dim(self, expr: cst.BaseExpression) -> bool:
        a = self.analysis
        values = a.reaching_values(expr) if isinstance(expr, cst.Name) else [expr]
        if not values:
            return False
        for v in values:
            if not isinstance(v, cst.Call):
                return False
            name = a.callee(v)
            args = positional(v)
            if name in _ONE_DIM:
                continue
            if name == "torch.tensor" and args and isinstance(args[0].value, cst.List):
                if all(not isinstance(e.value, (cst.List, cst.Tuple)) for e in args[0].value.elements):
                    continue
            return False
        return True

    def _on_device(
        self, index: cst.BaseExpression, tensor: cst.BaseExpression, kind: str
    ) -> cst.BaseExpression | None:
        if kind == "maybe" or not _is_plain(tensor):
            return None
        device = cst.Attribute(tensor, cst.Name("device"))
        if kind in ("list", "int-list"):
            pinned: cst.BaseExpression = cst.Call(
                cst.Attribute(cst.Name("torch"), cst.Name("tensor")),
                [cst.Arg(index, comma=comma()), kwarg("pin_memory", cst.Name("True"))],
            )
        else:
            pinned = cst.Call(cst.Attribute(index, cst.Name("pin_memory")))
        return cst.Call(
            cst.Attribute(pinned, cst.Name("to")),
            [cst.Arg(device, comma=comma()), kwarg("non_blocking", cst.Name("True"))],
        )

    def _fix(self, node: cst.Subscript, changes: dict, *, unsafe: bool) -> Fix | None:
        a = self.analysis
        if a.uses_streams or not _torch_is_imported(a, node):
            return None
        new = node.with_changes(
            slice=[
                el.with_changes(slice=el.slice.with_changes(value=changes[el.slice.value]))
                if isinstance(el.slice, cst.Index) and el.slice.value in changes
                else el
                for el in node.slice
            ]
        )
        what = "Copy the index in pinned memory with non_blocking=True"
        if unsafe:
            return self.unsafe_fix(
                {node: new},
                what + " (unsafe: for an int outside int64 the error raised may differ)",
            )
        return self.safe_fix({node: new}, what)


def _as_slice(a, index: cst.BaseExpression) -> str | None:
    """The slice that selects what a one-int list literal does (``-1`` -> ``-1:``, ``3`` ->
    ``3:4``), or None."""
    k = a.literal_number(index)
    if not isinstance(k, int) or isinstance(k, bool):
        return None
    return "-1:" if k == -1 else f"{k}:{k + 1}"


def _operand_only(a, node: cst.Subscript, index: cst.List) -> bool:
    """Is ``node`` an operand of a comparison or of arithmetic (whose result is new memory, so a
    view in place of a copy cannot show), with ``index`` its one advanced index and every other
    element a slice (with an int too, a slice would move the selected dimension)?"""
    others = [el.slice for el in node.slice if not (isinstance(el.slice, cst.Index) and el.slice.value is index)]
    if len(others) != len(node.slice) - 1 or not all(isinstance(o, cst.Slice) for o in others):
        return False
    parent = a.parent(node)
    if isinstance(parent, cst.ComparisonTarget):
        return True
    if isinstance(parent, cst.Comparison):
        return parent.left is node
    return isinstance(parent, cst.BinaryOperation) and not isinstance(parent.operator, cst.MatrixMultiply)


def _is_plain(expr: cst.BaseExpression) -> bool:
    while isinstance(expr, cst.Attribute):
        expr = expr.value
    return isinstance(expr, cst.Name)


def _torch_is_imported(a, node: cst.CSTNode) -> bool:
    """Does the name ``torch`` at ``node`` mean the torch module (``import torch``)?"""
    scope = a.scope(node)
    if scope is None or "torch" not in scope:
        return False
    for asg in scope["torch"]:
        imp = getattr(asg, "node", None)
        if not isinstance(imp, cst.Import):
            return False
        if not any(
            alias.asname is None and isinstance(alias.name, cst.Name) and alias.name.value == "torch"
            for alias in imp.names
        ):
            return False
    return True
