"""Handlers that would see an error raised at a node: a ``try`` whose ``except`` may catch a
``RuntimeError``, or ``contextlib.suppress``/``pytest.raises``/``assertRaises`` of one, around the
node, around a call of its function in this file, or (a module-level function) around a call in
another project file that imports it.

A blocking copy or read raises a CUDA error (a bad device, an earlier kernel's fault, out of
memory) where it is written; a fix that stops waiting there lets the same error surface at some
later sync, outside the ``try`` written to catch it (a "can this GPU take data" health check).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import libcst as cst

from .syntax import dotted_name

if TYPE_CHECKING:
    from .module import ModuleAnalysis

# Handlers that cannot catch a RuntimeError (or its subclasses). Anything else may.
_NOT_RUNTIME_ERRORS = {
    "ArithmeticError", "AssertionError", "AttributeError", "BufferError", "EOFError",
    "FileNotFoundError", "FloatingPointError", "GeneratorExit", "ImportError", "IndexError",
    "KeyError", "KeyboardInterrupt", "LookupError", "ModuleNotFoundError", "NameError",
    "OSError", "IOError", "OverflowError", "StopAsyncIteration", "StopIteration", "SyntaxError",
    "SystemExit", "TypeError", "UnicodeDecodeError", "UnicodeEncodeError", "UnicodeError",
    "ValueError", "ZeroDivisionError", "PermissionError", "TimeoutError", "ConnectionError",
}


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
            if any(caught_by_handler(analysis, call, seen) for call in analysis.calls_named(name)):
                return True
            return _caught_in_importers(analysis, anc, seen)
        if isinstance(anc, (cst.ClassDef, cst.Lambda)):
            return False
        if isinstance(anc, (cst.Try, cst.TryStar)) and child is anc.body:
            if any(_may_catch_runtime_error(h.type) for h in anc.handlers):
                return True
        if isinstance(anc, cst.With) and child is anc.body:
            for item in anc.items:
                call = item.item
                if isinstance(call, cst.Call) and _catching_context(analysis, call):
                    return True
        child = anc
    return False


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
    seen.add(key)
    return project.any_call(module, name, lambda other, call: caught_by_handler(other, call, seen))


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
    return any(_may_catch_runtime_error(kind) for kind in named)


def _may_catch_runtime_error(kind: cst.BaseExpression | None) -> bool:
    if kind is None:
        return True  # a bare ``except:``
    if isinstance(kind, cst.Tuple):
        return any(_may_catch_runtime_error(el.value) for el in kind.elements)
    name = dotted_name(kind)
    return name is None or name.rsplit(".", 1)[-1] not in _NOT_RUNTIME_ERRORS
