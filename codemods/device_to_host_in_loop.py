"""SFX105: a blocking device-to-host read (``.cpu()``, ``.tolist()``, ``.to("cpu")``) in a loop."""

from __future__ import annotations

import libcst as cst

from syncfix.analysis import (
    LEGACY_CONSTRUCTORS,
    Device,
    HostRead,
    Kind,
    ModuleAnalysis,
    dotted_name,
    keyword,
    lightning_log,
    math_read,
    positional,
    target_names,
)
from syncfix.rules import Fix, Invalid, Rule

from ._collected_copies import collected, collected_for_joining, read_again_in
from ._collected_lists import uses_of
from ._iterations import runs_every_iteration
from ._owned_reads import ancestors_in, in_log, item_read_in_loop, owned_elsewhere, rows_copied
from ._scalar_read_fixes import elements_at_once, from_host_list, read_once
from ._stacked_reads import stacked_read
from ._support import (
    INDEXED_ELEMENTS,
    code,
    every_n,
    how_often,
    indexed_base,
    loader_item,
    measures_itself,
    unplaced_message,
    unplaced_tensor,
)
from ._totals import INTO_TENSOR_TOTAL, INTO_TENSOR_TOTAL_LIKELY, into_tensor_total

_SCALAR = "GPU value read on the host where code repeats: the CPU waits for all queued GPU work"
_STORED_HINT = (
    " (a GPU tensor stored into a CPU tensor is copied to the host); no fix: collect the tensors "
    "and copy them once after the loop (`torch.cat(parts).cpu()`), or store into a pinned buffer "
    "with `.copy_(t, non_blocking=True)` and synchronize once before reading it"
)
_TOTAL_HINT = (
    "; no fix: a running total kept in a container or attribute; keep it a device tensor "
    "(`counts[k] = counts[k] + t.sum()`) and read it only where it is shown"
)
_NAME_TOTAL_HINT = (
    "; no fix: the value goes into a running total (`{}`) of a form syncfix does not keep on the "
    "device (it keeps `total += t.item()` and `total += t.item() * n`); keep the read part a "
    "device tensor (`part = part + k * t.sum()`) and add its value where the total is used"
)
_TENSOR_TOTAL = "; the running total is a tensor already: add the value to it without reading it"
_COLLECT_HINT = (
    "; no fix: the value is only collected here; if the list is read after the loop, append the "
    "tensor (`t.detach()`) and read them all once there (`torch.stack(values).tolist()`)"
)
_SHOWN_HINT = (
    "; no fix: the value is only collected here, and `{0}` is read in the loop at line {1}; "
    "where that read runs every N steps, append the tensor (`t.detach()`) and convert the values "
    "there (`torch.stack(values[-n:]).tolist()`), one read for them all"
)
_READ_TWICE = (
    "; no fix: the loop reads `{0}` on the host at line {1} too, so collecting the tensor would "
    "save no sync; read it once into a number and use that for both"
)
_SCALAR_HINT = (
    "; no fix: Python uses the value here. Read it less often, compute it from what the host "
    "already has (sizes, lengths, positions it set), or keep it a tensor: if it is only logged "
    "later, read it at the log line"
)
_LIGHTNING_LOG = (
    "; no fix: Lightning's `self.log` takes the tensor (`{0}.detach()`) and reads it only when "
    "it writes a log line (each step where `prog_bar=True`); a float it turns back into a device "
    "tensor, a second copy (a tensor logs in its own dtype: not proven to round alike)"
)
_TIMED = (
    "; but `{0}` later in the loop needs its events complete, which this read waits for: call "
    "`{1}.synchronize()` before it (or time every N steps) if you move the read"
)
_MATH_HINT = (
    "; no fix: `{0}` reads the tensor as a Python float; the same math in torch ops{1} keeps "
    "the result on the device"
)
_WRITER_HINT = (
    "; no fix: `add_scalar` converts the tensor on the host (`.cpu().numpy()`); write it every "
    "N steps, or keep the tensors and write them after one read (`torch.stack(values).tolist()`)"
)
# ``math`` functions whose torch twin has another name (none for ``gamma``, ``cbrt``).
_TORCH_TWIN = {"fabs": "abs", "degrees": "rad2deg", "radians": "deg2rad", "gamma": "", "cbrt": ""}
# Calls that read a tensor given as a size or a bound as a Python int (``__index__``/``item``).
_SIZE_TAKERS = {
    "torch.arange", "torch.zeros", "torch.ones", "torch.empty", "torch.full", "torch.randperm",
    "torch.rand", "torch.randn", "torch.randint", "torch.eye", "builtins.range",
}
_SIZE_HINT = (
    "; no fix: `{}` reads its size or bound as a Python int; pass a number the host already has "
    "(a length it set, or the lengths' maximum before they were copied to the GPU)"
)
_SLICE_HINT = (
    "; no fix: a slice bound is read as a Python int (`__index__`); keep the bound a number the "
    "host already has (a length it set, or one `.tolist()` before the loop), or select on the "
    "device (a mask, `torch.where`, `index_select`)"
)
_HOST_COPY = (
    "; the value is already on the host: the fix takes it from the list the tensor was built from"
)
_READ_AGAIN = "; the same value is read again in the next statement: the fix reads it once"
_ELEMENTS = "; this line reads several elements of one tensor: the fix reads them with one transfer"


def _list_read_in(a, loop: cst.For | cst.While, node: cst.Call, stmt: cst.SimpleStatementLine) -> tuple[str, int] | None:
    """``(name, line)`` where the list the read is appended to (``train_loss.append(...)``) is
    also read in the loop (pytorch-vqvae's ``np.asarray(train_loss)[-100:]`` every 100 steps)."""
    call = next((c for c in a.ancestors(node) if isinstance(c, cst.Call) and isinstance(c.func, cst.Attribute) and c.func.attr.value == "append"), None)
    if call is None or not isinstance(call.func, cst.Attribute) or not isinstance(call.func.value, cst.Name):
        return None
    name = call.func.value.value
    for use in uses_of(loop.body, name):
        if use is not call.func.value and not any(anc is stmt for anc in a.ancestors(use)):
            return name, a.positions[use].start.line
    return None


def _appended(a, node: cst.Call, stmt: cst.SimpleStatementLine) -> bool:
    """Is the read an argument of a ``.append(...)`` in its statement (``out.append(t.item())``)?
    Not where it picks the list (``groups[label.item()].append(k)``: a key Python needs)."""
    child: cst.CSTNode = node
    for anc in a.ancestors(node):
        if anc is stmt:
            return False
        if isinstance(anc, cst.Call) and isinstance(anc.func, cst.Attribute) and anc.func.attr.value == "append":
            return child is not anc.func
        child = anc
    return False


def _read_as_array(a, node: cst.Call) -> bool:
    """``x.cpu().numpy()`` (``.tolist()``, ``.item()``) of a value syncfix cannot name, where code
    repeats: a module's ``.cpu()`` has no ``.numpy()``, so ``x`` is a tensor, on a device
    syncfix cannot name (vits's ``neg_cent.data.cpu().numpy()`` in ``maximum_path``, each step);
    not a loader's CPU item."""
    func = node.func
    parent = _past_same_memory(a, node)
    return (
        isinstance(func, cst.Attribute)
        and func.attr.value == "cpu"
        and not node.args
        and isinstance(parent, cst.Attribute)
        and parent.attr.value in ("numpy", "tolist", "item")
        and isinstance(a.parent(parent), cst.Call)
        and a.torch_code  # torch code: not another library's ``.cpu()``
        and a.likely.value(func.value).kind is Kind.UNKNOWN
        and a.is_hot(node)
        and not a.used_as_module(func.value)
        and not loader_item(a, func.value)
    )


def _past_same_memory(a, node: cst.BaseExpression) -> cst.CSTNode | None:
    """The parent of ``node`` past a ``.data`` or ``.detach()`` (the same memory on the same
    device), so ``x.cpu().data.numpy()`` reads as ``x.cpu().numpy()`` (lmmd's ``cal_weight``)."""
    parent = a.parent(node)
    while isinstance(parent, cst.Attribute) and parent.value is node:
        call = a.parent(parent)
        if parent.attr.value == "data":
            node = parent
        elif parent.attr.value == "detach" and isinstance(call, cst.Call) and not call.args:
            node = call
        else:
            break
        parent = a.parent(node)
    return parent


# What a copy outside a loop, in a step function or one called from a loop, is said to be.
_COPY_WHERE_REPEATS = "Blocking device-to-host copy where code repeats: the CPU waits for all queued GPU work"


def _scalar_written(a: ModuleAnalysis, call: cst.Call) -> cst.BaseExpression | None:
    """The tensor ``writer.add_scalar(tag, t, step)`` writes (TensorBoard's writers convert it
    with ``.cpu().numpy()``), on CUDA or maybe the CPU, or of a device syncfix cannot name, where
    the call runs on every iteration (a log every N steps is the advice, not a finding); None
    otherwise."""
    func = call.func
    if not (isinstance(func, cst.Attribute) and func.attr.value == "add_scalar"):
        return None
    value = keyword(call, "scalar_value")
    args = [arg for arg in call.args if arg.keyword is None and not arg.star]
    expr = value.value if value is not None else args[1].value if len(args) > 1 else None
    if expr is None or not runs_every_iteration(a, call):
        return None
    if not (a.value(expr).is_tensor or unplaced_tensor(a, expr) or item_read_in_loop(a, expr)):
        return None
    return expr


_DATA_BUILDERS = {"torch.tensor", "torch.as_tensor", "torch.asarray"} | {f"torch.{n}" for n in LEGACY_CONSTRUCTORS}
_AS_DATA = (
    "GPU values read on the host where code repeats: a tensor built from a list of tensors "
    "(`{}`) reads each one to the host, one sync each, and drops their gradients"
)
_AS_DATA_HINT = (
    "; no fix: `torch.stack(...)` of the tensors keeps them on the device (and keeps the "
    "gradients), where they have one shape"
)


def _tensors_as_data(a: ModuleAnalysis, call: cst.Call) -> tuple[str, bool] | None:
    """``torch.Tensor([losses])``/``torch.tensor([a, b])`` where code repeats, the data a list
    (display, comprehension, or a name the function fills with ``.append``) of tensors not provably on the CPU
    (SRGAN's content loss, every step: one read per element): the data's text, and whether
    every tensor is provably on CUDA; else None."""
    if a.callee(call) not in _DATA_BUILDERS or not a.is_hot(call):
        return None
    args = positional(call)
    if len(args) != 1 or not isinstance(args[0].value, (cst.List, cst.Tuple, cst.Name, cst.ListComp)):
        return None
    items = _listed(a, args[0].value, depth=2)
    if not items:
        return None
    values = [a.likely.value(item) for item in items]
    if not all(v.is_tensor and v.device is not Device.CPU for v in values):
        return None
    text = code(a, args[0].value)
    proven = all(a.value(item).is_tensor and a.value(item).device is Device.CUDA for item in items)
    return (text if len(text) <= 40 else "...", proven)


def _listed(a: ModuleAnalysis, data: cst.BaseExpression, depth: int) -> list[cst.BaseExpression]:
    """The items of a list display (nested ones flattened), the element of a list comprehension
    (muzero's ``[policy_logits[0][a] for a in actions]``), or what a function's ``name = []``
    is filled with (``name.append(x)``, ``name += [x]``); empty where syncfix cannot list them."""
    if isinstance(data, cst.ListComp):
        return [data.elt]
    if isinstance(data, (cst.List, cst.Tuple)):
        out: list[cst.BaseExpression] = []
        for el in data.elements:
            if isinstance(el, cst.StarredElement):
                return []
            inner = _listed(a, el.value, depth - 1) if depth > 0 and isinstance(el.value, (cst.List, cst.Tuple, cst.Name)) else []
            out.extend(inner or [el.value])
        return out
    if not isinstance(data, cst.Name) or depth <= 0:
        return []
    return a.filled_items(data)


def _timed_after(a: ModuleAnalysis, loop: cst.CSTNode | None, node: cst.CSTNode) -> tuple[str, str] | None:
    """An event's ``elapsed_time`` the loop reads after ``node`` (2DGS's
    ``iter_start.elapsed_time(iter_end)``), whose end event the read's wait completes: the
    call's text and the end event's (the argument, or the receiver)."""
    if loop is None:
        return None
    order = a.structure.order
    after = order.get(node, -1)
    for call in a.structure.within(loop, cst.Call):
        if not isinstance(call, cst.Call):
            continue
        func = call.func
        if isinstance(func, cst.Attribute) and func.attr.value == "elapsed_time" and order.get(call, -1) > after:
            args = positional(call)
            end = args[0].value if args else func.value
            if isinstance(end, (cst.Name, cst.Attribute)) and len(code(a, call)) <= 60:
                recorded = _records_of(a, loop, code(a, end))
                if recorded and all(order.get(r, -1) > after for r in recorded):
                    return None  # recorded after the read (k-diffusion's ``end_timer``): it cannot wait for it
                return code(a, call), code(a, end)
            return None
    return None


def _records_of(a: ModuleAnalysis, loop: cst.CSTNode, event: str) -> list[cst.Call]:
    """The ``<event>.record(...)`` calls in ``loop``."""
    return [
        call
        for call in a.structure.within(loop, cst.Call)
        if isinstance(call, cst.Call)
        and isinstance(call.func, cst.Attribute)
        and call.func.attr.value == "record"
        and code(a, call.func.value) == event
    ]


class DeviceToHostInLoop(Rule):
    """
    ## What it finds
    In a loop, or elsewhere where code repeats (a step-like function such as `forward`, or one
    called from a loop: detr's Hungarian matcher copies its cost matrix with `.cpu()` in
    `forward`), a copy of a CUDA tensor to the host that blocks: `x.cpu()`, `x.to("cpu")`,
    `x.tolist()` (and so `x.cpu().numpy()`, `x.detach().cpu().tolist()`). The tensor must be
    provably on CUDA, or provably CUDA-or-CPU. `x.numpy()` on a CUDA tensor raises, so it is
    reported through the `.cpu()` before it. A store of such a tensor into a CPU tensor
    (`features[a:b] = ff`) copies it to the host just as blocking, and is reported too (no fix).
    Where the code repeats (a loop body, a step-like function or a function called from one), a
    tensor whose device syncfix cannot name (a parameter's `.grad`, a model output passed in,
    what a parameter returns that the function also calls `.train()`/`.eval()` on (a model), or
    an unannotated parameter its function uses as only a tensor is used, `target.index_select(0,
    i)` or `torch.zeros_like(target)`, unless it defaults to `None` or its type is tested) is
    reported too, as likely on the GPU, with no fix: the message says the device is unknown. So
    is `x.cpu().numpy()` of a value syncfix cannot name (a module's `.cpu()` has no `.numpy()`;
    also `x.cpu().data.numpy()` and `x.cpu().detach().numpy()`;
    `x.cpu().item()` too, once: the copy waits, the read of the copy does not),
    and `feats.append(out.cpu())` where the function joins `feats` with `torch.cat`/`torch.stack`
    (only tensors can be joined; a module's `.cpu()` returns the module). Not a tokenizer's
    tensors (`tokenizer(text, return_tensors="pt").input_ids`), likely new CPU tensors. Nor
    `torch.tensor(x)` without `device=` of a value syncfix cannot name: likely a copy of host
    data (a list, an array), so a CPU tensor.
    Where the code repeats, a scalar read `v = t.item()` (or `t.item()` passed to a call, used
    in a slice, added to a total kept in a container: `counts["raw"] += t.sum().item()`) is
    reported as well, unless another rule owns it: a running total in a name (SFX302), a log
    line that SFX401 moves or SFX402 defers (another log line, or a metric written with
    `add_scalar`, is reported here, without a fix, where it runs on every iteration of its loop
    or on every call of a function that repeats, and not under `if step % 100 == 0:`), a branch
    or check (SFX201-SFX206), a comprehension (SFX303), or reads in a row that SFX301 can merge (of reads it cannot, one finding per
    statement; lines that call a writer, as cleanrl's `writer.add_scalar(..., v_loss.item(),
    step)` lines do, are no run it merges). Nor is a total the loop adds to, read with
    `.item()` under `if step % N == 0:` (`cur_loss = total_loss.item() / log_interval` of
    `total_loss += loss.data`): that is the form SFX302's fix leaves. So is
    `float(t)` / `int(t)` of a tensor, or of a tensor op's result (`float(preds.eq(y).sum())`,
    an element of one: `int(nlabel[i])` of `nlabel = (labels > 0).sum(1)`, or an autograd
    Function's result: `float(AllReduce.apply(loss))`), without a fix: `float(x)` of a value
    syncfix cannot name is as often a number's or a numpy value's. So is a `math` function of
    a tensor not provably on the CPU (`math.sqrt(kl_clip / vg_sum)`, `math.isinf(g) or
    math.isnan(g)`: each reads its argument as a Python float), one finding per statement, without
    a fix (`torch.sqrt` keeps it on the device); not `math.floor`/`ceil`/`trunc`, which call the
    tensor's own method, nor a check (SFX203). So is a tensor used as a slice bound
    (`mels[:, :, :self.r]` of a registered buffer `r`, `x[:lengths.max()]`), which Python reads
    as an int (`__index__`), without a fix. So is a tensor given as a size or bound to a
    factory (`torch.arange(lengths.max(), device=d)`, `torch.zeros(n_tokens)`, `range(t)`), read
    as an int the same way (XLM's mask of every decoder step), without a fix. So is a tensor written with
    `writer.add_scalar(tag, t, step)` (TensorBoard converts it with `.cpu().numpy()`) where the
    line runs on every iteration of its loop, without a fix (`t` a tensor, or a value syncfix
    cannot name that the loop reads with `t.item()` or calls `t.backward()` on). So is a tensor
    built from a list of tensors not provably on the CPU (`torch.tensor([a, b])`, SRGAN's
    `torch.Tensor([losses])` of a list the function fills with `.append`), which reads each one
    to the host, without a fix (`torch.stack` keeps them on the device). A part of a batch from a loader named as such (`data_loader`, `self.train_loader`)
    that the code never copies is, by SFX101's likely fact, a CPU tensor: its reads are not
    reported (unless accelerate placed the loader's batches on its device).

    ## Why it costs
    A device-to-host copy with `non_blocking=False` runs `cudaMemcpyAsync` and then
    `cudaStreamSynchronize`: the CPU waits for *every* kernel queued on the stream, not only the
    one that produced `x` (1 sync per call; `tolist()` is 1 sync for any size:
    docs/semantics.md#how-a-sync-happens, docs/semantics.md#host-reads). In a loop, the GPU drains and idles once per iteration.

    ## Example
    ```python
    preds = []
    for x in batches:
        preds.append(model(x).argmax(1).cpu())
    ```

    ## Use instead
    ```python
    preds, done = [], torch.cuda.Event()
    for x in batches:
        preds.append(model(x).argmax(1).to("cpu", non_blocking=True))
    done.record()
    done.synchronize()  # once, before any of preds is read
    ```
    or keep the results on the GPU and move them once after the loop (`torch.cat(...).cpu()`).

    ## Fix safety
    Copies: no fix. The CPU reads the value, so the copy has to finish first. The message says
    when the value is only *collected* in the loop (appended, stored into a container): then
    `.to("cpu", non_blocking=True)` plus an event recorded after the copies and waited on before
    the first read removes the per-iteration wait. Reading a non-blocking device-to-host result
    before that wait may see data the copy has not written yet (docs/semantics.md#host-reads),
    which is why syncfix never rewrites it.

    Scalar reads added into a dict of device totals (`counts["raw"] += t.sum().item()`, the
    dict a local display of int64/float32/float64 tensors that the function only reads,
    iterates, returns and augments item by item) add the tensor instead, as SFX302 does for a
    total kept in a name (see its Fix safety): unsafe unless `t` is provably 0-d and placed by
    the totals' device expression.

    Scalar reads: one **unsafe** fix, for the largest or smallest element of a tensor the code
    just built from a list of Python ints (lengths, counts, sizes), read back with `.item()`:
    ```python
    lengths = torch.tensor([len(s) for s in batch], device=device)
    width = lengths.max().item()
    ```
    becomes
    ```python
    lengths_host = [len(s) for s in batch]
    lengths = torch.tensor(lengths_host, device=device)
    width = max(lengths_host)
    ```
    No sync at all: the host already has the numbers. It applies when the tensor is made by
    `torch.tensor(list)` (no dtype, or int64/int32) in the same block as the read, nothing
    touches it in between, the list is a display or comprehension there (or a name bound to a
    fresh list that only `.append` fills, all before the tensor is made), and its elements are
    ints: `len(...)`, int arithmetic, or `x.shape[i]` / `x.size(i)`. What can differ: an empty
    list raises `ValueError` from `max()` where `.amax()` raised `RuntimeError`; an element
    `x.shape[i]` is taken to be an int (true of tensors and numpy arrays), where a float would
    be truncated by the int dtype but compared as itself by `max()`.

    A second **unsafe** fix, for a tensor syncfix cannot name that is read with `.item()` and
    read again by the next statement, or by the test of the `if` that follows:
    ```python
    n = int(total.item())
    if abs(n - total.item()) > 1e-4:
        raise ValueError("not an integer")
    ```
    becomes `total_value = total.item()`, `n = int(total_value)` and
    `if abs(n - total_value) > 1e-4:` (one sync instead of two). Nothing may run in between that
    could change the tensor: the first line is one statement whose other calls are pure
    (`int(...)`), and in the second nothing but pure calls starts before the read; a read under a
    condition (`m and t.item()`), in a comprehension or in a `while` test (read again every time)
    is left alone. What can differ: if `total` is not a tensor (or array), its `.item()` might not
    give the same value twice; and a property setter run by an attribute store in the first line
    could change it.

    A third **unsafe** fix, for one line that reads neighbouring elements of one tensor syncfix
    cannot name (`return int(t[0].cpu().item()), int(t[1].cpu().item())`): one transfer of the
    slice, `t_values = t[0:2].reshape(2).tolist()`, before the line, and `t_values[0]`,
    `t_values[1]` in it. The line may call nothing but the reads and pure functions, nor rebind
    `t` (`(t := u)[1]`). The values and Python types are the same for a 1-D tensor (or one of
    shape `(n, 1)`), and a tensor whose elements are not single values raises `RuntimeError` in
    both. What can differ: a tensor too
    short raises `RuntimeError` from `reshape` where `t[1]` raised `IndexError`; and if `t` is not
    a tensor, its slicing may not behave so.
    """

    CODE = "SFX105"
    NAME = "device-to-host-in-loop"
    MESSAGE = "Blocking device-to-host copy in a loop: the CPU waits for all queued GPU work"
    FIX = "sometimes"
    SAFETY = ("unsafe",)
    TRIGGERS = (".cpu(", ".tolist(", ".to(", ".item(", "float(", "int(", "math", "add_scalar(", "[:", ":]", "] =")
    # reads in a row (SFX301), a value read only for a later log line (SFX401) and values
    # collected to be read after the loop (SFX404) are theirs
    DEFERS_TO = ("SFX301", "SFX401", "SFX402", "SFX404")
    VALID = [
        # not in a loop
        "import torch\nx = torch.ones(3, device='cuda')\ny = x.cpu()\n",
        # already on the CPU
        "import torch\nx = torch.ones(3)\nfor _ in range(3):\n    y = x.cpu().tolist()\n",
        # non-blocking (the reader must wait on an event; not this rule's business)
        "import torch\nx = torch.ones(3, device='cuda')\nfor _ in range(3):\n"
        "    y = x.to('cpu', non_blocking=True)\n",
    ]
    INVALID = [
        Invalid(
            "import torch\nx = torch.ones(3, device='cuda')\nfor _ in range(3):\n"
            "    print(x.cpu().numpy())\n"
        ),
        Invalid(
            "import torch\nx = torch.ones(3, device='cuda')\nout = []\nfor _ in range(3):\n"
            "    out.append(x.tolist())\n"
        ),
        Invalid(
            "import torch\nfor batch in loader:\n"
            "    n = torch.tensor([len(s) for s in batch], device='cuda')\n"
            "    width = n.max().item()\n",
            "import torch\nfor batch in loader:\n"
            "    n_host = [len(s) for s in batch]\n"
            "    n = torch.tensor(n_host, device='cuda')\n"
            "    width = max(n_host)\n",
            unsafe=True,
        ),
    ]

    def visit_Module(self, node: cst.Module) -> None:
        self._own_lines: set[cst.SimpleStatementLine] = set()  # statements with a read of ``own_hint`` reported

    def visit_Call(self, node: cst.Call) -> None:
        func = node.func
        if isinstance(func, cst.Attribute) and func.attr.value == "item" and not node.args:
            self._scalar_read(node)
            return
        if isinstance(func, cst.Name) and func.value in ("float", "int") and len(node.args) == 1:
            self._scalar_read(node)  # ``float(t.sum())``: the same read as ``.item()``
            return
        converted = math_read(self.analysis, node)
        if converted is not None:  # ``math.sqrt(kl_clip / vg_sum)``: ``float()`` of the tensor
            fn = (self.analysis.callee(node) or "").removeprefix("math.")
            twin = _TORCH_TWIN.get(fn, fn)
            hint = _MATH_HINT.format(f"math.{fn}", f" (`torch.{twin}(t)`)" if twin else "")
            self._reported_read(node, HostRead(node, converted, "float"), False, fixes=False, own_hint=hint)
            return
        gathered = _tensors_as_data(self.analysis, node)
        if gathered is not None:  # ``torch.Tensor([losses])`` of GPU losses: each one read
            text, proven = gathered
            hedge = "" if proven else " (if they are on a GPU: syncfix cannot tell which device they are on)"
            self.report(node, _AS_DATA.format(text) + hedge + _AS_DATA_HINT)
            return
        if self._size_read(node):
            return
        scalar = _scalar_written(self.analysis, node)
        if scalar is not None:  # ``writer.add_scalar("loss", loss, step)``: TensorBoard reads it
            likely = item_read_in_loop(self.analysis, scalar)
            self._reported_read(node, HostRead(node, scalar, "float"), likely, fixes=False, own_hint=_WRITER_HINT)
            return
        if not isinstance(func, cst.Attribute) or func.attr.value not in ("cpu", "to", "tolist"):
            return
        a = self.analysis
        in_loop = a.enclosing_loop(node) is not None
        if not (in_loop or a.is_hot(node)) or (func.attr.value == "cpu" and stacked_read(a, node)):
            return  # a value of a mapping SFX303 reads with one stack (``v.cpu().item()``)
        receiver = a.value(func.value)
        unplaced = not (receiver.is_tensor and receiver.device in (Device.CUDA, Device.CUDA_OR_CPU))
        if unplaced and not unplaced_tensor(a, func.value) and not collected_for_joining(a, node) and not _read_as_array(a, node):
            return
        method = func.attr.value
        if method == "to":
            nb = keyword(node, "non_blocking")
            if a.to_target(node) is not Device.CPU or (
                nb is not None and not (isinstance(nb.value, cst.Name) and nb.value.value == "False")
            ):
                return
        where = "" if receiver.device is Device.CUDA else " (when the tensor is on CUDA)"
        if unplaced:
            where = unplaced_message(a, node)
        elif not in_loop:  # a step function's (detr's matcher ``forward``): as often as it runs
            where += f"; that is, {how_often(a, node)}"
        if collected(a, node):
            hint = (
                "; no fix: the value is only collected here: `.to(\"cpu\", non_blocking=True)`, an "
                "event recorded after the loop's copies and `event.synchronize()` before the first "
                "read would remove the per-iteration wait"
            )
        else:
            hint = (
                "; no fix: the CPU reads the value here, so it must wait (if the value is only "
                "needed later, collect the tensor and convert it after one event wait)"
            )
            rows = rows_copied(a, func.value)
            if rows is not None and method == "tolist":  # nanoGPT's ``xgen[i, :n].tolist()``
                hint = "; no fix: " + INDEXED_ELEMENTS.format(rows)
            elif rows is not None:  # VideoMAE's ``output.data[i].cpu()`` per row of a batch
                hint = (
                    f"; no fix: each element is indexed out of `{rows}` and copied alone; "
                    f"copy it once, before the loop (`{rows}.cpu()`), and index the copy"
                )
        self.report(node, (self.MESSAGE if in_loop else _COPY_WHERE_REPEATS) + where + hint)

    def visit_Assign(self, node: cst.Assign) -> None:
        """``features[a:b] = ff``: a GPU tensor stored into a CPU tensor is copied to the host,
        and the CPU waits for it (Person_reID's feature extraction, once per batch)."""
        a = self.analysis
        if len(node.targets) != 1 or not isinstance(node.targets[0].target, cst.Subscript):
            return
        if a.enclosing_loop(node) is None and not a.is_hot(node):
            return
        held, stored = a.value(node.targets[0].target.value), a.value(node.value)
        if not (held.kind is Kind.TENSOR and held.device is Device.CPU):
            return  # not a batch, which may be a list (moco's ``images[0] = images[0].cuda()``)
        if stored.is_tensor and stored.device in (Device.CUDA, Device.CUDA_OR_CPU):
            where = "" if stored.device is Device.CUDA else " (when the tensor is on CUDA)"
        elif unplaced_tensor(a, node.value):
            where = unplaced_message(a, node.value)  # DomainBed's ``losses[i] = nll`` each step
        else:
            return
        self.report(node.value, self.MESSAGE + where + _STORED_HINT)

    def visit_Slice(self, node: cst.Slice) -> None:
        """``mels[:, :, :self.r]`` with ``r`` a tensor (a registered buffer, ``lengths.max()``):
        slicing reads each bound on the host (``__index__``), a sync each time the code repeats."""
        a = self.analysis
        if a.enclosing_loop(node) is None and not a.is_hot(node):
            return  # once: no value asked of its bounds
        for bound in (node.lower, node.upper, node.step):
            if bound is None or isinstance(bound, (cst.Integer, cst.UnaryOperation, cst.SimpleString)):
                continue
            value = a.value(bound)
            if value.is_tensor and value.device in (Device.CUDA, Device.CUDA_OR_CPU):
                where = "" if value.device is Device.CUDA else " (when the tensor is on CUDA)"
            elif not value.is_tensor and a.torch_code and unplaced_tensor(a, bound):
                where = unplaced_message(a, node)
            else:
                continue
            stmt = a.statement_of(node)
            if stmt in self._own_lines:
                return  # one finding a statement (``fg_mask[b, v1:v2, u1:u2]``: four bounds)
            if stmt is not None:
                self._own_lines.add(stmt)  # type: ignore[arg-type]
            self.report(bound, _SCALAR + where + _SLICE_HINT)
            return

    def _size_read(self, node: cst.Call) -> bool:
        """``torch.arange(lengths.max(), device=d)``: a factory's size or bound (or ``range``'s)
        given as a tensor is read on the host as an int, a sync where it is on the GPU."""
        a = self.analysis
        name = a.callee(node) if isinstance(node.func, (cst.Name, cst.Attribute)) else None
        if name not in _SIZE_TAKERS or a.enclosing_loop(node) is None and not a.is_hot(node):
            return False
        for arg in node.args:
            if arg.keyword is not None or arg.star:
                continue
            value = a.value(arg.value)
            if value.is_tensor and value.device in (Device.CUDA, Device.CUDA_OR_CPU):
                where = "" if value.device is Device.CUDA else " (when the tensor is on CUDA)"
            elif not value.is_tensor and a.torch_code and unplaced_tensor(a, arg.value):
                where = unplaced_message(a, node)
            else:
                continue
            short = name.removeprefix("builtins.")
            self.report(arg.value, _SCALAR + where + _SIZE_HINT.format(short))
            return True
        return False

    def _scalar_read(self, node: cst.Call) -> None:
        """``v = t.item()`` or ``f(t.item())`` where code repeats, on a tensor that is (or may be)
        on the GPU. Reads that other rules own are left to them: a total (SFX302), a log line
        (SFX401/402), a branch or check (SFX2xx), a comprehension (SFX303), reads next to other
        reads (SFX301)."""
        a = self.analysis
        read = a.host_read(node)
        read_as_tensor = False  # a value syncfix cannot name, read with ``.item()``: likely a tensor
        if read is None:
            read = a.likely.host_read(node)
            read_as_tensor = read is not None and a.likely.value(read.receiver).kind is Kind.UNKNOWN
        if read is None:
            return
        if read.form in ("float", "int"):
            # ``float(x)`` is as often of a number, a string or a numpy value: only of a tensor,
            # or of a tensor op's result in the likely view (``float(preds.eq(y).sum())``, and an
            # element or a name of one: YOLOX's ``int(nlabel[i])`` of ``nlabel = (...).sum(1)``;
            # a registered buffer: MoCo's ``int(self.queue_ptr)`` in each forward;
            # not ``int(kpts[i, 0])`` of an array that only has a ``.shape``), and without a fix
            # (the fixes below rewrite ``.item()``)
            receiver = read.receiver
            if not (
                a.value(receiver).is_tensor
                or isinstance(receiver, (cst.Call, cst.Subscript, cst.Name, cst.Attribute))
                and not read_as_tensor
                and (a.torch_code or not isinstance(receiver, cst.Attribute))
                and a.likely.value(receiver).is_tensor
            ):
                return
            self._reported_read(node, read, read_as_tensor, fixes=False)
            return
        self._reported_read(node, read, read_as_tensor, fixes=True)

    def _reported_read(
        self, node: cst.Call, read: HostRead, read_as_tensor: bool, *, fixes: bool, own_hint: str | None = None
    ) -> None:
        """Report a scalar read (with a fix where ``fixes`` and one applies). A read no other
        rule reports but a check's (SFX203), with its own ``own_hint`` (a ``math`` call's:
        ``math.isinf(g) or math.isnan(g)``; a tensor written with ``add_scalar``, where it runs
        on every iteration): one finding for its statement."""
        own = own_hint is not None
        a = self.analysis
        receiver = a.value(read.receiver)
        proven = receiver.is_tensor and receiver.device in (Device.CUDA, Device.CUDA_OR_CPU)
        if not proven and (
            loader_item(a, read.receiver)  # a loader's CPU item, likely (BLIP's ``question_id``)
            or not unplaced_tensor(a, read.receiver) and not (read_as_tensor and a.is_hot(node))
        ):
            return
        stmt = a.statement_of(node)
        if stmt is None or not isinstance(stmt, cst.SimpleStatementLine):
            return
        if (isinstance(stmt.body[0], cst.Assert) or stmt in self._own_lines) if own else owned_elsewhere(a, node, stmt, proven):
            return
        if own:
            self._own_lines.add(stmt)
        if _accumulator_read_back(a, node, stmt) or _periodic_total_read(a, node, read.receiver):
            return  # SFX302's ``if total_acc is not None: total = total_acc.item()``, where shown
        where = "" if receiver.device is Device.CUDA else (unplaced_message(a, node) if not proven else " (when the tensor is on CUDA)")
        total = isinstance(stmt.body[0], cst.AugAssign)  # ``counts["raw"] += t.sum().item()``
        appended = _appended(a, node, stmt)
        loop = next((n for n in a.ancestors(node) if isinstance(n, (cst.For, cst.While))), None)
        if appended and loop is not None and measures_itself(a, loop):
            return  # a benchmark collecting what it measured, step by step: deliberate
        fix, hint = None, _TOTAL_HINT if total else _COLLECT_HINT if appended else _SCALAR_HINT
        if total and isinstance(stmt.body[0].target, cst.Name):  # type: ignore[attr-defined]
            hint = _NAME_TOTAL_HINT.format(code(a, stmt.body[0]))
        if own_hint is not None and hint is _SCALAR_HINT:
            hint = own_hint
        arg = a.parent(node)
        if hint is _SCALAR_HINT and isinstance(arg, cst.Arg) and isinstance(call := a.parent(arg), cst.Call) and lightning_log(a, call):
            hint = _LIGHTNING_LOG.format(code(a, read.receiver))
        timed = _timed_after(a, loop, node) if hint is _SCALAR_HINT else None
        if timed is not None:
            hint += _TIMED.format(*timed)
        again = read_again_in(a, loop, node, read.receiver) if appended and loop is not None else None
        shown = _list_read_in(a, loop, node, stmt) if appended and loop is not None else None
        if again is not None:
            hint = _READ_TWICE.format(dotted_name(read.receiver), again)
        elif shown is not None:
            hint = _SHOWN_HINT.format(*shown)
        elif not total and isinstance(loop, cst.For):
            # ``for i in range(top_k): ... int(index[i])``: one read of ``index`` before the loop
            base = indexed_base(a, read.receiver, {n.value for n in target_names(loop.target)})
            if base is not None and (a.is_tensor(base) or a.likely.is_tensor(base)) and len(code(a, base)) <= 40:
                hint = "; no fix: " + INDEXED_ELEMENTS.format(code(a, base))
        logged = proven and any(isinstance(n, cst.Call) and in_log(a, n) for n in ancestors_in(a, node, stmt))
        # ``loss.cpu().item()``: the copy waits, and is reported; the read of it waits for nothing
        copy_reported = read_as_tensor and isinstance(read.receiver, cst.Call) and _read_as_array(a, read.receiver)
        if not fixes or logged:  # a log line of a CUDA tensor: SFX401/SFX402 rewrite those
            if not copy_reported:
                self.report(node, _SCALAR + where + hint)
            return
        if total:
            fix = self._into_tensor_total(stmt.body[0], node)  # type: ignore[arg-type]
            hint = _TENSOR_TOTAL if fix is not None else hint
        if not total:
            for build, said in ((from_host_list, _HOST_COPY), (read_once, _READ_AGAIN), (elements_at_once, _ELEMENTS)):
                found = build(a, node, stmt)
                if found is not None:
                    fix, hint = self.unsafe_fix(*found), said
                    break
        if fix is None and copy_reported:
            return  # one finding, the copy's (a fix of the reads, above, is worth its own)
        self.report(node, _SCALAR + where + hint, fix=fix)

    def _into_tensor_total(self, aug: cst.AugAssign, read: cst.Call) -> Fix | None:
        """``counts["raw"] += t.sum().item()`` into a dict of device totals: add the tensor."""
        found = into_tensor_total(self.analysis, aug, read)
        if found is None:
            return None
        changes, exact = found
        if exact:
            return self.safe_fix(changes, INTO_TENSOR_TOTAL)
        return self.unsafe_fix(changes, INTO_TENSOR_TOTAL + INTO_TENSOR_TOTAL_LIKELY)

def _periodic_total_read(a, node: cst.Call, receiver: cst.BaseExpression) -> bool:
    """``cur_loss = total_loss.item() / log_interval`` under ``if batch % log_interval == 0:``
    of a loop that adds to ``total_loss`` (awd-lstm's ``total_loss += raw_loss.data``): a total
    read with ``.item()`` is a tensor, kept where it was added to and read every N steps, the
    form SFX302's fix makes; nothing left to move."""
    if not isinstance(receiver, cst.Name):
        return False
    child: cst.CSTNode = node
    for anc in a.ancestors(node):
        if isinstance(anc, (cst.For, cst.While, cst.FunctionDef)):
            return False
        if isinstance(anc, cst.If) and child is anc.body and every_n(anc):
            loop = a.enclosing_loop(anc)
            return loop is not None and any(
                isinstance(aug, cst.AugAssign)
                and isinstance(aug.target, cst.Name)
                and aug.target.value == receiver.value
                and isinstance(aug.operator, cst.AddAssign)
                for aug in a.structure.within(loop.body, cst.AugAssign)
            )
        child = anc
    return False


def _accumulator_read_back(a, node: cst.Call, stmt: cst.SimpleStatementLine) -> bool:
    """Is ``node`` the read-back SFX302's fix writes where a total is shown or after its loop,
    ``if acc is not None: total = acc.item()``, of an accumulator bound only to ``None``, to
    ``torch.full(...)`` and by ``+=``? That read is the one the fix keeps."""
    func = node.func
    acc = func.value if isinstance(func, cst.Attribute) and func.attr.value == "item" else None
    body = a.parent(stmt)
    guard = a.parent(body) if isinstance(body, cst.IndentedBlock) else None
    if (
        not isinstance(acc, cst.Name)
        or len(stmt.body) != 1
        or not isinstance(stmt.body[0], cst.Assign)
        or stmt.body[0].value is not node
        or not isinstance(guard, cst.If)
        or guard.orelse is not None
        or len(body.body) != 1
        or cst.Module([]).code_for_node(guard.test).strip() != f"{acc.value} is not None"
    ):
        return False
    scope = a.scope(acc)
    if scope is None:
        return False
    for asg in scope.assignments[acc.value]:
        bound = getattr(asg, "node", None)
        parent = a.parent(bound) if bound is not None else None
        if isinstance(parent, cst.AugAssign) and parent.target is bound:
            continue
        if not isinstance(parent, cst.AssignTarget):
            return False
        value = a.parent(parent).value
        if not (
            isinstance(value, cst.Name) and value.value == "None"
            or isinstance(value, cst.Call) and (a.callee(value) or "") == "torch.full"
        ):
            return False
    return True
