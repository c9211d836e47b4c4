"""SFX402 (unsafe): log GPU values one iteration later, kept on the device until then."""

from __future__ import annotations

import libcst as cst

from syncfix.analysis import Device, Kind
from syncfix.rules import Invalid, Rule
from syncfix.walk import walk


class DeferredLogging(Rule):
    """
    ## What it finds
    A log of GPU scalars in a training loop (`print(f"loss {loss.item():.4f}")`, a logger or
    tracker call, possibly under `if step % log_every == 0:`) that SFX401 cannot move to the end
    of the iteration, or where even the end of the iteration is too early: the read still waits
    for the iteration's last kernel.

    ## Why it costs
    However late in the iteration it sits, the read waits until the GPU has finished everything
    queued so far, so the CPU cannot queue the next iteration while the GPU works. Read one
    iteration later, the values have long been computed: the copy finds nothing left to wait for.

    ## Example
    ```python
    for step, (x, y) in enumerate(loader):
        loss = F.cross_entropy(model(x), y)
        print(f"step {step} loss {loss.item():.4f}")
        loss.backward()
        opt.step()
    ```

    ## Use instead
    ```python
    def log_step(step, loss_value):
        print(f"step {step} loss {loss_value:.4f}")

    pending_log = None
    for step, (x, y) in enumerate(loader):
        loss = F.cross_entropy(model(x), y)
        if pending_log is not None:
            log_step(*pending_log[0], *pending_log[1].tolist())
            pending_log = None
        pending_log = ((step,), torch.stack([loss.detach()]))
        loss.backward()
        opt.step()
    if pending_log is not None:
        log_step(*pending_log[0], *pending_log[1].tolist())
    ```

    ## Fix safety
    The fix is **unsafe** (`--unsafe-fixes` only), because it changes *when* lines appear: each
    line comes one iteration later (after the next iteration's other output), the last one after
    the loop, and a crash loses the line of the iteration before it. What it keeps: the text of
    every line (the same format with the same values: the tensors are detached, not cloned, so
    they must be fresh results that nothing writes later, and the Python values the line uses
    are captured when it would have been written; only Python numbers are captured, since a list
    or an object of unknown type could change before the line is written), the guard (a guarded log is deferred only
    when its guard held), and lines before an early `break` (flushed after the loop). It applies
    only when every value read is a 0-d floating tensor on one device (one `torch.stack`, exact
    for floats: docs/semantics.md#merging-reads) and the loop has no `return`/`yield`/`raise`/`try`, which
    would lose the pending line.
    """

    CODE = "SFX402"
    NAME = "deferred-logging"
    MESSAGE = "GPU values logged in the loop: deferring the log one iteration removes the wait"
    FIX = "sometimes"
    SAFETY = ("unsafe",)
    TRIGGERS = (".item(", "float(")
    VALID = [
        "import torch\ndef f(xs):\n    for x in xs:\n        print(x)\n",
    ]
    INVALID = [
        Invalid(
            "import torch\ndef f(ds):\n    for x in torch.utils.data.DataLoader(ds):\n"
            "        m = x.cuda().float().mean()\n        print(m.item())\n",
            "import torch\ndef f(ds):\n\n    def log_step(m_value):\n        print(m_value)\n\n"
            "    pending_log = None\n"
            "    for x in torch.utils.data.DataLoader(ds):\n"
            "        m = x.cuda().float().mean()\n"
            "        if pending_log is not None:\n"
            "            log_step(*pending_log[0], *pending_log[1].tolist())\n"
            "            pending_log = None\n"
            "        pending_log = ((), torch.stack([m.detach()]))\n"
            "    if pending_log is not None:\n"
            "        log_step(*pending_log[0], *pending_log[1].tolist())\n",
            unsafe=True,
        ),
    ]

    def visit_For(self, loop: cst.For) -> None:
        a = self.analysis
        if a.enclosing_function(loop) is None:
            return
        body = list(loop.body.body)
        logs = [s for s in body if self._log_parts(s) is not None]
        if len(logs) != 1:
            return  # several deferred logs would need one pending slot each: keep it simple
        stmt = logs[0]
        guard, line = self._log_parts(stmt)
        reads = self._reads(line)
        if not reads:
            return
        fix = self._fix(loop, stmt, guard, line, reads)
        if fix is not None:  # without a fix, SFX401 already reports the log
            self.report(reads[0].node, fix=fix)

    def _log_parts(self, stmt):
        """(guard or None, the logging statement line) for a log statement of the loop body."""
        a = self.analysis
        guard = None
        if isinstance(stmt, cst.If) and stmt.orelse is None and isinstance(stmt.body, cst.IndentedBlock):
            if len(stmt.body.body) != 1:
                return None
            guard, stmt = stmt, stmt.body.body[0]
        if not (isinstance(stmt, cst.SimpleStatementLine) and len(stmt.body) == 1):
            return None
        small = stmt.body[0]
        if isinstance(small, cst.Expr) and isinstance(small.value, cst.Call) and a.is_logging_call(small.value):
            return guard, stmt
        return None

    def _reads(self, line: cst.SimpleStatementLine) -> list:
        a = self.analysis
        found = []

        class V(cst.CSTVisitor):
            def visit_Call(self, call: cst.Call) -> None:
                read = a.host_read(call)
                if read is not None and a.value(read.receiver).device is not Device.CPU:
                    found.append(read)

        walk(line, V())
        return found

    def _fix(self, loop, stmt, guard, line, reads):
        a = self.analysis
        torch_name = a.torch_alias_at(loop)
        if torch_name is None:
            return None
        if any(a.effects(s).exits & {"return", "yield", "raise", "try", "await"} for s in loop.body.body):
            return None
        origins = set()
        for r in reads:
            v = a.value(r.receiver)
            if not (
                isinstance(r.receiver, cst.Name)
                and v.kind is Kind.TENSOR
                and v.fresh
                and r.form in ("item", "float")
                and a.dtype_kind(r.receiver) == "float"
                and a.one_element_shape(r.receiver) == ()
            ):
                return None
            origins.add(a.device_origin(r.receiver))
        if len(origins) != 1 or None in origins:
            return None
        tensors = list(dict.fromkeys(r.receiver.value for r in reads))
        # a tensor written again later in the iteration would be logged with the new value
        # (anywhere in the body: the pending value is read at the next iteration's log)
        if any(a.effects(s).inplace & set(tensors) for s in loop.body.body if s is not stmt):
            return None
        read_ids = {id(r.node) for r in reads}
        captured: list[str] = []
        bad: list[cst.CSTNode] = []
        root = _func_root(line)

        class Names(cst.CSTVisitor):
            def on_visit(self, node: cst.CSTNode) -> bool:
                if id(node) in read_ids:
                    return False
                if isinstance(node, (cst.Lambda, cst.ListComp, cst.SetComp, cst.DictComp, cst.GeneratorExp, cst.NamedExpr)):
                    bad.append(node)
                    return False
                if isinstance(node, cst.Attribute):
                    walk(node.value, self)
                    return False
                if isinstance(node, cst.Arg):
                    walk(node.value, self)
                    return False
                if isinstance(node, cst.Name) and node is not root and not _is_builtin(a, node):
                    if a.value(node).kind is not Kind.NUMBER:
                        # held by reference (a list, a tensor, an unknown object): a change
                        # before the deferred line is written would show in it
                        bad.append(node)
                    elif node.value not in captured:
                        captured.append(node.value)
                return True

        call = line.body[0].value
        for arg in call.args:
            walk(arg, Names())
        if bad or (root is not None and isinstance(root, cst.Name) and any(
            root.value in a.effects(s).writes for s in loop.body.body
        )):
            return None
        taken = self.__dict__.setdefault("_taken", set())
        func_name = a.fresh_name("log_step", taken)
        pending = a.fresh_name("pending_log", taken)
        taken |= {func_name, pending}
        value_names = {t: a.fresh_name(f"{t}_value", taken) for t in tensors}
        taken |= set(value_names.values())
        mapping = {r.node: cst.Name(value_names[r.receiver.value]) for r in reads}

        class R(cst.CSTTransformer):
            def on_leave(self, original, updated):
                return mapping.get(original, updated)

        new_line = line.visit(R()).with_changes(leading_lines=[])
        params = ", ".join([*captured, *value_names.values()])
        func = cst.parse_statement(f"def {func_name}({params}):\n    pass\n")
        func = func.with_changes(
            body=func.body.with_changes(body=[new_line]),
            leading_lines=loop.leading_lines or [cst.EmptyLine(indent=False)],
        )
        capture = f"({captured[0]},)" if len(captured) == 1 else f"({', '.join(captured)})"
        stack = f"{torch_name}.stack([{', '.join(f'{t}.detach()' for t in tensors)}])"
        emit = f"{func_name}(*{pending}[0], *{pending}[1].tolist())"
        flush = cst.parse_statement(f"if {pending} is not None:\n    {emit}\n    {pending} = None\n")
        save = cst.parse_statement(f"{pending} = ({capture}, {stack})\n")
        if guard is not None:
            save = guard.with_changes(body=guard.body.with_changes(body=[save]), leading_lines=[])
        new_stmt = cst.FlattenSentinel([flush.with_changes(leading_lines=stmt.leading_lines), save])
        init = cst.parse_statement(f"{pending} = None\n")
        final = cst.parse_statement(f"if {pending} is not None:\n    {emit}\n")

        class L(cst.CSTTransformer):
            def on_leave(self, original, updated):
                return new_stmt if original is stmt else updated

        new_loop = loop.visit(L()).with_changes(leading_lines=[])
        spacer = init.with_changes(leading_lines=[cst.EmptyLine(indent=False)])
        return self.unsafe_fix(
            {loop: cst.FlattenSentinel([func, spacer, new_loop, final])},
            "Keep the logged values on the device and log them one iteration later (unsafe: "
            "lines appear later)",
        )


def _func_root(line: cst.SimpleStatementLine) -> cst.CSTNode | None:
    func = line.body[0].value.func  # type: ignore[attr-defined]
    while isinstance(func, cst.Attribute):
        func = func.value
    return func


def _is_builtin(a, node: cst.Name) -> bool:
    name = a.qualname(node)
    return bool(name and name.startswith("builtins."))
