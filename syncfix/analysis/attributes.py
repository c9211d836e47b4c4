"""What attributes hold: a tensor's attributes (``t.grad``, ``t.device``), ``self.<attr>`` as the
join of every assignment in its class (and class attributes), the likely tensors of the likely
view (``p.grad``, ``m.weight``), and which callees are ``nn.Module`` classes."""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

import libcst as cst
from libcst.metadata import Assignment, ExpressionContext, ExpressionContextProvider

from . import callgraph
from .annotations import annotation_value
from .namespaces import namespace_attribute
from .project import ALL
from .sizes import likely_size
from .tokenizers import tokenized_item
from .torch_api import (
    CPU_KEEPING_METHODS,
    FLOAT_CONSTANTS,
    LIKELY_TENSOR_ATTRS,
    MODULE_BASES,
    MODULE_FACTORIES,
    MODULE_ONLY_METHODS,
    PLACING_METHODS,
    TENSOR_ATTR_NON_TENSOR,
    TENSOR_ATTR_TENSOR,
    TORCHVISION_NON_BUILDERS,
)
from .values import NUMBER, OTHER, UNKNOWN, Device, Kind, Memory, TupleValue, Value, join_all

if TYPE_CHECKING:
    from .module import ModuleAnalysis


def attribute_value(a: ModuleAnalysis, expr: cst.Attribute) -> Value:
    names = a.qualnames(expr)
    if names and all(n.startswith("torch.") for n in names):
        return OTHER  # ``torch.float32``, ``torch.cuda``...: no tensor
    if names and all(n in FLOAT_CONSTANTS for n in names):
        return NUMBER  # ``math.inf``: a Python float
    base = a.value(expr.value)
    attr = expr.attr.value
    if isinstance(base, TupleValue) and len(base.items) == 2 and attr in ("values", "indices"):
        return base.items[0 if attr == "values" else 1]  # of ``t.max(dim)``
    if base.is_tensor:
        if attr in TENSOR_ATTR_TENSOR:  # of the tensor's dtype, but a complex one's ``.real``/``.imag``
            dtype = base.dtype if attr not in ("real", "imag") else None
            return Value(Kind.TENSOR, base.device, base.memory, base.fresh, dtype, base.origin)
        if attr == "device":
            return Value(Kind.DEVICE, base.device)
        if attr in TENSOR_ATTR_NON_TENSOR:
            return OTHER
        return UNKNOWN
    if base.kind is Kind.NDARRAY:
        return Value(Kind.NDARRAY)  # ``a.T``, ``np.finfo(np.float32).eps``: numpy's, never a tensor
    if base.kind is Kind.MODULE and isinstance(expr.value, cst.Attribute):
        entry = module_dict_entry(a, expr.value, attr)
        if entry is not None:
            return entry  # ``self.transformer.ln_f`` of ``nn.ModuleDict(dict(ln_f=nn.LayerNorm(n)))``
    if isinstance(expr.value, cst.Name) and expr.value.value == "self":
        held = _self_attribute(a, expr)
        if held.kind in (Kind.TENSOR, Kind.TENSORS, Kind.BATCH):
            # kept on the object: any method may write it between two reads (not fresh)
            return replace(held, fresh=False)
        if held.kind is not Kind.UNKNOWN:
            return held
        if _assigned_in_class(a, expr):
            return UNKNOWN  # ``self.bias = bias``: what the class stores decides, not the name
    held_by_namespace = namespace_attribute(a, expr) if base.kind is Kind.UNKNOWN else None
    if held_by_namespace is not None:
        return held_by_namespace  # ``args.device`` after ``args.device = device`` in ``main``
    tokenized = tokenized_item(a, expr.value, attr) if base.kind is Kind.UNKNOWN else None
    if tokenized is not None:
        return tokenized  # ``tokenizer(texts, return_tensors="pt").input_ids``: a CPU tensor (likely)
    if assumed_tensor(a, base, attr, LIKELY_TENSOR_ATTRS):
        return Value(Kind.TENSOR)
    return UNKNOWN


def assumed_tensor(a: ModuleAnalysis, receiver: Value, name: str, names: set[str]) -> bool:
    """In the likely view only: is an unknown receiver of this method/attribute read as a tensor?
    Not by a name a class of the module defines (EasyOCR's ``BeamState.sort``)."""
    return (
        a.assume_tensors
        and receiver.kind is Kind.UNKNOWN
        and name in names
        and a.torch_code
        and name not in a.class_method_names
    )


def _assigned_in_class(a: ModuleAnalysis, expr: cst.Attribute) -> bool:
    """Does the class holding ``self.<attr>`` (or a subclass here) assign it in its methods?"""
    cls = next((anc for anc in a.ancestors(expr) if isinstance(anc, cst.ClassDef)), None)
    if cls is None:
        return False
    return any(expr.attr.value in _self_assignments(a, c) for c in callgraph.with_subclasses(a, cls))


def _self_attribute(a: ModuleAnalysis, expr: cst.Attribute) -> Value:
    """``a.fc`` in a method: the join of every ``a.fc = ...`` in the class (in the likely view,
    of the class's own assignments where another file may set it too: torchrl's
    ``self._traj_id = torch.zeros((), device="cpu")`` of a class other files import)."""
    made = _bound_in_init(a, expr)
    if made is not None:
        return a.value(made)
    bound = likely_attribute_values(a, expr) if a.assume_tensors else self_attribute_values(a, expr)
    if bound is None:
        # ``self.register_buffer("initted", t)``: a tensor (likely; ``None`` may be registered)
        return Value(Kind.TENSOR) if a.assume_tensors and _registered(a, expr) else UNKNOWN
    # a parameter moves with its module (``model.cuda()``): where it was made says nothing; so
    # does a buffer, whatever tensor is stored to its name later (BLIP's ``self.image_queue =
    # normalize(self.image_queue)`` after ``register_buffer``: ``Module.__setattr__`` keeps it one)
    registered = _registrations(a, expr).get(expr.attr.value)
    if registered is not None:
        bound = [*bound, *registered]  # ``self.q = normalize(self.q)`` starts from the registered one
    held = join_all(
        replace(a.value(v), device=Device.UNKNOWN, memory=Memory.UNKNOWN, origin=None)
        if registered is not None or _makes_parameter(a, v) else a.value(v)
        for v in bound
    )
    if registered is not None and a.assume_tensors and held.kind is Kind.UNKNOWN:
        # ``self.num_updates += 1`` on a registered counter (generative-models' EMA) keeps a tensor
        return Value(Kind.TENSOR)
    return held


def _bound_in_init(a: ModuleAnalysis, expr: cst.Attribute) -> cst.BaseExpression | None:
    """For ``self.x`` read in ``__init__`` after a line of its body ``self.x = e``: ``e``, where
    nothing before the read can rebind it: ``self`` has not been passed anywhere (no method call,
    no ``super()``, no bare ``self``), and no other line binds ``self.x`` (CMC's alias table:
    ``self.prob = torch.zeros(K)`` read in the loop after it is a CPU tensor, though a later
    ``cuda()`` method moves it). None otherwise."""
    if not (isinstance(expr.value, cst.Name) and expr.value.value == "self") or isinstance(a.parent(expr), _STORES):
        return None
    fn = a.enclosing_function(expr)
    block = a.parent(fn) if fn is not None else None
    if fn is None or fn.name.value != "__init__" or block is None or not isinstance(a.parent(block), cst.ClassDef):
        return None
    if any(isinstance(anc, (cst.Lambda, cst.GeneratorExp)) for anc in a.ancestors(expr) if anc is not fn):
        return None  # runs later, when anything may have rebound it
    if not isinstance(fn.body, cst.IndentedBlock) or expr.attr.value in _registrations(a, expr):
        return None
    attr, made = expr.attr.value, None
    for stmt in fn.body.body:
        holds = any(n is expr for n in a.nodes_within(stmt, cst.Attribute))
        if _self_escapes(a, stmt):
            return None
        binds, value = _binds_self_attr(stmt, attr)
        if holds:
            return None if binds else made  # rebound in the read's own statement: a loop may carry it
        if binds:
            made = value  # None where bound some other way (a tuple target, ``+=``, a nested block)
    return None


_STORES = (cst.AssignTarget, cst.AugAssign, cst.AnnAssign, cst.Del)


def _binds_self_attr(stmt: cst.BaseStatement, attr: str) -> tuple[bool, cst.BaseExpression | None]:
    """Does the line bind ``self.<attr>``, and to what: the value of ``self.<attr> = value``, the
    line's only statement; None where it binds it otherwise."""
    stores = [
        n for n in _store_targets(stmt)
        if isinstance(n, cst.Attribute) and isinstance(n.value, cst.Name) and n.value.value == "self" and n.attr.value == attr
    ]
    if not stores:
        return False, None
    if (
        isinstance(stmt, cst.SimpleStatementLine) and len(stmt.body) == 1 and isinstance(stmt.body[0], cst.Assign)
        and len(stmt.body[0].targets) == 1 and stmt.body[0].targets[0].target is stores[0] and len(stores) == 1
    ):
        return True, stmt.body[0].value
    return True, None


def _store_targets(node: cst.CSTNode) -> list[cst.BaseExpression]:
    out: list[cst.BaseExpression] = []

    class V(cst.CSTVisitor):
        def visit_AssignTarget(self, n: cst.AssignTarget) -> None:
            out.extend(_unpacked(n.target))

        def visit_AugAssign(self, n: cst.AugAssign) -> None:
            out.append(n.target)

        def visit_AnnAssign(self, n: cst.AnnAssign) -> None:
            out.append(n.target)

        def visit_For(self, n: cst.For) -> None:
            out.extend(_unpacked(n.target))

        def visit_WithItem(self, n: cst.WithItem) -> None:
            if n.asname is not None:
                out.extend(_unpacked(n.asname.name))

        def visit_NamedExpr(self, n: cst.NamedExpr) -> None:
            out.append(n.target)

    node.visit(V())
    return out


def _unpacked(target: cst.BaseExpression) -> list[cst.BaseExpression]:
    if isinstance(target, (cst.Tuple, cst.List)):
        return [t for el in target.elements for t in _unpacked(el.value)]
    return [target]


def _self_escapes(a: ModuleAnalysis, stmt: cst.CSTNode) -> bool:
    """Does ``stmt`` hand ``self`` to code that could rebind its attributes: a method call on it,
    ``super()``, ``setattr``/``vars``, or ``self`` used other than as ``self.<attr>``?"""
    for name in a.nodes_within(stmt, cst.Name):
        assert isinstance(name, cst.Name)
        if name.value in ("super", "setattr", "vars", "exec", "eval", "globals"):
            return True
        if name.value != "self":
            continue
        parent = a.parent(name)
        if not (isinstance(parent, cst.Attribute) and parent.value is name):
            return True  # passed, returned, stored: other code holds it now
        call = a.parent(parent)
        if isinstance(call, cst.Call) and call.func is parent or parent.attr.value == "__dict__":
            return True  # ``self.cuda()``: a method may rebind any attribute
    return False


def _held_constructions(a: ModuleAnalysis, expr: cst.Attribute, classes: tuple[str, ...]) -> list[cst.Call] | None:
    """The calls ``self.<attr>`` is bound to where each constructs one of ``classes``, or None."""
    bound = likely_attribute_values(a, expr) if a.assume_tensors else self_attribute_values(a, expr)
    if not bound or not all(isinstance(v, cst.Call) and a.callee(v) in classes for v in bound):
        return None
    return bound  # type: ignore[return-value]


_MODULE_DICT = ("torch.nn.ModuleDict", "torch.nn.modules.container.ModuleDict")
# Containers whose iteration yields their modules (an ``nn.ModuleDict``'s yields its keys).
_MODULE_SEQUENCES = (
    "torch.nn.ModuleList", "torch.nn.Sequential",
    "torch.nn.modules.container.ModuleList", "torch.nn.modules.container.Sequential",
)


def _module_dict_entries(a: ModuleAnalysis, holder: cst.Attribute, key: str) -> list[cst.BaseExpression] | None:
    """The expressions ``holder.<key>`` may be, where ``holder`` (``self.transformer``) only ever
    holds ``nn.ModuleDict(dict(<key>=...))`` or ``nn.ModuleDict({"<key>": ...})``; None where
    syncfix cannot read the entry."""
    made = _held_constructions(a, holder, _MODULE_DICT)
    if made is None:
        return None
    entries: list[cst.BaseExpression] = []
    for call in made:
        if len(call.args) != 1 or call.args[0].keyword is not None:
            return None
        mapping = call.args[0].value
        if isinstance(mapping, cst.Call) and a.callee(mapping) == "builtins.dict" and all(
            arg.keyword is not None and not arg.star for arg in mapping.args
        ):
            found = [arg.value for arg in mapping.args if arg.keyword is not None and arg.keyword.value == key]
        elif isinstance(mapping, cst.Dict):
            pairs = [(el.key, el.value) for el in mapping.elements if isinstance(el, cst.DictElement)]
            if len(pairs) != len(mapping.elements) or not all(isinstance(k, cst.SimpleString) for k, _ in pairs):
                return None
            found = [v for k, v in pairs if isinstance(k, cst.SimpleString) and k.evaluated_value == key]
        else:
            return None
        if len(found) != 1:
            return None
        entries.append(found[0])
    return entries


def module_dict_entry(a: ModuleAnalysis, holder: cst.Attribute, key: str) -> Value | None:
    """What ``self.transformer.<key>`` of a module dict holds (nanoGPT's ``self.transformer.ln_f``),
    or None where syncfix cannot read the entry."""
    entries = _module_dict_entries(a, holder, key)
    return join_all(a.value(e) for e in entries) if entries is not None else None


def holds_module_sequence(a: ModuleAnalysis, expr: cst.BaseExpression) -> bool:
    """Does ``expr`` (``self.h``, or a module dict's entry ``self.transformer.h``) only ever hold
    an ``nn.ModuleList`` or an ``nn.Sequential``, whose iteration yields its modules?"""
    if not isinstance(expr, cst.Attribute):
        return False
    if isinstance(expr.value, cst.Name):
        return _held_constructions(a, expr, _MODULE_SEQUENCES) is not None
    if not isinstance(expr.value, cst.Attribute):
        return False
    entries = _module_dict_entries(a, expr.value, expr.attr.value)
    return bool(entries) and all(isinstance(e, cst.Call) and a.callee(e) in _MODULE_SEQUENCES for e in entries or ())


_MODULE_CONTAINERS = (
    *_MODULE_SEQUENCES, "torch.nn.ModuleDict", "torch.nn.modules.container.ModuleDict",
)


def holds_module_container(a: ModuleAnalysis, expr: cst.BaseExpression) -> bool:
    """Does ``expr`` (``self.criterion``) only ever hold an ``nn.ModuleList``, an
    ``nn.Sequential`` or an ``nn.ModuleDict``, whose items (``self.criterion[lang]``) are modules?"""
    if not (isinstance(expr, cst.Attribute) and isinstance(expr.value, cst.Name)):
        return False
    return _held_constructions(a, expr, _MODULE_CONTAINERS) is not None


def module_state(a: ModuleAnalysis, expr: cst.BaseExpression) -> bool:
    """Is ``expr`` (``self.<attr>`` in a method) a parameter or buffer of its module: registered
    (``self.register_buffer("<attr>", ...)``), or every value the class assigns to it an
    ``nn.Parameter(...)``? It moves with the module (``model.cuda()``), whatever it was made on."""
    if not (isinstance(expr, cst.Attribute) and isinstance(expr.value, cst.Name) and expr.value.value == "self"):
        return False
    if _registered(a, expr):
        return True
    bound = self_attribute_values(a, expr)
    return bool(bound) and all(_makes_parameter(a, v) for v in bound or ())


def moved_once(a: ModuleAnalysis, call: cst.Call) -> bool:
    """Is ``call`` the ``self.freqs.to(h.device)`` of ``self.freqs = self.freqs.to(h.device)``
    (llm-awq's rotary tables, each forward), where the class sets the attribute elsewhere only in
    ``__init__``? After the first call it is on that device and the copy returns it: a copy only
    when the device changes."""
    func = call.func
    if not (isinstance(func, cst.Attribute) and func.attr.value in ("to", "cuda")):
        return False
    source = func.value
    assign = a.parent(call)
    if not (
        isinstance(assign, cst.Assign)
        and len(assign.targets) == 1
        and isinstance(source, cst.Attribute)
        and isinstance(source.value, cst.Name)
        and source.value.value == "self"
        and source.deep_equals(assign.targets[0].target)
    ):
        return False
    values = self_attribute_values(a, source)
    return bool(values) and all(v is call or _in_init(a, v) for v in values or ())


def _in_init(a: ModuleAnalysis, node: cst.CSTNode) -> bool:
    fn = a.enclosing_function(node)
    return fn is not None and fn.name.value == "__init__"


# Tensor methods whose result is on the receiver's device (views, casts, copies in its memory).
_IN_PLACE_OF_MEMORY = frozenset({*CPU_KEEPING_METHODS, "expand", "expand_as", "repeat"})


def cpu_state_in_a_branch(a: ModuleAnalysis, expr: cst.BaseExpression) -> cst.BaseExpression | None:
    """For ``self.<attr>`` in a method that the class binds to an ``nn.Parameter`` in one branch
    and to a plain CPU tensor in another (VideoMAE's ``self.pos_embed``: learnable, or by
    default a fixed sinusoid table, which ``model.cuda()`` does not move): that CPU tensor's
    value. None where the attribute is registered, or every value is a parameter, or no value is
    provably a CPU tensor. Through indexing and the methods that keep a tensor where it is
    (``self.pos_embed.expand(b, -1, -1)``)."""
    while True:
        if isinstance(expr, cst.Subscript):
            expr = expr.value
        elif isinstance(expr, cst.Call) and isinstance(expr.func, cst.Attribute) and expr.func.attr.value in _IN_PLACE_OF_MEMORY:
            expr = expr.func.value
        else:
            break
    if not (isinstance(expr, cst.Attribute) and isinstance(expr.value, cst.Name) and expr.value.value == "self"):
        return None
    if _registered(a, expr):
        return None
    for value in self_attribute_values(a, expr) or ():
        held = a.value(value)
        if held.is_tensor and held.device is Device.CPU and not _makes_parameter(a, value):
            return value
    return None


def _makes_parameter(a: ModuleAnalysis, value: cst.BaseExpression) -> bool:
    return isinstance(value, cst.Call) and a.callee(value) in ("torch.nn.Parameter", "torch.nn.parameter.Parameter")


def _registered(a: ModuleAnalysis, expr: cst.Attribute) -> bool:
    """Does the class of ``self.<attr>`` register it as a buffer or parameter
    (``self.register_buffer("<attr>", ...)``)?"""
    return expr.attr.value in _registrations(a, expr)


def _registrations(a: ModuleAnalysis, expr: cst.Attribute) -> dict[str, tuple[cst.BaseExpression, ...]]:
    """The attributes the class of ``expr`` registers as buffers or parameters, each with the
    values registered (``self.register_buffer("queue", torch.randn(d, k))``)."""
    cls = next((anc for anc in a.ancestors(expr) if isinstance(anc, cst.ClassDef)), None)
    if cls is None:
        return {}
    names = a.cache.registered.get(cls)
    if names is None:
        found: dict[str, list[cst.BaseExpression]] = {}
        for call in a.nodes_within(cls.body, cst.Call):
            func = call.func  # type: ignore[attr-defined]
            args = call.args  # type: ignore[attr-defined]
            if (
                isinstance(func, cst.Attribute)
                and func.attr.value in ("register_buffer", "register_parameter")
                and isinstance(func.value, cst.Name)
                and func.value.value == "self"
                and args
                and isinstance(args[0].value, cst.SimpleString)
                and isinstance(name := args[0].value.evaluated_value, str)
            ):
                found.setdefault(name, []).extend(arg.value for arg in args[1:2] if arg.keyword is None)
        names = a.cache.registered[cls] = {n: tuple(v) for n, v in found.items()}
    return names


def self_attribute_values(a: ModuleAnalysis, expr: cst.Attribute) -> list[cst.BaseExpression] | None:
    """For ``self.<attr>`` in a method: every expression the class (with its subclasses here)
    assigns to it, class attributes included; None when something else may set it (another
    file, code outside the class, ``setattr``, a tuple or loop target) or nothing here does."""
    if not (isinstance(expr.value, cst.Name) and expr.value.value == "self"):
        return None
    cls = next((anc for anc in a.ancestors(expr) if isinstance(anc, cst.ClassDef)), None)
    if cls is None:
        return None
    attr = expr.attr.value
    imported = a.imported
    if imported is not None and (ALL in imported or cls.name.value in imported):
        # another project file imports the class: a subclass there may set it too, or code
        # there may store it on an instance; in a closed project the files say (members.py)
        members = a.project.members if a.project is not None and a.module_name is not None else None
        if (
            members is None
            or members.derived(cls.name.value, skip=a.module_name)
            or members.stored(attr, skip=a.module_name)
        ):
            return None
    # ``self`` may be an instance of a subclass of this module that sets the attribute too.
    classes = callgraph.with_subclasses(a, cls)
    if callgraph.attribute_set_elsewhere(a, attr, classes):
        return None  # ``trainer.device = ...`` outside the class: not only its methods set it
    if any(_project_base_may_set(a, c, attr) for c in classes):
        return None  # ``class Trainer(BaseTrainer)``: the base's methods may set it too
    bound = [v for c in classes for v in _self_assignments(a, c).get(attr, [])]
    if not bound or None in bound or any("\0setattr" in _self_assignments(a, c) for c in classes):
        return None  # never assigned here, assigned from a tuple or a loop, or ``setattr``
    return [v for v in bound if v is not None]


def likely_attribute_values(a: ModuleAnalysis, expr: cst.Attribute) -> list[cst.BaseExpression] | None:
    """:func:`self_attribute_values`, or where another file may set the attribute too (a
    subclass, code that imports the class), what this class's own methods assign: the likely
    view (a subclass elsewhere seldom rebinds ``self.dl``). For likely facts only."""
    proven = self_attribute_values(a, expr)
    if proven is not None or not (isinstance(expr.value, cst.Name) and expr.value.value == "self"):
        return proven
    cls = next((anc for anc in a.ancestors(expr) if isinstance(anc, cst.ClassDef)), None)
    own = _self_assignments(a, cls) if cls is not None else {}
    bound = own.get(expr.attr.value, [])
    if not bound or None in bound or "\0setattr" in own:
        return None
    return [v for v in bound if v is not None]


def _project_base_may_set(a: ModuleAnalysis, cls: cst.ClassDef, attr: str) -> bool:
    """Does ``cls`` derive (through classes of this module) from a class of another project
    file whose methods may store ``self.<attr>``? Unless the project is closed and no other
    file stores it on ``self``, they may."""
    for c in (cls, *callgraph.bases_here(a, cls)):
        for base in c.bases:
            if isinstance(base.value, cst.Name) and base.value.value in callgraph.module_classes(a):
                continue  # a class of this module: among those walked
            name = a.qualname(base.value) if callgraph.bound_by_import(a, base.value) else None
            if name is None or a.project is None or a.project.find(name, a.package) is None:
                continue  # a library's class (nn.Module...): as before, its own attributes only
            members = a.project.members if a.module_name is not None else None
            if members is None or members.self_stored(attr, skip=a.module_name):
                return True
    return False


def _self_assignments(a: ModuleAnalysis, cls: cst.ClassDef) -> dict[str, list[cst.BaseExpression | None]]:
    cache = a.cache.self_assignments
    if cls in cache:
        return cache[cls]
    found: dict[str, list[cst.BaseExpression | None]] = {}

    def record(target: cst.BaseExpression, value: cst.BaseExpression | None) -> None:
        if isinstance(target, cst.Attribute) and isinstance(target.value, cst.Name) and target.value.value == "self":
            found.setdefault(target.attr.value, []).append(value)
        elif isinstance(target, (cst.Tuple, cst.List)):
            for el in target.elements:  # ``self.a, self.b = ...``: unknown items
                record(el.value, None)

    # the statements that may store on ``self``, in source order, by the type index (no walk)
    kinds = (cst.Assign, cst.AnnAssign, cst.AugAssign, cst.For, cst.Call)
    nodes = [n for kind in kinds for n in a.nodes_within(cls.body, kind)]
    nodes.sort(key=a.structure.order.__getitem__)
    for node in nodes:
        if isinstance(node, cst.Assign):
            for t in node.targets:
                record(t.target, node.value)
        elif isinstance(node, (cst.AnnAssign, cst.AugAssign)):
            record(node.target, node.value)
        elif isinstance(node, cst.For):
            record(node.target, None)
        elif isinstance(node, cst.Call) and isinstance(node.func, cst.Name) and node.func.value == "setattr":
            found.setdefault("\0setattr", []).append(None)
    # Class attributes (``device = "cuda"`` in the class body) are what ``self.device`` reads
    # until an instance assignment shadows them: they join in.
    for stmt in cls.body.body if isinstance(cls.body, cst.IndentedBlock) else ():
        if isinstance(stmt, cst.SimpleStatementLine):
            for small in stmt.body:
                if isinstance(small, cst.Assign):
                    for t in small.targets:
                        if isinstance(t.target, cst.Name):
                            found.setdefault(t.target.value, []).append(small.value)
                elif isinstance(small, cst.AnnAssign) and isinstance(small.target, cst.Name) and small.value is not None:
                    found.setdefault(small.target.value, []).append(small.value)
    cache[cls] = found
    return found


def is_module_class(a: ModuleAnalysis, node: cst.BaseExpression) -> bool:
    """Is ``node`` (a callee) an ``nn.Module`` subclass or a torch.nn layer class?"""
    names = a.qualnames(node)
    if names and all(
        n.startswith("torch.nn.") and n.rsplit(".", 1)[-1][:1].isupper()
        and not n.startswith(("torch.nn.utils.", "torch.nn.functional.", "torch.nn.init."))
        for n in names
    ):
        return True
    if names and all(made_module(n) for n in names):
        return True  # ``models.vgg19(pretrained=True)``, ``timm.create_model(...)``
    # A class defined in this module that subclasses nn.Module (directly or through another).
    if isinstance(node, cst.Name):
        cls = _local_class(a, node.value) or _classmethod_class(a, node)
        if cls is not None:
            return class_is_module(a, cls)
    return _imported_module_class(a, node)


def _classmethod_class(a: ModuleAnalysis, name: cst.Name) -> cst.ClassDef | None:
    """The class whose ``@classmethod`` takes ``name`` as its first parameter (``cls``): a call
    of it makes an instance of that class or of a subclass (llm-awq's ``cls(...).cuda()``)."""
    fn = a.enclosing_function(name)
    params = fn.params.params if fn is not None else ()
    if fn is None or not params or params[0].name.value != name.value:
        return None
    if not any(isinstance(d.decorator, cst.Name) and d.decorator.value == "classmethod" for d in fn.decorators):
        return None
    if any(isinstance(asg, Assignment) and asg.node is not params[0] for asg in a.bindings(name)):
        return None  # ``cls`` rebound in the method
    block = a.parent(fn)
    owner = a.parent(block) if block is not None else None
    return owner if isinstance(owner, cst.ClassDef) else None


def made_module(name: str) -> bool:
    """Does calling ``name`` make an ``nn.Module``: a torchvision model builder or class
    (``torchvision.models.vgg19``, ``...detection.fasterrcnn_resnet50_fpn``; not a weights enum
    or ``list_models``), or ``timm.create_model``?"""
    if name in MODULE_FACTORIES:
        return True
    last = name.rsplit(".", 1)[-1]
    if name.startswith("torchaudio.transforms.") and last[:1].isupper():
        return True  # every torchaudio transform is an ``nn.Module`` (BigVGAN's ``Resample``)
    return (
        name.startswith("torchvision.models.")
        and not last.endswith("_Weights")
        and last not in TORCHVISION_NON_BUILDERS
        and not last.startswith("_")
        and ".feature_extraction." not in name
        and ".utils." not in name
    )


def _imported_module_class(a: ModuleAnalysis, node: cst.BaseExpression) -> bool:
    """A class of another project module, imported here, that subclasses nn.Module."""
    if a.project is None or not callgraph.bound_by_import(a, node):
        return False
    name = a.qualname(node)
    return name is not None and a.project.is_module_class(name, a.package)


def declared_forward(a: ModuleAnalysis, func: cst.BaseExpression) -> Value | None:
    """What ``self.<attr>(...)`` returns by its class's ``forward`` annotation, where the
    attribute holds only instances of one class of this module that declares a container:
    nanoVLM's ``-> Tuple[torch.Tensor, Tuple[int, int]]`` (its second item is no tensor), or
    ``-> dict``/``-> list`` (UNKNOWN). None where nothing says (a module call's output is then a
    tensor)."""
    if not isinstance(func, cst.Attribute):
        return None
    # what this class assigns, even where a subclass elsewhere might rebind it: the annotation
    # only narrows the tensor a module call is otherwise taken for
    values = likely_attribute_values(a, func)
    classes = {v.func.value for v in values or () if isinstance(v, cst.Call) and isinstance(v.func, cst.Name)}
    if not values or len(classes) != 1 or len(values) != sum(isinstance(v, cst.Call) for v in values):
        return None
    cls = _local_class(a, classes.pop())
    forward = next(
        (s for s in cls.body.body if isinstance(s, cst.FunctionDef) and s.name.value == "forward"), None
    ) if cls is not None and isinstance(cls.body, cst.IndentedBlock) else None
    if forward is None:
        return None
    if forward.returns is None:
        return _returned_sizes(a, forward)
    declared = annotation_value(a, forward.returns)
    if isinstance(declared, TupleValue):
        return declared
    ann = forward.returns.annotation
    name = a.qualname(ann.value if isinstance(ann, cst.Subscript) else ann)
    return UNKNOWN if name in _CONTAINERS else None


def _returned_sizes(a: ModuleAnalysis, forward: cst.FunctionDef) -> TupleValue | None:
    """A ``forward`` without annotation whose every ``return`` is a tuple display of one length,
    some item of which is a size in each (TimeSformer's ``return x, T, W`` with ``B, C, T, H, W
    = x.shape``): that item is no tensor (unknown: a size is an int only in the likely view),
    the others the module's output. None otherwise."""
    returns = callgraph.return_statements(a, forward)
    rows = [r.value.elements for r in returns or () if isinstance(r.value, cst.Tuple)]
    if not returns or len(rows) != len(returns) or len({len(row) for row in rows}) != 1:
        return None
    if any(not isinstance(el, cst.Element) for row in rows for el in row):
        return None
    sizes = [all(likely_size(a, row[i].value, follow=True) for row in rows) for i in range(len(rows[0]))]
    if not any(sizes):
        return None
    return TupleValue(tuple(UNKNOWN if size else Value(Kind.TENSOR) for size in sizes))


_CONTAINERS = {
    "builtins.dict", "typing.Dict", "builtins.list", "typing.List", "builtins.tuple", "typing.Tuple",
    "typing.Mapping", "collections.abc.Mapping", "typing.Sequence", "collections.abc.Sequence",
}


def _local_class(a: ModuleAnalysis, name: str) -> cst.ClassDef | None:
    return callgraph.module_classes(a).get(name)


def class_is_module(a: ModuleAnalysis, cls: cst.ClassDef, seen: set[str] | None = None) -> bool:
    """Does ``cls`` derive from nn.Module, through classes of this module or imported ones?"""
    seen = set() if seen is None else seen
    if cls.name.value in seen:
        return False
    seen.add(cls.name.value)
    for base in cls.bases:
        if a.qualnames(base.value) & MODULE_BASES:
            return True
        if isinstance(base.value, cst.Name):
            local = _local_class(a, base.value.value)
            if local is not None and class_is_module(a, local, seen):
                return True
        if _imported_module_class(a, base.value):
            return True
    return False


def attribute_set(a: ModuleAnalysis, name: str) -> bool:
    """Is ``.name`` stored or deleted on some object in this module (``x.name = v``, ``del
    x.name``, ``setattr`` with that name or a computed one), or, in a closed project, in another
    of its files?"""
    known = a.cache.attributes_set.get(name)
    if known is None:
        known = a.cache.attributes_set[name] = _attribute_set(a, name)
    return known


def is_store(a: ModuleAnalysis, node: cst.Attribute) -> bool:
    """Is ``x.name`` here a target (``x.name = v``, ``del x.name``, ``x.name += v``)?"""
    contexts = a.wrapper.resolve(ExpressionContextProvider)
    return contexts.get(node) in (ExpressionContext.STORE, ExpressionContext.DEL)


def attribute_set_reaching(a: ModuleAnalysis, name: str, computed_from: frozenset[str] | None) -> bool:
    """:func:`attribute_set` for an object no other file's code is handed: a ``setattr`` with a
    computed name in another file counts only in ``computed_from`` (the files that import this
    one, which may read the object off it); None there: in any file."""
    if _attribute_set_here(a, name):
        return True
    members = a.project.members if a.project is not None else None
    return members is not None and members.stored(name, computed_from=computed_from)


def _attribute_set(a: ModuleAnalysis, name: str) -> bool:
    return attribute_set_reaching(a, name, None)


def _attribute_set_here(a: ModuleAnalysis, name: str) -> bool:
    for node in a.structure.of_type(cst.Attribute):
        assert isinstance(node, cst.Attribute)
        if node.attr.value == name and is_store(a, node):
            return True
    for call in a.calls_named("setattr") + a.calls_named("delattr"):
        args = [arg.value for arg in call.args if arg.keyword is None]
        named = args[1] if len(args) > 1 else None
        if not (isinstance(named, cst.SimpleString) and named.raw_value != name):
            return True
    return False


def used_as_module(a: ModuleAnalysis, expr: cst.BaseExpression) -> bool:
    """Is ``expr`` a name on which its function (or module) also calls a method only an
    ``nn.Module`` has (``model.eval()``, ``model.parameters()``, ``m.cpu().parameters()``)?
    Then its ``.cuda()``/``.cpu()`` places a module and copies no tensor syncfix could fix."""
    if not isinstance(expr, cst.Name):
        return False
    scope = a.enclosing_function(expr) or a.module
    names = a.cache.module_names.get(scope)
    if names is None:
        names = a.cache.module_names[scope] = _module_names(a, scope)
    return expr.value in names


def _module_names(a: ModuleAnalysis, scope: cst.CSTNode) -> frozenset[str]:
    """The names on which code in ``scope`` calls a method only an ``nn.Module`` has."""
    found: set[str] = set()
    for call in a.structure.within(scope, cst.Call):
        assert isinstance(call, cst.Call)
        func = call.func
        if not (isinstance(func, cst.Attribute) and func.attr.value in MODULE_ONLY_METHODS):
            continue
        owner = func.value
        while (  # ``m.cpu().parameters()``: the module itself, placed
            isinstance(owner, cst.Call)
            and isinstance(owner.func, cst.Attribute)
            and owner.func.attr.value in PLACING_METHODS
        ):
            owner = owner.func.value
        if isinstance(owner, cst.Name):
            found.add(owner.value)
    return frozenset(found)
