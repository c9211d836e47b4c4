"""DataLoaders: whether a loader's batches are new memory each step (the default collate) and
stay so (nothing sets another ``collate_fn`` on it, no call passes ``batch_size=None``)."""

from __future__ import annotations

import ast
import re
from typing import TYPE_CHECKING

import libcst as cst
from libcst.metadata import Assignment

from . import callgraph
from .attributes import attribute_set_reaching, is_store
from .imported import holders
from .syntax import keyword, positional
from .values import Device, Kind, Memory, Value

if TYPE_CHECKING:
    from .module import ModuleAnalysis


def loader_value(a: ModuleAnalysis, call: cst.Call) -> Value:
    """What ``DataLoader(...)`` is: a loader whose batches are fresh (the default collate) in
    pageable or pinned memory, unless a custom collate, ``batch_size=None`` or ``**kwargs``
    may make them the dataset's own."""
    spread = spread_keywords(a, call)
    pins = {_pin_memory(p) for p in _keyword_values(call, spread, "pin_memory")} or {Memory.PAGEABLE}
    memory = pins.pop() if len(pins) == 1 else Memory.UNKNOWN
    args = positional(call)
    sizes = _keyword_values(call, spread, "batch_size") or [args[1].value if len(args) > 1 else None]
    # the default collate copies each batch into new memory; ``batch_size=None`` turns it
    # off (the batch is then what the dataset returned): written so, bound to a name that
    # is not a number, or possibly in ``**kwargs`` (a size syncfix cannot read,
    # ``args.batch_size``, counts as a number)
    custom = (
        spread is None  # ``**kw`` syncfix cannot read may pass batch_size=None
        or any(v is not None for v in _keyword_values(call, spread, "collate_fn"))
        or len(args) > 6
        or any(v is not None and _none_size(a, v) for v in sizes)
    )
    # the default collate keeps the device of what the dataset returns: a dataset of this
    # module or project that may place its items (``return seq.cuda()``) makes batches of
    # any device
    device = Device.UNKNOWN if a.datasets_placed or _items_placed(a) else Device.CPU
    if custom:
        return Value(Kind.LOADER, device, Memory.UNKNOWN, False)
    return Value(Kind.LOADER, device, memory, True)


def _none_size(a: ModuleAnalysis, size: cst.BaseExpression) -> bool:
    """May this ``batch_size`` be None (or anything but a number)?"""
    return (
        isinstance(size, cst.Name) and size.value == "None"
        or a.value(size).kind not in (Kind.NUMBER, Kind.UNKNOWN)
        or _defaults_to_none(a, size)
        or _parameter_maybe_none(a, size)
    )


def _pin_memory(expr: cst.BaseExpression | None) -> Memory:
    if expr is None:  # left out: the default
        return Memory.PAGEABLE
    if isinstance(expr, cst.Name) and expr.value in ("True", "False"):
        return Memory.PINNED if expr.value == "True" else Memory.PAGEABLE
    return Memory.UNKNOWN


def _keyword_values(
    call: cst.Call, spread: dict[str, list[cst.BaseExpression | None]] | None, name: str
) -> list[cst.BaseExpression | None]:
    """The values ``name=`` may have in ``call``: written, or from the ``**kw`` syncfix reads,
    where None stands for a dict that leaves it out (the default); [] where nothing passes it."""
    written = keyword(call, name)
    if written is not None:
        return [written.value]
    return list((spread or {}).get(name, []))


def spread_keywords(a: ModuleAnalysis, call: cst.Call) -> dict[str, list[cst.BaseExpression | None]] | None:
    """The keywords the ``**kw`` arguments of ``call`` pass: key -> the values it may have (None
    for a dict that leaves the key out), where each ``kw`` is a name bound only to dict
    displays of string keys (``{"pin_memory": True}``, ``{...} if c else {}``, ``dict(a=1)``)
    and used only to be spread so (nothing adds a key). None where one cannot be read
    (a ``*args`` too); an empty dict where there is no ``**``."""
    out: dict[str, list[cst.BaseExpression | None]] = {}
    for arg in call.args:
        if arg.star == "*":
            return None
        if arg.star != "**":
            continue
        dicts = _spread_dicts(a, arg.value)
        if dicts is None:
            return None
        keys = {k for d in dicts for k in d}
        for key in keys:
            out.setdefault(key, []).extend(d.get(key) for d in dicts)
    return out


def _spread_dicts(a: ModuleAnalysis, expr: cst.BaseExpression) -> list[dict[str, cst.BaseExpression]] | None:
    if isinstance(expr, cst.IfExp):
        body, orelse = _spread_dicts(a, expr.body), _spread_dicts(a, expr.orelse)
        return None if body is None or orelse is None else body + orelse
    if isinstance(expr, cst.Dict):
        entries: dict[str, cst.BaseExpression] = {}
        for el in expr.elements:
            if not isinstance(el, cst.DictElement) or not isinstance(el.key, cst.SimpleString):
                return None
            key = el.key.evaluated_value
            if not isinstance(key, str):
                return None
            entries[key] = el.value
        return [entries]
    if isinstance(expr, cst.Call) and a.callee(expr) == "builtins.dict":
        if not all(arg.keyword is not None and not arg.star for arg in expr.args):
            return None
        return [{arg.keyword.value: arg.value for arg in expr.args if arg.keyword is not None}]
    if not isinstance(expr, cst.Name):
        return None
    values = a.reaching_values(expr)
    if not values or not all(_only_spread(a, asg) for asg in a.bindings(expr)):
        return None
    out: list[dict[str, cst.BaseExpression]] = []
    for value in values:
        if isinstance(value, cst.Name):
            return None  # another name for the dict: it may be changed through that one
        found = _spread_dicts(a, value) if isinstance(value, cst.BaseExpression) else None
        if found is None:
            return None
        out += found
    return out


def _only_spread(a: ModuleAnalysis, asg: object) -> bool:
    """Is every use of this binding a ``**name`` spread (so no code adds or changes a key)?"""
    if not isinstance(asg, Assignment):
        return False
    for access in asg.references:
        parent = a.parent(access.node)
        if not (isinstance(parent, cst.Arg) and parent.star == "**" and parent.value is access.node):
            return False
    return True


_PLACING = re.compile(r"\.cuda\(|\.to\(|device")


def _items_placed(a: ModuleAnalysis) -> bool:
    """Does some ``__getitem__`` (``__iter__``...) of the module mention a device or a copy?
    (The project's other files: :func:`places_items`, asked when the project index is built.)"""
    if not any(name in a.code for name in _ITEM_METHODS):
        return False
    return any(
        fn.name.value in _ITEM_METHODS and _PLACING.search(a.module.code_for_node(fn))  # type: ignore[attr-defined]
        for fn in a.structure.of_type(cst.FunctionDef)
    )


_ITEM_METHODS = ("__getitem__", "__getitems__", "__iter__", "__next__")
_DEFINES_ITEMS = re.compile(rb"def\s+(?:__getitems?__|__iter__|__next__)\b")


def places_items(data: bytes) -> bool:
    """Does a file define a ``__getitem__`` (``__getitems__``, ``__iter__``, ``__next__``) that
    mentions a device or a copy (``return seq.cuda()``, ``x.to(self.device)``)? A loader over
    such a dataset, wherever it is built, may yield batches on any device. (Text that does not
    parse is read as text: it may.)"""
    if not _DEFINES_ITEMS.search(data) or not _PLACING.search(data.decode("utf-8", "replace")):
        return False
    try:
        tree = ast.parse(data)
    except (SyntaxError, ValueError):
        return True
    return any(
        isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef))
        and fn.name in _ITEM_METHODS
        and any(_places(node) for node in ast.walk(fn))
        for fn in ast.walk(tree)
    )


def _places(node: ast.AST) -> bool:
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
        return node.func.attr in ("cuda", "to")
    name = (
        node.id if isinstance(node, ast.Name)
        else node.attr if isinstance(node, ast.Attribute)
        else node.arg if isinstance(node, (ast.keyword, ast.arg))
        else None
    )
    return name is not None and "device" in name


_SETS_ATTRIBUTES = {"builtins.setattr", "builtins.delattr", "builtins.vars"}
_SEEN_MODULES = ("builtins.", "torch.", "tqdm.")  # their functions set no attribute of an argument


def reconfigured(a: ModuleAnalysis, asg: Assignment) -> bool:
    """May the loader bound here get another ``collate_fn`` after it is made? Its batches are
    then not provably the default collate's new memory. Yes where this name is written through
    (``loader.collate_fn = f``, ``setattr(loader, ...)``), bound to another plain name, or
    handed to code syncfix does not read; and where any object's ``collate_fn`` is set in this
    module (or, in a closed project, any of its files), which an alias may reach."""
    # read, iterated or handed to library code only: another file's computed ``setattr`` reaches
    # it only from a file that imports this one (safari's script, beside a config helper's
    # ``setattr(cls, k, v)``)
    if attribute_set_reaching(a, "collate_fn", holders(a) if _confined(a, asg) else None):
        return True
    for access in asg.references:
        node = access.node
        parent = a.parent(node)
        if isinstance(parent, cst.Attribute) and parent.value is node:
            if is_store(a, parent):
                return True
        elif isinstance(parent, cst.Arg):
            call = a.parent(parent)
            if isinstance(call, cst.Call) and not _reads_or_leaves(a, call):
                return True
        elif isinstance(parent, cst.Assign) and parent.value is node:
            if any(isinstance(t.target, cst.Name) for t in parent.targets):
                return True
    return False


def _confined(a: ModuleAnalysis, asg: Assignment, hops: int = 2) -> bool:
    """Is every use of the loader bound here an attribute read, an iteration, an argument of
    library code that sets no attribute of its arguments (``enumerate``, ``tqdm``, ``len``), or
    one of a function of this module whose parameter is used so (TSM's ``train(train_loader,
    ...)``, whose loop iterates it), a few calls deep?"""
    for access in asg.references:
        node = access.node
        parent = a.parent(node)
        if hops and isinstance(parent, cst.Arg) and parent.value is node and _confined_in_callee(a, parent, hops - 1):
            continue
        if isinstance(parent, cst.Attribute) and parent.value is node and not is_store(a, parent):
            continue
        if isinstance(parent, (cst.For, cst.CompFor)) and parent.iter is node:
            continue
        call = a.parent(parent) if isinstance(parent, cst.Arg) and parent.value is node else None
        name = a.callee(call) if isinstance(call, cst.Call) else None
        if name is not None and name.startswith(_SEEN_MODULES) and name not in _SETS_ATTRIBUTES:
            continue
        return False
    return True


def _confined_in_callee(a: ModuleAnalysis, arg: cst.Arg, hops: int) -> bool:
    """Is ``arg`` bound to a parameter of a function of this module (called by name) that uses
    it only as :func:`_confined` allows?"""
    call = a.parent(arg)
    fn = a.local_function(call.func) if isinstance(call, cst.Call) and isinstance(call.func, cst.Name) else None
    if fn is None or any(other.star for other in call.args):  # type: ignore[union-attr]
        return False
    params = [*fn.params.posonly_params, *fn.params.params]
    if arg.keyword is not None:
        param = next((p for p in [*params, *fn.params.kwonly_params] if p.name.value == arg.keyword.value), None)
    else:
        index = [x for x in call.args if x.keyword is None].index(arg)  # type: ignore[union-attr]
        param = params[index] if index < len(params) else None
    scope = a.scope(param.name) if param is not None else None
    if param is None or scope is None:
        return False
    bound = [b for b in scope.assignments[param.name.value] if getattr(b, "node", None) is param]
    only = bound[0] if len(bound) == 1 and len(scope.assignments[param.name.value]) == 1 else None
    return isinstance(only, Assignment) and _confined(a, only, hops)


def _reads_or_leaves(a: ModuleAnalysis, call: cst.Call) -> bool:
    """Is ``call`` code syncfix reads (a function or class of this module or of the project,
    where a write to the parameter counts like one here), or one that sets no attribute of its
    arguments (builtins, torch, tqdm)?"""
    name = a.callee(call)
    if name in _SETS_ATTRIBUTES:
        return False
    if a.local_function(call.func) is not None or _local_class(a, call.func):
        return True
    return name is not None and (
        name.startswith(_SEEN_MODULES)
        or (a.project is not None and a.project.find(name, a.package) is not None)
    )


def _local_class(a: ModuleAnalysis, func: cst.BaseExpression) -> bool:
    if not isinstance(func, cst.Name):
        return False
    bindings = a.bindings(func)
    return len(bindings) == 1 and all(
        isinstance(asg, Assignment) and isinstance(asg.node, cst.ClassDef) for asg in bindings
    )


def _parameter_maybe_none(a: ModuleAnalysis, expr: cst.BaseExpression) -> bool:
    """Is ``expr`` a parameter that some call passes ``None`` (``make(ds, None)`` at one call and
    ``make(ds, 2)`` at another join to unknown)? A size syncfix cannot read (``args.batch_size``)
    is taken to be a number, as elsewhere."""
    if not isinstance(expr, cst.Name):
        return False
    for asg in a.bindings(expr):
        if isinstance(asg, Assignment) and isinstance(asg.node, cst.Param):
            passed = callgraph.param_values(a, asg.node) or []
            if any(v.kind is Kind.OTHER for v in passed):  # ``None`` (or a str): no number
                return True
    return False


def _defaults_to_none(a: ModuleAnalysis, expr: cst.BaseExpression) -> bool:
    """Is ``expr`` a parameter of its function whose default is ``None`` (``def make(ds,
    batch_size=None)``): a caller that passes nothing turns collation off."""
    if not isinstance(expr, cst.Name):
        return False
    fn = a.enclosing_function(expr)
    if fn is None:
        return False
    params = [*fn.params.params, *fn.params.kwonly_params]
    return any(
        p.name.value == expr.value and isinstance(p.default, cst.Name) and p.default.value == "None"
        for p in params
    )
