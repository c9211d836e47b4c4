"""SFX102: ``torch.tensor(data, device=cuda)`` builds on the host and copies with a blocking copy."""

from __future__ import annotations

from collections.abc import Sequence

import libcst as cst

from syncfix.analysis import (
    LEGACY_CONSTRUCTORS,
    Device,
    Kind,
    ModuleAnalysis,
    handler_site,
    keyword,
    positional,
)
from syncfix.model import Applicability
from syncfix.rules import Fix, Invalid, Rule

from . import _new_tensor as new_tensor
from ._copy_messages import name_the_device
from ._support import (
    code,
    comma,
    int_like,
    kwarg,
    other_accelerator,
    unplaced_message,
    unplaced_tensor,
)

_FLOAT_DTYPES = {"float32", "float", "float64", "double", "float16", "half", "bfloat16",
                 "complex64", "complex128", "cfloat", "cdouble"}
_INT_RANGES = {"int64": 63, "long": 63, "int32": 31, "int": 31, "int16": 15, "short": 15,
               "int8": 7}
_FLOAT32_DTYPES = {"float32", "float", "complex64", "cfloat"}
_FLOAT32_MAX = 3.4028234663852886e38
_SCALAR_KEYWORDS = {"device", "dtype", "requires_grad"}


class TensorCreationOnDevice(Rule):
    """
    ## What it finds
    `torch.tensor(data, device=cuda)` and `torch.as_tensor(data, device=cuda)` where `data` is
    host data (a Python number, list, tuple or numpy array) and the device is provably CUDA.
    Where the code repeats, `device=x.device` of a tensor `x` whose device syncfix cannot name is
    reported too (likely a GPU's), and so is a device that is CUDA or the CPU
    (`"cuda" if torch.cuda.is_available() else "cpu"`). The legacy CUDA constructors of data,
    `torch.cuda.LongTensor(sizes)` (not of sizes: `torch.cuda.FloatTensor(n, k)`, or one size
    such as `x.size()`, `x.shape[0]`, `t.item()`, `len(x)`, a name bound to one), copy it the
    same way: reported, with no fix (their conversions are their own); so do they through a name
    bound to one, or to `torch.cuda.FloatTensor if cuda else torch.FloatTensor` (`Tensor(np_array)`
    in a GAN's step: a copy where the condition picks CUDA). Where the code repeats,
    `x.new_tensor(data)` of a tensor not provably on the CPU: it builds on the host and copies to
    `x`'s device just the same.

    ## Why it costs
    PyTorch builds the tensor on the CPU and then moves it with a *blocking* copy
    (`internal_new_from_data`, pytorch#120996, still open in 2.11): the CPU waits for every kernel
    already queued on the stream. Measured: 1 sync per call (docs/semantics.md#copies-between-host-and-device).
    `torch.zeros/ones(..., device=cuda)` and `torch.full(..., number, device=cuda)` fill on the
    device and never sync; they are not flagged. (A *tensor* fill value, `torch.full(shape,
    t, ...)`, is read on the host first: a sync when `t` is on a GPU, which this rule does not
    report.) `torch.as_tensor(cuda_tensor, device="cuda")` copies nothing and is not flagged.

    ## Example
    ```python
    for step in range(n):
        scale = torch.tensor(0.5, device="cuda")
        ids = torch.tensor([1, 5, 7], device="cuda")
    ```

    ## Use instead
    ```python
    for step in range(n):
        scale = torch.full((), 0.5, device="cuda")
        ids = torch.tensor([1, 5, 7], pin_memory=True).to("cuda", non_blocking=True)
    ```

    ## Fix safety
    `x.new_tensor(v)` of a number (or `[v]`) becomes `torch.full((), v, dtype=x.dtype,
    device=x.device)` (`(1,)` for `[v]`; the call's own `dtype`/`device`/`requires_grad` kept):
    filled on the device, no copy. **Safe** for an int of a count (`len(items)`) with an int64
    `dtype` on a provable tensor; otherwise **unsafe**: a size (`x.size(0)`) is an int only in the
    likely view, and `torch.full` converts a value to the dtype directly where `torch.tensor`
    goes through a double (an int beyond 2**24 may round differently to a 32-bit float).
    Other data gets no fix (`torch.tensor(data, dtype=x.dtype).to(x.device, non_blocking=True)`
    is the non-blocking form).

    No fix, safe or unsafe, is given inside a `try` whose handler may catch a `RuntimeError` or
    an `AssertionError` (or around a call of the function, or in `contextlib.suppress`/
    `pytest.raises`), as for SFX101: the blocking copy is where an error from queued GPU work
    surfaces inside the `try`; without the wait it would be raised later, outside it. And on a
    build without CUDA, `torch.tensor(x, device="cuda")` raises an `AssertionError` ("Torch not
    compiled with CUDA enabled") where the pinned form below raises a `RuntimeError`: a handler
    of the first would no longer see the error. A finding without a fix says which fact is
    missing (host data, a keyword the fix cannot carry, streams, a default device).
    - **A Python scalar** (`bool`, `int`, `float` *provably* of that built-in type: a literal,
      `float(x)`, `len(x)`, arithmetic of such...) becomes `torch.full((), v, ...)`, keeping
      `dtype` and `requires_grad`, and a one-element list of one (`[0.0]`) becomes
      `torch.full((1,), v, ...)`, under the same conditions. `full` infers bool/int64/default-float exactly like `tensor`
      (from PyTorch 1.7; the fix writes `dtype=torch.int64` or `dtype=torch.bool` for an int or a
      bool, so it is the same on older versions too, where `full` made a float or raised)
      (checked for bool, int, float, nan, inf against every dtype on the CPU). The fix is safe for
      bools, int literals within range (with a floating `dtype`, up to 2**24 in size: `tensor`
      rounds a larger int to a double first and `full` rounds it once, so
      `1152921573326323713` differs in float32), and float literals within float32's range (or with a
      float16, bfloat16 or float64 `dtype`). It is **unsafe** for a float of unknown size going
      to float32/complex64 (past float32's range `tensor` rounds to `inf`, `full` raises
      `RuntimeError`), for an int of unknown value
      (for |v| >= 2**63 `tensor` raises `ValueError`, `full` `RuntimeError`, and with a float
      dtype `tensor(-2**63 - 1)` works where `full` raises) and for a float or out-of-range int
      with an integer `dtype` (both raise, with different messages). An int that lies in int64
      in any run that ends is **safe** with no `dtype` or an int64 one: `len(x)` (at most
      `sys.maxsize`), a tensor's `x.numel()` or `x.dim()` (a Python int torch keeps in int64:
      DETR's `torch.tensor([t.numel()], device="cuda")`), and the counter of `for i in range(...)` counting up by one from no start
      or a literal one within 2**62 (to pass 2**63 it would first run 2**62 iterations). A numpy scalar or a name of
      unknown type is not provably a Python scalar: it gets the pinned form below.
    - **Host data** (provably: a list or tuple of numbers, an array or numpy scalar from a numpy
      constructor such as `np.asarray`/`np.arange`/`np.float32`, and values derived from them;
      `np.asarray(x)` only of host data or of a list or tuple: of a tensor it is that tensor's
      memory, perhaps a pinned buffer refilled later, whose `.pin_memory()` is itself; see
      `ModuleAnalysis.is_host_data`) becomes
      `torch.tensor(data, pin_memory=True, dtype=...).to(device, non_blocking=True)` (for
      `as_tensor`: `torch.as_tensor(data, dtype=...).pin_memory().to(...)`, keeping its warnings).
      Safe: the pinned temporary is referenced by nothing else, so nothing can write it before the
      copy runs, and the host allocator keeps its block until the copy is done (docs/semantics.md#copies-between-host-and-device). Not
      applied with `requires_grad` (the result would no longer be a leaf).
    - **A device that is CUDA or the CPU** (not provably CUDA, so no pinned memory, which needs
      CUDA): host data becomes `torch.tensor(data, dtype=...).to(device, non_blocking=True)`,
      **safe**: on the CPU `.to` returns the tensor itself (as `device="cpu"` would build it); to
      CUDA the fresh temporary is pageable, which the driver stages when the call returns
      (nothing waits for queued GPU work for small data; large pageable copies still wait, but
      stay exact), and nothing else holds it.
    - **A device syncfix cannot name**, in code that repeats (a tensor's, `device=boxes.device`
      with `boxes` of unknown device; or a name or attribute that holds one, `device=device`,
      `self.device`, `args.device`): the same form is **unsafe**: it rests on the likely fact
      that the device is CUDA or the CPU (other accelerators have their own copy rules; with
      `devices = ["cuda", "cpu"]` declared in `[tool.syncfix.torch]`, a device object of unknown
      type is one of the two, and the fix is safe). Where a module of the project (not a test)
      names another accelerator (`"mps"`, a device option's help `"cpu|cuda|mps"`,
      `torch.backends.mps`, `import torch_xla`), the fact
      is not assumed and the copy form is not offered. A device
      held by a name gets the fix only in a loop or a step-like function; a helper that is hot
      only because another file calls a function of its name from a loop keeps the finding
      without it (such a call may be one-time code). In this tier the data may also be a list
      literal of names (`[[x0, y0, x0, y0]]`), a parameter annotated as a list or tuple of
      numbers (`crop_box: List[int]`), or a list of sizes (`[seq.shape[0] for seq in seqs]`,
      `[img.size(-1) for img in images]`, directly or through a name bound to it just before):
      sizes are ints for tensors and numpy arrays. A Python number there (`len(records)`,
      `float(scale)`) is instead filled on that device, `torch.full((), v, device=d)`: no copy at
      all, **unsafe** for the same reason (and for the scalar reasons above). So is a number that
      only an `isinstance(v, (int, float))` test proves, when `dtype=` is given (numpy scalars
      and bools pass such a test; without `dtype`, `tensor` would infer float64 for numpy's
      float64 where `full` gives the default float), even where the project names another
      accelerator: a fill copies nothing. And so is a size (`n = x.shape[-2]`, also through a
      tuple, `n, device = x.shape[-2], x.device`), an int by the likely fact that sizes are.
    - `tensor(...)` imported from torch (`from torch import tensor`) gets the same fixes where
      the module also imports `torch` by a name the fix can call (`torch.full`).
    - Data that may already be a tensor, a device expression that is not a plain name, string or
      attribute (it would be evaluated later), a file that uses CUDA streams (the copy would be
      ordered on the current stream only) or calls `torch.set_default_device`: finding, no fix.
    """

    CODE = "SFX102"
    NAME = "tensor-creation-on-device"
    MESSAGE = "Tensor built on the host and copied to the GPU with a blocking copy"
    FIX = "sometimes"
    SAFETY = ("safe", "unsafe")
    TRIGGERS = ("tensor(", "Tensor(")
    VALID = [
        # already built on the device
        "import torch\nx = torch.full((), 1.0, device='cuda')\ny = torch.zeros(3, device='cuda')\n",
        # a CPU tensor: no copy at all
        "import torch\nx = torch.tensor([1, 2])\n",
        # as_tensor of a CUDA tensor copies nothing
        "import torch\ny = torch.ones(3, device='cuda')\nx = torch.as_tensor(y, device='cuda')\n",
        # the device may be "mps"
        "import torch\nd = 'cuda' if torch.cuda.is_available() else 'mps'\nx = torch.tensor(1, device=d)\n",
    ]
    INVALID = [
        Invalid(
            "import torch\nx = torch.tensor(0.5, device='cuda')\n",
            "import torch\nx = torch.full((), 0.5, device='cuda')\n",
        ),
        Invalid(
            "import torch\nx = torch.tensor(3, device='cuda:0', dtype=torch.float16, requires_grad=True)\n",
            "import torch\nx = torch.full((), 3, device='cuda:0', dtype=torch.float16, requires_grad=True)\n",
        ),
        Invalid(
            "import torch\nx = torch.tensor([1, 2, 3], device='cuda', dtype=torch.int32)\n",
            "import torch\nx = torch.tensor([1, 2, 3], pin_memory=True, dtype=torch.int32)"
            ".to('cuda', non_blocking=True)\n",
        ),
        Invalid(
            "import numpy as np\nimport torch\na = np.ones(3)\nx = torch.as_tensor(a, device='cuda')\n",
            "import numpy as np\nimport torch\na = np.ones(3)\n"
            "x = torch.as_tensor(a).pin_memory().to('cuda', non_blocking=True)\n",
        ),
        # an int of unknown value: only an unsafe fix
        Invalid(
            "import torch\ndef f(n):\n    return torch.tensor(int(n) * 2, device='cuda')\n",
            "import torch\ndef f(n):\n    return torch.full((), int(n) * 2, dtype=torch.int64, device='cuda')\n",
            unsafe=True,
        ),
        # a length is within int64: safe
        Invalid(
            "import torch\ndef f(xs: list):\n    return torch.tensor(len(xs), device='cuda')\n",
            "import torch\ndef f(xs: list):\n    return torch.full((), len(xs), dtype=torch.int64, device='cuda')\n",
        ),
        # unknown data (maybe a tensor): no fix
        Invalid("import torch\ndef f(v):\n    return torch.tensor(v, device='cuda')\n", None),
    ]

    def visit_Call(self, node: cst.Call) -> None:
        a = self.analysis
        name = a.callee(node)
        if name is not None and name.startswith("torch.cuda.") and name[len("torch.cuda."):] in LEGACY_CONSTRUCTORS:
            self._legacy_cuda(node, name)
            return
        alias = node.func if isinstance(node.func, cst.Name) else None
        typed = a.legacy_type(alias) if alias is not None else None
        if alias is not None and typed is not None and typed[1] is not Device.CPU:
            # PyTorch-GAN's ``Tensor = torch.cuda.FloatTensor if cuda else torch.FloatTensor``
            where = "" if typed[1] is Device.CUDA else ", where its condition picks the CUDA type"
            own = "CUDA's" if alias.value == typed[0] else f"CUDA's `{typed[0]}`"
            self._legacy_cuda(node, typed[0], f"`{alias.value}` ({own}{where})")
            return
        if name not in ("torch.tensor", "torch.as_tensor"):
            self._new_tensor(node)
            return
        dev = keyword(node, "device")
        args = positional(node)
        if dev is None or len(args) != 1 or any(x.star for x in node.args):
            return
        if _empty_display(args[0].value):
            return  # ``torch.tensor([], device=d)``: no element to copy, nothing waits
        device = a.device_of(dev.value)
        if device is Device.UNKNOWN and _unplaced_device(a, dev.value):
            held = a.value(args[0].value)
            if not held.is_tensor and held.kind is not Kind.MODULE:
                data = args[0].value
                fix = None
                elsewhere = a.other_accelerator and not a.cuda_or_cpu_only  # not only CUDA or the CPU
                if _tensor_device(a, dev.value) or a.repeats_here(node):  # not a helper hot only by name
                    # a Python number is filled there, with no copy; other data copied pageable
                    fix = self._scalar_fill(node, data, dev.value)
                    if fix is None and not elsewhere:
                        fix = self._pageable_fix(node, data, dev.value, safe=False)
                known = a.is_host_data(data) or _likely_numbers(a, data) or int_like(a, data, follow=True)
                unplaced = _UNPLACED_DEVICE
                if elsewhere:
                    unplaced = f" (if the device is a GPU's, which syncfix cannot tell; {other_accelerator(a.other_accelerator, built=True)}: no fix)"
                why = _IF_A_GPU + _CAUGHT.format(handler_site(a, node)) if a.caught_by_handler(node) else unplaced if known else _UNKNOWN_DATA
                self.report(node, self.MESSAGE if fix else self.MESSAGE + why, fix=fix)
            return
        if device not in (Device.CUDA, Device.CUDA_OR_CPU):
            return
        data = args[0].value
        value = a.value(data)
        if value.is_tensor:
            if value.device is Device.CPU:
                self.report(node, self.MESSAGE + " (a CPU tensor: see SFX101 for a non-blocking copy)")
            return  # a CUDA tensor copies on the device; an unknown one we cannot judge
        if device is Device.CUDA_OR_CPU and a.python_number_type(data) is None:
            # the pinned form needs CUDA: a pageable temporary, exact on both
            fix = self._pageable_fix(node, data, dev.value, safe=True) or self._pageable_fix(
                node, data, dev.value, safe=False, why=_LIKELY_DATA_UNSAFE
            )
            why = _CAUGHT.format(handler_site(a, node)) if a.caught_by_handler(node) else _UNKNOWN_DATA_HERE
            self.report(node, self.MESSAGE if fix else self.MESSAGE + why, fix=fix)
            return
        fix = self._fix(node, data, dev.value)
        self.report(node, self.MESSAGE if fix else self.MESSAGE + self._no_fix(node, data, dev.value), fix=fix)

    def _legacy_cuda(self, node: cst.Call, name: str, said: str | None = None) -> None:
        """``torch.cuda.LongTensor(sizes)`` of a list of host numbers (gpt-neox's per-batch sizes):
        built from the list on the host and copied to the current CUDA device, blocking. No fix:
        the legacy constructor's conversions are its own (``torch.tensor`` is not proven alike)."""
        a = self.analysis
        args = positional(node)
        if len(node.args) != 1 or len(args) != 1:
            return  # sizes (``torch.cuda.FloatTensor(n, k)``) or keywords: nothing copied
        data = args[0].value
        if a.value(data).is_tensor or a.python_number_type(data) is not None or _a_torch_size(data):
            # a CUDA tensor of its type is returned as it is; one number is a size, and so is a
            # ``torch.Size`` (yolov4-pytorch's ``FloatTensor(prediction[..., :4].shape)``)
            return
        short = name.rpartition(".")[2]
        known = a.is_host_data(data) or _likely_numbers(a, data)
        if not known and (_size_by_default(a, node, data) or _size_argument(a, data)):
            return  # OpenNMT's ``torch.cuda.ByteTensor(max_size)``, ``max_size=4096``: a size
        self.report(
            node,
            f"{self.MESSAGE} ({said or f'`{short}`'} of {'host data' if known else 'a list or an array (not a CUDA tensor)'} "
            "copies it from pageable host memory; no fix: "
            f"`torch.tensor(data, dtype=..., pin_memory=True).to(\"cuda\", non_blocking=True)` builds "
            "it without the wait, or build it once where the values repeat)",
        )

    def _no_fix(self, node: cst.Call, data: cst.BaseExpression, dev: cst.BaseExpression) -> str:
        """Why :meth:`_fix` gave none, in the words of what the user can change."""
        a = self.analysis
        kwargs = {arg.keyword.value for arg in node.args if arg.keyword is not None}
        if a.caught_by_handler(node):
            return _CAUGHT.format(handler_site(a, node))
        if a.uses_streams:
            return "; no fix: the module uses CUDA streams, and the copy would be ordered on the current stream only"
        if a.sets_default_device:
            return "; no fix: the module sets a default device, which would place the host-side tensor too"
        if not self._rewritable(node):
            return "; no fix: call it through the module name (`torch.tensor(...)`) for a fix"
        allowed = _SCALAR_KEYWORDS if a.python_number_type(data) is not None else {"device", "dtype"}
        if not kwargs <= allowed:
            extra = ", ".join(f"`{k}`" for k in sorted(kwargs - allowed))
            return f"; no fix: {extra} would have to move to the host-side tensor, which the fix does not do"
        if not a.is_host_data(data):
            return _UNKNOWN_DATA_HERE
        if not _is_simple(dev):
            return "; no fix: the device expression would be evaluated after the data, and could change in between"
        return ""

    def _scalar_fill(self, node: cst.Call, data: cst.BaseExpression, dev: cst.BaseExpression) -> Fix | None:
        """``torch.full((), v, ...)`` for a Python number (``torch.full((1,), v, ...)`` for
        ``[v]``) on a device syncfix cannot name:
        unsafe, since other accelerators than CUDA and the CPU are not proven (one may refuse a
        dtype with another error); exact where they fill as ``torch.tensor`` builds."""
        element = _one_element(data)
        if self.analysis.python_number_type(data if element is None else element) is None:
            if element is not None:
                return self._size_fill(node, element, one=True)
            return self._narrowed_fill(node, data) or self._size_fill(node, data)
        fix = self._fix(node, data, dev)
        if fix is None:
            return None
        reason = fix.description.partition(" (unsafe")[0]
        declare = name_the_device(self.analysis, dev)
        if fix.applicability is Applicability.SAFE:  # the value is exact: only the device is not
            return self.unsafe_fix(fix.changes, reason + _UNNAMED_DEVICE_EXACT_FILL.format(declare))
        return self.unsafe_fix(fix.changes, reason + _UNNAMED_DEVICE_FILL.format(declare))

    def _narrowed_fill(self, node: cst.Call, data: cst.BaseExpression) -> Fix | None:
        """``torch.full((), v, dtype=..., ...)`` for a number only an ``isinstance(v, (int,
        float))`` test proves (peft's embed scale): unsafe. Subclasses pass such a test (numpy's
        float64, bool), whose inferred dtypes differ, so only with ``dtype=`` given."""
        a = self.analysis
        dtype_arg = keyword(node, "dtype")
        kwargs = {arg.keyword.value for arg in node.args if arg.keyword is not None}
        if (
            a.value(data).kind is not Kind.NUMBER
            or dtype_arg is None
            or (isinstance(dtype_arg.value, cst.Name) and dtype_arg.value.value == "None")
            or not kwargs <= _SCALAR_KEYWORDS
            or not self._rewritable(node)
            or a.caught_by_handler(node)
        ):
            return None
        return self.unsafe_fix({node: _full(a, node)}, _FILL + _NARROWED_FILL)

    def _new_tensor(self, node: cst.Call) -> None:
        """``x.new_tensor(data)``: a number filled on ``x``'s device (codemods/_new_tensor.py)."""
        a = self.analysis
        x = new_tensor.receiver_of(a, node)
        if x is None:
            return
        fix = new_tensor.fill_fix(self, a, node, x)
        where = "" if a.value(x).device is Device.CUDA else unplaced_message(a, node)
        self.report(node, new_tensor.MESSAGE + where + ("" if fix else new_tensor.NO_FIX), fix=fix)

    def _size_fill(self, node: cst.Call, data: cst.BaseExpression, *, one: bool = False) -> Fix | None:
        """``torch.full((), n, ...)`` for a size (``n, d = x.shape[-2], x.device``, the
        vector-quantize codebook's count; ``torch.full((1,), n, ...)`` for ``[t.numel()]``):
        unsafe, an int by the likely fact that sizes are."""
        a = self.analysis
        kwargs = {arg.keyword.value for arg in node.args if arg.keyword is not None}
        if (
            not int_like(a, data, follow=True)
            or not kwargs <= _SCALAR_KEYWORDS
            or not self._rewritable(node)
            or a.caught_by_handler(node)
        ):
            return None
        return self.unsafe_fix({node: _full(a, node, one=one)}, _FILL + _SIZE_FILL.format(code(a, data)))

    def _rewritable(self, node: cst.Call) -> bool:
        """``torch.tensor``/``torch.as_tensor`` spelled through the module name, or imported
        (``from torch import tensor``) where ``torch`` is also a name the fix can call, in a file
        with no streams (a copy would be ordered on the current one only) and no default device."""
        a = self.analysis
        func = node.func
        return (
            not a.uses_streams
            and not a.sets_default_device
            and (
                isinstance(func, cst.Attribute) and a.qualname(func.value) == "torch"
                or isinstance(func, cst.Name) and a.torch_alias_at(node) is not None
            )
        )

    def _pageable_fix(
        self, node: cst.Call, data: cst.BaseExpression, dev: cst.BaseExpression, *, safe: bool, why: str = ""
    ) -> Fix | None:
        """``torch.tensor(data, device=d)`` -> ``torch.tensor(data).to(d, non_blocking=True)`` for
        host data and a device that is CUDA or the CPU (``safe``), or a tensor's device syncfix
        cannot name (unsafe): on the CPU ``.to`` returns the tensor itself; to CUDA the fresh
        pageable temporary is staged when the call returns, and nothing else holds it."""
        a = self.analysis
        kwargs = {arg.keyword.value for arg in node.args if arg.keyword is not None}
        if (
            not self._rewritable(node)
            or a.caught_by_handler(node)
            or not kwargs <= {"device", "dtype"}
            or not _is_simple(dev)
            or not (a.is_host_data(data) or (not safe and _likely_numbers(a, data)))
        ):
            return None
        device_arg = keyword(node, "device")
        assert device_arg is not None
        built = node.with_changes(args=_without(node.args, device_arg))
        new = cst.Call(
            cst.Attribute(built, cst.Name("to")),
            [cst.Arg(dev, comma=comma()), kwarg("non_blocking", cst.Name("True"))],
        )
        if safe:
            return self.safe_fix({node: new}, _PAGEABLE_FIX)
        return self.unsafe_fix({node: new}, _PAGEABLE_FIX + (why or _PAGEABLE_UNSAFE))

    def _fix(self, node: cst.Call, data: cst.BaseExpression, dev: cst.BaseExpression) -> Fix | None:
        a = self.analysis
        if not self._rewritable(node) or a.caught_by_handler(node):
            return None  # caught: pinning raises another error without CUDA, a late copy later
        kwargs = {arg.keyword.value for arg in node.args if arg.keyword is not None}
        scalar = a.python_number_type(data)
        element = _one_element(data)  # ``[0.0]``: filled as ``torch.full((1,), 0.0)``
        if scalar is None and element is not None:
            scalar = a.python_number_type(element)
        if scalar is not None:
            if not kwargs <= _SCALAR_KEYWORDS:
                return None
            value = data if element is None else element
            new = _full(a, node, one=element is not None, scalar=scalar)
            if self._scalar_exact(node, value, scalar):
                return self.safe_fix({node: new}, _FILL if element is None else _FILL_ONE)
            return self.unsafe_fix({node: new}, (_FILL if element is None else _FILL_ONE) + _FILL_UNSAFE)
        if not a.is_host_data(data) or not kwargs <= {"device", "dtype"} or not _is_simple(dev):
            return None
        to = cst.Attribute(cst.Name("_"), cst.Name("to"))
        device_arg = keyword(node, "device")
        assert device_arg is not None
        if (a.callee(node) or "").endswith(".tensor"):
            # pin_memory=True takes device=...'s place (and its comma, so layouts survive)
            pin = device_arg.with_changes(keyword=cst.Name("pin_memory"), value=cst.Name("True"))
            built = node.with_changes(args=[pin if a is device_arg else a for a in node.args])
        else:  # as_tensor has no pin_memory=; pin a copy (keeps as_tensor's own warnings)
            built = cst.Call(
                cst.Attribute(node.with_changes(args=_without(node.args, device_arg)), cst.Name("pin_memory"))
            )
        new = cst.Call(
            to.with_changes(value=built),
            [cst.Arg(dev, comma=comma()), kwarg("non_blocking", cst.Name("True"))],
        )
        return self.safe_fix(
            {node: new}, "Build in pinned memory and copy with non_blocking=True (no wait)"
        )

    def _scalar_exact(self, node: cst.Call, data: cst.BaseExpression, scalar: str) -> bool:
        """Do ``tensor`` and ``full`` agree on this scalar's value *and* on every error?"""
        a = self.analysis
        literal = a.literal_number(data)
        dtype_arg = keyword(node, "dtype")
        if scalar == "int" and literal is None and a.int64_by_construction(data):
            # an int within int64 (a length, a range counter): int64 in both, or the dtype's
            if dtype_arg is None or (isinstance(dtype_arg.value, cst.Name) and dtype_arg.value.value == "None"):
                return True
            return (a.qualname(dtype_arg.value) or "") in ("torch.int64", "torch.long")
        if scalar == "int" and not (isinstance(literal, int) and -(2**63) <= literal < 2**63):
            return False
        if scalar == "bool":
            return True
        if dtype_arg is None or (isinstance(dtype_arg.value, cst.Name) and dtype_arg.value.value == "None"):
            # an int becomes int64 (checked above); a float the default dtype
            return scalar == "int" or (a.default_float == "torch.float32" and _fits_float32(literal))
        dtype = a.qualname(dtype_arg.value) or ""
        short = dtype.removeprefix("torch.")
        if not dtype.startswith("torch.") or short == "bool":
            return short == "bool"
        if scalar == "int" and short in _FLOAT_DTYPES | _FLOAT32_DTYPES:
            # ``tensor`` rounds an int to a double first, ``full`` rounds it once: they agree
            # where float32 holds the int exactly (2**24 + 1 onwards may round twice)
            assert isinstance(literal, int)
            return abs(literal) <= 2**24
        if short in _FLOAT32_DTYPES:
            # past float32's range torch.tensor rounds to inf but torch.full raises
            return _fits_float32(literal)
        if short in _FLOAT_DTYPES:
            return True  # float16/bfloat16 both round to inf; float64 holds every Python float
        bits = _INT_RANGES.get(short)
        if scalar == "int" and bits is not None:
            assert isinstance(literal, int)
            return -(2**bits) <= literal < 2**bits
        if scalar == "int" and short == "uint8":
            assert isinstance(literal, int)
            return 0 <= literal < 256
        return False


def _full(a: ModuleAnalysis, node: cst.Call, *, one: bool = False, scalar: str | None = None) -> cst.Call:
    """``torch.tensor(v, ...)`` -> ``torch.full((), v, ...)``, every argument kept; with
    ``one``, ``torch.tensor([v], ...)`` -> ``torch.full((1,), v, ...)``. A bare ``tensor(v)``
    becomes ``torch.full`` through the module's name for ``torch``. An int or bool ``scalar``
    without ``dtype=`` gets it written (``dtype=torch.int64``/``torch.bool``, what ``tensor``
    infers): ``full`` infers it too only from PyTorch 1.7 (1.5 made a float, 1.6 raised)."""
    func = node.func
    if isinstance(func, cst.Name):
        func = cst.Attribute(cst.Name(a.torch_alias_at(node) or "torch"), cst.Name("tensor"))
    assert isinstance(func, cst.Attribute)
    args = list(node.args)
    shape = cst.Tuple([])
    if one:
        element = _one_element(args[0].value)
        assert element is not None
        args[0] = args[0].with_changes(value=element)
        shape = cst.Tuple([cst.Element(cst.Integer("1"), comma=cst.Comma())])
    if scalar in _SCALAR_DTYPES and keyword(node, "dtype") is None:
        dtype = kwarg("dtype", cst.Attribute(func.value, cst.Name(_SCALAR_DTYPES[scalar])))
        rest = args[1:]
        sep = args[0].comma if isinstance(args[0].comma, cst.Comma) else comma()
        args = [args[0].with_changes(comma=sep), dtype.with_changes(comma=sep) if rest else dtype, *rest]
    return node.with_changes(func=func.with_changes(attr=cst.Name("full")), args=[cst.Arg(shape, comma=comma()), *args])


_SCALAR_DTYPES = {"int": "int64", "bool": "bool"}


def _one_element(data: cst.BaseExpression) -> cst.BaseExpression | None:
    """``v`` of a one-element list display ``[v]`` (not starred), else None."""
    if isinstance(data, cst.List) and len(data.elements) == 1 and isinstance(data.elements[0], cst.Element):
        return data.elements[0].value
    return None


def _fits_float32(literal: object) -> bool:
    """A number literal within float32's range (an unknown value may not be)."""
    if isinstance(literal, bool) or not isinstance(literal, (int, float)):
        return False
    try:
        return abs(float(literal)) <= _FLOAT32_MAX
    except OverflowError:
        return False


def _is_simple(expr: cst.BaseExpression) -> bool:
    """Evaluating it later (after building the tensor) cannot change anything."""
    while isinstance(expr, cst.Attribute):
        expr = expr.value
    return isinstance(expr, (cst.Name, cst.SimpleString, cst.Integer)) or (
        isinstance(expr, cst.FormattedString)
        and all(
            isinstance(p, cst.FormattedStringText)
            or (isinstance(p, cst.FormattedStringExpression) and isinstance(p.expression, cst.Name))
            for p in expr.parts
        )
    )


def _without(args: Sequence[cst.Arg], dropped: cst.Arg) -> list[cst.Arg]:
    """``args`` less ``dropped``; when it was last, the new last argument takes its comma."""
    kept = [a for a in args if a is not dropped]
    if args and args[-1] is dropped and kept:
        kept[-1] = kept[-1].with_changes(comma=dropped.comma)
    return kept


_PAGEABLE_FIX = (
    "Build on the host and copy with non_blocking=True: on the CPU .to returns the tensor itself; "
    "a fresh pageable temporary is staged when the call returns"
)
_PAGEABLE_UNSAFE = (
    " (unsafe: the device is a tensor's, which syncfix cannot name; exact when it is CUDA or the "
    "CPU, and other accelerators have their own copy rules; declare "
    '`devices = ["cuda", "cpu"]` in [tool.syncfix.torch] if the project runs on nothing else)'
)
_LIKELY_DATA_UNSAFE = (
    " (unsafe: the data is host data by its annotation or its look only, a list of names or a "
    "parameter annotated as a list of numbers)"
)
_UNKNOWN_DATA_HERE = (
    "; no fix: the data is not provably host data (a list of numbers, a numpy array); if it is, "
    "build it without `device=` and copy it with `.to(device, non_blocking=True)`"
)
_CAUGHT = (
    "; no fix: inside a try whose handler catches its error ({}): built in pinned memory on a "
    "machine without CUDA it would raise another error, and copied without waiting a CUDA error "
    "would surface later"
)
_UNPLACED_DEVICE = " (if the device is a GPU's: syncfix cannot tell which device this is; no fix)"
_IF_A_GPU = " (if the device is a GPU's, which syncfix cannot tell)"
_FILL = "Fill on the device with torch.full((), v): the same value and dtype"
_FILL_ONE = "Fill on the device with torch.full((1,), v): the same value, shape and dtype"
_RANGES = (
    "an int outside int64 raises another error, an int beyond 2**24 may round differently to a"
    " 32-bit float dtype (torch.tensor rounds it to a double first), and a float beyond float32's"
    " range raises where torch.tensor gives inf"
)
_FILL_UNSAFE = f" (unsafe: {_RANGES})"
_UNNAMED_DEVICE_FILL = f" (unsafe: filling is exact on CUDA and the CPU, and {_RANGES}; {{}})"
_UNNAMED_DEVICE_EXACT_FILL = " (unsafe: filling is exact on CUDA and the CPU; {})"
_SIZE_FILL = (
    " (unsafe: `{}` is taken to be an int, as a tensor's or an array's sizes are; the device is one"
    " syncfix cannot name; filling is exact on CUDA and the CPU, and an int beyond 2**24 may round"
    " differently to a 32-bit float dtype (torch.tensor rounds it to a double first))"
)
_NARROWED_FILL = (
    " (unsafe: the number is an int or a float by an isinstance test only, which numpy scalars"
    " and bools pass too (the given dtype makes both build the same dtype); the device is one"
    f" syncfix cannot name; filling is exact on CUDA and the CPU, and {_RANGES})"
)
_UNKNOWN_DATA = _IF_A_GPU[:-1] + _UNKNOWN_DATA_HERE + ")"


_SEQUENCES = {
    "builtins.list", "builtins.tuple", "typing.List", "typing.Tuple", "typing.Sequence",
    "collections.abc.Sequence",
}
_NUMBERS = {"builtins.int", "builtins.float", "builtins.bool"}


def _likely_numbers(a, data: cst.BaseExpression) -> bool:
    """Host numbers by a likely fact only: a list or tuple literal whose items are names or
    arithmetic that syncfix cannot name and that are not tensors (``[[x0, y0, x0, y0]]``), a
    parameter annotated as a list or tuple of numbers (``crop_box: List[int]``), or a list of
    sizes (``[seq.shape[0] for seq in seqs]``, ``[t.numel()]``), itself or bound to a name just
    before."""
    if isinstance(data, (cst.List, cst.Tuple)):
        return bool(data.elements) and all(  # sizes too, in a display: ``[t.numel()]``
            not isinstance(el, cst.StarredElement) and (_likely_numbers(a, el.value) or int_like(a, el.value))
            for el in data.elements
        )
    if isinstance(data, (cst.Integer, cst.Float)):
        return True
    if isinstance(data, cst.ListComp):  # ``[seq.shape[0] for seq in sequences]``
        return int_like(a, data.elt)
    if isinstance(data, (cst.Name, cst.Attribute, cst.BinaryOperation, cst.UnaryOperation)):
        if a.likely.value(data).is_tensor:
            return False
        if isinstance(data, cst.Name) and not isinstance(a.parent(data), (cst.List, cst.Tuple, cst.Element)):
            bound = a.straight_line_binding(data, reevaluable=False)
            return _annotated_numbers(a, data) or (
                isinstance(bound, (cst.List, cst.ListComp)) and _likely_numbers(a, bound)
            )
        return True
    return False


def _annotated_numbers(a, name: cst.Name) -> bool:
    """Is every binding of ``name`` a parameter annotated as a list or tuple of numbers?"""
    bindings = a.bindings(name)
    params = [node for b in bindings if isinstance(node := getattr(b, "node", None), cst.Param)]
    return bool(params) and len(params) == len(bindings) and all(
        p.annotation is not None and _number_sequence(a, p.annotation.annotation) for p in params
    )


def _number_sequence(a, hint: cst.BaseExpression) -> bool:
    """``List[int]``, ``list[float]``, ``Tuple[int, ...]``, ``Sequence[int]``..."""
    if not isinstance(hint, cst.Subscript) or a.qualname(hint.value) not in _SEQUENCES:
        return False
    for element in hint.slice:
        index = element.slice
        if not isinstance(index, cst.Index):
            return False
        if not (isinstance(index.value, cst.Ellipsis) or a.qualname(index.value) in _NUMBERS):
            return False
    return True


def _tensor_device(a, dev: cst.BaseExpression) -> bool:
    """``device=x.device`` of a tensor ``x`` of unknown device, in code that repeats."""
    return isinstance(dev, cst.Attribute) and dev.attr.value == "device" and unplaced_tensor(a, dev.value)


def _size_by_default(a, node: cst.Call, data: cst.BaseExpression) -> bool:
    """A parameter of the function around ``node`` whose default is an int (``max_size=4096``)."""
    fn = a.enclosing_function(node)
    if not isinstance(data, cst.Name) or fn is None:
        return False
    params = fn.params
    return any(
        p.name.value == data.value and isinstance(p.default, cst.Integer)
        for p in (*params.posonly_params, *params.params, *params.kwonly_params)
    )


# Methods whose result is a Python number, never a sequence: as the one argument of a legacy
# constructor, a size (``torch.cuda.IntTensor(npoint.sum().item())``).
_NUMBER_METHODS = frozenset({"item", "numel", "dim", "size", "__len__"})


def _size_argument(a, data: cst.BaseExpression, hops: int = 2) -> bool:
    """Is ``data`` a size, not data to copy (OpenPCDet's ``torch.cuda.FloatTensor(N)`` with
    ``N, _ = xyz.size()``, ``torch.cuda.FloatTensor(torch.Size((m, n)))``)? ``torch.Size(...)``,
    ``t.size()``, ``t.shape``, ``len(...)``, ``t.item()``, ``t.numel()``, ``t.size(k)``,
    ``t.shape[k]``, or a name bound once to one of them or to an item of a shape."""
    if _whole_shape(data):
        return True  # ``t.size()``, ``t.shape``: a torch.Size, the shape to allocate
    if isinstance(data, cst.Call):
        func = data.func
        return a.callee(data) in ("torch.Size", "builtins.len") or (
            isinstance(func, cst.Attribute) and func.attr.value in _NUMBER_METHODS
        )
    if isinstance(data, cst.Subscript):
        return _whole_shape(data.value)
    if not isinstance(data, cst.Name) or hops == 0:
        return False
    scope = a.scope(data)
    bound = list(scope.assignments[data.value]) if scope is not None and data.value in scope else []
    target = getattr(bound[0], "node", None) if len(bound) == 1 else None
    if not isinstance(target, cst.Name):
        return False
    assign = next((anc for anc in a.ancestors(target) if isinstance(anc, cst.Assign)), None)
    if assign is None or len(assign.targets) != 1:
        return False
    if assign.targets[0].target is target:
        return _size_argument(a, assign.value, hops - 1)
    # ``N, _ = xyz.size()``: an item of a shape
    return isinstance(assign.targets[0].target, cst.Tuple) and _whole_shape(assign.value)


def _whole_shape(expr: cst.BaseExpression) -> bool:
    """``t.shape`` or ``t.size()``: a ``torch.Size``, whose items are ints."""
    if isinstance(expr, cst.Attribute):
        return expr.attr.value == "shape"
    return (
        isinstance(expr, cst.Call) and not expr.args
        and isinstance(expr.func, cst.Attribute) and expr.func.attr.value == "size"
    )


def _unplaced_device(a, dev: cst.BaseExpression) -> bool:
    """A device syncfix cannot name, in code that runs every step (so likely a GPU's):
    ``device=x.device`` of a tensor ``x`` of unknown device, or a name or attribute that says it
    holds a device (``device``, ``self.device``, ``args.device``, ``self.predictor.device``)."""
    if _tensor_device(a, dev):
        return True
    if isinstance(dev, cst.Attribute) and dev.attr.value == "device":
        held = a.likely.value(dev.value)
        return not held.is_tensor and held.kind is not Kind.MODULE and a.is_hot(dev)
    last = dev.attr.value if isinstance(dev, cst.Attribute) else dev.value if isinstance(dev, cst.Name) else ""
    return "device" in last.lower() and a.is_hot(dev)


def _empty_display(expr: cst.BaseExpression) -> bool:
    """``[]`` or ``()``: a tensor of no elements, whose copy moves nothing."""
    return isinstance(expr, (cst.List, cst.Tuple)) and not expr.elements


def _a_torch_size(expr: cst.BaseExpression) -> bool:
    """``t.shape``, ``t.size()``, or a slice of one (``t.shape[:2]``): a ``torch.Size``, which a
    legacy constructor takes as the new tensor's sizes (no data copied)."""
    if isinstance(expr, cst.Subscript) and all(isinstance(el.slice, cst.Slice) for el in expr.slice):
        expr = expr.value
    if isinstance(expr, cst.Attribute):
        return expr.attr.value == "shape"
    return isinstance(expr, cst.Call) and isinstance(expr.func, cst.Attribute) and expr.func.attr.value == "size" and not expr.args
