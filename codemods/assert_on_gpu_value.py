"""SFX203: ``assert`` / ``if ...: raise`` on a GPU value → ``torch._assert_async``."""

from __future__ import annotations

import libcst as cst

from syncfix.rules import Fix, Invalid, Rule

from ._support import Condition, as_tensor_condition, syncs_on_gpu, unplaced_message, unplaced_reads


class AssertOnGpuValue(Rule):
    """
    ## What it finds
    A check that reads a GPU value only to fail: `assert (x >= 0).all(), "msg"`, and guards
    `if not cond: raise ValueError("msg")` / `if cond: raise ...` (no `else`, nothing but the
    `raise`). Where the code repeats, a check on a tensor whose device syncfix cannot name is
    reported too (it syncs every step if the tensor is on a GPU).
    `torch.tensor(x)` without `device=`, of a value syncfix cannot name, is likely a copy of
    host data (a list, an array): a CPU tensor, not reported.

    ## Why it costs
    `assert` and `if` need a Python `bool`: the host copies the value and waits for all queued GPU
    work, every time the check runs, even though it almost never fails
    (docs/semantics.md#host-reads).

    ## Example
    ```python
    assert (probs >= 0).all(), "negative probability"
    if torch.isnan(loss):
        raise FloatingPointError("loss is NaN")
    ```

    ## Use instead
    ```python
    torch._assert_async((probs >= 0).all(), "negative probability")
    torch._assert_async(~(torch.isnan(loss)), "FloatingPointError: loss is NaN")
    ```

    ## Fix safety
    Always **unsafe**: the check moves to the device. A failure no longer raises the original
    exception at this line; it surfaces later as a device-side assert (a `RuntimeError` at some
    later sync, and on CUDA the context is unusable afterwards). An `assert` removed by
    `python -O` now always runs. The fix is offered only when the condition converts exactly
    (same decision as the Python test, 0-d), and the message is a string literal (an f-string
    could itself read the GPU). A test that itself reads a value on the host
    (`t == t[0].item()`) gets no fix: the moved check would still sync there. `torch._assert_async` is a private API of PyTorch (stable since
    1.x, used by PyTorch itself).
    """

    CODE = "SFX203"
    NAME = "assert-on-gpu-value"
    MESSAGE = "Check on a GPU value syncs every time it runs; `torch._assert_async` checks on the device"
    FIX = "sometimes"
    SAFETY = ("unsafe",)
    TRIGGERS = ("assert", "raise")
    VALID = [
        # a Python value: no sync
        "import torch\ndef f(x: torch.Tensor, n: int):\n    assert n > 0\n    return x\n",
        # already asynchronous
        "import torch\nx = torch.randn(3, device='cuda')\ntorch._assert_async((x >= 0).all())\n",
        # an else branch: not a bare guard
        "import torch\nx = torch.randn(3, device='cuda')\nif x.sum() > 0:\n    raise ValueError('x')\n"
        "else:\n    x = x + 1\n",
    ]
    INVALID = [
        Invalid(
            "import torch\nx = torch.randn(3, device='cuda')\nassert (x >= 0).all(), 'negative'\n",
            "import torch\nx = torch.randn(3, device='cuda')\ntorch._assert_async((x >= 0).all(), 'negative')\n",
            unsafe=True,
        ),
        Invalid(
            "import torch\nloss = torch.randn((), device='cuda')\nif torch.isnan(loss):\n"
            "    raise FloatingPointError('loss is NaN')\n",
            "import torch\nloss = torch.randn((), device='cuda')\n"
            "torch._assert_async(~(torch.isnan(loss)), 'FloatingPointError: loss is NaN')\n",
            unsafe=True,
        ),
        # an f-string message may itself read the GPU: finding only
        Invalid(
            "import torch\nx = torch.randn((), device='cuda')\nassert x > 0, f'x={x}'\n",
        ),
    ]

    def visit_Assert(self, node: cst.Assert) -> None:
        a = self.analysis
        unplaced = False
        if not syncs_on_gpu(a, node.test):
            unplaced = unplaced_reads(a, node.test)
            if not unplaced:
                return
        msg = node.msg
        # a name of a string literal just before (pycls's ``err_str = "..."``) is a str as well
        named = isinstance(msg, cst.Name) and isinstance(a.straight_line_binding(msg), cst.SimpleString)
        fix = None
        why: str | None = _COMPUTED_MESSAGE
        if msg is None or isinstance(msg, cst.SimpleString) or named:
            cond = as_tensor_condition(a, node.test)
            text = self._call(node, cond.code if cond else None, a.module.code_for_node(msg) if msg else None)
            why = self._why_not(node, cond)
            if text is not None and why is None:
                fix = self._fix(node, cst.Expr(cst.parse_expression(text)))
        self._report(node, unplaced, fix, why)

    def visit_If(self, node: cst.If) -> None:
        a = self.analysis
        if node.orelse is not None:
            return
        unplaced = False
        if not syncs_on_gpu(a, node.test):
            unplaced = unplaced_reads(a, node.test)  # a tensor of unknown device, every step
            if not unplaced:
                return
        parent = a.parent(node)
        if isinstance(parent, cst.If) and parent.orelse is node:
            return  # an elif: not a bare guard
        raise_ = _only_raise(node.body)
        if raise_ is None:
            return
        fix = None
        why: str | None = _COMPUTED_RAISE
        message = _raise_message(raise_)
        if message is not None:
            test = node.test
            if isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
                cond = as_tensor_condition(a, test.expression)  # fail when not cond
                ok_code = cond.code if cond else None
            else:
                cond = as_tensor_condition(a, test)
                ok_code = f"~({cond.code})" if cond else None
            text = self._call(node, ok_code, repr(message))
            why = self._why_not(node, cond)
            if text is not None and why is None:
                stmt = cst.parse_statement(text + "\n").with_changes(leading_lines=node.leading_lines)
                fix = self._fix(node, stmt)
        self._report(node, unplaced, fix, why)

    def _why_not(self, node: cst.Assert | cst.If, cond: Condition | None) -> str | None:
        """What keeps the check from moving to the device, in words a user can act on."""
        a = self.analysis
        # explicit reads (``.item()``, ``float(t)``), not the truth of the test or its operands
        inner = [
            n for n in a.likely.host_read_syncs(node.test, any_device=True)
            if isinstance(n, cst.Call) and a.likely.host_read(n) is not None
        ]
        if inner:
            # ``assert torch.all(rates == rates[0].item())``: the moved check would still read
            shown = a.module.code_for_node(inner[0])
            return (
                f"the test reads a value on the host itself (`{shown}`), so the check would still "
                "sync there; compare tensors on the device instead (`t == t[0]`, not `t[0].item()`)"
            )
        read = self._read_just_before(node)
        if read is not None:
            # llm-awq's checkpoint check: ``print(diff)``, then ``assert diff < 1e-6``
            return (
                f"`{read[0]}` is read on the host just before (line {read[1]}), so this check waits for "
                "no queued work: moving it would save little and make its failure surface later"
            )
        if cond is None or not cond.exact:
            return (
                "the test has no exact tensor form (a Python value, a chained comparison or a call "
                "syncfix cannot model); a check written as one tensor expression can move"
            )
        if not cond.zero_dim:
            return "the tested tensor is not provably one-element"
        if self.analysis.torch_alias_at(node) is None:
            return "torch is not imported by name"
        return None

    def _read_just_before(self, node: cst.Assert | cst.If) -> tuple[str, int] | None:
        """A name of the test that the statement before reads on the host, with its line."""
        a = self.analysis
        stmt = a.statement_of(node)
        before = (a.statements_before(stmt) or [])[:1] if stmt is not None else []
        if not before or not isinstance(before[0], cst.SimpleStatementLine):
            return None
        tested = {n.value for n in a.nodes_within(node.test, cst.Name)}  # type: ignore[attr-defined]
        reads = list(a.likely.host_read_syncs(before[0], any_device=True))
        # a tensor printed or logged whole (``print(diff)``) is read too
        reads += [
            arg.value for call in a.nodes_within(before[0], cst.Call)
            if isinstance(call, cst.Call) and a.is_logging_call(call) for arg in call.args
        ]
        for read in reads:
            names = [read] if isinstance(read, cst.Name) else a.nodes_within(read, cst.Name)
            for n in names:
                if n.value in tested and a.likely.value(n).is_tensor:  # type: ignore[attr-defined]
                    return n.value, a.positions[before[0]].start.line  # type: ignore[attr-defined]
        return None

    def _report(self, node: cst.CSTNode, unplaced: bool, fix: Fix | None, why: str | None) -> None:
        message = self.MESSAGE + (unplaced_message(self.analysis, node) if unplaced else "")
        self.report(node, message if fix is not None or why is None else f"{message}; no fix: {why}", fix=fix)

    def _call(self, node: cst.CSTNode, cond: str | None, msg: str | None) -> str | None:
        torch = self.analysis.torch_alias_at(node)
        if cond is None or torch is None:
            return None
        return f"{torch}._assert_async({cond}, {msg})" if msg else f"{torch}._assert_async({cond})"

    def _fix(self, node: cst.CSTNode, new: cst.CSTNode) -> Fix:
        # ``python -O`` drops an ``assert``, not the call that replaces it
        also = "; and unlike `assert`, it runs under `python -O`" if isinstance(node, cst.Assert) else ""
        return self.unsafe_fix(
            {node: new},
            "Check on the device with torch._assert_async (unsafe: a failure surfaces later, as a "
            f"device-side assert, not as this exception{also})",
        )


def _only_raise(body: cst.BaseSuite) -> cst.Raise | None:
    smalls: list = []
    if isinstance(body, cst.SimpleStatementSuite):
        smalls = list(body.body)
    else:
        for stmt in body.body:
            if not isinstance(stmt, cst.SimpleStatementLine):
                return None
            smalls.extend(stmt.body)
    if len(smalls) == 1 and isinstance(smalls[0], cst.Raise) and smalls[0].exc is not None:
        return smalls[0]
    return None


_COMPUTED_MESSAGE = (
    "the message is computed (formatting it may read the GPU too); with a string literal, "
    "`torch._assert_async` can check on the device"
)
_COMPUTED_RAISE = (
    "the exception is not `raise Error(\"literal message\")` or a bare `raise Error`, which "
    "`torch._assert_async` needs (its message is a fixed string)"
)


def _raise_message(node: cst.Raise) -> str | None:
    """``"Exc: message"`` for ``raise Exc("message")`` / ``raise Exc``; None for anything else."""
    exc = node.exc
    if isinstance(exc, cst.Name):
        return exc.value
    if isinstance(exc, cst.Call) and isinstance(exc.func, cst.Name):
        if not exc.args:
            return exc.func.value
        if len(exc.args) == 1 and isinstance(exc.args[0].value, cst.SimpleString):
            value = exc.args[0].value.evaluated_value
            if isinstance(value, str):
                return f"{exc.func.value}: {value}"
    return None
