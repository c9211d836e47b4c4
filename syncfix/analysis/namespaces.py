"""Attributes of a parsed command line handed on: ``args = parser.parse_args()`` (or ``args, _ =
parser.parse_known_args()``) in ``main``, then ``args.device = device`` and ``train(args,
...)``; in ``train``, ``x.to(args.device)``.

There ``args.device`` is the join of what the module stores to ``.device`` on that one
namespace, provided every way to the read passes one of those stores first (a read before them
would see what the parser put there, a string from the command line). It is not known where
another object may be the namespace (a store to ``.device`` on a name that is not provably it,
in this file or another one), where a computed ``setattr`` or ``vars(...)``/``__dict__`` may
write it, or where the function that reads it may be called from a file syncfix cannot read.
A library function the namespace is handed to is taken not to set it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import libcst as cst
from libcst.metadata import Assignment

from . import callgraph
from .members import NAMESPACE_ATTRS
from .values import Value, join_all

if TYPE_CHECKING:
    from .module import ModuleAnalysis

_DEPTH = 6  # how many calls a namespace is followed through


def namespace_attribute(a: ModuleAnalysis, expr: cst.Attribute) -> Value | None:
    """``args.device`` as the join of the stores to it on its namespace (see the module
    docstring), or None when that is not provable."""
    attr = expr.attr.value
    if attr not in NAMESPACE_ATTRS or not isinstance(expr.value, cst.Name):
        return None
    origin = _origin(a, expr.value, 0)
    if origin is None:
        return None
    stores = _stores(a, attr)
    if not stores or any(_origin(a, receiver, 0) is not origin for receiver, _ in stores):
        return None
    if not _after_store(a, expr.value, [receiver for receiver, _ in stores], 0):
        return None
    return join_all(a.value(value) for _, value in stores)


def _origin(a: ModuleAnalysis, name: cst.BaseExpression, depth: int) -> cst.Call | None:
    """The ``parse_args()`` call whose namespace ``name`` holds, through parameters of
    functions every call of which passes it."""
    if not isinstance(name, cst.Name) or depth > _DEPTH:
        return None
    bound = a.bindings(name)
    if len(bound) != 1:
        return None
    (asg,) = bound
    if not isinstance(asg, Assignment):
        return None
    node = asg.node
    if isinstance(node, cst.Param):
        passed = _passed(a, node)
        if not passed:
            return None
        found = {_origin(a, arg, depth + 1) for arg in passed}
        return found.pop() if len(found) == 1 else None
    if not isinstance(node, cst.Name):
        return None
    path, target = a.target_path(node)
    assign = a.parent(target) if isinstance(target, cst.AssignTarget) else None
    if not isinstance(assign, cst.Assign) or len(assign.targets) != 1 or not isinstance(assign.value, cst.Call):
        return None
    call = assign.value
    parser = call.func.attr.value if isinstance(call.func, cst.Attribute) else None
    if parser == "parse_args" and not path or parser == "parse_known_args" and path == [0]:
        return call
    handed_back = _handed_back(a, call, path)  # ``args, model = setup(args)``
    return _origin(a, handed_back, depth + 1) if handed_back is not None else None


def _handed_back(a: ModuleAnalysis, call: cst.Call, path: list[int]) -> cst.BaseExpression | None:
    """The argument a call of a function of this module returns as it is (at ``path`` of the
    tuple it returns), or None."""
    fn = callgraph.local_function(a, call.func)
    returns = callgraph.return_statements(a, fn) if fn is not None else None
    if fn is None or not returns or any(arg.star for arg in call.args):
        return None
    params: set[cst.Param] = set()
    for ret in returns:
        expr = ret.value
        for i in path:
            if not isinstance(expr, cst.Tuple) or i >= len(expr.elements):
                return None
            expr = expr.elements[i].value
        bound = a.bindings(expr) if isinstance(expr, cst.Name) else frozenset()
        asg = next(iter(bound)) if len(bound) == 1 else None
        if not isinstance(asg, Assignment) or not isinstance(asg.node, cst.Param):
            return None
        params.add(asg.node)
    param = params.pop() if len(params) == 1 else None
    if param is None or not any(p is param for p in fn.params.params):
        return None
    index = next(i for i, p in enumerate(fn.params.params) if p is param)
    return callgraph.argument(call, param.name.value, index, True)


def _passed(a: ModuleAnalysis, param: cst.Param) -> list[cst.BaseExpression] | None:
    """What every call of ``param``'s function passes for it: calls of this module only, none
    from another file, none leaving it to a default."""
    calls = _calls(a, param)
    if calls is None:
        return None
    passed = []
    for call, index, keyword_ok in calls:
        arg = callgraph.argument(call, param.name.value, index, keyword_ok)
        if arg is None:
            return None
        passed.append(arg)
    return passed


def _calls(a: ModuleAnalysis, param: cst.Param) -> list[tuple[cst.Call, int | None, bool]] | None:
    params = a.parent(param)
    fn = a.parent(params) if params is not None else None
    if not isinstance(params, cst.Parameters) or not isinstance(fn, cst.FunctionDef) or fn.asynchronous:
        return None
    index = next((i for i, p in enumerate(params.params) if p is param), None)
    if index is None or params.posonly_params:
        return None
    sites = callgraph.call_sites(a, fn)
    if sites.escapes is not None or sites.by_attribute:
        return None
    if sites.elsewhere:
        project, module = a.project, a.module_name
        if project is None or module is None or sites.name is None:
            return None
        if project.arguments(module, sites.name, index, param.name.value, True) != []:
            return None  # another file calls it (or may): its namespace is not this one
    if any(arg.star for call in sites.calls for arg in call.args):
        return None
    return [(call, index, True) for call in sites.calls] or None


def _stores(a: ModuleAnalysis, attr: str) -> list[tuple[cst.BaseExpression, cst.BaseExpression]] | None:
    """The receiver and value of every ``x.attr = value`` (or ``setattr(x, "attr", value)`` as a
    statement) of the module, or None where ``.attr`` may be written some other way (``+=``,
    ``del``, a tuple target, a computed ``setattr``, ``vars(x)``, another file)."""
    from .attributes import is_store  # attributes reads namespaces first

    found: list[tuple[cst.BaseExpression, cst.BaseExpression]] = []
    for node in a.structure.of_type(cst.Attribute):
        assert isinstance(node, cst.Attribute)
        if node.attr.value == "__dict__":
            return None
        if node.attr.value != attr or not is_store(a, node):
            continue
        target = a.parent(node)
        assign = a.parent(target) if isinstance(target, cst.AssignTarget) else None
        if not isinstance(assign, cst.Assign) or len(assign.targets) != 1:
            return None
        found.append((node.value, assign.value))
    for call in a.calls_named("setattr") + a.calls_named("delattr"):
        args = [arg.value for arg in call.args if arg.keyword is None]
        named = args[1] if len(args) in (2, 3) else None
        if not isinstance(named, cst.SimpleString):
            return None
        if named.evaluated_value != attr:
            continue
        setter = isinstance(call.func, cst.Name) and call.func.value == "setattr"
        if not setter or len(args) != 3 or not isinstance(a.parent(call), cst.Expr):
            return None
        found.append((args[0], args[2]))  # ``setattr(args, "device", torch.device(...))``
    if a.calls_named("vars"):
        return None
    members = a.project.members if a.project is not None else None
    if members is not None and members.stored(attr, skip=a.module_name):
        return None
    return found


def _after_store(a: ModuleAnalysis, name: cst.Name, stores: list[cst.BaseExpression], depth: int) -> bool:
    """Does every way to this use of ``name`` pass a store first: one in the same function
    body (a statement of the body itself, before the use's), or, for a parameter, one before
    every call of the function?"""
    if depth > _DEPTH:
        return False
    fn = a.enclosing_function(name)
    if fn is None:
        return False
    body = fn.body.body if isinstance(fn.body, cst.IndentedBlock) else ()
    here = _top_statement(a, name, fn)
    position = next((i for i, s in enumerate(body) if s is here), None)
    if position is not None:
        earlier = body[:position]
        for receiver in stores:
            top = a.statement_of(receiver)
            if any(s is top for s in earlier) and isinstance(receiver, cst.Name) and receiver.value == name.value:
                return True
    bound = a.bindings(name)
    if len(bound) != 1:
        return False
    (asg,) = bound
    if not isinstance(asg, Assignment) or not isinstance(asg.node, cst.Param):
        return False
    calls = _calls(a, asg.node)
    if calls is None:
        return False
    for call, index, keyword_ok in calls:
        arg = callgraph.argument(call, asg.node.name.value, index, keyword_ok)
        if not isinstance(arg, cst.Name) or not _after_store(a, arg, stores, depth + 1):
            return False
    return True


def _top_statement(a: ModuleAnalysis, node: cst.CSTNode, fn: cst.FunctionDef) -> cst.CSTNode | None:
    """The statement of ``fn``'s own body that holds ``node`` (None: in a nested function)."""
    cur: cst.CSTNode | None = node
    while cur is not None:
        parent = a.parent(cur)
        if parent is fn.body:
            return cur
        if isinstance(cur, (cst.FunctionDef, cst.Lambda, cst.ClassDef)) and cur is not fn:
            return None
        cur = parent
    return None
