"""Handlers that would see an error raised at a node: a ``try`` whose ``except`` may catch a
``RuntimeError``, or ``contextlib.suppress``/``pytest.raises``/``assertRaises`` of one, around the
node, around a call of its function in this file, or (a module-level function) around a call in
another project file that imports it; for a method, whose objects may be called anywhere
(``model(x)`` runs ``forward``), any such handler in its file (around a call of one of its
objects, where each object the file makes is a name only called) or in a project file that
imports it; also around (or inside) a call the function is handed to
(``run_with_retry(step, ...)``), and inside a decorator's wrapper (a decorator of this file whose
body catches, or a retrying library's). A library that calls a project function inside its own
``try`` is not seen, as other code that calls a public function is not. In a project file that
imports the function but whose calls of it syncfix cannot read one by one (it re-exports the
name, or uses its module as a value: ``lora.fit(...)``), any use of the name counts as a call.

A blocking copy or read raises a CUDA error (a bad device, an earlier kernel's fault, out of
memory) where it is written; a fix that stops waiting there lets the same error surface at some
later sync, outside the ``try`` written to catch it (a "can this GPU take data" health check).
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

import libcst as cst
from libcst.metadata import GlobalScope

from .ast_reading import NOT_RUNTIME_ERRORS as _NOT_RUNTIME_ERRORS
from .callgraph import attribute_refs, bound_by_import, local_function
from .project import ModuleFile
from .syntax import dotted_name

if TYPE_CHECKING:
    from .module import ModuleAnalysis


def caught_by_handler(
    analysis: ModuleAnalysis, node: cst.CSTNode, _seen: set[object] | None = None
) -> bool:
    """Is ``node`` in the body of a ``try`` whose handlers may catch a RuntimeError raised
    there, or of ``with contextlib.suppress(...)`` of such an error: in its function, or around
    a call of that function in this module (``try: g = helper()``), or, for a module-level
    function, in another project file that imports it, through callers of callers?"""
    child: cst.CSTNode = node
    for anc in analysis.ancestors(node):
        if isinstance(anc, cst.FunctionDef):
            seen = _seen if _seen is not None else set()
            if anc in seen:
                return False
            seen.add(anc)
            name = anc.name.value
            if _decorators_may_catch(analysis, anc):
                return True
            if any(caught_by_handler(analysis, call, seen) for call in analysis.calls_named(name)):
                return True
            if any(
                caught_by_handler(analysis, call, seen) or _calls_inside_a_try(analysis, call)
                for call in _handed_to(analysis, anc)
            ):
                return True
            if _method(analysis, anc) and _method_caught_elsewhere(analysis, anc, seen):
                return True
            return _caught_in_importers(analysis, anc, seen)
        if isinstance(anc, (cst.ClassDef, cst.Lambda)):
            return False
        if isinstance(anc, (cst.Try, cst.TryStar)) and child is anc.body:
            if any(_may_catch_runtime_error(analysis, h.type) for h in anc.handlers):
                return True
        if isinstance(anc, cst.With) and child is anc.body:
            for item in anc.items:
                call = item.item
                if isinstance(call, cst.Call) and _catching_context(analysis, call):
                    return True
        child = anc
    return False


# Library decorators known to call the function inside a ``try`` that may catch a RuntimeError
# (retrying ones). Other library decorators are taken to call it as it is (``torch.no_grad``,
# ``rank_zero_only``, ``click.command``...), as library code is taken not to call the project's
# functions inside such a ``try``.
_CATCHING_DECORATORS = ("tenacity.retry", "backoff.on_exception", "retrying.retry", "retry.retry")


def _decorators_may_catch(analysis: ModuleAnalysis, fn: cst.FunctionDef) -> bool:
    """May a decorator of ``fn`` call it inside a ``try`` that catches a RuntimeError: a function
    of this module with such a ``try`` (or ``contextlib.suppress``) in its body, or a retrying
    decorator of a library (:data:`_CATCHING_DECORATORS`)?"""
    for dec in fn.decorators:
        expr = dec.decorator.func if isinstance(dec.decorator, cst.Call) else dec.decorator
        local = local_function(analysis, expr)
        if local is not None:
            if _catches_inside(analysis, local):
                return True
        elif (analysis.qualname(expr) or "").startswith(_CATCHING_DECORATORS):
            return True
    return False


def _catches_inside(analysis: ModuleAnalysis, fn: cst.FunctionDef | cst.Module) -> bool:
    """Is there, anywhere in ``fn``'s body, a ``try`` or ``suppress`` that may catch a RuntimeError?"""
    structure = analysis.structure
    for t in (*structure.within(fn, cst.Try), *structure.within(fn, cst.TryStar)):
        if (
            isinstance(t, (cst.Try, cst.TryStar))
            and any(_may_catch_runtime_error(analysis, h.type) for h in t.handlers)
            and any(structure.within(t.body, kind) for kind in _RUNS_CODE)
        ):
            return True  # not DINO's ``try: x = args.x except: ...``, which runs nothing
    return any(isinstance(c, cst.Call) and _catching_context(analysis, c) for c in structure.within(fn, cst.Call))


# What a ``try`` body must hold to run code that could raise a copy's error.
_RUNS_CODE = (cst.Call, cst.For, cst.With, cst.Await, cst.Subscript, cst.CompFor, cst.Raise)


def _handed_to(analysis: ModuleAnalysis, fn: cst.FunctionDef) -> list[cst.Call]:
    """The calls ``fn`` is handed to as an argument in this module (``run(fn)``,
    ``checkpoint(self.m, x)``), which may call it: their handlers see its errors too. (Where it
    is stored or returned instead, its callers are out of sight, as a public function's are.)"""
    scope = analysis.scope(fn)
    if scope is None:
        return []
    name = fn.name.value
    block = analysis.parent(fn)
    owner = analysis.parent(block) if block is not None else None
    refs: list[cst.CSTNode]
    if isinstance(owner, cst.ClassDef):
        refs = [
            r for r in attribute_refs(analysis).get(name, ())
            if isinstance(r.value, cst.Name) and r.value.value in ("self", "cls")
        ]
    else:
        refs = [acc.node for asg in scope.assignments[name] if getattr(asg, "node", None) is fn for acc in asg.references]
    calls: list[cst.Call] = []
    for ref in refs:
        arg = analysis.parent(ref)
        call = analysis.parent(arg) if isinstance(arg, cst.Arg) else None
        if isinstance(call, cst.Call):
            calls.append(call)
    return calls


def _calls_inside_a_try(analysis: ModuleAnalysis, call: cst.Call) -> bool:
    """Is the function ``call`` hands ``fn`` to one of this module's, with such a ``try`` in
    its body (``run_with_retry(step, ...)``)?"""
    local = local_function(analysis, call.func)
    return local is not None and _catches_inside(analysis, local)


def _method(analysis: ModuleAnalysis, fn: cst.FunctionDef) -> bool:
    block = analysis.parent(fn)
    return isinstance(analysis.parent(block) if block is not None else None, cst.ClassDef)


_CALLED_BY_OBJECT = frozenset({"forward", "__call__"})  # run by ``model(x)``: no name to look for


def _method_caught_elsewhere(analysis: ModuleAnalysis, fn: cst.FunctionDef, seen: set[object]) -> bool:
    """May a handler see a method's errors from where its objects are called? For ``m``, a
    handler around an ``x.m(...)`` call in another file of a closed project (through callers of
    callers; in an open one, as for a public function, other code's calls are not seen); for
    ``forward`` (``model(x)``), a handler around a call of one of its objects in its file, where
    all are seen, else any handler there; and any in a project file that imports the class."""
    name = fn.name.value
    project, module = analysis.project, analysis.module_name
    if name in _CALLED_BY_OBJECT:
        block = analysis.parent(fn)
        cls = analysis.parent(block) if block is not None else None
        made = _object_calls(analysis, cls) if isinstance(cls, cst.ClassDef) else None
        if isinstance(cls, cst.ClassDef) and made is not None:  # this file's calls all seen; other files' as for any class
            sites, handed_out = made
            return any(caught_by_handler(analysis, call, seen) for call in sites) or (
                (handed_out or analysis.imported_elsewhere(cls.name.value)) and _importers_may_catch(analysis)
            )
        return _objects_may_be_called_in_a_try(analysis)
    if project is None or module is None or project.members is None or ("method", module, name) in seen:
        return False
    seen.add(("method", module, name))
    found = project.any_method_call(
        module, name, lambda other, call: caught_by_handler(other, call, seen), cannot_hold=_cannot_catch
    )
    return _objects_may_be_called_in_a_try(analysis) if found is None else found


def _object_calls(analysis: ModuleAnalysis, cls: cst.ClassDef) -> tuple[list[cst.Call], bool] | None:
    """Every call in this file of an object of ``cls`` (which runs ``forward``/``__call__``),
    where all of them can be seen: the class is used only to make objects, each bound to a name
    used only as a callee (deepvoice3's ``masked_l1 = MaskedL1Loss()`` ... ``masked_l1(y_hat, y, mask=mask)``)
    or called where it is made, or returned by a function no code of this file calls (DINO's
    ``build_dino``: its objects are called in the files that import it); with whether one is
    so handed out. Else None."""
    scope = analysis.scope(cls)
    if scope is None:
        return None
    bound = list(scope.assignments[cls.name.value])
    if len(bound) != 1 or getattr(bound[0], "node", None) is not cls:
        return None
    sites: list[cst.Call] = []
    handed_out = False
    for access in bound[0].references:
        made = analysis.parent(access.node)
        if isinstance(made, cst.Arg) and _names_super(analysis, made):
            continue  # ``super(MaskedL1Loss, self).__init__()``
        if not isinstance(made, cst.Call) or made.func is not access.node:
            return None  # a base of another class, handed on, stored: out of sight
        holder = analysis.parent(made)
        if isinstance(holder, cst.Call) and holder.func is made:
            sites.append(holder)  # ``MaskedL1Loss()(y_hat, y)``
            continue
        if not (isinstance(holder, cst.Assign) and len(holder.targets) == 1 and isinstance(holder.targets[0].target, cst.Name)):
            return None
        target = holder.targets[0].target
        where = analysis.scope(target)
        if where is None or isinstance(where, GlobalScope) and analysis.imported_elsewhere(target.value):
            return None
        for asg in where.assignments[target.value]:
            if getattr(asg, "node", None) is not target:
                continue
            for use in asg.references:
                call = analysis.parent(use.node)
                if _handed_out(analysis, use.node):
                    handed_out = True
                    continue
                if not isinstance(call, cst.Call) or call.func is not use.node:
                    return None
                sites.append(call)
    return sites, handed_out


def _handed_out(analysis: ModuleAnalysis, node: cst.CSTNode) -> bool:
    """Is ``node`` returned (alone or in a tuple) by a function that no code of this file calls?"""
    parent = analysis.parent(node)
    if isinstance(parent, cst.Element):
        parent = analysis.parent(analysis.parent(parent) or parent)
    fn = analysis.enclosing_function(node)
    return isinstance(parent, cst.Return) and fn is not None and not analysis.calls_named(fn.name.value)


def _names_super(analysis: ModuleAnalysis, arg: cst.Arg) -> bool:
    call = analysis.parent(arg)
    return isinstance(call, cst.Call) and isinstance(call.func, cst.Name) and call.func.value == "super"


def _objects_may_be_called_in_a_try(analysis: ModuleAnalysis) -> bool:
    """A method runs where its objects are called (``model(x)`` runs ``forward``; ``obj.step()``
    in any file): does this module, or a project module that imports it (directly or through
    others; judged from their text), hold a handler that may catch a RuntimeError? Then one of
    those calls may be inside its ``try`` (generative-inpainting's training loop, in a ``try``
    that logs and re-raises, runs every ``forward`` of the model)."""
    known = analysis.cache.objects_caught
    if known is None:
        known = analysis.cache.objects_caught = _catches_inside(analysis, analysis.module) or _importers_may_catch(analysis)
    return known


def _importers_may_catch(analysis: ModuleAnalysis) -> bool:
    """Does a project module that imports this one (directly or through others; judged from
    their text) hold a handler that may catch a RuntimeError?"""
    project, module = analysis.project, analysis.module_name
    file = project.own_file(module) if project is not None and module is not None else None
    importers = [project.own_file(name) for name in file.importers] if project is not None and file is not None else []
    return any(importer is None or importer.handlers_around for importer in importers)



def _caught_in_importers(analysis: ModuleAnalysis, fn: cst.FunctionDef, seen: set[object]) -> bool:
    """Does another project file call ``fn`` (a module-level function it imports) inside such a
    ``try``?"""
    project, module = analysis.project, analysis.module_name
    name = fn.name.value
    if project is None or module is None or analysis.parent(fn) is not analysis.module:
        return False
    if not analysis.imported_elsewhere(name):
        return False  # no other file imports it
    key = (module, name)
    if key in seen:
        return False
    known = project.handler_answers.get(key)
    if known is not None:
        return known
    # asked first for this function (``seen`` holds it alone): no cycle cut can weaken the answer
    outermost = len(seen) == 1
    seen.add(key)
    # a file that may reach it in ways syncfix cannot follow (a re-export, the module used as a
    # value: ``lora.fit(...)``): a handler around any use of its name there may see the error
    found = project.any_call(
        module, name, lambda other, call: caught_by_handler(other, call, seen),
        unread=lambda other: any(
            type(n) is cst.Name and n.value == name and caught_by_handler(other, n, seen)
            for n in other.structure.of_type(cst.Name)
        ),
        cannot_hold=_cannot_catch,
    )
    if found or outermost:  # a handler found is one; "none" only when nothing was cut short
        project.handler_answers[key] = found
    return found


# What a file that catches must hold: an ``except`` clause that names something other than
# :data:`_NOT_RUNTIME_ERRORS` (or nothing), or the name of a catching context manager or a
# retrying decorator (:data:`_CATCHING_DECORATORS`, ``_catching_context``). Read off the text,
# erring towards "may catch": a line of a string that starts with "except" counts too.
_EXCEPT_CLAUSE = re.compile(rb"^[ \t]*except\b[ \t]*\*?[ \t]*(\([^)]*\)|[^:\n]*)", re.M)
# as names in code: not a docstring's "Raises:" nor GradScaler's ``backoff_factor=`` (BiRefNet)
_CATCHING_WORDS = re.compile(
    rb"\bsuppress\s*\(|\braises\s*\(|assertRaises|@\s*[\w.]*\bretry\b|\bretry(_call)?\s*\(|\bbackoff\s*\."
)
_AS_NAME = re.compile(rb"\s+as\s+\w+\s*$")


def may_catch_text(data: bytes) -> bool:
    """May a handler in this source catch a RuntimeError (judged from its text)?"""
    if _CATCHING_WORDS.search(data):
        return True
    for clause in _EXCEPT_CLAUSE.finditer(data):
        kinds = _AS_NAME.sub(b"", clause.group(1).strip(b"() \t\r\n"))
        if not kinds.strip():
            return True  # a bare ``except:``
        for kind in kinds.split(b","):
            name = kind.strip().rsplit(b".", 1)[-1].decode("ascii", "replace")
            if name and name not in _NOT_RUNTIME_ERRORS:
                return True
    return False


def _cannot_catch(importer: ModuleFile) -> bool:
    """Can no handler in ``importer`` see an error from a call it makes, nor one in a file that
    imports it (directly or through others)? Then it need not be parsed for the question
    (the project index read every file's text: ``ModuleFile.handlers_around``)."""
    return not importer.handlers_around


# Context managers that catch what their body raises: ``contextlib.suppress(E)``,
# ``pytest.raises(E)``, ``self.assertRaises(E)`` (the error types first).
_CATCHING_CONTEXTS = ("contextlib.suppress", "pytest.raises")
_CATCHING_METHODS = {"assertRaises", "assertRaisesRegex"}


def _catching_context(analysis: ModuleAnalysis, call: cst.Call) -> bool:
    func = call.func
    method = isinstance(func, cst.Attribute) and func.attr.value in _CATCHING_METHODS
    if not (method or (analysis.callee(call) or "").endswith(_CATCHING_CONTEXTS)):
        return False
    kinds = [arg.value for arg in call.args if arg.keyword is None]
    if not kinds or any(arg.star for arg in call.args):
        return True
    # ``suppress(A, B)`` names every type; the others take one (a type or a tuple) first
    named = kinds if (analysis.callee(call) or "").endswith("contextlib.suppress") else kinds[:1]
    return any(_may_catch_runtime_error(analysis, kind) for kind in named)


def _may_catch_runtime_error(analysis: ModuleAnalysis, kind: cst.BaseExpression | None) -> bool:
    if kind is None:
        return True  # a bare ``except:``
    if isinstance(kind, cst.Tuple):
        return any(_may_catch_runtime_error(analysis, el.value) for el in kind.elements)
    name = dotted_name(kind)
    if name is not None and name.rsplit(".", 1)[-1] in _NOT_RUNTIME_ERRORS:
        return False
    return not _project_class(analysis, kind)


def _project_class(analysis: ModuleAnalysis, kind: cst.BaseExpression) -> bool:
    """Does ``kind`` name a class the project defines (``class DataExhausted(Exception)``), here
    or in a project module it imports from? Torch raises none of them: whatever its bases, an
    ``except`` of it catches no error of a copy (``except`` matches by the error's own class)."""
    if isinstance(kind, cst.Name):
        bindings = analysis.bindings(kind)
        if bindings and all(isinstance(getattr(asg, "node", None), cst.ClassDef) for asg in bindings):
            return True
    if analysis.project is None or not bound_by_import(analysis, kind):
        return False
    name = analysis.qualname(kind)
    return name is not None and analysis.project.is_class(name, analysis.package)


def handler_site(analysis: ModuleAnalysis, node: cst.CSTNode) -> str:
    """Where, in words, a handler that :func:`caught_by_handler` found for ``node`` may be: a
    ``try`` of its own function, one around a call of that function in this file, or one in
    another project file (named where the text of one file shows it)."""
    line = _local_handler_line(analysis, node)
    if line is not None:
        return f"the `try` at line {line}"
    fn = analysis.enclosing_function(node)
    if fn is None:
        return "a `try` around this code"
    for call in analysis.calls_named(fn.name.value):
        line = _local_handler_line(analysis, call)
        if line is not None:
            return f"the `try` at line {line}, around a call of `{fn.name.value}`"
    if _method(analysis, fn) and fn.name.value in _CALLED_BY_OBJECT:
        where = _importer_with_handlers(analysis)
        if where is not None:
            return f"a `try` in module `{where}`, which may call this class's objects"
        return "a `try` in this file, which may call this class's objects"
    return f"a `try` around a call of `{fn.name.value}`, or of what calls it, in this or another project file"


def _local_handler_line(analysis: ModuleAnalysis, node: cst.CSTNode) -> int | None:
    """The line of a ``try`` (or catching ``with``) of ``node``'s own function around it."""
    child: cst.CSTNode = node
    for anc in analysis.ancestors(node):
        if isinstance(anc, (cst.FunctionDef, cst.ClassDef, cst.Lambda)):
            return None
        if isinstance(anc, (cst.Try, cst.TryStar)) and child is anc.body:
            if any(_may_catch_runtime_error(analysis, h.type) for h in anc.handlers):
                return analysis.positions[anc].start.line
        if isinstance(anc, cst.With) and child is anc.body and any(
            isinstance(item.item, cst.Call) and _catching_context(analysis, item.item) for item in anc.items
        ):
            return analysis.positions[anc].start.line
        child = anc
    return None


def _importer_with_handlers(analysis: ModuleAnalysis) -> str | None:
    """A project module importing this one whose text holds a handler that may catch."""
    project, module = analysis.project, analysis.module_name
    file = project.own_file(module) if project is not None and module is not None else None
    if project is None or file is None:
        return None
    for name in sorted(file.importers):
        importer = project.own_file(name)
        if importer is not None and importer.handlers_around:
            return name
    return None
