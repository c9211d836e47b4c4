"""Provenance: the abstract :class:`~.values.Value` of an expression (value inference).

Provenance flows through ``torch.*`` / ``F.*`` / ``torch.linalg.*`` calls, tensor methods,
indexing, arithmetic, ``.to(...)``/``.cuda()``/``.cpu()``/``.pin_memory()``, calls of
``nn.Module`` instances (``self.fc`` set in ``__init__`` included), parameters annotated
``torch.Tensor``, and iteration over ``DataLoader`` objects (through ``enumerate``/``zip``/
``tqdm``). Across functions (callgraph.py): a parameter is what its call sites in the module pass
(when its function does not escape), a call of a module function is what it returns, and
``self.<attr>`` joins every assignment in the class, its class attribute and its subclasses here. numpy values and Python numbers are *not* tensors. A name's value is the join over the
bindings that can reach the use (bindings.py). Devices come from the usual idioms: ``"cuda"``,
``"cuda:1"``, ``f"cuda:{rank}"``, ints, ``torch.device("cuda", i)``, and ``"cuda" if torch.cuda.is_available() else "cpu"`` (``cuda|cpu``). The tables read here are in torch_api.py.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

import libcst as cst
from libcst.metadata import Assignment, GlobalScope
from libcst.metadata.scope_provider import BaseAssignment

from . import attributes, callgraph, containers, loaders
from .annotations import annotation_value, used_as_tensor
from .attributes import (
    assumed_tensor,
    attribute_value,
    declared_forward,
    is_module_class,
    used_as_module,
)
from .autograd import backward_checked
from .bindings import assignment_order, fact_of_name
from .devices import concatenated_device, fstring_device, origin_code, string_device
from .dtypes import is_dtype
from .imported import holders
from .legacy_constructors import legacy_cuda_value
from .losses import loss_reduction
from .narrowing import narrowed_kind
from .navigation import in_main_block, target_path
from .shapes import at_least_one_dim
from .syntax import (
    keyword,
    literal_index,
    literal_kind,
    positional,
    through_call,
)
from .tokenizers import tokenized_item
from .torch_api import (
    HOST_LIBRARY_RESULTS,
    LIKELY_TENSOR_METHODS,
    METHOD_MAYBE_SELF,
    METHOD_NON_TENSOR,
    METHODS_TAKING_MEMORY,
    NDARRAY_COPYING_METHODS,
    NUMPY_ALLOCATING,
    PASS_THROUGH_ITER,
    is_inplace_method,
)
from .torch_calls import torch_call_value
from .values import (
    BOTTOM,
    NUMBER,
    OTHER,
    UNKNOWN,
    Device,
    Kind,
    Memory,
    TupleValue,
    Value,
    join_all,
    tensor_device,
    tensor_origin,
)

if TYPE_CHECKING:
    from .module import ModuleAnalysis


def value(a: ModuleAnalysis, expr: cst.CSTNode) -> Value:
    """The abstract value of ``expr`` (memoised; unknown when nothing is provable)."""
    # A loop-carried binding (``x = x.cuda()`` in a loop) starts from nothing (bottom) and is
    # iterated to the least fixpoint of these monotone transfer functions (see fixpoint.py).
    return a.solver.get("value", expr, lambda n: _value(a, n), BOTTOM, UNKNOWN)


def _value(a: ModuleAnalysis, expr: cst.CSTNode) -> Value:
    # the three commonest kinds first, by exact type (node classes are final; no ABC check)
    kind = type(expr)
    if kind is cst.Name:
        name = expr.value  # type: ignore[attr-defined]
        if name in ("True", "False"):
            return NUMBER
        if name == "None":
            return OTHER
        return _name_value(a, expr)  # type: ignore[arg-type]
    if kind is cst.Attribute:
        return attribute_value(a, expr)  # type: ignore[arg-type]
    if kind is cst.Call:
        return _call_value(a, expr)  # type: ignore[arg-type]
    if isinstance(expr, (cst.SimpleString, cst.ConcatenatedString)):
        return string_device(expr)
    if isinstance(expr, cst.FormattedString):
        return fstring_device(expr)
    if isinstance(expr, cst.Integer):
        return Value(Kind.NUMBER, Device.CUDA)  # ``.to(0)`` means cuda:0
    if isinstance(expr, (cst.Float, cst.Imaginary)):
        return NUMBER
    if isinstance(expr, (cst.List, cst.Dict, cst.Set, cst.ListComp, cst.DictComp, cst.SetComp)):
        return OTHER
    if isinstance(expr, cst.Tuple):
        return OTHER
    if isinstance(expr, cst.IfExp):
        return a.value(expr.body).join(a.value(expr.orelse))
    if isinstance(expr, cst.Subscript):
        base = a.value(expr.value)
        if base.kind is Kind.BOTTOM:
            return BOTTOM
        if isinstance(base, TupleValue):
            index = literal_index(expr)
            return base.items[index] if index is not None and -len(base.items) <= index < len(base.items) else UNKNOWN
        if base.kind is Kind.TENSOR:
            return replace(base, dtype=base.dtype)
        if base.kind is Kind.BATCH:
            return base
        if base.kind is Kind.TENSORS:  # an item, or a slice that is still a sequence
            sliced = any(isinstance(el.slice, cst.Slice) for el in expr.slice)
            return base if sliced else replace(base, kind=Kind.TENSOR)
        if base.kind is Kind.NDARRAY:  # a view, a copy or a numpy scalar: in numpy's memory if the array is
            return Value(Kind.NDARRAY, memory=base.memory)
        if base.kind is Kind.MODULE and attributes.holds_module_container(a, expr.value):
            return base  # ``self.criterion[lang]`` of an ``nn.ModuleDict``: a module, placed with it
        if base.kind in (Kind.OTHER, Kind.UNKNOWN):
            held = containers.held_item(a, expr)
            if held is not None:
                return held  # ``dataloaders[phase]`` of a dict of loaders (or of placed tensors)
        key = expr.slice[0].slice if len(expr.slice) == 1 else None
        if base.kind is Kind.UNKNOWN and isinstance(key, cst.Index) and isinstance(key.value, cst.SimpleString):
            named = key.value.evaluated_value  # ``enc["input_ids"]`` of a tokenizer's output (likely)
            tokenized = tokenized_item(a, expr.value, named) if isinstance(named, str) else None
            if tokenized is not None:
                return tokenized
        return UNKNOWN
    if isinstance(expr, cst.BinaryOperation):
        if isinstance(expr.operator, cst.Modulo) and isinstance(expr.left, (cst.SimpleString, cst.ConcatenatedString)):
            return OTHER  # ``"loss %s" % t``: a string
        if isinstance(expr.operator, cst.Add) and isinstance(expr.left, cst.SimpleString):
            return concatenated_device(a, expr.left, expr.right)  # ``"cuda:" + str(gpu)``
        return _arith(a, expr.left, expr.right)
    if isinstance(expr, cst.UnaryOperation):
        if isinstance(expr.operator, cst.Not):
            return NUMBER
        inner = a.value(expr.expression)
        if inner.is_tensor and isinstance(expr.operator, cst.Plus):
            return replace(inner, kind=Kind.TENSOR)  # ``+x`` is ``x`` itself
        if inner.is_tensor:
            return Value(Kind.TENSOR, inner.device, Memory.PAGEABLE, True, origin=inner.origin)
        return NUMBER if inner.kind is Kind.NUMBER else UNKNOWN
    if isinstance(expr, cst.Comparison):
        operands = [expr.left, *(c.comparator for c in expr.comparisons)]
        tensors = [a.value(o) for o in operands]
        if any(isinstance(c.operator, (cst.Is, cst.IsNot, cst.In, cst.NotIn)) for c in expr.comparisons):
            return NUMBER
        if any(t.kind is Kind.BOTTOM for t in tensors):
            return BOTTOM
        if any(t.is_tensor for t in tensors):
            device = tensor_device(tensors)
            return Value(Kind.TENSOR, device, Memory.PAGEABLE, True, "torch.bool", tensor_origin(tensors))
        if all(t.kind in (Kind.NUMBER, Kind.OTHER) for t in tensors):
            return NUMBER
        if _numpy_operands(tensors):
            return NUMPY_OWNED  # ``counts == k``: numpy compares elementwise, into a new array
        return UNKNOWN  # ``a == b`` of unknown values may well be a tensor
    if isinstance(expr, cst.BooleanOperation):
        return a.value(expr.left).join(a.value(expr.right))
    if isinstance(expr, (cst.NamedExpr,)):
        return a.value(expr.value)
    if isinstance(expr, (cst.Lambda, cst.GeneratorExp)):
        return OTHER
    return UNKNOWN


def _in_place(a: ModuleAnalysis, aug: cst.AugAssign) -> Value:
    """``x op= v``: a tensor or array ``x`` is changed in place, so the name still holds that
    object (its memory, device and freshness: a pinned buffer stays one); a number gives a new
    value, as ``x op v`` would. Where ``x`` may be either, the result is a tensor of unknown
    device and memory."""
    before = a.value(aug.target)
    if before.kind is Kind.BOTTOM:
        return BOTTOM
    if before.is_tensor or before.kind is Kind.NDARRAY:
        return replace(before, kind=Kind.TENSOR) if before.is_tensor else before
    if before.kind is Kind.OTHER and isinstance(aug.operator, cst.AddAssign) and isinstance(aug.value, (cst.List, cst.ListComp)):
        return before  # ``actions += [a]``: a list extended in place (decision-transformer's rollout)
    result = _arith(a, aug.target, aug.value)
    if result.is_tensor and before.kind is not Kind.NUMBER:
        return Value(Kind.TENSOR)  # ``x`` may have been a tensor changed in place
    return result


def _arith(a: ModuleAnalysis, *operands: cst.BaseExpression) -> Value:
    vals = [a.value(o) for o in operands]
    if any(v.kind is Kind.BOTTOM for v in vals):
        return BOTTOM  # inside a cycle: no information yet (``x = x * 0.9`` in a loop)
    if any(v.is_tensor for v in vals):
        return Value(Kind.TENSOR, tensor_device(vals), Memory.PAGEABLE, True, origin=tensor_origin(vals))
    if all(v.kind is Kind.NUMBER for v in vals):
        return NUMBER
    if _numpy_operands(vals):
        return NUMPY_OWNED  # a new array
    return UNKNOWN


# An array whose memory numpy allocated: never pinned (a view of a tensor's memory may be).
NUMPY_OWNED = Value(Kind.NDARRAY, memory=Memory.PAGEABLE)


def _numpy_call_value(a: ModuleAnalysis, name: str, call: cst.Call) -> Value:
    short = name[len("numpy.") :]
    if keyword(call, "out") is None and (
        short.startswith("random.") or short in NUMPY_ALLOCATING and not (short == "array" and keyword(call, "copy"))
    ):
        return NUMPY_OWNED
    args = positional(call)
    owned = a.value(args[0].value) if short in _ARRAY_OR_COPY and args else None
    if owned is not None and owned.kind is Kind.NDARRAY and owned.memory is Memory.PAGEABLE:
        return NUMPY_OWNED  # its argument's memory or new memory: numpy's either way (openpose's input)
    return Value(Kind.NDARRAY)


# numpy callables that give their argument itself where it already fits, else a new array (a
# scalar type called on an array, as Restormer's ``np.float32(np.array(...))``, converts it so)
_ARRAY_OR_COPY = frozenset({
    "asarray", "asanyarray", "ascontiguousarray", "asfortranarray",
    "float16", "float32", "float64", "int8", "int16", "int32", "int64", "uint8", "bool_",
})


def _numpy_operands(vals: list[Value]) -> bool:
    """An array among operands that are all arrays, numbers or known non-tensors: numpy's
    result. (An operand that may be a tensor makes it a tensor: ``Tensor.__array_priority__``
    hands ``array + tensor`` to the tensor.)"""
    return any(v.kind is Kind.NDARRAY for v in vals) and all(
        v.kind in (Kind.NDARRAY, Kind.NUMBER, Kind.OTHER) for v in vals
    )


def _name_value(a: ModuleAnalysis, name: cst.Name) -> Value:
    bindings = a.bindings(name)
    if not bindings:
        return UNKNOWN
    # Many uses share one set of bindings (every later use in straight-line code): join once.
    if in_main_block(a, name):  # what other files store to this module's names is not seen here
        held = a.solver.get("join-main", bindings, lambda n: _join_bindings(a, n, as_main=True), BOTTOM, UNKNOWN)
    else:
        held = a.solver.get("join", bindings, lambda n: _join_bindings(a, n), BOTTOM, UNKNOWN)
    if held.kind in (Kind.UNKNOWN, Kind.BATCH):
        narrowed = narrowed_kind(a, name)
        if narrowed is Kind.TENSOR:
            # ``if isinstance(x, torch.Tensor):`` around this use (a batch keeps where it lives)
            return replace(held, kind=Kind.TENSOR) if held.kind is Kind.BATCH else Value(Kind.TENSOR)
        if narrowed is Kind.NUMBER and held.kind is Kind.UNKNOWN:
            return NUMBER  # ``if isinstance(x, (int, float)):``
        if held.kind is Kind.UNKNOWN and a.assume_tensors and a.torch_code and backward_checked(a, name):
            # likely: ``iter_loss.backward()`` just ran (deeplab's ``iter_loss = 0``, then
            # ``iter_loss += criterion(...)``): a tensor, whose own ``backward`` that is
            return Value(Kind.TENSOR)
    return held


def _join_bindings(a: ModuleAnalysis, bindings: frozenset[BaseAssignment], *, as_main: bool = False) -> Value:
    """The join of what ``bindings`` hold; ``as_main``: for a use in an ``if __name__ ==
    "__main__":`` block, where stores of other files to this module's names do not reach."""
    if not all(isinstance(asg, Assignment) for asg in bindings):
        return UNKNOWN  # a builtin or import-star
    key = "binding-main" if as_main else "binding"
    return join_all(
        a.solver.get(key, asg, lambda n: _binding_value(a, n, as_main=as_main), BOTTOM, UNKNOWN)
        for asg in sorted(bindings, key=lambda asg: assignment_order(a, asg))
    )


def _binding_value(a: ModuleAnalysis, asg: Assignment, *, as_main: bool = False) -> Value:
    if isinstance(asg.scope, GlobalScope) and _global_set_elsewhere(a, asg, as_main=as_main):
        return UNKNOWN  # ``engine.DEVICE = "mps"`` in another file, or ``globals()[...] = ...``
    value = _assignment_value(a, asg)
    if value.kind is Kind.LOADER and value.fresh and loaders.reconfigured(a, asg):
        return replace(value, memory=Memory.UNKNOWN, fresh=False)
    if value.kind is Kind.TENSOR and _storage_replaced(a, asg):
        return Value(Kind.TENSOR)  # ``t.set_(buf)``, ``t.data = buf``: whatever memory it was given
    return value


def _storage_replaced(a: ModuleAnalysis, asg: Assignment) -> bool:
    """Does the module give the binding's name other memory in place: ``name.set_(...)``, or a
    store to ``name.data``? (By name, in any scope: a claim less, never one more.)"""
    return asg.name in a.solver.get("storage-swapped", a.module, lambda _: _storage_swapped(a), frozenset(), frozenset())


def _storage_swapped(a: ModuleAnalysis) -> frozenset[str]:
    code = a.code
    if ".set_(" not in code and ".data" not in code:
        return frozenset()  # most modules: no walk
    names: set[str] = set()
    for call in a.structure.of_type(cst.Call):
        func = call.func  # type: ignore[attr-defined]
        if isinstance(func, cst.Attribute) and func.attr.value == "set_" and isinstance(func.value, cst.Name):
            names.add(func.value.value)
    for target in a.structure.of_type(cst.AssignTarget):
        t = target.target  # type: ignore[attr-defined]
        if isinstance(t, cst.Attribute) and t.attr.value == "data" and isinstance(t.value, cst.Name):
            names.add(t.value.value)
    return frozenset(names)


def _global_set_elsewhere(a: ModuleAnalysis, asg: Assignment, *, as_main: bool = False) -> bool:
    """May a module-level name be rebound from outside the module's own statements: another
    project file storing ``module.name`` (a closed project's files say), or ``globals()``? A
    module bound by ``import m`` is taken to be rebound only by a store that names it: a
    ``setattr`` with a computed name (torchvision has many, on modules of a network) that
    swaps an imported module of another file is not a thing code does. Read from ``as_main``
    code (a ``__main__`` block), the module runs as ``__main__``: another file's ``import``
    of it makes a second module, so its stores are not to these names."""
    if a.calls_named("globals"):
        return True
    if as_main:
        return False
    members = a.project.members if a.project is not None and a.module_name is not None else None
    computed = not isinstance(asg.node, cst.Import)
    if members is None:
        return False
    # a ``setattr`` with a computed name reaches this module's names only from a file holding
    # the module: one that imports it (BigGAN's ``DEVICE = 'cuda'`` in a script no file imports,
    # while a layer file ``setattr(self.module, self.name, ...)``)
    return members.stored(asg.name, skip=a.module_name, computed=computed, computed_from=holders(a))




def _assignment_value(a: ModuleAnalysis, asg: Assignment) -> Value:
    node = asg.node
    if isinstance(node, cst.Param):
        return _param_value(a, node)
    if isinstance(node, (cst.Import, cst.ImportFrom)):
        return OTHER
    if isinstance(node, (cst.FunctionDef, cst.ClassDef)):
        return OTHER
    if not isinstance(node, cst.Name):
        return UNKNOWN
    # from the target name up to the binding construct, with its tuple positions
    path, parent = target_path(a, node)
    if isinstance(parent, cst.StarredElement):
        return UNKNOWN
    if isinstance(parent, cst.AssignTarget):
        assign = a.parent(parent)
        assert isinstance(assign, cst.Assign)
        return _destructure(a, assign.value, a.value(assign.value), path)
    if isinstance(parent, cst.AnnAssign) and parent.value is not None:
        annotated = annotation_value(a, parent.annotation)
        value = a.value(parent.value)
        return value if value.kind is not Kind.UNKNOWN else annotated
    if isinstance(parent, cst.AugAssign):
        return _in_place(a, parent)
    if isinstance(parent, (cst.For, cst.CompFor)):
        return _destructure(a, None, _element_of(a, parent.iter), path)
    if isinstance(parent, cst.AsName):
        return UNKNOWN
    if isinstance(parent, cst.NamedExpr):
        return a.value(parent.value)
    return UNKNOWN


def _numbers(a: ModuleAnalysis, expr: cst.BaseExpression) -> bool:
    """Is ``expr`` a Python number, or a display, comprehension or ``range`` of numbers only?"""
    if isinstance(expr, (cst.GeneratorExp, cst.ListComp, cst.SetComp)):
        return a.value(expr.elt).kind is Kind.NUMBER
    if isinstance(expr, (cst.List, cst.Tuple, cst.Set)):
        return all(
            not isinstance(el, cst.StarredElement) and a.value(el.value).kind is Kind.NUMBER
            for el in expr.elements
        )
    if isinstance(expr, cst.Call) and a.callee(expr) == "builtins.range":
        return True
    return a.value(expr).kind is Kind.NUMBER


def _destructure(a: ModuleAnalysis, expr: cst.BaseExpression | None, value: Value, path: list[int]) -> Value:
    for index in path:
        if expr is not None and isinstance(expr, (cst.Tuple, cst.List)):
            elements = expr.elements
            if index < len(elements) and not isinstance(elements[index], cst.StarredElement):
                expr = elements[index].value
                value = a.value(expr)
                continue
            return UNKNOWN
        if value.kind is Kind.BATCH or value.kind is Kind.TENSOR:
            expr = None  # a batch's items are batches; a tensor's rows are views
            continue
        if value.kind is Kind.TENSORS:
            expr, value = None, replace(value, kind=Kind.TENSOR)
            continue
        if value.kind is Kind.NDARRAY:  # rows or numpy scalars, in the array's memory
            expr, value = None, Value(Kind.NDARRAY, memory=value.memory)
            continue
        if isinstance(value, TupleValue):
            if index < len(value.items):
                expr, value = None, value.items[index]
                continue
        return UNKNOWN
    return value if not isinstance(value, TupleValue) else UNKNOWN


def _element_of(a: ModuleAnalysis, iterable: cst.BaseExpression) -> Value:
    """What iterating over ``iterable`` yields."""
    if isinstance(iterable, cst.IfExp):  # ``tqdm(loader) if verbose else loader``: either's
        one, other = _element_of(a, iterable.body), _element_of(a, iterable.orelse)
        if isinstance(one, TupleValue) and isinstance(other, TupleValue) and len(one.items) == len(other.items):
            return TupleValue(tuple(x.join(y) for x, y in zip(one.items, other.items, strict=True)))
        return UNKNOWN if isinstance(one, TupleValue) or isinstance(other, TupleValue) else one.join(other)
    v = a.value(iterable)
    if v.kind is Kind.LOADER:
        return replace(v, kind=Kind.BATCH)
    if v.kind is Kind.TENSOR or v.kind is Kind.BATCH:
        return v  # rows of a tensor; items of a batch (as in ``_destructure``)
    if v.kind is Kind.TENSORS:
        return replace(v, kind=Kind.TENSOR)
    if v.kind is Kind.NDARRAY:
        return Value(Kind.NDARRAY, memory=v.memory)  # rows or numpy scalars, never tensors
    if v.kind is Kind.MODULE and attributes.holds_module_sequence(a, iterable):
        return Value(Kind.MODULE)  # ``for block in self.h`` of an ``nn.ModuleList``: its layers
    if isinstance(iterable, cst.Name):
        # ``tbar = tqdm(val_loader); for x in tbar``: what the wrapped iterable yields
        values = a.reaching_values(iterable)
        wrapped = values[0] if values and len(values) == 1 else None
        if isinstance(wrapped, cst.Call) and a.callee(wrapped) in PASS_THROUGH_ITER and positional(wrapped):
            return _element_of(a, positional(wrapped)[0].value)
    if isinstance(iterable, (cst.Tuple, cst.List)) and iterable.elements:
        # ``for x in (ws, ds)``: each of the display's items in turn (a star's are unknown)
        if all(isinstance(el, cst.Element) for el in iterable.elements):
            return join_all([a.value(el.value) for el in iterable.elements])
        return UNKNOWN
    if isinstance(iterable, cst.Call):
        batch_view = _batch_dict_view(a, iterable)
        if batch_view is not None:
            return batch_view
        func = iterable.func
        if isinstance(func, cst.Attribute) and func.attr.value in ("items", "values") and not iterable.args:
            held = containers.held_by(a, func.value)  # ``for k, t in d.items()`` of placed tensors
            if held is not None:
                return TupleValue((UNKNOWN, held)) if func.attr.value == "items" else held
        name = a.callee(iterable)
        args = positional(iterable)
        if name == "builtins.enumerate" and args:
            return TupleValue((NUMBER, _element_of(a, args[0].value)))
        if name == "builtins.zip" and args:
            return TupleValue(tuple(_element_of(a, arg.value) for arg in args))
        if name in PASS_THROUGH_ITER and args:
            return _element_of(a, args[0].value)
        if name == "builtins.range":
            return NUMBER
    return UNKNOWN


def _param_value(a: ModuleAnalysis, param: cst.Param) -> Value:
    """What the call sites in this module pass (callgraph.py), else what the annotation promises."""
    declared = annotation_value(a, param.annotation) if param.annotation is not None else UNKNOWN
    passed = callgraph.param_value(a, param)
    if passed is None or passed.kind is Kind.UNKNOWN:
        if declared.kind is Kind.UNKNOWN and used_as_tensor(a, param):
            return Value(Kind.TENSOR)  # the likely view only
        return declared
    return passed


def _call_value(a: ModuleAnalysis, call: cst.Call) -> Value:
    func = call.func
    local = callgraph.call_value(a, call)  # a function of this module: what it returns
    if local is not None:
        return local
    names = a.qualnames(func)
    if isinstance(func, cst.Attribute) and through_call(func.value):
        names = frozenset()  # LibCST names ``nn.Linear(3, 3).to`` "torch.nn.Linear.to"
    name = next(iter(names)) if len(names) == 1 else None
    if isinstance(func, cst.Attribute) and not isinstance(func.value, cst.Name):
        # ``torch.nn.Linear(4, 1).cuda()`` is "torch.nn.Linear.cuda" by name: ask the receiver
        receiver = a.value(func.value)
        if receiver.is_tensor or receiver.kind is Kind.MODULE:
            name = None
    if name is not None:
        known = torch_call_value(a, name, call)
        if known is not None:
            return known
        if name in ("builtins.iter", "builtins.next"):
            stepped = _loader_step(a, name, call)
            if stepped is not None:
                return stepped
        if name.startswith("numpy."):
            return _numpy_call_value(a, name, call)
        library = next((v for p, v in HOST_LIBRARY_RESULTS.items() if name.startswith(p)), None)
        if library is not None:
            return library
        if name.startswith("builtins."):
            short = name[len("builtins.") :]
            if short in ("float", "int", "bool", "len"):
                return NUMBER
            if short in ("round", "abs", "sum", "min", "max"):
                # a number only of numbers: ``sum(l for l in losses.values())`` of tensors is one
                args = positional(call)
                return NUMBER if args and all(_numbers(a, arg.value) for arg in args) else UNKNOWN
            if short in ("str", "repr", "format", "list", "tuple", "dict", "set", "sorted", "print"):
                return OTHER
    if isinstance(func, cst.Name) and not names & {"builtins." + func.value}:
        made = legacy_cuda_value(a, call)  # PyTorch-GAN's ``Tensor(n, 1)``, ``Tensor = torch.cuda.FloatTensor``
        if made is not None:
            return made
    if is_module_class(a, func):
        return Value(Kind.MODULE)
    if isinstance(func, cst.Attribute):
        receiver = a.value(func.value)
        if receiver.kind is Kind.BOTTOM:
            return BOTTOM
        if receiver.kind is Kind.NDARRAY:  # numpy methods give arrays/numpy scalars, never tensors
            if func.attr.value in NDARRAY_COPYING_METHODS and keyword(call, "copy") is None:
                return NUMPY_OWNED
            return {"tolist": OTHER, "item": NUMBER}.get(func.attr.value, Value(Kind.NDARRAY))
        if receiver.kind is Kind.BATCH and func.attr.value in ("items", "values", "keys"):
            return OTHER  # a dict batch's views; iterating them is handled in _element_of
        if receiver.kind is Kind.LOADER and func.attr.value in ("next", "__next__") and not call.args:
            return replace(receiver, kind=Kind.BATCH)  # ``it.next()`` of ``iter(loader)``: next(it)
        if receiver.is_tensor:
            if a.assume_tensors and func.attr.value not in LIKELY_TENSOR_METHODS and used_as_module(a, func.value):
                # the likely view's tensor, of ``algorithm = make(args).cuda()``, is a model the
                # function also calls ``.train()`` on: its ``update()`` is no tensor method
                return UNKNOWN
            return _method_value(a, receiver, func.attr.value, call)
        if receiver.kind is Kind.MODULE:
            method = func.attr.value
            if method in ("to", "cuda", "cpu"):
                return replace(receiver, origin=_module_placement(a, method, call, receiver))
            if method in ("train", "eval", "half", "float", "double", "requires_grad_"):
                return receiver
            if method in ("parameters", "buffers") and receiver.origin is not None:
                return Value(Kind.OTHER, origin=receiver.origin)  # where its tensors are
            # ``self.transformer.ln_f(x)``: a module held by a module dict is called
            if method in ("forward", "__call__") or a.value(func).kind is Kind.MODULE:
                return _module_output(a, call)
            return UNKNOWN
        if _unknown_copied_to_host(a, receiver, call):
            # what has a ``.cpu()`` (a tensor, a packed sequence) is on the host after it: reading
            # it does not wait for the GPU (BackgroundMattingV2's ``(a.cpu() - b).max().item()``)
            return Value(Kind.TENSOR, Device.CPU, Memory.UNKNOWN, False, origin='"cpu"')
        if assumed_tensor(a, receiver, func.attr.value, LIKELY_TENSOR_METHODS) or _likely_gpu_copy(a, receiver, call):
            return _method_value(a, Value(Kind.TENSOR), func.attr.value, call)
        applied = _likely_function_apply(a, receiver, call)
        if applied is not None:
            return applied
    callee = a.value(func)
    if callee.kind is Kind.MODULE:
        return _module_output(a, call)
    if a.assume_tensors and a.torch_code and a.used_as_module(func):
        # likely: ``model(x)`` of a name the function also calls ``.train()`` on gives a model's
        # tensors, on a device its inputs do not tell (a wrapper may move them: DataParallel)
        return Value(Kind.TENSOR)
    return UNKNOWN


def _unknown_copied_to_host(a: ModuleAnalysis, receiver: Value, call: cst.Call) -> bool:
    """``x.cpu()`` of a value syncfix cannot name, not used as a module, whose result is bound or
    computed with (not read at once: ``x.cpu().item()`` is one host read of ``x``)."""
    func = call.func
    after = a.parent(call)
    return (
        receiver.kind is Kind.UNKNOWN
        and isinstance(func, cst.Attribute)
        and func.attr.value == "cpu"
        and not call.args
        and (not isinstance(after, cst.Attribute) or after.attr.value in _VIEWED_ON)
        and not a.used_as_module(func.value)
    )


# Methods that hand the host copy on as a tensor (``heatmaps[i].cpu().unsqueeze(0)`` passed to
# a helper); after any other (``v.cpu().mean().item()``) the chain is one read of ``v``'s values.
_VIEWED_ON = frozenset({"unsqueeze", "squeeze", "view", "reshape", "permute", "transpose", "contiguous", "clone"})


def _likely_gpu_copy(a: ModuleAnalysis, receiver: Value, call: cst.Call) -> bool:
    """In the likely view: ``x.to("cuda")``/``x.to(device)`` of an unknown that is not used
    as a module, to a device that is a GPU's (or the GPU when there is one): a tensor there,
    as ``x.cuda()`` is. (A ``.to`` to the CPU or of a dtype stays unknown: modules, batch
    objects and casts share the name.)"""
    func = call.func
    return (
        assumed_tensor(a, receiver, "to", {"to"})
        and isinstance(func, cst.Attribute)
        and func.attr.value == "to"
        and a.to_target(call) in (Device.CUDA, Device.CUDA_OR_CPU)
        and not a.used_as_module(func.value)
    )


def _likely_function_apply(a: ModuleAnalysis, receiver: Value, call: cst.Call) -> Value | None:
    """In the likely view: ``AllReduce.apply(loss)``, a class's ``apply`` of a tensor, is a
    ``torch.autograd.Function``'s: a tensor, on its first tensor argument's device (ijepa's,
    jepa's). A module's ``model.apply(init_fn)`` is called on an instance, not a class name."""
    func = call.func
    if not (
        a.assume_tensors
        and a.torch_code
        and receiver.kind in (Kind.UNKNOWN, Kind.OTHER)  # a class, imported or defined here
        and isinstance(func, cst.Attribute)
        and func.attr.value == "apply"
        and isinstance(func.value, cst.Name)
        and func.value.value[:1].isupper()
    ):
        return None
    tensors = [v for v in (a.value(arg.value) for arg in call.args if not arg.star) if v.is_tensor]
    if not tensors:
        return None
    return Value(Kind.TENSOR, tensors[0].device, Memory.UNKNOWN, True, origin=tensors[0].origin)


def _module_placement(a: ModuleAnalysis, method: str, call: cst.Call, module: Value) -> str | None:
    """The origin of a module's tensors after ``.to(...)``/``.cuda()``/``.cpu()``."""
    if method == "cpu":
        return '"cpu"'
    if method == "cuda":
        return '"cuda"' if not call.args else None
    dev = keyword(call, "device") or next(iter(positional(call)), None)
    if dev is None or a.is_cast_argument(dev.value):
        return module.origin if dev is not None and keyword(call, "device") is None and len(call.args) == 1 else None
    return origin_code(a, dev.value)


def _loader_step(a: ModuleAnalysis, name: str, call: cst.Call) -> Value | None:
    """``iter(loader)`` is one here; ``next(it)`` of it a batch (joined with its default)."""
    args = positional(call)
    if not args or any(arg.star for arg in call.args) or len(call.args) > (1 if name == "builtins.iter" else 2):
        return None
    source = a.value(args[0].value)
    if source.kind is Kind.BOTTOM:
        return BOTTOM
    if source.kind is not Kind.LOADER:
        return None
    if name == "builtins.iter":
        return source
    item = replace(source, kind=Kind.BATCH)
    return item.join(a.value(args[1].value)) if len(args) > 1 else item


def _module_output(a: ModuleAnalysis, call: cst.Call) -> Value:
    args = [a.value(arg.value) for arg in call.args if not arg.star]
    if any(v.kind is Kind.BOTTOM for v in args):
        return BOTTOM
    tensors = [v for v in args if v.is_tensor]
    device = tensor_device(tensors) if tensors else Device.UNKNOWN
    if device is Device.UNKNOWN and tensors and loss_reduction(a, call) is not None:
        device = _loss_device(a, call)
    # a layer's output is on its input's device (its weights must be there too)
    output = Value(Kind.TENSOR, device, Memory.UNKNOWN, False, origin=tensor_origin(tensors))
    declared = declared_forward(a, call.func)  # ``-> Tuple[Tensor, Tuple[int, int]]``
    if isinstance(declared, TupleValue):
        return TupleValue(tuple(output if v.is_tensor else v for v in declared.items))
    return output if declared is None else declared


def _loss_device(a: ModuleAnalysis, call: cst.Call) -> Device:
    """A loss module's result is on its inputs' device, which they share but for a 0-d CPU
    tensor: the device of an input of one dimension or more (LeeJunHyun's ``BCELoss()(SR_flat,
    GT_flat)`` of ``GT_flat = GT.view(GT.size(0), -1)``, ``GT`` placed on ``self.device``)."""
    placed = [
        v.device for arg in call.args
        if not arg.star and (v := a.value(arg.value)).is_tensor and v.device is not Device.UNKNOWN
        and at_least_one_dim(a, arg.value)
    ]
    device = placed[0] if placed else Device.UNKNOWN
    for d in placed[1:]:
        device = device.join(d)
    return device


def _method_value(a: ModuleAnalysis, receiver: Value, method: str, call: cst.Call) -> Value:
    if method == "type" and call.args:
        # ``t.type()`` is a string; ``t.type(torch.float32)`` a cast on the tensor's device (maybe
        # the tensor itself); ``t.type("torch.cuda.FloatTensor")`` may move it
        arg = call.args[0].value
        if is_dtype(a, arg) or isinstance(arg, cst.Name) and fact_of_name(a, arg, lambda e: is_dtype(a, e)):
            return replace(receiver, kind=Kind.TENSOR, dtype=None)
        if a.assume_tensors and a.is_cast_argument(arg):
            # likely: ``pe.type(dtype)`` of a parameter named so (vit-pytorch's sin-cos embedding)
            return replace(receiver, kind=Kind.TENSOR, dtype=None)
        return Value(Kind.TENSOR)
    if method in METHOD_NON_TENSOR:
        return METHOD_NON_TENSOR[method]
    if method in ("max", "min") and _along_a_dim(a, call):
        # ``values, indices = t.max(1)``: a (values, int64 indices) pair on the tensor's device
        memory = Memory.PAGEABLE if receiver.device is Device.CPU else Memory.UNKNOWN
        return TupleValue((
            Value(Kind.TENSOR, receiver.device, memory, True, origin=receiver.origin),
            Value(Kind.TENSOR, receiver.device, memory, True, "torch.int64", receiver.origin),
        ))
    if method == "cuda":
        origin = '"cuda"' if not call.args else None
        return Value(Kind.TENSOR, Device.CUDA, Memory.UNKNOWN, receiver.fresh, origin=origin)
    if method == "cpu":
        if receiver.device is Device.CPU:
            return replace(receiver, origin='"cpu"')
        return Value(Kind.TENSOR, Device.CPU, Memory.UNKNOWN, receiver.fresh, origin='"cpu"')
    if method == "pin_memory":
        return Value(Kind.TENSOR, Device.CPU, Memory.PINNED, True)
    if method == "to":
        target = a.to_target(call)
        if target is None:  # dtype only, or unknown
            # a cast keeps the device (the result may be the receiver itself), not the dtype
            return replace(receiver, kind=Kind.TENSOR, dtype=None) if _to_is_dtype_only(a, call) else Value(Kind.TENSOR)
        device = target
        dev = keyword(call, "device") or next(iter(positional(call)), None)
        return Value(
            Kind.TENSOR,
            device,
            receiver.memory if device is Device.CPU and receiver.device is Device.CPU else Memory.UNKNOWN,
            receiver.fresh,
            origin=origin_code(a, dev.value) if dev is not None else None,
        )
    if method.startswith("new_"):
        dev = keyword(call, "device")
        device = a.device_of(dev.value) if dev is not None else receiver.device
        origin = origin_code(a, dev.value) if dev is not None else receiver.origin
        return Value(Kind.TENSOR, device, Memory.PAGEABLE, True, origin=origin)
    if method in METHODS_TAKING_MEMORY and call.args:
        return Value(Kind.TENSOR)  # the memory (and device) it is given
    if method == "type_as" and len(call.args) == 1:
        # the other tensor's type, device type included (``torch.cuda.FloatTensor``): the
        # receiver itself only where both are provably on one kind of device
        other = a.value(call.args[0].value)
        if not (other.is_tensor and other.device is receiver.device and receiver.device is not Device.UNKNOWN):
            return Value(Kind.TENSOR, other.device if other.is_tensor else Device.UNKNOWN)
    if method in METHOD_MAYBE_SELF or is_inplace_method(method):
        return Value(Kind.TENSOR, receiver.device, receiver.memory, receiver.fresh, None, receiver.origin)
    memory = Memory.PAGEABLE if receiver.device is Device.CPU else Memory.UNKNOWN
    return Value(Kind.TENSOR, receiver.device, memory, True, origin=receiver.origin)


def _along_a_dim(a: ModuleAnalysis, call: cst.Call) -> bool:
    """``t.max(1)`` / ``t.min(dim=-1)``: a reduction along a dimension (not ``t.max(other)``)."""
    if keyword(call, "dim") is not None:
        return True
    args = positional(call)
    return bool(args) and literal_kind(args[0].value) == "int"


def _batch_dict_view(a: ModuleAnalysis, call: cst.Call) -> Value | None:
    """``batch.items()`` / ``batch.values()`` of a loader batch: iterating gives (key, batch) /
    batch. Before this, ``.items()`` of a batch was modelled as a fresh *pageable* tensor, which
    made a pinned or custom-collate batch look safe to copy non-blocking (bug fix)."""
    func = call.func
    if not isinstance(func, cst.Attribute) or func.attr.value not in ("items", "values"):
        return None
    receiver = a.value(func.value)
    if receiver.kind is not Kind.BATCH:
        return None
    return TupleValue((OTHER, receiver)) if func.attr.value == "items" else receiver


def _to_is_dtype_only(analysis: ModuleAnalysis, call: cst.Call) -> bool:
    args = positional(call)
    if keyword(call, "device") is not None:
        return False
    return bool(args) and analysis.is_cast_argument(args[0].value) or (not args and keyword(call, "dtype") is not None)
