"""Every rule, driven by its own examples (VALID/INVALID on the class) and by fixture pairs."""

from __future__ import annotations

from pathlib import Path

import pytest

from syncfix import check_code, fix_code
from syncfix.rules import all_rules

from .fixture_cases import FixtureError, cases, collect

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


@pytest.mark.parametrize("code", list(RULES))
def test_declared_fix_safety_is_what_the_fixes_have(code):
    """``SAFETY`` (which the README's table and the docs show) is exactly the set of
    applicabilities the rule's fixes have on its examples and fixtures."""
    rule = RULES[code]
    assert rule.SAFETY in ((), ("safe",), ("unsafe",), ("safe", "unsafe"))
    assert (rule.FIX == "never") == (rule.SAFETY == ())
    sources = [example.code for example in rule.INVALID] + [c.source for c in CASES if c.code == code]
    seen = {
        str(f.fix.applicability) for src in sources for f in check_code(src, select=[code]) if f.fix
    }
    assert seen == set(rule.SAFETY), f"{code}: SAFETY = {rule.SAFETY}, its fixes are {sorted(seen)}"


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
    elif case.untouched and case.expected == case.source:
        # a must-not-touch case without an unsafe side is untouched by unsafe fixes too
        assert fix_code(case.source, select=[case.code], unsafe_fixes=True) == case.source


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


# Files with ``# expect:`` markers, and the untouched files of report-only rules (no markers: no
# finding may land in them; nothing else would check them, since their output is their input).
MARKED = [
    c for c in CASES if "# expect: " in c.source or (c.untouched and RULES[c.code].FIX == "never"
                                                    and c.name.endswith("untouched"))
]


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


def test_every_fixture_file_is_part_of_a_case():
    rules_dir = Path(__file__).parent
    files = {p for p in rules_dir.glob("*/fixtures/*") if p.is_file()}
    used = {
        rules_dir / c.code / "fixtures" / f"{c.name}{suffix}"
        for c in CASES
        for suffix in (".in.py", ".out.py", ".unsafe.py")
    }
    assert files and files <= used
    assert len(CASES) == len({c.id for c in CASES})


def _layout(root: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    return root


CODES = {"SFX101": "sometimes", "SFX105": "never"}


@pytest.mark.parametrize(
    "files,message",
    [
        ({"SFX101/fixtures/a.in.py": "x\n"}, "no expected side"),
        ({"SFX101/fixtures/a.out.py": "x\n"}, "has no a.in.py"),
        ({"SFX101/fixtures/notes.txt": "x\n"}, "not NAME.in.py"),
        ({"SFX999/fixtures/a_untouched.in.py": "x\n"}, "not the code of any rule"),
    ],
    ids=["input-without-expected-side", "expected-side-without-input", "unknown-suffix", "unknown-rule"],
)
def test_fixture_collector_fails_loudly(tmp_path, files, message):
    with pytest.raises(FixtureError, match=message):
        collect(_layout(tmp_path, files), CODES)


def test_fixture_collector_reads_each_kind_of_case(tmp_path):
    root = _layout(
        tmp_path / "rules",
        {
            "SFX101/fixtures/a.in.py": "x\n",
            "SFX101/fixtures/a.out.py": "y\n",
            "SFX101/fixtures/b_untouched.in.py": "z\n",
            "SFX105/fixtures/report.in.py": "w\n",  # a report-only rule: the output is the input
        },
    )
    found = {(c.id, c.expected) for c in collect(root, CODES)}
    assert found == {("SFX101/a", "y\n"), ("SFX101/b_untouched", "z\n"), ("SFX105/report", "w\n")}
    old = _layout(tmp_path / "fixtures", {"stray_untouched.in.py": "x\n"})
    with pytest.raises(FixtureError, match="outside any rule's folder"):
        collect(root, CODES, old)


def test_each_rule_is_a_libcst_codemod_built_on_first_use():
    """``syncfix.codemod_commands.<RuleClass or code>`` is a LibCST ``VisitorBasedCodemodCommand``
    that applies the rule's fixes; it is built on first use."""
    import libcst as cst
    from libcst.codemod import CodemodContext, VisitorBasedCodemodCommand

    import syncfix.codemod_commands as mod

    command = mod.BlockingHostToDevice
    assert issubclass(command, VisitorBasedCodemodCommand)
    assert mod.BlockingHostToDevice is command and mod.SFX101 is command
    assert all(issubclass(getattr(mod, code), VisitorBasedCodemodCommand) for code in RULES)
    src = "import torch\nx = torch.ones(3)\ny = x.cuda()\n"
    out = command(CodemodContext()).transform_module(cst.parse_module(src))
    assert out.code == 'import torch\nx = torch.ones(3)\ny = x.to("cuda", non_blocking=True)\n'
    with pytest.raises(AttributeError):
        mod.NoSuchThing  # noqa: B018
