"""Rules reported only where syncs repeat do not visit one-time code (engine.skips_one_time_code).

The repetition filter drops every finding such a rule makes in one-time code, so not computing
them must change nothing: the same findings and fixes on every fixture, with less work.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from syncfix import engine
from syncfix.api import check_code, fix_code_with_findings
from syncfix.config import Settings
from syncfix.rules import all_rules

pytestmark = pytest.mark.only_repeated

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = sorted(
    [*(ROOT / "tests" / "rules").glob("*/fixtures/*.in.py"), *(ROOT / "examples").glob("*.py")]
)


def _summary(findings) -> list[tuple]:
    return [(f.code, f.line, f.column, f.message, f.fix.edit if f.fix else None) for f in findings]


@pytest.mark.parametrize("path", FIXTURES, ids=lambda p: str(p.relative_to(ROOT)))
def test_skipping_one_time_code_changes_no_finding_or_fix(path, monkeypatch):
    source = path.read_text()
    as_script = "train.py"  # not a test path, so that one-time and repeating code both occur
    skipped = _summary(check_code(source, path=as_script, unsafe_fixes=True))
    fixed = fix_code_with_findings(source, path=as_script, unsafe_fixes=True)
    monkeypatch.setattr(engine, "skips_one_time_code", lambda settings, rules: False)
    assert _summary(check_code(source, path=as_script, unsafe_fixes=True)) == skipped
    assert fix_code_with_findings(source, path=as_script, unsafe_fixes=True)[0] == fixed[0]


COLD_AND_HOT = textwrap.dedent(
    """\
    import torch

    def setup(n):
        a = torch.ones(n).cuda()
        b = a.sum().item()
        return b

    def main(model, loader):
        for x in loader:
            x = x.cuda()
    """
)


class _Counting:
    """Records the calls the rules visit (``visit_Call``)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.visited: list = []
        for rule in all_rules().values():
            original = rule.__dict__.get("visit_Call")
            if original is None:
                continue

            def counted(this, node, _original=original):
                self.visited.append(node)
                return _original(this, node)

            monkeypatch.setattr(rule, "visit_Call", counted)


def test_rules_do_not_visit_a_one_time_function(monkeypatch):
    counting = _Counting(monkeypatch)
    found = check_code(COLD_AND_HOT, path="train.py")
    assert [(f.code, f.line) for f in found] == [("SFX101", 10)]
    with_skip = len(counting.visited)
    counting.visited.clear()
    monkeypatch.setattr(engine, "skips_one_time_code", lambda settings, rules: False)
    assert [(f.code, f.line) for f in check_code(COLD_AND_HOT, path="train.py")] == [("SFX101", 10)]
    assert 0 < with_skip < len(counting.visited)


def test_include_cold_visits_everything(monkeypatch):
    assert not engine.skips_one_time_code(Settings(include_cold=True), list(all_rules().values()))
    found = check_code(COLD_AND_HOT, path="train.py", include_cold=True)
    assert {f.line for f in found} >= {4, 10}


def test_a_test_file_is_not_parsed_for_rules_that_only_report_repeated_syncs(monkeypatch):
    parsed = []
    real_parse = engine.parse
    monkeypatch.setattr(engine, "parse", lambda data, settings: parsed.append(1) or real_parse(data, settings))
    assert check_code(COLD_AND_HOT, path="tests/test_train.py") == []
    assert parsed == []


def test_suppression_audit_sees_one_time_findings():
    # the noqa silences a finding in one-time code: it is used, so SFX900 stays quiet
    src = COLD_AND_HOT.replace("a = torch.ones(n).cuda()", "a = torch.ones(n).cuda()  # noqa: SFX101")
    rules = [all_rules()["SFX900"], all_rules()["SFX101"]]
    assert not engine.skips_one_time_code(Settings(), rules)
    assert [(f.code, f.line) for f in check_code(src, path="train.py")] == [("SFX101", 10)]
