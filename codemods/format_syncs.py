"""SFX403: formatting a CUDA tensor (``f"{loss}"``, ``"%s" % t``, ``print(t)``) reads it to the host."""

from __future__ import annotations

import libcst as cst

from syncfix.analysis import LOG_LEVELS, Device
from syncfix.rules import Invalid, Rule

from ._iterations import runs_every_iteration
from ._memory import aliases_in
from ._support import unplaced_message, unplaced_tensor

# Builtins that turn their tensor arguments into text (``str(t)`` walks every element).
_PRINTING = {"builtins.print": "printed", "builtins.str": "`str`", "builtins.repr": "`repr`"}
_PRINTED_NAMES = frozenset(name.rpartition(".")[2] for name in _PRINTING)
_PRINT_LESS = "format it less often (every N steps), or keep the tensors and format them after the loop"


class FormatSyncs(Rule):
    """
    ## What it finds
    A CUDA tensor formatted into text: an f-string field (`f"loss {loss}"`,
    `logger.debug(f"{t}")`), a `%` format (`"%s" % t`, `"%.3f" % loss`), `str.format`, or
    a tensor printed or made text (`print(loss)`, `print("x", x)`, `str(t)`, `repr(t)`: no
    fix, there is no sync-free way to print a GPU tensor's values).
    A tensor whose device syncfix cannot name (the loss of a model passed in as a parameter) is
    reported, without a fix, where it is formatted on every iteration of a loop: it syncs there
    if it is on a GPU. Under `if step % 100 == 0:` it is formatted once per hundred steps, and
    is not reported.

    ## Why it costs
    Formatting reads the values: `f"{t}"` of a 0-d tensor calls `item()` (1 sync), and `str(t)`
    of a tensor walks it element by element (8 syncs for a 0-d tensor, 18 for 6 floats: see
    docs/semantics.md#host-reads). An f-string is built even when the log level filters the record out:
    `logger.debug(f"{t}")` syncs with DEBUG off; `logger.debug("%s", t)` does not (0 syncs when
    filtered; formatting happens only when a handler emits the record).

    ## Example
    ```python
    logger.debug(f"gradients {grads}")
    ```

    ## Use instead
    ```python
    logger.debug("gradients %s", grads)
    ```

    ## Fix safety
    The fix (f-string → lazy `%s` arguments of a `logging` call) is **safe** only where the text
    is provably identical: every field of the f-string is a tensor provably of rank 1 (e.g.
    `x.flatten()`), with no format spec and no conversion, and the call is a logger's level
    method with the f-string as its only argument, of a logger provably the standard library's
    (`logging.info`, or a name bound to `logging.getLogger(...)`; another logger, such as
    loguru's or a class of the project's, may not take %-style arguments: **unsafe**). For a tensor of rank ≥ 1, `format(t, "")` is
    `str(t)`, which is what `%s` gives; literal `%` signs are doubled. For a **0-d** tensor
    `f"{t}"` prints the Python number (`0.12345679104328156`) while `%s` prints
    `tensor(0.1235, device='cuda:0')`, so 0-d tensors and tensors of unknown rank get a finding
    only (read them explicitly, merged with other reads: SFX301). `record.msg`/`record.args`
    change (the rendered message does not): a filter that inspects `record.msg` would see the
    template. A handler that formats records later (`logging.handlers.MemoryHandler`) prints the
    tensors as they are then: where the function writes them in place afterwards (through any
    name for their memory, or by passing them to code syncfix cannot see), the fix is
    **unsafe**.
    """

    CODE = "SFX403"
    NAME = "format-syncs"
    MESSAGE = "A CUDA tensor is formatted into text: every format reads it to the host"
    FIX = "sometimes"
    SAFETY = ("safe", "unsafe")
    TRIGGERS = ("{", "%", ".format(", "print(", "str(", "repr(")
    VALID = [
        # an explicit read: SFX301's business
        "import torch\nloss = torch.ones(3, device='cuda').mean()\nprint(f'{loss.item():.3f}')\n",
        # a CPU tensor
        "import torch\nt = torch.ones(3)\nprint(f'{t}')\n",
    ]
    INVALID = [
        Invalid(
            "import logging\nimport torch\nlog = logging.getLogger()\n"
            "g = torch.randn(4, 4, device='cuda').flatten()\nlog.debug(f'grads {g} (100%)')\n",
            "import logging\nimport torch\nlog = logging.getLogger()\n"
            "g = torch.randn(4, 4, device='cuda').flatten()\nlog.debug('grads %s (100%%)', g)\n",
        ),
        # the tensor is written afterwards: a handler formatting later would print the new values
        Invalid(
            "import logging\nimport torch\nlog = logging.getLogger()\n"
            "g = torch.zeros(4, device='cuda')\nlog.debug(f'g {g}')\ng.add_(1)\n",
            "import logging\nimport torch\nlog = logging.getLogger()\n"
            "g = torch.zeros(4, device='cuda')\nlog.debug('g %s', g)\ng.add_(1)\n",
            unsafe=True,
        ),
        # a 0-d tensor: f"{t}" prints a number, "%s" would print tensor(...): finding only
        Invalid(
            "import torch\nloss = torch.ones(3, device='cuda').mean()\nprint(f'loss {loss}')\n",
            None,
        ),
    ]

    def visit_FormattedString(self, node: cst.FormattedString) -> None:
        a = self.analysis
        fields = [p for p in node.parts if isinstance(p, cst.FormattedStringExpression)]
        gpu = [f for f in fields if self._gpu_tensor(f.expression)]
        if not gpu:
            self._report_unplaced([f.expression for f in fields], "f-string field")
            return
        fix = self._lazy_fix(node)
        if fix is None:
            self.report(gpu[0].expression, f"{self.MESSAGE} (f-string field `{a.module.code_for_node(gpu[0].expression)}`)")
        else:
            self.report(gpu[0].expression, fix=fix)

    def visit_BinaryOperation(self, node: cst.BinaryOperation) -> None:
        if not isinstance(node.operator, cst.Modulo):
            return
        if not isinstance(node.left, (cst.SimpleString, cst.ConcatenatedString)):
            return
        right = node.right
        items = [el.value for el in right.elements] if isinstance(right, cst.Tuple) else [right]
        for item in items:
            if self._gpu_tensor(item):
                self.report(item, f"{self.MESSAGE} (`%` format)")
                return
        self._report_unplaced(items, "`%` format")

    def visit_Call(self, node: cst.Call) -> None:
        func = node.func
        # ``print``/``str``/``repr`` by name (not rebound): resolved only for those names
        callee = self.analysis.callee(node) if isinstance(func, cst.Name) and func.value in _PRINTED_NAMES else None
        if callee in _PRINTING:
            # ``print(loss)``, ``str(t)``: the tensor's text, every element read to the host
            shown = [arg.value for arg in node.args if arg.keyword is None and not arg.star]
            if callee != "builtins.print" and len(shown) != 1:
                return
            form = _PRINTING[callee]
            for expr in shown:
                if self._gpu_tensor(expr):
                    shown_expr = self.analysis.module.code_for_node(expr)
                    self.report(expr, f"{self.MESSAGE} ({form} `{shown_expr}`); no fix: {_PRINT_LESS}")
                    return
            self._report_unplaced(shown, form)
            return
        if (
            isinstance(func, cst.Attribute)
            and func.attr.value == "format"
            and isinstance(func.value, (cst.SimpleString, cst.ConcatenatedString))
        ):
            for arg in node.args:
                if self._gpu_tensor(arg.value):
                    self.report(arg.value, f"{self.MESSAGE} (`str.format`)")
                    return
            self._report_unplaced([arg.value for arg in node.args], "`str.format`")

    def _report_unplaced(self, exprs: list[cst.BaseExpression], form: str) -> None:
        """A tensor whose device syncfix cannot name (a loss of a model passed in), formatted
        on every iteration of a loop: reported, without a fix (as SFX105 does a log line that
        reads one with ``.item()``; under ``if step % 100 == 0:`` it stays quiet)."""
        a = self.analysis
        found = next((e for e in exprs if unplaced_tensor(a, e) and not self._in_raise(e)), None)
        if found is None:
            return
        stmt = a.statement_of(found)
        if stmt is None or not runs_every_iteration(a, stmt):
            return
        shown = a.module.code_for_node(found)
        self.report(
            found,
            f"A tensor is formatted into text: every format reads it to the host ({form} `{shown}`)"
            f"{unplaced_message(a, found)}; no fix: {_PRINT_LESS}",
        )

    def _gpu_tensor(self, expr: cst.BaseExpression) -> bool:
        """A tensor provably (or by a cuda-or-cpu device choice) on the GPU, outside a ``raise``."""
        a = self.analysis
        v = a.value(expr)
        if not (v.is_tensor and v.device in (Device.CUDA, Device.CUDA_OR_CPU)):
            return False
        return not self._in_raise(expr)

    def _in_raise(self, expr: cst.BaseExpression) -> bool:
        """Is ``expr`` in a ``raise`` statement (an error's message: formatted once)?"""
        stmt = self.analysis.statement_of(expr)
        return isinstance(stmt, cst.SimpleStatementLine) and any(isinstance(s, cst.Raise) for s in stmt.body)

    def _lazy_fix(self, node: cst.FormattedString):
        a = self.analysis
        arg = a.parent(node)
        call = a.parent(arg) if arg is not None else None
        if not (isinstance(call, cst.Call) and len(call.args) == 1 and call.args[0].value is node):
            return None
        func = call.func
        if not (isinstance(func, cst.Attribute) and func.attr.value in LOG_LEVELS - {"log"}):
            return None
        if not a.is_logging_call(call) or a.callee(call) == "builtins.print":
            return None
        if "b" in node.prefix.lower():
            return None
        text, args = [], []
        for part in node.parts:
            if isinstance(part, cst.FormattedStringText):
                if "{" in part.value or "}" in part.value or "\\" in part.value:
                    return None  # escaped braces or escapes: keep it simple
                text.append(part.value.replace("%", "%%"))
                continue
            if not isinstance(part, cst.FormattedStringExpression):
                return None  # no other kind of part exists
            if part.format_spec is not None or part.conversion is not None or part.equal is not None:
                return None
            if not (self._gpu_tensor(part.expression) and a.is_one_dim(part.expression)):
                return None
            text.append("%s")
            args.append(part.expression)
        quote = node.end
        template = cst.SimpleString(f"{node.prefix.replace('f', '').replace('F', '')}{quote}{''.join(text)}{quote}")
        new_args = [cst.Arg(template, comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" ")))]
        for i, expr in enumerate(args):
            last = i == len(args) - 1
            new_args.append(
                cst.Arg(expr, comma=cst.MaybeSentinel.DEFAULT if last else cst.Comma(whitespace_after=cst.SimpleWhitespace(" ")))
            )
        changes = {call: call.with_changes(args=new_args)}
        description = "Pass the tensors as lazy %s arguments (formatted only if the record is emitted)"
        if not self._stdlib_logger(func):
            return self.unsafe_fix(
                changes,
                description + " (unsafe: the logger is not provably a `logging` logger; one that "
                "does not format %-style arguments, or takes one message only, would break)",
            )
        if self._written_later(call, args):
            return self.unsafe_fix(
                changes,
                description + " (unsafe: the code writes these tensors in place afterwards, and a "
                "handler that formats records later, such as a MemoryHandler, would print the new "
                "values)",
            )
        return self.safe_fix(changes, description)

    def _stdlib_logger(self, func: cst.Attribute) -> bool:
        """``logging.info``, or a name bound only to ``logging.getLogger(...)``: %-style
        arguments are the standard library's."""
        a = self.analysis
        if (a.qualname(func) or "").startswith("logging."):
            return True
        if not isinstance(func.value, cst.Name):
            return False
        values = a.reaching_values(func.value) or []
        return bool(values) and all(
            isinstance(v, cst.Call) and a.callee(v) == "logging.getLogger" for v in values
        )

    def _written_later(self, call: cst.Call, exprs: list[cst.BaseExpression]) -> bool:
        """Is the memory of a formatted tensor (through any name for it) written in place, or
        passed to code that may write it, anywhere in the function (a loop comes round again)?"""
        a = self.analysis
        scope = a.enclosing_function(call) or a.module
        names = {n.value for e in exprs for n in a.nodes_within(e, cst.Name) if isinstance(n, cst.Name)}
        shared = aliases_in(a, scope, names, upward=True)
        stmt = a.statement_of(call)
        for s in a.nodes_within(scope, cst.SimpleStatementLine):
            if s is stmt or a.enclosing_function(s) is not a.enclosing_function(call):
                continue
            fx = a.effects(s)
            if shared & fx.inplace or (fx.may_mutate_anything and shared & fx.reads):
                return True
        return False
