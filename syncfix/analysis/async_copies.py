"""Code whose copies need an order syncfix does not prove: copies without waiting that count on
a later sync to finish them, and CUDA streams.

Code that copies without waiting and counts on a later sync to finish the copy:

A non-blocking copy to the host (``x.to("cpu", non_blocking=True)``, ``host.copy_(x,
non_blocking=True)``) may still be running when the call returns, and a non-blocking copy from a
host buffer reads the buffer later: the code must wait before it reads the copy, or refills the
buffer. Code that does either may count on *any* later sync as that wait (a blocking ``.cuda()``,
an ``.item()``), so a fix that removes a sync there could let it read unfinished data. Such a
module, and the project modules it imports (whose functions it may call between the copy and
the read), get no safe fix (``Rule.safe_fix`` makes it unsafe).

Read from the source with ``ast``, as the project index reads every file: a copy to a device
held in a variable that is the CPU at run time is not seen (the rule docs say so).
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator

# Text a module with such a copy holds (a pre-filter: most files have none).
_NON_BLOCKING = re.compile(rb"non_blocking\s*=\s*(?!False\b)")
# Methods that write a tensor's memory in place (beside ``x[...] = ``/``x += ``).
_WRITES = re.compile(r"[a-z0-9]\w*_$")


def counts_on_later_syncs(data: bytes) -> bool:
    """Does the code copy to the host without waiting, ``copy_`` with ``non_blocking``, or copy
    without waiting from a tensor it writes in place in the same function? A file that does not
    parse counts as one that does."""
    if not _NON_BLOCKING.search(data):
        return False
    try:
        tree = ast.parse(data)
    except (SyntaxError, ValueError):
        return True
    scopes: list[ast.AST] = [tree]
    imported: set[str] = set()  # ``torch.nn.init.normal_(w)`` writes ``w``, not ``torch``
    for n in ast.walk(tree):
        if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            scopes.append(n)
        elif isinstance(n, (ast.Import, ast.ImportFrom)):
            imported.update((a.asname or a.name).split(".")[0] for a in n.names)
    return any(_counts_in(scope, imported) for scope in scopes)


def _counts_in(scope: ast.AST, imported: set[str]) -> bool:
    copied: set[str] = set()
    written: set[str] = set()
    rebound: set[str] = set()  # ``x = x.to(d, non_blocking=True)``: later writes are the copy's
    for node in _own_nodes(scope):
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Call) and _flag(node.value) is not None:
            source = _root(node.value)
            if source is not None and any(_root(t) == source for t in node.targets):
                rebound.add(source)
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            method, receiver = node.func.attr, _root(node.func.value)
            if _flag(node) is not None:
                if method == "copy_":
                    return True
                if any(_names_cpu(x) for x in (*node.args, *(k.value for k in node.keywords if k.arg == "device"))):
                    return True
                if receiver is not None:
                    copied.add(receiver)
            if _WRITES.fullmatch(method) and receiver is not None:
                written.add(receiver)
        elif isinstance(node, (ast.Assign, ast.AugAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for t in targets:
                if isinstance(t, ast.Subscript) or isinstance(node, ast.AugAssign):
                    root = _root(t)
                    if root is not None:
                        written.add(root)
    return bool((copied - rebound) & written - imported)


def _flag(call: ast.Call) -> ast.expr | None:
    """The ``non_blocking=`` value of a call, unless it is a literal False."""
    flag = next((k.value for k in call.keywords if k.arg == "non_blocking"), None)
    return None if isinstance(flag, ast.Constant) and flag.value is False else flag


def _own_nodes(scope: ast.AST) -> Iterator[ast.AST]:
    """The nodes of ``scope`` outside the functions defined in it (each is a scope of its own)."""
    todo = list(ast.iter_child_nodes(scope))
    while todo:
        node = todo.pop()
        yield node
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
            todo.extend(ast.iter_child_nodes(node))


def _root(expr: ast.AST) -> str | None:
    while isinstance(expr, (ast.Attribute, ast.Subscript, ast.Call)):
        expr = expr.func if isinstance(expr, ast.Call) else expr.value
    return expr.id if isinstance(expr, ast.Name) else None


def _names_cpu(expr: ast.AST) -> bool:
    """``"cpu"``, ``torch.device("cpu")``, or a name that says so (``cpu_device``)."""
    if isinstance(expr, ast.Constant):
        return isinstance(expr.value, str) and expr.value.startswith("cpu")
    if isinstance(expr, ast.Call):
        return bool(expr.args) and _names_cpu(expr.args[0])
    name = expr.attr if isinstance(expr, ast.Attribute) else expr.id if isinstance(expr, ast.Name) else ""
    return "cpu" in name.lower() or "host" in name.lower()


def _bound_to_no_torch(tree: ast.AST, name: str) -> bool:
    """Is every binding of ``name`` in the module one that holds no torch object: a parameter
    annotated with a type that does not name torch, or an assignment or import of something
    whose code does not mention torch, CUDA or a device? (A name bound nowhere here, in a loop,
    a ``with`` or by a parameter without a telling annotation may be anything.)"""
    bound = False
    for node in ast.walk(tree):
        if isinstance(node, ast.arg) and node.arg == name:
            if node.annotation is None or _may_be_torch(node.annotation):
                return False
            bound = True
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if any(isinstance(t, ast.Name) and t.id == name for t in targets):
                if node.value is None or _may_be_torch(node.value):
                    return False
                bound = True
            elif any(name in _names_of(t) for t in targets):
                return False  # unpacked or starred: which part it holds is not read here
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            for alias in node.names:
                if (alias.asname or alias.name.split(".")[0]) == name:
                    if "torch" in f"{getattr(node, 'module', '')}.{alias.name}":
                        return False
                    bound = True
        elif isinstance(node, (ast.Global, ast.Nonlocal)):
            if name in node.names:
                return False
        else:  # a loop, comprehension, walrus or ``with ... as`` target: whatever it iterates
            target = node.optional_vars if isinstance(node, ast.withitem) else getattr(node, "target", None)
            if isinstance(node, _TARGET_BINDERS) and target is not None and name in _names_of(target):
                return False
    return bound


_TARGET_BINDERS = (ast.For, ast.AsyncFor, ast.comprehension, ast.NamedExpr, ast.withitem)


def _names_of(target: ast.AST) -> set[str]:
    return {n.id for n in ast.walk(target) if isinstance(n, ast.Name)}


def _may_be_torch(expr: ast.AST) -> bool:
    text = ast.unparse(expr)
    words = ("torch", "cuda", "device", "accelerator", "any", "module")
    return any(w in text.lower() for w in words) or text.strip("'\"").split(".")[-1] in _CUDA_STREAM_NAMES


#: Text a file that uses CUDA streams or graphs holds (a pre-filter for :func:`uses_streams`).
#: (The current and default streams are not a use: every op runs on them already; see
#: ``torch_api.STREAM_APIS``.)
STREAM_USE = re.compile(
    rb"cuda\.(?:Stream|stream|StreamContext|ExternalStream|set_stream"
    rb"|graph|CUDAGraph|make_graphed_callables)\b|torch\.Stream\b|\.(?:wait_stream|record_stream|wait_event)\("
    rb"|from\s+torch\.cuda\s+import[^\n]*\b(?:Stream|stream|graph|CUDAGraph)\b"
    rb"|\.(?:stream|Stream)\(|get_device_module"
)
_CUDA_STREAM_NAMES = {
    "Stream", "stream", "StreamContext", "ExternalStream", "set_stream", "graph", "CUDAGraph",
    "make_graphed_callables",
}


def uses_streams(data: bytes) -> bool:
    """Does the code (not its strings or comments) use CUDA streams or graphs:
    ``torch.cuda.stream(...)``, ``torch.Stream``, ``x.wait_stream(...)``, or one of those names
    imported from ``torch.cuda``? A file that does not parse counts as one that does."""
    if not STREAM_USE.search(data):
        return False
    try:
        tree = ast.parse(data)
    except (SyntaxError, ValueError):
        return True
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute):
            base = node.value
            last = base.attr if isinstance(base, ast.Attribute) else base.id if isinstance(base, ast.Name) else None
            if node.attr in ("wait_stream", "record_stream", "wait_event"):
                return True
            if last == "cuda" and node.attr in _CUDA_STREAM_NAMES or last == "torch" and node.attr == "Stream":
                # not numba's (OpenPCDet's ``from numba import cuda``; ``cuda.stream()``)
                if not (isinstance(base, ast.Name) and _bound_to_no_torch(tree, base.id)):
                    return True
            # ``cuda = torch.cuda; cuda.stream(s)``, ``dm = torch.get_device_module("cuda");
            # dm.stream(s)``: a stream API under another name (not a name every binding of
            # which is something else: point-e's ``streamer: NpzStreamer``, ``streamer.stream(n)``)
            if node.attr == "get_device_module":
                return True
            if node.attr in ("stream", "Stream"):
                if not (isinstance(base, ast.Name) and _bound_to_no_torch(tree, base.id)):
                    return True
        elif isinstance(node, ast.ImportFrom) and node.module == "torch.cuda":
            if any(alias.name in _CUDA_STREAM_NAMES for alias in node.names):
                return True
    return False
