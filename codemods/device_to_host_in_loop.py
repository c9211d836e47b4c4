"""SFX105: a blocking device-to-host read (``.cpu()``, ``.tolist()``, ``.to("cpu")``) in a loop."""

from __future__ import annotations

import libcst as cst
from libcst.metadata import BuiltinAssignment

from syncfix.analysis import (
    Device,
    HostRead,
    Kind,
    ModuleAnalysis,
    dotted_name,
    keyword,
    math_read,
    target_names,
)
from syncfix.rules import Fix, Invalid, Rule

from ._collected_copies import collected, collected_for_joining, read_again_in
from ._owned_reads import ancestors_in, in_log, owned_elsewhere
from ._stacked_reads import stacked_read
from ._support import (
    INDEXED_ELEMENTS,
    ReplaceNodes,
    code,
    how_often,
    indexed_base,
    int_like,
    loader_item,
    measures_itself,
    method_call_on,
    runs_every_iteration,
    unplaced_message,
    unplaced_tensor,
)
from ._totals import INTO_TENSOR_TOTAL, INTO_TENSOR_TOTAL_LIKELY, into_tensor_total

_SCALAR = "GPU value read on the host where code repeats: the CPU waits for all queued GPU work"
_TOTAL_HINT = (
    "; no fix: a running total kept in a container or attribute; keep it a device tensor "
    "(`counts[k] = counts[k] + t.sum()`) and read it only where it is shown"
)
_TENSOR_TOTAL = "; the running total is a tensor already: add the value to it without reading it"
_COLLECT_HINT = (
    "; no fix: the value is only collected here; if the list is read after the loop, append the "
    "tensor (`t.detach()`) and read them all once there (`torch.stack(values).tolist()`)"
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
_HOST_COPY = (
    "; the value is already on the host: the fix takes it from the list the tensor was built from"
)
_READ_AGAIN = "; the same value is read again in the next statement: the fix reads it once"
_ELEMENTS = "; this line reads several elements of one tensor: the fix reads them with one transfer"
# Applied to an element before ``.item()`` without changing its value.
_SAME_VALUE = frozenset({"cpu", "detach", "clone"})
# Where a later read of the same tensor may sit: evaluated every time, in textual order.
_ONCE_SKIP = frozenset({
    cst.Lambda, cst.IfExp, cst.BooleanOperation, cst.ListComp, cst.SetComp, cst.DictComp,
    cst.GeneratorExp, cst.NamedExpr,
})
# A whole-tensor reduction read with ``.item()`` -> the builtin giving the same Python int.
_HOST_REDUCTIONS = {"amax": "max", "max": "max", "amin": "min", "min": "min"}
# dtypes that hold a list of Python ints exactly (an int out of range raises at creation)
_INT_DTYPES = frozenset({"torch.int64", "torch.long", "torch.int32", "torch.int"})


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
    parent = a.parent(node)
    return (
        isinstance(func, cst.Attribute)
        and func.attr.value == "cpu"
        and not node.args
        and isinstance(parent, cst.Attribute)
        and parent.attr.value in ("numpy", "tolist", "item")
        and isinstance(a.parent(parent), cst.Call)
        and a.torch_alias is not None  # torch code: not another library's ``.cpu()``
        and a.likely.value(func.value).kind is Kind.UNKNOWN
        and a.is_hot(node)
        and not a.used_as_module(func.value)
        and not loader_item(a, func.value)
    )


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
    if expr is None or not a.value(expr).is_tensor or not runs_every_iteration(a, call):
        return None
    return expr


class DeviceToHostInLoop(Rule):
    """
    ## What it finds
    In a loop, or elsewhere where code repeats (a step-like function such as `forward`, or one
    called from a loop: detr's Hungarian matcher copies its cost matrix with `.cpu()` in
    `forward`), a copy of a CUDA tensor to the host that blocks: `x.cpu()`, `x.to("cpu")`,
    `x.tolist()` (and so `x.cpu().numpy()`, `x.detach().cpu().tolist()`). The tensor must be
    provably on CUDA, or provably CUDA-or-CPU. `x.numpy()` on a CUDA tensor raises, so it is
    reported through the `.cpu()` before it.
    Where the code repeats (a loop body, a step-like function or a function called from one), a
    tensor whose device syncfix cannot name (a parameter's `.grad`, a model output passed in) is
    reported too, as likely on the GPU, with no fix: the message says the device is unknown. So
    is `x.cpu().numpy()` of a value syncfix cannot name (a module's `.cpu()` has no `.numpy()`),
    and `feats.append(out.cpu())` where the function joins `feats` with `torch.cat`/`torch.stack`
    (only tensors can be joined; a module's `.cpu()` returns the module).
    Where the code repeats, a scalar read `v = t.item()` (or `t.item()` passed to a call, used
    in a slice, added to a total kept in a container: `counts["raw"] += t.sum().item()`) is
    reported as well, unless another rule owns it: a running total in a name (SFX302), a log
    line that SFX401 moves or SFX402 defers (another log line, or a metric written with
    `add_scalar`, is reported here, without a fix, where it runs on every iteration of its loop,
    and not under `if step % 100 == 0:`), a branch or check (SFX201-SFX206), a comprehension
    (SFX303), or reads in a row that SFX301 can merge (of reads it cannot, one finding per
    statement; lines that call a writer, as cleanrl's `writer.add_scalar(..., v_loss.item(),
    step)` lines do, are no run it merges). So is
    `float(t)` / `int(t)` of a tensor, or of a tensor op's result (`float(preds.eq(y).sum())`,
    an element of one: `int(nlabel[i])` of `nlabel = (labels > 0).sum(1)`, or an autograd
    Function's result: `float(AllReduce.apply(loss))`), without a fix: `float(x)` of a value
    syncfix cannot name is as often a number's or a numpy value's. So is a `math` function of
    a tensor not provably on the CPU (`math.sqrt(kl_clip / vg_sum)`, `math.isinf(g) or
    math.isnan(g)`: each reads its argument as a Python float), one finding per statement, without
    a fix (`torch.sqrt` keeps it on the device); not `math.floor`/`ceil`/`trunc`, which call the
    tensor's own method, nor a check (SFX203). So is a tensor written with
    `writer.add_scalar(tag, t, step)` (TensorBoard converts it with `.cpu().numpy()`) where the
    line runs on every iteration of its loop, without a fix. A part of a batch from a loader named as such (`data_loader`, `self.train_loader`)
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
    TRIGGERS = (".cpu(", ".tolist(", ".to(", ".item(", "float(", "int(", "math", "add_scalar(")
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
        scalar = _scalar_written(self.analysis, node)
        if scalar is not None:  # ``writer.add_scalar("loss", loss, step)``: TensorBoard reads it
            self._reported_read(node, HostRead(node, scalar, "float"), False, fixes=False, own_hint=_WRITER_HINT)
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
        self.report(node, (self.MESSAGE if in_loop else _COPY_WHERE_REPEATS) + where + hint)

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
            # not ``int(kpts[i, 0])`` of an array that only has a ``.shape``), and without a fix
            # (the fixes below rewrite ``.item()``)
            receiver = read.receiver
            if not (
                a.value(receiver).is_tensor
                or isinstance(receiver, (cst.Call, cst.Subscript, cst.Name))
                and not read_as_tensor
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
        if _accumulator_read_back(a, node, stmt):
            return  # SFX302's ``if total_acc is not None: total = total_acc.item()``, where shown
        where = "" if receiver.device is Device.CUDA else (unplaced_message(a, node) if not proven else " (when the tensor is on CUDA)")
        total = isinstance(stmt.body[0], cst.AugAssign)  # ``counts["raw"] += t.sum().item()``
        appended = _appended(a, node, stmt)
        loop = next((n for n in a.ancestors(node) if isinstance(n, (cst.For, cst.While))), None)
        if appended and loop is not None and measures_itself(a, loop):
            return  # a benchmark collecting what it measured, step by step: deliberate
        fix, hint = None, _TOTAL_HINT if total else _COLLECT_HINT if appended else _SCALAR_HINT
        if own_hint is not None and hint is _SCALAR_HINT:
            hint = own_hint
        again = read_again_in(a, loop, node, read.receiver) if appended and loop is not None else None
        if again is not None:
            hint = _READ_TWICE.format(dotted_name(read.receiver), again)
        elif not total and isinstance(loop, cst.For):
            # ``for i in range(top_k): ... int(index[i])``: one read of ``index`` before the loop
            base = indexed_base(a, read.receiver, {n.value for n in target_names(loop.target)})
            if base is not None and (a.is_tensor(base) or a.likely.is_tensor(base)) and len(code(a, base)) <= 40:
                hint = "; no fix: " + INDEXED_ELEMENTS.format(code(a, base))
        logged = proven and any(isinstance(n, cst.Call) and in_log(a, n) for n in ancestors_in(a, node, stmt))
        if not fixes or logged:  # a log line of a CUDA tensor: SFX401/SFX402 rewrite those
            self.report(node, _SCALAR + where + hint)
            return
        if total:
            fix = self._into_tensor_total(stmt.body[0], node)  # type: ignore[arg-type]
            hint = _TENSOR_TOTAL if fix is not None else hint
        if not total:
            fix = self._from_host_list(node, stmt)
            hint = _HOST_COPY if fix is not None else hint
        if fix is None and not total:
            fix = self._read_once(node, stmt)
            hint = _READ_AGAIN if fix is not None else hint
        if fix is None and not total:
            fix = self._elements_at_once(node, stmt)
            hint = _ELEMENTS if fix is not None else hint
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

    def _read_once(self, node: cst.Call, stmt: cst.SimpleStatementLine) -> Fix | None:
        """``n = int(t.item())`` followed by ``if abs(n - t.item()) > eps:`` (or a line reading
        ``t.item()`` again): read ``t`` once before the first line and use the value in both
        (unsafe: syncfix cannot name ``t``; a tensor's ``.item()`` gives the same value twice
        when nothing in between writes it)."""
        a = self.analysis
        func = node.func
        after = a.statements_after(stmt)
        if not (isinstance(func, cst.Attribute) and func.attr.value == "item" and after):
            return None
        receiver = func.value
        if not isinstance(receiver, cst.Name):
            return None
        nxt = after[0]
        region: cst.CSTNode | None = nxt.test if isinstance(nxt, cst.If) else nxt
        if not isinstance(nxt, (cst.If, cst.SimpleStatementLine)) or region is None:
            return None
        again = _reads_of(a, region, receiver.value)
        if not again:
            return None
        # nothing between the two reads may write the tensor or run code that might
        name = receiver.value
        fx = a.effects(stmt)
        if name in fx.writes | fx.inplace or fx.exits or not _pure_besides(a, stmt, node):
            return None
        first_again = min(again, key=lambda n: a.structure.order.get(n, -1))
        region_fx = a.effects(region)
        if name in region_fx.writes | region_fx.inplace or not _pure_before(a, region, first_again):
            return None  # ``t = u; y = t.item()``: another tensor by then
        value = a.fresh_name(f"{name}_value")
        read = cst.parse_statement(f"{value} = {name}.item()\n")
        changes: dict[cst.CSTNode, cst.CSTNode | cst.FlattenSentinel[cst.CSTNode]] = {
            stmt: cst.FlattenSentinel(
                [
                    read.with_changes(leading_lines=stmt.leading_lines),
                    stmt.deep_replace(node, cst.Name(value)).with_changes(leading_lines=()),
                ]
            ),
        }
        for later in again:
            changes[later] = cst.Name(value)
        return self.unsafe_fix(
            changes,
            f"Read `{name}` once and use the value twice (unsafe: syncfix cannot name `{name}`; "
            "a tensor read twice with nothing in between gives the same value)",
        )

    def _elements_at_once(self, node: cst.Call, stmt: cst.SimpleStatementLine) -> Fix | None:
        """``int(t[0].item()), int(t[1].item())`` in one line, ``t`` a name syncfix cannot read:
        ``t_values = t[0:2].reshape(2).tolist()`` before it and ``t_values[i]`` for each read
        (unsafe, see Fix safety)."""
        a = self.analysis
        reads = a.likely.host_read_syncs(stmt, any_device=True)
        first = min(reads, key=lambda n: a.structure.order.get(n, -1)) if len(reads) > 1 else None
        if first is not node:
            return None
        at: dict[int, list[cst.CSTNode]] = {}
        tensor = None
        for read in reads:
            element = _element_read(read)
            if element is None or (tensor is not None and element[0] != tensor):
                return None
            tensor = element[0]
            at.setdefault(element[1], []).append(read)
        low, high = min(at), max(at)
        if tensor is None or len(at) < 2 or set(at) != set(range(low, high + 1)):
            return None
        if not all(_always_runs(a, read, stmt) for read in reads) or not _pure_besides(a, stmt, *reads):
            return None
        if tensor in a.effects(stmt).writes:  # ``(t := u)[1].item()``: another tensor by then
            return None
        values = a.fresh_name(f"{tensor}_values")
        n = high - low + 1
        read_all = cst.parse_statement(f"{values} = {tensor}[{low}:{high + 1}].reshape({n}).tolist()\n")
        new = stmt.visit(ReplaceNodes({read: cst.parse_expression(f"{values}[{k - low}]") for k, rs in at.items() for read in rs}))
        assert isinstance(new, cst.SimpleStatementLine)
        return self.unsafe_fix(
            {stmt: cst.FlattenSentinel([read_all.with_changes(leading_lines=stmt.leading_lines), new.with_changes(leading_lines=())])},
            f"Read elements {low}..{high} of `{tensor}` with one transfer (unsafe: syncfix cannot name "
            f"`{tensor}`; a tensor too short raises RuntimeError instead of IndexError)",
        )

    def _from_host_list(self, node: cst.Call, stmt: cst.SimpleStatementLine) -> Fix | None:
        """``t.max().item()`` where ``t = torch.tensor(ints)`` earlier in the block and untouched
        since: the builtin over the list instead (unsafe, see Fix safety)."""
        a = self.analysis
        reduced = node.func.value if isinstance(node.func, cst.Attribute) else None
        if not (
            isinstance(reduced, cst.Call)
            and not reduced.args
            and isinstance(reduced.func, cst.Attribute)
            and reduced.func.attr.value in _HOST_REDUCTIONS
            and isinstance(reduced.func.value, cst.Name)
        ):
            return None
        builtin = _HOST_REDUCTIONS[reduced.func.attr.value]
        tensor = reduced.func.value
        made = _straight_assignment(a, tensor)
        if made is None or not _builtin_here(a, node, builtin):
            return None
        creation, call, binding = made
        if not (isinstance(call, cst.Call) and a.callee(call) == "torch.tensor"):
            return None
        data, *rest = call.args or (None,)
        if data is None or data.keyword or data.star or not _int_dtype(a, rest):
            return None
        if not (_untouched_until(a, binding, tensor, node) and _fresh_int_list(a, data.value, creation, call, tensor)):
            return None
        host = a.fresh_name(f"{tensor.value}_host")
        keep = cst.parse_statement(f"{host} = x\n")
        assert isinstance(keep, cst.SimpleStatementLine)
        keep_small = keep.body[0]
        assert isinstance(keep_small, cst.Assign)
        keep = keep.with_changes(
            body=[keep_small.with_changes(value=data.value)], leading_lines=creation.leading_lines
        )
        made_from_host = creation.deep_replace(data.value, cst.Name(host))
        assert isinstance(made_from_host, cst.SimpleStatementLine)
        return self.unsafe_fix(
            {
                creation: cst.FlattenSentinel([keep, made_from_host.with_changes(leading_lines=())]),
                node: cst.parse_expression(f"{builtin}({host})"),
            },
            f"Take the value from the host list: `{builtin}({host})` (unsafe: an empty list raises "
            f"ValueError instead of RuntimeError; elements such as `x.shape[i]` are taken to be ints)",
        )

def _reads_of(a, region: cst.CSTNode, name: str) -> list[cst.Call]:
    """``name.item()`` calls in ``region`` that always run when it does (not under a condition,
    comprehension or lambda)."""
    found: list[cst.Call] = []

    class V(cst.CSTVisitor):
        def on_visit(self, node: cst.CSTNode) -> bool:
            if type(node) in _ONCE_SKIP:
                return False
            if (
                isinstance(node, cst.Call)
                and not node.args
                and isinstance(func := node.func, cst.Attribute)
                and func.attr.value == "item"
                and isinstance(func.value, cst.Name)
                and func.value.value == name
            ):
                found.append(node)
            return True

    a.walk(region, V())
    return found


def _pure_besides(a, stmt: cst.SimpleStatementLine, *reads: cst.CSTNode) -> bool:
    """Is ``stmt`` one statement that calls nothing but the reads (and their receivers' chains)
    and pure functions (``int(t.item())``)?"""
    chains = {id(anc) for read in reads for anc in _chain(read)}
    return len(stmt.body) == 1 and all(id(call) in chains or a.is_pure_call(call) for call in a.effects(stmt).calls)


def _chain(read: cst.CSTNode) -> list[cst.CSTNode]:
    """The read and the calls of its receiver chain (``t[0].cpu()`` of ``t[0].cpu().item()``)."""
    out = [read]
    cur = read
    while isinstance(cur, cst.Call) and isinstance(cur.func, cst.Attribute):
        cur = cur.func.value
        out.append(cur)
    return out


def _element_read(read: cst.CSTNode) -> tuple[str, int] | None:
    """``(t, k)`` for ``t[k].item()`` (``t[k].cpu().item()``...), ``t`` a name, ``k`` an int."""
    if not (isinstance(read, cst.Call) and isinstance(read.func, cst.Attribute) and read.func.attr.value == "item"):
        return None
    cur = read.func.value
    while isinstance(cur, cst.Call) and not cur.args and isinstance(cur.func, cst.Attribute) and cur.func.attr.value in _SAME_VALUE:
        cur = cur.func.value
    if not (isinstance(cur, cst.Subscript) and isinstance(cur.value, cst.Name) and len(cur.slice) == 1):
        return None
    index = cur.slice[0].slice
    if not (isinstance(index, cst.Index) and isinstance(index.value, cst.Integer)):
        return None
    return cur.value.value, int(index.value.value)


def _always_runs(a, node: cst.CSTNode, stmt: cst.CSTNode) -> bool:
    """Is ``node`` evaluated whenever ``stmt`` runs (not under a condition or comprehension)?"""
    for anc in a.ancestors(node):
        if anc is stmt:
            return True
        if type(anc) in _ONCE_SKIP:
            return False
    return False




def _pure_before(a, region: cst.CSTNode, read: cst.Call) -> bool:
    """Is every call of ``region`` that starts before ``read`` and does not enclose it pure?"""
    order = a.structure.order
    at = order.get(read, -1)
    enclosing = set(map(id, a.ancestors(read)))
    return all(
        call is read or id(call) in enclosing or order.get(call, -1) > at or a.is_pure_call(call)
        for call in a.effects(region).calls
    )


def _straight_assignment(a, name: cst.Name):
    """``(statement, value, binding)`` of the ``name = value`` line that provably holds at this
    use (the nearest earlier statement of its block to bind it); None if there is none."""
    value = a.straight_line_binding(name, reevaluable=False)
    stmt = a.statement_of(value) if value is not None else None
    assign = a.parent(value) if value is not None else None
    if not (
        isinstance(stmt, cst.SimpleStatementLine)
        and len(stmt.body) == 1
        and stmt.body[0] is assign
        and isinstance(assign, cst.Assign)
        and len(assign.targets) == 1
        and isinstance(target := assign.targets[0].target, cst.Name)
        and target.value == name.value
    ):
        return None
    binding = next((b for b in a.bindings(name) if getattr(b, "node", None) is target), None)
    return None if binding is None else (stmt, value, binding)


def _builtin_here(a, node: cst.CSTNode, name: str) -> bool:
    """Does ``name`` mean the builtin where ``node`` is (no binding of it shadows it)?"""
    scope = a.scope(node)
    found = scope[name] if scope is not None else ()
    return bool(found) and all(isinstance(asg, BuiltinAssignment) for asg in found)


def _int_dtype(a, rest: list[cst.Arg]) -> bool:
    """Only ``dtype=`` (absent or an int64/int32) and ``device=`` besides the data."""
    for arg in rest:
        name = arg.keyword.value if arg.keyword is not None else None
        if name == "device":
            continue
        if name != "dtype" or (a.qualname(arg.value) or dotted_name(arg.value)) not in _INT_DTYPES:
            return False
    return True


def _uses(a, binding, of: cst.Name) -> list[cst.Name] | None:
    """Every use linked to ``binding``, in the scope of ``of`` (LibCST links a use to each
    earlier binding of the name, so this over-approximates). None: a use in another scope (a
    closure, which may run at any call) or not a plain name (a string annotation)."""
    scope = a.scope(of)
    uses = [ref.node for ref in getattr(binding, "references", ())]
    if not all(isinstance(use, cst.Name) and a.scope(use) is scope for use in uses):
        return None
    return uses


def _untouched_until(a, binding, name: cst.Name, read: cst.CSTNode) -> bool:
    """No use of the tensor made at ``binding`` before ``read`` but ``name`` itself: it was
    just made, so no alias of it exists that could write it in between."""
    uses = _uses(a, binding, name)
    order = a.structure.order
    at = order.get(read)
    return uses is not None and at is not None and all(use is name or order.get(use, -1) > at for use in uses)


def _fresh_int_list(
    a, data: cst.BaseExpression, creation: cst.SimpleStatementLine, call: cst.Call, tensor: cst.Name
) -> bool:
    """Is ``data`` a list of ints that nothing else can change once the tensor is made: a
    display or comprehension, or a name bound to one (or ``[]``) earlier in the block that only
    ``.append(int)`` fills before ``creation``, and that ``creation`` rebinds to the tensor
    (every later use of the name in the block sees the tensor)?"""
    if isinstance(data, cst.ListComp):
        return int_like(a, data.elt)
    if isinstance(data, cst.List):
        return all(not isinstance(el, cst.StarredElement) and int_like(a, el.value) for el in data.elements)
    if not isinstance(data, cst.Name) or data.value != tensor.value:
        return False
    made = _straight_assignment(a, data)
    if made is None or not isinstance(made[1], (cst.List, cst.ListComp)):
        return False
    stmt, value, binding = made
    uses = _uses(a, binding, data)
    if uses is None or not _fresh_int_list(a, value, stmt, call, tensor):
        return False
    order = a.structure.order
    start = order.get(creation, -1)
    for use in uses:
        if use is data:
            continue
        if order.get(use, -1) > start:  # after the rebinding: must provably see the tensor
            if a.straight_line_binding(use, reevaluable=False) is not call:
                return False
            continue
        append = method_call_on(a, use, "append")
        if not (
            append is not None
            and len(append.args) == 1
            and not append.args[0].keyword
            and not append.args[0].star
            and int_like(a, append.args[0].value)
        ):
            return False
    return True


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
