"""Every rule, driven by its own examples (VALID/INVALID on the class) and by fixture pairs."""

from __future__ import annotations

import pytest

from syncfix import check_code, fix_code
from syncfix.rules import all_rules

from .fixtures import cases

RULES = all_rules()
SECTIONS = ("## What it finds", "## Why it costs", "## Example", "## Use instead", "## Fix safety")


def _examples(kind: str) -> list:
    return [
        pytest.param(code, example, id=f"{code}-{kind.lower()}-{i}")
        for code, rule in RULES.items()
        for i, example in enumerate(getattr(rule, kind))
    ]


@pytest.mark.parametrize("code", list(RULES))
def test_rule_doc_has_every_section(code):
    rule = RULES[code]
    doc = rule.doc()
    for section in SECTIONS:
        assert section in doc, f"{code} doc lacks {section!r}"
    assert rule.FIX in ("always", "sometimes", "never")
    assert rule.VALID and rule.INVALID, f"{code} needs examples on both sides"


@pytest.mark.parametrize("code,source", _examples("VALID"))
def test_valid_examples_are_not_flagged(code, source):
    assert [f for f in check_code(source, select=[code])] == []
    assert fix_code(source, select=[code], unsafe_fixes=True) == source


@pytest.mark.parametrize("code,example", _examples("INVALID"))
def test_invalid_examples_are_flagged_and_fixed(code, example):
    findings = check_code(example.code, select=[code])
    assert findings and all(f.code == code for f in findings)
    safe = fix_code(example.code, select=[code])
    unsafe = fix_code(example.code, select=[code], unsafe_fixes=True)
    if example.expected is None:
        assert safe == example.code
        assert unsafe == example.code, "no fix of any kind was expected"
    elif example.unsafe:
        assert safe == example.code, "an unsafe fix was applied without --unsafe-fixes"
        assert unsafe == example.expected
    else:
        assert safe == example.expected
    # a second pass changes nothing
    assert fix_code(unsafe, select=[code], unsafe_fixes=True) == unsafe


CASES = cases()


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_fixture_pair(case):
    out = fix_code(case.source, select=[case.code])
    assert out == case.expected
    assert fix_code(out, select=[case.code]) == out  # idempotent
    if case.expected_unsafe is not None:
        assert fix_code(case.source, select=[case.code], unsafe_fixes=True) == case.expected_unsafe


def test_every_fixture_folder_has_both_sides():
    by_code: dict[str, list] = {}
    for c in CASES:
        by_code.setdefault(c.code, []).append(c)
    for code, group in by_code.items():
        assert code in RULES, f"fixtures for unknown rule {code}"
        if RULES[code].FIX == "never":
            continue  # findings only: nothing can be rewritten
        # a rule whose fixes are all unsafe shows its rewrites in ``.unsafe.py`` files
        assert any(
            c.expected != c.source or (c.expected_unsafe or c.source) != c.source for c in group
        ), f"{code}: no case that is rewritten"
        assert any(c.expected == c.source for c in group), f"{code}: no must-not-touch case"


def test_every_fixable_rule_has_fixtures():
    codes = {c.code for c in CASES}
    for code, rule in RULES.items():
        if rule.FIX != "never":
            assert code in codes, f"{code} has a fix but no fixture pair"


MARKED = [c for c in CASES if "# expect: " in c.source]


@pytest.mark.parametrize("case", MARKED, ids=[c.id for c in MARKED])
def test_marked_fixture_lines_are_exactly_the_findings(case):
    """In a fixture, a line ending ``# expect: CODE`` must get that finding; no other line may."""
    expected = {
        (i, line.rsplit("# expect: ", 1)[1].strip())
        for i, line in enumerate(case.source.splitlines(), start=1)
        if "# expect: " in line
    }
    found = {(f.line, f.code) for f in check_code(case.source, select=[case.code])}
    assert found == expected


def test_readme_lists_every_rule():
    from pathlib import Path

    readme = (Path(__file__).parent.parent / "README.md").read_text(encoding="utf-8")
    for code, rule in RULES.items():
        assert f"| {code} | {rule.NAME} |" in readme, f"README's rules table lacks {code}"


def test_each_rule_is_a_libcst_codemod_built_on_first_use():
    """``codemods.<module>.Codemod`` is a LibCST ``VisitorBasedCodemodCommand`` that applies the
    rule's fixes; it is built lazily so that importing the rules does not import
    ``libcst.codemod``."""
    import importlib

    import libcst as cst
    from libcst.codemod import CodemodContext, VisitorBasedCodemodCommand

    mod = importlib.import_module("codemods.blocking_host_to_device")
    command = mod.Codemod
    assert issubclass(command, VisitorBasedCodemodCommand) and mod.Codemod is command
    src = "import torch\nx = torch.ones(3)\ny = x.cuda()\n"
    out = command(CodemodContext()).transform_module(cst.parse_module(src))
    assert out.code == 'import torch\nx = torch.ones(3)\ny = x.to("cuda", non_blocking=True)\n'
    with pytest.raises(AttributeError):
        mod.NoSuchThing  # noqa: B018
