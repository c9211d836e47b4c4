"""benchmarks/heldout.py: the per-repository summary a reviewer reads."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
_spec = importlib.util.spec_from_file_location("heldout", ROOT / "benchmarks" / "heldout.py")
assert _spec and _spec.loader
heldout = importlib.util.module_from_spec(_spec)
sys.modules["heldout"] = heldout
_spec.loader.exec_module(heldout)


def _finding(line: int, fix: dict | None, message: str = "m") -> dict:
    return {"code": "SFX101", "filename": "train.py", "location": {"row": line}, "message": message, "fix": fix}


def test_summary_counts_tiers_where_fixes_land_and_lists_safe_fixes(tmp_path):
    (tmp_path / "train.py").write_text(
        "import torch\n"
        "model = torch.nn.Linear(2, 2).cuda()\n"
        "for x in range(3):\n"
        "    y = x\n"
    )
    edit = {"content": "    y = x  # new\n", "location": {"row": 4}, "end_location": {"row": 5}}
    findings = [
        _finding(4, {"applicability": "safe", "edits": [edit]}),
        _finding(2, {"applicability": "unsafe", "edits": [edit]}),
        _finding(4, None, "Blocking copy (receiver unknown: no fix)"),
    ]
    s = heldout.summarise(tmp_path, findings)
    assert (s["findings"], s["safe"], s["unsafe"], s["hot"]) == (3, 1, 1, 1)
    assert [x["where"] for x in s["fixes"]] == ["hot", "cold"]
    assert s["reasons"] == [("SFX101: receiver unknown", 1)]
    text = heldout.report({"demo": {"commit": "abc", "lines": 4, "seconds": 0.5, **s}})
    assert "demo/train.py:4 SFX101 (hot)" in text and "y = x  # new" in text
    assert "train.py:2" not in text  # only safe fixes are listed for review


def test_a_failed_run_is_reported_not_counted():
    text = heldout.report({"broken": {"commit": "?", "lines": 10, "seconds": 1.0, "error": "exit 2: boom"}})
    assert "broken" in text and "! exit 2: boom" in text
