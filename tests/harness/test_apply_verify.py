"""``syncfix apply --verify``: write only what a run proved (CPU: values; syncs need CUDA)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from syncfix.harness import apply_verify
from syncfix.harness.apply_verify import Candidate, bisect

torch = pytest.importorskip("torch")

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "train_from_config.py"
CPU_CONFIG = '{"device": "cpu", "data": "synthetic", "batch_size": 64, "dim": 32, "epochs": 1}'


def test_bisect_finds_the_bad_units_in_few_runs():
    calls = []

    def passes(group):
        calls.append(list(group))
        return not ({3, 6} & set(group))

    kept, dropped = bisect(list(range(8)), passes)
    assert sorted(kept) == [0, 1, 2, 4, 5, 7] and sorted(dropped) == [3, 6]
    assert len(calls) == 11  # halving: 2 culprits of 8 in 11 runs, not one run per unit and pair
    calls.clear()
    kept, dropped = bisect(list(range(64)), lambda g: calls.append(1) or 40 not in g)
    assert dropped == [40] and len(kept) == 63 and len(calls) == 13  # 1 + 2 * log2(64)
    kept, dropped = bisect(list(range(8)), lambda g: True)
    assert kept == list(range(8)) and dropped == []


def test_apply_edits_replaces_inserts_and_deletes():
    from syncfix.model import Edit

    text = "a\nb\nc\n"
    assert apply_verify.apply_edits(text, [Edit(2, 2, "B\n", "b\n")]) == "a\nB\nc\n"
    assert apply_verify.apply_edits(text, [Edit(2, 1, "x\n", "")]) == "a\nx\nb\nc\n"
    assert apply_verify.apply_edits(text, [Edit(1, 1, "", "a\n"), Edit(3, 3, "C\n", "c\n")]) == "b\nC\n"


def _project(tmp_path: Path) -> Path:
    script = tmp_path / "train.py"
    shutil.copy(EXAMPLE, script)
    return script


def _cli(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, *args: str):
    from syncfix.cli import cli

    monkeypatch.chdir(tmp_path)
    return CliRunner().invoke(cli, list(args), catch_exceptions=False)


def test_verified_fixes_are_written(tmp_path, monkeypatch):
    script = _project(tmp_path)
    # the device comes from a config (it may be MPS, which has no float64): SFX302's device total
    # is an unsafe fix, which a run can verify
    r = _cli(tmp_path, monkeypatch, "apply", "train.py", "--isolated", "--unsafe-fixes", "--select", "SFX302",
             "--verify", "train.py", "--", "--config", CPU_CONFIG)
    assert r.exit_code == 0, r.output
    assert "running_acc" in script.read_text()  # SFX302's device total, verified on the CPU
    assert "1 fix verified (1 unsafe)" in r.output


def test_diff_writes_nothing(tmp_path, monkeypatch):
    script = _project(tmp_path)
    before = script.read_bytes()
    r = _cli(tmp_path, monkeypatch, "apply", "train.py", "--isolated", "--diff", "--unsafe-fixes", "--verify", "train.py", "--", "--config", CPU_CONFIG)
    assert r.exit_code == 0, r.output
    assert script.read_bytes() == before and "+        running_acc += " in r.output


def test_a_failing_original_exits_2_and_writes_nothing(tmp_path, monkeypatch):
    script = _project(tmp_path)
    script.write_text(script.read_text().replace("    torch.manual_seed(0)\n", "    raise RuntimeError('broken')\n"))
    before = script.read_bytes()
    r = _cli(tmp_path, monkeypatch, "apply", "train.py", "--isolated", "--verify", "train.py", "--", "--config", CPU_CONFIG)
    assert r.exit_code == 2 and "the program fails as it is" in r.output
    assert script.read_bytes() == before


def test_a_planted_bad_candidate_is_bisected_out_and_reported(tmp_path, monkeypatch):
    from syncfix.model import Applicability, Edit, Finding, FixInfo

    script = _project(tmp_path)
    text = script.read_text()
    line = next(n for n, row in enumerate(text.splitlines(), 1) if "lr=0.05" in row)
    row = text.splitlines(keepends=True)[line - 1]
    bad_edit = Edit(line, line, row.replace("lr=0.05", "lr=0.06"), row)
    bad = Finding("SFX999", "planted", "planted", str(script), line, 1, line, 2,
                  FixInfo(Applicability.SAFE, "a wrong rewrite", bad_edit))
    real = apply_verify._candidates

    def planted(texts, options, observations):
        found, waiting = real(texts, options, observations)
        if any("lr=0.05" in t for t in texts.values()):
            found.append(Candidate(str(script), bad))
        return found, waiting

    monkeypatch.setattr(apply_verify, "_candidates", planted)
    outcome = apply_verify.run(
        [str(script)], str(script), ["--config", CPU_CONFIG], {"select": ["SFX302"], "unsafe_fixes": True}, root=str(tmp_path)
    )
    assert [c.finding.code for c in outcome.dropped] == ["SFX999"]
    assert "values differ" in outcome.dropped[0].dropped_because
    assert [c.finding.code for c in outcome.kept] == ["SFX302"]
    written = script.read_text()
    assert "lr=0.05" in written and "running_acc" in written
    assert "1 dropped (values differ" in apply_verify.summary_line(outcome)


def test_a_fix_in_a_file_the_program_never_loads_is_not_written(tmp_path, monkeypatch):
    script = _project(tmp_path)
    other = tmp_path / "other.py"
    other.write_text(
        "import torch\n\n\ndef total(values):\n    s = 0.0\n    for v in values:\n"
        "        s += torch.full((), v, dtype=torch.float32, device='cuda').item()\n    return s\n"
    )
    before = other.read_bytes()
    r = _cli(tmp_path, monkeypatch, "apply", ".", "--isolated", "--unsafe-fixes", "--verify", "train.py", "--", "--config", CPU_CONFIG)
    assert r.exit_code == 0, r.output
    assert other.read_bytes() == before  # nothing ran it: nothing proved its fix
    assert "other.py" in r.output and "not run" in r.output
    assert "running_acc" in script.read_text()
