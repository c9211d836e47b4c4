"""The shared analysis layer: what every rule asks about a module, answered once.

Rules never re-derive these facts; they ask a :class:`ModuleAnalysis`, built once per file by the
engine from LibCST metadata (scopes, qualified names, parents, positions).

**Names.** :meth:`ModuleAnalysis.qualnames` resolves import aliases (``from torch import cuda as
c``; ``c.synchronize`` is ``torch.cuda.synchronize``). A name bound by a try/except import
fallback has several candidates; :meth:`qualname` answers only when all candidates agree, so a
rule that needs a proof gets one, and :meth:`qualnames` gives every candidate for findings.

**Values.** :meth:`value` gives an abstract :class:`Value` for an expression: its kind (tensor,
device, module, data loader, batch from a loader, number, numpy array, unknown...), and for tensors
the device (``cuda``, ``cpu``, ``cuda|cpu`` or unknown), whether a CPU tensor is pageable or pinned,
and whether it is *fresh* (made by this code: it cannot be a buffer that other code refills).
Provenance flows through ``torch.*`` / ``F.*`` / ``torch.linalg.*`` calls, tensor methods, indexing,
arithmetic, ``.to(...)``/``.cuda()``/``.cpu()``/``.pin_memory()``, calls of ``nn.Module``
instances (``self.fc`` set in ``__init__`` included), parameters annotated ``torch.Tensor``, and
iteration over ``DataLoader`` objects (through ``enumerate``/``zip``/``tqdm``). numpy values and
Python numbers are *not* tensors. A name's value is the join over the bindings that can reach a
use: those textually before it in its scope, plus bindings later in an enclosing loop (loop-carried).
Devices come from the usual idioms: ``"cuda"``, ``"cuda:1"``, ``f"cuda:{rank}"``, ints,
``torch.device("cuda", i)``, and ``"cuda" if torch.cuda.is_available() else "cpu"`` (``cuda|cpu``).

**Loops.** :meth:`enclosing_loop`, :meth:`enclosing_function`, :meth:`statement_of` and
:meth:`block_of` locate a node; :meth:`is_hot` says whether code looks like a hot path (a loop body,
``forward``, a function calling ``backward()``/``step()``, or a configured name).

**Effects.** :meth:`effects` gives, per statement, the names it reads and writes, the names whose
tensors it mutates in place (``add_``/``copy_``/``fill_``..., indexed or attribute stores, ``+=``,
``out=``), whether it calls something that may mutate anything (``optimizer.step()``, unknown
calls), and the control-flow exits it contains (``break``/``continue``/``return``/``raise``/
``yield``).

**Dtypes, shapes, autograd, host reads** (for rules that must prove a rewrite exact).
:meth:`dtype_of` proves a tensor expression's dtype (factories, casts, predicates, dtype-keeping
ops, arithmetic that cannot promote; the default float is float32 unless the module changes it);
:meth:`shape_key` gives keys that prove two expressions have one shape (``"()"`` = 0-d, see
:meth:`is_zero_dim`); :meth:`is_grad_free` and :meth:`in_no_grad` prove autograd cannot matter;
:meth:`is_effect_free` says evaluating an expression changes nothing (no impure call, no in-place
op, no random draw); :meth:`host_read_syncs` lists the host reads of GPU values in an expression
and :meth:`flows_to_host` says whether a name is read on the host later; :meth:`reaching_values`
gives the right-hand sides a name may hold. Unknown always means "cannot prove".
"""

from __future__ import annotations

import enum
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from functools import cached_property

import libcst as cst
from libcst.metadata import (
    Assignment,
    MetadataWrapper,
    PositionProvider,
    Scope,
    ScopeProvider,
)

from .fixpoint import FactSolver
from .walk import Structure, memo, replaying, walk

# --------------------------------------------------------------------------------------------
# Abstract values


class Kind(enum.Enum):
    BOTTOM = "bottom"  # no binding seen yet (inside a cycle): the identity of join
    TENSOR = "tensor"
    DEVICE = "device"
    MODULE = "module"  # an nn.Module instance
    LOADER = "loader"  # a torch DataLoader
    BATCH = "batch"  # one item of a DataLoader (tensor, or container of tensors)
    NUMBER = "number"  # a Python bool/int/float
    NDARRAY = "ndarray"
    OTHER = "other"  # known not to be any of the above (str, list, dict, None...)
    UNKNOWN = "unknown"


class Device(enum.Enum):
    CUDA = "cuda"
    CPU = "cpu"
    CUDA_OR_CPU = "cuda|cpu"
    UNKNOWN = "unknown"

    def join(self, other: Device) -> Device:
        if self is other:
            return self
        if Device.UNKNOWN in (self, other):
            return Device.UNKNOWN
        return Device.CUDA_OR_CPU  # any mix of cuda, cpu and cuda|cpu


class Memory(enum.Enum):
    """For CPU tensors: where the bytes live."""

    PAGEABLE = "pageable"
    PINNED = "pinned"
    UNKNOWN = "unknown"

    def join(self, other: Memory) -> Memory:
        return self if self is other else Memory.UNKNOWN


@dataclass(frozen=True)
class Value:
    kind: Kind
    device: Device = Device.UNKNOWN
    memory: Memory = Memory.UNKNOWN
    fresh: bool = False  # made by this code, so no other code can refill it
    dtype: str | None = None  # e.g. "torch.float32" when known

    def join(self, other: Value) -> Value:
        if self.kind is Kind.BOTTOM:
            return other
        if other.kind is Kind.BOTTOM:
            return self
        kind = self.kind
        if self.kind is not other.kind:
            if {self.kind, other.kind} != {Kind.TENSOR, Kind.BATCH}:
                return UNKNOWN
            kind = Kind.BATCH  # a batch may be a tensor: the join of the two is a batch
        return Value(
            kind,
            self.device.join(other.device),
            self.memory.join(other.memory),
            self.fresh and other.fresh,
            self.dtype if self.dtype == other.dtype else None,
        )

    @property
    def is_tensor(self) -> bool:
        return self.kind is Kind.TENSOR or self.kind is Kind.BATCH

    @property
    def on_cuda(self) -> bool:
        return self.is_tensor and self.device is Device.CUDA


UNKNOWN = Value(Kind.UNKNOWN)
BOTTOM = Value(Kind.BOTTOM)
OTHER = Value(Kind.OTHER)
NUMBER = Value(Kind.NUMBER)


def join_all(values: Iterable[Value]) -> Value:
    result: Value | None = None
    for v in values:
        result = v if result is None else result.join(v)
    return result or UNKNOWN


# --------------------------------------------------------------------------------------------
# What torch functions return

# torch.* callables that do not return a tensor (or return something we do not model).
_TORCH_NON_TENSOR = {
    "is_tensor", "is_storage", "is_floating_point", "is_complex", "is_nonzero", "numel",
    "manual_seed", "seed", "initial_seed", "save", "load", "no_grad", "enable_grad",
    "inference_mode", "set_grad_enabled", "is_grad_enabled", "device", "dtype", "Size",
    "get_default_dtype", "set_default_dtype", "set_default_device", "set_default_tensor_type",
    "set_printoptions", "compile", "equal", "allclose", "typename", "use_deterministic_algorithms",
    "are_deterministic_algorithms_enabled", "set_num_threads", "get_num_threads", "set_float32_matmul_precision",
    "autocast", "Generator", "finfo", "iinfo", "promote_types", "result_type", "can_cast",
    "chunk", "split", "unbind", "tensor_split", "hsplit", "vsplit", "dsplit", "meshgrid",
    "broadcast_tensors", "sym_int", "sym_float", "get_device", "is_inference_mode_enabled",
}
# torch.* callables returning a view of (or possibly the same object as) their first argument.
TORCH_VIEWS = {
    "narrow", "select", "squeeze", "unsqueeze", "reshape", "flatten", "t", "transpose",
    "permute", "as_strided", "view_as_real", "view_as_complex", "movedim", "swapaxes",
    "diagonal", "detach", "expand_copy", "atleast_1d", "atleast_2d", "atleast_3d", "as_tensor",
    "from_numpy", "asarray", "real", "imag", "unflatten", "ravel", "squeeze_copy",
}
_TENSOR_NAMESPACES = (
    "torch.",
    "torch.nn.functional.",
    "torch.linalg.",
    "torch.fft.",
    "torch.special.",
)
_NON_TENSOR_NAMESPACES = (
    "torch.cuda.", "torch.backends.", "torch.distributed.", "torch.utils.", "torch.jit.",
    "torch.optim.", "torch.nn.init.", "torch.testing.", "torch.autograd.", "torch.amp.",
    "torch.profiler.", "torch.onnx.", "torch.compiler.", "torch.multiprocessing.", "torch.hub.",
    "torch.distributions.", "torch.mps.", "torch.xpu.", "torch.library.", "torch.fx.",
    "torch.nn.utils.", "torch.nn.parallel.", "torch.export.", "torch._dynamo.", "torch.random.",
)
_CREATION_DEVICE_ARG = "device"

# Tensor methods that return something other than a tensor.
_METHOD_NON_TENSOR = {
    "item": NUMBER, "tolist": OTHER, "numpy": Value(Kind.NDARRAY), "size": OTHER, "dim": NUMBER,
    "ndimension": NUMBER, "numel": NUMBER, "nelement": NUMBER, "element_size": NUMBER,
    "is_contiguous": NUMBER, "is_floating_point": NUMBER, "is_complex": NUMBER,
    "data_ptr": NUMBER, "stride": OTHER, "storage_offset": NUMBER, "get_device": NUMBER,
    "backward": OTHER, "register_hook": OTHER, "equal": NUMBER, "allclose": NUMBER,
    "is_pinned": NUMBER, "untyped_storage": OTHER, "storage": OTHER, "is_shared": NUMBER,
    "is_set_to": NUMBER, "__len__": NUMBER, "__bool__": NUMBER, "__float__": NUMBER,
    "__int__": NUMBER, "__index__": NUMBER, "type": UNKNOWN, "unbind": OTHER, "split": OTHER,
    "chunk": OTHER, "tensor_split": OTHER, "data_ptr_": NUMBER, "apply_": OTHER,
    "cpu_": OTHER, "record_stream": OTHER,
}
_TENSOR_ATTR_NON_TENSOR = {
    "shape", "dtype", "device", "requires_grad", "ndim", "is_cuda", "is_leaf", "layout",
    "is_sparse", "is_quantized", "is_meta", "names", "itemsize", "nbytes", "grad_fn",
}
_TENSOR_ATTR_TENSOR = {"T", "mT", "H", "mH", "data", "grad", "real", "imag"}
# Tensor methods whose result may be the receiver itself (so it keeps the receiver's memory).
_METHOD_MAYBE_SELF = {
    "float", "double", "half", "bfloat16", "int", "long", "short", "bool", "byte", "char",
    "type", "type_as", "contiguous", "detach", "to", "requires_grad_", "view", "view_as",
    "reshape", "reshape_as", "flatten", "squeeze", "unsqueeze", "transpose", "permute", "t",
    "expand", "expand_as", "narrow", "select", "unfold", "as_strided", "movedim", "swapaxes",
    "diagonal", "unflatten", "ravel", "real", "imag", "align_to", "refine_names", "rename",
    "coalesce", "share_memory_", "resolve_conj", "resolve_neg",
}
IN_PLACE_EXTRA = {"set_", "resize_", "resize_as_", "copy_", "zero_", "fill_", "share_memory_"}

_DATALOADER = {"torch.utils.data.DataLoader", "torch.utils.data.dataloader.DataLoader"}
_MODULE_BASES = {"torch.nn.Module", "torch.nn.modules.module.Module"}
_PASS_THROUGH_ITER = {"tqdm.tqdm", "tqdm.auto.tqdm", "tqdm.notebook.tqdm", "iter", "list", "tuple"}

STREAM_APIS = (
    "torch.cuda.Stream", "torch.cuda.stream", "torch.cuda.current_stream", "torch.cuda.set_stream",
    "torch.cuda.StreamContext", "torch.Stream", "torch.cuda.ExternalStream", "torch.cuda.graph",
    "torch.cuda.CUDAGraph", "torch.cuda.make_graphed_callables", "torch.cuda.default_stream",
)


_STREAM_METHODS = {"wait_stream", "record_stream", "wait_event"}
_STREAM_WORDS = {api.rsplit(".", 1)[-1] for api in STREAM_APIS} | _STREAM_METHODS


def is_inplace_method(name: str) -> bool:
    """``add_``, ``copy_``... (but not dunders like ``__init__``)."""
    return (name.endswith("_") and not name.endswith("__") and not name.startswith("_")) or (
        name in IN_PLACE_EXTRA
    )


# --------------------------------------------------------------------------------------------
# Effects of statements


@dataclass
class Effects:
    reads: set[str] = field(default_factory=set)
    writes: set[str] = field(default_factory=set)  # names (re)bound
    inplace: set[str] = field(default_factory=set)  # root names whose object is mutated
    may_mutate_anything: bool = False  # an unknown call, optimizer.step(), ...
    exits: set[str] = field(default_factory=set)  # break/continue/return/raise/yield/await
    calls: list[cst.Call] = field(default_factory=list)

    @property
    def has_control_flow(self) -> bool:
        return bool(self.exits)


def root_name(expr: cst.BaseExpression) -> str | None:
    """``x`` for ``x``, ``x[0]``, ``x.a.b``, ``x.view(-1)[1:]``; None when there is no name root."""
    while True:
        if isinstance(expr, cst.Name):
            return expr.value
        if isinstance(expr, cst.Subscript):
            expr = expr.value
        elif isinstance(expr, cst.Attribute):
            expr = expr.value
        elif isinstance(expr, cst.Call) and isinstance(expr.func, cst.Attribute):
            expr = expr.func.value
        else:
            return None


def dotted_name(expr: cst.BaseExpression) -> str | None:
    """``a.b.c`` for an Attribute chain of Names, else None."""
    parts: list[str] = []
    while isinstance(expr, cst.Attribute):
        parts.append(expr.attr.value)
        expr = expr.value
    if isinstance(expr, cst.Name):
        parts.append(expr.value)
        return ".".join(reversed(parts))
    return None


def keyword(call: cst.Call, name: str) -> cst.Arg | None:
    for arg in call.args:
        if arg.keyword is not None and arg.keyword.value == name:
            return arg
    return None


def positional(call: cst.Call) -> list[cst.Arg]:
    return [a for a in call.args if a.keyword is None and not a.star]


def _target_names(target: cst.BaseExpression) -> Iterator[cst.Name]:
    if isinstance(target, cst.Name):
        yield target
    elif isinstance(target, (cst.Tuple, cst.List)):
        for el in target.elements:
            yield from _target_names(el.value)
    elif isinstance(target, cst.StarredElement):
        yield from _target_names(target.value)


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
        self.fx.reads.add(node.value)

    # ``opt.step`` reads ``opt``, not a name ``step``; ``f(lr=x)`` reads ``x``, not ``lr``.
    def visit_Attribute(self, node: cst.Attribute) -> bool:
        walk(node.value, self)
        return False

    def visit_Arg(self, node: cst.Arg) -> bool:
        walk(node.value, self)
        return False

    def _store(self, target: cst.BaseExpression) -> None:
        for name in _target_names(target):
            self.fx.writes.add(name.value)
        if isinstance(target, (cst.Subscript, cst.Attribute)):
            root = root_name(target)
            if root:
                self.fx.inplace.add(root)
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
        root = root_name(node.target)
        if root:  # ``t += 1`` mutates a tensor in place
            self.fx.inplace.add(root)

    def visit_For(self, node: cst.For) -> None:
        self._store(node.target)

    def visit_WithItem(self, node: cst.WithItem) -> None:
        if node.asname is not None:
            self._store(node.asname.name)

    def visit_NamedExpr(self, node: cst.NamedExpr) -> None:
        self._store(node.target)

    def visit_Del(self, node: cst.Del) -> None:
        self._store(node.target)

    def visit_Import(self, node: cst.Import) -> None:
        for alias in node.names:
            name = alias.asname.name if alias.asname else alias.name
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
        func = node.func
        out = keyword(node, "out")
        if out is not None:
            root = root_name(out.value)
            if root:
                self.fx.inplace.add(root)
        if isinstance(func, cst.Attribute) and is_inplace_method(func.attr.value):
            root = root_name(func.value)
            if root:
                self.fx.inplace.add(root)
            return
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


# Builtins that neither mutate their arguments nor run user code worth worrying about.
PURE_BUILTINS = {
    "len", "range", "enumerate", "zip", "isinstance", "float", "int", "bool", "str", "abs",
    "min", "max", "sum", "round", "tuple", "list", "dict", "set", "sorted", "repr", "format",
    "getattr", "hasattr", "type", "id", "any", "all", "map", "filter", "reversed", "divmod",
    "pow", "hash", "iter", "next",
}
DEFAULT_HOT_FUNCTIONS = ("forward", "training_step", "validation_step", "train_step", "step")

# Facts the SFX1xx rules ask for (see the methods at the end of ModuleAnalysis).
_PY_NUMBER_BUILTINS = {"builtins.float": "float", "builtins.int": "int", "builtins.bool": "bool",
                       "builtins.len": "int"}
_INT_DTYPES = {"torch.int64", "torch.long", "torch.int32", "torch.int", "torch.int16",
               "torch.short", "torch.int8", "torch.uint8"}
# torch.* factories whose result is int64 when no dtype is given.
_INT64_FACTORIES = {"torch.randint", "torch.randperm", "torch.argsort", "torch.argmax",
                    "torch.argmin", "torch.nonzero", "torch.searchsorted", "torch.bucketize"}
# numpy callables that always build a new ndarray or numpy scalar (never return their argument's
# own type, as ``np.round(t)``/``np.reshape(t)`` do for a tensor).
_NUMPY_CONSTRUCTORS = {
    "array", "asarray", "ascontiguousarray", "arange", "zeros", "ones", "full", "empty",
    "linspace", "logspace", "eye", "identity", "frombuffer", "fromiter", "fromfile", "load",
    "loadtxt", "genfromtxt", "zeros_like", "ones_like", "full_like", "empty_like",
    "float16", "float32", "float64", "int8", "int16", "int32", "int64", "uint8", "uint16",
    "uint32", "uint64", "bool_", "complex64", "complex128", "double", "single", "longlong",
}
_CLOCKS = {"time.time", "time.perf_counter", "time.monotonic", "time.time_ns",
           "time.perf_counter_ns", "time.monotonic_ns", "time.process_time", "timeit.default_timer"}


# --------------------------------------------------------------------------------------------


class _ScalarFacts:
    """Scalar facts (SFX3xx/4xx), a mixin of :class:`ModuleAnalysis` (kept together as one unit)."""

    def host_read(self: ModuleAnalysis, call: cst.Call) -> HostRead | None:  # type: ignore[misc]
        """``call`` as a host read of a tensor's value (``t.item()``, ``t.tolist()``,
        ``float(t)``, ``int(t)``, ``bool(t)``), or None. The receiver is provably a tensor."""
        func = call.func
        if isinstance(func, cst.Attribute) and func.attr.value in READ_METHODS and not call.args:
            if self.is_tensor(func.value):
                return HostRead(call, func.value, func.attr.value)
            return None
        if not self.may_end_in(func, _READ_BUILTIN_NAMES):
            return None
        name = self.callee(call)
        if name in READ_BUILTINS and len(call.args) == 1:
            arg = call.args[0]
            if arg.keyword is None and not arg.star and self.is_tensor(arg.value):
                return HostRead(call, arg.value, name.rsplit(".", 1)[-1])
        return None

    def _direct_callee(self: ModuleAnalysis, call: cst.Call) -> str | None:  # type: ignore[misc]
        """:meth:`callee`, but None for a method of a call's result (``torch.ones(3).sum``)."""
        func = call.func
        if isinstance(func, cst.Attribute) and _through_call(func.value):
            return None
        return self.callee(call)

    def binding_values(self: ModuleAnalysis, name: cst.Name) -> list[cst.BaseExpression] | None:  # type: ignore[misc]
        """The right-hand sides of the bindings of ``name`` that can reach this use, or None
        when one of them is not a plain ``name = expr``.

        Flow-sensitive for straight-line code: the nearest preceding statement that binds the
        name in this block or an enclosing one (not crossing a loop that binds it) decides. Past
        the function's start, every binding in the name's scope counts (module-level names).
        """
        stmt = self.statement_of(name)
        for anc in self.ancestors(name):
            if anc is stmt:
                break
            if isinstance(anc, (cst.Lambda, cst.ListComp, cst.SetComp, cst.DictComp, cst.GeneratorExp)):
                if name.value in _stores(anc) or (
                    isinstance(anc, cst.Lambda) and name.value in {p.name.value for p in anc.params.params}
                ):
                    return None  # a comprehension or lambda variable
        cur: cst.CSTNode | None = stmt
        while cur is not None and not isinstance(cur, (cst.FunctionDef, cst.ClassDef, cst.Module)):
            found = self._block_of_binding(cur, name.value)
            if found is not None:
                return found or None
            parent = self.parent(cur)
            while parent is not None and not isinstance(
                parent, (cst.BaseCompoundStatement, cst.FunctionDef, cst.Module)
            ):
                parent = self.parent(parent)
            if isinstance(parent, (cst.For, cst.While)) and name.value in _stores(parent):
                return None  # a binding later in the loop may reach this use too
            if isinstance(parent, cst.If) and name.value in _stores(parent.test):
                return None  # a walrus in the condition
            if isinstance(parent, cst.With) and any(name.value in _stores(i) for i in parent.items):
                return None  # ``with ... as name``
            if (
                isinstance(parent, cst.BaseCompoundStatement)
                and not isinstance(parent, (cst.If, cst.With, cst.For, cst.While, cst.FunctionDef))
                and name.value in _stores(parent)
            ):
                return None  # try/except/finally, match: another branch may have bound it
            if isinstance(parent, cst.FunctionDef) and name.value in {
                p.name.value for p in (*parent.params.params, *parent.params.posonly_params, *parent.params.kwonly_params)
            }:
                return None  # a parameter
            cur = parent
        return self._scope_binding_values(name)

    def _block_of_binding(self: ModuleAnalysis, stmt: cst.CSTNode, name: str) -> list | None:  # type: ignore[misc]
        """Look back from ``stmt`` in its block: ``[expr]`` for a plain binding, ``[]`` for any
        other binding (unknown), None when no preceding statement of the block binds ``name``."""
        block = self.block_of(stmt)
        if block is None:
            return None
        body = list(block[1])
        index = next((i for i, s in enumerate(body) if s is stmt), None)
        if index is None:
            return None
        for prev in reversed(body[:index]):
            if name not in _stores(prev):
                continue
            if isinstance(prev, cst.SimpleStatementLine) and len(prev.body) == 1:
                small = prev.body[0]
                if (
                    isinstance(small, cst.Assign)
                    and len(small.targets) == 1
                    and isinstance(small.targets[0].target, cst.Name)
                ):
                    return [small.value]
                if isinstance(small, cst.Assign) and len(small.targets) == 1:
                    pair = _parallel_element(small.targets[0].target, small.value, name)
                    if pair is not None:
                        return [pair]
                if isinstance(small, cst.AnnAssign) and small.value is not None and isinstance(small.target, cst.Name):
                    return [small.value]
            return []
        return None

    def _scope_binding_values(self: ModuleAnalysis, name: cst.Name) -> list[cst.BaseExpression] | None:  # type: ignore[misc]
        scope = self.scope(name)
        if scope is None:
            return None
        try:
            assignments = list(scope[name.value])
        except Exception:
            return None
        if not assignments:
            return None
        out = []
        for asg in assignments:
            node = asg.node if isinstance(asg, Assignment) else None
            parent = self.parent(node) if isinstance(node, cst.Name) else None
            if isinstance(parent, cst.AssignTarget):
                assign = self.parent(parent)
                if isinstance(assign, cst.Assign) and len(assign.targets) == 1:
                    out.append(assign.value)
                    continue
            if isinstance(parent, cst.AnnAssign) and parent.value is not None:
                out.append(parent.value)
                continue
            return None
        return out

    def _fact_of_name(self, name: cst.Name, fact) -> object | None:
        """The fact shared by every binding of ``name`` (None when they differ or in a cycle)."""

        def compute(name: cst.Name) -> object | None:
            values = self.binding_values(name)
            if not values:
                return None
            facts = {fact(v) for v in values}
            return facts.pop() if len(facts) == 1 else None

        return self._solver.get(fact.__name__, name, compute, None, None)  # type: ignore[attr-defined]

    def dtype_kind(self: ModuleAnalysis, expr: cst.BaseExpression) -> str | None:  # type: ignore[misc]
        """``"float"``, ``"int"`` or ``"bool"``: the kind of a tensor's dtype, when provable.

        ``"float"`` means a real floating dtype no wider than float64 (float16, bfloat16,
        float32, float64), ``"int"`` a signed integer dtype or uint8; None when unknown.
        """
        if isinstance(expr, cst.Name):
            return self._fact_of_name(expr, self.dtype_kind)  # type: ignore[return-value]
        if isinstance(expr, cst.Comparison):
            return "bool" if self.is_tensor(expr) else None
        if isinstance(expr, cst.UnaryOperation) and isinstance(expr.operator, cst.Minus):
            kind = self.dtype_kind(expr.expression)
            return kind if kind in ("float", "int") else None
        if isinstance(expr, cst.BinaryOperation):
            return self._arith_kind(expr)
        if not isinstance(expr, cst.Call):
            return None
        name = self._direct_callee(expr)
        if name is not None and name.startswith("torch."):
            return self._torch_call_kind(name, expr)
        func = expr.func
        if not isinstance(func, cst.Attribute) or not self.is_tensor(func.value):
            return None
        method = func.attr.value
        if method in _CAST_KIND:
            return _CAST_KIND[method]
        if method in ("to", "type"):
            dtypes = [a.value for a in expr.args if self._is_dtype(a.value)]
            if dtypes:
                return self._dtype_name_kind(dtypes[0]) if len(dtypes) == 1 else None
            if keyword(expr, "dtype") is not None or any(self.is_tensor(a.value) for a in expr.args):
                return None  # a dtype we cannot name, or ``.to(other_tensor)``
            return self.dtype_kind(func.value) if method == "to" and expr.args else None
        if method in _FLOAT_KEEPING:
            return "float" if self.dtype_kind(func.value) == "float" else None
        if method in _FLOATING_RESULT:
            return "float" if self.dtype_kind(func.value) is not None else None
        return self._reduction_kind(method, func.value)

    def _dtype_name_kind(self: ModuleAnalysis, expr: cst.BaseExpression) -> str | None:  # type: ignore[misc]
        name = self.qualname(expr)
        return _DTYPE_KIND.get(name.rsplit(".", 1)[-1]) if name else None

    def _reduction_kind(self: ModuleAnalysis, method: str, receiver: cst.BaseExpression) -> str | None:  # type: ignore[misc]
        base = self.dtype_kind(receiver)
        if method in _KIND_KEEPING:
            return base
        if method in ("sum", "nansum", "cumsum"):
            return "float" if base == "float" else "int" if base in ("int", "bool") else None
        if method in ("mean", "nanmean", "std", "var"):
            return "float" if base == "float" else None  # integers raise; complex stays complex
        if method in ("argmax", "argmin", "count_nonzero"):
            return "int"
        if method in ("all", "any"):
            return "bool"
        if method == "norm":
            return "float" if base == "float" else None
        return None

    def _torch_call_kind(self: ModuleAnalysis, name: str, call: cst.Call) -> str | None:  # type: ignore[misc]
        short = name.rsplit(".", 1)[-1]
        dtype = keyword(call, "dtype")
        if dtype is not None:
            return self._dtype_name_kind(dtype.value)
        args = positional(call)
        if name in ("torch.tensor", "torch.full"):
            fill = args[-1].value if args else None
            lit = _py_literal_kind(fill) if fill is not None else None
            return {"pyint": "int", "pyfloat": "float", "pybool": "bool"}.get(lit or "")
        if name in ("torch.zeros", "torch.ones", "torch.rand", "torch.randn"):
            return "float"  # the default dtype is always a floating one
        if name.startswith("torch.nn.functional.") and short in _FLOAT_LOSSES:
            return "float"
        if name in _NORMS:
            return "float"
        if args and name.startswith("torch.") and short in _FULL_REDUCTIONS | {"nansum", "cumsum"}:
            return self._reduction_kind(short, args[0].value)
        return None

    def _arith_kind(self: ModuleAnalysis, expr: cst.BinaryOperation) -> str | None:  # type: ignore[misc]
        kinds = []
        for side in (expr.left, expr.right):
            lit = _py_literal_kind(side)
            if lit is not None:
                kinds.append(lit)
            elif self.is_tensor(side):
                kinds.append(self.dtype_kind(side))
            else:
                return None
        if None in kinds or not any(k in ("float", "int", "bool") for k in kinds):
            return None
        if isinstance(expr.operator, cst.Divide):
            return "float"
        if not isinstance(expr.operator, (cst.Add, cst.Subtract, cst.Multiply)):
            return None
        if "float" in kinds:
            return "float"
        if "bool" in kinds or "pybool" in kinds:
            return None  # bool arithmetic has its own rules (bool + bool is bool)
        return "float" if "pyfloat" in kinds else "int"

    def one_element_shape(self: ModuleAnalysis, expr: cst.BaseExpression) -> tuple[int, ...] | None:  # type: ignore[misc]
        """The shape of a tensor that provably holds exactly one element (``()``, ``(1,)``,
        ``(1, 1)``...), or None. 0-d: full reductions (``t.sum()``, ``t.mean()``,
        ``torch.sum(t)``), default- or sum-reduced losses, ``clip_grad_norm_``, ``torch.tensor(3.0)``."""
        if isinstance(expr, cst.Name):
            return self._fact_of_name(expr, self.one_element_shape)  # type: ignore[return-value]
        if isinstance(expr, (cst.BinaryOperation, cst.Comparison)):
            operands = (
                [expr.left, expr.right]
                if isinstance(expr, cst.BinaryOperation)
                else [expr.left, *(c.comparator for c in expr.comparisons)]
            )
            ndim = 0
            for o in operands:
                if _py_literal_kind(o) is not None:
                    continue
                if not self.is_tensor(o):
                    return None
                shape = self.one_element_shape(o)
                if shape is None:
                    return None
                ndim = max(ndim, len(shape))
            return (1,) * ndim  # one-element shapes broadcast to all-ones
        if isinstance(expr, cst.UnaryOperation) and isinstance(expr.operator, cst.Minus):
            return self.one_element_shape(expr.expression)
        if not isinstance(expr, cst.Call):
            return None
        name = self._direct_callee(expr)
        if name is not None and name.startswith("torch."):
            return self._torch_call_shape(name, expr)
        func = expr.func
        if not isinstance(func, cst.Attribute) or not self.is_tensor(func.value):
            return None
        method = func.attr.value
        if method in _FULL_REDUCTIONS:
            return () if _only_dtype_args(expr) else None
        if method in _SHAPE_KEEPING:
            return self.one_element_shape(func.value)
        base = self.one_element_shape(func.value)
        if base is None:
            return None
        if method in ("squeeze",) and not expr.args:
            return ()
        if method in ("flatten", "ravel") and not expr.args:
            return (1,)
        if method == "unsqueeze":
            dims = _int_args(expr)
            return (1, *base) if dims is not None and len(dims) == 1 and -len(base) - 1 <= dims[0] <= len(base) else None
        if method in ("reshape", "view"):
            dims = _int_args(expr)
            if dims is not None and all(d in (1, -1) for d in dims) and dims.count(-1) <= 1:
                return (1,) * len(dims)
        return None

    def _torch_call_shape(self: ModuleAnalysis, name: str, call: cst.Call) -> tuple[int, ...] | None:  # type: ignore[misc]
        short = name.rsplit(".", 1)[-1]
        args = positional(call)
        if name.startswith("torch.nn.functional.") and short in _SCALAR_LOSSES:
            reduction = keyword(call, "reduction")
            if reduction is None:
                return () if short != "kl_div" else None
            text = getattr(reduction.value, "evaluated_value", None)
            return () if text in ("mean", "sum") else None
        if name == "torch.nn.utils.clip_grad_norm_":
            return ()
        if name == "torch.linalg.vector_norm" and len(args) == 1 and keyword(call, "dim") is None:
            return ()
        if name in ("torch.full", "torch.zeros", "torch.ones", "torch.empty") and args:
            size = args[0].value
            if isinstance(size, cst.Tuple) and not size.elements:
                return ()
            return None
        if name == "torch.tensor" and len(args) == 1:
            value = args[0].value
            if _py_literal_kind(value) is not None:
                return ()
            if isinstance(value, cst.List) and len(value.elements) == 1 and _py_literal_kind(value.elements[0].value):
                return (1,)
            return None
        if short in _FULL_REDUCTIONS and len(args) == 1 and _only_dtype_args(call.with_changes(args=call.args[1:])):
            return ()
        return None

    def is_one_dim(self: ModuleAnalysis, expr: cst.BaseExpression) -> bool:  # type: ignore[misc]
        """Is ``expr`` provably a 1-D tensor (``x.flatten()``, ``x.view(-1)``, ``torch.arange(n)``,
        ``torch.randn(n)``, ``torch.tensor([...])`` of numbers)?"""
        if isinstance(expr, cst.Name):
            return self._fact_of_name(expr, self.is_one_dim) is True
        if not isinstance(expr, cst.Call) or not self.is_tensor(expr):
            return False
        name = self._direct_callee(expr)
        args = positional(expr)
        if name in ("torch.arange", "torch.linspace", "torch.randperm"):
            return True
        if name in ("torch.zeros", "torch.ones", "torch.randn", "torch.rand", "torch.empty"):
            return len(args) == 1 and not isinstance(args[0].value, (cst.Tuple, cst.List))
        if name == "torch.tensor" and len(args) == 1 and isinstance(args[0].value, cst.List):
            return all(_py_literal_kind(el.value) for el in args[0].value.elements)
        func = expr.func
        if isinstance(func, cst.Attribute) and self.is_tensor(func.value):
            method = func.attr.value
            if method in ("flatten", "ravel") and not expr.args:
                return True
            if method in ("view", "reshape"):
                return _int_args(expr) == [-1]
            if method in _SHAPE_KEEPING:
                return self.is_one_dim(func.value)
        return False

    def is_logging_call(self: ModuleAnalysis, call: cst.Call) -> bool:  # type: ignore[misc]
        """Does ``call`` write a log line or a metric (``print``, ``logging``/``logger.*``, tqdm
        ``set_postfix``/``write``, ``SummaryWriter.add_scalar(s)``, ``wandb.log``,
        ``accelerator.log``, ``mlflow.log_metric(s)``, Lightning's ``self.log``)?"""
        name = self._direct_callee(call)
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
        if attr in _LOG_LEVELS and "log" in last:
            return True
        if attr in ("add_scalar", "add_scalars") and ("writer" in last or last == "tb"):
            return True
        if attr in ("set_postfix", "set_postfix_str", "write", "set_description") and (
            "bar" in last or "tqdm" in last
        ):
            return True
        if attr == "log" and last in ("accelerator", "wandb", "run", "self"):
            return True
        return attr == "log_dict" and last == "self"

    def device_origin(self: ModuleAnalysis, expr: cst.BaseExpression) -> str | None:  # type: ignore[misc]
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
        if isinstance(expr, cst.Name):
            return self._fact_of_name(expr, self.device_origin)  # type: ignore[return-value]
        if isinstance(expr, cst.Subscript):
            return self.device_origin(expr.value)
        if isinstance(expr, (cst.BinaryOperation, cst.Comparison, cst.UnaryOperation)):
            operands: list[cst.BaseExpression]
            if isinstance(expr, cst.BinaryOperation):
                operands = [expr.left, expr.right]
            elif isinstance(expr, cst.Comparison):
                operands = [expr.left, *(c.comparator for c in expr.comparisons)]
            else:
                operands = [expr.expression]
            return self._one_origin(operands)
        if not isinstance(expr, cst.Call):
            return None
        func = expr.func
        name = self._direct_callee(expr)
        if name is not None and name.startswith("torch."):
            dev = keyword(expr, "device")
            if dev is not None:
                return self._device_code(dev.value)
            if name.startswith(_NON_TENSOR_NAMESPACES) and name != "torch.nn.utils.clip_grad_norm_":
                return None
            return self._one_origin([a.value for a in expr.args])
        # ``x.to(device)`` of an ``x`` that may be a tensor (a batch of unknown origin) places it;
        # if ``x`` is something else it is no tensor operand of what follows, so it decides nothing.
        receiver_kind = self.value(func.value).kind if isinstance(func, cst.Attribute) else None
        if receiver_kind in (Kind.TENSOR, Kind.BATCH, Kind.UNKNOWN) and isinstance(func, cst.Attribute) and (
            receiver_kind is not Kind.UNKNOWN or func.attr.value in ("to", "cuda")
        ):
            method = func.attr.value
            if method == "cuda":
                return '"cuda"' if not expr.args else None
            if method == "cpu":
                return '"cpu"'
            if method == "to":
                target = self.to_target(expr)
                if target is None:
                    return self.device_origin(func.value)
                dev = keyword(expr, "device") or next(iter(positional(expr)), None)
                return self._device_code(dev.value) if dev is not None else None
            return self.device_origin(func.value)
        if self.value(func).kind is Kind.MODULE:
            return self._one_origin([a.value for a in expr.args])
        return None

    def _one_origin(self: ModuleAnalysis, operands: Sequence[cst.BaseExpression]) -> str | None:  # type: ignore[misc]
        # Only tensors have an origin, so Python numbers among the operands drop out here.
        origins = {self.device_origin(o) for o in operands}
        origins.discard(None)
        return origins.pop() if len(origins) == 1 else None  # type: ignore[return-value]

    def _device_code(self: ModuleAnalysis, expr: cst.BaseExpression) -> str | None:  # type: ignore[misc]
        """A device expression as stable code: a string literal, or a name bound once."""
        if self.value(expr).kind is not Kind.DEVICE:
            return None
        if isinstance(expr, cst.SimpleString):
            return '"' + expr.evaluated_value + '"' if isinstance(expr.evaluated_value, str) else None
        if isinstance(expr, cst.Name) and self.bound_once(expr):
            return expr.value
        return None

    def bound_once(self: ModuleAnalysis, name: cst.Name) -> bool:  # type: ignore[misc]
        """Is ``name`` bound exactly once where it is used (so every use sees one value)?"""
        scope = self.scope(name)
        if scope is None:
            return False
        try:
            return len(scope[name.value]) == 1
        except Exception:
            return False

    def all_names(self: ModuleAnalysis) -> frozenset[str]:  # type: ignore[misc]
        """Every identifier in the module (to pick new names that clash with nothing)."""
        cached = self.__dict__.get("_all_names")
        if cached is not None:
            return cached
        found: set[str] = set()

        class V(cst.CSTVisitor):
            def visit_Name(self, node: cst.Name) -> None:
                found.add(node.value)

        self.walk(self.module, V())
        self.__dict__["_all_names"] = result = frozenset(found)
        return result

    def fresh_name(self: ModuleAnalysis, base: str, taken: set[str] | None = None) -> str:  # type: ignore[misc]
        """``base``, or ``base_2``, ``base_3``... whichever clashes with no name in the module."""
        taken = taken or set()
        candidate, n = base, 1
        while candidate in self.all_names() or candidate in taken:
            n += 1
            candidate = f"{base}_{n}"
        return candidate


class ModuleAnalysis(_ScalarFacts):
    """Answers for one parsed module. Built by the engine; rules receive it."""

    def __init__(
        self,
        wrapper: MetadataWrapper,
        *,
        hot_functions: Sequence[str] = DEFAULT_HOT_FUNCTIONS,
    ) -> None:
        self.wrapper = wrapper
        self.module = wrapper.module
        self.hot_functions = set(hot_functions)
        self._effects: dict[cst.CSTNode, Effects] = {}
        self._solver = FactSolver()
        self._loop_bindings: dict[tuple[Scope, str, cst.CSTNode], frozenset] = {}

    # ---- metadata -------------------------------------------------------------------------
    @cached_property
    def structure(self) -> Structure:
        return Structure(self.module)

    @cached_property
    def _parents(self):
        return self.structure.parent

    def walk(self, node: cst.CSTNode, visitor: cst.CSTVisitor) -> None:
        """``node.visit(visitor)`` for a read-only visitor, without rebuilding the tree."""
        self.structure.walk(node, visitor)

    @cached_property
    def _scopes(self):
        self.structure  # noqa: B018 (recorded first, so that the scope visitors replay it)
        with replaying():
            return self.wrapper.resolve(ScopeProvider)

    @cached_property
    def _qname_cache(self) -> dict[cst.CSTNode, frozenset[str]]:
        return {}

    @cached_property
    def positions(self):
        return self.wrapper.resolve(PositionProvider)

    def parent(self, node: cst.CSTNode) -> cst.CSTNode | None:
        return self._parents.get(node)

    def ancestors(self, node: cst.CSTNode) -> Iterator[cst.CSTNode]:
        p = self.parent(node)
        while p is not None:
            yield p
            p = self.parent(p)

    def scope(self, node: cst.CSTNode) -> Scope | None:
        return self._scopes.get(node)

    def qualnames(self, node: cst.CSTNode) -> frozenset[str]:
        """Every qualified name ``node`` may refer to (all candidates of an import fallback)."""
        if isinstance(node, cst.Attribute) and dotted_name(node) is None:
            return frozenset()  # LibCST names ``torch.randn(3).cuda`` "torch.randn.cuda": not a name
        cached = self._qname_cache.get(node)
        if cached is None:
            # Asked of the scope lazily, node by node: resolving LibCST's QualifiedNameProvider
            # for the whole module costs more than every other provider together.
            scope = self.scope(node)
            names = scope.get_qualified_names_for(node) if scope is not None else ()
            cached = self._qname_cache[node] = frozenset(q.name for q in names)
        return cached

    def qualname(self, node: cst.CSTNode) -> str | None:
        """The qualified name of ``node`` when every candidate agrees, else None."""
        names = self.qualnames(node)
        return next(iter(names)) if len(names) == 1 else None

    def callee(self, call: cst.Call) -> str | None:
        return self.qualname(call.func)

    def may_end_in(self, node: cst.CSTNode, last_parts: Iterable[str]) -> bool:
        """Could a qualified name of ``node`` end in one of ``last_parts``? A syntactic test that
        needs no scopes, so callers can skip resolving them for the many calls that cannot
        match. A qualified name keeps the expression's last part, except for a name an
        ``import ... as`` binds (``from torch import nonzero as nz``), which is always let pass."""
        if isinstance(node, cst.Attribute):
            return node.attr.value in last_parts
        if isinstance(node, cst.Name):
            return node.value in last_parts or node.value in self._import_aliases
        return True

    @cached_property
    def _import_aliases(self) -> frozenset[str]:
        out = set()
        for node in self.structure.descendants(self.module):
            if isinstance(node, cst.ImportAlias) and node.asname is not None:
                out.update(n.value for n in _target_names(node.asname.name))
        return frozenset(out)

    # ---- structure --------------------------------------------------------------------------
    def statement_of(self, node: cst.CSTNode) -> cst.BaseStatement | None:
        """The statement (simple line or compound) that directly contains ``node``."""
        cur: cst.CSTNode | None = node
        while cur is not None:
            if isinstance(cur, (cst.SimpleStatementLine, cst.BaseCompoundStatement)):
                return cur
            cur = self.parent(cur)
        return None

    def block_of(self, stmt: cst.CSTNode) -> tuple[cst.CSTNode, Sequence[cst.BaseStatement]] | None:
        """The block holding ``stmt`` and its statements (so a rule can look before/after)."""
        parent = self.parent(stmt)
        if isinstance(parent, (cst.IndentedBlock, cst.Module)):
            return parent, parent.body
        return None

    def enclosing_function(self, node: cst.CSTNode) -> cst.FunctionDef | None:
        for anc in self.ancestors(node):
            if isinstance(anc, cst.FunctionDef):
                return anc
            if isinstance(anc, cst.Lambda):
                return None
        return None

    def enclosing_loop(self, node: cst.CSTNode) -> cst.For | cst.While | None:
        """The innermost ``for``/``while`` whose *body* holds ``node`` (not crossing a def)."""
        child = node
        for anc in self.ancestors(node):
            if isinstance(anc, (cst.FunctionDef, cst.ClassDef, cst.Lambda)):
                return None
            if isinstance(anc, (cst.For, cst.While)) and child is anc.body:
                return anc
            child = anc
        return None

    def loops_around(self, node: cst.CSTNode) -> list[cst.For | cst.While]:
        loops = []
        cur: cst.CSTNode | None = node
        while cur is not None:
            loop = self.enclosing_loop(cur)
            if loop is None:
                break
            loops.append(loop)
            cur = loop
        return loops

    def is_hot(self, node: cst.CSTNode) -> bool:
        """In a loop body, or in a function that looks like a training/inference step."""
        if self.enclosing_loop(node) is not None:
            return True
        fn = self.enclosing_function(node)
        while fn is not None:
            if fn.name.value in self.hot_functions or self._calls_training_step(fn):
                return True
            fn = self.enclosing_function(fn)
        return False

    def _calls_training_step(self, fn: cst.FunctionDef) -> bool:
        found = False

        class V(cst.CSTVisitor):
            def visit_Call(self, node: cst.Call) -> None:
                nonlocal found
                if isinstance(node.func, cst.Attribute) and node.func.attr.value in (
                    "backward",
                    "step",
                ):
                    found = True

        self.walk(fn.body, V())
        return found

    @cached_property
    def uses_streams(self) -> bool:
        """Does the module touch CUDA streams or graphs (then copy ordering is not ours to prove)?"""
        for node in self._names_ending_in(_STREAM_WORDS):
            if isinstance(node, cst.Attribute) and node.attr.value in _STREAM_METHODS:
                return True
            names = self.qualnames(node)
            if any(n == api or n.startswith(api + ".") for n in names for api in STREAM_APIS):
                return True
        return False

    @cached_property
    def sets_default_device(self) -> bool:
        return any(
            self.qualnames(node) & {"torch.set_default_device", "torch.set_default_tensor_type"}
            for node in self._names_ending_in({"set_default_device", "set_default_tensor_type"})
        )

    def _names_ending_in(self, words: set[str]) -> list[cst.CSTNode]:
        """Names and attribute chains whose last part is one of ``words`` (a cheap pre-filter)."""
        found: list[cst.CSTNode] = []

        class V(cst.CSTVisitor):
            def visit_Attribute(self, node: cst.Attribute) -> None:
                if node.attr.value in words:
                    found.append(node)

            def visit_Name(self, node: cst.Name) -> None:
                if node.value in words:
                    found.append(node)

        self.walk(self.module, V())
        return found

    # ---- effects ----------------------------------------------------------------------------
    def effects(self, stmt: cst.CSTNode) -> Effects:
        fx = self._effects.get(stmt)
        if fx is None:
            v = _EffectsVisitor(self)
            self.walk(stmt, v)
            fx = self._effects[stmt] = v.fx
        return fx

    def is_pure_call(self, call: cst.Call) -> bool:
        """A call that mutates none of its arguments nor anything else we can see."""
        func = call.func
        inplace = keyword(call, "inplace")  # ``F.relu(x, inplace=True)``
        if inplace is not None and not (isinstance(inplace.value, cst.Name) and inplace.value.value == "False"):
            return False
        # A method of a tensor first: local names have qualified names too
        # (``f.<locals>.x.mean``), which say nothing about purity.
        if isinstance(func, cst.Attribute) and self.value(func.value).is_tensor:
            method = func.attr.value
            if is_inplace_method(method) or keyword(call, "out") is not None:
                return False
            # ``numpy()``/storages hand out the same memory to code we do not follow
            return method not in (
                "backward", "register_hook", "record_stream", "apply_", "numpy", "untyped_storage",
                "storage", "__array__", "__dlpack__",
            )
        name = self.callee(call)
        if name is not None:
            if name.startswith("builtins."):
                return name[len("builtins.") :] in PURE_BUILTINS
            if name.startswith(("torch.cuda.", "torch.distributed.")):
                return False
            if name.startswith(_TENSOR_NAMESPACES) and keyword(call, "out") is None:
                return not name.rsplit(".", 1)[-1].endswith("_")
            return False
        func = call.func
        if isinstance(func, cst.Attribute):
            receiver = self.value(func.value)
            method = func.attr.value
            if receiver.is_tensor and not is_inplace_method(method):
                return method not in ("backward", "register_hook", "record_stream", "apply_")
        return False

    # ---- values -----------------------------------------------------------------------------
    def value(self, expr: cst.CSTNode) -> Value:
        # A loop-carried binding (``x = x.cuda()`` in a loop) starts from nothing (bottom) and is
        # iterated to the least fixpoint of these monotone transfer functions (see fixpoint.py).
        return self._solver.get("value", expr, self._value, BOTTOM, UNKNOWN)

    def is_tensor(self, expr: cst.CSTNode) -> bool:
        return self.value(expr).is_tensor

    def is_cuda_tensor(self, expr: cst.CSTNode) -> bool:
        return self.value(expr).on_cuda

    def device_of(self, expr: cst.CSTNode) -> Device:
        """The device a device-like expression (string, int, ``torch.device``, name) denotes."""
        v = self.value(expr)
        return v.device if v.kind is Kind.DEVICE else Device.UNKNOWN

    def _value(self, expr: cst.CSTNode) -> Value:
        if isinstance(expr, (cst.SimpleString, cst.ConcatenatedString)):
            return self._string_device(expr)
        if isinstance(expr, cst.FormattedString):
            return self._fstring_device(expr)
        if isinstance(expr, cst.Integer):
            return Value(Kind.NUMBER, Device.CUDA)  # ``.to(0)`` means cuda:0
        if isinstance(expr, (cst.Float, cst.Imaginary)):
            return NUMBER
        if isinstance(expr, (cst.List, cst.Dict, cst.Set, cst.ListComp, cst.DictComp, cst.SetComp)):
            return OTHER
        if isinstance(expr, cst.Tuple):
            return OTHER
        if isinstance(expr, cst.IfExp):
            return self.value(expr.body).join(self.value(expr.orelse))
        if isinstance(expr, cst.Name):
            if expr.value in ("True", "False"):
                return NUMBER
            if expr.value == "None":
                return OTHER
            return self._name_value(expr)
        if isinstance(expr, cst.Attribute):
            return self._attribute_value(expr)
        if isinstance(expr, cst.Call):
            return self._call_value(expr)
        if isinstance(expr, cst.Subscript):
            base = self.value(expr.value)
            if base.kind is Kind.BOTTOM:
                return BOTTOM
            if base.kind is Kind.TENSOR:
                return replace(base, dtype=base.dtype)
            if base.kind is Kind.BATCH:
                return base
            return UNKNOWN
        if isinstance(expr, cst.BinaryOperation):
            return self._arith(expr.left, expr.right)
        if isinstance(expr, cst.UnaryOperation):
            if isinstance(expr.operator, cst.Not):
                return NUMBER
            inner = self.value(expr.expression)
            if inner.is_tensor:
                return Value(Kind.TENSOR, inner.device, Memory.PAGEABLE, True)
            return NUMBER if inner.kind is Kind.NUMBER else UNKNOWN
        if isinstance(expr, cst.Comparison):
            operands = [expr.left, *(c.comparator for c in expr.comparisons)]
            tensors = [self.value(o) for o in operands]
            if any(isinstance(c.operator, (cst.Is, cst.IsNot, cst.In, cst.NotIn)) for c in expr.comparisons):
                return NUMBER
            if any(t.is_tensor for t in tensors):
                device = _tensor_device(tensors)
                return Value(Kind.TENSOR, device, Memory.PAGEABLE, True, "torch.bool")
            if all(t.kind in (Kind.NUMBER, Kind.OTHER) for t in tensors):
                return NUMBER
            return UNKNOWN  # ``a == b`` of unknown values may well be a tensor
        if isinstance(expr, cst.BooleanOperation):
            return self.value(expr.left).join(self.value(expr.right))
        if isinstance(expr, (cst.NamedExpr,)):
            return self.value(expr.value)
        if isinstance(expr, (cst.Lambda, cst.GeneratorExp)):
            return OTHER
        return UNKNOWN

    def _arith(self, *operands: cst.BaseExpression) -> Value:
        vals = [self.value(o) for o in operands]
        if any(v.kind is Kind.BOTTOM for v in vals):
            return BOTTOM  # inside a cycle: no information yet (``x = x * 0.9`` in a loop)
        if any(v.is_tensor for v in vals):
            return Value(Kind.TENSOR, _tensor_device(vals), Memory.PAGEABLE, True)
        if all(v.kind is Kind.NUMBER for v in vals):
            return NUMBER
        if any(v.kind is Kind.NDARRAY for v in vals):
            return Value(Kind.NDARRAY)
        return UNKNOWN

    def _string_device(self, expr: cst.BaseExpression) -> Value:
        text = expr.evaluated_value if hasattr(expr, "evaluated_value") else None
        if isinstance(text, bytes):
            return OTHER
        if text == "cuda" or (isinstance(text, str) and text.startswith("cuda:") and text[5:].isdigit()):
            return Value(Kind.DEVICE, Device.CUDA)
        if text == "cpu":
            return Value(Kind.DEVICE, Device.CPU)
        return OTHER  # "mps", "meta", or any other string: not a device we can prove

    def _fstring_device(self, expr: cst.FormattedString) -> Value:
        parts = expr.parts
        if (
            parts
            and isinstance(parts[0], cst.FormattedStringText)
            and parts[0].value == "cuda:"
            and len(parts) == 2
            and isinstance(parts[1], cst.FormattedStringExpression)
            and parts[1].format_spec is None
            and parts[1].conversion is None
        ):
            return Value(Kind.DEVICE, Device.CUDA)
        return OTHER

    def _name_value(self, name: cst.Name) -> Value:
        bindings = self.bindings(name)
        if not bindings:
            return UNKNOWN
        # Many uses share one set of bindings (every later use in straight-line code): join once.
        return self._solver.get("join", bindings, self._join_bindings, BOTTOM, UNKNOWN)

    def _join_bindings(self, bindings: frozenset) -> Value:
        if not all(isinstance(asg, Assignment) for asg in bindings):
            return UNKNOWN  # a builtin or import-star
        return join_all(
            self._solver.get("binding", asg, self._assignment_value, BOTTOM, UNKNOWN)
            for asg in sorted(bindings, key=self._assignment_order)
        )

    @cached_property
    def _accesses_of(self) -> dict[cst.CSTNode, list]:
        """Each name node's scope accesses (LibCST answers per name string, not per node)."""
        out: dict[cst.CSTNode, list] = {}
        for scope in {s for s in self._scopes.values() if s is not None}:
            for acc in scope.accesses:
                out.setdefault(acc.node, []).append(acc)
        return out

    def bindings(self, name: cst.Name) -> frozenset:
        """The scope bindings (LibCST assignments) that may reach this use of ``name``: those
        before it in its scope, and loop-carried ones (later in a loop around the use)."""
        scope = self.scope(name)
        if scope is None:
            return frozenset()
        found: set = set()
        for acc in self._accesses_of.get(name, ()):
            found |= acc.referents
        loops = self.carrying_loops(name)
        if loops:
            found |= self._bindings_in_loop(scope, name.value, loops[-1])
        return frozenset(found)

    def _bindings_in_loop(self, scope: Scope, name: str, loop: cst.CSTNode) -> frozenset:
        key = (scope, name, loop)
        found = self._loop_bindings.get(key)
        if found is None:
            found = self._loop_bindings[key] = frozenset(
                asg
                for asg in scope.assignments[name]
                if isinstance(asg, Assignment)
                and isinstance(asg.node, cst.CSTNode)
                and any(anc is loop for anc in self.ancestors(asg.node))
            )
        return found

    def _assignment_order(self, asg) -> int:
        node = getattr(asg, "node", None)
        return self.structure.order.get(node, -1) if isinstance(node, cst.CSTNode) else -1

    def _assignment_value(self, asg: Assignment) -> Value:
        node = asg.node
        if isinstance(node, cst.Param):
            return self._param_value(node)
        if isinstance(node, (cst.Import, cst.ImportFrom)):
            return OTHER
        if isinstance(node, (cst.FunctionDef, cst.ClassDef)):
            return OTHER
        if not isinstance(node, cst.Name):
            return UNKNOWN
        # Walk up from the target name to the binding construct, tracking tuple positions.
        path: list[int] = []
        child: cst.CSTNode = node
        parent = self.parent(child)
        while isinstance(parent, (cst.Element, cst.Tuple, cst.List, cst.StarredElement)):
            if isinstance(parent, (cst.Tuple, cst.List)):
                path.append(
                    next(i for i, el in enumerate(parent.elements) if el is child)
                )
            elif isinstance(parent, cst.StarredElement):
                return UNKNOWN
            child, parent = parent, self.parent(parent)
        path.reverse()
        if isinstance(parent, cst.AssignTarget):
            assign = self.parent(parent)
            assert isinstance(assign, cst.Assign)
            return self._destructure(assign.value, self.value(assign.value), path)
        if isinstance(parent, cst.AnnAssign) and parent.value is not None:
            annotated = self._annotation_value(parent.annotation)
            value = self.value(parent.value)
            return value if value.kind is not Kind.UNKNOWN else annotated
        if isinstance(parent, cst.AugAssign):
            return self._arith(parent.target, parent.value)
        if isinstance(parent, (cst.For, cst.CompFor)):
            return self._destructure(None, self._element_of(parent.iter), path)
        if isinstance(parent, cst.AsName):
            return UNKNOWN
        if isinstance(parent, cst.NamedExpr):
            return self.value(parent.value)
        return UNKNOWN

    def _destructure(self, expr: cst.BaseExpression | None, value: Value, path: list[int]) -> Value:
        for index in path:
            if expr is not None and isinstance(expr, (cst.Tuple, cst.List)):
                elements = expr.elements
                if index < len(elements) and not isinstance(elements[index], cst.StarredElement):
                    expr = elements[index].value
                    value = self.value(expr)
                    continue
                return UNKNOWN
            if value.kind is Kind.BATCH or value.kind is Kind.TENSOR:
                expr = None  # a batch's items are batches; a tensor's rows are views
                continue
            if isinstance(value, _Tuple):
                if index < len(value.items):
                    expr, value = None, value.items[index]
                    continue
            return UNKNOWN
        return value if not isinstance(value, _Tuple) else UNKNOWN

    def _element_of(self, iterable: cst.BaseExpression) -> Value:
        """What iterating over ``iterable`` yields."""
        v = self.value(iterable)
        if v.kind is Kind.LOADER:
            return replace(v, kind=Kind.BATCH)
        if v.kind is Kind.TENSOR or v.kind is Kind.BATCH:
            return v  # rows of a tensor; items of a batch (as in ``_destructure``)
        if isinstance(iterable, cst.Call):
            batch_view = self._batch_dict_view(iterable)
            if batch_view is not None:
                return batch_view
            name = self.callee(iterable)
            args = positional(iterable)
            if name == "builtins.enumerate" and args:
                return _Tuple((NUMBER, self._element_of(args[0].value)))
            if name == "builtins.zip" and args:
                return _Tuple(tuple(self._element_of(a.value) for a in args))
            if name in _PASS_THROUGH_ITER and args:
                return self._element_of(args[0].value)
            if name == "builtins.range":
                return NUMBER
        return UNKNOWN

    def _param_value(self, param: cst.Param) -> Value:
        if param.annotation is not None:
            return self._annotation_value(param.annotation)
        return UNKNOWN

    def _annotation_value(self, ann: cst.Annotation) -> Value:
        return self._type_value(ann.annotation)

    def _type_value(self, expr: cst.BaseExpression) -> Value:
        """What an annotation promises: a tensor (device unknown, maybe pinned, not fresh) for
        ``torch.Tensor``; a fixed-length tuple's items for ``tuple[...]``/``Tuple[...]``."""
        if self.qualname(expr) in _TENSOR_TYPES:
            return Value(Kind.TENSOR)
        if isinstance(expr, cst.Subscript) and self.qualname(expr.value) in ("builtins.tuple", "typing.Tuple"):
            items = []
            for el in expr.slice:
                if not isinstance(el.slice, cst.Index) or getattr(el.slice, "star", None) is not None:
                    return UNKNOWN
                if isinstance(el.slice.value, cst.Ellipsis):
                    return UNKNOWN  # ``tuple[T, ...]``: any length
                items.append(self._type_value(el.slice.value))
            return _Tuple(tuple(items))
        return UNKNOWN

    def _attribute_value(self, expr: cst.Attribute) -> Value:
        names = self.qualnames(expr)
        if names and all(n.startswith("torch.") for n in names):
            if any(n in ("torch.float32", "torch.float", "torch.float64") for n in names):
                return OTHER
            return OTHER
        base = self.value(expr.value)
        attr = expr.attr.value
        if base.is_tensor:
            if attr in _TENSOR_ATTR_TENSOR:
                return Value(Kind.TENSOR, base.device, base.memory, base.fresh)
            if attr == "device":
                return Value(Kind.DEVICE, base.device)
            if attr in _TENSOR_ATTR_NON_TENSOR:
                return OTHER
            return UNKNOWN
        if isinstance(expr.value, cst.Name) and expr.value.value == "self":
            return self._self_attribute(expr)
        return UNKNOWN

    def _self_attribute(self, expr: cst.Attribute) -> Value:
        """``self.fc`` in a method: the join of every ``self.fc = ...`` in the class."""
        cls = next((a for a in self.ancestors(expr) if isinstance(a, cst.ClassDef)), None)
        if cls is None:
            return UNKNOWN
        attr = expr.attr.value
        values = [self.value(v) for v in self._self_assignments(cls).get(attr, [])]
        return join_all(values) if values else UNKNOWN

    def _self_assignments(self, cls: cst.ClassDef) -> dict[str, list[cst.BaseExpression]]:
        cache = self.__dict__.setdefault("_self_asg_cache", {})
        if cls in cache:
            return cache[cls]
        found: dict[str, list[cst.BaseExpression]] = {}

        class V(cst.CSTVisitor):
            def visit_Assign(self, node: cst.Assign) -> None:
                for t in node.targets:
                    tgt = t.target
                    if (
                        isinstance(tgt, cst.Attribute)
                        and isinstance(tgt.value, cst.Name)
                        and tgt.value.value == "self"
                    ):
                        found.setdefault(tgt.attr.value, []).append(node.value)
                    elif isinstance(tgt, (cst.Tuple, cst.List)):
                        found.setdefault("\0unknown", []).append(node.value)

            def visit_AugAssign(self, node: cst.AugAssign) -> None:
                tgt = node.target
                if isinstance(tgt, cst.Attribute):
                    found.setdefault(tgt.attr.value, []).append(node.value)

        self.walk(cls.body, V())
        cache[cls] = found
        return found

    def _is_module_class(self, node: cst.BaseExpression) -> bool:
        """Is ``node`` (a callee) an ``nn.Module`` subclass or a torch.nn layer class?"""
        names = self.qualnames(node)
        if names and all(
            n.startswith("torch.nn.") and n.rsplit(".", 1)[-1][:1].isupper()
            and not n.startswith(("torch.nn.utils.", "torch.nn.functional.", "torch.nn.init."))
            for n in names
        ):
            return True
        # A class defined in this module that subclasses nn.Module (directly or through another).
        if isinstance(node, cst.Name):
            cls = self._local_class(node.value)
            if cls is not None:
                return self._class_is_module(cls, set())
        return False

    @cached_property
    def _classes(self) -> dict[str, cst.ClassDef]:
        return {
            stmt.name.value: stmt for stmt in self.module.body if isinstance(stmt, cst.ClassDef)
        }

    def _local_class(self, name: str) -> cst.ClassDef | None:
        return self._classes.get(name)

    def _class_is_module(self, cls: cst.ClassDef, seen: set[str]) -> bool:
        if cls.name.value in seen:
            return False
        seen.add(cls.name.value)
        for base in cls.bases:
            if self.qualnames(base.value) & _MODULE_BASES:
                return True
            if isinstance(base.value, cst.Name):
                local = self._local_class(base.value.value)
                if local is not None and self._class_is_module(local, seen):
                    return True
        return False

    def _call_value(self, call: cst.Call) -> Value:
        func = call.func
        names = self.qualnames(func)
        if isinstance(func, cst.Attribute) and _through_call(func.value):
            names = frozenset()  # LibCST names ``nn.Linear(3, 3).to`` "torch.nn.Linear.to"
        name = next(iter(names)) if len(names) == 1 else None
        if isinstance(func, cst.Attribute) and not isinstance(func.value, cst.Name):
            # ``torch.nn.Linear(4, 1).cuda()`` is "torch.nn.Linear.cuda" by name: ask the receiver
            receiver = self.value(func.value)
            if receiver.is_tensor or receiver.kind is Kind.MODULE:
                name = None
        if name is not None:
            known = self._torch_call_value(name, call)
            if known is not None:
                return known
            if name.startswith("numpy."):
                return Value(Kind.NDARRAY)
            if name.startswith("builtins."):
                short = name[len("builtins.") :]
                if short in ("float", "int", "bool", "len", "round", "abs", "sum", "min", "max"):
                    args = positional(call)
                    if short in ("min", "max", "abs", "sum") and any(
                        self.value(a.value).is_tensor for a in args
                    ):
                        return UNKNOWN
                    return NUMBER
                if short in ("str", "repr", "format", "list", "tuple", "dict", "set", "sorted", "print"):
                    return OTHER
        if self._is_module_class(func):
            return Value(Kind.MODULE)
        if isinstance(func, cst.Attribute):
            receiver = self.value(func.value)
            if receiver.kind is Kind.BOTTOM:
                return BOTTOM
            if receiver.kind is Kind.NDARRAY:  # numpy methods give arrays/numpy scalars, never tensors
                return {"tolist": OTHER, "item": NUMBER}.get(func.attr.value, Value(Kind.NDARRAY))
            if receiver.kind is Kind.BATCH and func.attr.value in ("items", "values", "keys"):
                return OTHER  # a dict batch's views; iterating them is handled in _element_of
            if receiver.is_tensor:
                return self._method_value(receiver, func.attr.value, call)
            if receiver.kind is Kind.MODULE:
                if func.attr.value in ("to", "cuda", "cpu", "train", "eval", "half", "float", "double", "requires_grad_"):
                    return receiver
                if func.attr.value in ("forward", "__call__"):
                    return self._module_output(call)
                return UNKNOWN
        callee = self.value(func)
        if callee.kind is Kind.MODULE:
            return self._module_output(call)
        return UNKNOWN

    def _module_output(self, call: cst.Call) -> Value:
        args = [self.value(a.value) for a in call.args if not a.star]
        tensors = [a for a in args if a.is_tensor]
        device = _tensor_device(tensors) if tensors else Device.UNKNOWN
        return Value(Kind.TENSOR, device, Memory.UNKNOWN, False)

    def _torch_call_value(self, name: str, call: cst.Call) -> Value | None:
        if name in _DATALOADER:
            pin = keyword(call, "pin_memory")
            memory = Memory.PAGEABLE
            if pin is not None:
                memory = (
                    Memory.PINNED
                    if isinstance(pin.value, cst.Name) and pin.value.value == "True"
                    else Memory.PAGEABLE
                    if isinstance(pin.value, cst.Name) and pin.value.value == "False"
                    else Memory.UNKNOWN
                )
            custom = keyword(call, "collate_fn") is not None or keyword(call, "batch_size") is not None and _is_none(keyword(call, "batch_size"))
            if custom:
                return Value(Kind.LOADER, Device.CPU, Memory.UNKNOWN, False)
            return Value(Kind.LOADER, Device.CPU, memory, True)
        if name == "torch.device":
            args = positional(call)
            kw = keyword(call, "type")
            first = args[0].value if args else kw.value if kw else None
            if first is None:
                return Value(Kind.DEVICE)
            return Value(Kind.DEVICE, self.device_of(first))
        if name == "torch.cuda.is_available":
            return NUMBER
        if not name.startswith("torch."):
            return None
        if name.startswith(_NON_TENSOR_NAMESPACES):
            return UNKNOWN
        short = name.rsplit(".", 1)[-1]
        namespace = name[: -len(short)]
        if short in ("Parameter", "Buffer") and namespace in ("torch.nn.", "torch.nn.parameter."):
            # a tensor sharing its argument's storage (not a layer, though capitalised)
            args = positional(call)
            data = self.value(args[0].value) if args else UNKNOWN
            if data.is_tensor:
                return Value(Kind.TENSOR, data.device, data.memory, data.fresh, data.dtype)
            return Value(Kind.TENSOR)
        if short[:1].isupper():  # a class: nn layers are modules, anything else we do not model
            return Value(Kind.MODULE) if self._is_module_class(call.func) else UNKNOWN
        if namespace not in _TENSOR_NAMESPACES or short.startswith("_") or short in _TORCH_NON_TENSOR:
            return UNKNOWN
        dev_arg = keyword(call, _CREATION_DEVICE_ARG)
        pin_arg = keyword(call, "pin_memory")
        pinned = pin_arg is not None and not (
            isinstance(pin_arg.value, cst.Name) and pin_arg.value.value == "False"
        )
        memory = Memory.PINNED if pinned else Memory.PAGEABLE
        args = [self.value(a.value) for a in call.args if a.keyword is None and not a.star]
        for a in call.args:  # ``torch.stack([a, b])``, ``torch.cat((a, b))``: the items count
            if a.keyword is None and isinstance(a.value, (cst.List, cst.Tuple)):
                args += [self.value(el.value) for el in a.value.elements if isinstance(el, cst.Element)]
        tensor_args = [a for a in args if a.is_tensor]
        if dev_arg is not None:
            device = self.device_of(dev_arg.value)
        elif tensor_args:
            device = _tensor_device(tensor_args)
        elif any(a.kind is Kind.UNKNOWN for a in args):
            device = Device.UNKNOWN  # ``torch.isnan(unknown)`` may well be on the GPU
        elif self.sets_default_device:
            device = Device.UNKNOWN
        else:
            device = Device.CPU
        if short in TORCH_VIEWS:
            base = tensor_args[0] if tensor_args else UNKNOWN
            if short in ("as_tensor", "asarray", "from_numpy") and not tensor_args:
                # shares the caller's array memory: pageable, but not fresh
                return Value(Kind.TENSOR, device, Memory.PAGEABLE, False)
            return Value(Kind.TENSOR, device, base.memory, base.fresh)
        if device is not Device.CPU:
            memory = Memory.UNKNOWN if device is not Device.CUDA else Memory.UNKNOWN
        return Value(Kind.TENSOR, device, memory, True, _dtype_kw(self, call))

    def _method_value(self, receiver: Value, method: str, call: cst.Call) -> Value:
        if method in _METHOD_NON_TENSOR:
            return _METHOD_NON_TENSOR[method]
        if method == "cuda":
            return Value(Kind.TENSOR, Device.CUDA, Memory.UNKNOWN, receiver.fresh)
        if method == "cpu":
            if receiver.device is Device.CPU:
                return receiver
            return Value(Kind.TENSOR, Device.CPU, Memory.UNKNOWN, receiver.fresh)
        if method == "pin_memory":
            return Value(Kind.TENSOR, Device.CPU, Memory.PINNED, True)
        if method == "to":
            target = self.to_target(call)
            if target is None:  # dtype only, or unknown
                return replace(receiver, kind=Kind.TENSOR) if _to_is_dtype_only(self, call) else Value(Kind.TENSOR)
            device = target
            return Value(
                Kind.TENSOR,
                device,
                receiver.memory if device is Device.CPU and receiver.device is Device.CPU else Memory.UNKNOWN,
                receiver.fresh,
            )
        if method.startswith("new_"):
            dev = keyword(call, "device")
            device = self.device_of(dev.value) if dev is not None else receiver.device
            return Value(Kind.TENSOR, device, Memory.PAGEABLE, True)
        if method in _METHOD_MAYBE_SELF or is_inplace_method(method):
            return Value(Kind.TENSOR, receiver.device, receiver.memory, receiver.fresh, None)
        return Value(Kind.TENSOR, receiver.device, Memory.PAGEABLE if receiver.device is Device.CPU else Memory.UNKNOWN, True)

    def to_target(self, call: cst.Call) -> Device | None:
        """The device a ``.to(...)`` call moves to, or None when it names no device we know.

        ``Device.UNKNOWN`` means: it names a device, but which one is not provable.
        """
        dev = keyword(call, "device")
        if dev is not None:
            return self.device_of(dev.value)
        args = positional(call)
        if not args:
            return None
        first = args[0].value
        v = self.value(first)
        if v.kind is Kind.DEVICE:
            return v.device
        if v.kind is Kind.NUMBER and isinstance(first, cst.Integer):
            return Device.CUDA
        if v.is_tensor:
            return Device.UNKNOWN  # ``.to(other_tensor)``: device and dtype of another tensor
        if self._is_dtype(first):
            return None
        return Device.UNKNOWN

    def _is_dtype(self, expr: cst.BaseExpression) -> bool:
        name = self.qualname(expr)
        return bool(name and name.startswith("torch.") and name.rsplit(".", 1)[-1] in _DTYPES)

    # ---- additions for the SFX1xx rules -----------------------------------------------------

    def _batch_dict_view(self, call: cst.Call) -> Value | None:
        """``batch.items()`` / ``batch.values()`` of a loader batch: iterating gives (key, batch) /
        batch. Before this, ``.items()`` of a batch was modelled as a fresh *pageable* tensor, which
        made a pinned or custom-collate batch look safe to copy non-blocking (bug fix)."""
        func = call.func
        if not isinstance(func, cst.Attribute) or func.attr.value not in ("items", "values"):
            return None
        receiver = self.value(func.value)
        if receiver.kind is not Kind.BATCH:
            return None
        return _Tuple((OTHER, receiver)) if func.attr.value == "items" else receiver

    def reaching_values(self, name: cst.Name) -> list[cst.CSTNode] | None:
        """The expressions bound to ``name`` that can reach this use, in source order: the right
        side of ``n = expr`` / ``n: T = expr``, or the ``AugAssign`` node itself for ``n op= expr``
        (loop-carried bindings included). None when some binding is anything else (a parameter, a
        tuple target, ``for``, an import, a global...), so callers know they cannot prove anything."""
        bindings = self.bindings(name)
        if not bindings:
            return None
        out: list[cst.CSTNode] = []
        for asg in sorted(bindings, key=self._assignment_order):  # source order, not hash order
            if not isinstance(asg, Assignment) or not isinstance(asg.node, cst.Name):
                return None
            parent = self.parent(asg.node)
            if isinstance(parent, cst.AssignTarget):
                assign = self.parent(parent)
                assert isinstance(assign, cst.Assign)
                out.append(assign.value)
            elif isinstance(parent, cst.AugAssign):
                out.append(parent)
            elif isinstance(parent, cst.AnnAssign) and parent.value is not None:
                out.append(parent.value)
            else:
                return None
        return out

    def _is_range_counter(self, name: cst.Name) -> bool:
        """Is every binding reaching ``name`` the plain target of ``for name in range(...)``?"""
        bindings = self.bindings(name)
        for asg in bindings:
            node = getattr(asg, "node", None)
            parent = self.parent(node) if isinstance(node, cst.CSTNode) else None
            if not (
                isinstance(asg, Assignment)
                and isinstance(parent, (cst.For, cst.CompFor))
                and parent.target is node
                and isinstance(parent.iter, cst.Call)
                and self.callee(parent.iter) == "builtins.range"
            ):
                return False
        return bool(bindings)

    def carrying_loops(self, name: cst.Name) -> list[cst.For | cst.While]:
        """The loops around a use of ``name`` (inner first) through which a later binding can
        reach it: up to, not including, the innermost ``for`` whose target binds ``name`` (that
        binding is redone at the start of every iteration, so nothing carried past it reaches).
        Before this, ``for b in loader: b = {k: v.cuda() for k, v in b.items()}`` joined the
        rebinding into ``b.items()``'s receiver and lost that it is a batch (precision fix)."""
        loops = self.loops_around(name)
        for i, loop in enumerate(loops):
            if isinstance(loop, cst.For) and any(
                n.value == name.value for n in _target_names(loop.target)
            ):
                return loops[:i]
        return loops

    def python_number_type(self, expr: cst.BaseExpression) -> str | None:
        """``"bool"``, ``"int"`` or ``"float"`` when ``expr`` is *provably* a Python number of that
        exact built-in type (a literal, ``-3``, ``float(x)``/``int(x)``/``bool(x)``/``len(x)``,
        ``not x``, arithmetic and comparisons of such, a name whose every binding is one); else None.
        Unlike ``value(expr).kind is Kind.NUMBER`` this never answers for what may be a numpy scalar
        (``arr.sum()``, ``max(arr)``) or for a parameter annotated ``int`` (annotations are not
        enforced)."""
        if isinstance(expr, cst.Integer):
            return "int"
        if isinstance(expr, cst.Float):
            return "float"
        if isinstance(expr, cst.Name):
            if expr.value in ("True", "False"):
                return "bool"
            return self._solver.get("pynumber", expr, self._name_number_type, None, None)
        if isinstance(expr, cst.UnaryOperation):
            if isinstance(expr.operator, cst.Not):
                return "bool"
            inner = self.python_number_type(expr.expression)
            if isinstance(expr.operator, (cst.Minus, cst.Plus)) and inner in ("int", "float"):
                return inner
            return None
        if isinstance(expr, cst.Call) and not expr.args[1:] and all(not a.star for a in expr.args):
            return _PY_NUMBER_BUILTINS.get(self.callee(expr) or "")
        if isinstance(expr, cst.Comparison):
            operands = [expr.left, *(c.comparator for c in expr.comparisons)]
            if all(self.python_number_type(o) for o in operands):
                return "bool"
            return None
        if isinstance(expr, cst.BinaryOperation):
            left = self.python_number_type(expr.left)
            right = self.python_number_type(expr.right)
            if not left or not right or isinstance(expr.operator, (cst.MatrixMultiply, cst.Power)):
                return None  # int ** -1 is a float, (-8.0) ** 0.5 a complex
            if isinstance(expr.operator, cst.Divide) or "float" in (left, right):
                return "float"
            if isinstance(expr.operator, (cst.BitAnd, cst.BitOr, cst.BitXor)) and left == right == "bool":
                return "bool"
            return "int"
        return None

    def _name_number_type(self, name: cst.Name) -> str | None:
        values = self.reaching_values(name)
        if not values:
            return "int" if self._is_range_counter(name) else None  # range() yields ints
        types = {self.python_number_type(v) for v in values}
        return types.pop() if len(types) == 1 else None

    def literal_number(self, expr: cst.BaseExpression) -> bool | int | float | None:
        """The value of a number literal (``3``, ``-2.5``, ``True``), else None."""
        if isinstance(expr, cst.Name) and expr.value in ("True", "False"):
            return expr.value == "True"
        if isinstance(expr, (cst.Integer, cst.Float)):
            return expr.evaluated_value
        if isinstance(expr, cst.UnaryOperation) and isinstance(expr.operator, (cst.Minus, cst.Plus)):
            inner = self.literal_number(expr.expression)
            if isinstance(inner, (int, float)) and not isinstance(inner, bool):
                return -inner if isinstance(expr.operator, cst.Minus) else inner
        return None

    def is_integer_tensor(self, expr: cst.BaseExpression) -> bool:
        """Is ``expr`` provably a tensor of an integer dtype (not bool)? From a ``dtype=`` keyword,
        ``.long()``/``.int()``, ``torch.arange`` of int literals, int64 factories (``randint``,
        ``argsort``...), ``torch.tensor`` of a list of int literals, or a name bound only to these."""
        if not self.is_tensor(expr):
            return False
        dtype = self.value(expr).dtype
        if dtype is not None:
            return dtype in _INT_DTYPES
        if isinstance(expr, cst.Name):
            return self._solver.get("int-tensor", expr, self._name_is_integer_tensor, False, False)
        if not isinstance(expr, cst.Call):
            return False
        if keyword(expr, "dtype") is not None:
            return False  # a dtype we could not name
        func = expr.func
        if isinstance(func, cst.Attribute) and self.is_tensor(func.value):
            return func.attr.value in ("long", "int", "short") and not expr.args
        name = self.callee(expr)
        args = positional(expr)
        if name in _INT64_FACTORIES:
            return True
        if name == "torch.arange":
            return bool(args) and all(self.python_number_type(a.value) == "int" for a in args)
        if name in ("torch.tensor", "torch.as_tensor") and args:
            data = args[0].value
            return (
                isinstance(data, (cst.List, cst.Tuple))
                and bool(data.elements)
                and all(isinstance(self.literal_number(e.value), int)
                        and not isinstance(self.literal_number(e.value), bool) for e in data.elements)
            )
        return False

    def _name_is_integer_tensor(self, name: cst.Name) -> bool:
        values = self.reaching_values(name)
        return bool(values) and all(self.is_integer_tensor(v) for v in values)

    def is_host_data(self, expr: cst.BaseExpression) -> bool:
        """Is ``expr`` provably host data and never a tensor: a provable Python number, a
        list/tuple of such (nested), an array or numpy scalar from a numpy constructor
        (``np.array``, ``np.arange``, ``np.float32(...)``, ``np.random.*``...), a method result,
        element or arithmetic of such, or a name bound only to these? Stricter than
        ``value(expr).kind is Kind.NDARRAY``: numpy functions such as ``np.round(t)`` call the
        tensor's own method and return a tensor."""
        if self.python_number_type(expr) is not None or self.literal_number(expr) is not None:
            return True
        if isinstance(expr, (cst.List, cst.Tuple)):
            return all(
                not isinstance(el, cst.StarredElement) and self.is_host_data(el.value)
                for el in expr.elements
            )
        if isinstance(expr, cst.Name):
            return self._solver.get("host-data", expr, self._name_is_host_data, False, False)
        if isinstance(expr, cst.Subscript):
            return self.is_host_data(expr.value)
        if isinstance(expr, cst.BinaryOperation):
            return self.is_host_data(expr.left) and self.is_host_data(expr.right)
        if isinstance(expr, cst.Call):
            name = self.callee(expr) if dotted_name(expr.func) is not None else None
            if name is not None and name.startswith("numpy."):
                short = name[len("numpy.") :]
                return short in _NUMPY_CONSTRUCTORS or short.startswith("random.")
            func = expr.func
            if isinstance(func, cst.Attribute) and not isinstance(func.value, (cst.List, cst.Tuple)):
                # a method of an ndarray gives arrays, numpy scalars or Python objects
                return self._is_ndarray_source(func.value)
        return False

    def _name_is_host_data(self, name: cst.Name) -> bool:
        values = self.reaching_values(name)
        return bool(values) and all(self.is_host_data(v) for v in values)

    def _is_ndarray_source(self, expr: cst.BaseExpression) -> bool:
        """Host data that is an ndarray (not a Python number or list, whose methods differ)."""
        return (
            self.python_number_type(expr) is None
            and not isinstance(expr, (cst.List, cst.Tuple))
            and self.is_host_data(expr)
        )

    def is_clock_read(self, node: cst.CSTNode) -> bool:
        """Does ``node`` (a statement or expression) read a wall clock (``time.perf_counter()``...)?"""
        found = False
        analysis = self

        class V(cst.CSTVisitor):
            def visit_Call(self, call: cst.Call) -> None:
                nonlocal found
                if analysis.qualnames(call.func) & _CLOCKS:
                    found = True

        walk(node, V())
        return found


    # ---- dtypes, shapes, autograd, host reads (added for the SFX2xx rules) -------------------
    # Each answer is a proof or None/False: callers treat "unknown" as "cannot prove".

    def _fixpoint(self, key: str, node: cst.CSTNode, compute, cycle):
        """Memoised recursive facts with a value for cycles (loop-carried bindings)."""
        result = self._solver.get(key, node, compute, cycle, None)
        if result is _CYCLE and not self._solver.active:
            return None  # only cyclic bindings (``x = x * 2`` and nothing else): unknown
        return result

    @cached_property
    def default_float(self) -> str | None:
        """``torch.float32`` unless the module changes the default dtype (then unknown)."""
        code = self.module.code
        if "set_default_dtype" in code or "set_default_tensor_type" in code:
            return None
        return "torch.float32"

    def dtype_of(self, expr: cst.CSTNode) -> str | None:
        """The dtype of a tensor expression (``"torch.float32"``...) when provable, else None.

        Covers factories (``dtype=`` or the default float), casts (``.float()``, ``.to(dtype)``),
        comparisons and predicates (bool), dtype-preserving element-wise ops and reductions,
        arithmetic between tensors of one dtype or with Python numbers that cannot promote, and
        names whose every reaching binding agrees. Mixed dtypes are never guessed.
        """
        return self._fixpoint("dtype", expr, self._dtype_of, _CYCLE)  # type: ignore[return-value]

    def _dtype_of(self, e: cst.CSTNode) -> str | None | object:
        if isinstance(e, cst.Name):
            values = self.reaching_values(e)
            if values is None:
                return None
            return _agree(self.dtype_of(v) for v in values)
        if isinstance(e, cst.AugAssign):
            return self._binop_dtype(e.target, e.operator, e.value)
        if isinstance(e, cst.Subscript):
            return self.dtype_of(e.value) if self.is_tensor(e.value) else None
        if isinstance(e, cst.Attribute):
            if e.attr.value in ("T", "mT", "data") and self.is_tensor(e.value):
                return self.dtype_of(e.value)
            return None
        if isinstance(e, cst.Comparison):
            return "torch.bool" if self.value(e).is_tensor else None
        if isinstance(e, cst.IfExp):
            return _agree([self.dtype_of(e.body), self.dtype_of(e.orelse)])
        if isinstance(e, cst.UnaryOperation):
            inner = self.dtype_of(e.expression)
            if isinstance(e.operator, cst.Minus) and inner not in (None, "torch.bool"):
                return inner
            if isinstance(e.operator, cst.BitInvert) and inner in _BOOL_INT:
                return inner
            return None
        if isinstance(e, cst.BinaryOperation):
            return self._binop_dtype(e.left, e.operator, e.right)
        if isinstance(e, cst.Call):
            return self._call_dtype(e)
        return None

    def _binop_dtype(self, left, op, right) -> str | None:
        lt, rt = self.value(left).is_tensor, self.value(right).is_tensor
        if not (lt or rt):
            return None
        bitwise = isinstance(op, (cst.BitAnd, cst.BitOr, cst.BitXor))
        arith = isinstance(op, (cst.Add, cst.Subtract, cst.Multiply))
        div = isinstance(op, cst.Divide) or isinstance(op, cst.MatrixMultiply)
        if lt and rt:
            a, b = self.dtype_of(left), self.dtype_of(right)
            if a is _CYCLE or b is _CYCLE:
                return _agree([a, b])  # type: ignore[return-value]
            if a is None or a != b:
                return None
            if bitwise:
                return a if a in _BOOL_INT else None
            if arith and a != "torch.bool" or div and a in _FLOATS:
                return a
            return None
        t, other = (left, right) if lt else (right, left)
        d = self.dtype_of(t)
        if d is _CYCLE:
            return d  # type: ignore[return-value]
        kind = _number_kind(other, self)
        if d is None or kind is None:
            return None
        if bitwise:
            return d if d in _BOOL_INT and kind in ("bool", "int") and (d != "torch.bool" or kind == "bool") else None
        if d == "torch.bool":
            return None
        if arith or div:
            if d in _FLOATS:
                return d  # a Python bool/int/float never promotes a floating tensor
            if arith and kind in ("int", "bool"):
                return d
        return None

    def _call_dtype(self, call: cst.Call) -> str | None:
        name = self.callee(call)
        func = call.func
        args = positional(call)
        explicit = _dtype_kw(self, call)
        if explicit is not None:
            return _canon_dtype(explicit)
        if name is not None and name.startswith(_TENSOR_NAMESPACES):
            short = name.rsplit(".", 1)[-1]
            if short in _BOOL_FNS:
                return "torch.bool"
            if short in _FLOAT_FACTORIES:
                return self.default_float
            if short.endswith("_like") and args:
                return self.dtype_of(args[0].value)
            if short in ("tensor", "full", "scalar_tensor") and args:
                lit = args[-1].value if short == "full" else args[0].value
                kind = _number_kind(lit, self)
                return {"bool": "torch.bool", "int": "torch.int64", "float": self.default_float}.get(kind or "")
            if short == "where" and len(args) == 3:
                return _agree([self.dtype_of(args[1].value), self.dtype_of(args[2].value)])
            if short in _PROMOTING_FNS and args:
                return self._promoting_dtype(args[0].value, [a.value for a in call.args[1:]])
            if short in _SAME_DTYPE_FNS and args:
                return self.dtype_of(args[0].value)
            if short in _FLOAT_ONLY_FNS and args:
                d = self.dtype_of(args[0].value)
                return d if d in _FLOATS else None
            return None
        if isinstance(func, cst.Attribute) and self.is_tensor(func.value):
            method = func.attr.value
            if method in _CAST_METHODS:
                return _CAST_METHODS[method]
            if method == "to":
                if args and self._is_dtype(args[0].value):
                    return _canon_dtype(self.qualname(args[0].value))
                if len(args) >= 2 and self._is_dtype(args[1].value):
                    return _canon_dtype(self.qualname(args[1].value))
                if args and self.value(args[0].value).is_tensor:
                    return None  # ``.to(other)`` takes other's dtype
                return self.dtype_of(func.value)
            if method in _BOOL_FNS:
                return "torch.bool"
            base = self.dtype_of(func.value)
            if method == "view" and args and self._is_dtype(args[0].value):
                return _canon_dtype(self.qualname(args[0].value))  # a reinterpreting view
            if method in ("max", "min") and call.args:
                return None  # ``x.max(dim)`` is a (values, indices) tuple
            if method in _PROMOTING_FNS:
                return self._promoting_dtype(func.value, [a.value for a in call.args])
            if method in _SAME_DTYPE_METHODS:
                return base
            if method in _FLOAT_ONLY_FNS:
                return base if base in _FLOATS else None
            if method in ("sum", "cumsum", "prod") and keyword(call, "dtype") is None:
                return base if base in _FLOATS else "torch.int64" if base in _BOOL_INT else None
        return None

    def _promoting_dtype(self, first: cst.BaseExpression, others: Sequence[cst.BaseExpression]) -> str | None:
        """``clamp``/``maximum``...: the first operand's dtype when no other operand can promote it
        (same-dtype tensors; Python numbers for a floating input; ints for an integer input)."""
        base = self.dtype_of(first)
        if base is None or base is _CYCLE:
            return base
        for other in others:
            if self.value(other).is_tensor:
                d = self.dtype_of(other)
                if d is not _CYCLE and d != base:
                    return None
                continue
            kind = _number_kind(other, self)
            if kind is None and not (isinstance(other, cst.Name) and other.value == "None"):
                return None
            if base not in _FLOATS and kind not in ("int", "bool", None):
                return None
            if base == "torch.bool":
                return None
        return base

    def shape_key(self, expr: cst.CSTNode) -> str | None:
        """A key such that two expressions evaluated at one program point with equal keys have
        equal shapes: ``"()"`` for a proven 0-d tensor, ``"name:x"`` for element-wise
        functions of the tensor bound to ``x`` (with Python numbers or 0-d tensors), a literal
        shape for factories. None when unknown.
        """
        return self._fixpoint("shape", expr, self._shape_key, _CYCLE)  # type: ignore[return-value]

    def is_zero_dim(self, expr: cst.CSTNode) -> bool:
        return self.shape_key(expr) == "()"

    def _shape_key(self, e: cst.CSTNode) -> str | None | object:
        if isinstance(e, cst.Name):
            if not self.is_tensor(e):
                return None
            values = self.reaching_values(e)
            if values is not None:
                keys = [self.shape_key(v) for v in values]
                if _agree(keys) == "()":
                    return "()"
                single = self._straight_line_binding(e)
                if single is not None:
                    key = self.shape_key(single)
                    if isinstance(key, str):
                        return key
            return "name:" + e.value
        if isinstance(e, cst.AugAssign):
            return self._broadcast_key([e.target, e.value])
        if isinstance(e, (cst.Comparison, cst.BinaryOperation)):
            operands = (
                [e.left, *(c.comparator for c in e.comparisons)]
                if isinstance(e, cst.Comparison)
                else [e.left, e.right]
            )
            if isinstance(e, cst.BinaryOperation) and isinstance(e.operator, cst.MatrixMultiply):
                return None
            return self._broadcast_key(operands)
        if isinstance(e, cst.UnaryOperation) and not isinstance(e.operator, cst.Not):
            return self.shape_key(e.expression)
        if isinstance(e, cst.IfExp):
            return _agree([self.shape_key(e.body), self.shape_key(e.orelse)])
        if isinstance(e, cst.Call):
            return self._call_shape_key(e)
        return None

    def _broadcast_key(self, operands: Sequence[cst.BaseExpression]) -> str | None:
        keys = []
        for o in operands:
            if self.value(o).is_tensor:
                k = self.shape_key(o)
                if k is None:
                    return None
                if k is not _CYCLE:
                    keys.append(k)
            elif _number_kind(o, self) is None:
                return None
        if not keys:
            return _CYCLE  # type: ignore[return-value]
        wide = {k for k in keys if k != "()"}  # a 0-d operand broadcasts to anything
        if len(wide) > 1:
            return None
        return wide.pop() if wide else "()"

    def _call_shape_key(self, call: cst.Call) -> str | None:
        name = self.callee(call)
        args = positional(call)
        func = call.func
        if name is not None and name.startswith(_TENSOR_NAMESPACES):
            short = name.rsplit(".", 1)[-1]
            if short in ("tensor", "scalar_tensor") and args and _literal_kind(args[0].value):
                return "()"
            if short in ("zeros", "ones", "empty", "full", "rand", "randn") and args:
                first = args[0].value
                if isinstance(first, cst.Tuple) and not first.elements:
                    return "()"
                if isinstance(first, cst.List) and not first.elements:
                    return "()"
                return None
            if short.endswith("_like") and args:
                return self.shape_key(args[0].value)
            if short == "where" and len(args) == 3:
                return self._broadcast_key([a.value for a in args])
            if short in _REDUCTIONS and len(call.args) == 1 and args:
                return "()"
            if (short in _ELEMENTWISE_FNS or short in _BOOL_ELEMENTWISE) and args:
                if short in ("maximum", "minimum", "logical_and", "logical_or", "logical_xor"):
                    return self._broadcast_key([a.value for a in args[:2]])
                return self.shape_key(args[0].value) if len(call.args) == 1 else None
            return None
        if isinstance(func, cst.Attribute) and self.is_tensor(func.value):
            method = func.attr.value
            if method in _REDUCTIONS and not call.args:
                return "()"
            if method in _ELEMENTWISE_METHODS and not call.args:
                return self.shape_key(func.value)
            if method in _CAST_METHODS and not call.args:
                return self.shape_key(func.value)
            if method in ("clamp", "clip", "masked_fill") and all(
                not self.value(a.value).is_tensor or self.is_zero_dim(a.value) for a in call.args
            ) and method != "masked_fill":
                return self.shape_key(func.value)
        return None

    def _straight_line_binding(self, name: cst.Name) -> cst.BaseExpression | None:
        """``expr`` of the ``name = expr`` that provably holds at this use: the nearest earlier
        statement of the same block binds it, and nothing in between rebinds ``name`` or any name
        ``expr`` reads."""
        stmt = self.statement_of(name)
        block = self.block_of(stmt) if stmt is not None else None
        if block is None:
            return None
        body = list(block[1])
        index = next(i for i, s in enumerate(body) if s is stmt)
        for j in range(index - 1, -1, -1):
            s = body[j]
            if name.value not in self.effects(s).writes:
                continue
            if not isinstance(s, cst.SimpleStatementLine) or len(s.body) != 1:
                return None
            small = s.body[0]
            if not (
                isinstance(small, cst.Assign)
                and len(small.targets) == 1
                and isinstance(small.targets[0].target, cst.Name)
            ):
                return None
            watched = {name.value} | self.effects(small.value).reads
            if any(
                (self.effects(t).writes | self.effects(t).inplace) & watched
                for t in body[j + 1 : index]
            ):
                return None
            if self.effects(small.value).reads & {name.value}:
                return None  # ``x = f(x)``: the key would name the old x
            return small.value
        return None

    def is_grad_free(self, expr: cst.CSTNode) -> bool:
        """Provably carries no autograd history and does not require grad: integer/bool dtypes,
        factories without ``requires_grad``, ``.detach()``, and pure ops over such values."""
        return self._fixpoint("grad", expr, self._is_grad_free, True)  # type: ignore[return-value]

    def _is_grad_free(self, e: cst.CSTNode) -> bool:
        v = self.value(e)
        if not v.is_tensor:
            # a number, dtype, device, string...: cannot carry grad; unknown values might be tensors
            return v.kind not in (Kind.UNKNOWN, Kind.MODULE, Kind.BOTTOM) or _number_kind(e, self) is not None
        if self.dtype_of(e) in _BOOL_INT:
            return True
        if isinstance(e, cst.Name):
            values = self.reaching_values(e)
            if values is None or self._requires_grad_set(e.value):
                return False
            return all(self.is_grad_free(v) for v in values)
        if isinstance(e, cst.AugAssign):
            return self.is_grad_free(e.target) and self.is_grad_free(e.value)
        if isinstance(e, (cst.BinaryOperation,)):
            return self.is_grad_free(e.left) and self.is_grad_free(e.right)
        if isinstance(e, cst.UnaryOperation):
            return self.is_grad_free(e.expression)
        if isinstance(e, cst.Comparison):
            return True
        if isinstance(e, cst.Subscript):
            return self.is_grad_free(e.value)
        if isinstance(e, cst.Attribute):
            return e.attr.value == "data" or e.attr.value in ("T", "mT") and self.is_grad_free(e.value)
        if isinstance(e, cst.Call):
            rg = keyword(e, "requires_grad")
            if rg is not None and not (isinstance(rg.value, cst.Name) and rg.value.value == "False"):
                return False
            name = self.callee(e)
            func = e.func
            if isinstance(func, cst.Attribute) and self.is_tensor(func.value):
                if func.attr.value == "detach":
                    return True
                if func.attr.value in ("requires_grad_", "backward", "register_hook"):
                    return False
                return self.is_grad_free(func.value) and all(self.is_grad_free(a.value) for a in e.args)
            if name is None or not name.startswith(_TENSOR_NAMESPACES) or not self.is_pure_call(e):
                return False
            short = name.rsplit(".", 1)[-1]
            if short in _FLOAT_FACTORIES or short in ("tensor", "full", "arange", "scalar_tensor"):
                return True
            if short.endswith("_like"):
                return True
            return all(self.is_grad_free(a.value) for a in e.args)
        return False

    def _requires_grad_set(self, name: str) -> bool:
        code = self.module.code
        return f"{name}.requires_grad_(" in code or f"{name}.requires_grad =" in code

    def in_no_grad(self, node: cst.CSTNode) -> bool:
        """Inside ``with torch.no_grad()``/``inference_mode()`` or a function decorated so."""
        def mode(expr: cst.BaseExpression) -> bool | None:
            """True: turns grad off; False: may turn it back on; None: unrelated."""
            target = expr.func if isinstance(expr, cst.Call) else expr
            name = self.qualname(target)
            if name in _NO_GRAD:
                # ``inference_mode(False)`` (any argument) may leave grad on
                return not (isinstance(expr, cst.Call) and expr.args)
            if name in _GRAD_ON:
                return False
            return None

        for anc in self.ancestors(node):  # innermost first: the nearest mode wins
            if isinstance(anc, cst.With):
                for item in reversed(anc.items):
                    m = mode(item.item)
                    if m is not None:
                        return m
            if isinstance(anc, (cst.FunctionDef, cst.Lambda)):
                if isinstance(anc, cst.FunctionDef):
                    for dec in anc.decorators:
                        m = mode(dec.decorator)
                        if m is not None:
                            return m
                return False
        return False

    def host_read_syncs(self, expr: cst.BaseExpression, *, truth: bool = False) -> list[cst.CSTNode]:
        """The nodes of ``expr`` that read a (possibly) CUDA tensor's value on the host:
        ``.item()``/``.tolist()``, ``bool/int/float(t)``, and with ``truth`` (``expr`` is an
        ``if``/``while``/``assert`` test) the implicit ``bool()`` of a tensor-valued test."""
        found: list[cst.CSTNode] = []
        a = self

        def maybe_cuda(e: cst.CSTNode) -> bool:
            v = a.value(e)
            return v.is_tensor and v.device in (Device.CUDA, Device.CUDA_OR_CPU)

        def truthy(e: cst.BaseExpression) -> None:
            if isinstance(e, cst.BooleanOperation):
                truthy(e.left)
                truthy(e.right)
            elif isinstance(e, cst.UnaryOperation) and isinstance(e.operator, cst.Not):
                truthy(e.expression)
            elif maybe_cuda(e):
                found.append(e)

        class V(cst.CSTVisitor):
            # ``a or b``, ``x if t else y``, ``not t`` inside an expression take a truth value too
            def visit_BooleanOperation(self, node: cst.BooleanOperation) -> None:
                truthy(node.left)

            def visit_IfExp(self, node: cst.IfExp) -> None:
                truthy(node.test)

            def visit_UnaryOperation(self, node: cst.UnaryOperation) -> None:
                if isinstance(node.operator, cst.Not):
                    truthy(node.expression)

            def visit_Comparison(self, node: cst.Comparison) -> None:
                if len(node.comparisons) > 1:  # a chain is an ``and`` of its links
                    truthy(node)

            def visit_Call(self, node: cst.Call) -> None:
                func = node.func
                if isinstance(func, cst.Attribute) and func.attr.value in ("item", "tolist"):
                    if maybe_cuda(func.value):
                        found.append(node)
                elif a.callee(node) in ("builtins.bool", "builtins.int", "builtins.float"):
                    args = positional(node)
                    if len(args) == 1 and maybe_cuda(args[0].value):
                        found.append(node)

            def visit_Lambda(self, node: cst.Lambda) -> bool:
                return False

        if truth:
            truthy(expr)
        walk(expr, V())
        return list({id(n): n for n in found}.values())

    def flows_to_host(self, name: str, after: cst.CSTNode) -> bool:
        """Might the tensor bound to ``name`` be read on the host (Python control flow,
        ``.item()``, ``bool()``/``float()``, printing) after ``after``? Over-approximates:
        every later use of the name in the enclosing function (or loop) counts."""
        scope_node = self.enclosing_function(after) or self.module
        pos = self.positions.get(after)
        loops = self.loops_around(after)
        found = False
        a = self

        class V(cst.CSTVisitor):
            def visit_Name(self, node: cst.Name) -> None:
                nonlocal found
                if found or node.value != name:
                    return
                p = a.positions.get(node)
                later = pos is None or p is None or p.start.line > pos.end.line
                in_loop = bool(loops) and any(anc is loops[-1] for anc in a.ancestors(node))
                if (later or in_loop) and a._is_host_use(node):
                    found = True

        walk(scope_node, V())
        return found

    def _is_host_use(self, node: cst.CSTNode) -> bool:
        child = node
        for anc in self.ancestors(node):
            if isinstance(anc, (cst.If, cst.While, cst.IfExp)) and child is anc.test:
                return True
            if isinstance(anc, cst.Assert):
                return True
            if isinstance(anc, cst.FormattedStringExpression):
                return True
            if isinstance(anc, cst.Call):
                func = anc.func
                if isinstance(func, cst.Attribute) and child is func and func.attr.value in _HOST_METHODS:
                    return True
                if self.callee(anc) in _HOST_BUILTINS:
                    return True
                if child is not func and not self.is_pure_call(anc):
                    return True  # passed to code we cannot see
            if isinstance(anc, (cst.BaseSmallStatement, cst.BaseCompoundStatement)):
                return False  # stored or returned: not a host read here
            child = anc
        return False

    def is_effect_free(self, expr: cst.CSTNode) -> bool:
        """Evaluating ``expr`` mutates nothing and runs no code we cannot see (every call is pure,
        no in-place method, no walrus, no ``await``/``yield``, no lambda)."""
        fx = self.effects(expr)
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
            name = self.callee(call) or ""
            short = call.func.attr.value if isinstance(call.func, cst.Attribute) else name.rsplit(".", 1)[-1]
            if short in _RANDOM_OPS:
                return False
        return True

    @cached_property
    def may_use_several_devices(self) -> bool:
        """Does the module name a CUDA device by index (then "on CUDA" need not mean one device)?"""
        import re

        return bool(
            re.search(
                r"cuda:\s*[\d{]|\.cuda\(\s*[^)\s]|set_device|torch\.device\([^)]*,|\.to\(\s*\d",
                self.module.code,
            )
        )

    @cached_property
    def torch_alias(self) -> str | None:
        """The name the module binds ``torch`` to with a top-level ``import torch [as t]``."""
        for stmt in self.module.body:
            if isinstance(stmt, cst.SimpleStatementLine):
                for small in stmt.body:
                    if isinstance(small, cst.Import):
                        for alias in small.names:
                            if dotted_name(alias.name) == "torch":
                                if alias.asname is None:
                                    return "torch"
                                if isinstance(alias.asname.name, cst.Name):
                                    return alias.asname.name.value
        return None


_TENSOR_TYPES = ("torch.Tensor", "torch.FloatTensor", "torch.LongTensor")


class _Tuple(Value):
    """A tuple of values (for ``enumerate``/``zip`` destructuring only)."""

    def __init__(self, items: tuple[Value, ...]) -> None:
        object.__setattr__(self, "items", items)
        super().__init__(Kind.OTHER)


_DTYPES = {
    "float32", "float", "float64", "double", "float16", "half", "bfloat16", "int64", "long",
    "int32", "int", "int16", "short", "int8", "uint8", "bool", "complex64", "complex128",
    "cfloat", "cdouble", "float8_e4m3fn", "float8_e5m2", "uint16", "uint32", "uint64",
}


def _through_call(expr: cst.BaseExpression) -> bool:
    """Is there a call in the attribute/subscript chain ``expr`` (``a.b().c``)?"""
    while isinstance(expr, (cst.Attribute, cst.Subscript, cst.Call)):
        if isinstance(expr, cst.Call):
            return True
        expr = expr.value
    return False


def _is_none(arg: cst.Arg | None) -> bool:
    return arg is not None and isinstance(arg.value, cst.Name) and arg.value.value == "None"


def _tensor_device(values: Iterable[Value]) -> Device:
    devices = [v.device for v in values if v.is_tensor]
    if not devices:
        return Device.UNKNOWN
    if any(d is Device.CUDA for d in devices):
        return Device.CUDA  # mixing a CUDA tensor with CPU ones only works for 0-d CPU tensors
    result = devices[0]
    for d in devices[1:]:
        result = result.join(d)
    return result


def _dtype_kw(analysis: ModuleAnalysis, call: cst.Call) -> str | None:
    arg = keyword(call, "dtype")
    if arg is None:
        return None
    name = analysis.qualname(arg.value)
    return name if name and name.startswith("torch.") else None


def _to_is_dtype_only(analysis: ModuleAnalysis, call: cst.Call) -> bool:
    args = positional(call)
    if keyword(call, "device") is not None:
        return False
    return bool(args) and analysis._is_dtype(args[0].value) or (not args and keyword(call, "dtype") is not None)


# ---- tables for the dtype/shape facts (SFX2xx) -----------------------------------------------
_CYCLE = object()  # "no information yet" inside a cycle of bindings (identity of _agree)
_FLOATS = {"torch.float32", "torch.float64", "torch.float16", "torch.bfloat16"}
_BOOL_INT = {
    "torch.bool", "torch.uint8", "torch.int8", "torch.int16", "torch.int32", "torch.int64",
}
_DTYPE_ALIASES = {
    "float": "float32", "double": "float64", "half": "float16", "long": "int64", "int": "int32",
    "short": "int16", "cfloat": "complex64", "cdouble": "complex128",
}
_CAST_METHODS = {
    "float": "torch.float32", "double": "torch.float64", "half": "torch.float16",
    "bfloat16": "torch.bfloat16", "long": "torch.int64", "int": "torch.int32",
    "short": "torch.int16", "bool": "torch.bool", "byte": "torch.uint8", "char": "torch.int8",
}
_BOOL_FNS = {
    "isnan", "isinf", "isfinite", "isposinf", "isneginf", "isreal", "signbit", "logical_and",
    "logical_or", "logical_not", "logical_xor", "eq", "ne", "gt", "ge", "lt", "le", "greater",
    "greater_equal", "less", "less_equal", "not_equal", "any", "all", "isclose", "isin",
}
_BOOL_ELEMENTWISE = _BOOL_FNS - {"any", "all", "isin"}
_FLOAT_FACTORIES = {
    "zeros", "ones", "empty", "rand", "randn", "eye", "linspace", "logspace", "empty_strided",
}
# Keep the input's dtype (for any dtype they accept).
_PROMOTING_FNS = {"clamp", "clip", "maximum", "minimum", "fmax", "fmin"}
_RANDOM_OPS = {
    "rand", "randn", "randint", "randperm", "rand_like", "randn_like", "randint_like", "bernoulli",
    "multinomial", "normal", "poisson", "dropout", "dropout1d", "dropout2d", "dropout3d",
    "alpha_dropout", "feature_alpha_dropout", "rrelu", "gumbel_softmax", "uniform_", "normal_",
    "random_", "exponential_", "geometric_", "log_normal_", "cauchy_", "bernoulli_",
}
_SAME_DTYPE_FNS = {
    "abs", "neg", "negative", "clone", "detach", "relu",
    "flatten", "reshape", "squeeze", "unsqueeze", "transpose", "permute", "flip", "roll",
    "amax", "amin", "sign", "masked_fill", "contiguous",
}
# Keep a floating input's dtype (integer inputs would promote or raise).
_FLOAT_ONLY_FNS = {
    "exp", "log", "log1p", "expm1", "sqrt", "rsqrt", "tanh", "sigmoid", "sin", "cos", "tan",
    "floor", "ceil", "round", "trunc", "frac", "reciprocal", "mean", "square", "erf", "exp2",
    "log2", "log10", "atan", "asin", "acos", "sinh", "cosh", "softplus", "gelu", "silu",
    "norm", "std", "var", "nan_to_num", "logsumexp",
}
_SAME_DTYPE_METHODS = _SAME_DTYPE_FNS | {
    "cuda", "cpu", "pin_memory", "view", "view_as", "expand", "expand_as", "narrow", "select",
    "t", "max", "min", "abs_", "neg_", "clamp_", "mul_", "add_", "sub_", "fill_", "zero_",
}
_REDUCTIONS = {
    "sum", "mean", "prod", "amax", "amin", "max", "min", "any", "all", "norm", "std", "var",
    "logsumexp", "count_nonzero",
}
_ELEMENTWISE_FNS = (_SAME_DTYPE_FNS | _FLOAT_ONLY_FNS) - {
    "flatten", "reshape", "squeeze", "unsqueeze", "transpose", "permute", "amax", "amin",
    "mean", "norm", "std", "var", "logsumexp", "clamp", "clip", "masked_fill", "maximum",
    "minimum", "roll", "flip",
} | {"maximum", "minimum"}
_ELEMENTWISE_METHODS = (_ELEMENTWISE_FNS - {"maximum", "minimum"}) | _BOOL_ELEMENTWISE | {
    "cuda", "contiguous", "clone", "detach", "float", "double", "half", "bool", "long", "int",
}
_NO_GRAD = {
    "torch.no_grad", "torch.inference_mode", "torch.autograd.no_grad",
    "torch.autograd.grad_mode.no_grad", "torch.autograd.grad_mode.inference_mode",
}
_GRAD_ON = {
    "torch.enable_grad", "torch.set_grad_enabled", "torch.autograd.enable_grad",
    "torch.autograd.set_grad_enabled", "torch.autograd.grad_mode.enable_grad",
    "torch.autograd.grad_mode.set_grad_enabled",
}
_HOST_METHODS = {"item", "tolist", "cpu", "numpy", "__bool__", "__float__", "__int__"}
_HOST_BUILTINS = {
    "builtins.bool", "builtins.int", "builtins.float", "builtins.print", "builtins.str",
    "builtins.repr", "builtins.format", "builtins.list", "builtins.len", "builtins.max",
    "builtins.min", "builtins.sum", "builtins.round", "builtins.abs",
}


def _canon_dtype(name: str | None) -> str | None:
    if not name or not name.startswith("torch."):
        return None
    short = name[len("torch.") :]
    return "torch." + _DTYPE_ALIASES.get(short, short) if short in _DTYPES else None


def _agree(items) -> str | None | object:
    """The one value every item has (cycle markers ignored); None if they differ or any is None."""
    result: object = _CYCLE
    for item in items:
        if item is _CYCLE:
            continue
        if item is None:
            return None
        if result is _CYCLE:
            result = item
        elif result != item:
            return None
    return result


def _literal_kind(expr: cst.BaseExpression) -> str | None:
    """"bool"/"int"/"float" for a (possibly negated) literal Python number, else None."""
    if isinstance(expr, cst.UnaryOperation) and isinstance(expr.operator, (cst.Minus, cst.Plus)):
        return _literal_kind(expr.expression) if not isinstance(expr.expression, cst.Name) else None
    if isinstance(expr, cst.Integer):
        return "int"
    if isinstance(expr, cst.Float):
        return "float"
    if isinstance(expr, cst.Name) and expr.value in ("True", "False"):
        return "bool"
    return None


def _number_kind(expr: cst.BaseExpression, analysis: ModuleAnalysis) -> str | None:
    """Like :func:`_literal_kind`, plus "number" for any other Python bool/int/float value."""
    kind = _literal_kind(expr)
    if kind is not None:
        return kind
    if analysis.value(expr).kind is Kind.NUMBER:
        return "number"
    if isinstance(expr, cst.Name):  # a parameter annotated ``int``/``float``/``bool``
        scope = analysis.scope(expr)
        refs = [r for acc in (scope.accesses[expr.value] if scope else ()) if acc.node is expr for r in acc.referents]
        if len(refs) == 1 and isinstance(getattr(refs[0], "node", None), cst.Param):
            ann = refs[0].node.annotation
            if ann is not None and isinstance(ann.annotation, cst.Name):
                return {"int": "int", "bool": "bool", "float": "float"}.get(ann.annotation.value)
    return None


def literal_number(expr: cst.BaseExpression) -> int | float | bool | None:
    """The value of a literal Python number (``3``, ``-0.5``, ``True``), else None."""
    kind = _literal_kind(expr)
    if kind is None:
        return None
    import ast

    try:
        value = ast.literal_eval(cst.Module([]).code_for_node(expr))
    except (ValueError, SyntaxError):
        return None
    return value if isinstance(value, (int, float, bool)) else None


# --------------------------------------------------------------------------------------------
# Scalar facts: host reads, dtype kinds, one-element shapes, device origins (SFX3xx/SFX4xx)

# Reductions that, called with no dim, give a 0-d tensor.
_FULL_REDUCTIONS = {
    "sum", "mean", "nansum", "nanmean", "max", "min", "amax", "amin", "prod", "std", "var",
    "norm", "all", "any", "argmax", "argmin", "count_nonzero", "median", "nanmedian",
}
# Tensor methods that keep the receiver's shape (called with no argument, or only a dtype/device).
_SHAPE_KEEPING = {
    "detach", "clone", "float", "double", "half", "bfloat16", "long", "int", "short", "bool",
    "cpu", "cuda", "to", "contiguous", "abs", "neg", "sqrt", "exp", "log", "sigmoid", "relu",
    "type", "type_as", "requires_grad_", "detach_", "pin_memory",
}
# Tensor methods that keep the receiver's dtype (and device, unless they move it).
_KIND_KEEPING = {
    "detach", "clone", "cpu", "cuda", "contiguous", "squeeze", "unsqueeze", "reshape", "view",
    "flatten", "ravel", "max", "min", "amax", "amin", "pin_memory", "detach_", "requires_grad_",
}
# Methods whose result is floating for any real input (or that raise for integers).
_FLOATING_RESULT = {"softmax", "log_softmax", "sigmoid", "tanh", "exp", "log", "sqrt", "rsqrt"}
# Elementwise methods that keep a floating dtype floating (integers may stay integers).
_FLOAT_KEEPING = {
    "pow", "abs", "neg", "square", "clamp", "clip", "add", "sub", "mul", "div", "relu",
    "sin", "cos", "reciprocal", "lerp", "nan_to_num",
}
_CAST_KIND = {
    "float": "float", "double": "float", "half": "float", "bfloat16": "float",
    "long": "int", "int": "int", "short": "int", "char": "int", "byte": "int", "bool": "bool",
}
_DTYPE_KIND = {
    **{d: "float" for d in ("float32", "float", "float64", "double", "float16", "half", "bfloat16")},
    **{d: "int" for d in ("int64", "long", "int32", "int", "int16", "short", "int8", "uint8")},
    "bool": "bool",
}
# Loss functions that only accept floating inputs (whatever the reduction), so return floats.
_FLOAT_LOSSES = {
    "cross_entropy", "nll_loss", "binary_cross_entropy", "binary_cross_entropy_with_logits",
    "mse_loss", "smooth_l1_loss", "huber_loss",
}
_SCALAR_LOSSES = _FLOAT_LOSSES | {"l1_loss", "kl_div"}
_NORMS = {"torch.nn.utils.clip_grad_norm_", "torch.linalg.vector_norm", "torch.norm"}
_LOG_LEVELS = {"debug", "info", "warning", "warn", "error", "exception", "critical", "log"}
# Host reads of a tensor's value: ``t.item()``/``t.tolist()`` and the builtins.
READ_METHODS = ("item", "tolist")
READ_BUILTINS = ("builtins.float", "builtins.int", "builtins.bool")
_READ_BUILTIN_NAMES = frozenset(n.rsplit(".", 1)[-1] for n in READ_BUILTINS)


@dataclass(frozen=True)
class HostRead:
    """One host read of a tensor: ``node`` (the whole call), its ``receiver`` and ``form``
    (``"item"``, ``"tolist"``, ``"float"``, ``"int"`` or ``"bool"``)."""

    node: cst.Call
    receiver: cst.BaseExpression
    form: str


def _stores(node: cst.CSTNode) -> set[str]:
    """Names bound anywhere in ``node`` (targets, loop variables, imports; not nested defs)."""
    cache = memo("stores", node)
    if cache is not None:
        hit = cache.get(("stores", node))
        if hit is not None:
            return hit  # type: ignore[return-value]
    found: set[str] = set()

    class V(cst.CSTVisitor):
        def visit_FunctionDef(self, n: cst.FunctionDef) -> bool:
            found.add(n.name.value)
            return n is node

        def visit_ClassDef(self, n: cst.ClassDef) -> bool:
            found.add(n.name.value)
            return False

        def visit_AssignTarget(self, n: cst.AssignTarget) -> None:
            found.update(t.value for t in _target_names(n.target))

        def visit_AnnAssign(self, n: cst.AnnAssign) -> None:
            found.update(t.value for t in _target_names(n.target))

        def visit_AugAssign(self, n: cst.AugAssign) -> None:
            found.update(t.value for t in _target_names(n.target))

        def visit_For(self, n: cst.For) -> None:
            found.update(t.value for t in _target_names(n.target))

        def visit_CompFor(self, n: cst.CompFor) -> None:
            found.update(t.value for t in _target_names(n.target))

        def visit_NamedExpr(self, n: cst.NamedExpr) -> None:
            found.update(t.value for t in _target_names(n.target))

        def visit_AsName(self, n: cst.AsName) -> None:
            found.update(t.value for t in _target_names(n.name))

        def visit_Del(self, n: cst.Del) -> None:
            found.update(t.value for t in _target_names(n.target))

        def visit_Import(self, n: cst.Import) -> None:
            for alias in n.names:
                target = alias.asname.name if alias.asname else alias.name
                while isinstance(target, cst.Attribute):
                    target = target.value
                if isinstance(target, cst.Name):
                    found.add(target.value)

        def visit_ImportFrom(self, n: cst.ImportFrom) -> None:
            if not isinstance(n.names, cst.ImportStar):
                for alias in n.names:
                    target = alias.asname.name if alias.asname else alias.name
                    if isinstance(target, cst.Name):
                        found.add(target.value)

    walk(node, V())
    if cache is not None:
        cache[("stores", node)] = frozenset(found)
    return found


def _parallel_element(
    target: cst.BaseExpression, value: cst.BaseExpression, name: str
) -> cst.BaseExpression | None:
    """``e2`` for ``b`` in ``a, b = e1, e2`` (same length, no starred items), else None."""
    if not (isinstance(target, (cst.Tuple, cst.List)) and isinstance(value, (cst.Tuple, cst.List))):
        return None
    if len(target.elements) != len(value.elements):
        return None
    if any(isinstance(e, cst.StarredElement) for e in (*target.elements, *value.elements)):
        return None
    hits = [
        v.value
        for t, v in zip(target.elements, value.elements, strict=True)
        if isinstance(t.value, cst.Name) and t.value.value == name
    ]
    return hits[0] if len(hits) == 1 else None


def _py_literal_kind(expr: cst.BaseExpression) -> str | None:
    """``"pyint"``/``"pyfloat"``/``"pybool"`` for a Python number literal (``-1`` included)."""
    if isinstance(expr, cst.UnaryOperation) and isinstance(expr.operator, cst.Minus):
        expr = expr.expression
    if isinstance(expr, cst.Integer):
        return "pyint"
    if isinstance(expr, cst.Float):
        return "pyfloat"
    if isinstance(expr, cst.Name) and expr.value in ("True", "False"):
        return "pybool"
    return None


def _only_dtype_args(call: cst.Call) -> bool:
    return all(a.keyword is not None and a.keyword.value == "dtype" for a in call.args)


def _int_args(call: cst.Call) -> list[int] | None:
    """The arguments of ``reshape(1, 1)``/``view((1,))`` as ints, or None."""
    args = positional(call)
    if len(args) != len(call.args):
        return None
    items = [a.value for a in args]
    if len(items) == 1 and isinstance(items[0], (cst.Tuple, cst.List)):
        items = [el.value for el in items[0].elements]
    out = []
    for item in items:
        neg = isinstance(item, cst.UnaryOperation) and isinstance(item.operator, cst.Minus)
        inner = item.expression if neg else item
        if not isinstance(inner, cst.Integer):
            return None
        out.append(-int(inner.value) if neg else int(inner.value))
    return out
