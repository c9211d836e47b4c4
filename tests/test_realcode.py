"""benchmarks/realcode.py: the manifest parser, the hot/cold heuristic and the scoring."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
_spec = importlib.util.spec_from_file_location("realcode", ROOT / "benchmarks" / "realcode.py")
assert _spec and _spec.loader
realcode = importlib.util.module_from_spec(_spec)
sys.modules["realcode"] = realcode
_spec.loader.exec_module(realcode)


def test_manifest_has_the_marks_the_issue_asks_for():
    man = realcode.parse_manifest()
    assert len(man.repos) == 10
    assert len(man.of("site")) >= 40
    assert len(man.of("trap")) >= 10
    assert len(man.of("control")) >= 6
    for m in man.marks:
        assert m.repo in man.repos and m.first <= m.last and m.code
    for site in man.of("site"):
        assert site.info["fix"] in {"exact", "judgment"}, site.id
        assert site.info["rule"] == "-" or site.info["rule"].startswith("SFX"), site.id
    assert all(len(commit) == 40 for commit, _ in man.repos.values())


def test_table_cells_keep_escaped_pipes_and_ranges():
    text = (
        "## Sites\n| id | line | code |\n|---|---|---|\n| S1 | 3-5 | `a \\| b` |\n\n"
        "## Other\n| x |\n|---|\n| 1 |\n"
    )
    t = realcode.tables(text)
    assert t["sites"] == [{"id": "S1", "line": "3-5", "code": "`a | b`"}]
    assert t["other"] == [{"x": "1"}]


SOURCE = """\
import torch

def helper(x):
    return x.cuda()

def forward(x):
    return x.cuda()

class M:
    def __init__(self):
        for p in range(3):
            self.p = torch.zeros(3).cuda()

def main():
    for x in range(3):
        y = x

def test_thing():
    for x in range(3):
        pass

if __name__ == "__main__":
    for x in range(3):
        pass
"""


@pytest.mark.parametrize(
    ("line", "kind"),
    [(4, "cold"), (7, "hot"), (12, "cold"), (16, "hot"), (20, "cold"), (24, "cold")],
)
def test_hot_or_cold(line, kind):
    assert realcode.Locator(SOURCE).kind(line) == kind


def test_manifest_hot_functions_and_cold_folders():
    assert realcode.Locator(SOURCE, {"helper"}).kind(4) == "hot"
    # a hand mark wins over the name heuristic: an evaluation loop named ``test_epoch``
    assert realcode.Locator(SOURCE, {"test_thing"}).kind(20) == "hot"
    assert realcode.cold_path("tests/unit/test_x.py")
    assert realcode.cold_path("examples/train.py")
    assert realcode.cold_path("pkg/test_model.py")
    assert not realcode.cold_path("pkg/train.py")


def test_a_pin_memory_fix_is_placed_where_its_batches_are_copied():
    pin = {"code": "SFX103", "location": {"row": 4},
           "message": "DataLoader batches are copied to the GPU from pageable memory (lines 17, 30): set pin_memory=True"}
    assert realcode.where_it_pays(pin) == 17
    assert realcode.where_it_pays({**pin, "code": "SFX101"}) == 4
    assert realcode.where_it_pays({**pin, "message": "no line named"}) == 4


def test_fix_lines_and_reasons():
    replace = {"fix": {"applicability": "safe", "edits": [
        {"location": {"row": 3}, "end_location": {"row": 5}}]}}
    insert = {"fix": {"applicability": "unsafe", "edits": [
        {"location": {"row": 3}, "end_location": {"row": 3}}]}}
    assert realcode.edited_lines(replace) == {3, 4}
    assert realcode.edited_lines(insert) == set()
    # a block rewritten to change one of its lines changes that line only
    block = {"fix": {"applicability": "safe", "edits": [{
        "location": {"row": 2}, "end_location": {"row": 5},
        "content": "    for x in xs:\n        y = x.to(d, non_blocking=True)\n        sync()\n",
    }]}}
    original = ["def f(xs, d):\n", "    for x in xs:\n", "        y = x.to(d)\n", "        sync()\n"]
    assert realcode.edited_lines(block, original) == {3}
    assert realcode.edited_lines(block) == {2, 3, 4}
    assert realcode.applied(replace, False) and not realcode.applied(insert, False)
    assert realcode.applied(insert, True)
    f = {"code": "SFX101", "message": "Blocking copy (receiver not provably a tensor: no fix)"}
    assert realcode.no_fix_reason(f) == "SFX101: receiver not provably a tensor"
    f = {"code": "SFX302", "message": "Running total; no fix: the dtype is unknown."}
    assert realcode.no_fix_reason(f) == "SFX302: the dtype is unknown"


TRAIN = """\
import time
import torch
from torch.utils.data import DataLoader

device = torch.device("cuda")
loader = DataLoader(list(range(8)), batch_size=2, pin_memory=True)

def train():
    for x in loader:
        x = x.to(device)
        y = x * 2
        torch.cuda.synchronize()
        t = time.perf_counter()
"""

MANIFEST = """\
## Repositories
| repo | commit | clone |
|---|---|---|
| me/toy | {commit} | me__toy |

## Sites
| id | repo | path | line | code | kind | rule | fix | expert fix |
|---|---|---|---|---|---|---|---|---|
| S1 | me/toy | train.py | 10 | `x = x.to(device)` | copy | SFX101 | exact | non_blocking |

## Traps
| id | repo | path | line | code | why |
|---|---|---|---|---|---|
| T1 | me/toy | train.py | 12 | `torch.cuda.synchronize()` | timing |

## Controls
| id | repo | path | line | code | why |
|---|---|---|---|---|---|
| C1 | me/toy | train.py | 11 | `y = x * 2` | device op |
"""


def test_scores_a_toy_repository(tmp_path):
    clone = tmp_path / "me__toy"
    clone.mkdir()
    (clone / "train.py").write_text(TRAIN)
    git = ["git", "-C", str(clone), "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run(["git", "init", "-q", str(clone)], check=True)
    subprocess.run([*git, "add", "."], check=True)
    subprocess.run([*git, "commit", "-qm", "toy"], check=True)
    commit = subprocess.run([*git, "rev-parse", "HEAD"], capture_output=True, text=True).stdout.strip()
    (tmp_path / "MANIFEST.md").write_text(MANIFEST.format(commit=commit))
    man = realcode.parse_manifest(tmp_path / "MANIFEST.md")
    assert realcode.clone_problems(man, tmp_path) == ([], [])
    assert realcode.verify(man, tmp_path) == []

    result = realcode.score(man, tmp_path, jobs=1, timeout=300, only=None)
    marks = {m["id"]: m for m in result["marks"]}
    assert marks["S1"]["found"] and "SFX101" in marks["S1"]["codes"]
    assert marks["S1"]["safe_fixed"] and marks["S1"]["unsafe_fixed"]
    assert marks["T1"]["found"] and not marks["T1"]["safe_fixed"]
    assert not marks["C1"]["found"]
    s = result["summary"]
    assert s["sites_found"] == {"of": 1, "count": 1}
    assert s["traps_rewritten_by_safe_fix"] == {"of": 1, "count": 0}
    assert s["controls_flagged"] == {"of": 1, "count": 0}
    assert s["safe_fixes_applied"]["count"] == s["safe_fixes_applied"]["of"] >= 1


def test_missing_clone_says_how_to_get_it(tmp_path):
    man = realcode.parse_manifest()
    missing, _ = realcode.clone_problems(man, tmp_path)
    assert len(missing) == 10
    text = realcode.how_to_clone(man, tmp_path, missing[:1])
    commit, folder = man.repos[missing[0]]
    assert f"git clone https://github.com/{missing[0]} {folder}" in text and commit in text


def test_skipped_file_is_not_checked(tmp_path, monkeypatch):
    calls = []

    def fake_run(clone, unsafe, jobs, timeout, extra=(), config=None):
        calls.append(list(extra))
        return [], 0.0, ""

    monkeypatch.setattr(realcode, "run_syncfix", fake_run)
    man = realcode.parse_manifest()
    result = realcode.score(man, tmp_path, 1, 10, {"huggingface/peft"}, {"huggingface/peft": ["a.py", "b.py"]})
    assert calls == [["--extend-exclude", "a.py", "--extend-exclude", "b.py"]] * 2
    assert result["runs"]["huggingface/peft"]["safe"]["excluded"] == ["a.py", "b.py"]
    assert result["summary"]["sites_found"]["count"] == 0
