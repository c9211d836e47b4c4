"""SFX302: ``total += loss.item()`` in a loop → a float64/int64 accumulator on the device."""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace

import libcst as cst

from syncfix.analysis import (
    NON_SUPPRESSING_CONTEXTS,
    Device,
    HostRead,
    Kind,
    ModuleAnalysis,
    shape_item_of,
    stored_names,
)
from syncfix.rules import Fix, Invalid, Rule

from ._iterations import runs_every_iteration
from ._support import how_often, reads_names_by_string
from ._totals import (
    INTO_TENSOR_TOTAL,
    INTO_TENSOR_TOTAL_LIKELY,
    added_to_total,
    ancestors_until,
    bound_before,
    into_tensor_total,
    mentions,
    periodic_uses,
    reset_ok,
    shared_with_other_scope,
    start_value,
)

_USED_IN_LOOP = "the total is used elsewhere in the loop"


# A module that names Apple's GPU backend may run there (``torch.device("mps")``, an
# ``accelerator`` that can be ``"mps"``).
_MENTIONS_MPS = re.compile(r"\bmps\b", re.IGNORECASE)


@dataclass
class _Acc:
    stmt: cst.SimpleStatementLine
    total: str
    read: HostRead
    kind: str | None = None
    why_not: str | None = None
    unsafe: list[str] = field(default_factory=list)  # why the fix is only unsafe
    origin: str | None = None  # None: placed on the summand's device at the first iteration
    exact_in_float: bool = False  # an int start that converts to float64 exactly
    # A total the loop also reads under an ``if`` (a running mean logged every N steps):
    # statements before which the host value is read back, and resets ``total = <literal>``.
    reads: list[cst.CSTNode] = field(default_factory=list)
    resets: list[cst.SimpleStatementLine] = field(default_factory=list)
    # facts a recorded run must show for the fix (``--observed``), and the reason without them
    needs: list[tuple[str, cst.CSTNode]] = field(default_factory=list)
    unobserved: str | None = None
    # ``total += x.item() * n`` with ``n`` a size (``len(batch)``, ``x.size(0)``): the summand is
    # weighted by it, in float64 as Python multiplies
    weight: cst.BaseExpression | None = None
    # the summand is a tensor only by the likely view (``ModuleAnalysis.likely``): unsafe fix
    likely: bool = False
    # the weight is a count only by the likely view (``x.size(0)`` of a batch item): unsafe fix
    weight_likely: bool = False
    # facts a run can confirm of an unsafe fix (a likely summand)
    likely_needs: list[tuple[str, cst.CSTNode]] = field(default_factory=list)


class AccumulateOnDevice(Rule):
    """
    ## What it finds
    A running total of GPU scalars kept on the host inside a loop: `total += loss.item()`,
    `total += float(loss)`, `total = total + loss.item()`, `correct += (pred == y).sum().item()`,
    `n += int(mask.sum())`, `total += loss.cpu().item()` (the copy is part of the read, and the
    device total keeps `loss`). The summand's facts come from what syncfix knows of torch: a loss
    module (`criterion = nn.CrossEntropyLoss()` at module level, as `self.criterion`, or local)
    or `F.cross_entropy`/`F.mse_loss`... with the default or `"sum"` reduction is a 0-d float;
    `(out.argmax(1) == y).sum()`, `pred.eq(y).sum()` and `count_nonzero()` are int64 counts.
    A float total may weight each value by a size, `total += loss.item() * x.size(0)` (or
    `len(batch) * ...`, `x.shape[0]`, `x.size()[0]`, an int literal): Python multiplies in float64, and so does
    the fix (`loss.detach().to(torch.float64) * x.size(0)`), so the sum is the same to the bit.
    Where `x` is not provably a tensor (a batch item of a loader syncfix does not see), that
    `x.size(0)` is an int is a likely fact, and the fix is **unsafe**; a weight that is no size
    (`loss.item() * data.num_graphs`) is reported without a fix, as is any other arithmetic on
    the read (`loss.item() / accumulation_steps`).
    A total the loop also reads under an `if` (a running loss logged, and perhaps reset, every
    N steps) is fixed too: its host value is read back just before each such read, so the sync
    happens every N steps instead of every step. A total read every step (a running mean printed
    each iteration) is reported without a fix: the loop needs its host value there.

    ## Why it costs
    Each `.item()` copies one value to the host and waits for the whole CUDA stream: one full
    sync per iteration, so the CPU can never run ahead and queue the next batch's kernels while
    the GPU works. A sum kept on the device costs no sync until it is read, once, after the loop
    (when that is exact: docs/semantics.md#accumulating-on-the-device).

    ## Example
    ```python
    total_loss = 0.0
    correct = 0
    for x, y in loader:
        ...
        total_loss += loss.item()
        correct += (logits.argmax(1) == y).sum().item()
    ```

    ## Use instead
    ```python
    total_loss = 0.0
    correct = 0
    total_loss_acc = torch.full((), total_loss, dtype=torch.float64, device=device)
    correct_acc = torch.full((), correct, dtype=torch.int64, device=device)
    for x, y in loader:
        ...
        total_loss_acc += loss.detach()
        correct_acc += (logits.argmax(1) == y).sum()
    total_loss = total_loss_acc.item()
    correct = correct_acc.item()
    ```

    ## Fix safety
    The fix is **safe** when syncfix proves the total comes out exactly as before, value and type:
    - **float totals**: the summand is a floating tensor (float16, bfloat16, float32 or float64),
      the total starts as a Python float (`0.0`) and is a float64 accumulator started from
      the total's current value. Every such value widens to float64 exactly, and float64 adds in
      the same order as Python's floats do (IEEE double, round to nearest), so the result is
      bit-identical; an empty loop gives back the start value, a float, as before. A total that
      starts as an int literal of at most 2**53 (`0`) is exact too (`0 + x` is `float(0) + x`),
      with the accumulator made at the first step (below) so that an empty loop leaves the int.
    - **integer totals**: the summand is an integer count (`.sum()` of a bool tensor,
      `count_nonzero()`) added with `.item()`/`int()`, and the total starts as a Python int: an
      int64 accumulator is exact up to 2**63, which counts can not reach. Other integer summands
      get an **unsafe** fix: Python ints never overflow, int64 wraps past 2**63.
    - a summand on which `loss.backward()` (no gradient argument) ran earlier in the same
      block, the name unchanged since, is a real floating tensor of one element whatever else
      is known of it: `backward()` raises for any other tensor;
    - the summand tensor provably holds one element (0-d, or one element reshaped to 0-d), and
      its device is one expression (`device`, `"cuda"`) bound outside the loop, used to place the
      accumulator. When the device is not provable (tensors from parameters), the accumulator
      starts as `None` and is made on the summand's device at the first step
      (`torch.full((), total, ..., device=loss.device)`; a summand that is no plain name is first
      evaluated, once, into a new name, detached); each summand is added as
      `loss.detach().to(total_acc.device)`, a no-op on the same device and an exact copy
      otherwise, and the total is read back only if the loop ran, so an empty loop leaves it as
      it was. For a float total that device must be provably CUDA or the CPU (a loss module's
      value is on the device of an input with a dimension or more, `criterion(out,
      y.view(n, -1))` with `y` placed on `device`, since its inputs share one; or the project
      declares its devices: `devices = ["cuda", "cpu"]` in `[tool.syncfix.torch]`): MPS has no
      float64, so there the fix is **unsafe**, and a module that mentions MPS (`"mps"`, an
      accelerator setting that can name it), or one of a project whose other modules name an
      accelerator other than CUDA, gets none;
    - `total` is a local of a function (or a name of a script's module-level loop, where no
      file of the project imports that module: no other code can read it), bound only by its
      start value (before the loop, in an
      enclosing block: `total = 0.0`, or item by item in `total, n = 0.0, 0`) and by this
      statement; no other code in the loop (its `else` too) reads or
      writes it, no nested function or lambda refers to it, it is not `global`/`nonlocal`, the
      function reads no names by string (`locals()`, `vars()`, `eval`, `exec`, `globals()`), and the
      loop is not inside a `try` of that function (a handler could see a partial total), nor a
      `with` whose context manager might swallow an error (known not to: `torch.no_grad()`,
      `torch.autocast(...)`, `contextlib.nullcontext()`, a `tqdm(...)` progress bar);
    - the loop contains no `yield`/`await` (a suspended generator could expose the total).
    - reads of `total` inside the loop are allowed when each sits under an `if` in the loop (not
      run every step) in a plain statement or an `if`/`for`/`with` header, and the only writes
      are resets `total = <literal>` (an int count restarts at an int; a float total at a float
      or an int of at most 2**53). Before each such statement the host value is read back
      (`if total_acc is not None: total = total_acc.item()`), and a reset sets the accumulator
      to `None` so that the next step starts it afresh from the reset value: every read sees the
      value, and the type, it saw before.
    Float summands are added as `loss.detach()` so the accumulator never joins the autograd graph.
    The fix is **unsafe** where the summand is a value syncfix cannot name (a criterion, model
    or parameter passed in; `predicted.eq(y).sum()` of an unknown `predicted`), read with
    `.item()` in code that repeats. It rests on the likely fact that **a value read with
    `.item()` in code that runs every step is a one-element tensor** (of a real dtype, for a
    float total: then the total must start as a float, since its type after the loop follows the
    summand's otherwise). `syncfix trace --record` can confirm the facts for an observed fix.
    No fix when the start value is an int past 2**53 and the summand a float, when the total is
    read in the loop every step, in a `while` test or the loop's `else` (the host value is needed
    there), or when the loop writes it other than by a reset (a write after the loop, such as
`test_loss /= n`, sees the value read back; one that a loop around carries into the next start
keeps the finding). A value handed to a meter every
    step (`losses.update(loss.item(), n)`, or scaled on its way: `loss.item() * accum_steps`) is
    reported without a fix: the meter keeps its sum on the host, and only its class can change
    that.

    ```python
    running_loss = 0.0
    running_loss_acc = None
    for step, (x, y) in enumerate(loader):
        loss = criterion(model(x), y)
        ...
        if running_loss_acc is None:
            running_loss_acc = torch.full((), running_loss, dtype=torch.float64, device=loss.device)
        running_loss_acc += loss.detach().to(running_loss_acc.device)
        if step % 20 == 19:
            if running_loss_acc is not None:
                running_loss = running_loss_acc.item()
            print(f"loss {running_loss / 20:.4f}")
            running_loss = 0.0
            running_loss_acc = None
    ```

    A running total that is a tensor already, `t += x.item()`, adds the tensor instead:
    `t += x` (`x.detach()` unless `x` is provably grad-free, so the total joins no graph). `t` is
    a local name whose every binding is a tensor of dtype int64, float32 or float64 made in the
    function (or this `+=`: a tensor's `+=` works in place), or `d[key]` of a local dict display
    of such tensors that the function only reads, iterates, returns and augments item by item;
    `x` is a 0-d tensor. It is exact for these summand dtypes: an int64 total takes bool and
    integer tensors up to int64 (not uint16/32/64, which do not promote with int64; a float is
    refused either way, but the message would name its own dtype), a float64 total any real
    dtype, and a float32 total any but float64 (a 0-d float32 total adds a 0-d float64 tensor in
    float64, where a Python float is first rounded to float32). float16/bfloat16 totals are left
    alone (a Python number is added there in float32, a tensor first rounded to 16 bits), as is
    a function that gives a tensor new data (`t.data = ...`, `t.set_(...)`), which can change a
    total's dtype without rebinding it. It is **safe** when `x` is provably a 0-d tensor of such
    a dtype placed by the total's own device expression (not `"cuda"` in a module that switches
    the current device); otherwise **unsafe**: it rests on the likely fact that `x` is a 0-d
    tensor (a full reduction such as `.sum()`) of such a dtype, on the total's device or on the
    CPU (a tensor on another device cannot be added in place). Only `+=`: `-=` refuses a bool
    tensor where it takes a bool.
    """

    CODE = "SFX302"
    NAME = "accumulate-on-device"
    MESSAGE = "Running total of GPU values read to the host every iteration: one sync per iteration"
    FIX = "sometimes"
    SAFETY = ("safe", "unsafe")
    OBSERVABLE = ("floating", "one_element", "tensor", "real")
    TRIGGERS = (".item(", "float(", "int(")
    VALID = [
        # not in a loop
        "import torch\ndef f(x: torch.Tensor):\n    total = 0.0\n    total += x.cuda().float().sum().item()\n"
        "    return total\n",
    ]
    INVALID = [
        # the total is read inside the loop: reported, no fix (the loop needs the host value)
        Invalid(
            "import torch\ndef f(xs: torch.Tensor):\n    total = 0.0\n    for x in xs.cuda():\n"
            "        total += x.sum().item()\n        print(total)\n    return total\n",
            None,
        ),
        Invalid(
            "import torch\ndef f(ds):\n    total = 0.0\n    for x in torch.utils.data.DataLoader(ds):\n"
            "        total += x.cuda().float().mean().item()\n    return total\n",
            "import torch\ndef f(ds):\n    total = 0.0\n"
            '    total_acc = torch.full((), total, dtype=torch.float64, device="cuda")\n'
            "    for x in torch.utils.data.DataLoader(ds):\n"
            "        total_acc += x.cuda().float().mean().detach()\n"
            "    total = total_acc.item()\n    return total\n",
        ),
        # an int start past 2**53 with float summands: `n + x` rounds n first
        Invalid(
            "import torch\ndef f(ds):\n    total = 2**60\n    for x in torch.utils.data.DataLoader(ds):\n"
            "        total += x.cuda().float().mean().item()\n    return total\n",
            None,
        ),
    ]

    def visit_Call(self, node: cst.Call) -> None:
        """``meter.update(loss.item(), n)`` every step: reported; the meter's sum is host state."""
        func = node.func
        if not (isinstance(func, cst.Attribute) and func.attr.value == "update" and node.args):
            return
        a = self.analysis
        first = node.args[0].value
        if isinstance(first, cst.BinaryOperation):  # ``loss.item() * accum_steps`` (timm)
            first = next((side for side in (first.left, first.right) if isinstance(side, cst.Call)), first)
        if not isinstance(first, cst.Call) or not a.is_hot(node):
            return
        read = a.host_read(first) or a.likely.host_read(first)
        if read is None or read.form not in ("item", "float", "int"):
            return
        if a.likely.value(read.receiver).device is Device.CPU:
            return
        stmt = a.statement_of(node)
        # under ``if iteration % 10 == 0:`` it syncs as often as the ``if`` lets it
        head = self.MESSAGE if stmt is not None and runs_every_iteration(a, stmt) else (
            f"Running total of GPU values read to the host: one sync {how_often(a, node)}"
        )
        own = _own_meter_class(a, func.value)
        where = (
            f"the meter is `{own[0]}`, a class of this file (line {own[1]}): where its average is read "
            "only where it is shown" if own is not None else
            "where the meter is yours and its average is read only where it is shown"
        )
        self.report(
            first,
            f"{head}; no fix: the value goes to a meter (`.update`), which keeps it on the host; "
            f"{where}, pass it the tensor (`val.detach()`) and let it keep a device sum of tensors "
            "beside its sum of Python numbers, read at that point",
        )

    def visit_For(self, node: cst.For) -> None:
        self._loop(node)

    def visit_While(self, node: cst.While) -> None:
        self._loop(node)

    def _loop(self, loop: cst.For | cst.While) -> None:
        a = self.analysis
        accs: list[_Acc] = []
        for node in a.nodes_within(loop.body, cst.SimpleStatementLine):
            if a.enclosing_loop(node) is loop:
                acc = self._candidate(node)  # type: ignore[arg-type]
                if acc is not None:
                    accs.append(acc)
        if not accs:
            return
        for acc in list(accs):
            # ``total += x.item()`` into a tensor total: add the tensor (a fix of its own)
            small = acc.stmt.body[0]
            found = into_tensor_total(a, small, acc.read.node) if isinstance(small, cst.AugAssign) else None
            if found is not None:
                changes, exact = found
                fix = (
                    self.safe_fix(changes, INTO_TENSOR_TOTAL)
                    if exact
                    else self.unsafe_fix(changes, INTO_TENSOR_TOTAL + INTO_TENSOR_TOTAL_LIKELY)
                )
                self.report(acc.read.node, f"{self.MESSAGE}; `{acc.total}` is a tensor already", fix=fix)
                accs.remove(acc)
        if not accs:
            return
        for acc in accs:
            unfixable = acc.why_not  # a summand no device total keeps: said after any other reason
            acc.why_not = None
            self._check(loop, acc)
            if unfixable and acc.why_not and "for a fix" in acc.why_not:
                acc.why_not = None  # not an edit that would get a fix (FocalNet's ``x.item() ** p``)
            acc.why_not = acc.why_not or unfixable
        torch_name = a.torch_alias_at(loop)
        if any(acc.unsafe for acc in accs if acc.why_not is None):
            for acc in accs:
                if acc.why_not is None and acc.needs:
                    acc.why_not = acc.unobserved  # one fix per loop: unsafe and observed do not mix
        fixable = [acc for acc in accs if acc.why_not is None]
        for acc in accs:
            if acc.why_not == _USED_IN_LOOP:
                # the loop needs the host value where it reads it: say so (still one sync a step)
                self.report(
                    acc.read.node,
                    f"{self.MESSAGE}; no fix: `{acc.total}` is read elsewhere in the loop, so its "
                    "host value is needed there; keep it on the device and read it only where it "
                    "is shown (e.g. every N steps)",
                )
            elif acc.why_not is not None:
                self.report(acc.read.node, f"{self.MESSAGE}; no fix: {acc.why_not}")
        if not fixable:
            return
        if torch_name is None:
            for acc in fixable:
                self.report(acc.read.node, f"{self.MESSAGE}; no fix: `torch` is not imported by name")
            return
        fix = self._fix(loop, fixable, torch_name)
        for i, acc in enumerate(fixable):
            # the one fix rewrites every total of the loop; it rides on the first finding
            self.report(acc.read.node, fix=fix if i == 0 else None)

    def _candidate(self, stmt: cst.SimpleStatementLine) -> _Acc | None:
        a = self.analysis
        if len(stmt.body) != 1:
            return None
        added = added_to_total(stmt.body[0])
        if added is None:
            return None
        total, summand = added
        weight = None
        why_not = None
        weight_likely = False
        if isinstance(summand, cst.BinaryOperation) and isinstance(summand.operator, cst.Multiply):
            # ``loss.item() * x.size(0)``: a mean weighted by a batch size (either order)
            sides = ((summand.left, summand.right), (summand.right, summand.left))
            for read_side, other in sides:
                if isinstance(read_side, cst.Call) and a.is_element_count(other):
                    summand, weight = read_side, other
                    break
            else:
                for read_side, other in sides:
                    if isinstance(read_side, cst.Call) and a.is_hot(stmt) and _likely_size(a, other):
                        # ``x.size(0)`` of a batch item syncfix cannot prove a tensor
                        summand, weight, weight_likely = read_side, other, True
                        break
            if weight is None:
                # ``loss.item() * data.num_graphs``: reported, without a fix
                pair = next(((r, o) for r, o in sides if isinstance(r, cst.Call)), None)
                if pair is None:
                    return None
                summand, weight = pair
                why_not = (
                    f"the weight `{a.module.code_for_node(weight)}` is not provably a count (an int "
                    "such as `x.size(0)` or `len(batch)`), which a device total needs to be exact"
                )
        if isinstance(summand, cst.BinaryOperation) and weight is None:
            # ``loss.item() / accumulation_steps``: reported, without a fix
            call = next((side for side in (summand.left, summand.right) if isinstance(side, cst.Call)), None)
            if call is None:
                return None
            why_not = (
                f"the summand `{a.module.code_for_node(summand)}` is not a value or a value times a "
                "count; syncfix keeps only those totals on the device (add the tensor yourself: "
                "`total_t += t.detach() / n`, read once after the loop)"
            )
            summand = call
        if not isinstance(summand, cst.Call):
            return None
        read = a.host_read(summand)
        likely = False
        if read is None and a.is_hot(stmt):
            # ``total += x.item()`` of an ``x`` syncfix cannot name, in code that runs every step
            read = a.likely.host_read(summand)
            likely = read is not None
        if read is None or read.form not in ("item", "float", "int"):
            return None
        copied = read.receiver
        if isinstance(copied, cst.Call) and isinstance(copied.func, cst.Attribute) and copied.func.attr.value == "cpu" and not copied.args:
            # ``loss.cpu().item()``: the copy is part of the read; the total can keep ``loss``
            read = replace(read, receiver=copied.func.value)
        if (a.likely if likely else a).value(read.receiver).device is Device.CPU:
            return None
        if weight is not None and read.form == "int":
            return None
        return _Acc(stmt, total, read, weight=weight, likely=likely, why_not=why_not, weight_likely=weight_likely)

    def _check(self, loop: cst.For | cst.While, acc: _Acc) -> None:
        a = self.analysis.likely if acc.likely else self.analysis
        if mentions(loop, acc.total, skip=acc.stmt, header=isinstance(loop, cst.While)):
            uses = periodic_uses(a, loop, acc.total, acc.stmt)
            if uses is None:
                lines = _other_additions(a, loop, acc.total, acc.stmt)
                every_step = _read_every_step(a, loop, acc.total, acc.stmt)
                acc.why_not = _many_additions(acc.total, lines) if lines and not every_step else _USED_IN_LOOP
                return
            acc.reads, acc.resets = uses
        receiver = acc.read.receiver
        kind = a.dtype_kind(receiver)
        if kind not in ("float", "int") or (acc.read.form != "item" and acc.read.form != kind):
            if kind in ("float", "int"):
                acc.why_not = _CONVERTED[kind]
                return
            if kind is not None or acc.read.form == "int":
                acc.why_not = "the summand's dtype is not provably floating (or an integer count)"
                return
            kind = "float"
            if acc.likely:
                # a float total sums any real summand in float64, as Python does (checked below
                # that it starts as a float)
                acc.likely_needs.append(("real", receiver))
            else:
                # unknown: a float total if a recorded run shows a floating summand (observed tier)
                acc.needs.append(("floating", receiver))
                acc.unobserved = "the summand's dtype is not provably floating (or an integer count)"
        acc.kind = kind
        if not a.is_one_element(receiver):
            if acc.likely:
                acc.likely_needs.append(("one_element", receiver))
            else:
                acc.needs.append(("one_element", receiver))
                acc.unobserved = acc.unobserved or "the summand is not provably a one-element tensor"
        origin = a.device_origin(receiver)
        if origin is None or (origin[0] != '"' and origin in stored_names(loop)) or (
            origin == '"cuda"' and a.may_use_several_devices  # the current device may change
        ):
            origin = None  # the accumulator follows the summand's device (see ``_fix``)
        acc.origin = origin
        if kind == "float" and not (
            a.cuda_or_cpu_only or a.value(receiver).device in (Device.CUDA, Device.CPU, Device.CUDA_OR_CPU)
        ):
            if _MENTIONS_MPS.search(a.code) or a.other_accelerator:
                where = "this module mentions MPS" if _MENTIONS_MPS.search(a.code) else (
                    f"the project names an accelerator other than CUDA (module `{a.other_accelerator}` names it)"
                )
                acc.why_not = (
                    f"the float64 accumulator would be made on the summand's device, and {where}; "
                    "MPS has no float64; declare `devices` in [tool.syncfix.torch] "
                    "if the project runs only on CUDA and the CPU"
                )
                return
            acc.unsafe.append(
                "the float64 accumulator is made on the summand's device, which is not provably "
                "CUDA or the CPU (MPS has no float64); declare `devices` in [tool.syncfix.torch] "
                "if yours are"
            )
        fn: cst.FunctionDef | cst.Module | None = a.enclosing_function(loop)
        if fn is None and a.imported == frozenset() and a.module_name and not a.module_name.endswith("__init__"):
            fn = a.module  # a script's loop (MIRNet's ``train_denoising.py``) no project file imports
        if fn is None:
            acc.why_not = f"`{acc.total}` is a module global"
            return
        enclosing = list(ancestors_until(a, loop, fn))
        if any(isinstance(n, cst.Try) for n in enclosing):
            acc.why_not = "the loop is inside a `try` that could see a partial total"
            return
        if any(isinstance(n, cst.With) and not _plain_with(a, n) for n in enclosing):
            # a context manager that swallows an exception would expose a partial total
            acc.why_not = (
                "the loop is inside a `with` whose context manager might suppress an exception "
                "(and a handler after it see a partial total)"
            )
            return
        if origin is not None and origin[0] != '"' and not bound_before(a, origin, loop):
            acc.why_not = f"`{origin}` is not bound before the loop"
            return
        if shared_with_other_scope(self.analysis, fn, acc.total):
            acc.why_not = f"`{acc.total}` is shared with another scope"
            return
        if reads_names_by_string(a, fn):
            acc.why_not = "the function reads its names by string (`locals()`, `vars()`, `eval`), so a read of the total cannot be ruled out"
            return
        if any(a.effects(s).exits & {"yield", "await"} for s in loop.body.body):
            acc.why_not = "the loop can suspend (`yield`/`await`)"
            return
        start, acc.exact_in_float = start_value(a, fn, loop, acc.total, acc.stmt, acc.resets)
        if start is None:
            lines = _other_additions(a, fn, acc.total, acc.stmt)  # a loop around: transformer-xl's
            acc.why_not = _many_additions(acc.total, lines) if lines else (
                f"`{acc.total}` is not bound once, before the loop, to a number literal"
            )
            return
        for reset in acc.resets:
            if not reset_ok(reset, kind):
                acc.why_not = _USED_IN_LOOP
                return
        if acc.reads or acc.resets:
            # read back under the ``if`` and started afresh at a reset: the accumulator is made
            # at the first step after each (below), so a read before any step sees the host value
            acc.origin = None
        if acc.likely and ("real", receiver) in acc.likely_needs and start != "pyfloat":
            acc.why_not = (
                f"the summand's dtype is unknown, so `{acc.total}`'s type after the loop is too "
                "(start it at 0.0 for a fix)"
            )
            return
        if kind == "float" and start == "pyint" and acc.exact_in_float:
            # ``0 + x`` is ``float(0) + x``: exact on the device too, but an empty loop must leave
            # the int, so the accumulator is made at the first step and read back only if it was
            acc.origin = None
        elif start != ("pyfloat" if kind == "float" else "pyint"):
            acc.why_not = (
                f"`{acc.total}` starts as an int and sums floats (start it at 0.0 for a fix)"
                if kind == "float"
                else f"`{acc.total}` starts as a float and sums integers"
            )
            return
        if kind == "int" and not _is_count(a, receiver):
            acc.unsafe.append("int64 wraps past 2**63 where Python ints do not")
        if acc.weight is not None and kind != "float":
            acc.why_not = "a weighted count: only float totals are weighted exactly"
            return
        if acc.weight_likely and acc.weight is not None:
            code = cst.Module([]).code_for_node(acc.weight)
            acc.unsafe.append(f"`{code}` is likely an int size: syncfix cannot prove its receiver a tensor")
        if acc.likely:
            code = cst.Module([]).code_for_node(receiver)
            acc.likely_needs.insert(0, ("tensor", receiver))
            acc.unsafe.insert(
                0,
                f"syncfix cannot name `{code}`; a value read with `.item()` in code that runs "
                "every step is likely a one-element tensor"
                + (" of a real dtype" if ("real", receiver) in acc.likely_needs else ""),
            )

    def _read_back_above(self, acc: _Acc, stmt: cst.CSTNode) -> bool:
        """Does an earlier read of ``acc``'s total in ``stmt``'s block get a read-back, with no
        statement between them that adds to the total or resets it?"""
        a = self.analysis
        block = a.parent(stmt)
        siblings = list(getattr(block, "body", ()))
        if stmt not in siblings:
            return False
        here = siblings.index(stmt)
        writers = [acc.stmt, *acc.resets]
        for prev in reversed(siblings[:here]):
            if any(w is prev or any(anc is prev for anc in a.ancestors(w)) for w in writers):
                return False
            if prev in acc.reads:
                return True
        return False

    def _fix(self, loop: cst.For | cst.While, accs: list[_Acc], torch_name: str) -> Fix:
        a = self.analysis
        taken = self.__dict__.setdefault("_taken", set())
        before, after = [], []
        replace: dict[cst.CSTNode, cst.CSTNode | cst.FlattenSentinel[cst.BaseStatement]] = {}
        prefix: dict[cst.CSTNode, list[cst.BaseStatement]] = {}
        suffix: dict[cst.CSTNode, list[cst.BaseStatement]] = {}
        for acc in accs:
            name = a.fresh_name(f"{acc.total}_acc", taken)
            taken.add(name)
            for stmt in acc.reads:
                if self._read_back_above(acc, stmt):
                    continue  # an earlier statement of this block read it back, nothing added since
                prefix.setdefault(stmt, []).append(
                    cst.parse_statement(f"if {name} is not None:\n    {acc.total} = {name}.item()\n")
                )
            for stmt in acc.resets:
                suffix.setdefault(stmt, []).append(cst.parse_statement(f"{name} = None\n"))
            dtype = "float64" if acc.kind == "float" else "int64"
            receiver = acc.read.receiver
            full = f"{torch_name}.full((), {acc.total}, dtype={torch_name}.{dtype}, device={{}})"
            shape = a.one_element_shape(receiver)
            code = cst.Module([]).code_for_node(receiver)
            if isinstance(receiver, (cst.BinaryOperation, cst.Comparison, cst.UnaryOperation, cst.IfExp)):
                code = f"({code})"
            detach = ".detach()" if acc.kind == "float" else ""
            if acc.weight is not None:
                # ``n * x`` in Python is float(n) * x in float64: the same on the device in float64
                weight = cst.Module([]).code_for_node(acc.weight)
                detach = f".detach().to({torch_name}.float64) * {weight}"
            reshape = ".reshape(())" if shape != () else ""
            if acc.origin is not None:
                before.append(cst.parse_statement(f"{name} = {full.format(acc.origin)}\n"))
                after.append(cst.parse_statement(f"{acc.total} = {name}.item()\n"))
            else:
                # Device unknown: start on the summand's device at the first step; later summands
                # are moved to it (a no-op on the same device), and an empty loop leaves the total.
                before.append(cst.parse_statement(f"{name} = None\n"))
                after.append(cst.parse_statement(f"if {name} is not None:\n    {acc.total} = {name}.item()\n"))
                first: list[cst.BaseStatement] = []
                if not isinstance(receiver, cst.Name):
                    # evaluated once, as before, into a name whose device places the accumulator
                    # (detached, so the name holds no autograd graph past the step)
                    term = a.fresh_name(f"{acc.total}_term", taken)
                    taken.add(term)
                    first.append(cst.parse_statement(f"{term} = {code}{detach}\n"))
                    code, detach = term, ""
                first.append(
                    cst.parse_statement(f"if {name} is None:\n    {name} = {full.format(code + '.device')}\n")
                )
                first[0] = first[0].with_changes(leading_lines=acc.stmt.leading_lines)
                summand = f"{code}{reshape}{detach}"
                if acc.weight is not None and detach:
                    summand = f"({summand})"  # ``(x * n).to(...)``, not ``x * n.to(...)``
                new = cst.parse_statement(f"{name} += {summand}.to({name}.device)\n")
                replace[acc.stmt] = cst.FlattenSentinel([
                    *first,
                    new.with_changes(trailing_whitespace=acc.stmt.trailing_whitespace),
                ])
                continue
            code += reshape + detach
            new = cst.parse_statement(f"{name} += {code}\n")
            replace[acc.stmt] = new.with_changes(
                leading_lines=acc.stmt.leading_lines, trailing_whitespace=acc.stmt.trailing_whitespace
            )

        class R(cst.CSTTransformer):
            def on_leave(self, original_node, updated_node):
                node = replace.get(original_node, updated_node)
                if original_node not in prefix and original_node not in suffix:
                    return node
                body = list(node.nodes) if isinstance(node, cst.FlattenSentinel) else [node]
                first = body[0]
                pre = list(prefix.get(original_node, ()))
                if pre:  # the comments above the statement stay above the read-back
                    pre[0] = pre[0].with_changes(leading_lines=first.leading_lines)
                    body[0] = first.with_changes(leading_lines=[])
                return cst.FlattenSentinel([*pre, *body, *suffix.get(original_node, ())])

        new_loop = loop.visit(R())
        assert isinstance(new_loop, (cst.For, cst.While))  # only statements inside it are replaced
        before[0] = before[0].with_changes(leading_lines=loop.leading_lines)
        new_loop = new_loop.with_changes(leading_lines=[])
        names = ", ".join(f"`{acc.total}`" for acc in accs)
        description = f"Accumulate {names} on the device; read once after the loop"
        changes = {loop: cst.FlattenSentinel([*before, new_loop, *after])}
        unsafe = list(dict.fromkeys(why for acc in accs for why in acc.unsafe))
        if unsafe:
            likely = [n for acc in accs for n in acc.likely_needs]
            return self.unsafe_fix(changes, f"{description} (unsafe: {'; '.join(unsafe)})", likely)
        needs = [n for acc in accs for n in acc.needs]
        if needs:
            why = next(acc.unobserved for acc in accs if acc.unobserved)
            return self.observed_fix(
                changes,
                f"{description} (observed: a one-element floating summand)",
                needs,
                f"{self.MESSAGE}; no fix: {why}",
            )
        return self.safe_fix(changes, description)


def _plain_with(a, node: cst.With) -> bool:
    for item in node.items:
        expr = item.item
        if not isinstance(expr, cst.Call) or a.callee(expr) not in NON_SUPPRESSING_CONTEXTS:
            return False
    return True


def _likely_size(a, expr: cst.BaseExpression) -> bool:
    """``x.size(0)``, ``x.numel()`` or ``x.shape[0]`` of a name syncfix cannot name (a batch item
    of a loader it does not see): likely a tensor's size, an int. Also a name bound only to one
    (ogb: ``num_examples = pos_out.size(0)``)."""
    if isinstance(expr, cst.Name):
        values = a.binding_values(expr)
        return bool(values) and all(not isinstance(v, cst.Name) and _likely_size(a, v) for v in values)
    receiver: cst.BaseExpression | None = shape_item_of(expr)  # ``x.shape[0]``, ``x.size()[0]``
    ok = receiver is not None
    if isinstance(expr, cst.Call) and isinstance(expr.func, cst.Attribute):
        receiver, ok = expr.func.value, expr.func.attr.value in ("size", "numel") and all(
            isinstance(arg.value, cst.Integer) and arg.keyword is None for arg in expr.args
        )
    return ok and isinstance(receiver, cst.Name) and a.value(receiver).kind is Kind.UNKNOWN


# A summand of a known kind read with the other kind's conversion (``float(bool_t.sum())``).
_CONVERTED = {
    "int": "the summand is an integer count converted with `float()`; syncfix keeps a total on "
    "the device where it is read with `.item()` or `int()`",
    "float": "the summand is floating and `int()` truncates it; syncfix keeps a total on the "
    "device where it is read with `.item()` or `float()`",
}


def _is_count(a, expr: cst.BaseExpression) -> bool:
    """``mask.sum()``/``torch.sum(mask)`` of a bool tensor, or ``count_nonzero``: a count."""
    if isinstance(expr, cst.Name):
        values = a.binding_values(expr)
        return bool(values) and all(_is_count(a, v) for v in values)
    if not isinstance(expr, cst.Call):
        return False
    func = expr.func
    if isinstance(func, cst.Attribute) and func.attr.value in ("sum", "count_nonzero") and not expr.args:
        return func.attr.value == "count_nonzero" or a.dtype_kind(func.value) == "bool"
    if a.callee(expr) in ("torch.sum", "torch.count_nonzero") and len(expr.args) == 1:
        return a.callee(expr) == "torch.count_nonzero" or a.dtype_kind(expr.args[0].value) == "bool"
    return False


def _read_every_step(a, loop: cst.For | cst.While, total: str, stmt: cst.CSTNode) -> bool:
    """Does the loop use ``total`` every step outside its ``total += ...`` statements (not under
    an ``if``, as a log line every N steps is)?"""
    for name in a.structure.within(loop.body, cst.Name):
        if not isinstance(name, cst.Name) or name.value != total or any(anc is stmt for anc in a.ancestors(name)):
            continue
        aug = a.parent(name)
        if isinstance(aug, cst.AugAssign) and aug.target is name and isinstance(aug.operator, cst.AddAssign):
            continue
        line = a.statement_of(name)
        if line is None or not any(isinstance(n, cst.If) for n in ancestors_until(a, line, loop)):
            return True
    return False


def _many_additions(total: str, lines: list[int]) -> str:
    return (
        f"`{total}` is added to in more than one statement (also at line {', '.join(map(str, lines))}); "
        "syncfix keeps a total on the device where one statement accumulates it"
    )


def _other_additions(a, block: cst.CSTNode, total: str, stmt: cst.CSTNode) -> list[int]:
    """The lines of the other ``total += ...`` statements in a loop's body or a function (the
    other branch of an ``if``, transformer-xl's chunked step): what a fix of one would meet."""
    lines = []
    body = block.body if isinstance(block, (cst.For, cst.While, cst.FunctionDef)) else block
    fn = block if isinstance(block, cst.FunctionDef) else a.enclosing_function(block)
    for aug in a.structure.within(body, cst.AugAssign):
        if (
            isinstance(aug, cst.AugAssign)
            and a.enclosing_function(aug) is fn  # not a nested function's own total
            and isinstance(aug.target, cst.Name)
            and aug.target.value == total
            and isinstance(aug.operator, cst.AddAssign)
            and not any(anc is stmt for anc in a.ancestors(aug))
            and aug is not stmt
        ):
            lines.append(a.positions[aug].start.line)
    return sorted(lines)


def _own_meter_class(a: ModuleAnalysis, meter: cst.BaseExpression) -> tuple[str, int] | None:
    """The class, defined at this file's top level, that every binding of ``meter`` builds
    (WideResNet's ``losses = AverageMeter()``), with its line."""
    if not isinstance(meter, cst.Name):
        return None
    values = a.reaching_values(meter) or []
    built = {v.func.value for v in values if isinstance(v, cst.Call) and isinstance(v.func, cst.Name)}
    if len(built) != 1 or len(values) != 1:
        return None
    name = built.pop()
    for stmt in a.module.body:
        if isinstance(stmt, cst.ClassDef) and stmt.name.value == name:
            return name, a.positions[stmt].start.line
    return None
