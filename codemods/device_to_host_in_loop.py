"""SFX105: a blocking device-to-host read (``.cpu()``, ``.tolist()``, ``.to("cpu")``) in a loop."""

from __future__ import annotations

import libcst as cst

from syncfix.analysis import Device, Kind, keyword
from syncfix.rules import Invalid, Rule

from ._support import UNPLACED, unplaced_tensor

# Calls that only collect a value for later (the loop does not look at it now).
_COLLECTORS = {"append", "extend", "put", "put_nowait"}
# Applied to the copy without reading its bytes (``.numpy()``/``.tolist()``/``.float()`` read them).
_NO_READ = {"detach"}


_SCALAR = "GPU value read on the host where code repeats: the CPU waits for all queued GPU work"
_TOTAL_HINT = (
    "; no fix: a running total kept in a container or attribute; keep it a device tensor "
    "(`counts[k] = counts[k] + t.sum()`) and read it only where it is shown"
)
_SCALAR_HINT = (
    "; no fix: Python uses the value here. Read it less often, compute it from what the host "
    "already has (sizes, lengths, positions it set), or keep it a tensor: if it is only logged "
    "later, read it at the log line"
)
_HANDLED_CONTEXTS = (
    cst.If, cst.While, cst.Assert, cst.IfExp, cst.BooleanOperation, cst.ListComp, cst.SetComp,
    cst.DictComp, cst.GeneratorExp, cst.FormattedString, cst.Lambda, cst.Comparison,
)


def _owned_elsewhere(a, node: cst.Call, stmt: cst.SimpleStatementLine, proven: bool) -> bool:
    """Is this read in a context another rule reports (see ``_scalar_read``)? SFX301 merges
    reads it can prove (``proven``); of reads it cannot, only the statement's first is reported."""
    for anc in a.ancestors(node):
        if anc is stmt:
            break
        if isinstance(anc, _HANDLED_CONTEXTS):
            return True
        if isinstance(anc, cst.Call) and anc is not node and (
            a.is_logging_call(anc)
            or (isinstance(anc.func, cst.Attribute) and anc.func.attr.value in ("update", "append", "add_scalar"))
        ):
            return True
    small = stmt.body[0]
    if isinstance(small, cst.AugAssign) and isinstance(small.target, cst.Name):
        return True  # a running total in a name: SFX302's
    in_stmt = a.likely.host_read_syncs(stmt, any_device=True)
    if len(in_stmt) > 1:
        if proven:
            return True  # several reads in one statement: SFX301's
        first = min(in_stmt, key=lambda n: a.structure.order.get(n, -1))
        return first is not node  # one finding for the statement
    if not proven:
        return False
    reads = a.host_read_syncs
    neighbours = [*(a.statements_before(stmt) or [])[:1], *(a.statements_after(stmt) or [])[:1]]
    for other in neighbours:
        if isinstance(other, cst.SimpleStatementLine) and reads(other, any_device=True):
            return True  # reads in a row: SFX301 merges them
    return False


class DeviceToHostInLoop(Rule):
    """
    ## What it finds
    In a loop, a copy of a CUDA tensor to the host that blocks: `x.cpu()`, `x.to("cpu")`,
    `x.tolist()` (and so `x.cpu().numpy()`, `x.detach().cpu().tolist()`). The tensor must be
    provably on CUDA, or provably CUDA-or-CPU. `x.numpy()` on a CUDA tensor raises, so it is
    reported through the `.cpu()` before it.
    Where the code repeats (a loop body, a step-like function or a function called from one), a
    tensor whose device syncfix cannot name (a parameter's `.grad`, a model output passed in) is
    reported too, as likely on the GPU, with no fix: the message says the device is unknown.
    Where the code repeats, a scalar read `v = t.item()` (or `t.item()` passed to a call, used
    in a slice, added to a total kept in a container: `counts["raw"] += t.sum().item()`) is
    reported as well, unless another rule owns it: a running total in a name (SFX302), a log
    line (SFX401/SFX402), a branch or check (SFX201-SFX206), a comprehension (SFX303), or reads
    in a row that SFX301 can merge (of reads it cannot, one finding per statement).

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
    No fix: the CPU reads the value, so the copy has to finish first. The message says when the
    value is only *collected* in the loop (appended, stored into a container): then
    `.to("cpu", non_blocking=True)` plus an event recorded after the copies and waited on before
    the first read removes the per-iteration wait. Reading a non-blocking device-to-host result
    before that wait may see data the copy has not written yet (docs/semantics.md#host-reads),
    which is why syncfix never rewrites it.
    """

    CODE = "SFX105"
    NAME = "device-to-host-in-loop"
    MESSAGE = "Blocking device-to-host copy in a loop: the CPU waits for all queued GPU work"
    FIX = "never"
    SAFETY = ()
    TRIGGERS = (".cpu(", ".tolist(", ".to(", ".item(")
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
    ]

    def visit_Call(self, node: cst.Call) -> None:
        func = node.func
        if isinstance(func, cst.Attribute) and func.attr.value == "item" and not node.args:
            self._scalar_read(node)
            return
        if not isinstance(func, cst.Attribute) or func.attr.value not in ("cpu", "to", "tolist"):
            return
        a = self.analysis
        if a.enclosing_loop(node) is None:
            return
        receiver = a.value(func.value)
        unplaced = not (receiver.is_tensor and receiver.device in (Device.CUDA, Device.CUDA_OR_CPU))
        if unplaced and not unplaced_tensor(a, func.value):
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
            where = UNPLACED
        if self._collected(node):
            hint = (
                "; the value is only collected here: `.to(\"cpu\", non_blocking=True)`, an event "
                "recorded after the loop's copies and `event.synchronize()` before the first read "
                "would remove the per-iteration wait"
            )
        else:
            hint = (
                "; the CPU reads the value here, so it must wait (if the value is only needed "
                "later, collect the tensor and convert it after one event wait)"
            )
        self.report(node, self.MESSAGE + where + hint)

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
        receiver = a.value(read.receiver)
        proven = receiver.is_tensor and receiver.device in (Device.CUDA, Device.CUDA_OR_CPU)
        if not proven and not unplaced_tensor(a, read.receiver) and not (read_as_tensor and a.is_hot(node)):
            return
        stmt = a.statement_of(node)
        if stmt is None or not isinstance(stmt, cst.SimpleStatementLine) or _owned_elsewhere(a, node, stmt, proven):
            return
        where = "" if receiver.device is Device.CUDA else (UNPLACED if not proven else " (when the tensor is on CUDA)")
        total = isinstance(stmt.body[0], cst.AugAssign)  # ``counts["raw"] += t.sum().item()``
        self.report(node, _SCALAR + where + (_TOTAL_HINT if total else _SCALAR_HINT))

    def _collected(self, node: cst.Call) -> bool:
        """Is the copied value only stored away (appended, put in a container) at this point?"""
        a = self.analysis
        cur: cst.CSTNode = node
        parent = a.parent(cur)
        while (  # ``x.cpu().detach()`` is still just the copy
            isinstance(parent, cst.Attribute)
            and parent.attr.value in _NO_READ
            and isinstance(call := a.parent(parent), cst.Call)
        ):
            cur = call
            parent = a.parent(cur)
        if isinstance(parent, cst.Arg):
            call = a.parent(parent)
            return (
                isinstance(call, cst.Call)
                and isinstance(call.func, cst.Attribute)
                and call.func.attr.value in _COLLECTORS
            )
        if isinstance(parent, cst.Assign):
            return all(isinstance(t.target, cst.Subscript) for t in parent.targets)
        return False

