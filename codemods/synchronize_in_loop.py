"""SFX106: ``torch.cuda.synchronize()`` / ``Stream.synchronize()`` / ``Event.synchronize()`` in a loop."""

from __future__ import annotations

import libcst as cst

from syncfix.rules import Invalid, Rule
from syncfix.walk import walk

from ._iterations import runs_every_iteration
from ._support import timed_inner_loop

_DEVICE_SYNC = {"torch.cuda.synchronize", "torch.accelerator.synchronize"}
_STREAMS = {"torch.cuda.Stream", "torch.cuda.current_stream", "torch.cuda.default_stream",
            "torch.cuda.streams.Stream", "torch.Stream"}
_EVENTS = {"torch.cuda.Event", "torch.cuda.streams.Event", "torch.Event"}


class SynchronizeInLoop(Rule):
    """
    ## What it finds
    An explicit synchronization inside a loop: `torch.cuda.synchronize()`,
    `stream.synchronize()` (a `torch.cuda.Stream`, `current_stream()`...) and
    `event.synchronize()` (a `torch.cuda.Event`).

    A **deliberate** synchronization is reported as "deliberate (timing)": one whose next
    statement reads a clock (`time.time()`, `time.perf_counter()`, `time.monotonic()`,
    `timeit.default_timer()`..., or starts or stops a timer object: `timer.toc()`,
    `meter.iter_tic()`, any `tic`/`toc` method, or `start`/`stop`/`lap`/`elapsed`... of an object
    named for a timer or stopwatch), in the same or the next statement, or after at most two log
    lines such as `print(...)` or `logger.info(...)` or counter updates (`num_updates += 1`); a sync that ends an `if`/`elif`/`else`
    branch is followed by what follows the `if`), one followed by an event's `elapsed_time`
    (whichever sync completes the event: the event's, its stream's or the device's), and one under an `if` that tests a timing switch (`if args.sync:`,
    `if self.benchmark:`, `if profile:`, `if cfg.timing:`: a name or attribute made of words
    such as `sync`, `benchmark`, `profile`, `timing`, `timer`). There the wait is the point.

    ## Why it costs
    `torch.cuda.synchronize()` waits for all work on the whole device (every stream);
    `Stream.synchronize()` for all work on that stream; `Event.synchronize()` up to the recorded
    point. Each one empties the GPU's queue: the CPU cannot run ahead and queue the next
    iteration while the GPU works, so the GPU idles for the CPU's launch time every iteration.
    `set_sync_debug_mode` does not see `torch.cuda.synchronize()` or `Event.synchronize()`
    (docs/semantics.md#explicit-waits, docs/semantics.md#counting-syncs).

    ## Example
    ```python
    for batch in loader:
        loss = step(batch)
        torch.cuda.synchronize()
    ```

    ## Use instead
    ```python
    for batch in loader:
        loss = step(batch)
    torch.cuda.synchronize()  # once, if anything on the host needs the results
    ```
    To time iterations without stalling each one, record `torch.cuda.Event(enable_timing=True)`
    pairs in the loop and read `elapsed_time` once after it.

    ## Fix safety
    No fix: a synchronization is sometimes needed (host code reads memory a kernel wrote through a
    raw pointer, another library shares the buffers, wall-clock timing). syncfix cannot prove it
    is not, so it only reports. A deliberate (timing) synchronization is reported as such, not as
    a bug, and is never rewritten: the wait is the point of it, and the cost is only that the
    timed loop runs slower than the untimed one (CUDA events, read after the loop, time the GPU
    without that; where the loop records events already, the message says they suffice).
    """

    CODE = "SFX106"
    NAME = "synchronize-in-loop"
    MESSAGE = "Explicit synchronize in a loop: the CPU waits for the GPU every iteration"
    FIX = "never"
    SAFETY = ()
    TRIGGERS = ("synchronize(",)
    VALID = [
        # once, after the loop
        "import torch\nfor _ in range(3):\n    pass\ntorch.cuda.synchronize()\n",
        # not torch
        "import threading\nfor _ in range(3):\n    threading.Barrier(1).synchronize()\n",
        # a non-blocking poll
        "import torch\ne = torch.cuda.Event()\nwhile not e.query():\n    pass\n",
    ]
    INVALID = [
        Invalid("import torch\nfor _ in range(3):\n    torch.cuda.synchronize()\n"),
        Invalid("import torch\ns = torch.cuda.Stream()\nwhile True:\n    s.synchronize()\n"),
        Invalid(
            "import time\nimport torch\nfor _ in range(3):\n    torch.cuda.synchronize()\n"
            "    t0 = time.perf_counter()\n"
        ),
    ]

    def visit_Call(self, node: cst.Call) -> None:
        a = self.analysis
        if a.enclosing_loop(node) is None:
            return
        what = self._what(node)
        if what is None:
            return
        why = self._deliberate(node, what)
        if why is not None and timed_inner_loop(a, node):
            # nanoGPT's bench.py: ``for stage ...: t0 = time.time(); for k ...: step();
            # torch.cuda.synchronize(); t1 = time.time()``: the timed loop holds no sync
            message = (
                f"{what} in a loop, deliberate (timing): {why}; left as is. It closes the timing "
                "of the loop before it, once per pass of this loop, where the clock read needs it"
            )
        elif why is not None and not runs_every_iteration(a, node):
            message = (
                f"{what} in a loop, deliberate (timing): {why}; left as is. It stalls the "
                "iterations where its `if` lets it run; CUDA events (`Event(enable_timing=True)`, "
                "read later) time the GPU without that"
            )
        elif why is not None and self._records_events(a.enclosing_loop(node)):
            # k-diffusion: ``synchronize()`` around ``start.record()``/``end.record()``
            message = (
                f"{what} in a loop, deliberate (timing): {why}; left as is. It stalls every "
                "iteration, so the timed loop runs slower than the untimed one; the loop's CUDA "
                "events time the GPU without it: read `elapsed_time` later, after the end "
                "event's own `synchronize()`, where the time is shown"
            )
        elif why is not None:
            message = (
                f"{what} in a loop, deliberate (timing): {why}; left as is. It stalls every "
                "iteration, so the timed loop runs slower than the untimed one; CUDA events "
                "(`Event(enable_timing=True)`, read after the loop) time the GPU without that"
            )
        elif runs_every_iteration(a, node):
            message = f"{what} in a loop: the CPU waits for the GPU every iteration"
        else:
            message = f"{what} in a loop: the CPU waits for the GPU each time it runs"
        self.report(node, message)

    def _records_events(self, loop: cst.CSTNode | None) -> bool:
        """Does ``loop`` record a CUDA event it makes or names (``end.record()``)?"""
        a = self.analysis
        for call in a.structure.within(loop, cst.Call) if loop is not None else ():
            func = call.func  # type: ignore[attr-defined]
            if isinstance(func, cst.Attribute) and func.attr.value == "record" and isinstance(func.value, cst.Name):
                makers = a.reaching_values(func.value) or []
                if makers and all(isinstance(m, cst.Call) and a.qualnames(m.func) & _EVENTS for m in makers):
                    return True
        return False

    def _what(self, node: cst.Call) -> str | None:
        a = self.analysis
        if a.qualnames(node.func) & _DEVICE_SYNC:
            return "torch.cuda.synchronize()"
        func = node.func
        if not isinstance(func, cst.Attribute) or func.attr.value != "synchronize" or node.args:
            return None
        receiver = func.value
        makers: list[cst.CSTNode] = [receiver]
        if isinstance(receiver, cst.Name):
            makers = a.reaching_values(receiver) or []
        kinds = set()
        for maker in makers:
            if not isinstance(maker, cst.Call):
                return None
            names = a.qualnames(maker.func)
            kinds.add("Stream" if names & _STREAMS else "Event" if names & _EVENTS else None)
        if len(kinds) != 1 or None in kinds:
            return None
        return f"{kinds.pop()}.synchronize()"

    def _deliberate(self, node: cst.Call, what: str) -> str | None:
        """Why this sync is deliberate timing code (a clock read next, a timing switch), or None."""
        if self._is_timing(node, what):
            return "a clock or timer read follows it"
        flag = self._timing_switch(node)
        if flag is not None:
            return f"it runs under `if {flag}:`, a timing switch"
        return None

    def _timing_switch(self, node: cst.Call) -> str | None:
        """The test of an ``if`` (inside the loop) around ``node`` that reads a timing switch."""
        a = self.analysis
        loop = a.enclosing_loop(node)
        for anc in a.ancestors(node):
            if anc is loop:
                return None
            if isinstance(anc, cst.If) and _names_switch(anc.test):
                return _code(anc.test)
        return None

    def _is_timing(self, node: cst.Call, what: str) -> bool:
        """Is the first thing done after this sync a clock read (or an event's elapsed_time)?"""
        a = self.analysis
        small = next((n for n in a.ancestors(node) if isinstance(n, cst.BaseSmallStatement)), None)
        line = a.statement_of(node)
        if small is None or not isinstance(line, cst.SimpleStatementLine):
            return False
        body = list(line.body)
        following = body[body.index(small) + 1 :][:1]
        if not following:  # the first statement of the next line, past log lines
            current: cst.CSTNode = line
            block = a.block_of(current)
            stmts = list(block[1]) if block is not None else []
            i = next((i for i, s in enumerate(stmts) if s is current), len(stmts))
            while i == len(stmts) - 1 and (chain := _if_chain_of(a, current)) is not None:
                # the last line of an ``if``/``elif``/``else`` branch: what follows the ``if``
                current = chain
                block = a.block_of(current)
                stmts = list(block[1]) if block is not None else []
                i = next((i for i, s in enumerate(stmts) if s is current), len(stmts))
            for after in stmts[i + 1 : i + 1 + _LOG_LINES_SKIPPED + 1]:
                if not isinstance(after, cst.SimpleStatementLine):
                    break
                following = list(after.body)[:1]
                if not self._log_line(after) or a.is_clock_read(after):
                    break
        targets: list[cst.CSTNode] = [small, *following]
        if any(a.is_clock_read(t) for t in targets):
            return True
        # an event's ``elapsed_time`` after any sync that completes the event (the event's own,
        # its stream's, or the device's): reading it without the wait would raise
        return any(".elapsed_time(" in _code(t) for t in targets)

    def _log_line(self, line: cst.SimpleStatementLine) -> bool:
        """Is ``line`` only log calls (``print(...)``, ``logger.info(...)``), counter updates
        by a literal (PoolFormer's ``num_updates += 1``, of a name not known to be a tensor) or
        counter resets (hiera's ``total = 0``)? They queue no GPU work, so a clock read after
        them still times what the sync waited for."""
        a = self.analysis
        return all(
            isinstance(s, cst.Expr) and isinstance(s.value, cst.Call) and a.is_logging_call(s.value)
            or isinstance(s, cst.AugAssign)
            and isinstance(s.target, cst.Name)
            and isinstance(s.value, (cst.Integer, cst.Float))
            and not a.value(s.target).is_tensor
            or isinstance(s, cst.Assign)
            and all(isinstance(t.target, cst.Name) for t in s.targets)
            and isinstance(s.value, (cst.Integer, cst.Float))
            for s in line.body
        )


def _if_chain_of(a, stmt: cst.CSTNode) -> cst.If | None:
    """The outermost ``if`` of the chain whose branch (body, ``elif``, ``else``) holds ``stmt``
    directly, or None."""
    block = a.parent(stmt)
    owner = a.parent(block) if isinstance(block, cst.IndentedBlock) else None
    if isinstance(owner, cst.Else):
        owner = a.parent(owner)
    if not isinstance(owner, cst.If):
        return None
    while isinstance(parent := a.parent(owner), cst.If) and parent.orelse is owner:
        owner = parent
    return owner


# Log lines that may stand between a sync and its clock read (``synchronize(); print(...);
# t = time.time()``): a few, so that "a clock or timer read follows it" stays true to the eye.
_LOG_LINES_SKIPPED = 2

# Words that make a name a timing switch (``args.sync``, ``self.benchmark``, ``do_profile``).
_SWITCH_WORDS = {
    "sync", "synchronize", "synchronous", "bench", "benchmark", "benchmarking", "profile",
    "profiling", "profiler", "timing", "timings", "timer", "timed", "measure",
}


def _names_switch(test: cst.BaseExpression) -> bool:
    """Does ``test`` read a name or attribute whose words mark a timing switch?"""
    found = False

    class V(cst.CSTVisitor):
        def visit_Name(self, node: cst.Name) -> None:
            nonlocal found
            found = found or bool(set(node.value.lower().split("_")) & _SWITCH_WORDS)

    walk(test, V())
    return found


def _code(node: cst.CSTNode) -> str:
    return cst.Module(body=[]).code_for_node(node)
