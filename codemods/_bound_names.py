"""Which names a function's statements and loops bind, and to what: the pairs the memory checks
(_memory.py) follow from a name to what it may be another name for, the items of a loader's
fresh batches, which are distinct tensors, and the statements that run after one on the way out
of its blocks."""

from __future__ import annotations

import libcst as cst

from syncfix.analysis import Kind, ModuleAnalysis, positional
from syncfix.walk import walk


def simple_statements(node: cst.CSTNode):
    """Every simple statement line under ``node``, and every one-line body (``if c: x[0] = 0``),
    not entering nested defs or classes."""
    found: list[cst.SimpleStatementLine | cst.SimpleStatementSuite] = []

    class V(cst.CSTVisitor):
        def visit_SimpleStatementLine(self, n: cst.SimpleStatementLine) -> bool:
            found.append(n)
            return False

        def visit_SimpleStatementSuite(self, n: cst.SimpleStatementSuite) -> bool:
            found.append(n)
            return False

        def visit_FunctionDef(self, n: cst.FunctionDef) -> bool:
            return n is node

        def visit_ClassDef(self, n: cst.ClassDef) -> bool:
            return False

    walk(node, V())
    return found


def assigned_pairs(stmt: cst.SimpleStatementLine | cst.SimpleStatementSuite):
    for small in stmt.body:
        if isinstance(small, cst.Assign):
            for t in small.targets:
                if isinstance(t.target, cst.Name):
                    yield t.target.value, small.value
                elif isinstance(t.target, (cst.Tuple, cst.List)) and isinstance(small.value, (cst.Tuple, cst.List)):
                    for el_t, el_v in zip(t.target.elements, small.value.elements, strict=False):
                        if isinstance(el_t.value, cst.Name):
                            yield el_t.value.value, el_v.value
                elif isinstance(t.target, (cst.Tuple, cst.List)):
                    # ``x, y = batch``: each name is an item of the container
                    for name in names_in(t.target):
                        yield name, small.value
        elif isinstance(small, cst.AnnAssign) and small.value is not None and isinstance(small.target, cst.Name):
            yield small.target.value, small.value


def names_in(target: cst.BaseExpression):
    if isinstance(target, cst.Name):
        yield target.value
    elif isinstance(target, (cst.Tuple, cst.List)):
        for el in target.elements:
            yield from names_in(el.value)
    elif isinstance(target, cst.StarredElement):
        yield from names_in(target.value)


def batch_items(a: ModuleAnalysis, scope: cst.CSTNode, statements: list) -> set[tuple[str, str]]:
    """(name, batch) pairs, as :func:`source_may_change` writes them, for the names a ``for``
    over a fresh loader (or ``enumerate``/``tqdm`` of one) binds to the items of its batch, directly or by
    unpacking a name bound to the whole batch once and by that ``for`` alone."""
    found: set[tuple[str, str]] = set()
    batches: dict[str, int] = {}
    for loop in a.nodes_within(scope, cst.For):
        assert isinstance(loop, cst.For)
        it, target = loop.iter, loop.target
        inner: cst.BaseExpression = target
        if _counted(a, it) and isinstance(target, (cst.Tuple, cst.List)) and len(target.elements) == 2:
            inner = target.elements[1].value  # ``for i, batch in enumerate(loader)`` (or a bar of it)
        if not fresh_batches(a, it):
            continue
        if isinstance(inner, cst.Name):
            batches[inner.value] = batches.get(inner.value, 0) + 1
        elif isinstance(inner, (cst.Tuple, cst.List)) and all(isinstance(el.value, cst.Name) for el in inner.elements):
            found |= {(el.value.value, f"\0batch{id(it)}") for el in inner.elements}  # type: ignore[attr-defined]
    once = {name for name, n in batches.items() if n == 1}
    assigned = {t for s in statements for t, _ in assigned_pairs(s)}
    indexed: dict[tuple[str, int], set[str]] = {}  # (batch, index) -> names bound to that item
    for s in statements:
        for small in s.body:
            if not (isinstance(small, cst.Assign) and len(small.targets) == 1):
                continue
            target, value = small.targets[0].target, small.value
            if isinstance(target, (cst.Tuple, cst.List)) and isinstance(value, cst.Name) and value.value in once - assigned:
                names = [el.value for el in target.elements]
                if all(isinstance(n, cst.Name) for n in names):
                    found |= {(n.value, value.value) for n in names if isinstance(n, cst.Name)}
                continue
            # ``x, y = batch[0], batch[1]`` (Beta-VAE's, mixup's): items by distinct indices
            items: list[tuple[cst.BaseExpression, cst.BaseExpression]] = (
                [(t.value, v.value) for t, v in zip(target.elements, value.elements, strict=True)]
                if isinstance(target, cst.Tuple) and isinstance(value, cst.Tuple) and len(target.elements) == len(value.elements)
                else [(target, value)]
            )
            for bound, item in items:
                index = _literal_index(item)
                if isinstance(bound, cst.Name) and index is not None and index[0] in once - assigned:
                    indexed.setdefault(index, set()).add(bound.value)
    counted: dict[str, int] = {}
    for bound_to in indexed.values():
        for name in bound_to:
            counted[name] = counted.get(name, 0) + 1
    found |= {
        (name, batch) for (batch, _), bound_to in indexed.items() if len(bound_to) == 1
        for name in bound_to if counted[name] == 1
    }
    return found


def _literal_index(expr: cst.BaseExpression) -> tuple[str, int] | None:
    """``batch[0]``: (``"batch"``, 0)."""
    if not (isinstance(expr, cst.Subscript) and isinstance(expr.value, cst.Name) and len(expr.slice) == 1):
        return None
    index = expr.slice[0].slice
    if isinstance(index, cst.Index) and isinstance(index.value, cst.Integer):
        return expr.value.value, int(index.value.value)
    return None


def fresh_batches(a: ModuleAnalysis, iterable: cst.BaseExpression) -> bool:
    """Is ``iterable`` a loader whose every batch is new memory (a ``DataLoader`` with the
    default collate: it hands each batch on and keeps no reference to it)?"""
    v = a.value(iterable)
    if v.kind is Kind.LOADER and v.fresh:
        return True
    # ``pbar = tqdm(enumerate(loader))``: the wrapper hands on the loader's batches and keeps none
    if isinstance(iterable, cst.Name):
        values = a.reaching_values(iterable)
        iterable = values[0] if values and len(values) == 1 and isinstance(values[0], cst.Call) else iterable
    if isinstance(iterable, cst.Call) and a.callee(iterable) in _HANDING_ON:
        args = positional(iterable)
        return bool(args) and not any(arg.star for arg in iterable.args) and fresh_batches(a, args[0].value)
    return False


def _counted(a: ModuleAnalysis | None, it: cst.BaseExpression) -> bool:
    """Is ``it`` ``enumerate(...)``, maybe wrapped (``tqdm``, ``iter``) and bound to a name?"""
    if a is None:
        return isinstance(it, cst.Call) and isinstance(it.func, cst.Name) and it.func.value == "enumerate"
    for _ in range(4):
        if isinstance(it, cst.Name):
            values = a.reaching_values(it)
            if not (values and len(values) == 1 and isinstance(values[0], cst.Call)):
                return False
            it = values[0]
        name = a.callee(it) if isinstance(it, cst.Call) else None
        if name == "builtins.enumerate":
            return True
        if name not in _HANDING_ON or not isinstance(it, cst.Call) or not positional(it):
            return False
        it = positional(it)[0].value
    return False


# Wrappers whose items are the wrapped iterable's (``enumerate``'s paired with a count), that
# keep no item (not ``list``, which holds every batch).
_HANDING_ON = {"builtins.enumerate", "builtins.iter", "tqdm.tqdm", "tqdm.auto.tqdm", "tqdm.notebook.tqdm"}


def iteration_bindings(node: cst.CSTNode, a: ModuleAnalysis | None = None):
    """(name, iterable) for every ``for`` and comprehension target under ``node`` (not entering
    nested defs or classes): each name is an item of the iterable (``for t in batch``); with
    ``a``, not the count of ``enumerate`` (through a name and ``tqdm``: ``pbar =
    tqdm(enumerate(loader))``)."""
    found: list[tuple[str, cst.BaseExpression]] = []

    def items(target: cst.BaseExpression, it: cst.BaseExpression):
        # the keys of ``d.items()``/``d.keys()`` are no part of ``d``'s tensors
        view = it.func.attr.value if isinstance(it, cst.Call) and isinstance(it.func, cst.Attribute) else None
        if view == "keys":
            return
        if view == "items" and isinstance(target, (cst.Tuple, cst.List)) and len(target.elements) == 2:
            target = target.elements[1].value
        if _counted(a, it) and isinstance(target, (cst.Tuple, cst.List)) and len(target.elements) == 2:
            target = target.elements[1].value  # ``for i, x in enumerate(xs)``: ``i`` is a count
        if isinstance(it, (cst.Tuple, cst.List, cst.Set)):
            # ``for t in (x, y)``: each name is each element in turn
            found.extend((name, el.value) for el in it.elements for name in names_in(target))
            return
        found.extend((name, it) for name in names_in(target))

    class V(cst.CSTVisitor):
        def visit_For(self, n: cst.For) -> None:
            items(n.target, n.iter)

        def visit_CompFor(self, n: cst.CompFor) -> None:
            items(n.target, n.iter)

        def visit_FunctionDef(self, n: cst.FunctionDef) -> bool:
            return n is node

        def visit_ClassDef(self, n: cst.ClassDef) -> bool:
            return False

    walk(node, V())
    return found


def after_in_blocks(a: ModuleAnalysis, stmt: cst.CSTNode | None, scope: cst.CSTNode) -> list[cst.CSTNode]:
    """The statements after ``stmt`` in its block, and after each compound statement around it
    in theirs, up to ``scope``: what runs after it on the way out, in order."""
    out: list[cst.CSTNode] = []
    cur = stmt
    while cur is not None and cur is not scope:
        block = a.block_of(cur)
        if block is not None:
            statements: list[cst.CSTNode] = list(block[1])
            out.extend(statements[statements.index(cur) + 1:] if cur in statements else ())
            cur = block[0]
        cur = a.parent(cur) if cur is not None else None
        while cur is not None and cur is not scope and not isinstance(a.parent(cur), (cst.IndentedBlock, cst.Module)):
            cur = a.parent(cur)
    return out
