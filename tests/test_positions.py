"""Positions resolved per top-level statement (engine.Analyzed.position) are LibCST's."""

from __future__ import annotations

import libcst as cst
import pytest
from libcst.metadata import MetadataWrapper, PositionProvider

from syncfix import engine, positions
from syncfix.config import Settings
from syncfix.walk import TRIVIA

from .sources import sources

ODD = {
    "header-and-footer": "#!/usr/bin/env python\n# header\n\nimport torch\n\n# footer\n",
    "decorated": "@dec\n# between\n@other(1)\ndef f(x):\n    return x.item()\n\n\nclass A:\n    @property\n    def p(self):\n        pass\n",
    "no-final-newline": "import torch\nx = torch.ones(1)\nif x:\n    y = x.item()  # last",
    "crlf": "import torch\r\nfor i in range(3):\r\n    t = torch.ones(1).cuda()\r\n",
    "tabs": "def f():\n\tfor i in range(3):\n\t\tprint(i)\n",
    "continuation": "x = (1 +\n     2)\ny = \\\n    3\ns = '''a\nb'''\n",
    "empty": "",
    "semicolons-and-comments": "a = 1; b = 2\n# about c\n\nc = 3\ndef f():\n    x = 1\n    # trailing, indented\n\n# next\ny = 4\n",
    "form-feed": "import torch\n\x0c\ndef f():\n    pass\n",
    "parenthesized-decorator": "@(\n    dec\n)\ndef f():\n    pass\n",
    "class-bodies": (
        "import torch\n\n\nclass Net(torch.nn.Module):  # header\n    'doc'\n    n = 1; m = 2\n\n"
        "    # about forward\n    @torch.no_grad()\n    # between\n    @staticmethod\n"
        "    def forward(\n        x,\n        y=(1,\n           2),\n    ):\n        return x.item()\n"
        "# dedented comment\n\n    class Inner:\n        pass\n    def last(self): return 1\n"
        "    # trailing, indented\n\n\ndef main():\n\tfor i in range(3):\n\t\tprint(i)\n"
        "\tif i:  # c\n\t\tpass\n"
    ),
    "body-on-header-line": "class A: pass\ndef f(): return 1\nclass B:\n    x = 1\n",
}




@pytest.mark.parametrize("source", sources(ODD))
def test_positions_by_statement_are_libcsts(source):
    module = cst.parse_module(source)
    expected = MetadataWrapper(module, unsafe_skip_copy=True).resolve(PositionProvider)
    analyzed = engine.analyze(module, [], Settings(), source=source)
    assert analyzed.analysis is not None
    nodes = list(analyzed.analysis.structure.descendants(module))
    # the record leaves out whitespace and comments (walk.TRIVIA) when no rule visits them
    assert len(nodes) == len([n for n in expected if type(n) not in TRIVIA])
    for node in nodes:
        assert analyzed.position(node) == expected[node], module.code_for_node(node)
    # only the statements asked about were generated: here every one of them, and the
    # statements of top-level classes' and defs' bodies
    bodies = [s for t in module.body if isinstance(t, (cst.ClassDef, cst.FunctionDef)) for s in t.body.body]
    assert len(analyzed._positions) <= len(module.body) + len(bodies)


def test_a_position_generates_one_statement_only():
    module = cst.parse_module("a = 1\nb = 2\nc = [\n    3,\n]\n")
    analyzed = engine.analyze(module, [], Settings())
    three = module.body[2].body[0].value.elements[0].value  # type: ignore[attr-defined]
    assert (analyzed.position(three).start.line, analyzed.position(three).start.column) == (4, 4)
    assert list(analyzed._positions) == [module.body[2]]


def test_a_position_in_a_method_generates_that_method_only():
    source = ODD["class-bodies"]
    module = cst.parse_module(source)
    analyzed = engine.analyze(module, [], Settings(), source=source)
    forward = module.body[1].body.body[2]  # type: ignore[attr-defined]
    item = forward.body.body[0].body[0].value  # type: ignore[attr-defined]
    expected = MetadataWrapper(module, unsafe_skip_copy=True).resolve(PositionProvider)[item]
    assert analyzed.position(item) == expected
    assert (expected.start.line, expected.start.column) == (17, 15)
    assert list(analyzed._positions) == [forward]


@pytest.mark.parametrize("source", sources(ODD))
def test_statement_texts_cut_from_the_source_are_what_libcst_generates(source):
    module = cst.parse_module(source)
    cut = positions.top_lines_of_source(module, source)
    generated = engine.Analyzed(module, [], MetadataWrapper(module)).top_lines  # no source: generated
    if cut is None:  # where the two parses do not line up, the text is generated instead
        assert "@(" in source or not source
        return
    assert cut == generated
