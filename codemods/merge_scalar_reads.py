"""SFX301: several host reads of GPU scalars in a row → one ``torch.stack([...]).tolist()``."""

from __future__ import annotations

import re
from dataclasses import dataclass

import libcst as cst

from syncfix.analysis import Device, HostRead, Kind, ModuleAnalysis, target_names
from syncfix.rules import Fix, Invalid, Rule
from syncfix.walk import walk

from ._scalar_read_fixes import elements_at_once
from ._support import INDEXED_ELEMENTS, ReplaceNodes, code, indexed_base

# Receiver forms that cannot raise, so evaluating them earlier moves no exception.
_SAFE_CHAIN = {"detach", "float", "double", "clone", "sum", "long", "int", "bool"}
# Reads under these are conditional or deferred, or (walrus, assignment target) out of textual
# order: not part of a straight line. Exact node types: LibCST's node classes are final.
_NOT_STRAIGHT = frozenset({
    cst.Lambda, cst.IfExp, cst.BooleanOperation, cst.ListComp, cst.SetComp, cst.DictComp,
    cst.GeneratorExp, cst.FunctionDef, cst.ClassDef, cst.NamedExpr, cst.AssignTarget,
})

class _Reads(cst.CSTVisitor):
    """The host reads of a line of simple statements, in the order they run (one class for
    every line: a class made per call costs its creation and a cycle, thousands of times)."""

    def __init__(self, a: ModuleAnalysis, targets: set[int]) -> None:
        super().__init__()
        self.a, self.targets = a, targets
        self.found: list[HostRead] = []

    def on_visit(self, node: cst.CSTNode) -> bool:
        if type(node) in _NOT_STRAIGHT or id(node) in self.targets:
            return False
        if type(node) is cst.Call:
            read = self.a.host_read(node)
            # not a CPU tensor's, proven or likely (``torch.tensor(rows)``: host data's)
            if read is not None and self.a.likely.value(read.receiver).device is not Device.CPU:
                self.found.append(read)
        return True



@dataclass
class _Read:
    read: HostRead
    stmt: cst.SimpleStatementLine
    kind: str | None = None
    shape: tuple[int, ...] | None = None
    origin: str | None = None
    why_not: str | None = None  # why it cannot be merged
    likely_device: bool = False  # on the group's device by a likely fact only (unsafe)

    @property
    def code(self) -> str:
        return cst.Module([]).code_for_node(self.read.receiver)


_CHANGES_CURRENT_DEVICE = re.compile(r"set_device\(|cuda\.device\(")


class MergeScalarReads(Rule):
    """
    ## What it finds
    Two or more host reads of GPU tensor values (`t.item()`, `float(t)`, `int(t)`, `bool(t)`,
    `t.tolist()`) in one straight-line stretch of code: in one statement
    (`print(f"{loss.item():.3f} {acc.item():.3f}")`, `log({"loss": loss.item(), "acc": acc.item()})`)
    or in consecutive statements of one block with nothing in between that could change the
    tensors (no call that may mutate anything, no in-place write to a tensor, no rebinding of the
    names read, no control flow; a `print` to standard output writes no tensor, and a literal's
    `str.format` calls nothing, as an f-string does).

    ## Why it costs
    Every read copies one value to the host and waits for the whole CUDA stream
    (`cudaStreamSynchronize`): N reads are N round trips, each one draining the queue the GPU
    works from. One `torch.stack([...]).tolist()` costs one transfer and one sync whatever N is
    (`tolist()` is 1 sync at any size: docs/semantics.md#host-reads).

    ## Example
    ```python
    print(f"step {step} loss {loss.item():.4f} acc {acc.item():.3f}")
    ```

    ## Use instead
    ```python
    loss_value, acc_value = torch.stack([loss, acc]).tolist()
    print(f"step {step} loss {loss_value:.4f} acc {acc_value:.3f}")
    ```

    ## Fix safety
    The fix is **safe** where syncfix proves that every variable gets exactly
    the Python value and type the separate reads gave (docs/semantics.md#merging-reads shows how a
    naive merge breaks: int64 16777217 read as 16777216.0, `True` read as `1`, 0-d and shape-(1,)
    tensors that refuse to stack). Reads are merged only in groups of one *dtype kind*:
    - all floating (float16, bfloat16, float32, float64 in any mix): `torch.stack` promotes to the
      widest, which holds each value exactly, and `tolist()` gives the same Python float `item()`
      gives; `int(t)`/`bool(t)` of a float tensor become `int(v)`/`bool(v)` of that float, which
      truncate and test exactly as the tensor conversions do (NaN raises the same `ValueError`);
    - all integer (int8 to int64, uint8): promotion to int64 is exact, `tolist()` gives ints;
    - all bool: `tolist()` gives `True`/`False`.
    Reads of different kinds are merged per kind (one transfer per kind present, not one overall):
    a single transfer of mixed kinds is only exact as a byte-level pack, which is not code a person
    would write or read. When no kind has two reads, the finding comes without a fix.

    One tensor read twice in the stretch (`print(u.item(), u.item() * 2)`) is read once
    (`u_value = u.item()`) and the value used twice: **safe** whatever its dtype, shape or device,
    since nothing between the reads can change it (the preconditions below) and a Python number
    is immutable. Not for `tolist()`: each call makes a new list, and the two uses could tell.

    Consecutive elements of one tensor read in one statement (`(t[0].item(), t[1].item())`,
    YOLOX's `random_resize`) are read as one slice (`t_values = t[0:2].reshape(2).tolist()`) and
    indexed: the same Python values, but **unsafe**, since syncfix does not prove `t`'s shape and a
    tensor too short raises `RuntimeError` instead of `IndexError`.

    The other preconditions, each proven or no fix:
    - every tensor provably holds **one element** with a known shape (a full reduction
      `t.mean()`/`t.sum()`, a loss with the default/`"mean"`/`"sum"` reduction, or the legacy
      `size_average=`/`reduce=` flags that make one, `clip_grad_norm_`, `torch.tensor(3.0)`, ...;
      `loss.data` is `loss`'s own values), so no read could raise "a Tensor with N elements cannot be
      converted to Scalar"; shape-(1,) tensors are stacked as `t.reshape(())` and their `tolist()`
      becomes `[v]`;
    - every tensor provably lives on the **same device** (placed through the same device
      expression, e.g. all derived from `.to(device)`), so the stack cannot fail. Where that is
      the only fact missing, the fix is **unsafe**: it rests on the likely fact that values read
      together in code that repeats live on one device (losses of one step); where they do not,
      `torch.stack` raises. Reads of a device syncfix cannot name are merged only with each
      other;
    - the tensors are plain names (or `.detach()`/`.float()`/`.sum()`... chains of them), which
      cannot raise when read earlier (elements indexed with a loop's variable, `cu[i].item()`,
      get no fix: merged, they would still sync once per iteration; the finding says to read the
      tensor once, before the loop), and nothing between the first and the last read writes them,
      mutates anything, exits, or calls code that might (in one statement: no unknown call is
      evaluated between the reads, other than calls that take the read values as arguments);
    - values may be used between the reads only by code without side effects (they are the same
      values, read earlier); a value logged or branched on between two reads ends the stretch.
    The merged read happens where the first read was, so an asynchronous CUDA error is reported
    there. Tensor subclasses, sparse and quantized tensors are not modelled (syncfix sees none of
    them come out of the operations it proves dtypes and shapes for).
    """

    CODE = "SFX301"
    NAME = "merge-scalar-reads"
    MESSAGE = "Several host reads of GPU values in a row: one sync each"
    FIX = "sometimes"
    SAFETY = ("safe", "unsafe")
    TRIGGERS = (".item(", ".tolist(", "float(", "int(", "bool(")
    VALID = [
        # one read only
        "import torch\nx = torch.ones(3, device='cuda')\nprint(x.sum().item())\n",
        # a call that may mutate the tensors between the reads
        "import torch\ndef f(opt, loss: torch.Tensor, norm: torch.Tensor):\n"
        "    a = loss.item()\n    opt.step()\n    b = norm.item()\n",
        # CPU tensors: nothing to sync
        "import torch\na = torch.tensor(1.0)\nb = torch.tensor(2.0)\nprint(a.item(), b.item())\n",
        # a float and an int: one read of each kind, nothing exact to merge
        "import torch\nx = torch.randn(8, device='cuda')\nm = x.mean()\nk = x.argmax()\n"
        "print(m.item(), k.item())\n",
    ]
    INVALID = [
        Invalid(
            "import torch\nx = torch.randn(8, device='cuda')\nloss = x.mean()\nnorm = x.norm()\n"
            "print(f'{loss.item():.3f} {norm.item():.3f}')\n",
            "import torch\nx = torch.randn(8, device='cuda')\nloss = x.mean()\nnorm = x.norm()\n"
            "loss_value, norm_value = torch.stack([loss, norm]).tolist()\n"
            "print(f'{loss_value:.3f} {norm_value:.3f}')\n",
        ),
        # one tensor read twice: one read serves both, whatever its dtype
        Invalid(
            "import torch\ndef f(x: torch.Tensor):\n    u = x.cuda().sum()\n    print(u.item(), u.item() * 2)\n",
            "import torch\ndef f(x: torch.Tensor):\n    u = x.cuda().sum()\n    u_value = u.item()\n"
            "    print(u_value, u_value * 2)\n",
        ),
        # two lists: `tolist()` makes a new list each time, so they are not shared
        Invalid(
            "import torch\ndef f(x: torch.Tensor):\n    u = x.cuda()\n    a = u.tolist()\n    b = u.tolist()\n",
            None,
        ),
        # the dtype is unknown: a finding without a fix
        Invalid(
            "import torch\ndef f(x: torch.Tensor):\n    x = x.cuda()\n    m = x.mean()\n"
            "    k = x.sum()\n    print(m.item(), k.item())\n",
            None,
        ),
    ]

    def visit_Module(self, node: cst.Module) -> None:
        self._block(node.body)

    def visit_IndentedBlock(self, node: cst.IndentedBlock) -> None:
        self._block(node.body)

    # ---- finding stretches of reads ---------------------------------------------------------
    def _block(self, body) -> None:
        run: list[tuple[cst.SimpleStatementLine, list[HostRead]]] = []
        for stmt in body:
            if not isinstance(stmt, cst.SimpleStatementLine):
                self._close(run)
                run = []
                continue
            reads = self._reads(stmt)
            if run and self._quiet(run[-1][0]) and not self._clash(run, reads):
                run.append((stmt, reads))
            else:
                self._close(run)
                run = [(stmt, reads)] if reads else []
        self._close(run)

    def _reads(self, stmt: cst.SimpleStatementLine) -> list[HostRead]:
        a = self.analysis
        if any(isinstance(s, (cst.Assert, cst.Del, cst.Global, cst.Nonlocal, cst.Raise)) for s in stmt.body):
            return []  # an error path is no hot path; asserts may be compiled out
        if (
            len(stmt.body) == 1
            and isinstance(stmt.body[0], cst.AugAssign)
            and a.enclosing_loop(stmt) is not None
        ):
            return []  # ``total += t.item()`` in a loop: SFX302 keeps the sum on the device
        if not any(a.may_be_host_read(call) for call in a.nodes_within(stmt, cst.Call)):  # type: ignore[arg-type]
            return []  # most lines: no call that could be a host read, so no walk
        # Assignment targets run after the value: their reads are out of textual order.
        targets = {
            id(small.target) for small in stmt.body if isinstance(small, (cst.AugAssign, cst.AnnAssign))
        }
        reads = _Reads(a, targets)
        walk(stmt, reads)
        found = reads.found
        if a.nodes_within(stmt, cst.NamedExpr):
            return []  # a binding in the middle of the reads: their order matters
        if len(stmt.body) > 1 and found:
            # ``x = t.mean(); print(x.item())``: the merged read goes before the whole line
            receivers = set().union(*(a.effects(r.receiver).reads for r in found))
            if a.effects(stmt).writes & receivers:
                return []
        return found

    def _quiet(self, stmt: cst.SimpleStatementLine) -> bool:
        """Nothing in ``stmt`` can change a tensor, exit, or run unknown code."""
        a = self.analysis
        fx = a.effects(stmt)
        if fx.exits or fx.may_mutate_anything and not all(a.is_pure_call(c) or _prints(a, c) for c in fx.calls):
            return False
        return all(self._not_tensor_name(stmt, name) for name in fx.inplace)

    def _not_tensor_name(self, stmt: cst.CSTNode, name: str) -> bool:
        a = self.analysis
        found = [n for n in a.nodes_within(stmt, cst.Name) if n.value == name]  # type: ignore[attr-defined]
        return bool(found) and all(a.value(n).kind in (Kind.OTHER, Kind.NUMBER) for n in found)

    def _clash(self, run, reads: list[HostRead]) -> bool:
        """Does a statement of ``run`` rebind a name that ``reads`` read?"""
        names = set()
        for r in reads:
            names |= self.analysis.effects(r.receiver).reads
        return any(self.analysis.effects(s).writes & names for s, _ in run)

    def _close(self, run) -> None:
        while run and not run[-1][1]:
            run.pop()  # trailing statements without reads
        while run and not self._order_ok(run[-1][0], run[-1][1]):
            run.pop()
            while run and not run[-1][1]:
                run.pop()
        if sum(len(r) for _, r in run) >= 2:
            self._handle(run)

    def _order_ok(self, stmt: cst.SimpleStatementLine, reads: list[HostRead]) -> bool:
        """In the last statement, no impure call runs between the reads (or before them)."""
        a = self.analysis
        last = max(reads, key=lambda r: _start(a, r.node)).node
        enclosing = set(map(id, a.ancestors(last)))
        read_nodes = {id(r.node) for r in reads}
        for call in a.effects(stmt).calls:
            if id(call) in enclosing or id(call) in read_nodes:
                continue  # runs after its arguments are read, or is a read
            if _start(a, call) < _start(a, last) and not a.is_pure_call(call):
                return False
        return True

    # ---- the fix ----------------------------------------------------------------------------
    def _handle(self, run) -> None:
        a = self.analysis
        items = [self._describe(r, stmt) for stmt, reads in run for r in reads]
        groups: dict[tuple[str, str], list[_Read]] = {}
        for item in items:
            if item.why_not is None:
                groups.setdefault((item.kind, item.origin), []).append(item)  # type: ignore[arg-type]
        merged = [g for g in groups.values() if len({i.code for i in g}) >= 2]
        proven = [g for g in merged if not any(i.likely_device for i in g)]
        if proven:
            merged = proven  # a safe fix for what is proven; never an unsafe one bundled with it
        first = items[0].read.node
        others = tuple(i.read.node for i in items[1:])  # with no fix, SFX105 says nothing more of them
        torch_name = a.torch_alias_at(first)
        n = len(items)
        kinds = [i.kind for i in items]
        if not merged and None not in kinds and len(set(kinds)) == len(kinds):
            return  # one read per dtype kind: nothing to merge exactly, nothing to report
        if not merged or torch_name is None:
            reuse = self._reuse(run, items)
            if reuse is not None:
                fix, reused = reuse
                self.report(first, f"{n} host reads in a row, one sync each", fix=fix, covers=_others(first, reused))
                return
            stmts = {id(i.stmt) for i in items}
            elements = elements_at_once(a, first, items[0].stmt) if len(stmts) == 1 else None
            if elements is not None:  # ``(t[0].item(), t[1].item())``: one slice, read once
                changes, what = elements
                self.report(first, f"{n} host reads in a row, one sync each", fix=self.unsafe_fix(changes, what))
                return
            why = next((i.why_not for i in items if i.why_not), None) or (
                "the tensors are not provably on one device"
                if len(set(kinds)) < len(kinds)  # a kind read twice, from two devices
                else "their dtypes differ in kind (float/int/bool); merging them exactly would "
                "need one transfer per kind"
            )
            if torch_name is None:
                why = "`torch` is not imported by name in this module"
            self.report(first, f"{n} host reads in a row, one sync each; no fix: {why}", covers=others)
            return
        fixed = [i.read.node for g in merged for i in g]
        message = f"{n} host reads in a row, one sync each"
        left = [i for i in items if i.read.node not in fixed]
        if left:  # GAN logs: ``d_loss``, ``g_loss`` merged, the scores read apart
            why = next((i.why_not for i in left if i.why_not), None) or "another dtype kind or device"
            message += f"; the fix merges {len(fixed)} of them, not {', '.join(f'`{i.code}`' for i in left)} ({why})"
        self.report(first, message, fix=self._fix(run, merged, torch_name), covers=_others(first, fixed))

    def _reuse(self, run, items: list[_Read]) -> tuple[Fix, list[cst.Call]] | None:
        """The same tensor read twice in the stretch (``print(u.item(), u.item() * 2)``): nothing
        between the reads can change it, so one read serves both, whatever its dtype or device.
        Only scalar forms (``item()``, ``float()``...): a list from ``tolist()`` is a new object
        each time."""
        a = self.analysis
        by_code: dict[tuple[str, str], list[_Read]] = {}
        for item in items:
            if item.read.form != "tolist" and _safe_receiver(item.read.receiver):
                by_code.setdefault((item.code, item.read.form), []).append(item)
        twice = [group for group in by_code.values() if len(group) >= 2]
        if not twice:
            return None
        taken = self.__dict__.setdefault("_taken", set())
        new_stmts: list[cst.BaseStatement] = []
        replace: dict[cst.CSTNode, cst.BaseExpression] = {}
        for group in twice:
            name = a.fresh_name(_base_name(group[0].read.receiver), taken)
            taken.add(name)
            new_stmts.append(cst.parse_statement(f"{name} = {a.module.code_for_node(group[0].read.node)}\n"))
            for item in group:
                replace[item.read.node] = cst.Name(name)
        changes = _rewrite_run(run, {id(i.stmt) for g in twice for i in g}, replace, new_stmts)
        names = ", ".join(f"`{g[0].code}`" for g in twice)
        reused = [i.read.node for g in twice for i in g]
        return self.safe_fix(changes, f"Read {names} once and use the value twice"), reused

    def _describe(self, read: HostRead, stmt: cst.SimpleStatementLine) -> _Read:
        a = self.analysis
        item = _Read(read, stmt)
        if not _safe_receiver(read.receiver):
            base = _loop_indexed(a, read.receiver)
            item.why_not = (
                # merged, the reads would still sync once per iteration (mamba's varlen mapping)
                INDEXED_ELEMENTS.format(code(a, base)) if base is not None
                else "a tensor is computed where it is read; bind it to a name first (`v = ...`) and read "
                "the name, then the reads can be merged"
            )
            return item
        item.shape = a.one_element_shape(read.receiver)
        if item.shape is None:
            item.why_not = "a tensor is not provably one-element"
            return item
        item.kind = a.dtype_kind(read.receiver)
        if item.kind is None:
            item.why_not = "a tensor's dtype is not provably floating, integer or bool"
            return item
        item.origin = a.device_origin(read.receiver)
        if item.origin is None:
            # likely: values read together in one stretch of code live on one device
            item.origin, item.likely_device = "", True
        elif item.origin.strip("'\"") == "cuda" and _CHANGES_CURRENT_DEVICE.search(a.code):
            # "cuda" is the current device, which ``set_device``/``with torch.cuda.device(i):``
            # may change between two placements
            item.likely_device = True
        return item

    def _fix(self, run, groups: list[list[_Read]], torch_name: str) -> Fix:
        a = self.analysis
        taken = self.__dict__.setdefault("_taken", set())  # names claimed by this pass's fixes
        new_stmts: list[cst.SimpleStatementLine] = []
        replace: dict[cst.CSTNode, cst.BaseExpression] = {}
        for group in groups:
            names: dict[str, str] = {}
            elements = []
            for item in group:
                if item.code not in names:
                    names[item.code] = a.fresh_name(_base_name(item.read.receiver), taken)
                    taken.add(names[item.code])
                    elements.append(_stack_element(item))
                replace[item.read.node] = _replacement(item, names[item.code])
            targets = ", ".join(names.values())
            code = f"{targets} = {torch_name}.stack([{', '.join(elements)}]).tolist()\n"
            new_stmts.append(cst.parse_statement(code))  # type: ignore[arg-type]
        changes = _rewrite_run(run, {id(i.stmt) for g in groups for i in g}, replace, new_stmts)
        count = sum(len(g) for g in groups)
        what = f"Read {count} values with {len(groups)} transfer(s)"
        if any(i.likely_device for g in groups for i in g):
            return self.unsafe_fix(changes, what + _LIKELY_DEVICE)
        return self.safe_fix(changes, what)


_LIKELY_DEVICE = (
    " (unsafe: syncfix cannot name the tensors' device; values read together in code that "
    "repeats are likely on one, and where they are not `torch.stack` raises)"
)


def _prints(a: ModuleAnalysis, call: cst.Call) -> bool:
    """``print(...)`` to standard output: it writes no tensor (a line logged between two reads
    leaves the tensors as they were)."""
    return a.callee(call) == "builtins.print" and all(arg.keyword is None or arg.keyword.value != "file" for arg in call.args)


def _others(first: cst.CSTNode, reads: list[cst.Call]) -> tuple[cst.CSTNode, ...]:
    """The reads a fix rewrites besides the finding's own: SFX105 says nothing more of them."""
    return tuple(r for r in reads if r is not first)


def _rewrite_run(run, touched: set[int], replace: dict, new_stmts: list) -> dict:
    """The changes: reads replaced in the statements of ``run`` they occur in, and ``new_stmts``
    (the reads done once) inserted before the first of them."""
    changes: dict = {}
    first = next(s for s, _ in run if id(s) in touched)
    for stmt, _ in run:
        if id(stmt) not in touched:
            continue
        new = stmt.visit(ReplaceNodes(replace))
        if stmt is first:
            new_stmts[0] = new_stmts[0].with_changes(leading_lines=stmt.leading_lines)
            changes[stmt] = cst.FlattenSentinel([*new_stmts, new.with_changes(leading_lines=[])])
        else:
            changes[stmt] = new
    return changes


def _start(a: ModuleAnalysis, node: cst.CSTNode) -> int:
    """Source order of a read (pre-order rank: the same order as start positions for the reads
    of one statement, without resolving positions for the whole file)."""
    return a.structure.order.get(node, -1)


def _loop_indexed(a: ModuleAnalysis, receiver: cst.BaseExpression) -> cst.BaseExpression | None:
    """The tensor ``receiver`` indexes with the variable of a ``for`` around it
    (``cu_seqlens[i].item()`` in ``for i in range(n):``), named briefly; else None."""
    for loop in a.ancestors(receiver):
        if isinstance(loop, (cst.FunctionDef, cst.Lambda, cst.ClassDef)):
            return None
        if isinstance(loop, cst.For):
            base = indexed_base(a, receiver, {n.value for n in target_names(loop.target)})
            if base is not None and (a.is_tensor(base) or a.likely.is_tensor(base)) and len(code(a, base)) <= 40:
                return base
    return None


def _safe_receiver(expr: cst.BaseExpression) -> bool:
    """A name, through ``.detach()``-like calls and ``.data`` (the same values, read once)."""
    while isinstance(expr, cst.Call) or isinstance(expr, cst.Attribute) and expr.attr.value == "data":
        if isinstance(expr, cst.Attribute):
            expr = expr.value
            continue
        func = expr.func
        if expr.args or not isinstance(func, cst.Attribute) or func.attr.value not in _SAFE_CHAIN:
            return False
        expr = func.value
    return isinstance(expr, cst.Name)


def _base_name(expr: cst.BaseExpression) -> str:
    while isinstance(expr, cst.Call) and isinstance(expr.func, cst.Attribute) or isinstance(expr, cst.Attribute):
        expr = expr.func.value if isinstance(expr, cst.Call) else expr.value  # type: ignore[attr-defined]
    return f"{expr.value}_value" if isinstance(expr, cst.Name) else "value"


def _stack_element(item: _Read) -> str:
    return item.code if item.shape == () else f"{item.code}.reshape(())"


def _replacement(item: _Read, name: str) -> cst.BaseExpression:
    value: cst.BaseExpression = cst.Name(name)
    form = item.read.form
    if form == "tolist":
        for _ in item.shape or ():
            value = cst.List([cst.Element(value)])
    elif form in ("float", "int", "bool") and item.kind != form:
        value = cst.Call(cst.Name(form), [cst.Arg(value)])
    return value
