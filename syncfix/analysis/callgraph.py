"""Facts across functions of one module: a parameter's value from its call sites, a call's value
from the callee's returns.

**Call sites.** A function's call sites are the references LibCST's scope analysis records for its
name (one list per function, so the work is linear in the references, never a scan of every call
per use). A parameter's value is the join, over those calls, of the argument bound to it
(positional or keyword) or its default; a call that omits a parameter without a default raises
and binds nothing.

**Escaping functions.** Call sites are only the whole story when every caller is in sight. A
function *escapes*, and its parameters keep only what their annotations promise, when:

- it is a method other than one only ``self.m(...)`` calls of its class can reach (see
  :func:`_method_call_sites`: ``obj.m(...)`` calls are not resolved to a class here);
- its name is bound more than once in its scope, or used other than as the callee of a direct
  call (passed as a callback, stored, returned, ``spawn(f, ...)``), or called with ``*args`` /
  ``**kwargs``;
- it has a decorator other than the grad-mode ones (``torch.no_grad()``...), which keep the
  arguments as they are;
- it is a public (no leading underscore) module-level function of a module that is not a
  *script*. A script is a module with an ``if __name__ == "__main__":`` block (or named
  ``__main__.py``): its functions are taken to be called from the script alone. When the engine
  knows the project (project.py), a function another project file imports (by name, or the
  whole module) escapes whatever its name, unless the project is *closed* (nothing installs
  it): then its calls in the other files join the ones here (``CallSites.elsewhere``,
  imported.py). Without a project (a source given as text) a script's functions are assumed
  not imported.

**Crossing a call.** A pinned (or possibly pinned) tensor that crosses a call boundary loses its
*fresh* mark: the other side may refill it in place after the call (a caller's staging buffer),
which only a whole-program look could rule out. Pageable tensors, devices, modules and loaders
cross unchanged.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

import libcst as cst
from libcst.metadata import Assignment, ClassScope, GlobalScope, Scope

from .members import Members
from .project import ALL
from .values import OTHER, UNKNOWN, Kind, Memory, TupleValue, Value, join_all

if TYPE_CHECKING:
    from .module import ModuleAnalysis

#: Bases that call no method of a class deriving from them.
PLAIN_BASES = frozenset({"builtins.object", "abc.ABC"})

#: Decorators that call the function with the arguments they were given.
TRANSPARENT_DECORATORS = frozenset(
    {
        "torch.no_grad",
        "torch.inference_mode",
        "torch.enable_grad",
        "torch.autograd.no_grad",
        "torch.autograd.grad_mode.no_grad",
        "torch.autograd.grad_mode.inference_mode",
    }
)


@dataclass(frozen=True)
class CallSites:
    """Every direct call of one function, or why its callers are not all in sight."""

    calls: tuple[cst.Call, ...]
    escapes: str | None  # None: ``calls`` are all its callers (with ``elsewhere``'s)
    #: other files of a closed project may call it too: imported.py answers for those calls
    elsewhere: bool = False
    #: the name they call it by (a function's, or a class's for its ``__init__``)
    name: str | None = None
    #: called as ``obj.name(...)`` (a method), not by an imported name
    by_attribute: bool = False


def call_sites(a: ModuleAnalysis, fn: cst.FunctionDef) -> CallSites:
    """The direct calls of ``fn`` in this module (memoised per function)."""
    found = a.cache.call_sites.get(fn)
    if found is None:
        found = a.cache.call_sites[fn] = _call_sites(a, fn)
    return found


def _call_sites(a: ModuleAnalysis, fn: cst.FunctionDef) -> CallSites:
    scope = a.scope(fn)
    if scope is None:
        return CallSites((), "not in a scope")
    if not transparent_decorators(a, fn):
        return CallSites((), "decorated")
    if isinstance(scope, ClassScope):
        return _method_call_sites(a, fn)
    name = fn.name.value
    elsewhere = False
    if isinstance(scope, GlobalScope) and not _module_private(a, name):
        if a.project is None or not a.project.closed or a.module_name is None:
            return CallSites((), "public function of an importable module")
        elsewhere = True  # its other callers are the project's files
    return _direct_calls(a, scope, fn, name, elsewhere)


def _calls_seen(a: ModuleAnalysis, fn: cst.FunctionDef) -> tuple[cst.Call, ...]:
    """The calls of ``fn`` this module makes, whoever else may call it: ``self.m(...)`` in the
    class of a method, ``f(...)`` of a module-level function (none with ``*args``)."""
    name = fn.name.value
    block = a.parent(fn)
    cls = a.parent(block) if block is not None else None
    calls: list[cst.Call] = []
    if isinstance(cls, cst.ClassDef):
        for ref in attribute_refs(a).get(name, ()):
            call = a.parent(ref)
            owner = next((c for c in a.ancestors(ref) if isinstance(c, cst.ClassDef)), None)
            if isinstance(ref.value, cst.Name) and ref.value.value == "self" and owner is cls and (
                isinstance(call, cst.Call) and call.func is ref
            ):
                calls.append(call)
    elif block is a.module:
        scope = a.scope(fn)
        for asg in scope.assignments[name] if scope is not None else ():
            if isinstance(asg, Assignment) and asg.node is fn:
                for access in asg.references:
                    call = a.parent(access.node)
                    if isinstance(call, cst.Call) and call.func is access.node:
                        calls.append(call)
    return tuple(c for c in calls if not any(arg.star for arg in c.args))


def _method_call_sites(a: ModuleAnalysis, fn: cst.FunctionDef) -> CallSites:
    """The calls of a method ``m`` of a top-level class: every ``x.m(...)`` in the module (an
    object's class is not known where it is called, so every call of that name counts: more
    calls than the real ones only weaken the join), and in a closed project every such call in
    the project's other files too (analysis/members.py). ``__init__`` takes the calls of the
    class itself (:func:`_constructor_call_sites`). The callers are not all in sight, and the
    method escapes, when: the class derives from a class outside the project (whose code may
    call its methods: ``forward`` through ``nn.Module.__call__``) or another file derives from
    it; other code may import the class and the project is not closed; ``m`` is another dunder;
    another class here defines ``m`` too; or some ``.m`` is not the callee of a plain call
    (``hook = obj.m``, ``Cls.m(obj, ...)``, ``*args``, ``getattr``). (Library code calls no
    method of a class that does not derive from one of its classes, unless it is handed the
    object and duck-types it: taken not to happen, as for module-level functions.)"""
    block = a.parent(fn)
    cls = a.parent(block) if block is not None else None
    name = fn.name.value
    if not isinstance(cls, cst.ClassDef) or a.parent(cls) is not a.module:
        return CallSites((), "a method of a nested class")
    importable = not _module_private(a, cls.name.value)
    members = _members(a)
    if importable and members is None:
        return CallSites((), "a method of an importable class")
    if not _plain_class(a, cls, set()):
        return CallSites((), "a method of a class with a base from outside the project")
    if members is not None and members.derived(cls.name.value, skip=a.module_name):
        return CallSites((), "a method of a class another file derives from")
    if name == "__init__":
        return _constructor_call_sites(a, cls, importable)
    if name.startswith("__"):
        return CallSites((), "a dunder method")
    if _method_definitions(a).get(name, 0) != 1:
        return CallSites((), "several classes define the method")
    if _dynamic_attributes(a):
        return CallSites((), "the module uses getattr")
    if members is not None and members.escapes(name):
        return CallSites((), "used other than as a callee in some file of the project")
    classes = module_classes(a)
    calls: list[cst.Call] = []
    for ref in attribute_refs(a).get(name, ()):
        call = a.parent(ref)
        if not isinstance(call, cst.Call) or call.func is not ref:
            return CallSites((), "used other than as a callee")
        receiver = ref.value
        if isinstance(receiver, cst.Name) and (receiver.value in classes or receiver.value[:1].isupper()):
            return CallSites((), "called on a class (``Cls.m(obj, ...)``)")
        if any(arg.star for arg in call.args):
            return CallSites((), "called with *args or **kwargs")
        calls.append(call)
    calls.sort(key=lambda c: a.structure.order.get(c, -1))
    elsewhere = members is not None and any(m != a.module_name for m in members.callers(name))
    return CallSites(tuple(calls), None, elsewhere, name, by_attribute=True)


def _constructor_call_sites(a: ModuleAnalysis, cls: cst.ClassDef, importable: bool) -> CallSites:
    """The calls of the class, for its ``__init__``: ``Cls(...)`` here, and where other files
    import it, their calls (imported.py). Not all are in sight when the class has a subclass
    here (``super().__init__(...)``), defines ``__new__``, builds instances of itself another
    way (``cls(...)``, ``type(self)(...)``, ``self.__class__``), or its name is used other than
    as a callee (a factory table, ``functools.partial``)."""
    if len(with_subclasses(a, cls)) > 1:
        return CallSites((), "a class with subclasses")
    body = cls.body.body if isinstance(cls.body, cst.IndentedBlock) else ()
    if any(isinstance(s, cst.FunctionDef) and s.name.value == "__new__" for s in body):
        return CallSites((), "a class with __new__")
    if "__class__" in attribute_refs(a) or any(
        isinstance(c, cst.Call) and isinstance(c.func, cst.Name) and c.func.value in ("cls", "type")
        for c in a.structure.within(cls, cst.Call)
    ):
        return CallSites((), "a class that may build instances of itself")
    members = _members(a) if importable else None
    if members is not None and members.builds_by_type(skip=a.module_name):
        return CallSites((), "another file builds instances of a class it does not name (type(x)(...))")
    scope = a.scope(cls)
    if scope is None:
        return CallSites((), "not in a scope")
    return _direct_calls(a, scope, cls, cls.name.value, importable)


def _direct_calls(a: ModuleAnalysis, scope: Scope, node: cst.CSTNode, name: str, elsewhere: bool) -> CallSites:
    """The calls of ``name``, bound once in ``scope`` (by ``node``: a ``def`` or a ``class``),
    when every reference is the callee of a plain call."""
    assignments = list(scope.assignments[name])
    if len(assignments) != 1 or not isinstance(assignments[0], Assignment) or assignments[0].node is not node:
        return CallSites((), "name bound more than once")
    calls: list[cst.Call] = []
    for access in assignments[0].references:
        call = a.parent(access.node)
        if not isinstance(call, cst.Call) or call.func is not access.node:
            return CallSites((), "used other than as a callee")
        if any(arg.star for arg in call.args):
            return CallSites((), "called with *args or **kwargs")
        calls.append(call)
    calls.sort(key=lambda c: a.structure.order.get(c, -1))
    return CallSites(tuple(calls), None, elsewhere, name)


def _members(a: ModuleAnalysis) -> Members | None:
    """The project's use of attribute names, where every file is in sight (a closed project)."""
    if a.project is None or a.module_name is None:
        return None
    return a.project.members


def _plain_class(a: ModuleAnalysis, cls: cst.ClassDef, seen: set[str]) -> bool:
    """Does nothing outside the project define behaviour of ``cls``: no decorator, no keyword
    but an ABC metaclass, and bases among ``object``, ``ABC`` and such classes of this module?"""
    if cls.name.value in seen or cls.decorators:
        return False
    seen.add(cls.name.value)
    for kw in cls.keywords:
        if kw.keyword is None or kw.keyword.value != "metaclass" or a.qualname(kw.value) != "abc.ABCMeta":
            return False
    for base in cls.bases:
        if base.star or base.keyword is not None:
            return False
        if a.qualname(base.value) in PLAIN_BASES:
            continue
        local = module_classes(a).get(base.value.value) if isinstance(base.value, cst.Name) else None
        if local is None or not _plain_class(a, local, seen):
            return False
    return True


def attribute_refs(a: ModuleAnalysis) -> dict[str, list[cst.Attribute]]:
    """Every ``x.name`` in the module by ``name`` (one walk per module)."""
    if a.cache.attribute_refs is None:
        refs: dict[str, list[cst.Attribute]] = {}
        methods: dict[str, int] = {}
        defs: dict[str, cst.FunctionDef] = {}
        dynamic = [False]

        for node in a.structure.of_type(cst.Attribute, cst.ClassDef, cst.Call):
            if isinstance(node, cst.Attribute):
                refs.setdefault(node.attr.value, []).append(node)
            elif isinstance(node, cst.ClassDef):
                for stmt in node.body.body if isinstance(node.body, cst.IndentedBlock) else ():
                    if isinstance(stmt, cst.FunctionDef):
                        methods[stmt.name.value] = methods.get(stmt.name.value, 0) + 1
                        defs[stmt.name.value] = stmt
            elif isinstance(node, cst.Call) and isinstance(node.func, cst.Name):
                if node.func.value in ("getattr", "vars"):
                    dynamic[0] = True
                if node.func.value == "setattr":
                    refs.setdefault("\0setattr", [])
        a.cache.attribute_refs = refs
        a.cache.method_definitions = methods
        a.cache.method_defs = {name: fn for name, fn in defs.items() if methods[name] == 1}
        a.cache.dynamic_attributes = dynamic[0]
    return a.cache.attribute_refs


def attribute_set_elsewhere(a: ModuleAnalysis, attr: str, family: list[cst.ClassDef]) -> bool:
    """Is ``x.attr`` assigned anywhere in the module other than as ``self.attr`` in a method of
    ``family`` or of an unrelated class (``trainer.loader = ...``; ``self.attr = ...`` in a base
    class of the family), or is there a ``setattr`` call?"""
    refs = attribute_refs(a)
    if "\0setattr" in refs:
        return True
    for ref in refs.get(attr, ()):
        child: cst.CSTNode = ref
        parent = a.parent(ref)
        while isinstance(parent, (cst.Element, cst.StarredElement, cst.Tuple, cst.List)):
            child, parent = parent, a.parent(parent)  # ``a, obj.x = ...``: up to the target
        stored = (
            isinstance(parent, (cst.AssignTarget, cst.AsName, cst.Del))
            or isinstance(parent, (cst.AugAssign, cst.AnnAssign, cst.For, cst.CompFor)) and parent.target is child
        )
        if not stored:
            continue
        owner = next((c for c in a.ancestors(ref) if isinstance(c, cst.ClassDef)), None)
        on_self = isinstance(ref.value, cst.Name) and ref.value.value == "self"
        if not on_self or owner is None or owner not in family and _is_base_of(a, owner, family):
            return True  # through another object, or by a base class's method on self
    return False


def _is_base_of(a: ModuleAnalysis, owner: cst.ClassDef, family: list[cst.ClassDef]) -> bool:
    """Does some class of ``family`` derive from ``owner`` (through this module's classes)?"""
    return any(owner in bases_here(a, c) for c in family)


def bases_here(a: ModuleAnalysis, cls: cst.ClassDef, seen: set[str] | None = None) -> list[cst.ClassDef]:
    """The classes of this module ``cls`` derives from, directly or through each other."""
    seen = {cls.name.value} if seen is None else seen
    found: list[cst.ClassDef] = []
    for base in cls.bases:
        local = module_classes(a).get(base.value.value) if isinstance(base.value, cst.Name) else None
        if local is not None and local.name.value not in seen:
            seen.add(local.name.value)
            found += [local, *bases_here(a, local, seen)]
    return found


def _method_definitions(a: ModuleAnalysis) -> dict[str, int]:
    attribute_refs(a)
    assert a.cache.method_definitions is not None
    return a.cache.method_definitions


def _dynamic_attributes(a: ModuleAnalysis) -> bool:
    attribute_refs(a)
    return bool(a.cache.dynamic_attributes)


def module_classes(a: ModuleAnalysis) -> dict[str, cst.ClassDef]:
    """The module's top-level classes by name."""
    if a.cache.classes is None:
        a.cache.classes = {
            stmt.name.value: stmt for stmt in a.module.body if isinstance(stmt, cst.ClassDef)
        }
    return a.cache.classes


def with_subclasses(a: ModuleAnalysis, cls: cst.ClassDef) -> list[cst.ClassDef]:
    """``cls`` and the classes of this module that derive from it (by name, transitively)."""
    cached = a.cache.subclasses.get(cls)
    if cached is not None:
        return cached
    found = [cls]
    names = {cls.name.value}
    grew = True
    while grew:
        grew = False
        for other in module_classes(a).values():
            if other not in found and any(
                isinstance(b.value, cst.Name) and b.value.value in names for b in other.bases
            ):
                found.append(other)
                names.add(other.name.value)
                grew = True
    a.cache.subclasses[cls] = found
    return found


def _module_private(a: ModuleAnalysis, name: str) -> bool:
    """Can only this module call its module-level function ``name``?"""
    imported = a.imported
    if imported is not None and (ALL in imported or name in imported):
        return False
    return name.startswith("_") or a.is_script


def transparent_decorators(a: ModuleAnalysis, fn: cst.FunctionDef) -> bool:
    for dec in fn.decorators:
        expr = dec.decorator
        if isinstance(expr, cst.Call):
            if expr.args:
                return False
            expr = expr.func
        if a.qualname(expr) not in TRANSPARENT_DECORATORS:
            return False
    return True


def across(v: Value) -> Value:
    """``v`` as seen on the other side of a call (see the module docstring)."""
    if isinstance(v, TupleValue):
        return TupleValue(tuple(across(item) for item in v.items))
    if v.is_tensor and v.fresh and v.memory is not Memory.PAGEABLE:
        return replace(v, fresh=False)
    return v


def param_value(a: ModuleAnalysis, param: cst.Param) -> Value | None:
    """The join of what the call sites bind to ``param`` (in other files of a closed project
    too), or None when the function escapes, is never called, or ``param`` is ``*args``/``**kwargs``."""
    values = param_values(a, param)
    return join_all(values) if values else None


def param_values(a: ModuleAnalysis, param: cst.Param) -> list[Value] | None:
    """What each call site binds to ``param`` (:func:`param_value` before the join)."""
    slot = _slot(a, param)
    if slot is None:
        return None
    fn, index, keyword_ok = slot
    sites = call_sites(a, fn)
    if sites.escapes is not None:
        return None
    passed = _passed(sites.calls, param, index, keyword_ok)
    values = [across(a.value(expr)) for expr in passed]
    if sites.elsewhere:
        assert a.project is not None and a.module_name is not None and sites.name is not None  # elsewhere needs them
        ask = a.project.method_arguments if sites.by_attribute else a.project.arguments
        others = ask(a.module_name, sites.name, index, param.name.value, keyword_ok)
        if others is None:
            return None
        for v in others:
            if v is None:  # the call leaves it to the default (none: the call raises)
                if param.default is not None:
                    values.append(across(a.value(param.default)))
            else:
                values.append(across(v))
    return values


def _slot(a: ModuleAnalysis, param: cst.Param) -> tuple[cst.FunctionDef, int | None, bool] | None:
    """``param``'s function, its position among the positional parameters (None: keyword-only)
    and whether a keyword may pass it; None for ``self``, ``*args`` and ``**kwargs``."""
    params = a.parent(param)
    fn = a.parent(params) if params is not None else None
    if not isinstance(params, cst.Parameters) or not isinstance(fn, cst.FunctionDef):
        return None
    positional = [*params.posonly_params, *params.params]
    if isinstance(a.scope(fn), ClassScope):
        if not positional or positional[0] is param:
            return None  # ``self``
        positional = positional[1:]
    index = next((i for i, p in enumerate(positional) if p is param), None)
    keyword_ok = index is None or index >= len(params.posonly_params)
    if index is None and not any(p is param for p in params.kwonly_params):
        return None  # *args / **kwargs
    return fn, index, keyword_ok


def _passed(calls: Sequence[cst.Call], param: cst.Param, index: int | None, keyword_ok: bool) -> list[cst.BaseExpression]:
    passed: list[cst.BaseExpression] = []
    for call in calls:
        expr = argument(call, param.name.value, index, keyword_ok)
        if expr is None:
            expr = param.default
        if expr is not None:
            passed.append(expr)
    return passed


def param_arguments(
    a: ModuleAnalysis, param: cst.Param, *, likely: bool = False
) -> list[cst.BaseExpression] | None:
    """What the call sites of this module bind to ``param`` (an argument or the default), or
    None when the function escapes, other files call it too, is never called here, or
    ``param`` is ``*args``/``**kwargs``. With ``likely`` (for likely facts only), a function
    that escapes answers with the calls this module makes of it (``self.m(...)`` in its class,
    ``f(...)`` by name), taken to be typical."""
    slot = _slot(a, param)
    if slot is None:
        return None
    fn, index, keyword_ok = slot
    sites = call_sites(a, fn)
    if sites.escapes is None and (not sites.elsewhere or likely):
        calls = sites.calls
    else:
        calls = _calls_seen(a, fn) if likely else ()
    return _passed(calls, param, index, keyword_ok) or None


def argument(call: cst.Call, name: str, index: int | None, keyword_ok: bool) -> cst.BaseExpression | None:
    positional = [arg for arg in call.args if arg.keyword is None]
    if index is not None and index < len(positional):
        return positional[index].value
    if keyword_ok:
        for arg in call.args:
            if arg.keyword is not None and arg.keyword.value == name:
                return arg.value
    return None


def local_function(a: ModuleAnalysis, func: cst.BaseExpression) -> cst.FunctionDef | None:
    """The one function of this module a plain-name callee ``func`` refers to, or the method a
    ``self.m`` callee refers to when only ``self.m(...)`` calls reach it (no override, no base)."""
    if isinstance(func, cst.Attribute) and isinstance(func.value, cst.Name) and func.value.value == "self":
        attribute_refs(a)
        method = (a.cache.method_defs or {}).get(func.attr.value)
        if method is not None and call_sites(a, method).escapes is None:
            return method
        return None
    if not isinstance(func, cst.Name):
        return None
    bindings = a.bindings(func)
    if len(bindings) != 1:
        return None
    asg = next(iter(bindings))
    node = asg.node if isinstance(asg, Assignment) else None
    if not isinstance(node, cst.FunctionDef) or isinstance(a.scope(node), ClassScope):
        return None
    return node


def return_value(a: ModuleAnalysis, fn: cst.FunctionDef) -> Value:
    """What calling ``fn`` gives: the join of its ``return`` values (None where it may fall off
    its end); a generator or coroutine is no tensor; unknown under a decorator that may wrap it."""
    if not transparent_decorators(a, fn):
        return UNKNOWN
    if fn.asynchronous is not None:
        return OTHER
    returns = return_statements(a, fn)
    if returns is None:
        return _generated(a, fn)
    values = [OTHER if r.value is None else _return_item(a, r.value) for r in returns]
    if not _always_exits(fn.body.body if isinstance(fn.body, cst.IndentedBlock) else ()):
        values.append(OTHER)
    if len(values) == 1:
        return across(values[0])
    return across(join_all(values))


def _generated(a: ModuleAnalysis, fn: cst.FunctionDef) -> Value:
    """What calling a generator function gives: a loader where it only passes on loaders'
    batches (``while True: yield from loader``, or ``for data in loader: yield data`` with
    nothing else in that loop, which could write a batch once its consumer has it), iterated
    like one; otherwise no tensor."""
    yields = [y for y in a.structure.within(fn, cst.Yield) if isinstance(y, cst.Yield) and _own(a, y, fn)]
    sources = [source for y in yields if (source := _passed_on(a, y)) is not None]
    if not yields or len(sources) != len(yields):
        return OTHER
    values = [a.value(item) for item in sources]
    if all(v.kind in (Kind.LOADER, Kind.BOTTOM) for v in values):
        return join_all(values)
    return OTHER


def _passed_on(a: ModuleAnalysis, y: cst.Yield) -> cst.BaseExpression | None:
    """What ``y`` passes on whole: ``X`` of ``yield from X``, or of ``for data in X: yield
    data`` where the yield is the loop's only statement."""
    if isinstance(y.value, cst.From):
        return y.value.item
    if not isinstance(y.value, cst.Name):
        return None
    expr = a.parent(y)
    line = a.parent(expr) if isinstance(expr, cst.Expr) else None  # Yield -> Expr -> line
    block = a.parent(line) if isinstance(line, cst.SimpleStatementLine) and len(line.body) == 1 else None
    loop = a.parent(block) if isinstance(block, cst.IndentedBlock) and len(block.body) == 1 else None
    if not (
        isinstance(loop, cst.For)
        and loop.orelse is None
        and isinstance(loop.target, cst.Name)
        and loop.target.value == y.value.value
    ):
        return None
    return loop.iter


def _own(a: ModuleAnalysis, node: cst.CSTNode, fn: cst.FunctionDef) -> bool:
    """Is ``node`` in ``fn``'s own body (not in a function, lambda or class nested in it)?"""
    for up in a.ancestors(node):
        if up is fn:
            return True
        if isinstance(up, (cst.FunctionDef, cst.Lambda, cst.ClassDef)):
            return False
    return False


def _return_item(a: ModuleAnalysis, expr: cst.BaseExpression) -> Value:
    if isinstance(expr, cst.Tuple) and all(isinstance(el, cst.Element) for el in expr.elements):
        return TupleValue(tuple(a.value(el.value) for el in expr.elements))
    return a.value(expr)


def return_statements(a: ModuleAnalysis, fn: cst.FunctionDef) -> list[cst.Return] | None:
    """The ``return`` statements of ``fn`` itself (not of nested functions), or None when it
    yields (memoised)."""
    cached = a.cache.returns.get(fn)
    if cached is not None or fn in a.cache.returns:
        return cached
    found: list[cst.Return] = []
    generator = False

    class Visitor(cst.CSTVisitor):
        def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
            return node is fn

        def visit_Lambda(self, node: cst.Lambda) -> bool:
            return False

        def visit_ClassDef(self, node: cst.ClassDef) -> bool:
            return False

        def visit_Return(self, node: cst.Return) -> None:
            found.append(node)

        def visit_Yield(self, node: cst.Yield) -> None:
            nonlocal generator
            generator = True

    a.walk(fn, Visitor())
    result = None if generator else found
    a.cache.returns[fn] = result
    return result


def _always_exits(body: object, *, raising: bool = True) -> bool:
    """Does a block provably end in ``return``/``raise`` on every path (so it never falls off)?
    Under ``with`` only a ``return`` counts: the context manager may swallow what is raised."""
    if not isinstance(body, (list, tuple)) or not body:
        return False
    last = body[-1]
    exits = (cst.Return, cst.Raise) if raising else (cst.Return,)
    if isinstance(last, cst.SimpleStatementLine):
        return any(isinstance(s, exits) for s in last.body)
    if isinstance(last, cst.If):
        orelse = last.orelse
        if orelse is None:
            return False
        rest = [orelse] if isinstance(orelse, cst.If) else list(orelse.body.body) if isinstance(orelse.body, cst.IndentedBlock) else []
        return _block_exits(last.body, raising) and _always_exits(rest, raising=raising)
    if isinstance(last, cst.With):
        return _block_exits(last.body, False)
    return False


def _block_exits(block: cst.BaseSuite, raising: bool) -> bool:
    return isinstance(block, cst.IndentedBlock) and _always_exits(list(block.body), raising=raising)


def call_value(a: ModuleAnalysis, call: cst.Call) -> Value | None:
    """The value of a call of a function of this module or of one imported from another module
    of the project (analysis/imported.py), or None when the callee is neither."""
    fn = local_function(a, call.func)
    if fn is None:
        return imported_call_value(a, call.func)
    return returned(a, fn)


def returned(a: ModuleAnalysis, fn: cst.FunctionDef) -> Value:
    return a.solver.get("returns", fn, lambda f: return_value(a, f), Value(Kind.BOTTOM), UNKNOWN)


def _imported_names(a: ModuleAnalysis) -> frozenset[str]:
    """The names some import of this module binds (a cheap test before scopes are asked)."""
    if a.cache.imported_names is None:
        names: set[str] = set()
        for node in a.structure.of_type(cst.Import, cst.ImportFrom):
            aliases = node.names  # type: ignore[attr-defined]
            if isinstance(aliases, cst.ImportStar):
                continue
            for alias in aliases:
                if alias.asname is not None and isinstance(alias.asname.name, cst.Name):
                    names.add(alias.asname.name.value)
                else:
                    first = alias.name
                    while isinstance(first, cst.Attribute):
                        first = first.value
                    names.add(first.value)
        a.cache.imported_names = frozenset(names)
    return a.cache.imported_names


def bound_by_import(a: ModuleAnalysis, expr: cst.BaseExpression) -> bool:
    """Is ``expr`` (``f``, ``mod.f``) rooted in a name that only an import binds here (a
    star import of a project module included)?"""
    root = expr
    while isinstance(root, cst.Attribute):
        root = root.value
    if isinstance(root, cst.Name) and root.value in a.star_aliases and not a.bindings(root):
        return True  # bound by nothing here but ``from models import *`` of a project module
    if not isinstance(root, cst.Name) or root.value not in _imported_names(a):
        return False  # ``make().f``, a local: no import behind it
    bound = a.bindings(root)
    return len(bound) == 1 and isinstance(getattr(next(iter(bound)), "node", None), (cst.Import, cst.ImportFrom))


def imported_call_value(a: ModuleAnalysis, func: cst.BaseExpression) -> Value | None:
    """For ``f(...)``/``mod.f(...)`` where ``f`` or ``mod`` is bound only by an import of a
    project module: what the function returns there; None otherwise."""
    if a.project is None or not bound_by_import(a, func):
        return None
    name = a.qualname(func)
    return a.project.return_value(name, a.package) if name is not None else None
