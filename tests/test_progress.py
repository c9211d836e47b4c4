"""Progress: the callback's counts, no output when stderr is not a terminal, a bar when it is."""

from __future__ import annotations

import io
import time

import pytest
from click.testing import CliRunner

from syncfix import progress
from syncfix.cli import _execute, cli
from syncfix.config import Settings
from syncfix.engine import Job
from syncfix.harness.runner import Plan, pair_steps
from syncfix.harness.target import parse_target
from syncfix.progress import progress_bar

SAFE = "import torch\nx = torch.ones(3).cuda()\n"


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


@pytest.mark.parametrize("jobs", [1, 2])
def test_check_reports_files_done_of_total(tmp_path, jobs):
    paths = []
    for i in range(20):  # over the pool threshold, so -j 2 runs the process pool
        p = tmp_path / f"m{i}.py"
        p.write_text(SAFE, encoding="utf-8")
        paths.append(str(p))
    seen: list[tuple[int, int]] = []
    results = _execute(
        [Job(p, fix=False, write=False, want_source=False) for p in paths],
        Settings(jobs=jobs),
        lambda done, total, what="": seen.append((done, total)),
    )
    assert len(results) == 20
    assert seen == [(i, 20) for i in range(1, 21)]


def test_no_progress_when_stderr_is_not_a_terminal(tmp_path, monkeypatch):
    monkeypatch.setattr(progress, "DELAY_S", 0.0)
    monkeypatch.chdir(tmp_path)
    for i in range(20):
        (tmp_path / f"m{i}.py").write_text(SAFE, encoding="utf-8")
    r = CliRunner().invoke(cli, ["check", ".", "-o", "concise", "--no-cache", "-j", "1"])
    assert r.exit_code == 1
    assert r.stderr == ""  # CliRunner's stderr is not a terminal: no bar, nothing else
    assert r.stdout.count("SFX101") == 20
    with progress_bar("Checking", stream=io.StringIO(), delay=0) as tick:
        assert tick is progress.no_tick


def test_bar_shows_on_a_terminal_only_after_the_delay():
    out = Terminal()
    with progress_bar("Checking", stream=out, delay=0) as tick:
        for i in range(1, 4):
            tick(i, 3)
        deadline = time.monotonic() + 10  # the bar starts from a timer thread (late on a busy machine)
        while "Checking" not in out.getvalue() and time.monotonic() < deadline:
            time.sleep(0.05)
    assert "Checking" in out.getvalue()
    quiet = Terminal()
    with progress_bar("Checking", stream=quiet, delay=60) as tick:  # a short run: no bar
        tick(1, 1)
    assert quiet.getvalue() == ""


def test_verify_counts_every_run_of_both_sides(tmp_path, monkeypatch):
    """verify's bar: phase and run i of n, for the starts, captures, timed and counted runs."""
    from syncfix.harness.runner import run_pair

    script = tmp_path / "prog.py"
    script.write_text("print(sum(range(10)))\n", encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    plan = Plan(
        target=parse_target(str(script)),
        root=str(tmp_path),
        fixer={"select": None, "ignore": None, "unsafe_fixes": False, "spec": None},
        deterministic=False,
        warmup=2,
        repeats=3,
        timeout=120,
    )
    total = pair_steps(plan)
    assert total == 2 * (1 + 2 + 3 + 1)
    seen: list[tuple[int, int, str]] = []
    orig, new = run_pair(plan, lambda done, n, what="": seen.append((done, n, what)))
    assert orig.ok and new.ok
    assert [d for d, _, _ in seen] == list(range(total + 1))
    assert {n for _, n, _ in seen} == {total}
    whats = [w for _, _, w in seen]
    assert whats[:2] == ["start (original)", "start (rewritten)"]
    assert whats.count("time run (original)") == 3 and whats.count("count run (rewritten)") == 1
    assert whats[-1] == "done"
