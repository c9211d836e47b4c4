"""SFX401: a log of GPU values in the middle of an iteration → after the iteration's GPU work."""

from __future__ import annotations

import libcst as cst
from libcst.metadata import Assignment

from syncfix.analysis import FULL_REDUCTIONS, Device, Kind, literal_kind
from syncfix.rules import Invalid, Rule
from syncfix.walk import walk

from ._memory import aliases_in, held_elsewhere
from ._support import code, every_n, imported_modules, is_backward_of

# Builtins a moved log may call (they read Python values only).
_PURE_FORMAT = {
    "builtins.str", "builtins.repr", "builtins.format", "builtins.round", "builtins.len",
    "builtins.float", "builtins.int", "builtins.bool", "builtins.abs",
}


def _list_append(a, call: cst.Call) -> bool:
    """``lrs.append(v)`` onto a name bound only to list displays (``lrs = []``): it stores a
    value in the list, and queues no work of its own."""
    func = call.func
    if not (isinstance(func, cst.Attribute) and func.attr.value in ("append", "extend") and isinstance(func.value, cst.Name)):
        return False
    values = a.binding_values(func.value)
    return bool(values) and all(isinstance(v, (cst.List, cst.ListComp)) for v in values)


class MoveLoggingToEnd(Rule):
    """
    ## What it finds
    A logging statement in a loop body (`print`, `logging`/`logger.*`, tqdm `set_postfix`/`write`,
    `SummaryWriter.add_scalar(s)`, `wandb.log`, `accelerator.log`, `mlflow.log_metric(s)`,
    Lightning's `self.log`) that reads GPU values (`loss.item()`...) while more GPU work of the
    same iteration follows (`backward()`, `optimizer.step()`...). A guarded log
    (`if step % log_every == 0:`) counts, and so does a log together with the statements that
    only prepare its values (e.g. SFX301's `a, b = torch.stack([...]).tolist()`). Work that
    follows only every N steps (`if step % sample_every == 0: save_image(...)`, with no `else`)
    does not count: moving the log past it would gain on one iteration in N.

    Also a value read mid-iteration only for a later log line of the same iteration
    (`d_x = output.mean().item()` ... `print(... d_x ...)`): the read can happen at the log.

    ## Why it costs
    The read waits for all GPU work queued so far, before the CPU has queued the backward pass
    and the optimizer step: the GPU then idles while the CPU catches up. Read after the
    iteration's last GPU work, the same sync lets the whole iteration be queued first, and the
    reads at the end can be merged into one transfer (SFX301). Moving alone removes no sync
    (docs/semantics.md#moving-reads-later): it removes the bubble.

    ## Example
    ```python
    for x, y in loader:
        loss = F.cross_entropy(model(x), y)
        print(f"loss {loss.item():.4f}")
        opt.zero_grad()
        loss.backward()
        opt.step()
    ```

    ## Use instead
    ```python
    for x, y in loader:
        loss = F.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        print(f"loss {loss.item():.4f}")
    ```

    ## Fix safety
    The fix is **safe** when all of docs/semantics.md#moving-reads-later's conditions are proven; otherwise there
    is no fix. The log (with its guard and the statements preparing its values) moves down the
    same block, past the statements that follow it, up to the last one that does GPU work, only if:
    - what it logs cannot change on the way: the tensors it reads are plain names of *fresh*
      tensors (results of operations, not parameters, buffers or views of them), read with
      `.item()`/`float()`/`.tolist()`... and nothing else (a parameter norm computed inside the
      log would see `optimizer.step()`'s update: it does not move); none of the names it reads is
      rebound, written in place, or passed to code that may mutate it (`loss.backward()` is
      allowed: it does not change `loss`), nor is any other name for their memory bound in the
      function (`d = loss.detach()`, `ema = loss`, `box = [loss]`); the names it prepares are
      read by nothing else;
    - nothing can skip it: no `break`/`continue`/`return`/`raise`/`yield`/`try` on the way;
    - nor can other state it prints: it reads no item (`group["lr"]`, which a scheduler step
      changes) and no attribute of a tensor, a module or an optimizer (`model.bias`), nor one
      that code of the module (or project) sets or that PyTorch and logging libraries change
      (`lr`, `param_groups`, `training`...); attributes of imported modules and loaders, and of
      other objects nothing sets (`args.log_every`), are taken to stay. A name it reads that
      is not a number, a string, a fresh tensor, a loader or a device (a list, `weight =
      model.weight`) stops it before any call that may change it (a parameter with a number
      default or an `int`/`float`/`str`/`bool` annotation is taken to hold one); and it does not
      move at all where other code holds the tensors it reads (given to an optimizer, which
      updates them in place at `step()`; kept in a container or on an object; a global);
    - no other output on the way: it stops before any other logging call, a write to a stream
      or file (`sys.stdout.write`, `out.write`, `flush`), `pprint`, `input()`, a warning, a
      command (`os.system`, `subprocess`), a traceback, a function of this module that does
      any of these, an `async for` (other tasks run between its items), or exit (`sys.exit`),
      so the order of lines, records and metrics is kept;
    - the statement itself is moved unchanged (same format, level and arguments).
    A read only a later log line uses (`v = t.mean().item()`, then `print(v)`) becomes
    `v = t.mean()` and `print(v.item())`, **safe** only if: the read tensor is new (a full
    reduction, a loss or arithmetic, so no other name holds it and nothing can change it), is
    provably 0-d (so the read cannot raise), and `v` has exactly one use, in a logging statement
    later in the same loop body (not after the loop, not in a nested function). Where the log is
    not reached (a `continue` on the way), the value was never used, so only the sync is saved.

    The one exception to "safe keeps errors and side effects exactly", accepted and stated: a
    log line moved to the end of its iteration is not printed when the iteration raises before
    reaching the end (an out-of-memory error in `backward()`, an asynchronous CUDA error); the
    original printed it, then raised. Values, types and the exception itself are unchanged.
    Log records also get a later `created` timestamp, and other calls on the way (an optimizer
    step, a custom hook) are assumed not to write output of their own. If any of this matters
    to your logs, suppress the rule for that line (`# noqa: SFX401`).
    """

    CODE = "SFX401"
    NAME = "move-logging-to-end"
    MESSAGE = "GPU values logged before the iteration's remaining GPU work is queued"
    FIX = "sometimes"
    SAFETY = ("safe",)
    TRIGGERS = (".item(", ".tolist(", "float(", "int(")
    VALID = [
        # already at the end of the iteration
        "import torch\ndef f(xs: torch.Tensor, opt):\n    for x in xs.cuda():\n"
        "        loss = x.pow(2).mean()\n        loss.backward()\n        opt.step()\n"
        "        print(loss.item())\n",
    ]
    INVALID = [
        Invalid(
            "import torch\ndef f(xs: torch.Tensor, opt):\n    for x in xs.cuda():\n"
            "        loss = x.pow(2).mean()\n        print(loss.item())\n        loss.backward()\n"
            "        opt.step()\n",
            "import torch\ndef f(xs: torch.Tensor, opt):\n    for x in xs.cuda():\n"
            "        loss = x.pow(2).mean()\n        loss.backward()\n"
            "        opt.step()\n        print(loss.item())\n",
        ),
        # a parameter norm computed in the log would see the update: finding only
        Invalid(
            "import torch\ndef f(xs: torch.Tensor, model, opt):\n    for x in xs.cuda():\n"
            "        loss = torch.nn.functional.mse_loss(model(x), x)\n"
            "        print(loss.item(), model.weight.norm().item())\n"
            "        loss.backward()\n        opt.step()\n",
            None,
        ),
    ]

    def visit_For(self, node: cst.For) -> None:
        self._loop(node)

    def visit_While(self, node: cst.While) -> None:
        self._loop(node)

    def _loop(self, loop: cst.For | cst.While) -> None:
        if not isinstance(loop.body, cst.IndentedBlock):
            return  # ``for ...: stmt`` holds small statements, never a log statement line
        body = list(loop.body.body)
        for i, stmt in enumerate(body):
            self._read_only_for_a_log(body, i, stmt)
        for i, stmt in enumerate(body):
            if not self._is_log(stmt):
                continue
            start = self._unit_start(body, i)
            unit = body[start : i + 1]
            reads = self._gpu_reads(unit)
            if not reads:
                continue
            later_gpu = [j for j in range(i + 1, len(body)) if self._gpu_work(body[j]) and not every_n(body[j])]
            if not later_gpu:
                continue  # nothing to queue first (or only work every N steps: a sample saved)
            if self._synced_before(body, start):
                continue  # the GPU was just waited for: the log's read costs nothing here
            why = self._unit_problem(unit)
            target = self._target(body, i, unit) if why is None else None
            if target is None:
                self.report(reads[0], f"{self.MESSAGE}; no fix: {why or 'it cannot move past what follows'}")
                continue
            changes: dict = {s: cst.RemovalSentinel.REMOVE for s in unit}
            changes[body[target]] = cst.FlattenSentinel([body[target], *unit])
            self.report(
                reads[0],
                fix=self.safe_fix(changes, "Log after the iteration's last GPU work"),
            )

    def _synced_before(self, body, start: int) -> bool:
        """Did the iteration wait for the GPU (a host read, a synchronize) after its last GPU
        work before ``body[start]``? Then the log's reads find the queue empty; moved later,
        they would wait for the work that follows."""
        a = self.analysis
        for stmt in reversed(body[:start]):
            if any(
                a.host_read(c) is not None or isinstance(c.func, cst.Attribute) and c.func.attr.value == "synchronize"
                for c in a.effects(stmt).calls
            ):
                return not self._gpu_work_before_read(stmt)
            if self._gpu_work(stmt):
                return False
        return False

    def _gpu_work_before_read(self, stmt: cst.BaseStatement) -> bool:
        """Does a compound statement queue GPU work after its sync (judged whole: yes unless it
        is a plain line)?"""
        return not isinstance(stmt, cst.SimpleStatementLine) and self._gpu_work(stmt)

    def _read_only_for_a_log(self, body, i: int, stmt: cst.BaseStatement) -> None:
        """``v = t.mean().item()`` whose one use is a later log line of the iteration: keep the
        new tensor and read it in the log (where SFX301 can merge it with the log's other reads)."""
        a = self.analysis
        if not (isinstance(stmt, cst.SimpleStatementLine) and len(stmt.body) == 1 and isinstance(stmt.body[0], cst.Assign)):
            return
        assign = stmt.body[0]
        if len(assign.targets) != 1 or not isinstance(assign.targets[0].target, cst.Name) or not isinstance(assign.value, cst.Call):
            return
        read = a.host_read(assign.value)
        if read is None or read.form != "item" or a.value(read.receiver).device is Device.CPU:
            return
        name = assign.targets[0].target
        use = _only_later_use(a, name, body, i)
        if use is None or not self._is_log(use[1]):
            return
        if not (a.is_tensor(read.receiver) and a.is_zero_dim(read.receiver) and _new_tensor(a, read.receiver)):
            return  # a view or a named tensor could change before the log; `.item()` could raise
        self.report(
            read.node,
            "GPU value read mid-iteration only for a later log line: it syncs here, before the "
            "rest of the iteration is queued",
            fix=self.safe_fix(
                {assign.value: read.receiver.with_changes(lpar=[], rpar=[]), use[0]: cst.parse_expression(f"{name.value}.item()")},
                f"Keep `{name.value}` a tensor; read it in the log line",
            ),
        )

    # ---- what is a log ----------------------------------------------------------------------
    def _is_log(self, stmt: cst.BaseStatement) -> bool:
        a = self.analysis
        if isinstance(stmt, cst.SimpleStatementLine):
            return (
                len(stmt.body) == 1
                and isinstance(stmt.body[0], cst.Expr)
                and isinstance(stmt.body[0].value, cst.Call)
                and a.is_logging_call(stmt.body[0].value)
                and not (a.callee(stmt.body[0].value) == "builtins.print" and any(
                    arg.keyword is not None and arg.keyword.value == "file" for arg in stmt.body[0].value.args
                ))
            )
        if isinstance(stmt, cst.If) and stmt.orelse is None and isinstance(stmt.body, cst.IndentedBlock):
            return bool(stmt.body.body) and all(self._is_log(s) for s in stmt.body.body)
        return False

    def _unit_start(self, body, i: int) -> int:
        """Include the statements right before the log that only prepare values for it."""
        a = self.analysis
        start = i
        while start > 0:
            prev = body[start - 1]
            if not (
                isinstance(prev, cst.SimpleStatementLine)
                and len(prev.body) == 1
                and isinstance(prev.body[0], cst.Assign)
            ):
                break
            targets = a.effects(prev).writes
            others = [s for k, s in enumerate(body) if not (start - 1 <= k <= i)]
            if any(a.effects(s).reads & targets for s in others):
                break  # the prepared values are used elsewhere too
            if not self._pure_unit([prev]):
                break
            start -= 1
        return start

    def _gpu_reads(self, unit) -> list[cst.Call]:
        a = self.analysis
        found: list[cst.Call] = []

        class V(cst.CSTVisitor):
            def visit_Call(self, call: cst.Call) -> None:
                read = a.host_read(call)
                if read is not None and a.value(read.receiver).device is not Device.CPU:
                    found.append(call)

        for s in unit:
            walk(s, V())
        return found

    def _gpu_work(self, stmt: cst.BaseStatement) -> bool:
        """Does ``stmt`` queue work (an unknown call such as ``opt.step()``, a tensor op)?
        Logging and host reads are not work worth moving past."""
        a = self.analysis
        fx = a.effects(stmt)
        if _contains_output(a, stmt):
            return False
        calls = [c for c in fx.calls if a.host_read(c) is None and not _list_append(a, c)]
        if fx.may_mutate_anything and calls:
            return True
        return any(
            isinstance(c.func, cst.Attribute) and a.is_tensor(c.func.value)
            or (a.callee(c) or "").startswith("torch.")
            for c in calls
        )

    # ---- can it move ------------------------------------------------------------------------
    def _pure_unit(self, unit) -> bool:
        return self._unit_problem(unit, log_calls_allowed=False) is None

    def _unit_problem(self, unit, log_calls_allowed: bool = True) -> str | None:
        """Why the values the unit logs could change if read later (None: they cannot)."""
        a = self.analysis
        problem: list[str] = []

        class V(cst.CSTVisitor):
            def visit_Call(self, call: cst.Call) -> None:
                if problem:
                    return
                read = a.host_read(call)
                if read is not None:
                    if not _fresh_tensor_names(a, read.receiver):
                        problem.append("it reads a tensor that is not a plain name of a fresh tensor")
                    return
                name = a.direct_callee(call)
                if name in _PURE_FORMAT or name == "torch.stack":
                    return
                if isinstance(call.func, cst.Attribute) and call.func.attr.value == "reshape":
                    return
                if log_calls_allowed and a.is_logging_call(call):
                    return
                problem.append("it computes values with calls that could see later changes")

            def visit_NamedExpr(self, node: cst.NamedExpr) -> None:
                problem.append("it binds names")

            def visit_Lambda(self, node: cst.Lambda) -> bool:
                problem.append("it defers code")
                return False

        for s in unit:
            walk(s, V())
            if problem:
                return problem[0]
        if any(a.effects(s).exits for s in unit):
            return "it can exit"
        logged = {n.value for c in self._gpu_reads(unit) for n in _names_read(a, c)} - imported_modules(a)
        scope = a.enclosing_function(unit[0])
        if logged and scope is not None and held_elsewhere(a, scope, logged):
            return "other code holds the tensors it reads (an optimizer given them updates them in place)"
        return self._changing_state(unit)

    def _changing_state(self, unit) -> str | None:
        """An item or attribute the unit reads that later code may change without naming it:
        ``group["lr"]`` (a scheduler step), ``model.weight`` (an optimizer step). Attributes
        of imported modules and loaders, and attributes of other objects that no code of the
        module (or project) sets and that are not a tensor's, a module's or an optimizer's, are
        taken to stay."""
        a = self.analysis
        skip = {id(n) for c in self._gpu_reads(unit) for n in a.nodes_within(c, cst.Attribute)}
        skip |= {id(n) for c in self._gpu_reads(unit) for n in a.nodes_within(c, cst.Subscript)}
        for s in unit:
            for sub in a.nodes_within(s, cst.Subscript):
                if id(sub) not in skip and not _types_only(a, sub):
                    return f"it reads an item that later code may change (`{code(a, sub)}`)"
            for attr in a.nodes_within(s, cst.Attribute):
                assert isinstance(attr, cst.Attribute)
                parent = a.parent(attr)
                if id(attr) in skip or isinstance(parent, cst.Attribute) and parent.value is attr:
                    continue  # a host read's (checked), or part of a longer chain (judged whole)
                if isinstance(parent, cst.Call) and parent.func is attr:
                    continue  # a function or method called (``logger.info``, ``pbar.set_postfix``)
                if not self._stays(attr):
                    return f"it reads an attribute that later code may change (`{code(a, attr)}`)"
        return None

    def _mutable_reads(self, unit) -> set[str]:
        """Names the unit reads whose objects code called on the way may change without naming
        them: ``SEEN.append`` in a helper, ``opt.step()`` updating ``weight = model.weight``, a
        hook appending to a list: all but numbers, strings, loaders, devices, fresh tensors,
        functions, classes and modules."""
        a = self.analysis
        logged = {id(n) for c in self._gpu_reads(unit) for n in a.nodes_within(c, cst.Name)}
        written: set[str] = set()
        for s in unit:
            written |= a.effects(s).writes
        found: set[str] = set()
        for s in unit:
            for name in a.nodes_within(s, cst.Name):
                assert isinstance(name, cst.Name)
                parent = a.parent(name)
                if id(name) in logged or name.value in written or name.value in found:
                    continue
                if isinstance(parent, cst.Attribute) and parent.attr is name:
                    continue
                if isinstance(parent, (cst.Arg, cst.AssignTarget)) and getattr(parent, "keyword", None) is name:
                    continue
                if isinstance(parent, cst.Call) and parent.func is name:
                    continue
                if isinstance(parent, cst.Attribute) and parent.value is name:
                    continue  # ``logger.info(...)``, ``args.every``: judged by attribute (_stays)
                if not _immutable(a, name):
                    found.add(name.value)
        return found

    def _stays(self, attr: cst.Attribute) -> bool:
        a = self.analysis
        chain: list[str] = []
        root: cst.BaseExpression = attr
        while isinstance(root, cst.Attribute):
            chain.append(root.attr.value)
            root = root.value
        if not isinstance(root, cst.Name) or root.value in imported_modules(a):
            return isinstance(root, cst.Name)
        held = a.value(root)
        if held.kind is Kind.LOADER:
            return True  # ``len(loader.dataset)``: a loader's attributes are fixed once made
        if held.kind in (Kind.TENSOR, Kind.TENSORS, Kind.BATCH, Kind.MODULE):
            return False
        return not any(a.attribute_set(name) or name in _CHANGED_BY_LIBRARIES for name in chain)

    def _target(self, body, i: int, unit) -> int | None:
        """The index of the last statement to move past (None: no GPU work can be passed)."""
        a = self.analysis
        names: set[str] = set()
        for s in unit:
            names |= a.effects(s).reads | a.effects(s).writes
        names -= imported_modules(a)  # ``torch`` in ``torch.stack``: not a logged value
        # other names for the logged tensors' memory (``d = loss.detach()``, ``ema = loss``),
        # whose in-place writes would change what the moved log prints
        logged = {n.value for c in self._gpu_reads(unit) for n in _names_read(a, c)} - imported_modules(a)
        names |= aliases_in(a, a.enclosing_function(body[i]) or a.module, logged)
        mutable = self._mutable_reads(unit)
        last = None
        for j in range(i + 1, len(body)):
            stmt = body[j]
            fx = a.effects(stmt)
            if fx.exits or _contains_output(a, stmt):
                break
            if (fx.writes | fx.inplace) & names:
                break
            if fx.may_mutate_anything and fx.reads & names and not is_backward_of(stmt, names):
                break
            if fx.may_mutate_anything and mutable:
                break  # ``remember(step)`` may append to the list the log prints
            if self._gpu_work(stmt):
                last = j
        return last


# Attributes PyTorch and logging libraries change on objects they hold (an optimizer's learning
# rate, a scheduler's epoch, a module's mode, a progress bar's count).
_CHANGED_BY_LIBRARIES = {
    "param_groups", "state", "lr", "last_epoch", "_last_lr", "training", "weight", "bias",
    "grad", "data", "n", "postfix", "step", "global_step", "current_epoch",
}


def _immutable(a, name: cst.Name) -> bool:
    """Does ``name`` hold something no call can change in place: a number, a string, a loader
    or a device, a fresh tensor, a function, class or module?"""
    if name.value in ("True", "False", "None"):
        return True
    held = a.value(name)
    if held.kind in (Kind.NUMBER, Kind.LOADER, Kind.DEVICE) or held.kind is Kind.TENSOR and held.fresh:
        return True
    for asg in a.bindings(name):
        param = getattr(asg, "node", None)
        if isinstance(param, cst.Param) and (
            param.default is not None and literal_kind(param.default, one_minus=True) is not None
            or param.annotation is not None and a.qualname(param.annotation.annotation) in _IMMUTABLE_TYPES
        ):
            return True  # ``log_every=10``, ``name: str``: taken to hold what it says
    values = a.reaching_values(name)
    if not values:
        return False
    return all(
        isinstance(v, (cst.SimpleString, cst.ConcatenatedString, cst.FormattedString, cst.Integer, cst.Float,
                       cst.FunctionDef, cst.ClassDef, cst.Import, cst.ImportFrom))
        for v in values
    )


_IMMUTABLE_TYPES = {"builtins.int", "builtins.float", "builtins.str", "builtins.bool"}


def _types_only(a, sub: cst.CSTNode) -> bool:
    """``dict[str, int]`` in an annotation: no item read."""
    return any(isinstance(n, cst.Annotation) for n in a.ancestors(sub))


def _fresh_tensor_names(a, expr: cst.BaseExpression) -> bool:
    """Is ``expr`` a name of a fresh tensor, or ``torch.stack``/``reshape`` of such names?"""
    if isinstance(expr, cst.Name):
        v = a.value(expr)
        return v.kind in (Kind.TENSOR,) and v.fresh
    if isinstance(expr, cst.Call):
        func = expr.func
        if isinstance(func, cst.Attribute) and func.attr.value == "reshape":
            return _fresh_tensor_names(a, func.value)
        if a.direct_callee(expr) == "torch.stack" and len(expr.args) == 1:
            items = expr.args[0].value
            return isinstance(items, (cst.List, cst.Tuple)) and all(
                _fresh_tensor_names(a, el.value) for el in items.elements
            )
    return False


def _only_later_use(a, name: cst.Name, body, i: int) -> tuple[cst.Name, cst.BaseStatement] | None:
    """The one use of the value ``name`` is bound to (a read, not in a nested function), in a
    statement of ``body`` after the ``i``-th, with that statement; None otherwise."""
    bindings = a.bindings(name)
    if len(bindings) != 1:
        return None
    (binding,) = bindings
    if not isinstance(binding, Assignment) or len(binding.references) != 1:
        return None
    (access,) = binding.references
    node = access.node
    if not isinstance(node, cst.Name) or any(isinstance(n, (cst.Lambda, cst.FunctionDef)) for n in a.ancestors(node)
                                                 if n in _until(a, node, body)):
        return None
    for stmt in body[i + 1 :]:
        if any(n is stmt for n in a.ancestors(node)):
            return node, stmt
    return None


def _until(a, node: cst.CSTNode, body) -> list[cst.CSTNode]:
    """``node``'s ancestors up to the statement of ``body`` holding it."""
    found: list[cst.CSTNode] = []
    for n in a.ancestors(node):
        if any(n is s for s in body):
            break
        found.append(n)
    return found


def _new_tensor(a, expr: cst.BaseExpression) -> bool:
    """A tensor only ``expr`` makes (a reduction, a loss, arithmetic): no other name holds it."""
    if isinstance(expr, cst.UnaryOperation) and isinstance(expr.operator, cst.Plus):
        return _new_tensor(a, expr.expression)  # ``+t`` is ``t`` itself (torch.positive)
    if isinstance(expr, (cst.BinaryOperation, cst.UnaryOperation)):
        return True
    if not isinstance(expr, cst.Call):
        return False
    func = expr.func
    if isinstance(func, cst.Attribute) and a.is_tensor(func.value):
        return func.attr.value in FULL_REDUCTIONS
    name = a.direct_callee(expr) or ""
    return name.startswith("torch.") and name.rsplit(".", 1)[-1] in FULL_REDUCTIONS or a.loss_reduction(expr) is not None


# Other ways a statement writes output or ends the program (the moved log must stay before them).
_OUTPUT_OR_EXIT = {
    "sys.stdout.write", "sys.stderr.write", "sys.stdout.writelines", "sys.stderr.writelines",
    "sys.stdout.flush", "sys.stderr.flush", "pprint.pprint", "pprint.pp", "builtins.input",
    "builtins.breakpoint", "warnings.warn", "warnings.warn_explicit", "os.system", "os.popen",
    "subprocess.run", "subprocess.call", "subprocess.check_call", "subprocess.check_output",
    "subprocess.Popen", "traceback.print_exc", "traceback.print_exception",
    "traceback.print_stack", "traceback.print_tb", "traceback.print_last", "rich.print",
    "sys.exit", "os._exit", "builtins.exit", "builtins.quit",
}
# Methods that write to a stream or file whatever holds them (``out.write``, ``f.flush()``).
_WRITING_METHODS = {"write", "writelines", "flush", "print", "print_exc"}


def _contains_output(a, stmt: cst.CSTNode, seen: frozenset[cst.CSTNode] = frozenset()) -> bool:
    """Does ``stmt`` log, print, write to a stream, run a command, warn, or exit, directly or in
    a function of this module it calls?"""
    for c in a.effects(stmt).calls:
        if a.is_logging_call(c) or a.callee(c) in _OUTPUT_OR_EXIT:
            return True
        if isinstance(c.func, cst.Attribute) and c.func.attr.value in _WRITING_METHODS:
            return True
        fn = a.local_function(c.func)
        if fn is not None and fn not in seen and _contains_output(a, fn.body, seen | {fn}):
            return True
    return False


def _names_read(a, read: cst.Call) -> list[cst.Name]:
    """The variables a host read's tensor expression names (``loss``, ``acc`` of
    ``torch.stack([loss, acc]).tolist()``; not the attributes ``stack``, ``tolist``)."""
    found = a.host_read(read)
    if found is None:
        return []
    return [
        n for n in a.nodes_within(found.receiver, cst.Name)
        if isinstance(n, cst.Name) and not (isinstance(p := a.parent(n), cst.Attribute) and p.attr is n)
    ]
