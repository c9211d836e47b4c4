"""benchmarks/throughput.py: the time limit, the per-file worker and line counts (no timing asserted)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
_spec = importlib.util.spec_from_file_location("throughput", ROOT / "benchmarks" / "throughput.py")
assert _spec and _spec.loader
throughput = importlib.util.module_from_spec(_spec)
sys.modules["throughput"] = throughput
_spec.loader.exec_module(throughput)

# Stands in for syncfix: hangs on any file named "slow*", dies on "crash*".
FAKE_WORKER = r"""
import json, os, sys, time
for path in sys.stdin.read().splitlines():
    print(json.dumps({"start": path}), flush=True)
    name = os.path.basename(path)
    if name.startswith("slow"):
        time.sleep(600)
    if name.startswith("crash"):
        os._exit(3)
    print(json.dumps({"path": path, "seconds": 0.01, "findings": 0, "error": None}), flush=True)
"""


def test_command_past_the_limit_is_killed(tmp_path):
    _, _, code = throughput.timed([sys.executable, "-c", "import time; time.sleep(600)"], tmp_path, 0.5)
    assert code == throughput.TIMED_OUT
    _, _, code = throughput.timed([sys.executable, "-c", "raise SystemExit(3)"], tmp_path, 60)
    assert code == 3


def test_per_file_worker_skips_a_hanging_file_and_goes_on(tmp_path, monkeypatch):
    monkeypatch.setattr(throughput, "WORKER", FAKE_WORKER)
    names = ["a.py", "slow.py", "b.py", "crash.py", "c.py"]
    for n in names:
        (tmp_path / n).write_text("x = 1\n" * 200)
    recs = throughput.per_file_times([tmp_path / n for n in names], limit=1)
    by = {Path(r["path"]).name: r for r in recs}
    assert set(by) == set(names)
    assert by["slow.py"]["timed_out"] == 1 and by["slow.py"]["seconds"] is None
    for n in ("a.py", "b.py", "c.py"):
        assert by[n]["lines"] == 200
        assert by[n]["ms_per_100_lines"] == by[n]["seconds"] * 1000 / 2
    # a worker that dies mid-file: that file has no time, the rest still do
    assert by["crash.py"].get("seconds") is None and by["c.py"]["seconds"] is not None


def test_python_lines_skip_git(tmp_path):
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "m.py").write_text("a\nb\nc\n")
    (tmp_path / ".git").mkdir()
    (tmp_path / ".git" / "x.py").write_text("a\n")
    (tmp_path / "notes.txt").write_text("a\n")
    assert throughput.py_lines(tmp_path) == (1, 3)


def test_python_floor_parses_and_walks_every_file(tmp_path):
    import ast
    import subprocess

    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "a.py").write_text("x = f(1)\n")
    (tmp_path / "b.py").write_text("def g(y):\n    return y + 1\n")
    (tmp_path / "broken.py").write_text("def (\n")  # counted as a file, no nodes
    (tmp_path / ".git").mkdir()
    (tmp_path / ".git" / "c.py").write_text("z = 2\n")
    want = sum(len(list(ast.walk(ast.parse(p.read_text())))) for p in (tmp_path / "pkg" / "a.py", tmp_path / "b.py"))
    script = ROOT / "benchmarks" / "parse_floor.py"
    for jobs in ("1", "2"):
        out = subprocess.run([sys.executable, str(script), str(tmp_path), "-j", jobs],
                             capture_output=True, text=True, check=True).stdout
        assert out.strip() == f"3 files, {want} nodes"


def test_ratios_put_ruff_beside_the_python_floor():
    rows = [{"command": "syncfix check -j2 (cold)", "seconds": 6.0, "timed_out": False},
            {"command": "ruff check --select ALL (2 cores)", "seconds": 0.5, "timed_out": False},
            {"command": f"{throughput.FLOOR} (2 cores)", "seconds": 0.75, "timed_out": False}]
    line = throughput.ratios(rows, 2)
    assert "syncfix/ruff = 12.00x" in line and "Python floor/ruff = 1.50x" in line
    floor = [cmd for name, (cmd, _) in throughput.commands(None, 2).items() if name.startswith(throughput.FLOOR)]
    assert floor and floor[0][-2:] == ["-j", "2"]
