"""SFX206: decisions that truly need a GPU value on the host, named with how to sync less."""

from __future__ import annotations

import re

import libcst as cst

from syncfix.analysis import Kind, dotted_name, keyword, literal_number
from syncfix.rules import Invalid, Rule

from ._support import assignments, every_n, syncs_on_gpu, unplaced_message, unplaced_reads

_GRAD_SCALERS = {
    "torch.amp.GradScaler", "torch.cuda.amp.GradScaler", "torch.amp.grad_scaler.GradScaler",
    "torch.cuda.amp.grad_scaler.GradScaler", "torch.GradScaler", "torch.cpu.amp.GradScaler",
}
_FUSABLE = {"Adam", "AdamW", "SGD", "Adagrad"}
_ORDERINGS = (cst.Equal, cst.NotEqual, cst.LessThan, cst.GreaterThan, cst.LessThanEqual, cst.GreaterThanEqual)


class TrueHostDependency(Rule):
    """
    ## What it finds
    Python control flow that genuinely needs a GPU value on the host, so no rewrite can keep the
    meaning: `if loss.item() < best: save()`, early stopping (`break`/`return` on a GPU value),
    NaN checks that skip a step (`if torch.isnan(loss): continue`), `while` loops whose test is a
    GPU value, `GradScaler.step(optimizer)` with a non-fused optimizer, and
    `GradScaler.get_scale()` outside an `if step % N == 0:` (a scaler syncfix sees built, or one
    named as such, `self.scaler`, in a file that imports or names `GradScaler`; not one built
    with `enabled=False`). A test reads the
    value when it converts it (`.item()`, `float(t)`, `math.isnan(t)`), takes its truth, or asks
    `x in t` (`Tensor.__contains__` reads `(t == x).any()`).
    Where the code repeats (a loop body, a step-like function or a function called from one), a
    tensor whose device syncfix cannot name (a parameter's `.grad`, a model output passed in, or
    an unannotated parameter its function uses as only a tensor is used, `target.index_select(0,
    i)` or `torch.zeros_like(target)`, unless it defaults to `None` or its type is tested) is
    reported too, as likely on the GPU, with no fix: the message says the device is unknown.
    `torch.tensor(x)` without `device=`, of a value syncfix cannot name, is likely a copy of
    host data (a list, an array): a CPU tensor, not reported.
    Not a tokenizer's tensors (`tokenizer(text, return_tensors="pt").input_ids`), likely new
    CPU tensors, whose reads wait for nothing.

    ## Why it costs
    Each test copies the value to the host and waits for all queued GPU work: the CPU stops
    queueing kernels, and the GPU idles until the next ones arrive. `GradScaler.step` with a
    non-fused optimizer reads `found_inf` with `.item()` once per device every step, and
    `get_scale()` reads the scale with `.item()` (docs/semantics.md#training-utilities).

    ## Example
    ```python
    for step, batch in enumerate(loader):
        loss = train_step(batch)
        if loss.item() < best:
            best = loss.item()
            torch.save(model.state_dict(), "best.pt")
    ```

    ## Use instead
    ```python
    for step, batch in enumerate(loader):
        loss = train_step(batch)
        best_dev = torch.minimum(best_dev, loss.detach())   # stays on the GPU
        if step % 100 == 0 and loss.item() <= best_dev.item():   # one decision every 100 steps
            torch.save(model.state_dict(), "best.pt")
    ```
    Other restructurings: test NaN with `torch._assert_async` when a NaN is a bug; neutralise a bad
    step on the device instead of skipping it; use `fused=True` (Adam, AdamW, SGD, Adagrad) with
    `GradScaler`, which passes `found_inf` to the kernel.

    ## Fix safety
    One **unsafe** fix, for a test on one element of a tensor picked by a `range` loop's counter
    (`counts = [] if mask[i, 0] == 0 else [0]` in `for i in range(n):`, where the loop body neither
    writes `mask` nor passes it to code that might): read the column once before the loop
    (`mask_column = mask[:, 0].tolist()`) and test `mask_column[i] == 0`. One sync instead of one
    per iteration. What can differ: the comparison is Python's on the read value, not the tensor's
    in its dtype (the same for integer and bool tensors and for literals the dtype holds exactly,
    not for `0.1` against float32); the column is read even when the loop runs zero times or
    leaves early, so a tensor with too few columns raises before the loop; a row past the end
    raises `IndexError` in both, from a list instead of a tensor.

    A second **unsafe** fix, for `if any(...)`/`if all(...)` over a generator of 0-d tensor tests
    (`if any(not torch.isfinite(p.grad).all() for p in params):`, one `bool()` per parameter):
    stack the tests and read them once,
    `if (checks := [torch.isfinite(p.grad).all() for p in params]) and not torch.stack(checks).all():`.
    An empty sequence decides as before (`any` false, `all` true). What can differ: every element
    is now tested, where `any`/`all` stop at the first decisive one, so an error in a later
    element (a `None` gradient) surfaces; tests on several devices cannot be stacked.

    Otherwise no fix: the program's behaviour (what is saved, when the loop stops, which steps run) depends on
    the value, so every restructuring above changes behaviour (checking every N steps decides later;
    a fused optimizer is not bit-identical). The finding names the dependency and the options.
    """

    CODE = "SFX206"
    NAME = "true-host-dependency"
    MESSAGE = "True dependency on a GPU value: Python needs it to decide, so this syncs"
    FIX = "sometimes"
    SAFETY = ("unsafe",)
    TRIGGERS = ("if ", "while ", ".step(", ".get_scale(")
    VALID = [
        # only picks a tensor: SFX201's business
        "import torch\nm = torch.rand((), device='cuda')\nif m > 0.5:\n    s = m * 2\nelse:\n    s = m * 3\n",
        # a Python condition
        "import torch\ndef f(n: int):\n    if n > 3:\n        torch.save({}, 'x.pt')\n",
        # a fused optimizer: GradScaler.step does not sync
        "import torch\nmodel = torch.nn.Linear(2, 2).cuda()\n"
        "opt = torch.optim.AdamW(model.parameters(), fused=True)\nscaler = torch.amp.GradScaler('cuda')\n"
        "scaler.step(opt)\n",
    ]
    INVALID = [
        Invalid(
            "import torch\nbest = 1e9\nloss = torch.rand((), device='cuda')\nif loss.item() < best:\n"
            "    torch.save({}, 'best.pt')\n"
        ),
        Invalid(
            "import torch\nmodel = torch.nn.Linear(2, 2).cuda()\n"
            "opt = torch.optim.SGD(model.parameters(), lr=0.1)\nscaler = torch.amp.GradScaler('cuda')\n"
            "scaler.step(opt)\n"
        ),
    ]

    def visit_If(self, node: cst.If) -> None:
        a = self.analysis
        parent = a.parent(node)
        if isinstance(parent, cst.If) and parent.orelse is node:
            return  # an elif: reported with its chain
        tests, suites = [], []
        cur: cst.If | None = node
        while cur is not None:
            tests.append(cur.test)
            suites.append(cur.body)
            if isinstance(cur.orelse, cst.If):
                cur = cur.orelse
            else:
                if cur.orelse is not None:
                    suites.append(cur.orelse.body)
                cur = None
        if not any(syncs_on_gpu(a, t) for t in tests):
            if len(suites) == 1 and node.orelse is None and _only_raise(node.body):
                return  # a guard: SFX203 (which reports unplaced tensors too)
            if any(unplaced_reads(a, t) for t in tests):
                # every step, on a tensor that is on a GPU unless the code runs on the CPU
                fix = (self._hoisted_column(node.test) or self._one_read_of_many(node)) if len(tests) == 1 else None
                self.report(node, self._message(node, suites) + unplaced_message(a, node), fix=fix)
            return
        if all(assignments(s) is not None for s in suites):
            return  # picks values only: SFX201
        if len(suites) == 1 and node.orelse is None and _only_raise(node.body):
            return  # a guard: SFX203
        self.report(node, self._message(node, suites), fix=self._one_read_of_many(node) if len(tests) == 1 else None)

    def visit_IfExp(self, node: cst.IfExp) -> None:
        # SFX201 owns tests proven on the GPU (it picks tensors with ``torch.where``); here, a
        # test on a tensor of unknown device, in code that repeats
        a = self.analysis
        if syncs_on_gpu(a, node.test) or not unplaced_reads(a, node.test):
            return
        child: cst.CSTNode = node
        for anc in a.ancestors(node):
            if isinstance(anc, (cst.If, cst.While, cst.Assert)) and child is anc.test:
                return  # inside a test this rule (or SFX203) reports already
            child = anc
        # "before the loop" only where there is one (trl's ``compute_loss`` has none)
        hoist = ", or read what it needs once, before the loop" if a.enclosing_loop(node) is not None else ""
        self.report(
            node,
            f"{self.MESSAGE}: a conditional expression picks its value by a tensor's value. Compute "
            f"the choice on the device (`torch.where`){hoist}" + unplaced_message(a, node),
            fix=self._hoisted_column(node.test),
        )

    def _one_read_of_many(self, node: cst.If):
        """``if any(not t.isfinite().all() for t in ts):``, one ``bool()`` per element, becomes
        one read of the stacked 0-d tests: ``if (checks := [...]) and not torch.stack(checks).all():``
        (unsafe, see Fix safety)."""
        a = self.analysis
        test, torch = node.test, a.torch_alias_at(node)
        if not (isinstance(test, cst.Call) and a.callee(test) in ("builtins.any", "builtins.all")):
            return None
        if torch is None or len(test.args) != 1 or not isinstance(test.args[0].value, cst.GeneratorExp):
            return None
        gen = test.args[0].value
        if gen.for_in.inner_for_in is not None or gen.for_in.asynchronous:
            return None
        elt, negated = gen.elt, False
        if isinstance(elt, cst.UnaryOperation) and isinstance(elt.operator, cst.Not):
            elt, negated = elt.expression, True
        likely = a.likely
        if not (likely.is_tensor(elt) and likely.is_zero_dim(elt)) or a.host_read_syncs(elt, any_device=True):
            return None  # each element must be a 0-d tensor test, read by the ``any``/``all`` only
        if not a.is_effect_free(elt):
            return None
        checks = a.fresh_name("checks")
        items = a.module.code_for_node(cst.ListComp(elt=elt, for_in=gen.for_in))
        stacked = f"{torch}.stack({checks})"
        if a.callee(test) == "builtins.any":  # any(e) / any(not e): is some e true / false?
            text = f"({checks} := {items}) and {'not ' if negated else ''}{stacked}.{'all' if negated else 'any'}()"
        else:  # all(e) / all(not e): an empty sequence is all-true
            text = f"not ({checks} := {items}) or {'not ' if negated else ''}{stacked}.{'any' if negated else 'all'}()"
        return self.unsafe_fix(
            {test: cst.parse_expression(text)},
            "Stack the tests and read them once (unsafe: every element is tested, where `any`/`all` "
            "stop at the first decisive one, so a later element's error now surfaces; tensors on "
            "several devices cannot be stacked)",
        )

    def _hoisted_column(self, test: cst.BaseExpression):
        """``t[i, c] == k`` in ``for i in range(...)`` whose body leaves ``t`` and ``i`` alone:
        one ``t[:, c].tolist()`` before the loop, indexed by ``i`` (unsafe, see Fix safety)."""
        a = self.analysis
        if not (isinstance(test, cst.Comparison) and len(test.comparisons) == 1):
            return None
        cmp = test.comparisons[0]
        sub = test.left
        if not isinstance(cmp.operator, _ORDERINGS) or literal_number(cmp.comparator) is None:
            return None
        if not (isinstance(sub, cst.Subscript) and isinstance(sub.value, cst.Name) and len(sub.slice) == 2):
            return None
        row, col = (el.slice for el in sub.slice)
        if not (
            isinstance(row, cst.Index)
            and isinstance(row.value, cst.Name)
            and isinstance(col, cst.Index)
            and isinstance(col.value, cst.Integer)
        ):
            return None
        loop = a.enclosing_loop(test)
        if not (
            isinstance(loop, cst.For)
            and isinstance(loop.target, cst.Name)
            and loop.target.value == row.value.value
            and isinstance(loop.iter, cst.Call)
            and a.callee(loop.iter) == "builtins.range"
            and loop.orelse is None
        ):
            return None
        tensor, index = sub.value.value, row.value.value
        fx = a.effects(loop.body)
        if {tensor, index} & (fx.writes | fx.inplace):
            return None
        for call in fx.calls:
            if a.is_pure_call(call):
                continue
            func = call.func
            handed = [arg.value for arg in call.args] + ([func.value] if isinstance(func, cst.Attribute) else [])
            if any(tensor in a.effects(e).reads and a.value(e).kind not in (Kind.NUMBER, Kind.OTHER) for e in handed):
                return None  # the tensor (or a view of it) is handed to code that may write it
        column = a.fresh_name(f"{tensor}_column")
        read = cst.parse_statement(f"{column} = {tensor}[:, {col.value.value}].tolist()\n")
        new_loop = loop.deep_replace(sub, cst.parse_expression(f"{column}[{index}]"))
        assert isinstance(new_loop, cst.For)
        return self.unsafe_fix(
            {
                loop: cst.FlattenSentinel(
                    [read.with_changes(leading_lines=loop.leading_lines), new_loop.with_changes(leading_lines=())]
                )
            },
            "Read the column once before the loop (unsafe: a Python comparison of the read value "
            "can differ from the tensor's for a float literal the dtype cannot hold; the read runs "
            "even when the loop does not, and reads every row)",
        )

    def visit_While(self, node: cst.While) -> None:
        a = self.analysis
        proven = syncs_on_gpu(a, node.test)
        if proven or unplaced_reads(a, node.test):
            self.report(
                node,
                f"{self.MESSAGE}: the loop's trip count depends on a GPU value, so every test "
                "syncs. Test every N iterations, or run a fixed number of iterations and mask "
                "finished work on the device" + ("" if proven else unplaced_message(a, node)),
            )

    def visit_Call(self, node: cst.Call) -> None:
        func = node.func
        if not isinstance(func, cst.Attribute):
            return
        if func.attr.value == "get_scale" and not node.args:
            self._get_scale(node, func.value)
            return
        if not (func.attr.value == "step" and node.args):
            return
        a = self.analysis
        enabled = self._scaler_enabled(func.value)
        if enabled is None or enabled is False:
            return  # not a scaler, or ``GradScaler(enabled=False)``, whose step only steps
        opt = node.args[0].value
        ctor = _constructor(a, opt) if isinstance(opt, cst.Name) else None
        name = a.callee(ctor) if ctor is not None else None
        if ctor is not None and name is not None and name.startswith("torch.optim."):
            fused = keyword(ctor, "fused")
            if fused is not None and not (isinstance(fused.value, cst.Name) and fused.value.value == "False"):
                return
            short = name.rsplit(".", 1)[-1]
            advice = (
                f"`torch.optim.{short}(..., fused=True)` takes `found_inf` on the device (not bit-identical)"
                if short in _FUSABLE
                else "a fused optimizer (Adam, AdamW, SGD, Adagrad) would take it on the device"
            )
        else:
            advice = "unless the optimizer is fused (Adam/AdamW/SGD/Adagrad with fused=True)"
        self.report(
            node,
            f"{self.MESSAGE}: GradScaler.step reads found_inf on the host (one sync per device)"
            f"{_when(enabled, 'steps the optimizer')} to decide whether to skip the step; {advice}",
        )

    def _get_scale(self, node: cst.Call, receiver: cst.BaseExpression) -> None:
        """``scaler.get_scale()`` reads the scale with ``.item()`` when the scaler is enabled."""
        enabled = self._scaler_enabled(receiver)
        if enabled is None or enabled is False:
            return
        a = self.analysis
        if any(every_n(stmt) for stmt in a.ancestors(node) if isinstance(stmt, cst.If)):
            return  # read on one step in N already
        self.report(
            node,
            f"{self.MESSAGE}: GradScaler.get_scale() reads the scale on the host (one sync)"
            f"{_when(enabled, 'returns 1.0')}; where it only feeds a log or a metric, read it "
            "every N steps; where it is compared around `update()` to tell a skipped step, the "
            "program's behaviour depends on it",
        )

    def _scaler_enabled(self, receiver: cst.BaseExpression) -> bool | str | None:
        """None where ``receiver`` is not a GradScaler; else whether it is enabled (True, False,
        or the source text of an ``enabled`` argument, "?" for a scaler known by its name)."""
        a = self.analysis
        if isinstance(receiver, cst.Name) and _made_by(a, receiver, _GRAD_SCALERS):
            return _scaler_enabled(a, receiver)
        if (
            _named_scaler(receiver)
            and not (isinstance(receiver, cst.Name) and _constructor(a, receiver) is not None)
            and self._names_grad_scaler()
        ):
            return "?"  # ``self.scaler``: a scaler by its name, built where syncfix does not look
        return None

    def _names_grad_scaler(self) -> bool:
        """Does the module import or use torch's GradScaler (asked once per file)?"""
        known: bool | None = getattr(self, "_grad_scaler_named", None)
        if known is None:
            known = self._grad_scaler_named = _names_any(self.analysis, _GRAD_SCALERS)
        return known

    def _message(self, node: cst.If, suites) -> str:
        a = self.analysis
        exits: set[str] = set()
        saves = False
        for suite in suites:
            fx = a.effects(suite)
            exits |= fx.exits
            for call in fx.calls:
                callee = a.callee(call) or ""
                text = a.module.code_for_node(call.func)
                if callee == "torch.save" or "save" in text or "checkpoint" in text:
                    saves = True
        outer = a.enclosing_loop(node)
        if "break" in exits and not any(
            outer is not None and a.enclosing_loop(brk) is outer for suite in suites for brk in a.nodes_within(suite, cst.Break)
        ):
            exits.discard("break")  # only an inner loop's own ``break`` (llm-awq's token scan)
        if "break" in exits:
            why = (
                "whether to leave the loop (early stopping, a convergence test, a stop token) depends "
                "on it. Test every N iterations (`if i % N == 0 and ...`), or keep the flag on the "
                "device and read it less often (the loop then ends later)"
            )
        elif "return" in exits:
            why = (
                "whether to return early depends on it. If returning early only skips work, doing the "
                "work anyway and choosing its result on the device (`torch.where`) needs no sync; if it "
                "ends training (early stopping), check every N steps"
            )
        elif "continue" in exits and _NAN_TEST.search(a.module.code_for_node(node.test)):
            why = (
                "skipping a step (e.g. on NaN) needs the value. Keep the step and neutralise it on the "
                "device (`torch.where(torch.isfinite(loss), ...)`; GradScaler with a fused optimizer "
                "does this), or use `torch._assert_async` if a NaN is a bug"
            )
        elif "continue" in exits:
            why = (
                "whether to skip the rest of the iteration depends on it. If what is skipped only "
                "computes values, doing it anyway and choosing its result on the device "
                "(`torch.where`) needs no sync; otherwise decide on values the host already has"
            )
        elif saves:
            why = (
                "saving a checkpoint is a host side effect. Track the best value on the device "
                "(`best = torch.minimum(best, loss.detach())`) and decide every N steps"
            )
        elif all(assignments(s) is not None for s in suites):
            chosen = {name: value for s in suites for name, value in (assignments(s) or {}).items()}
            host = sorted(
                name for name, value in chosen.items()
                if _is_literal(value) or a.python_number_type(value) is not None
            )
            reshaped = sorted(name for name, value in chosen.items() if _reshapes(a, value))
            # ``torch.where`` runs both sides: not a call that may draw random numbers or write
            # (imagen's ``renoised = scheduler.q_sample_from_to(img, ...)``, a ``randn_like``)
            impure = sorted(name for name, value in chosen.items() if not a.is_effect_free(value))
            if host:
                why = (
                    f"the branch sets the Python value {_names(host)}, which later code reads on the "
                    "host. Keep it a device tensor (`torch.where`), or decide every N steps"
                )
            elif reshaped:
                why = (
                    f"the branch changes the shape of {_names(reshaped)} (a concatenation, or a "
                    "selection by a mask or an index tensor), which "
                    "`torch.where` cannot express. Keep the shape fixed (pad, or mask the rows), or "
                    "decide every N steps"
                )
            elif impure:
                why = (
                    f"the branch computes {_names(impure)} with calls syncfix cannot see into. If "
                    "they draw no random numbers and have no side effects, compute both sides and "
                    "choose on the device (`torch.where`); otherwise decide every N steps, or on "
                    "values the host already has"
                )
            else:
                why = (
                    "the branches only choose values. Choose on the device instead, "
                    "`x = torch.where(cond, a, x)`, where both sides are tensors of one shape and dtype "
                    "(SFX201 rewrites such a choice where the tensors are provably on one GPU)"
                )
        else:
            why = (
                "the branch does more than choose values (it calls, stores or tests again), and "
                "that runs on the host after the decision. Decide every N steps, or express it on "
                "the device (`torch.where`, masking)"
            )
        return f"{self.MESSAGE}: {why}{self._host_operand_first(node.test)}"

    def _host_operand_first(self, test: cst.BaseExpression) -> str:
        """``if torch.isnan(x).any() and DEBUG:``: the host operand, tested first, would spare the
        read wherever it decides the test alone (a hint, not a fix: the GPU operand may raise
        or have effects that the swap would skip)."""
        a = self.analysis
        if not isinstance(test, cst.BooleanOperation):
            return ""
        left, right = test.left, test.right
        if not (syncs_on_gpu(a, left) or unplaced_reads(a, left)) or syncs_on_gpu(a, right) or unplaced_reads(a, right):
            return ""
        if not a.is_effect_free(right) or a.likely.is_tensor(right):
            return ""
        flag = a.module.code_for_node(right)
        if len(flag) > 40:
            return ""
        word, when = ("and", "holds") if isinstance(test.operator, cst.And) else ("or", "is false")
        return (
            f"; or test `{flag}` first (`{flag} {word} (...)`): Python then reads the GPU value only "
            f"where `{flag}` {when}"
        )


# A test of a loss or of non-finite values: skipping the step is the usual intent.
_NAN_TEST = re.compile(r"isnan|isinf|isfinite|loss|nan|inf", re.IGNORECASE)
_JOINS = frozenset({"torch.cat", "torch.concat", "torch.concatenate", "torch.stack", "torch.hstack", "torch.vstack"})


def _reshapes(a, value: cst.BaseExpression) -> bool:
    """``torch.cat((...))`` and its kin (a result whose shape depends on how many are joined),
    or ``boxes[valid]`` with a tensor index (as many rows as the mask selects)."""
    if isinstance(value, cst.Subscript):
        return any(
            isinstance(el.slice, cst.Index) and a.likely.is_tensor(el.slice.value) for el in value.slice
        )
    return isinstance(value, cst.Call) and (a.callee(value) or "") in _JOINS


def _is_literal(value: cst.BaseExpression) -> bool:
    return isinstance(value, cst.SimpleString) or (
        isinstance(value, cst.Name) and value.value in ("True", "False", "None")
    )


def _names(names: list[str]) -> str:
    return ", ".join(f"`{n}`" for n in names)


def _only_raise(body: cst.BaseSuite) -> bool:
    stmts = body.body
    if isinstance(body, cst.SimpleStatementSuite):
        return len(stmts) == 1 and isinstance(stmts[0], cst.Raise)
    return (
        len(stmts) == 1
        and isinstance(stmts[0], cst.SimpleStatementLine)
        and len(stmts[0].body) == 1
        and isinstance(stmts[0].body[0], cst.Raise)
    )


def _when(enabled: bool | str, disabled: str) -> str:
    """When a scaler's sync happens: always, or only when it is enabled (what a disabled one does
    instead: ``disabled``)."""
    if enabled is True:
        return ""
    if enabled == "?":
        return f" when the scaler is enabled (a disabled one only {disabled})"
    return f" when the scaler is enabled (`enabled={enabled}`; a disabled one only {disabled})"


def _constructor(a, name: cst.Name) -> cst.Call | None:
    values = a.reaching_values(name)
    if values and len(values) == 1 and isinstance(values[0], cst.Call):
        return values[0]
    return None


def _scaler_enabled(a, name: cst.Name) -> bool | str:
    """Whether the GradScaler bound to ``name`` is enabled: True, False, or the source text of an
    ``enabled`` argument syncfix cannot evaluate."""
    call = _constructor(a, name)
    if call is None:
        return True
    # ``enabled`` follows four (torch.cuda.amp, torch.cpu.amp) or five (torch.amp: ``device``
    # first) positionals
    at = 4 if (a.callee(call) or "").startswith(("torch.cuda.", "torch.cpu.")) else 5
    raw = list(call.args)
    arg = keyword(call, "enabled")
    if arg is None and len(raw) > at and all(x.keyword is None and not x.star for x in raw[: at + 1]):
        arg = raw[at]
    if arg is None:
        return True
    if isinstance(arg.value, cst.Name) and arg.value.value in ("True", "False"):
        return arg.value.value == "True"
    return a.module.code_for_node(arg.value)


def _made_by(a, name: cst.Name, classes: set[str]) -> bool:
    """Is ``name`` bound to a call of one of ``classes`` (one of the objects its name may be
    bound to: RAFT's ``try: from torch.cuda.amp import GradScaler`` has a stand-in for old
    versions in its ``except``)?"""
    call = _constructor(a, name)
    return call is not None and bool(a.qualnames(call.func) & classes)


def _named_scaler(receiver: cst.BaseExpression) -> bool:
    """``scaler``, ``self.grad_scaler``, ``self.state.amp_scaler``: named as a loss scaler."""
    name = dotted_name(receiver)
    return name is not None and name.rsplit(".", 1)[-1].lower().endswith("scaler")


def _names_any(a, qualnames: set[str]) -> bool:
    """Does the module import one of ``qualnames`` (``from torch.cuda.amp import GradScaler``) or
    name it (``torch.amp.GradScaler(...)``, an annotation)?"""
    short = {q.rsplit(".", 1)[-1] for q in qualnames}
    for imp in a.structure.of_type(cst.ImportFrom):
        module = dotted_name(imp.module) if imp.module is not None else None
        if module and not isinstance(imp.names, cst.ImportStar) and any(
            f"{module}.{dotted_name(alias.name)}" in qualnames for alias in imp.names
        ):
            return True
    return any(
        (a.qualname(n) or "") in qualnames
        for kind in (cst.Name, cst.Attribute)
        for n in a.structure.of_type(kind)
        if (n.value if isinstance(n, cst.Name) else n.attr.value) in short
    )
