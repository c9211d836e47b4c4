"""Devices: which device an expression denotes (:func:`device_of`; strings, ints,
``torch.device``), where ``.to(...)`` moves a tensor (:func:`to_target`), and device *origins*:
the one device expression a tensor was placed with (``x.to(device)`` and every op of its result
share the origin ``device``), so a rewrite can create new tensors on it. The device of a tensor
value itself is part of its :class:`~.values.Value` (provenance.py).

Also here, for the copy rules: which ``.to(x)`` arguments are dtypes (:func:`is_cast_argument`:
a cast is no copy), what the tests around a copy say of its device (:func:`cuda_branch`: the
``else`` of ``if torch.cuda.is_available():`` rules CUDA out), and the *likely* fact that an item of a batch from a loader
the code does not construct is a fresh CPU tensor (:func:`is_likely_batch_item`).
"""

from __future__ import annotations

from collections.abc import Collection, Iterator, Sequence
from typing import TYPE_CHECKING

import libcst as cst
from libcst.metadata import Assignment, GlobalScope
from libcst.metadata.scope_provider import BaseAssignment

from . import callgraph
from .attributes import likely_attribute_values
from .bindings import fact_of_name, nearest_target, single_valued
from .dtypes import is_dtype
from .hotness import batch_param
from .loader_names import loader_like
from .narrowing import narrowed_kind
from .navigation import target_path
from .syntax import keyword, named_as_device, positional
from .torch_api import (
    BATCH_DICT_VIEWS,
    BATCH_GETTERS,
    CPU_KEEPING_ATTRS,
    CPU_KEEPING_METHODS,
    CUDA_AVAILABLE,
    DEVICE_TYPE_ATTR,
    DEVICE_TYPE_NAME,
    DEVICE_WORDS,
    DTYPE_NAME,
    DTYPE_NAME_SUFFIX,
    LOGGING_ITERATORS,
    METHOD_NON_TENSOR,
    NON_TENSOR_NAMESPACES,
    PASS_THROUGH_ITER,
    TENSOR_ATTR_TENSOR,
    TYPE_NAME_SUFFIX,
)
from .values import OTHER, Device, Kind, Value

# Methods of METHOD_NON_TENSOR whose results hold tensors on the tensor's own device (not
# ``type``: ``t.type("torch.cuda.FloatTensor")`` may move it).
_TENSOR_PIECES = frozenset({"unbind", "split", "chunk", "tensor_split"})

if TYPE_CHECKING:
    from .module import ModuleAnalysis


def device_origin(a: ModuleAnalysis, expr: cst.BaseExpression) -> str | None:
    """The code of the one device expression a tensor was placed with (``device`` for
    ``x.to(device)``, ``"cuda"`` for ``x.cuda()``), or None when not provably one.

    Tensors with the same origin are on the same device. Operations keep the origin of their
    tensor operands; operands of unknown origin are ignored (a PyTorch op with tensors on two
    devices raises, except CPU 0-d operands, which do not decide the result's device).

    Known gap: if the operand with the known origin is itself a CPU 0-d tensor (its origin a
    device that may be the CPU) and the unknown one is on CUDA, an element-wise op runs on
    CUDA and the origin is wrong. A rewrite built on it then raises a device mismatch where
    the original ran; it never changes a number. Ruling it out needs a "not 0-d" fact the
    analysis does not track yet (requiring a CUDA origin instead loses the common
    ``x.to(device)`` evaluation loops).
    """
    found = _origin_by_code(a, expr)
    if found is None:  # placed in another function (a parameter, a call's result): the value's
        found = a.value(expr).origin
        if found is not None and not _visible(a, expr, found):
            return None
    return found


def _visible(a: ModuleAnalysis, at: cst.CSTNode, origin: str) -> bool:
    """Does the origin's code mean the same device at ``at`` (a global name not shadowed there)?"""
    if origin.startswith('"'):
        return True
    scope = a.scope(at)
    if scope is None:
        return False
    try:
        found = scope[origin]
    except Exception:
        return False
    return _module_level(found)


def _module_level(bindings: Collection[BaseAssignment]) -> bool:
    """Are all these bindings plain assignments at module level (one name in every function)?"""
    return bool(bindings) and all(isinstance(b, Assignment) and isinstance(b.scope, GlobalScope) for b in bindings)


def _origin_by_code(a: ModuleAnalysis, expr: cst.BaseExpression) -> str | None:
    if isinstance(expr, cst.Name):
        return fact_of_name(a, expr, a.device_origin)
    if isinstance(expr, cst.Subscript):
        return a.device_origin(expr.value)
    if isinstance(expr, cst.Attribute) and expr.attr.value in TENSOR_ATTR_TENSOR:
        return a.device_origin(expr.value)  # ``loss.data``, ``w.T``, ``p.grad``: on the tensor's device
    if isinstance(expr, (cst.BinaryOperation, cst.Comparison, cst.UnaryOperation)):
        operands: list[cst.BaseExpression]
        if isinstance(expr, cst.BinaryOperation):
            operands = [expr.left, expr.right]
        elif isinstance(expr, cst.Comparison):
            operands = [expr.left, *(c.comparator for c in expr.comparisons)]
        else:
            operands = [expr.expression]
        return _one_origin(a, operands)
    if not isinstance(expr, cst.Call):
        return None
    func = expr.func
    name = a.direct_callee(expr)
    if name is not None and name.startswith("torch."):
        dev = keyword(expr, "device")
        if dev is not None:
            return _device_code(a, dev.value)
        if name.startswith(NON_TENSOR_NAMESPACES) and name != "torch.nn.utils.clip_grad_norm_":
            return None
        return _one_origin(a, [arg.value for arg in expr.args])
    # ``x.to(device)`` of an ``x`` that may be a tensor (a batch of unknown origin) places it;
    # if ``x`` is something else it is no tensor operand of what follows, so it decides nothing.
    receiver_kind = a.value(func.value).kind if isinstance(func, cst.Attribute) else None
    if receiver_kind in (Kind.TENSOR, Kind.BATCH, Kind.UNKNOWN) and isinstance(func, cst.Attribute) and (
        receiver_kind is not Kind.UNKNOWN or func.attr.value in ("to", "cuda")
    ):
        method = func.attr.value
        if method in METHOD_NON_TENSOR and method not in _TENSOR_PIECES:
            return None  # ``z.size()``, ``t.item()``: no tensor, so no operand placed anywhere
        if method == "cuda":
            return '"cuda"' if not expr.args else None
        if method == "cpu":
            return '"cpu"'
        if method == "to":
            target = a.to_target(expr)
            if target is None:
                return a.device_origin(func.value)
            dev = keyword(expr, "device") or next(iter(positional(expr)), None)
            return _device_code(a, dev.value) if dev is not None else None
        return a.device_origin(func.value)
    if a.value(func).kind is Kind.MODULE:
        return _one_origin(a, [arg.value for arg in expr.args])
    return None


def _one_origin(a: ModuleAnalysis, operands: Sequence[cst.BaseExpression]) -> str | None:
    # Only tensors have an origin, so Python numbers among the operands drop out here.
    origins = {a.device_origin(o) for o in operands}
    origins.discard(None)
    return origins.pop() if len(origins) == 1 else None


def origin_code(a: ModuleAnalysis, expr: cst.BaseExpression) -> str | None:
    """A device expression as the *origin* of the tensors it places (``Value.origin``): a string
    literal, or a module-level name bound once (the same binding in every function, so origins
    can cross calls); None for anything else (a local name, an attribute, an int index)."""
    if isinstance(expr, cst.SimpleString):
        return _device_code(a, expr)
    if not isinstance(expr, cst.Name) or a.value(expr).kind is not Kind.DEVICE:
        return None
    return expr.value if single_valued(a, expr) and _module_level(a.bindings(expr)) else None


def _device_code(a: ModuleAnalysis, expr: cst.BaseExpression) -> str | None:
    """A device expression as stable code: a string literal, or a name bound once."""
    if a.value(expr).kind is not Kind.DEVICE:
        return None
    if isinstance(expr, cst.SimpleString):
        return '"' + expr.evaluated_value + '"' if isinstance(expr.evaluated_value, str) else None
    if isinstance(expr, cst.Name) and single_valued(a, expr):
        return expr.value
    return None


def device_of(a: ModuleAnalysis, expr: cst.CSTNode) -> Device:
    """The device a device-like expression (string, int, ``torch.device``, name) denotes."""
    v = a.value(expr)
    if (
        v.device is Device.UNKNOWN
        and isinstance(expr, cst.Attribute)
        and expr.attr.value == "device"
        and a.tested_on_cuda(expr.value)
    ):
        return Device.CUDA  # ``x.device`` where an ``is_cuda`` test puts ``x`` on a GPU
    if v.kind is Kind.DEVICE:
        if v.device is Device.UNKNOWN and a.cuda_or_cpu_only:
            return Device.CUDA_OR_CPU  # declared: the project runs on nothing else
        return v.device
    return Device.CUDA if _is_device_index(a, expr) else Device.UNKNOWN


def _is_device_index(a: ModuleAnalysis, expr: cst.CSTNode) -> bool:
    """A Python int as a device: ``0``, ``local_rank = int(os.environ["LOCAL_RANK"])``,
    ``rank % torch.cuda.device_count()``. PyTorch reads an int as an index of the current
    accelerator; syncfix reads it as CUDA (``.cuda(i)`` always is)."""
    return isinstance(expr, cst.BaseExpression) and a.python_number_type(expr) == "int"


def to_target(a: ModuleAnalysis, call: cst.Call) -> Device | None:
    """The device a ``.to(...)`` call moves to, or None when it names no device: a dtype only
    (:func:`is_cast_argument`, a ``*_type`` name such as ``dst_type``, or ``dtype=`` alone).

    ``Device.UNKNOWN`` means: it may name a device, but which one is not provable (this
    includes ``.to(other_tensor)``: the device of another tensor).
    """
    dev = keyword(call, "device")
    if dev is not None:
        return a.device_of(dev.value)
    args = positional(call)
    if not args:
        return None
    first = args[0].value
    v = a.value(first)
    if v.kind is Kind.DEVICE or isinstance(first, cst.Attribute) and first.attr.value == "device":
        return a.device_of(first)
    if _is_device_index(a, first):
        return Device.CUDA
    if v.is_tensor:
        return Device.UNKNOWN  # ``.to(other_tensor)``: device and dtype of another tensor
    if is_cast_argument(a, first) or _type_named(a, first):
        return None
    return Device.UNKNOWN


def names_device_only(a: ModuleAnalysis, call: cst.Call) -> bool:
    """Does ``.to(...)`` provably name a device and no dtype (so it keeps the dtype)?"""
    if any(arg.keyword is not None and arg.keyword.value == "dtype" for arg in call.args):
        return False
    args = positional(call)
    if len(args) > 1:
        return False
    if not args:
        return keyword(call, "device") is not None
    first = args[0].value
    if a.value(first).kind is Kind.DEVICE or _is_device_index(a, first):
        return True
    # likely view: ``.to(args.device)``, ``.to(self.device)`` name a device by their names
    return a.assume_tensors and a.value(first).kind is Kind.UNKNOWN and named_as_device(first) and not is_cast_argument(a, first)


def is_cast_argument(a: ModuleAnalysis, expr: cst.BaseExpression) -> bool:
    """Does ``expr``, the first argument of ``.to(expr)``, name a dtype by every sign we can read
    (so the call is a cast, not a copy)? A torch dtype (``torch.float16``), or a name or
    attribute called ``dtype``/``*_dtype`` (``dtype``, ``self.dtype``, ``x.dtype``,
    ``compute_dtype``) whose value is not a device or a tensor, or a name every binding of
    which is one of these (``dt = torch.float16``), or a conditional of two of these
    (``torch.float32 if full else torch.float16``)."""
    if is_dtype(a, expr):
        return True
    if isinstance(expr, cst.IfExp):
        return is_cast_argument(a, expr.body) and is_cast_argument(a, expr.orelse)
    v = a.value(expr)
    if v.kind is Kind.DEVICE or v.is_tensor or _is_device_index(a, expr):
        return False
    if isinstance(expr, cst.Attribute):
        return _dtype_named(expr.attr.value)
    if isinstance(expr, cst.Name):
        return _dtype_named(expr.value) or fact_of_name(a, expr, a.is_cast_argument) is True
    return False


def _dtype_named(name: str) -> bool:
    return name == DTYPE_NAME or name.endswith(DTYPE_NAME_SUFFIX)


def _type_named(a: ModuleAnalysis, expr: cst.BaseExpression) -> bool:
    """A name or attribute ``*_type`` with no device in its name (``dst_type``, not
    ``device_type``) and a value syncfix cannot name: likely a dtype. Enough to leave a
    ``.to(dst_type)`` unreported, never to prove what the cast keeps."""
    name = expr.attr.value if isinstance(expr, cst.Attribute) else expr.value if isinstance(expr, cst.Name) else ""
    lowered = name.lower()
    return (
        lowered.endswith(TYPE_NAME_SUFFIX)
        and not any(word in lowered for word in DEVICE_WORDS)
        and a.value(expr).kind is Kind.UNKNOWN
    )


def cuda_branch(a: ModuleAnalysis, call: cst.Call) -> bool | None:
    """What the tests around ``call`` (a ``.to(...)``) say of its device: False where the code
    has ruled CUDA out (the ``else`` of ``if torch.cuda.is_available():``, of ``if device_type
    == "cuda":``, of ``if <d>.type == "cuda":`` with ``<d>`` the device the call names, the
    body of their negations, and of a test for another type, ``<d>.type == "mps"``); True in the body of ``if <d>.type == "cuda":`` where ``<d>`` is
    a name bound once (so the call's device is CUDA); None where they say nothing."""
    dev = keyword(call, "device") or next(iter(positional(call)), None)
    device = dev.value if dev is not None else None
    child: cst.CSTNode = call
    for anc in a.ancestors(call):
        if isinstance(anc, (cst.FunctionDef, cst.ClassDef, cst.Lambda)):
            return None
        if isinstance(anc, (cst.If, cst.IfExp)):
            says = _says_cuda(a, anc.test, device)
            if says is not None and child is (anc.orelse if says else anc.body):
                return False
            if says and child is anc.body and _names_this_device(a, anc.test, device):
                return True
        child = anc
    return None


def _names_this_device(a: ModuleAnalysis, test: cst.BaseExpression, device: cst.BaseExpression | None) -> bool:
    """Is ``test`` ``<d>.type == "cuda"`` for the device ``device``, a name bound once?"""
    if not (isinstance(device, cst.Name) and a.bound_once(device)):
        return False
    if not isinstance(test, cst.Comparison) or not isinstance(test.comparisons[0].operator, cst.Equal):
        return False
    subject = test.left if isinstance(test.comparisons[0].comparator, cst.SimpleString) else test.comparisons[0].comparator
    return (
        isinstance(subject, cst.Attribute)
        and isinstance(subject.value, cst.Name)
        and subject.value.value == device.value
        and a.bound_once(subject.value)
    )


def _says_cuda(a: ModuleAnalysis, test: cst.BaseExpression, device: cst.BaseExpression | None) -> bool | None:
    """True when ``test`` holds only on CUDA (for ``device``), False when it holds only off
    CUDA (``!= "cuda"``, ``== "mps"``), None when it says neither."""
    if isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
        inner = _says_cuda(a, test.expression, device)
        if inner is False and not _about_cuda(test.expression):
            return None  # ``not (d.type == "mps")`` holds on CUDA and elsewhere
        return None if inner is None else not inner
    if isinstance(test, cst.Call):
        return True if not test.args and a.callee(test) in CUDA_AVAILABLE else None
    if not isinstance(test, cst.Comparison) or len(test.comparisons) != 1:
        return None
    op = test.comparisons[0].operator
    left, right = test.left, test.comparisons[0].comparator
    if isinstance(left, cst.SimpleString):
        left, right = right, left
    if not isinstance(right, cst.SimpleString):
        return None
    named = right.evaluated_value  # ``"mps"`` rules CUDA out where it holds (sd-scripts' mps branch)
    if isinstance(left, cst.Name):
        subject = left.value == DEVICE_TYPE_NAME
    elif isinstance(left, cst.Attribute) and left.attr.value == DEVICE_TYPE_ATTR:
        subject = device is not None and left.value.deep_equals(device)
    else:
        subject = False
    if not subject:
        return None
    if named != "cuda":
        return False if isinstance(op, cst.Equal) and isinstance(named, str) and named.isidentifier() else None
    if isinstance(op, cst.Equal):
        return True
    return False if isinstance(op, cst.NotEqual) else None


def _about_cuda(test: cst.BaseExpression) -> bool:
    """Is ``test`` no comparison with a device type other than ``"cuda"``?"""
    if isinstance(test, cst.Comparison) and len(test.comparisons) == 1:
        for side in (test.left, test.comparisons[0].comparator):
            if isinstance(side, cst.SimpleString) and side.evaluated_value != "cuda":
                return False
    return True


# ---- the likely tier: items of batches from loaders the code does not construct -----------

def is_likely_batch_item(a: ModuleAnalysis, expr: cst.BaseExpression) -> bool:
    """Is ``expr`` an item of a batch from a loader this code does not construct, and so
    *likely* (not provably) a fresh CPU tensor? A target of ``for`` over an iterable of unknown
    value (a parameter, ``self.loader``, ``get_loader()``'s result; through ``enumerate``,
    ``zip``, ``tqdm``, ``iter``, ``islice``), a part of it (``x, y = batch``, ``batch["input_ids"]``,
    ``batch[0]``, ``batch[i:j]``), an item of its ``.items()``/``.values()`` or of a loop over
    it, ``next(it)`` of such an iterator, and a cast or view of these (``x.float()``, ``x.data``).
    A value the analysis knows (a tensor, a number, a module, a list...) is never one."""
    return bool(a.solver.get("likely-batch", expr, lambda n: _likely_batch(a, n), True, False))


def narrowed_to_tensor(a: ModuleAnalysis, expr: cst.BaseExpression) -> bool:
    """Is ``expr`` a name known to be a tensor only by a type test around it (``val.to(device) if
    torch.is_tensor(val) else val``), of a value syncfix cannot name otherwise? Still likely
    a batch's item, and a tensor's own ``.to``."""
    return isinstance(expr, cst.Name) and a.value(expr) == Value(Kind.TENSOR) and narrowed_kind(a, expr) is Kind.TENSOR


def _likely_batch(a: ModuleAnalysis, expr: cst.BaseExpression) -> bool:
    if a.value(expr).kind not in (Kind.UNKNOWN, Kind.BOTTOM) and not narrowed_to_tensor(a, expr):
        return False
    if isinstance(expr, cst.Subscript):
        return is_likely_batch_item(a, expr.value) or _fed_parts(a, expr.value)
    if isinstance(expr, cst.Attribute):
        return expr.attr.value in CPU_KEEPING_ATTRS and is_likely_batch_item(a, expr.value)
    if isinstance(expr, cst.Call):
        func = expr.func
        args = positional(expr)
        if a.callee(expr) == "builtins.next" and args:
            return _yields_batches(a, args[0].value, [])
        if isinstance(func, cst.Attribute) and func.attr.value in CPU_KEEPING_METHODS:
            return is_likely_batch_item(a, func.value)
        return _batch_getter(a, expr)
    if not isinstance(expr, cst.Name):
        return False
    nearest = nearest_target(a, expr)
    if nearest is not None:  # ``x, y = loader.next_batch()`` just before, in a loop that rebinds x
        return _bound_to_batch(a, nearest)
    bindings = [asg for asg in a.bindings(expr) if _may_reach(a, asg, expr)]
    return bool(bindings) and all(
        isinstance(asg, Assignment)
        and (
            (isinstance(asg.node, cst.Name) and _bound_to_batch(a, asg.node))
            or (isinstance(asg.node, cst.Param) and _passed_batches(a, asg.node))
        )
        for asg in bindings
    )


def _batch_getter(a: ModuleAnalysis, call: cst.Call) -> bool:
    """``train_loader.next_batch()``: a batch getter (``BATCH_GETTERS``) of an object named as
    a loader whose value syncfix cannot name."""
    func = call.func
    if not (isinstance(func, cst.Attribute) and func.attr.value in BATCH_GETTERS):
        return False
    owner = func.value
    name = owner.attr.value if isinstance(owner, cst.Attribute) else owner.value if isinstance(owner, cst.Name) else ""
    return loader_like(name) and a.value(owner).kind in (Kind.UNKNOWN, Kind.BOTTOM, Kind.OTHER)


def batch_sources(a: ModuleAnalysis, expr: cst.BaseExpression) -> list[tuple[cst.BaseExpression, bool]] | None:
    """For a likely batch item (:func:`is_likely_batch_item`): the loaders it comes from, each
    with whether ``expr`` is that loader's whole item (``for batch in loader``, ``next(it)``)
    rather than a part of one (``x, y = batch``, ``batch["ids"]``). None where one comes in
    through a parameter (the callers' loaders are not followed here)."""
    if isinstance(expr, cst.Subscript):
        found = batch_sources(a, expr.value)
        return None if found is None else [(loader, False) for loader, _ in found]
    if isinstance(expr, cst.Attribute) and expr.attr.value in CPU_KEEPING_ATTRS:
        return batch_sources(a, expr.value)
    if isinstance(expr, cst.Call):
        args = positional(expr)
        if a.callee(expr) == "builtins.next" and args:
            return _iterated_sources(a, args[0].value, [])
        func = expr.func
        if isinstance(func, cst.Attribute) and func.attr.value in CPU_KEEPING_METHODS:
            return batch_sources(a, func.value)
        return [(func.value, True)] if _batch_getter(a, expr) else []  # type: ignore[attr-defined]
    if not isinstance(expr, cst.Name):
        return []
    out: list[tuple[cst.BaseExpression, bool]] = []
    for asg in a.bindings(expr):
        node = getattr(asg, "node", None)
        if not isinstance(node, cst.Name):
            return None  # a parameter, or a binding syncfix cannot read
        path, parent = target_path(a, node)
        if isinstance(parent, (cst.For, cst.CompFor)):
            found = _iterated_sources(a, parent.iter, path)
        elif isinstance(parent, cst.AssignTarget) and isinstance(assign := a.parent(parent), cst.Assign):
            value = assign.value
            if (  # ``pe, ppe = batch["pe"], batch["ppe"]``: the display's element
                path
                and isinstance(value, (cst.Tuple, cst.List))
                and path[0] < len(value.elements)
                and not any(isinstance(el, cst.StarredElement) for el in value.elements)
            ):
                value, path = value.elements[path[0]].value, path[1:]
            found = batch_sources(a, value)
            if found is not None and path:
                found = [(loader, False) for loader, _ in found]
        else:
            found = []
        if found is None:
            return None
        out.extend(found)
    return out


def _iterated_sources(
    a: ModuleAnalysis, iterable: cst.BaseExpression, path: list[int]
) -> list[tuple[cst.BaseExpression, bool]] | None:
    """:func:`batch_sources` of what iterating ``iterable`` gives at the destructuring ``path``."""
    if isinstance(iterable, cst.IfExp):  # ``tqdm(loader) if verbose else loader``: either
        sides = [_iterated_sources(a, side, path) for side in (iterable.body, iterable.orelse)]
        return None if any(s is None for s in sides) else [src for side in sides if side for src in side]
    if isinstance(iterable, cst.Call):
        name = a.callee(iterable)
        args = positional(iterable)
        if name == "builtins.enumerate" and args and path and path[0] == 1:
            return _iterated_sources(a, args[0].value, path[1:])
        if name == "builtins.zip" and args and path and path[0] < len(args):
            return _iterated_sources(a, args[path[0]].value, path[1:])
        if (name in PASS_THROUGH_ITER or name == "builtins.iter" or _logs_each(iterable)) and args:
            return _iterated_sources(a, args[0].value, path)
        func = iterable.func
        if isinstance(func, cst.Attribute) and func.attr.value in BATCH_DICT_VIEWS:
            found = batch_sources(a, func.value)
            return None if found is None else [(loader, False) for loader, _ in found]
        return []
    if isinstance(iterable, cst.Name):
        bound = _bound_once(a, iterable)
        if bound is not None and _yields_batches(a, bound, path):
            return _iterated_sources(a, bound, path)  # ``loop = tqdm(loader)``
    if is_likely_batch_item(a, iterable):  # ``for t in batch``: parts of a batch
        found = batch_sources(a, iterable)
        return None if found is None else [(loader, False) for loader, _ in found]
    return [(iterable, not path)]


_ACCELERATORS = ("accelerate.Accelerator", "accelerate.accelerator.Accelerator")


def placed_by_accelerate(a: ModuleAnalysis, loader: cst.BaseExpression) -> bool:
    """Is ``loader`` the result of ``accelerator.prepare(...)`` (or ``prepare_data_loader``) for
    an ``accelerate.Accelerator(...)`` built here without ``device_placement=False``? Its
    batches then come already on the accelerator's device (accelerate's default). Followed
    through names and ``self`` attributes (``self.dl = self.accelerator.prepare(dl)`` in
    ``__init__``), and through what yields the same batches: ``skip_first_batches(dl, n)``,
    ``iter(dl)``, ``cycle(dl)`` (itertools', or a generator of that name). Likely facts: they
    decide only findings (a copy that copies nothing is quiet; a batch part's read may be a
    GPU read), never a fix."""
    return _prepared(a, loader, 0)


# What yields a loader's own batches, by the callee's last name.
_SAME_BATCHES = frozenset({"skip_first_batches", "iter", "cycle"})


def _prepared(a: ModuleAnalysis, expr: cst.BaseExpression, depth: int) -> bool:
    if depth > 4:
        return False
    if isinstance(expr, cst.Call):
        func = expr.func
        if isinstance(func, cst.Attribute) and func.attr.value in ("prepare", "prepare_data_loader"):
            return _places_devices(expr) and _is_accelerator(a, func.value, depth + 1)
        last = func.attr.value if isinstance(func, cst.Attribute) else func.value if isinstance(func, cst.Name) else ""
        args = positional(expr)
        return last in _SAME_BATCHES and bool(args) and _prepared(a, args[0].value, depth + 1)
    values = _bound_to(a, expr)
    if not values:
        return False
    prepared = [v for v in values if _prepared(a, v, depth + 1)]
    if len(prepared) == len(values):
        return True
    # ``loader = DataLoader(...)``, then ``model, loader = accelerator.prepare(model, loader)`` in
    # every branch (sd-scripts): the name goes into ``prepare`` and comes back from it
    return isinstance(expr, cst.Name) and any(
        isinstance(p, cst.Call) and any(isinstance(arg.value, cst.Name) and arg.value.value == expr.value for arg in p.args)
        for p in prepared
    )


def _is_accelerator(a: ModuleAnalysis, expr: cst.BaseExpression, depth: int) -> bool:
    """Is ``expr`` (a name or ``self`` attribute) only ever an ``Accelerator(...)`` that places
    devices? Where it is bound to nothing this module builds (a parameter, sd-scripts'
    ``accelerator = train_util.prepare_accelerator(args)``), its name says so: ``accelerator``,
    ``self.accelerator`` (a likely fact; an ``Accelerator(device_placement=False)`` seen here
    still says no)."""
    makers = _bound_to(a, expr) or []
    built = [m for m in makers if isinstance(m, cst.Call) and a.callee(m) in _ACCELERATORS]
    if built and len(built) == len(makers):
        return all(_places_devices(m) for m in built)
    if any(not _places_devices(m) for m in built):
        return False
    name = expr.value if isinstance(expr, cst.Name) else expr.attr.value if isinstance(expr, cst.Attribute) else ""
    return "accelerator" in name.lower()


def _bound_to(a: ModuleAnalysis, expr: cst.BaseExpression) -> list[cst.BaseExpression] | None:
    """What a name's bindings, or a ``self`` attribute's assignments in its class (likely:
    attributes.py), assign."""
    if isinstance(expr, cst.Name):
        return _assigned_values(a, expr)
    if isinstance(expr, cst.Attribute):
        return likely_attribute_values(a, expr)
    return None


def _assigned_values(a: ModuleAnalysis, name: cst.Name) -> list[cst.BaseExpression] | None:
    """The right-hand side of each binding that may reach ``name``, a tuple target's included
    (``model, loader = accelerator.prepare(model, loader)``); None for any other binding."""
    out: list[cst.BaseExpression] = []
    for asg in a.bindings(name):
        node = getattr(asg, "node", None)
        parent = a.parent(node) if isinstance(node, cst.Name) else None
        while isinstance(parent, (cst.Element, cst.Tuple, cst.List)):
            parent = a.parent(parent)
        assign = a.parent(parent) if isinstance(parent, cst.AssignTarget) else None
        if not isinstance(assign, cst.Assign):
            return None
        out.append(assign.value)
    return out


def _places_devices(call: cst.Call) -> bool:
    """Does ``Accelerator(...)`` (or its ``prepare(...)``) leave ``device_placement`` on?"""
    if any(arg.star for arg in call.args):
        return False  # ``**kwargs`` may turn it off
    flag = keyword(call, "device_placement")
    return flag is None or isinstance(flag.value, cst.Name) and flag.value.value == "True"


def _passed_batches(a: ModuleAnalysis, param: cst.Param) -> bool:
    """Is every argument the module's call sites pass to ``param`` a batch item (``batch, cond =
    next(self.data); self.run_step(batch, cond)``)? A likely fact: callers elsewhere may pass
    something else, so a function that escapes counts its calls here alone."""
    passed = callgraph.param_arguments(a, param, likely=True)
    if passed is None:
        return _fed_batches(a, param)
    # a batch of a loader the code builds counts too (monodepth2's ``self.process_batch(inputs)``)
    return all(is_likely_batch_item(a, expr) or a.likely.value(expr).kind is Kind.BATCH for expr in passed)


def _fed_parts(a: ModuleAnalysis, expr: cst.BaseExpression) -> bool:
    """Is ``expr`` a parameter that another file hands the parts of a loop's batch in a dict
    (Restormer's ``model.feed_train_data({"lq": lq, "gt": gt})``)? The dict is a known value,
    not a batch; its items are the batch's parts."""
    if not isinstance(expr, cst.Name) or a.value(expr).kind is not Kind.OTHER:
        return False
    bindings = a.bindings(expr)
    return bool(bindings) and all(
        isinstance(asg, Assignment) and isinstance(asg.node, cst.Param) and _fed_batches(a, asg.node)
        for asg in bindings
    )


def _fed_batches(a: ModuleAnalysis, param: cst.Param) -> bool:
    """Is ``param`` of a method that another project file calls through an object in a loop
    over batches, with the loop's batch as this argument (BasicSR's ``train.py``:
    ``while train_data is not None: model.feed_data(train_data)``; the project index:
    ``hotness.batch_param``)?"""
    fn = a.enclosing_function(param)
    block = a.parent(fn) if fn is not None else None
    if fn is None or not isinstance(a.parent(block) if block is not None else None, cst.ClassDef):
        return False
    params = list(fn.params.params)
    if param not in params or params.index(param) == 0:
        return False  # ``self``, or keyword-only
    keys = (params.index(param) - 1, param.name.value)
    return any(batch_param(fn.name.value, key) in a.called_from_loops for key in keys)


def _may_reach(a: ModuleAnalysis, asg: object, use: cst.Name) -> bool:
    """Can this binding reach ``use``? Where no loop carries bindings round to the use, not from
    after it, nor from the other branch of an ``if`` (``if c: x = x.cuda(i) else: x.to(d)``)."""
    node = getattr(asg, "node", None)
    if not isinstance(node, cst.CSTNode) or a.carrying_loops(use):
        return True
    if _comprehension_variable(a, node, use):
        return True  # ``[d[0].cuda() for d in batches]``: bound before the element runs, written after it
    order = a.structure.order
    if order.get(node, -1) > order.get(use, -1):
        return False
    use_path = {id(anc): child for child, anc in _child_ancestor_pairs(a, use)}
    for child, anc in _child_ancestor_pairs(a, node):
        if id(anc) in use_path:
            other = use_path[id(anc)]
            if isinstance(anc, cst.If) and {id(child), id(other)} == {id(anc.body), id(anc.orelse)}:
                return False
            return True
    return True


def _comprehension_variable(a: ModuleAnalysis, target: cst.CSTNode, use: cst.Name) -> bool:
    """Is ``target`` bound by a ``for`` clause of a comprehension that holds ``use``?"""
    for anc in a.ancestors(target):
        if isinstance(anc, cst.CompFor):
            comprehension = a.parent(anc)
            while isinstance(comprehension, cst.CompFor):
                comprehension = a.parent(comprehension)
            return any(up is comprehension for up in a.ancestors(use))
        if not isinstance(anc, (cst.Tuple, cst.List, cst.Element, cst.StarredElement)):
            return False
    return False


def _child_ancestor_pairs(a: ModuleAnalysis, node: cst.CSTNode) -> Iterator[tuple[cst.CSTNode, cst.CSTNode]]:
    child = node
    for anc in a.ancestors(node):
        yield child, anc
        child = anc


def _bound_to_batch(a: ModuleAnalysis, target: cst.Name) -> bool:
    """Does this binding of a name (``target``) give it a batch item?"""
    path, parent = target_path(a, target)
    if isinstance(parent, cst.AssignTarget):
        assign = a.parent(parent)
        assert isinstance(assign, cst.Assign)
        value: cst.BaseExpression = assign.value
        for index in path:
            if not isinstance(value, (cst.Tuple, cst.List)):
                break  # ``x, y = batch``: items of a batch are batch items
            if index >= len(value.elements) or isinstance(value.elements[index], cst.StarredElement):
                return False
            value = value.elements[index].value
        return is_likely_batch_item(a, value)
    if isinstance(parent, cst.AnnAssign) and parent.value is not None and not path:
        return is_likely_batch_item(a, parent.value)
    if isinstance(parent, cst.NamedExpr) and not path:
        return is_likely_batch_item(a, parent.value)
    if isinstance(parent, (cst.For, cst.CompFor)):
        return _yields_batches(a, parent.iter, path)
    return False


def _yields_batches(a: ModuleAnalysis, iterable: cst.BaseExpression, path: list[int]) -> bool:
    """Does iterating ``iterable`` give batches at the destructuring ``path``?"""
    if isinstance(iterable, cst.Call):
        name = a.callee(iterable)
        args = positional(iterable)
        if name == "builtins.enumerate" and args:
            return bool(path) and path[0] == 1 and _yields_batches(a, args[0].value, path[1:])
        if name == "builtins.zip" and args:
            return bool(path) and path[0] < len(args) and _yields_batches(a, args[path[0]].value, path[1:])
        if (name in PASS_THROUGH_ITER or name == "builtins.iter" or _logs_each(iterable)) and args:
            return _yields_batches(a, args[0].value, path)
        func = iterable.func
        if isinstance(func, cst.Attribute) and func.attr.value in BATCH_DICT_VIEWS:
            if func.attr.value == "items" and (not path or path[0] != 1):
                return False  # the key, or the (key, item) pair
            return is_likely_batch_item(a, func.value)
        return False  # the result of another call (``model.parameters()``, ``range(n)``...)
    if isinstance(iterable, (cst.Name, cst.Attribute)) and a.value(iterable).kind in (Kind.UNKNOWN, Kind.BOTTOM):
        # a loader (or iterator) the code does not construct, or a batch item itself; named as
        # one: a list of model outputs, features or call arguments is no loader's
        if isinstance(iterable, cst.Name):
            bound = _bound_once(a, iterable)
            if bound is not None and _yields_batches(a, bound, path):
                return True  # ``loop = tqdm(loader)``
        name = iterable.value if isinstance(iterable, cst.Name) else iterable.attr.value
        return loader_like(name) or is_likely_batch_item(a, iterable)
    return False


def _logs_each(call: cst.Call) -> bool:
    """``metric_logger.log_every(loader, freq, header)``: the logger of torchvision's, DETR's,
    DINO's and MAE's references yields each item of its first argument (by name: a likely fact)."""
    return isinstance(call.func, cst.Attribute) and call.func.attr.value in LOGGING_ITERATORS


def _bound_once(a: ModuleAnalysis, name: cst.Name) -> cst.BaseExpression | None:
    """The call a name is bound to by its one binding (``loop = tqdm(loader)``, ``with
    tqdm(loader) as bar:``), or None."""
    bindings = a.bindings(name)
    if len(bindings) != 1:
        return None
    (asg,) = bindings
    node = getattr(asg, "node", None)
    parent = a.parent(node) if isinstance(node, cst.Name) else None
    if isinstance(parent, cst.AssignTarget):
        assign = a.parent(parent)
        value = assign.value if isinstance(assign, cst.Assign) and len(assign.targets) == 1 else None
    elif isinstance(parent, cst.AsName) and isinstance(a.parent(parent), cst.WithItem):
        value = a.parent(parent).item  # type: ignore[union-attr]
    else:
        value = None
    return value if isinstance(value, cst.Call) else None




def string_device(expr: cst.BaseExpression) -> Value:
    """A string as a device: ``"cuda"``, ``"cuda:1"`` and ``"cpu"`` are devices, any other string is not."""
    text = expr.evaluated_value if hasattr(expr, "evaluated_value") else None
    if isinstance(text, bytes):
        return OTHER
    if text == "cuda" or (isinstance(text, str) and text.startswith("cuda:") and text[5:].isdigit()):
        return Value(Kind.DEVICE, Device.CUDA)
    if text == "cpu":
        return Value(Kind.DEVICE, Device.CPU)
    return OTHER  # "mps", "meta", or any other string: not a device we can prove


def fstring_device(expr: cst.FormattedString) -> Value:
    """``f"cuda:{rank}"`` (``f"cuda:{rank:d}"``: BigVGAN's) is a CUDA device (``torch.device``
    raises on any other text after ``cuda:``); any other f-string is not a device we can prove."""
    parts = expr.parts
    if (
        parts
        and isinstance(parts[0], cst.FormattedStringText)
        and parts[0].value == "cuda:"
        and len(parts) == 2
        and isinstance(parts[1], cst.FormattedStringExpression)
    ):
        return Value(Kind.DEVICE, Device.CUDA)
    return OTHER


def concatenated_device(a: ModuleAnalysis, left: cst.SimpleString, right: cst.BaseExpression) -> Value:
    """``"cuda:" + str(gpu)`` is a CUDA device (``torch.device`` raises on anything else it could
    be); any other sum with a string on the left is a string, not a device we can prove."""
    str_call = isinstance(right, cst.Call) and a.callee(right) == "builtins.str"
    return Value(Kind.DEVICE, Device.CUDA) if left.evaluated_value == "cuda:" and str_call else OTHER
