"""Effects: what a statement reads, writes, mutates in place and exits with; which calls are
pure, effect-free, logging or clock reads.

:func:`effects` gives, per statement, the names it reads and writes, the names whose tensors it
mutates in place (``add_``/``copy_``/``fill_``..., indexed or attribute stores, ``+=``,
``out=``), whether it calls something that may mutate anything (``optimizer.step()``, unknown
calls), and the control-flow exits it contains (``break``/``continue``/``return``/``raise``/
``yield``). :func:`is_effect_free` says evaluating an expression changes nothing (no impure
call, no in-place op, no random draw).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import libcst as cst

from ..walk import walk
from .syntax import dotted_name, in_place_keyword, keyword, positional, target_names
from .torch_api import (
    CLOCKS,
    LEGACY_CONSTRUCTORS,
    LOG_LEVELS,
    PURE_BUILTINS,
    RANDOM_OPS,
    TENSOR_NAMESPACES,
    is_inplace_method,
    shares_first_argument,
)
from .values import Kind

if TYPE_CHECKING:
    from .module import ModuleAnalysis


# Iterating these yields their items without running code that could write anything.
# In-place operator methods called by name (``x.__iadd__(1)``, ``x.__setitem__(0, v)``).
_INPLACE_DUNDERS = frozenset({
    "__setitem__", "__delitem__", "__iadd__", "__isub__", "__imul__", "__itruediv__",
    "__ifloordiv__", "__imod__", "__ipow__", "__iand__", "__ior__", "__ixor__", "__ilshift__",
    "__irshift__", "__imatmul__",
})
_PLAIN_ITERABLES = frozenset({Kind.TENSOR, Kind.TENSORS, Kind.NUMBER, Kind.NDARRAY})
# Builtins whose iteration is their arguments' iteration.
_PASS_THROUGH = frozenset({"builtins.enumerate", "builtins.zip", "builtins.reversed", "builtins.iter"})
# What iterates without running code: displays, eager comprehensions, strings.
_DISPLAYS = (
    cst.List, cst.Tuple, cst.Set, cst.Dict, cst.ListComp, cst.SetComp, cst.DictComp,
    cst.SimpleString, cst.ConcatenatedString, cst.FormattedString,
)
# Calls whose result is plain data (iterated without running code).
_PLAIN_RESULTS = frozenset({
    "builtins.range", "builtins.list", "builtins.tuple", "builtins.sorted", "builtins.set",
    "builtins.dict", "builtins.frozenset",
})
# Builtins that run through the iterable they are given.
_CONSUMERS = frozenset({
    "builtins.list", "builtins.tuple", "builtins.set", "builtins.frozenset", "builtins.dict",
    "builtins.sum", "builtins.min", "builtins.max", "builtins.any", "builtins.all", "builtins.sorted",
})


_NESTED = (cst.Lambda, cst.ListComp, cst.SetComp, cst.DictComp, cst.GeneratorExp)


@dataclass
class Effects:
    """What one statement (or expression) does, as far as the rules care."""

    reads: set[str] = field(default_factory=set)
    writes: set[str] = field(default_factory=set)  # names (re)bound
    inplace: set[str] = field(default_factory=set)  # root names whose object is mutated
    may_mutate_anything: bool = False  # an unknown call, optimizer.step(), ...
    exits: set[str] = field(default_factory=set)  # break/continue/return/raise/yield/await
    calls: list[cst.Call] = field(default_factory=list)

    @property
    def has_control_flow(self) -> bool:
        return bool(self.exits)


class _EffectsVisitor(cst.CSTVisitor):
    def __init__(self, analysis: ModuleAnalysis) -> None:
        self.a = analysis
        self.fx = Effects()

    # Nested scopes run later (or never): their bodies are not this statement's effects,
    # but their free names are read, so we keep visiting expressions of lambdas/comprehensions.
    def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
        self.fx.writes.add(node.name.value)
        return False

    def visit_ClassDef(self, node: cst.ClassDef) -> bool:
        self.fx.writes.add(node.name.value)
        return False

    def visit_Name(self, node: cst.Name) -> None:
        scope = self.a.scope(node)
        owner = getattr(scope, "node", None)
        if isinstance(owner, _NESTED) and scope is not None and node.value in scope.assignments:
            return  # a lambda's parameter or a comprehension's variable: another variable
        self.fx.reads.add(node.value)

    def visit_Param(self, node: cst.Param) -> bool:
        if node.default is not None:
            walk(node.default, self)  # evaluated where the lambda is made; the name is its own
        return False

    # ``opt.step`` reads ``opt``, not a name ``step``; ``f(lr=x)`` reads ``x``, not ``lr``.
    def visit_Attribute(self, node: cst.Attribute) -> bool:
        walk(node.value, self)
        return False

    def visit_Arg(self, node: cst.Arg) -> bool:
        walk(node.value, self)
        return False

    def _written(self, expr: cst.BaseExpression) -> bool:
        """Mark the names whose memory a write through ``expr`` may reach (:func:`written_roots`);
        False when there is none to mark."""
        roots = written_roots(self.a, expr)
        self.fx.inplace.update(roots)
        return bool(roots)

    def _store(self, target: cst.BaseExpression) -> None:
        for name in target_names(target):
            self.fx.writes.add(name.value)
        if isinstance(target, (cst.Subscript, cst.Attribute)):
            self._written(target)
        elif isinstance(target, (cst.Tuple, cst.List)):
            for el in target.elements:
                if isinstance(el.value, (cst.Subscript, cst.Attribute)):
                    self._store(el.value)

    def visit_Assign(self, node: cst.Assign) -> None:
        for t in node.targets:
            self._store(t.target)

    def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
        if node.value is not None:
            self._store(node.target)

    def visit_AugAssign(self, node: cst.AugAssign) -> None:
        self._store(node.target)
        self._written(node.target)  # ``t += 1`` mutates a tensor in place

    def visit_For(self, node: cst.For) -> None:
        self._store(node.target)
        self._iterates(node.iter)
        if node.asynchronous is not None:
            self.fx.exits.add("await")  # ``async for``: other tasks run between items

    def visit_CompFor(self, node: cst.CompFor) -> None:
        self._iterates(node.iter)
        if node.asynchronous is not None:
            self.fx.exits.add("await")

    def _iterates(self, it: cst.BaseExpression) -> None:
        """Iterating ``it`` runs its ``__next__``: a generator's, a ``map``'s function, a loader's
        dataset, any of which may write what it holds. Only data that yields without running
        code (a tensor, an array, a display, ``range``, ``enumerate``/``zip`` of those) is safe."""
        if isinstance(it, _DISPLAYS):
            return
        if isinstance(it, cst.Call):
            name = self.a.callee(it)
            if name in _PASS_THROUGH:
                for arg in it.args:
                    self._iterates(arg.value)
                return
            if name is not None and name.startswith("builtins.") and name[len("builtins."):] in PURE_BUILTINS:
                return  # ``range(n)``, ``sorted(...)``, ``x.items()``-like results: plain data
            return  # any other call is judged by visit_Call (an unknown one may mutate anything)
        if self.a.value(it).kind in _PLAIN_ITERABLES:
            return
        if isinstance(it, cst.Name):  # a name bound only to displays (or to plain iterables)
            bound = self.a.reaching_values(it)
            if bound and all(
                isinstance(v, _DISPLAYS)
                or isinstance(v, cst.Call) and self.a.callee(v) in _PLAIN_RESULTS
                for v in bound
            ):
                return
        self.fx.may_mutate_anything = True

    def visit_WithItem(self, node: cst.WithItem) -> None:
        if node.asname is not None:
            self._store(node.asname.name)

    def visit_NamedExpr(self, node: cst.NamedExpr) -> None:
        self._store(node.target)

    def visit_Del(self, node: cst.Del) -> None:
        self._store(node.target)

    def visit_Import(self, node: cst.Import) -> None:
        for alias in node.names:
            name: cst.BaseExpression = alias.asname.name if alias.asname else alias.name
            while isinstance(name, cst.Attribute):
                name = name.value
            if isinstance(name, cst.Name):
                self.fx.writes.add(name.value)

    def visit_ImportFrom(self, node: cst.ImportFrom) -> None:
        if isinstance(node.names, cst.ImportStar):
            self.fx.may_mutate_anything = True
            return
        for alias in node.names:
            name = alias.asname.name if alias.asname else alias.name
            if isinstance(name, cst.Name):
                self.fx.writes.add(name.value)

    def visit_Call(self, node: cst.Call) -> None:
        self.fx.calls.append(node)
        if len(node.args) == 1 and not node.args[0].star and self.a.callee(node) in _CONSUMERS:
            self._iterates(node.args[0].value)
        func = node.func
        out = keyword(node, "out")
        if out is not None:
            self._written(out.value)
        if isinstance(func, cst.Attribute) and (
            is_inplace_method(func.attr.value) or func.attr.value in _INPLACE_DUNDERS
        ):
            # ``x.add_(1)`` writes ``x``; ``torch.relu_(x)``, ``torch.Tensor.add_(x, 1)``,
            # ``nn.init.zeros_(w)`` write their first argument (not ``torch``)
            args = [arg.value for arg in node.args if arg.keyword is None and not arg.star]
            function = (self.a.callee(node) or "").startswith("torch.")
            written = self._written(args[0]) if function and args else False if function else self._written(func.value)
            if not written and function and any(arg.star for arg in node.args):
                self.fx.may_mutate_anything = True
            return
        if isinstance(func, cst.Call) and self.a.callee(func) == "builtins.getattr" and func.args:
            # ``getattr(x, "mul_")(0)``: whatever method it names may write ``x``
            self._written(func.args[0].value)
        if in_place_keyword(node):  # ``F.relu(x, inplace=True)`` writes ``x``
            args = [arg.value for arg in node.args if arg.keyword is None and not arg.star]
            if not (args and self._written(args[0])):
                self.fx.may_mutate_anything = True
        if not self.a.is_pure_call(node):
            self.fx.may_mutate_anything = True

    def visit_Break(self, node: cst.Break) -> None:
        self.fx.exits.add("break")

    def visit_Continue(self, node: cst.Continue) -> None:
        self.fx.exits.add("continue")

    def visit_Return(self, node: cst.Return) -> None:
        self.fx.exits.add("return")

    def visit_Raise(self, node: cst.Raise) -> None:
        self.fx.exits.add("raise")

    def visit_Yield(self, node: cst.Yield) -> None:
        self.fx.exits.add("yield")

    def visit_Await(self, node: cst.Await) -> None:
        self.fx.exits.add("await")

    def visit_Try(self, node: cst.Try) -> None:
        self.fx.exits.add("try")

    def visit_Assert(self, node: cst.Assert) -> None:
        self.fx.exits.add("raise")


def effects(a: ModuleAnalysis, stmt: cst.CSTNode) -> Effects:
    fx = a.cache.effects.get(stmt)
    if fx is None:
        v = _EffectsVisitor(a)
        a.walk(stmt, v)
        fx = a.cache.effects[stmt] = v.fx
    return fx


_STRING_LITERALS = (cst.SimpleString, cst.ConcatenatedString)


def is_pure_call(a: ModuleAnalysis, call: cst.Call) -> bool:
    """A call that mutates none of its arguments nor anything else we can see."""
    func = call.func
    inplace = keyword(call, "inplace")  # ``F.relu(x, inplace=True)``
    if inplace is not None and not (isinstance(inplace.value, cst.Name) and inplace.value.value == "False"):
        return False
    # A method of a tensor first: local names have qualified names too
    # (``f.<locals>.x.mean``), which say nothing about purity.
    if isinstance(func, cst.Attribute) and a.value(func.value).is_tensor:
        method = func.attr.value
        if is_inplace_method(method) or keyword(call, "out") is not None:
            return False
        # ``numpy()``/storages hand out the same memory to code we do not follow
        return method not in (
            "backward", "register_hook", "record_stream", "apply_", "numpy", "untyped_storage",
            "storage", "__array__", "__dlpack__",
        )
    if isinstance(func, cst.Attribute) and func.attr.value == "format" and isinstance(func.value, _STRING_LITERALS):
        # ``"loss {:.4f}".format(x)``: what ``f"loss {x:.4f}"`` does, which calls nothing
        return True
    name = a.callee(call)
    if name is not None:
        if name.startswith("builtins."):
            return name[len("builtins.") :] in PURE_BUILTINS
        if name.startswith(("torch.cuda.", "torch.distributed.")):
            return False
        if name.startswith(TENSOR_NAMESPACES) and keyword(call, "out") is None:
            return not name.rsplit(".", 1)[-1].endswith("_")
        return False
    func = call.func
    if isinstance(func, cst.Attribute):
        receiver = a.value(func.value)
        method = func.attr.value
        if receiver.is_tensor and not is_inplace_method(method):
            return method not in ("backward", "register_hook", "record_stream", "apply_")
    return False


def is_effect_free(a: ModuleAnalysis, expr: cst.CSTNode) -> bool:
    """Evaluating ``expr`` mutates nothing and runs no code we cannot see (every call is pure,
    no in-place method, no walrus, no ``await``/``yield``, no lambda)."""
    fx = a.effects(expr)
    if fx.inplace or fx.may_mutate_anything or fx.exits or fx.writes:
        return False
    bad = False

    class V(cst.CSTVisitor):
        def visit_NamedExpr(self, node: cst.NamedExpr) -> None:
            nonlocal bad
            bad = True

        def visit_Lambda(self, node: cst.Lambda) -> None:
            nonlocal bad
            bad = True

    walk(expr, V())
    if bad:
        return False
    for call in fx.calls:  # random ops advance the generator: running them twice changes later draws
        name = a.callee(call) or ""
        short = call.func.attr.value if isinstance(call.func, cst.Attribute) else name.rsplit(".", 1)[-1]
        if short in RANDOM_OPS:
            return False
    return True


def is_logging_call(a: ModuleAnalysis, call: cst.Call) -> bool:
    """Does ``call`` write a log line or a metric (``print``, ``logging``/``logger.*``, tqdm
    ``set_postfix``/``write``, ``SummaryWriter.add_scalar(s)``, ``wandb.log``,
    ``accelerator.log``, ``mlflow.log_metric(s)``, Lightning's ``a.log``, Fabric's and
    Accelerate's ``print``, ``fabric.log_dict``)?"""
    name = a.direct_callee(call)
    if name == "builtins.print":
        return True
    if name is not None and (
        name.startswith("logging.")
        or name in ("wandb.log", "mlflow.log_metric", "mlflow.log_metrics", "tqdm.tqdm.write")
    ):
        return True
    func = call.func
    if not isinstance(func, cst.Attribute):
        return False
    attr = func.attr.value
    owner = dotted_name(func.value) or ""
    last = owner.rsplit(".", 1)[-1].lower()
    if attr in LOG_LEVELS and "log" in last:
        return True
    if attr in ("add_scalar", "add_scalars") and ("writer" in last or last == "tb"):
        return True
    if attr in ("set_postfix", "set_postfix_str", "write", "set_description") and (
        "bar" in last or "tqdm" in last
    ):
        return True
    if attr == "log" and last in ("accelerator", "wandb", "run", "self"):
        return True
    if attr == "print" and last in ("fabric", "accelerator"):
        return True  # Lightning Fabric's and Accelerate's print (on the main process)
    if attr == "log_dict" and last in ("self", "fabric"):
        return True
    return False


def is_clock_read(a: ModuleAnalysis, node: cst.CSTNode) -> bool:
    """Does ``node`` (a statement or expression) read a wall clock (``time.perf_counter()``...),
    or start or stop a timer object (``timer.toc()``, ``meter.iter_tic()``, ``stopwatch.stop()``)?"""
    found = False

    class V(cst.CSTVisitor):
        def visit_Call(self, call: cst.Call) -> None:
            nonlocal found
            if a.qualnames(call.func) & CLOCKS or _times(call):
                found = True

    walk(node, V())
    return found


# Methods that start or stop a timer object: tic/toc by any name (``timer.toc()``,
# ``meter.iter_toc()``); these others on an object named for a timer (``stopwatch.stop()``).
_TIC_TOC = re.compile(r"(?:^|_)(?:tic|toc)$")
_TIMER_METHODS = {"start", "stop", "pause", "resume", "lap", "tick", "tock", "elapsed", "record"}


def _times(call: cst.Call) -> bool:
    func = call.func
    if not isinstance(func, cst.Attribute):
        return False
    attr = func.attr.value
    if _TIC_TOC.search(attr):
        return True
    owner = (dotted_name(func.value) or "").rsplit(".", 1)[-1].lower()
    return attr in _TIMER_METHODS and ("timer" in owner or "stopwatch" in owner)


#: Calls whose result is (a view of) their first argument's memory, besides ``torch`` views.
SHARING_CALLS = frozenset(
    {
        "builtins.memoryview", "numpy.asarray", "numpy.asanyarray", "numpy.frombuffer",
        "numpy.ascontiguousarray", "torch.as_tensor", "torch.asarray", "torch.from_numpy",
        "torch.frombuffer", "torch.from_dlpack",
    }
)


def written_roots(a: ModuleAnalysis, expr: cst.BaseExpression) -> set[str]:
    """The names whose memory a write through ``expr`` may reach: ``x`` for ``x[0]``,
    ``x.view(-1)``, ``torch.narrow(x, 0, 0, 1)`` (a view: syncfix/analysis/torch_api.py
    ``TORCH_VIEWS``), ``np.asarray(x)``, ``torch.Tensor(x)``; both names of ``(z := x)`` and
    both branches of ``x if c else y``. A method's result counts as its receiver's memory
    whatever the method (a superset); a ``torch`` op that makes new memory reaches nothing."""
    roots: set[str] = set()
    todo = [expr]
    while todo:
        cur: cst.BaseExpression | None = todo.pop()
        while cur is not None:
            if isinstance(cur, cst.Name):
                roots.add(cur.value)
                cur = None
            elif isinstance(cur, (cst.Subscript, cst.Attribute)):
                cur = cur.value
            elif isinstance(cur, cst.NamedExpr):
                todo.append(cur.target)
                cur = cur.value
            elif isinstance(cur, cst.IfExp):
                todo.append(cur.orelse)
                cur = cur.body
            elif isinstance(cur, cst.Call):
                cur = _memory_of_call(a, cur)
            else:
                cur = None
    return roots


def _memory_of_call(a: ModuleAnalysis, call: cst.Call) -> cst.BaseExpression | None:
    """What ``call``'s result may share memory with: its receiver, a ``torch`` view's base, a
    sharing call's first argument; None for new memory (or none syncfix can name)."""
    callee = a.callee(call) or ""
    args = [arg.value for arg in call.args if arg.keyword is None and not arg.star]
    if callee in SHARING_CALLS or (callee.startswith("torch.") and callee.rsplit(".", 1)[-1] in LEGACY_CONSTRUCTORS):
        return args[0] if args else None
    if callee.startswith("torch."):
        return a.result_base(call)
    if isinstance(call.func, cst.Attribute):
        return call.func.value
    return None


def torch_result_base(a: ModuleAnalysis, call: cst.Call) -> cst.BaseExpression | None:
    """For a ``torch.*`` function call: the argument whose memory its result is (``out=``, the
    base of a view, the input of an in-place op: ``torch.relu_(x)``, ``F.relu(x,
    inplace=True)``); None where the result is new memory."""
    out = keyword(call, "out")
    if out is not None:
        return out.value
    args = [arg.value for arg in positional(call)]
    name = a.callee(call) or ""
    short = name.rsplit(".", 1)[-1]
    if name == f"torch.{short}" and short in LEGACY_CONSTRUCTORS and len(args) == 1:  # an array's memory, not a list's
        return None if isinstance(args[0], (cst.List, cst.Tuple, cst.ListComp)) or a.value(args[0]).kind in (Kind.OTHER, Kind.NUMBER) else args[0]
    if short == "einsum" and args and isinstance(args[0], cst.SimpleString):
        args = args[1:]  # ``torch.einsum("ij->ji", x)``: the equation first
    if args and shares_first_argument(short, in_place_keyword(call)):
        return args[0]
    return None
