"""Rules reported only where syncs repeat do not visit one-time code (engine.skips_one_time_code).

The repetition filter drops every finding such a rule makes in one-time code, so not computing
them must change nothing: the same findings and fixes on every fixture, with less work.
"""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest
from click.testing import CliRunner

from syncfix import engine, projects
from syncfix.api import check_code, fix_code_with_findings
from syncfix.cli import cli
from syncfix.config import Settings
from syncfix.projects import contexts
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


# ---- whole files of one-time code (the project index's ``one_time``) ---------------------------

SET_UP = """\
import torch


def build(n):
    table = torch.ones(n).cuda()
    return table.sum().item()
"""

LOOPING = """\
import torch
from helpers import scale


def run(xs):
    for x in xs:
        x = x.cuda()
        scale(x)
"""

HELPERS = """\
import torch


def scale(x):
    return x.cpu().sum().item()
"""

STEP = """\
import torch


class Net(torch.nn.Module):
    def forward(self, x):
        return x.cuda()
"""


@pytest.fixture
def one_time_project(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / ".git").mkdir()
    for name, text in (
        ("set_up.py", SET_UP), ("looping.py", LOOPING), ("helpers.py", HELPERS), ("net.py", STEP),
        ("broken.py", "def f(:\n    x.cuda()\n"),
    ):
        (tmp_path / name).write_text(text, encoding="utf-8")
    return tmp_path


def test_the_index_finds_files_of_one_time_code(one_time_project):
    files = ["set_up.py", "looping.py", "helpers.py", "net.py", "broken.py"]
    found = {f: c.one_time for f, c in contexts(files).items()}
    # a loop, a step-like function, a function another file calls in a loop, or a file Python
    # cannot read: not one-time
    assert found == {"set_up.py": True, "looping.py": False, "helpers.py": False, "net.py": False, "broken.py": False}


def _run(*args: str) -> list[tuple]:
    result = CliRunner().invoke(cli, ["check", ".", "-o", "json", "--no-cache", "-j1", *args])
    assert result.exit_code in (0, 1, 2), result.output
    return sorted((f["filename"].rsplit("/", 1)[-1], f["location"]["row"], f["code"]) for f in json.loads(result.stdout))


def test_a_file_of_one_time_code_is_not_parsed_and_nothing_changes(one_time_project, monkeypatch):
    parsed: list[bytes] = []
    real_parse = engine.parse
    monkeypatch.setattr(engine, "parse", lambda data, settings: parsed.append(data) or real_parse(data, settings))
    found = _run()
    assert SET_UP.encode() not in parsed and LOOPING.encode() in parsed
    assert ("looping.py", 7, "SFX101") in found and ("helpers.py", 5, "SFX105") in found
    parsed.clear()
    monkeypatch.setattr(projects, "one_time", lambda f, hot: False)  # every file read as before
    assert _run() == found
    assert SET_UP.encode() in parsed
    # shown with --include-cold, which reads every file
    assert ("set_up.py", 5, "SFX101") in _run("--include-cold")


def test_a_finding_shown_by_include_cold_does_not_say_every_step():
    src = (
        "import torch\n\n\ndef train_model(model, loader, opt, device):\n"
        "    total = torch.zeros((), device=device)\n"
        "    for x, y in loader:\n"
        "        loss = torch.nn.functional.cross_entropy(model(x), y)\n"
        "        opt.step()\n"
        "        total += loss.detach()\n"
        "    return total.item()  # once, after the loop\n"
    )
    assert check_code(src, path="train.py") == []  # one-time code: quiet by default
    (found,) = check_code(src, path="train.py", include_cold=True)
    assert "every iteration" not in found.message and "once where it runs (one-time code)" in found.message
    assert "where code repeats" not in found.message  # lightweight-gan's cold read said both


def test_a_read_of_a_gpu_value_in_one_time_code_does_not_say_code_repeats():
    src = "import torch\n\n\ndef once(x: torch.Tensor):\n    y = x.cuda()\n    return y.sum().item()\n"
    found = [f for f in check_code(src, path="train.py", include_cold=True) if f.code == "SFX105"]
    assert len(found) == 1 and found[0].message.startswith("GPU value read on the host: ")
