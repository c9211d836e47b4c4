"""The expression contexts read off the record (syncfix/analysis/expr_context.py) are LibCST's
own, and resolving scopes uses them."""

from __future__ import annotations

import libcst as cst
import pytest
from libcst.metadata import ExpressionContext, ExpressionContextProvider, MetadataWrapper

from syncfix.analysis import ModuleAnalysis
from syncfix.analysis.expr_context import expression_contexts
from syncfix.walk import Structure

from .sources import sources

ODD = {
    "targets": "a = b = c\nx.y[z], (u.v).w = 1, 2\na, *b = c\n[d, (e, f)] = g\nh: int = 1\ni += 1\n",
    "deletes": "del a, b[0], c.d, (e, [f, g])\n",
    "as-names": "with o as (p, q), r as s: pass\nimport a.b as c\nfrom x import (y as z, w)\ntry:\n    pass\nexcept E as e:\n    pass\n",
    "loops-and-comprehensions": "for i, *j in k: pass\n[a for b, c in d if (e := b) for f in c]\n{k: v for k, v in x}\n",
    "defs": "@dec(x)\ndef f(a: T = 1, *b, c, **d) -> R: pass\nlambda a, b=c: a\nclass C(B, metaclass=M): x: int = 1\n",
    "type-parameters": "def f[T: (x := int), *Ts, **P](a: T) -> T: pass\nclass C[T](B[T]): pass\ntype A[T] = list[T]\n",
    "match": "match p:\n    case Point(x=0, y=yy) as pt: pass\n    case [a, *rest]: pass\n    case {'k': v, **kw}: pass\n",
    "async": "async def h():\n    async for a in b: pass\n    async with c as d: pass\n    await e\nglobal g\n",
}




@pytest.mark.parametrize("source", sources(ODD))
def test_contexts_read_off_the_record_are_libcsts(source):
    module = cst.parse_module(source)
    expected = dict(MetadataWrapper(module, unsafe_skip_copy=True).resolve(ExpressionContextProvider))
    assert expression_contexts(Structure(module)) == expected


def test_the_odd_sources_hold_every_context():
    module = cst.parse_module("".join(ODD.values()))
    found = set(expression_contexts(Structure(module)).values())
    assert found == {ExpressionContext.LOAD, ExpressionContext.STORE, ExpressionContext.DEL}


def test_resolving_scopes_uses_the_contexts_read_off_the_record(monkeypatch):
    def not_run(self, node):
        raise AssertionError("LibCST's expression-context walk ran")

    monkeypatch.setattr(ExpressionContextProvider, "visit_Module", not_run)
    module = cst.parse_module("import torch\nx = torch.ones(1)\ndel x\n")
    analysis = ModuleAnalysis(MetadataWrapper(module, unsafe_skip_copy=True))
    scope = analysis.scope(module.body[1])
    assert scope is not None and "x" in scope  # the assignment was seen as a store
    assert [a.node for a in scope.assignments["x"]] == [module.body[1].body[0].targets[0].target]
