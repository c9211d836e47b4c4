"""Where a rule must not move an error: a ``try`` whose handler would catch it.

A blocking copy raises a CUDA error (a bad device, an earlier kernel's fault, out of memory) at
the call; made non-blocking, the same error surfaces at some later sync, outside the ``try``
that was written to catch it (a "can this GPU take data" health check). So a call inside the
body of a ``try`` with a handler that may catch ``RuntimeError`` (torch's CUDA errors derive
from it) keeps its blocking form.
"""

from __future__ import annotations

import libcst as cst

from syncfix.analysis import ModuleAnalysis, dotted_name

# Handlers that cannot catch a RuntimeError (or its subclasses). Anything else may.
_NOT_RUNTIME_ERRORS = {
    "ArithmeticError", "AssertionError", "AttributeError", "BufferError", "EOFError",
    "FileNotFoundError", "FloatingPointError", "GeneratorExit", "ImportError", "IndexError",
    "KeyError", "KeyboardInterrupt", "LookupError", "ModuleNotFoundError", "NameError",
    "OSError", "IOError", "OverflowError", "StopAsyncIteration", "StopIteration", "SyntaxError",
    "SystemExit", "TypeError", "UnicodeDecodeError", "UnicodeEncodeError", "UnicodeError",
    "ValueError", "ZeroDivisionError", "PermissionError", "TimeoutError", "ConnectionError",
}


def caught_by_enclosing_try(analysis: ModuleAnalysis, node: cst.CSTNode) -> bool:
    """Is ``node`` in the body of a ``try`` (in its function) whose handlers may catch a
    RuntimeError raised there?"""
    child: cst.CSTNode = node
    for anc in analysis.ancestors(node):
        if isinstance(anc, (cst.FunctionDef, cst.ClassDef, cst.Lambda)):
            return False
        if isinstance(anc, (cst.Try, cst.TryStar)) and child is anc.body:
            if any(_may_catch_runtime_error(h.type) for h in anc.handlers):
                return True
        child = anc
    return False


def _may_catch_runtime_error(kind: cst.BaseExpression | None) -> bool:
    if kind is None:
        return True  # a bare ``except:``
    if isinstance(kind, cst.Tuple):
        return any(_may_catch_runtime_error(el.value) for el in kind.elements)
    name = dotted_name(kind)
    return name is None or name.rsplit(".", 1)[-1] not in _NOT_RUNTIME_ERRORS
