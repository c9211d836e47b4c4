"""Bindings: which definitions of a name reach a use. One entry per question:

- *Which bindings may reach this use?* :func:`bindings` gives LibCST's assignments: those before
  the use in its scope, plus loop-carried ones (later in a loop around the use, see
  :func:`carrying_loops`); where no loop carries any, less those in the other branch of an
  ``if`` around the use. :func:`reaching_values` gives their expressions in source order (the
  ``AugAssign`` node itself for ``n op= e``), or None when one is not a plain assignment. Value,
  dtype, grad and Python-number facts of a name join or agree over these.
- *Which right-hand sides hold here in straight-line code?* :func:`binding_values`: the nearest
  preceding binding in this block or an enclosing one decides (``a, b = e1, e2`` included, and
  the last one in the body of a ``with torch.no_grad():``-like block that never swallows an
  error); it gives up (None) where a loop, walrus, ``with``, ``try`` or parameter may bind the name, and past
  the function's start uses every binding in the scope. The scalar facts (SFX3xx/4xx: dtype kind,
  one-element shape, device origin) are built on it, through :func:`fact_of_name`.
- *Which single ``name = expr`` provably still holds, with its inputs unchanged?*
  :func:`straight_line_binding`: a shape key may then be the key of ``expr``.
- *Is the name bound once in its scope?* :func:`bound_once`. *Only by ``for name in range()``?*
  :func:`is_range_counter`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, TypeVar

import libcst as cst
from libcst.metadata import Assignment, ComprehensionScope, FunctionScope, GlobalScope, Scope
from libcst.metadata.scope_provider import Access, BaseAssignment, QualifiedName

from .syntax import parallel_element, stored_names, target_names
from .torch_api import NON_SUPPRESSING_CONTEXTS

if TYPE_CHECKING:
    from .module import ModuleAnalysis

F = TypeVar("F")


def _accesses_of(a: ModuleAnalysis) -> dict[cst.CSTNode, list[Access]]:
    """Each name node's scope accesses (LibCST answers per name string, not per node)."""
    if a.cache.accesses is not None:
        return a.cache.accesses
    out: dict[cst.CSTNode, list[Access]] = {}
    for scope in {s for s in a.scopes.values() if s is not None}:
        for acc in scope.accesses:
            out.setdefault(acc.node, []).append(acc)
    a.cache.accesses = out
    return out


def bindings(a: ModuleAnalysis, name: cst.Name) -> frozenset[BaseAssignment]:
    """The scope bindings (LibCST assignments) that may reach this use of ``name``: those
    before it in its scope, and loop-carried ones (later in a loop around the use)."""
    scope = a.scope(name)
    if scope is None:
        return frozenset()
    found: set[BaseAssignment] = set()
    for acc in _accesses_of(a).get(name, ()):
        found.update(acc.referents)
    scope = _eager_outer(a, scope, name, found)
    aug = a.parent(name)
    if isinstance(aug, cst.AugAssign) and aug.target is name and not found:
        # ``x += v`` reads ``x`` but LibCST records no access there: the bindings before it
        order = a.structure.order.get(aug, -1)
        found = {
            asg for asg in scope.assignments[name.value]
            if not _within(a, asg, aug) and assignment_order(a, asg) < order
        }
    binder = _binding_loop(a, name)
    if binder is not None and _own_bindings_only(a, scope) and all(asg.scope is scope for asg in found):
        # in the body of ``for name in ...``: the target is bound before the body runs, so
        # only bindings within that loop reach, and those a nested function makes through
        # ``nonlocal`` or ``global`` (a call in the body may run it); in a function, not
        # ``global`` ones (checked above)
        found = {asg for asg in found if _inside_any(a, asg, [binder]) or not _made_by(a, asg, scope)}
    if name.value in unseen_names(a):
        key = (scope, name.value)  # one per scope and name: bindings compare by identity
        if key not in a.cache.unseen_bindings:
            a.cache.unseen_bindings[key] = UnseenBinding(name.value, scope)
        found.add(a.cache.unseen_bindings[key])
    loops = a.carrying_loops(name)
    if loops:
        found |= _bindings_in_loop(a, scope, name.value, loops[-1])
    if len(found) > 1 and _own_bindings_only(a, scope) and name.value not in unseen_names(a):
        last = _dominating_binder(a, name)
        if last is not None:
            # ``x = b[0]; x = x.cuda(); use(x)``: every path to the use passes the last plain
            # binding before it, so only what that statement binds reaches (and what nested
            # functions bind through ``nonlocal``, which a call in between may run); after an
            # ``if``/``else`` that binds it in each branch, the last binding of each branch
            found = {
                asg for asg in found if any(_within(a, asg, s) for s in last) or not _made_by(a, asg, scope)
            }
    if not loops and len(found) > 1:
        # no loop carries a binding round to the use: one in the other branch of an ``if``
        # around it never reaches it (``if c: x = x.cuda(i) else: y = x.to(d)``), unless it
        # outlives the call that made it (a ``global``/``nonlocal`` name: another scope's)
        others = _other_branches(a, name)
        if others:
            found = {
                asg for asg in found if asg.scope is not scope or not _inside_any(a, asg, others)
            }
    return frozenset(found)


def _eager_outer(a: ModuleAnalysis, scope: Scope, use: cst.Name, found: set[BaseAssignment]) -> Scope:
    """For a use inside a list, set or dict comprehension of a name the comprehension does not
    bind: the enclosing scope, where the comprehension runs at once (``[x[k].item() for k in
    r]`` reads the ``x`` that holds there). A generator runs later: its own scope stays."""
    while (
        isinstance(scope, ComprehensionScope)
        and isinstance(scope.node, _EAGER)
        and scope.parent is not None
        and not any(asg.scope is scope for asg in found)
        and not any(_walrus_binds(n, use.value) for n in a.nodes_within(scope.node, cst.NamedExpr))
    ):
        scope = scope.parent
    return scope


_EAGER = (cst.ListComp, cst.SetComp, cst.DictComp)


def _walrus_binds(node: cst.CSTNode, name: str) -> bool:
    return isinstance(node, cst.NamedExpr) and isinstance(node.target, cst.Name) and node.target.value == name


def _dominating_binder(a: ModuleAnalysis, use: cst.Name) -> list[cst.BaseStatement] | None:
    """The statement lines every path to ``use`` passes last among those binding its name: the
    nearest earlier line of the use's block, or of an enclosing block, that binds it plainly
    (``name = ...``, ``name: T = ...``, ``name op= ...``, as a target of its own), or a ``try``
    that binds it so on every way out (:func:`_try_binds_on_every_path`), or an ``if`` with an
    ``else`` each of whose branches does (XLM's ``if p: m = from_numpy(...) else: m =
    torch.zeros(...)``): the last such line of each branch. None where
    the nearest binding is anything else (an ``if``, a loop, ``try``, ``with``, a walrus) or
    the walk reaches the function's start (a parameter) or crosses a loop that binds the name
    later (a loop-carried binding may reach the use around it)."""
    name = use.value
    stmt = a.statement_of(use)
    path = {id(use)}
    for anc in a.ancestors(use):
        if anc is stmt:
            break
        lazy = isinstance(anc, cst.GeneratorExp) and id(anc.for_in.iter) not in path
        if isinstance(anc, cst.Lambda) or lazy:
            return None  # run later (a lambda, a generator's body); a list, set or dict
            # comprehension runs at once where it stands (its own bindings are its scope's)
        if isinstance(anc, _EAGER) and any(_walrus_binds(n, name) for n in a.nodes_within(anc, cst.NamedExpr)):
            return None
        path.add(id(anc))
    if isinstance(stmt, cst.While) and name in stored_names(stmt):
        return None  # the test runs again after the body's bindings
    cur: cst.CSTNode | None = stmt
    while cur is not None and not isinstance(cur, (cst.FunctionDef, cst.ClassDef, cst.Module, cst.Lambda)):
        before = a.statements_before(cur)
        for prev in before or ():
            if name not in stored_names(prev):
                continue
            if isinstance(prev, cst.Try) and _try_binds_on_every_path(prev, name):
                return [prev]
            return _last_binders(prev, name)
        parent = a.parent(cur)
        while parent is not None and not isinstance(parent, (cst.BaseCompoundStatement, cst.FunctionDef, cst.Module)):
            if isinstance(parent, (cst.Lambda, cst.ListComp, cst.SetComp, cst.DictComp, cst.GeneratorExp)):
                return None  # a use in its own scope's expression: not this walk's question
            parent = a.parent(parent)
        if not isinstance(parent, cst.BaseCompoundStatement) or isinstance(parent, cst.FunctionDef):
            return None
        if _may_bind_on_the_way(parent, name):
            return None
        cur = parent
    return None


def _last_binders(stmt: cst.BaseStatement, name: str) -> list[cst.BaseStatement] | None:
    """The lines that bind ``name`` last on every way through ``stmt`` (one that binds it):
    itself where it binds it plainly; for an ``if`` with an ``else``, the last binders of each
    branch, each branch's last statement that binds the name; None otherwise."""
    if isinstance(stmt, cst.SimpleStatementLine):
        return [stmt] if _binds_plainly(stmt, name) else None
    if not isinstance(stmt, cst.If) or stmt.orelse is None:
        return None
    out: list[cst.BaseStatement] = []
    for branch in (stmt.body, stmt.orelse):
        block = branch.body if isinstance(branch, cst.Else) else branch
        if isinstance(block, cst.If):
            lines: Sequence[cst.BaseStatement] = [block]  # ``elif``
        else:
            lines = block.body if isinstance(block, cst.IndentedBlock) else []
        binder = next((line for line in reversed(lines) if name in stored_names(line)), None)
        found = _last_binders(binder, name) if binder is not None else None
        if found is None:
            return None  # a branch that does not bind it plainly: an earlier binding may reach
        out += found
    return out


def _try_binds_on_every_path(stmt: cst.Try, name: str) -> bool:
    """Does every way out of this ``try`` to the code after it bind ``name``? Its body binds it
    in a line of its own (the body completes only through it), and each handler does too or
    leaves (``raise``, ``return``, ``continue``, ``break``): stargan's ``try: x, y =
    next(it) except StopIteration: it = iter(loader); x, y = next(it)``. An earlier binding
    then never reaches a use after it."""

    def binds(block: cst.BaseSuite) -> bool:
        lines = block.body if isinstance(block, cst.IndentedBlock) else [block]
        return any(
            isinstance(line, (cst.SimpleStatementLine, cst.SimpleStatementSuite)) and _binds_plainly(line, name)
            for line in lines
        )

    def leaves(block: cst.BaseSuite) -> bool:
        lines = block.body if isinstance(block, cst.IndentedBlock) else [block]
        last = lines[-1] if lines else None
        return isinstance(last, (cst.SimpleStatementLine, cst.SimpleStatementSuite)) and bool(last.body) and isinstance(
            last.body[-1], (cst.Raise, cst.Return, cst.Continue, cst.Break)
        )

    return binds(stmt.body) and all(binds(h.body) or leaves(h.body) for h in stmt.handlers)


def _binds_plainly(line: cst.SimpleStatementLine | cst.SimpleStatementSuite, name: str) -> bool:
    for small in line.body:
        targets: list[cst.BaseExpression] = []
        if isinstance(small, cst.Assign):
            targets = [t.target for t in small.targets]
        elif isinstance(small, (cst.AnnAssign, cst.AugAssign)) and (
            isinstance(small, cst.AugAssign) or small.value is not None
        ):
            targets = [small.target]
        if any(n.value == name for t in targets for n in target_names(t)):
            return True
    return False


def _may_bind_on_the_way(compound: cst.BaseCompoundStatement, name: str) -> bool:
    """Walking out of ``compound`` from a use inside it: may a binding of ``name`` that it makes
    reach the use? A loop's (carried round by a later iteration), an ``if`` test's or ``with``
    item's (made before the body runs), or anything a ``try``/``match`` binds (a handler runs
    after part of the body). A binding later in the use's own block, or in another branch of an
    ``if``, is on no path to it."""
    if isinstance(compound, (cst.For, cst.While)):
        return name in stored_names(compound)
    if isinstance(compound, cst.If):
        return name in stored_names(compound.test)
    if isinstance(compound, cst.With):
        return any(name in stored_names(item) for item in compound.items)
    return name in stored_names(compound)


def _within(a: ModuleAnalysis, asg: BaseAssignment, stmt: cst.CSTNode) -> bool:
    node = getattr(asg, "node", None)
    return isinstance(node, cst.CSTNode) and (node is stmt or any(anc is stmt for anc in a.ancestors(node)))


class UnseenBinding(BaseAssignment):
    """A binding LibCST's scopes do not record: a walrus inside a comprehension, a ``match``
    capture. Not an ``Assignment`` (and holding no node): whoever meets one in a name's
    bindings cannot prove what the name holds."""

    def get_qualified_names_for(self, full_name: str) -> set[QualifiedName]:
        return set()


def unseen_names(a: ModuleAnalysis) -> frozenset[str]:
    """The names the module binds where LibCST's scopes record nothing (see
    :class:`UnseenBinding`), wherever they are: which scope such a binding lands in depends on
    ``global``/``nonlocal`` declarations and on where a comprehension sits (a default value runs
    in the scope around a def), so the name is unknown in every scope of the module."""
    known = a.cache.unseen
    if known is not None:
        return known
    structure = a.structure
    names: set[str] = set()
    for walrus in structure.within(a.module, cst.NamedExpr):
        if isinstance(walrus.target, cst.Name) and any(  # type: ignore[attr-defined]
            isinstance(anc, _COMPREHENSIONS) for anc in a.ancestors(walrus)
        ):
            names.add(walrus.target.value)  # type: ignore[attr-defined]
    for kind in (cst.MatchAs, cst.MatchStar, cst.MatchMapping):
        for pattern in structure.within(a.module, kind):
            bound = getattr(pattern, "rest" if kind is cst.MatchMapping else "name", None)
            if isinstance(bound, cst.Name):
                names.add(bound.value)
    found = a.cache.unseen = frozenset(names)
    return found


_COMPREHENSIONS = (cst.ListComp, cst.SetComp, cst.DictComp, cst.GeneratorExp)


_SCOPE_NODES = (cst.FunctionDef, cst.Lambda, cst.ClassDef, cst.Module, cst.ListComp, cst.SetComp, cst.DictComp, cst.GeneratorExp)


def _made_by(a: ModuleAnalysis, asg: BaseAssignment, scope: Scope) -> bool:
    """Is ``asg`` made by the code of ``scope``'s own function (not by a nested def or lambda
    through ``nonlocal``)?"""
    node = getattr(asg, "node", None)
    if not isinstance(node, cst.CSTNode):
        return False
    owner = next((anc for anc in a.ancestors(node) if isinstance(anc, (cst.FunctionDef, cst.Lambda, cst.ClassDef))), None)
    if isinstance(scope, GlobalScope):
        return owner is None  # the module's own top-level code, not a def's ``global`` statement
    return owner is not None and owner is getattr(scope, "node", None)


_NAMESPACE_WRITERS = ("globals", "vars(", "__dict__", "sys.modules", "import __main__", "setattr(", "exec(")


def _own_bindings_only(a: ModuleAnalysis, scope: Scope) -> bool:
    """Are the scope's names bound only by its own statements and by nested code that names
    them (``nonlocal``, ``global``)? A function's are. A module's are too, unless it may write
    its namespace by name (``globals()[k] = v``, ``setattr(sys.modules[__name__], k, v)``,
    ``exec``). Another file's ``m.x = v`` makes the value unknown, not the bindings
    (provenance's ``_global_set_elsewhere``)."""
    if isinstance(scope, FunctionScope):
        return True
    return isinstance(scope, GlobalScope) and not any(w in a.code for w in _NAMESPACE_WRITERS)


def _binding_loop(a: ModuleAnalysis, use: cst.Name) -> cst.For | None:
    """The innermost ``for`` of the use's own scope whose target binds its name and whose body
    holds the use."""
    child: cst.CSTNode = use
    for anc in a.ancestors(use):
        if isinstance(anc, _SCOPE_NODES):
            return None
        if isinstance(anc, cst.For) and child is anc.body and any(
            n.value == use.value for n in target_names(anc.target)
        ):
            return anc
        child = anc
    return None


def _other_branches(a: ModuleAnalysis, use: cst.CSTNode) -> list[cst.CSTNode]:
    """The branches, within the use's function, that exclude it: for each ``if`` around the
    use, the branch (body or ``else``/``elif``) it is not in."""
    out: list[cst.CSTNode] = []
    child = use
    for anc in a.ancestors(use):
        if isinstance(anc, (cst.FunctionDef, cst.Lambda, cst.ClassDef, cst.Module)):
            break
        if isinstance(anc, cst.If):
            if child is anc.body and anc.orelse is not None:
                out.append(anc.orelse)
            elif child is anc.orelse:
                out.append(anc.body)
        child = anc
    return out


def _inside_any(a: ModuleAnalysis, asg: BaseAssignment, branches: list[cst.CSTNode]) -> bool:
    node = getattr(asg, "node", None)
    if not isinstance(node, cst.CSTNode):
        return False
    ids = {id(b) for b in branches}
    for anc in a.ancestors(node):
        if id(anc) in ids:
            return True
        if isinstance(anc, (cst.FunctionDef, cst.Lambda, cst.ClassDef, cst.Module)):
            return False
    return False


def _bindings_in_loop(
    a: ModuleAnalysis, scope: Scope, name: str, loop: cst.CSTNode
) -> frozenset[BaseAssignment]:
    key = (scope, name, loop)
    found = a.cache.loop_bindings.get(key)
    if found is None:
        found = a.cache.loop_bindings[key] = frozenset(
            asg
            for asg in scope.assignments[name]
            if isinstance(asg, Assignment)
            and isinstance(asg.node, cst.CSTNode)
            and any(anc is loop for anc in a.ancestors(asg.node))
        )
    return found


def assignment_order(a: ModuleAnalysis, asg: BaseAssignment) -> int:
    """Source order of a binding (its node's rank in a pre-order walk; -1 for builtins)."""
    node = getattr(asg, "node", None)
    return a.structure.order.get(node, -1) if isinstance(node, cst.CSTNode) else -1


def carrying_loops(a: ModuleAnalysis, name: cst.Name) -> list[cst.For | cst.While]:
    """The loops around a use of ``name`` (inner first) through which a later binding can
    reach it: up to, not including, the innermost ``for`` whose target binds ``name`` (that
    binding is redone at the start of every iteration, so nothing carried past it reaches).
    Before this, ``for b in loader: b = {k: v.cuda() for k, v in b.items()}`` joined the
    rebinding into ``b.items()``'s receiver and lost that it is a batch (precision fix)."""
    loops = a.loops_around(name)
    child: cst.CSTNode = name
    for anc in a.ancestors(name):
        if isinstance(anc, cst.While) and child is anc.test:
            loops = [anc, *loops]  # a ``while`` test runs again after every pass of the body
            break
        if isinstance(anc, (cst.BaseStatement, cst.Lambda)):
            break
        child = anc
    for i, loop in enumerate(loops):
        if isinstance(loop, cst.For) and any(
            n.value == name.value for n in target_names(loop.target)
        ) or name in _accesses_of(a) and _rebound_first(a, loop, name):
            return loops[:i]
    return loops


def _rebound_first(a: ModuleAnalysis, loop: cst.For | cst.While, name: cst.Name) -> bool:
    """Does a plain assignment at the top of ``loop``'s body bind ``name`` in a statement before
    the one holding the use (``while ...: batch = next(it); batch = batch.cuda()``)? Then,
    like a ``for`` target, it is redone every iteration before the use, and nothing carried
    round the loop reaches the use. (Asked only of a use LibCST records as an access, whose
    referents hold the bindings before it; an ``x += ...`` target is none: its bindings all
    come from the loops around it.)"""
    body = loop.body
    if not isinstance(body, cst.IndentedBlock):
        return False
    holder = next((s for s in (name, *a.ancestors(name)) if a.parent(s) is body), None)
    for stmt in body.body:
        if stmt is holder or holder is None:
            return False
        if isinstance(stmt, cst.SimpleStatementLine) and any(
            isinstance(small, cst.Assign)
            and any(n.value == name.value for t in small.targets for n in target_names(t.target))
            for small in stmt.body
        ):
            return True
    return False


def reaching_values(a: ModuleAnalysis, name: cst.Name) -> list[cst.CSTNode] | None:
    """The expressions bound to ``name`` that can reach this use, in source order: the right
    side of ``n = expr`` / ``n: T = expr``, or the ``AugAssign`` node itself for ``n op= expr``
    (loop-carried bindings included). None when some binding is anything else (a parameter, a
    tuple target, ``for``, an import, a global...), so callers know they cannot prove anything."""
    bindings = a.bindings(name)
    if not bindings:
        return None
    out: list[cst.CSTNode] = []
    for asg in sorted(bindings, key=lambda n: assignment_order(a, n)):  # source order, not hash order
        if not isinstance(asg, Assignment) or not isinstance(asg.node, cst.Name):
            return None
        parent = a.parent(asg.node)
        if isinstance(parent, cst.AssignTarget):
            assign = a.parent(parent)
            assert isinstance(assign, cst.Assign)
            out.append(assign.value)
        elif isinstance(parent, cst.AugAssign):
            out.append(parent)
        elif isinstance(parent, cst.AnnAssign) and parent.value is not None:
            out.append(parent.value)
        else:
            return None
    return out


def is_range_counter(a: ModuleAnalysis, name: cst.Name) -> bool:
    """Is every binding reaching ``name`` the plain target of ``for name in range(...)``?"""
    return range_calls(a, name) is not None


def range_calls(a: ModuleAnalysis, name: cst.Name) -> list[cst.Call] | None:
    """The ``range(...)`` calls of the loops whose plain target is every binding reaching
    ``name`` (``for name in range(...)``), or None when some binding is another."""
    iters = _loop_iterables(a, name)
    if iters is None or not all(isinstance(it, cst.Call) and a.callee(it) == "builtins.range" for it in iters):
        return None
    return iters or None  # type: ignore[return-value]


def display_items(a: ModuleAnalysis, name: cst.Name) -> list[cst.BaseExpression] | None:
    """The items of the tuple or list displays iterated by the loops whose plain target is
    every binding reaching ``name`` (``for l in (g_loss, d_loss)``: both, each in turn), or
    None when some binding is another (or a display holds a starred item)."""
    iters = _loop_iterables(a, name)
    if iters is None or not all(
        isinstance(it, (cst.Tuple, cst.List)) and it.elements and all(isinstance(el, cst.Element) for el in it.elements)
        for it in iters
    ):
        return None
    return [el.value for it in iters for el in it.elements] or None  # type: ignore[attr-defined]


def _loop_iterables(a: ModuleAnalysis, name: cst.Name) -> list[cst.BaseExpression] | None:
    """The iterables of the ``for``s (statements or comprehensions) whose plain target is every
    binding reaching ``name``; None when some binding is another."""
    iters = []
    for asg in a.bindings(name):
        node = getattr(asg, "node", None)
        parent = a.parent(node) if isinstance(node, cst.CSTNode) else None
        if not (isinstance(asg, Assignment) and isinstance(parent, (cst.For, cst.CompFor)) and parent.target is node):
            return None
        iters.append(parent.iter)
    return iters


def binding_values(a: ModuleAnalysis, name: cst.Name) -> list[cst.BaseExpression] | None:
    """The right-hand sides of the bindings of ``name`` that can reach this use, or None
    when one of them is not a plain ``name = expr``.

    Flow-sensitive for straight-line code: the nearest preceding statement that binds the
    name in this block or an enclosing one (not crossing a loop that binds it) decides. Past
    the function's start, every binding in the name's scope counts (module-level names).
    """
    if name.value in unseen_names(a):
        return None  # bound somewhere LibCST does not record (a ``match`` capture...)
    stmt = a.statement_of(name)
    for anc in a.ancestors(name):
        if anc is stmt:
            break
        if isinstance(anc, (cst.Lambda, cst.ListComp, cst.SetComp, cst.DictComp, cst.GeneratorExp)):
            if name.value in stored_names(anc) or (
                isinstance(anc, cst.Lambda) and name.value in {p.name.value for p in anc.params.params}
            ):
                return None  # a comprehension or lambda variable
    cur: cst.CSTNode | None = stmt
    while cur is not None and not isinstance(cur, (cst.FunctionDef, cst.ClassDef, cst.Module)):
        found = _block_of_binding(a, cur, name.value)
        if found is not None:
            return found or None
        parent = a.parent(cur)
        while parent is not None and not isinstance(
            parent, (cst.BaseCompoundStatement, cst.FunctionDef, cst.Module)
        ):
            parent = a.parent(parent)
        if isinstance(parent, (cst.For, cst.While)) and name.value in stored_names(parent):
            return None  # a binding later in the loop may reach this use too
        if isinstance(parent, cst.If) and name.value in stored_names(parent.test):
            return None  # a walrus in the condition
        if isinstance(parent, cst.With) and any(name.value in stored_names(i) for i in parent.items):
            return None  # ``with ... as name``
        if (
            isinstance(parent, cst.BaseCompoundStatement)
            and not isinstance(parent, (cst.If, cst.With, cst.For, cst.While, cst.FunctionDef))
            and name.value in stored_names(parent)
        ):
            return None  # try/except/finally, match: another branch may have bound it
        if isinstance(parent, cst.FunctionDef) and name.value in {
            p.name.value for p in (*parent.params.params, *parent.params.posonly_params, *parent.params.kwonly_params)
        }:
            return None  # a parameter
        cur = parent
    return _scope_binding_values(a, name)


def _block_of_binding(
    a: ModuleAnalysis, stmt: cst.CSTNode, name: str, *, include_self: bool = False
) -> list[cst.BaseExpression] | None:
    """Look back from ``stmt`` in its block: ``[expr]`` for a plain binding, ``[]`` for any
    other binding (unknown), None when no preceding statement of the block binds ``name``
    (``include_self``: ``stmt`` itself counts as preceding)."""
    before = a.statements_before(stmt)
    if before is None:
        return None
    for prev in [stmt, *before] if include_self else before:
        if name not in stored_names(prev):
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
                pair = parallel_element(small.targets[0].target, small.value, name)
                if pair is not None:
                    return [pair]
            if isinstance(small, cst.AnnAssign) and small.value is not None and isinstance(small.target, cst.Name):
                return [small.value]
        if isinstance(prev, cst.With) and _runs_whole_body(a, prev, name):
            # ``with torch.no_grad(): x = vae(x)``: the body ran to its end, so its last
            # binding of the name holds after it
            inner = _last_in_block(a, prev.body, name)
            if inner is not None:
                return inner
        return []
    return None


def _runs_whole_body(a: ModuleAnalysis, stmt: cst.With, name: str) -> bool:
    """Does every item of ``stmt`` leave ``name`` alone and let no exception pass silently?"""
    return all(
        item.asname is None
        and isinstance(item.item, cst.Call)
        and (a.callee(item.item) or "") in NON_SUPPRESSING_CONTEXTS
        and name not in stored_names(item.item)
        for item in stmt.items
    )


def _last_in_block(a: ModuleAnalysis, block: cst.BaseSuite, name: str) -> list[cst.BaseExpression] | None:
    """The value of the last statement of ``block`` that binds ``name`` (as
    :func:`_block_of_binding` reads one), or None when that cannot be told."""
    if not isinstance(block, cst.IndentedBlock) or not block.body:
        return None
    found = _block_of_binding(a, block.body[-1], name, include_self=True)
    return found or None


def _scope_binding_values(a: ModuleAnalysis, name: cst.Name) -> list[cst.BaseExpression] | None:
    scope = a.scope(name)
    if scope is None:
        return None
    try:
        assignments = list(scope[name.value])
    except Exception:
        return None
    if not assignments:
        return None
    out: list[cst.BaseExpression] = []
    for asg in assignments:
        node = asg.node if isinstance(asg, Assignment) else None
        parent = a.parent(node) if isinstance(node, cst.Name) else None
        if isinstance(parent, cst.AssignTarget):
            assign = a.parent(parent)
            if isinstance(assign, cst.Assign) and len(assign.targets) == 1:
                out.append(assign.value)
                continue
        if isinstance(parent, cst.AnnAssign) and parent.value is not None:
            out.append(parent.value)
            continue
        return None
    return out


def straight_line_binding(
    a: ModuleAnalysis, name: cst.Name, *, reevaluable: bool = True
) -> cst.BaseExpression | None:
    """``expr`` of the ``name = expr`` that provably holds at this use: the nearest earlier
    statement of the same block binds it, and nothing in between rebinds or mutates ``name``.
    With ``reevaluable`` (for a rule that would evaluate ``expr`` again here) nothing in between
    changes a name ``expr`` reads either, and ``expr`` does not read ``name`` (``x = f(x)``);
    without, ``name`` holds the object ``expr`` made, whatever its inputs became since."""
    if name.value in unseen_names(a):
        return None  # bound somewhere LibCST does not record (a ``match`` capture...)
    found = _nearest_writer(a, name)
    if found is None:
        return None
    body, j, index = found
    s = body[j]
    if not isinstance(s, cst.SimpleStatementLine) or len(s.body) != 1:
        return None
    small = s.body[0]
    if not (
        isinstance(small, cst.Assign)
        and len(small.targets) == 1
        and isinstance(small.targets[0].target, cst.Name)
    ):
        return None
    watched = {name.value} | (a.effects(small.value).reads if reevaluable else set())
    if any(
        (a.effects(t).writes | a.effects(t).inplace) & watched
        for t in body[j + 1 : index]
    ):
        return None
    if reevaluable and a.effects(small.value).reads & {name.value}:
        return None  # ``x = f(x)``: the key would name the old x
    return small.value


def nearest_target(a: ModuleAnalysis, use: cst.Name) -> cst.Name | None:
    """The target ``use``'s name gets in the nearest earlier statement of its block that binds
    it, where that is a plain assignment (``x, y = ...``): the binding that holds at ``use``,
    whatever a loop around carries. None where another statement binds it first (or none)."""
    if use.value in unseen_names(a):
        return None
    found = _nearest_writer(a, use)
    if found is None:
        return None
    body, j, _ = found
    s = body[j]
    small = s.body[0] if isinstance(s, cst.SimpleStatementLine) and len(s.body) == 1 else None
    if not isinstance(small, cst.Assign):
        return None
    targets = [
        n for t in small.targets for n in a.nodes_within(t.target, cst.Name)
        if isinstance(n, cst.Name) and n.value == use.value and _bound_by(a, n, t)
    ]
    return targets[0] if len(targets) == 1 else None


def _bound_by(a: ModuleAnalysis, name: cst.Name, target: cst.AssignTarget) -> bool:
    """Does ``target`` bind ``name`` (not read it, as in ``x[i], y = ...``)?"""
    node: cst.CSTNode | None = name
    while node is not target.target:
        node = a.parent(node) if node is not None else None
        if not isinstance(node, (cst.Tuple, cst.List, cst.Element, cst.StarredElement)):
            return False
    return True


def _nearest_writer(a: ModuleAnalysis, name: cst.Name) -> tuple[list[cst.BaseStatement], int, int] | None:
    """The statements of ``name``'s block, the index of the nearest earlier one that binds it,
    and the index of ``name``'s own; None where its block has none before it."""
    stmt = a.statement_of(name)
    block = a.block_of(stmt) if stmt is not None else None
    if block is None:
        return None
    body = list(block[1])
    index = next(i for i, s in enumerate(body) if s is stmt)
    for j in range(index - 1, -1, -1):
        if name.value in a.effects(body[j]).writes:
            return body, j, index
    return None


def bound_once(a: ModuleAnalysis, name: cst.Name) -> bool:
    """Is ``name`` bound exactly once where it is used (so every use sees one value)?"""
    scope = a.scope(name)
    if scope is None:
        return False
    try:
        return len(scope[name.value]) == 1
    except Exception:
        return False


def single_valued(a: ModuleAnalysis, name: cst.Name) -> bool:
    """Does ``name`` get one value per run of its scope? Bound once, or once in each branch of
    one ``if``/``else`` chain (``if accel: device = ... else: device = ...``), never in a loop, so
    every use after the binding sees that one value."""
    if bound_once(a, name):
        return True
    scope = a.scope(name)
    if scope is None:
        return False
    try:
        found = [b for b in scope[name.value] if isinstance(b, Assignment) and isinstance(b.node, cst.Name)]
    except Exception:
        return False
    if len(found) < 2 or len(found) != len(scope[name.value]):
        return False
    paths: list[dict[cst.If, str]] = []
    for b in found:
        target = a.parent(b.node)
        if not (isinstance(target, cst.AssignTarget) and isinstance(a.parent(target), cst.Assign)):
            return False  # a loop target, ``+=``, a ``with ... as``: not one plain binding
        branches: dict[cst.If, str] = {}
        child: cst.CSTNode = b.node
        for outer in a.ancestors(b.node):
            if isinstance(outer, (cst.For, cst.While, cst.CompFor)):
                return False
            if isinstance(outer, (cst.FunctionDef, cst.ClassDef, cst.Lambda, cst.Module)):
                break
            if isinstance(outer, cst.If):
                branches[outer] = "body" if child is outer.body else "else" if child is outer.orelse else "test"
            child = outer
        paths.append(branches)
    return all(
        any(p[node] != q[node] for node in p.keys() & q.keys())
        for i, p in enumerate(paths)
        for q in paths[i + 1 :]
    )


def fact_of_name(a: ModuleAnalysis, name: cst.Name, fact: Callable[[cst.BaseExpression], F]) -> F | None:
    """The fact shared by every right-hand side :func:`binding_values` gives for ``name`` (None
    when they differ or in a cycle); memoised under ``fact``'s name."""

    def compute(name: cst.Name) -> F | None:
        values = a.binding_values(name)
        if not values:
            return None
        facts = {fact(v) for v in values}
        return facts.pop() if len(facts) == 1 else None

    return a.solver.get(fact.__name__, name, compute, None, None)
