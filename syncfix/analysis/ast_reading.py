"""Reading Python's parser's tree (``ast``) cheaply, as the project index does for every file:
its statements without its expressions, and what a loop shows (whether its body repeats, whether
a branch of it runs once per pass, whether it walks a model's layers or a loader's batches;
``navigation`` answers the same questions of LibCST's tree)."""

from __future__ import annotations

import ast
from collections import deque
from collections.abc import Iterator

from .loader_names import batch_like, loader_like
from .torch_api import MODEL_WALKS, WALK_WRAPPERS


def runs_once(loop: ast.AST) -> bool:
    """A ``for`` over a one-item display (``for w in ['yolov7.pt']:``), or a loop whose body
    ends in a ``break`` or ``return`` no ``continue`` skips: its body runs once, as
    ``navigation.runs_once`` says of LibCST's tree."""
    it = getattr(loop, "iter", None)
    if isinstance(it, (ast.List, ast.Tuple, ast.Set)) and len(it.elts) == 1 and not isinstance(it.elts[0], ast.Starred):
        return True
    body = getattr(loop, "body", None) or []
    return bool(body) and isinstance(body[-1], (ast.Break, ast.Return)) and not any(
        isinstance(n, ast.Continue) for stmt in body for n in ast.walk(stmt)
    )


def last_name(func: ast.expr) -> str:
    """``f`` of ``f`` and of ``m.f``; "" for anything else."""
    return func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else ""


def once_per_pass(test_if: ast.If, loop: ast.AST) -> bool:
    """Is ``test_if`` an ``if i == e:`` on the counter ``i`` of ``loop`` (``for i in range(n)``,
    ``for i, x in enumerate(xs)``), which the body never rebinds, with ``e`` reading nothing the
    body binds? Its body then runs at most once per pass (``navigation._once_per_pass``)."""
    if not isinstance(loop, ast.For) or not isinstance(loop.iter, ast.Call):
        return False
    it: ast.expr = loop.iter
    while isinstance(it, ast.Call) and it.args and last_name(it.func) in ("tqdm", "list", "tuple"):
        it = it.args[0]  # ``tqdm(range(runs))`` counts as ``range(runs)`` does
    func = it.func if isinstance(it, ast.Call) else None
    if not (isinstance(func, ast.Name) and func.id in ("range", "enumerate")):
        return False
    target: ast.AST | None = loop.target
    if func.id == "enumerate":
        target = loop.target.elts[0] if isinstance(loop.target, ast.Tuple) and loop.target.elts else None
    test = test_if.test
    if not (
        isinstance(target, ast.Name)
        and isinstance(test, ast.Compare)
        and len(test.ops) == 1
        and isinstance(test.ops[0], ast.Eq)
    ):
        return False
    left, right = test.left, test.comparators[0]
    if isinstance(right, ast.Name) and right.id == target.id:
        left, right = right, left
    if not (isinstance(left, ast.Name) and left.id == target.id):
        return False
    stored = {
        n.id for stmt in loop.body for n in ast.walk(stmt) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)
    }
    read = {n.id for n in ast.walk(right) if isinstance(n, ast.Name)}
    return target.id not in stored and not read & (stored | {n.id for n in ast.walk(loop.target) if isinstance(n, ast.Name)})


def walks_model(loop: ast.AST) -> bool:
    """``for m in model.named_modules():`` and the like (``navigation.walks_model``)."""
    it = loop.iter if isinstance(loop, ast.For) else None
    if isinstance(it, ast.Call) and isinstance(it.func, ast.Name) and it.func.id in WALK_WRAPPERS and it.args:
        it = it.args[0]
    if not isinstance(it, ast.Call) or not isinstance(it.func, ast.Attribute):
        return False
    if it.func.attr in MODEL_WALKS:
        return True
    inner = it.func.value
    return it.func.attr in ("items", "values", "keys") and (
        isinstance(inner, ast.Call) and isinstance(inner.func, ast.Attribute) and inner.func.attr == "state_dict"
        or isinstance(inner, ast.Name) and inner.id.endswith("state_dict")
    )


def over_batches(loop: ast.AST) -> bool:
    """A ``for`` whose targets or iterable read as a loader's batches (``for idx, batch in
    enumerate(lp)``, ``for x in train_loader``), not a loop over layers, keys or modules; a
    ``while`` whose test reads a batch (BasicSR's ``while train_data is not None:``)."""
    if isinstance(loop, ast.While):
        return bool(batch_names(loop))
    if not isinstance(loop, (ast.For, ast.AsyncFor)):
        return False
    names = [n.id for n in ast.walk(loop.target) if isinstance(n, ast.Name)]
    it = loop.iter
    if isinstance(it, ast.IfExp):  # ``tqdm(loader) if verbose else loader``
        it = it.orelse
    while isinstance(it, ast.Call) and it.args:  # enumerate(...), tqdm(...), iter(...)
        it = it.args[0]
    if isinstance(it, (ast.Name, ast.Attribute)):
        names.append(it.id if isinstance(it, ast.Name) else it.attr)
    return any(loader_like(n) for n in names)


_STATEMENT_LISTS = frozenset({"body", "orelse", "finalbody", "handlers", "cases"})


def statements(tree: ast.Module | ast.FunctionDef | ast.AsyncFunctionDef) -> Iterator[ast.AST]:
    """Every statement of the module (or function), nested ones included (imports, assignments
    and returns are statements: no need to walk the expressions, most of the tree)."""
    todo: deque[ast.AST] = deque(tree.body)
    while todo:  # breadth first, fields in order: the order of ``ast.walk``
        node = todo.popleft()
        yield node
        for name in node._fields:
            if name in _STATEMENT_LISTS:
                todo.extend(getattr(node, name))


def batch_names(loop: ast.AST, fresh: bool = True) -> set[str]:
    """The names that hold a batch in each pass of a loop over batches: a ``for``'s targets (not
    ``enumerate``'s count, nor a loader: ``for val_loader in val_loaders``), a ``while``'s
    batch-named names its test reads (``while train_data is not None:``, the body fetching the
    next one); with ``fresh``, only those the body does not rebind to anything else (a device
    copy of the batch is no longer the loader's)."""
    if isinstance(loop, ast.While):
        names = {n.id for n in ast.walk(loop.test) if isinstance(n, ast.Name) and batch_like(n.id)}
        return names - _rebound(loop) if fresh else names
    if not isinstance(loop, (ast.For, ast.AsyncFor)) or not over_batches(loop):
        return set()
    target = loop.target
    it = loop.iter
    if isinstance(it, ast.Call) and isinstance(it.func, ast.Name) and it.func.id == "enumerate":
        if not (isinstance(target, ast.Tuple) and len(target.elts) == 2):
            return set()
        target = target.elts[1]
    names = {n.id for n in ast.walk(target) if isinstance(n, ast.Name)}
    names = {n for n in names if not loader_like(n) or batch_like(n)}
    return names - _rebound(loop) if fresh else names


def _rebound(loop: ast.For | ast.AsyncFor | ast.While) -> set[str]:
    """The names the loop's body binds to anything but the next batch (``batch_labels =
    batch_labels.to(device)``: a copy on the device, no longer the loader's)."""
    out: set[str] = set()
    for node in ast.walk(ast.Module(body=loop.body, type_ignores=[])):
        if isinstance(node, ast.Assign) and _fetches_next(node.value):
            continue
        if isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign, ast.For, ast.AsyncFor, ast.With, ast.NamedExpr)):
            out.update(n.id for n in ast.walk(node) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store))
    return out


def batch_parts(loop: ast.For | ast.AsyncFor | ast.While, batches: set[str]) -> set[str]:
    """The names the loop's body binds only to items, slices or index selections of its fresh
    ``batches`` or of other such names (Restormer's ``lq = train_data["lq"]``, then
    ``lq = lq[indices]``, ``lq = lq[:, :, x0:x1]``): parts of this step's batch, in its memory
    or a fresh copy of it."""
    values: dict[str, list[ast.expr]] = {}
    plain: set[int] = set()  # the targets of ``name = value``
    other: set[str] = set()  # bound some other way too (``for``, ``+=``, a tuple target...)
    for node in ast.walk(ast.Module(body=loop.body, type_ignores=[])):
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and type(node.targets[0]) is ast.Name:
            values.setdefault(node.targets[0].id, []).append(node.value)
            plain.add(id(node.targets[0]))
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store) and id(node) not in plain:
            other.add(node.id)
    parts = {name for name in values if name not in other and name not in batches}
    while True:  # drop a name with a value that is no part of a batch or of a kept name
        kept = {n for n in parts if all(_subscript_root(v) in batches | parts for v in values[n])}
        if kept == parts:
            return parts
        parts = kept


def _subscript_root(value: ast.expr) -> str | None:
    """``x`` of ``x[i]``, ``x["k"][:, 0]``; None for anything but a subscript of a name."""
    if type(value) is not ast.Subscript:
        return None
    while type(value) is ast.Subscript:
        value = value.value
    return value.id if type(value) is ast.Name else None


def _fetches_next(value: ast.expr) -> bool:
    """``next(it)``, ``prefetcher.next()``: the next batch."""
    return isinstance(value, ast.Call) and (
        isinstance(value.func, ast.Name) and value.func.id == "next"
        or isinstance(value.func, ast.Attribute) and value.func.attr in ("next", "__next__")
    )


def takes_no_non_blocking(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    """``def to(self, device)``: no ``non_blocking`` parameter and no ``**kwargs``."""
    names = {a.arg for a in (*fn.args.posonlyargs, *fn.args.args, *fn.args.kwonlyargs)}
    return fn.args.kwarg is None and "non_blocking" not in names


def returned_closure(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> str | None:
    """The name of the function ``fn`` defines in its own body and returns (``def step(...):
    ...; return step``), the one ``fn``'s every ``return`` gives; else None."""
    nested = {s.name for s in fn.body if isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef))}
    if not nested:
        return None
    returned: set[str] = set()
    todo: list[ast.AST] = list(fn.body)
    while todo:  # its own statements: not those of the functions and classes it defines
        node = todo.pop()
        if isinstance(node, ast.Return):
            returned.add(node.value.id if isinstance(node.value, ast.Name) else "")
        elif not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            todo.extend(child for child in ast.iter_child_nodes(node) if isinstance(child, ast.stmt))
            todo.extend(h for h in getattr(node, "handlers", ()))
    name = returned.pop() if len(returned) == 1 else ""
    return name if name in nested else None


# Handlers that cannot catch a RuntimeError (or its subclasses). Anything else may.
# OutOfMemoryError is a RuntimeError, but one raised where memory is allocated: a wait that a
# fix stops or moves raises a fault of queued work, never it.
# (AssertionError is not among them: a build without CUDA raises "Torch not compiled with CUDA
# enabled" as an AssertionError where CUDA is first used, and a rewrite may raise another error.)
NOT_RUNTIME_ERRORS = {
    "ArithmeticError", "AttributeError", "BufferError", "EOFError",
    "FileNotFoundError", "FloatingPointError", "GeneratorExit", "ImportError", "IndexError",
    "KeyError", "KeyboardInterrupt", "LookupError", "ModuleNotFoundError", "NameError",
    "OSError", "IOError", "OverflowError", "StopAsyncIteration", "StopIteration", "SyntaxError",
    "SystemExit", "TypeError", "UnicodeDecodeError", "UnicodeEncodeError", "UnicodeError",
    "ValueError", "ZeroDivisionError", "PermissionError", "TimeoutError", "ConnectionError",
    "OutOfMemoryError", "EnvironmentError", "BrokenPipeError", "ConnectionResetError",
    "ConnectionRefusedError", "ConnectionAbortedError", "FileExistsError", "IsADirectoryError",
    "NotADirectoryError", "InterruptedError", "ChildProcessError", "ProcessLookupError",
    "BlockingIOError", "UnboundLocalError", "UnicodeTranslateError", "IndentationError", "TabError",
    # the standard library's own (ValueError's, OSError's or Exception's, never RuntimeError's)
    "JSONDecodeError", "UnpicklingError", "SubprocessError", "CalledProcessError", "TimeoutExpired",
    "URLError", "HTTPError", "UnidentifiedImageError",
}


# Context managers and calls that catch what their body (or the function handed them) raises.
_CATCHING_NAMES = frozenset({"suppress", "raises", "assertRaises", "assertRaisesRegex", "retry_call"})


def may_catch_tree(tree: ast.Module) -> bool:
    """May a handler of this module catch a RuntimeError raised by code it runs: a ``try`` whose
    handler may catch one around a body that runs any code (a call, a loop, a ``with``, an
    index: not DINO's ``try: x = args.x except: ...``), a catching context or call
    (``suppress(...)``, ``pytest.raises``, ``self.assertRaises``), or a retrying decorator?"""
    inert = _inert_names(tree)
    for node in ast.walk(tree):
        if isinstance(node, ast.Try) or type(node).__name__ == "TryStar":
            if any(_may_catch(h.type) for h in node.handlers) and any(_runs_code(s, inert) for s in node.body):  # type: ignore[attr-defined]
                return True
        elif isinstance(node, ast.Call) and _last(node.func) in _CATCHING_NAMES:
            return True
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            for dec in node.decorator_list:
                name = _last(dec.func if isinstance(dec, ast.Call) else dec)
                if "retry" in name or name.startswith("on_exception"):
                    return True
    return False


def _last(expr: ast.expr) -> str:
    return expr.attr if isinstance(expr, ast.Attribute) else expr.id if isinstance(expr, ast.Name) else ""


def _may_catch(kind: ast.expr | None) -> bool:
    if kind is None:
        return True  # a bare ``except:``
    if isinstance(kind, ast.Tuple):
        return any(_may_catch(el) for el in kind.elts)
    return _last(kind) not in NOT_RUNTIME_ERRORS


_RUNS_CODE = (ast.Call, ast.For, ast.AsyncFor, ast.With, ast.AsyncWith, ast.Await, ast.Subscript, ast.comprehension, ast.Raise)


def _runs_code(stmt: ast.stmt, inert: frozenset[str] = frozenset()) -> bool:
    """Does ``stmt`` run code that may wait for the GPU: any call but one of a module that
    never takes a tensor (``inert``: ViTPose's ``try: im = Image.open(osp.join(root, name))``),
    a loop, a ``with``, an index?"""
    for n in ast.walk(stmt):
        if isinstance(n, ast.Call):
            root = n.func
            while isinstance(root, ast.Attribute):
                root = root.value
            if not (isinstance(root, ast.Name) and root.id in inert):
                return True
        elif isinstance(n, _RUNS_CODE):
            return True
    return False


# Modules whose functions never take a tensor nor run project code: a ``try`` around calls of
# them alone catches no error of GPU work (file paths, images opened from disk, text formats).
_INERT_MODULES = frozenset({
    "os", "posixpath", "glob", "shutil", "pathlib", "json", "yaml", "csv", "re", "time", "datetime",
    "PIL", "argparse", "zipfile", "tarfile", "urllib", "socket", "platform", "getpass", "string",
})


def _inert_names(tree: ast.Module) -> frozenset[str]:
    """The names the module's imports bind to :data:`_INERT_MODULES` or what they hold
    (``import os.path as osp``, ``from PIL import Image``)."""
    found: set[str] = set()
    for node in tree.body:
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.partition(".")[0] in _INERT_MODULES:
                    found.add(alias.asname or alias.name.partition(".")[0])
        elif isinstance(node, ast.ImportFrom) and not node.level and node.module is not None:
            if node.module.partition(".")[0] in _INERT_MODULES:
                found.update(alias.asname or alias.name for alias in node.names if alias.name != "*")
    return frozenset(found)


def partial_of(func: ast.expr) -> ast.expr:
    """``f`` of ``partial(f, name=name)`` (smoothquant's hooks, one per layer), else ``func``."""
    if type(func) is ast.Call and func.args and last_name(func.func) == "partial":
        return func.args[0]
    return func


def holder_key(target: ast.expr) -> str | None:
    """``table`` or ``self.table``: a name for what holds a dict of functions."""
    if type(target) is ast.Name:
        return target.id
    if type(target) is ast.Attribute and type(target.value) is ast.Name and target.value.id == "self":
        return "self." + target.attr
    return None
