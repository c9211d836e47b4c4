"""SFX404: GPU values read into a list every iteration → kept on the device, read once after the loop."""

from __future__ import annotations

import re

import libcst as cst

from syncfix.analysis import Device, Kind
from syncfix.rules import Invalid, Rule
from syncfix.walk import walk

from ._collected_lists import append_of, list_problem, uses_of
from ._memory import aliases_in, held_elsewhere
from ._support import is_backward_of, measures_itself, per_element_read


class ReadAfterLoop(Rule):
    """
    ## What it finds
    A loop whose body appends values read from GPU tensors to a list (`losses.append(loss.item())`,
    `log.append(f"loss {loss.item():.4f}")`), where the list is a local `[]` that nothing reads
    until the loop has ended: every iteration waits for the GPU only to fill a list nobody looks
    at yet.

    ## Why it costs
    Each `.item()` copies the value to the host and waits for all GPU work queued before it
    (docs/semantics.md#host-reads): one sync per read, every iteration, and the CPU cannot queue
    the next iteration's work while it waits.

    ## Example
    ```python
    losses = []
    for x, y in batches:
        loss = F.cross_entropy(model(x), y)
        losses.append(f"loss {loss.item():.4f}")
        opt.zero_grad()
        loss.backward()
        opt.step()
    return losses
    ```

    ## Use instead
    ```python
    losses = []
    losses_values = []
    for x, y in batches:
        loss = F.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses_values.append(loss.detach())
    for loss_value in torch.stack(losses_values).tolist() if losses_values else []:
        losses.append(f"loss {loss_value:.4f}")
    return losses
    ```
    Each iteration keeps its values as one small device tensor (one `torch.stack` of the values it
    reads); one transfer after the loop reads them all, and the list is filled as before, in the
    same order, with the same Python values.

    ## Fix safety
    The fix is **safe** only when syncfix proves what docs/semantics.md#reading-a-lists-values-after-the-loop
    requires: the list cannot be seen before the loop ends, and the values cannot change between
    the append and the end of the iteration:
    - the list is a local name bound once, to `[]`, before the loop; in the loop it is only
      appended to, by statements at the top of the loop body, and nothing else in the function
      uses it before the loop; no `try` surrounds the loop, the function is no generator, and the
      loop has no `else`, and the function reads no names by string (`locals()`, `eval`). So the list is only ever read after the loop, when the rewrite has
      filled it (if the loop raises, the list is lost either way);
    - each append is a read (`t.item()`) of a name of a *fresh* tensor (a result of operations,
      not a parameter or a view of one, and held by no other code: not given to an optimizer,
      kept in a container or on an object, nor a global), or an f-string, tuple or list of such reads and literals,
      computing nothing with them and formatting them only with specs every number takes
      (`.4f`, `e`, `%`), so rebuilding it after the loop cannot raise there (`1 / v`, `{v:d}`
      could);
      the read tensors are provably 0-d, and grouped by dtype kind (floating, integer, bool) and
      device expression (a literal, or a name the loop does not rebind), one store per group, so
      one `torch.stack(...).tolist()` of each store reads back exactly the Python numbers
      `.item()` gives;
    - from the first append to the end of the body nothing can skip the rest of the iteration
      (`break`, `continue`, `return`, `raise`), and no read name is rebound, written in place, or
      passed to a call that may change it (`loss.backward()` is allowed); the kept tensor lives
      until the loop ends, so no other name for its memory (`ema = loss.detach()`, `box =
      [loss]`, bound anywhere in the loop) is written in place in any statement of the loop, in
      this iteration or a later one;
    - the loop times no step (two clock reads on every iteration, or one it collects) and reads
      no memory counter (a benchmark's reads are deliberate; a step's start time shown every N
      steps makes no benchmark).
    The one cost, stated: the loop holds one small tensor per iteration on the device (the
    allocator rounds each to 512 bytes) until it ends, as the list held one Python value per
    iteration. Asynchronous CUDA errors surface at the read after the loop instead of in the
    iteration. Otherwise there is no fix: the finding says what stands in the way.
    """

    CODE = "SFX404"
    NAME = "read-after-loop"
    MESSAGE = "GPU values read into a list every iteration; the list is read only after the loop"
    FIX = "sometimes"  # "always" | "sometimes" | "never"
    SAFETY = ("safe",)
    TRIGGERS = (".append(",)
    VALID = [
        # the list is read in the loop: its values are needed there
        "import torch\ndef f(xs: torch.Tensor):\n    out = []\n    for x in xs.cuda():\n"
        "        out.append(x.sum().item())\n        print(out[-1])\n    return out\n",
        # a CPU tensor: nothing to wait for
        "import torch\ndef f(n):\n    out = []\n    for i in range(n):\n"
        "        t = torch.ones(3).sum()\n        out.append(t.item())\n    return out\n",
    ]
    INVALID = [
        Invalid(
            "import torch\ndef f(xs: torch.Tensor):\n    out = []\n    for x in xs.cuda():\n"
            "        s = x.float().sum()\n        out.append(s.item())\n    return out\n",
            "import torch\ndef f(xs: torch.Tensor):\n    out = []\n    out_values = []\n"
            "    for x in xs.cuda():\n        s = x.float().sum()\n        out_values.append(s.detach())\n"
            "    for s_value in torch.stack(out_values).tolist() if out_values else []:\n"
            "        out.append(s_value)\n    return out\n",
        ),
        # a `continue` after the append could skip the record: finding only
        Invalid(
            "import torch\ndef f(xs: torch.Tensor):\n    out = []\n    for x in xs.cuda():\n"
            "        s = x.float().sum()\n        out.append(s.item())\n        if s.dim():\n            continue\n"
            "    return out\n",
            None,
        ),
    ]

    def visit_For(self, node: cst.For) -> None:
        self._loop(node)

    def visit_While(self, node: cst.While) -> None:
        self._loop(node)

    # ------------------------------------------------------------------------------------------
    def _loop(self, loop: cst.For | cst.While) -> None:
        a = self.analysis
        if not isinstance(loop.body, cst.IndentedBlock) or not a.repeats_here(loop.body):
            return
        body = list(loop.body.body)
        by_list: dict[str, list[tuple[int, cst.Call]]] = {}
        for i, stmt in enumerate(body):
            append = append_of(stmt)
            if append is not None and self._gpu_reads(append.args[0].value):
                by_list.setdefault(append.func.value.value, []).append((i, append))  # type: ignore[attr-defined]
        for name, appends in by_list.items():
            if list_problem(a, loop, name, [c for _, c in appends]) is not None:
                continue  # not a list filled here and read after the loop: SFX105 reports the reads
            plan, why = self._plan(loop, body, name, appends)
            first = self._gpu_reads(appends[0][1].args[0].value)[0]
            message = self.MESSAGE if self._read_after(loop, name) else _UNREAD.format(name)
            if plan is None:
                if all(per_element_read(a, r) for _, c in appends for r in self._gpu_reads(c.args[0].value)):
                    continue  # the elements of a loop over a tensor: SFX303 reports them
                self.report(first, f"{message}; no fix: {why}")
            else:
                fix = self.safe_fix(plan, "Keep the values on the device; read them once after the loop")
                self.report(first, message, fix=fix)

    def _read_after(self, loop: cst.For | cst.While, name: str) -> bool:
        """Is the list (a local :meth:`_list_problem` accepted) named anywhere after the loop?"""
        a = self.analysis
        fn = a.enclosing_function(loop)
        end = a.positions[loop].end
        return fn is not None and any(
            (a.positions[use].start.line, a.positions[use].start.column) > (end.line, end.column)
            for use in uses_of(fn, name)
        )

    def _gpu_reads(self, expr: cst.BaseExpression) -> list[cst.Call]:
        a = self.analysis
        found: list[cst.Call] = []

        class V(cst.CSTVisitor):
            def visit_Call(self, call: cst.Call) -> None:
                read = a.host_read(call)
                if read is not None and a.value(read.receiver).device is not Device.CPU and a.is_tensor(read.receiver):
                    found.append(call)

        walk(expr, V())
        return found

    # ---- can the reads wait until the end of the iteration -------------------------------------
    def _plan(self, loop, body, name: str, appends: list[tuple[int, cst.Call]]):
        a = self.analysis
        torch = a.torch_alias_at(loop)
        if torch is None:
            return None, "the module does not `import torch`"
        if measures_itself(a, loop):
            return None, "the loop times its steps or reads a memory counter (a benchmark's reads are deliberate)"
        first = appends[0][0]
        for stmt in body[first:]:
            if a.effects(stmt).exits:
                return None, "a statement after the append can leave the iteration early"
        receivers: list[cst.Name] = []
        for i, call in appends:
            expr = call.args[0].value
            problem = _template_problem(a, expr)
            if problem:
                return None, problem
            for read in self._gpu_reads(expr):
                recv = a.host_read(read).receiver  # type: ignore[union-attr]
                if not isinstance(recv, cst.Name) or not (a.value(recv).kind is Kind.TENSOR and a.value(recv).fresh):
                    return None, "it reads a tensor that is not a plain name of a fresh tensor"
                scope = a.enclosing_function(loop)
                if scope is not None and held_elsewhere(a, scope, {recv.value}):
                    return None, f"other code holds `{recv.value}` (an optimizer given it updates it in place)"
                if not (isinstance(read.func, cst.Attribute) and read.func.attr.value == "item" and not read.args):
                    return None, "only `.item()` reads are kept on the device"
                moved = {j for j, _ in appends}
                # the stored tensor lives until the loop ends: no write to its memory, through
                # another name for it either (``ema = loss.detach(); ema.mul_(0.9)``), in any
                # later statement or iteration
                shared = aliases_in(a, loop, {recv.value})
                for later in (stmt for j, stmt in enumerate(body) if j > i and j not in moved):
                    fx = a.effects(later)
                    if shared & (fx.writes | fx.inplace) or (
                        fx.may_mutate_anything and shared & fx.reads and not is_backward_of(later, shared)
                    ):
                        return None, f"`{recv.value}` may change before the loop ends"
                for earlier in (stmt for j, stmt in enumerate(body) if j < i and j not in moved):
                    fx = a.effects(earlier)  # a later iteration's, before its own append
                    others = shared - {recv.value}
                    if shared & fx.inplace or (fx.may_mutate_anything and others & fx.reads):
                        return None, f"`{recv.value}` may change before the loop ends"
                receivers.append(recv)
        if any(not a.is_zero_dim(r) for r in receivers):
            return None, "a read tensor is not provably 0-d"
        written = a.effects(loop).writes
        groups: dict[tuple[str, str], list[str]] = {}
        for r in receivers:
            kind, origin = a.dtype_kind(r), a.device_origin(r)
            unknown_device = origin is None or origin in written or origin == '"cuda"' and a.may_use_several_devices
            if kind is None:  # every fact it lacks, so that following the advice gets the fix
                also = ", and it is not provably on one device in every iteration" if unknown_device else ""
                return None, f"`{r.value}`'s dtype is not provably floating, integer or bool{also}"
            if unknown_device or origin is None:
                return None, f"`{r.value}` is not provably on one device in every iteration"
            names = groups.setdefault((kind, origin), [])
            if r.value not in names:
                names.append(r.value)
        return self._rewrite(loop, body, name, appends, list(groups.values()), torch), None

    def _rewrite(self, loop, body, name, appends, groups: list[list[str]], torch):
        """One store per group of reads of one dtype kind on one device (stacked exactly); the
        appends replayed after the loop from one `.tolist()` of each store."""
        a = self.analysis
        taken: set[str] = set()

        def fresh(base: str) -> str:
            new = a.fresh_name(base, taken)
            taken.add(new)
            return new

        stores = [fresh(f"{name}_values") for _ in groups]
        value_of = {r: fresh(f"{r}_value") for group in groups for r in group}
        records = [
            f"{store}.append({group[0]}.detach())\n"
            if len(group) == 1
            else f"{store}.append({torch}.stack([{', '.join(group)}]).detach())\n"
            for store, group in zip(stores, groups, strict=True)
        ]
        replayed: list[str] = []
        for _, call in appends:
            mapping: dict[cst.CSTNode, str] = {
                read: value_of[a.host_read(read).receiver.value]  # type: ignore[union-attr]
                for read in self._gpu_reads(call.args[0].value)
            }
            new_arg = call.args[0].value.visit(_ReplaceReads(mapping))
            replayed.append(f"    {name}.append({a.module.code_for_node(new_arg)})\n")
        targets = [", ".join(value_of[r] for r in group) for group in groups]
        if len(groups) == 1:
            source = f"{torch}.stack({stores[0]}).tolist()"
            target = targets[0]
        else:
            source = "zip(" + ", ".join(f"{torch}.stack({s}).tolist()" for s in stores) + ")"
            target = ", ".join(t if len(g) == 1 else f"({t})" for t, g in zip(targets, groups, strict=True))
        replay = cst.parse_statement(f"for {target} in {source} if {stores[0]} else []:\n" + "".join(replayed))
        removed = {id(body[i]) for i, _ in appends}
        kept = [stmt for stmt in body if id(stmt) not in removed]
        kept += [cst.parse_statement(r) for r in records]
        new_loop = loop.with_changes(body=loop.body.with_changes(body=kept), leading_lines=())
        # the stores start empty each time the loop starts (an outer loop may run it again)
        inits = [cst.parse_statement(f"{store} = []\n") for store in stores]
        inits[0] = inits[0].with_changes(leading_lines=loop.leading_lines)
        changes = {loop: cst.FlattenSentinel([*inits, new_loop, replay])}
        return changes


class _ReplaceReads(cst.CSTTransformer):
    def __init__(self, mapping: dict[cst.CSTNode, str]) -> None:
        self.mapping = mapping

    def on_leave(self, original, updated):
        new = self.mapping.get(original)
        return cst.Name(new) if new is not None else updated


_UNREAD = (
    "GPU values read into a list every iteration; nothing reads the list (`{}`) afterwards, so "
    "the reads are needless: drop them with the list, or keep the tensors until something "
    "reads them"
)


def _template_problem(a, expr: cst.BaseExpression) -> str | None:
    """Is ``expr`` built of reads and literals only (so it can be rebuilt after the loop)?"""
    problem: list[str] = []

    class V(cst.CSTVisitor):
        def visit_Call(self, call: cst.Call) -> bool:
            if a.host_read(call) is None:
                problem.append("the appended value calls more than reads")
            return False  # the read's receiver is checked by the caller

        def visit_Name(self, node: cst.Name) -> None:
            problem.append("the appended value uses names other than the values read")

        def visit_Attribute(self, node: cst.Attribute) -> bool:
            problem.append("the appended value uses names other than the values read")
            return False

        def visit_Subscript(self, node: cst.Subscript) -> bool:
            problem.append("the appended value indexes")
            return False

        def visit_Lambda(self, node: cst.Lambda) -> bool:
            problem.append("the appended value defers code")
            return False

        def visit_NamedExpr(self, node: cst.NamedExpr) -> bool:
            problem.append("the appended value binds names")
            return False

        def visit_BinaryOperation(self, node: cst.BinaryOperation) -> bool:
            problem.append("the appended value computes with what it reads (it could raise after the loop instead of in it)")
            return False

        def visit_FormattedStringExpression(self, node: cst.FormattedStringExpression) -> bool:
            spec = a.module.code_for_node(node.format_spec[0]) if node.format_spec and len(node.format_spec) == 1 else None
            if node.format_spec and not (spec is not None and _FLOAT_SPEC.fullmatch(spec)):
                problem.append("the appended value formats with a spec that may not fit the value (it could raise after the loop)")
            return True

    walk(expr, V())
    return problem[0] if problem else None


# Format specs every Python number accepts (``.4f``, ``e``, ``.1%``): they cannot raise.
_FLOAT_SPEC = re.compile(r"[<>=^]?[+\- ]?\d*(?:\.\d+)?[fFeEgG%]?")
