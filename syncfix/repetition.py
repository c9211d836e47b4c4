"""Where a sync repeats: the code that runs every step, as opposed to one-time set-up.

A sync costs once per execution, so a fix pays only where the code runs again and again: loop
bodies, step-like functions (``forward``, ``training_step``... the ``hot-functions`` setting),
and functions this file calls from such code. One-time code is quiet by default: the module's
top level outside loops (``if __name__ == "__main__":`` included), ``__init__`` (unless its class
is made where code repeats: Autoformer's masks, made in each ``forward``), an attribute
made on first use (``if not hasattr(self, "x"): self.x = ...``, ``if self.x is None:``, the
``else`` of a test against ``self`` attributes it stores again: a cache refilled on a miss), a value
made once per key of a cache (``if key not in cache: cache[key] = ...``), a branch taken once
per pass of its loop (``if i == n - 1:`` on the loop's counter), a loop over a model's layers or
tensors (``for name, m in model.named_modules():``) where the code around it runs once, the
message of a ``raise``
(it runs once, as the error leaves), and test code
(files under ``tests/``, ``test_*.py`` and ``*_test.py`` holding tests, ``conftest.py``, and a
module-level ``def test_*()`` without arguments that no loop calls: a ``test()`` or
``test_epoch(model, loader)`` function in a training script is the evaluation loop, not a
test), where nothing waits on the GPU; and a
loop that calls ``input()``, which waits for a person each time round (a loop inside it repeats). ``--include-cold`` (``include-cold = true``) shows everything.
"""

from __future__ import annotations

import re
from pathlib import PurePath

import libcst as cst

from .analysis import ModuleAnalysis, dotted_name, stored_names


def is_test_path(path: str, source: str | bytes | None = None) -> bool:
    """Is the file at ``path`` test code? A ``test_*.py`` or ``*_test.py`` file outside a test
    folder counts only where its ``source`` (when given) holds a test (``def test...``, ``class
    Test...``) or imports pytest or unittest: detectron2's ``test_time_augmentation.py`` is
    inference code, and TCN's ``add_test.py`` a training script."""
    p = PurePath(path)
    name = p.name
    if name == "conftest.py" or any(part in ("tests", "test") for part in p.parts[:-1]):
        return True
    if not (name.startswith("test_") or name.endswith("_test.py")):
        return False
    if source is None:
        return True
    text = source.decode("utf-8", "replace") if isinstance(source, bytes) else source
    return _HOLDS_TESTS.search(text) is not None


_HOLDS_TESTS = re.compile(r"^\s*(?:async\s+def\s+test_|def\s+test_|class\s+Test|import\s+(?:pytest|unittest)|from\s+(?:pytest|unittest)\b)", re.M)


# Where a region that repeats can start: below one of these, a node may repeat though the node
# above it does not.
# node types (exact: LibCST's node classes are final, and ``type() in`` skips the ABC check)
_STARTS_REPEATING = frozenset({cst.For, cst.While, cst.FunctionDef, cst.ClassDef})


def lazy_init(a: ModuleAnalysis, node: cst.CSTNode) -> bool:
    """Is ``node`` in the body of an ``if`` of its function that makes an attribute on first use
    (``if not hasattr(self, "queue"):`` or ``if self.queue is None:``, whose body sets
    ``self.queue``)? It runs once per object, however often the function does (BasicSR's
    training-pair pool, made on the first step)."""
    child = node
    for anc in a.ancestors(node):
        if isinstance(anc, (cst.FunctionDef, cst.Lambda, cst.ClassDef)):
            return False
        if isinstance(anc, cst.If) and child is anc.body:
            attr = _made_attribute(anc.test)
            if attr is not None and _sets_self_attribute(anc.body, attr):
                return True
            if _fills_cache(a, anc):
                return True
        if isinstance(anc, cst.If) and child is anc.orelse and isinstance(anc.orelse, cst.Else) and _refills_on_miss(a, anc):
            return True
        child = anc
    return False


def _refills_on_miss(a: ModuleAnalysis, branch: cst.If) -> bool:
    """``if channel == self.channel and ...: window = self.window`` / ``else:`` that stores every
    ``self.<attr>`` the test reads, which the ``if`` body does not (pytorch_ssim's
    ``SSIM.forward``, copied into many repos): the ``else`` runs only when the inputs change, the
    next call hits the cache."""
    read = {
        n.attr.value
        for n in a.nodes_within(branch.test, cst.Attribute)
        if isinstance(n, cst.Attribute) and _self_attribute(n) is not None
    }
    body = branch.orelse.body  # type: ignore[union-attr]
    # a hit only reads them (ignite's `if self._num_positives.ndim == 0: self._num_positives = p
    # else: self._num_positives = self._num_positives + p` stores on both sides: every step)
    return (
        bool(read)
        and all(_sets_self_attribute(body, attr) for attr in read)
        and not any(_sets_self_attribute(branch.body, attr) for attr in read)
    )


def _fills_cache(a: ModuleAnalysis, branch: cst.If) -> bool:
    """``if key not in cache:`` whose body stores ``cache[key]``, or ``if t is None:`` after
    ``t = cache.get(key)`` whose body stores ``cache[...] = t`` (edm2's ``misc.constant``): the
    body runs once per key, as a memoized function's does."""
    test = branch.test
    if not (isinstance(test, cst.Comparison) and len(test.comparisons) == 1):
        return False
    fn = a.enclosing_function(branch)
    local = stored_names(fn) | {p.name.value for p in fn.params.params} if fn is not None else set()

    def lasting(cache: str | None) -> bool:  # a global's or an object's: not made per call
        return cache is not None and ("." in cache or cache not in local)
    op, right = test.comparisons[0].operator, test.comparisons[0].comparator
    stores = _subscript_stores(branch.body)
    if isinstance(op, cst.NotIn):
        cache = dotted_name(right)
        return lasting(cache) and any(c == cache and a.module.code_for_node(k) == a.module.code_for_node(test.left) for c, k, _ in stores)
    if isinstance(op, cst.Is) and isinstance(right, cst.Name) and right.value == "None" and isinstance(test.left, cst.Name):
        name = test.left.value
        for before in a.statements_before(branch) or ():
            if name not in stored_names(before):
                continue
            small = before.body[0] if isinstance(before, cst.SimpleStatementLine) and len(before.body) == 1 else None
            value = small.value if isinstance(small, cst.Assign) else None
            if not (isinstance(value, cst.Call) and isinstance(value.func, cst.Attribute) and value.func.attr.value == "get"):
                return False
            cache = dotted_name(value.func.value)
            return lasting(cache) and any(
                c == cache and isinstance(v, cst.Name) and v.value == name for c, _, v in stores
            )
    return False


def _subscript_stores(body: cst.BaseSuite) -> list[tuple[str | None, cst.BaseExpression, cst.BaseExpression]]:
    """(container, key, value) of each ``container[key] = value`` statement of ``body`` itself."""
    found = []
    lines = body.body if isinstance(body, cst.IndentedBlock) else [body]
    for line in lines:
        for small in line.body if isinstance(line, (cst.SimpleStatementLine, cst.SimpleStatementSuite)) else ():
            if isinstance(small, cst.Assign) and len(small.targets) == 1:
                target = small.targets[0].target
                if isinstance(target, cst.Subscript) and len(target.slice) == 1 and isinstance(target.slice[0].slice, cst.Index):
                    found.append((dotted_name(target.value), target.slice[0].slice.value, small.value))
    return found


def _made_attribute(test: cst.BaseExpression) -> str | None:
    """``not hasattr(self, "x")`` or ``self.x is None``: ``"x"``."""
    if isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
        call = test.expression
        if (
            isinstance(call, cst.Call)
            and isinstance(call.func, cst.Name)
            and call.func.value == "hasattr"
            and len(call.args) == 2
            and isinstance(call.args[0].value, cst.Name)
            and call.args[0].value.value == "self"
            and isinstance(call.args[1].value, cst.SimpleString)
        ):
            text = call.args[1].value.evaluated_value
            return text if isinstance(text, str) else None
    if isinstance(test, cst.Comparison) and len(test.comparisons) == 1:
        comp = test.comparisons[0]
        if (
            isinstance(comp.operator, cst.Is)
            and isinstance(comp.comparator, cst.Name)
            and comp.comparator.value == "None"
            and _self_attribute(test.left) is not None
        ):
            return _self_attribute(test.left)
    return None


def _self_attribute(expr: cst.BaseExpression) -> str | None:
    if isinstance(expr, cst.Attribute) and isinstance(expr.value, cst.Name) and expr.value.value == "self":
        return expr.attr.value
    return None


def _sets_self_attribute(body: cst.BaseSuite, attr: str) -> bool:
    """Does a statement of ``body`` itself (not a nested block) assign ``self.<attr>``?"""
    lines = body.body if isinstance(body, cst.IndentedBlock) else [body]
    for line in lines:
        smalls = line.body if isinstance(line, (cst.SimpleStatementLine, cst.SimpleStatementSuite)) else ()
        for small in smalls:
            targets = (
                [t.target for t in small.targets] if isinstance(small, cst.Assign)
                else [small.target] if isinstance(small, cst.AnnAssign) else []
            )
            if any(_self_attribute(t) == attr for t in targets):
                return True
            if _registers(small, attr):
                return True
    return False


def _registers(small: cst.BaseSmallStatement, attr: str) -> bool:
    """``self.register_buffer("attr", ...)`` (or ``register_parameter``): it makes ``self.attr``
    (stable-diffusion's ``if not hasattr(self, "colorize"): self.register_buffer("colorize", ...)``)."""
    call = small.value if isinstance(small, cst.Expr) else None
    return (
        isinstance(call, cst.Call) and isinstance(call.func, cst.Attribute)
        and call.func.attr.value in ("register_buffer", "register_parameter")
        and _self_attribute(call.func) is not None and bool(call.args)
        and isinstance(call.args[0].value, cst.SimpleString) and call.args[0].value.evaluated_value == attr
    )


def _raised(a: ModuleAnalysis, node: cst.CSTNode) -> bool:
    """Is ``node`` part of a ``raise`` statement (its error's message)? It runs once, as the
    error leaves the loop (lerobot's ``raise ...(f"{min_[~ok]}")``)."""
    for anc in a.ancestors(node):
        if type(anc) is cst.Raise:
            return True
        if isinstance(anc, (cst.SimpleStatementLine, cst.BaseCompoundStatement)):
            return False
    return False


def _test_function(a: ModuleAnalysis, fn: cst.FunctionDef) -> bool:
    """A test in a library file: a module-level ``def test_*()`` that takes no arguments and
    that no loop calls (mamba's ``test_dacs_segsum_correctness()``, run by pytest or once from
    ``__main__``). A training script's ``test_epoch(model, loader)`` takes its arguments."""
    params = fn.params
    return (
        fn.name.value.startswith("test_")
        and isinstance(a.parent(fn), cst.Module)
        and not (params.params or params.posonly_params or params.kwonly_params)
        and params.star_arg is cst.MaybeSentinel.DEFAULT
        and params.star_kwarg is None
        and fn.name.value not in a.called_from_loops
        and not any(a.repeating_loop(call) is not None for call in a.calls_named(fn.name.value))
    )


def _in_test_function(a: ModuleAnalysis, node: cst.CSTNode) -> bool:
    return any(isinstance(anc, cst.FunctionDef) and _test_function(a, anc) for anc in a.ancestors(node))


class Repetition:
    """Answers "does this node run repeatedly?" for one module."""

    def __init__(self, analysis: ModuleAnalysis, path: str) -> None:
        self.analysis = analysis
        self.test_file = is_test_path(path, analysis.code)
        self._functions: dict[cst.FunctionDef, bool] = {}

    def repeats(self, node: cst.CSTNode) -> bool:
        if self.test_file:
            return False
        a = self.analysis
        if lazy_init(a, node) or _raised(a, node) or _in_test_function(a, node):
            return False
        loop = a.repeating_loop(node)
        if loop is not None:
            # a walk over a model's layers repeats where the code around it does
            return not a.walks_model(loop) or self.repeats(loop)
        fn = a.enclosing_function(node)
        return fn is not None and self._function_repeats(fn)

    def cold_subtree(self, node: cst.CSTNode) -> bool:
        """Does nothing in ``node``'s subtree repeat? Asked of a function or a module-level
        statement before the rules visit it, so that rules reported only where syncs repeat can
        skip it: their findings there would all be dropped. Answered only for subtrees without
        a loop, a def or a class (each of which can start a region that repeats); otherwise
        False, and the walk goes in and asks again at the defs below."""
        if self.test_file:
            return True
        if isinstance(node, cst.FunctionDef):
            if _test_function(self.analysis, node):
                return True
            if self.repeats(node) or self._function_repeats(node):
                return False
        elif isinstance(node, (cst.ClassDef, cst.For, cst.While)) or self.repeats(node):
            return False
        structure = self.analysis.structure
        # by the type index, not a walk: the subtree's nodes of a kind, ``node`` itself excepted
        return not any(
            len(structure.within(node, kind)) > (type(node) is kind) for kind in _STARTS_REPEATING
        )

    def _function_repeats(self, fn: cst.FunctionDef) -> bool:
        known = self._functions.get(fn)
        if known is not None:
            return known
        self._functions[fn] = False  # a recursive call does not make a function repeat
        name = fn.name.value
        if self.analysis.is_memoized(fn):
            result = False  # ``@lru_cache``: the body runs once per distinct arguments
        elif self.analysis.is_step_function(fn) or name in self.analysis.called_from_loops:
            result = True
        else:
            # a method runs through ``obj.name(...)``, any other function through ``name(...)``:
            # ``model.train()`` in the loop does not run the script's own ``def train()``
            # the nearest enclosing def or class (through ``if``/``try`` in a class body)
            owner = next((n for n in self.analysis.ancestors(fn) if isinstance(n, (cst.FunctionDef, cst.ClassDef))), None)
            method = isinstance(owner, cst.ClassDef)
            result = any(
                self.repeats(call)
                for call in self.analysis.calls_named(name)
                if isinstance(call.func, cst.Attribute) == method
            )
            if not result and name == "__init__" and isinstance(owner, cst.ClassDef):
                # a class made in a function that repeats runs its ``__init__`` each time
                result = f"{owner.name.value}.__init__" in self.analysis.called_from_loops
        self._functions[fn] = result
        return result
