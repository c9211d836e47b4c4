"""The harness on a real GPU: verify, the planted wrong rewrite, the counters, trace, the plugin.

Every test is marked ``cuda`` and skips without a GPU. Expected sync sites come from the
``# expect: KIND`` markers in examples/verify_demo/sync_ops.py, never from numbers written here.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest
from conftest import DEMO

torch = pytest.importorskip("torch")

pytestmark = [
    pytest.mark.cuda,
    pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU"),
]

PLANTED = f"{DEMO / 'planted_fixers.py'}:non_blocking_h2d"


def load_demo(name: str):
    spec = importlib.util.spec_from_file_location(f"verify_demo_{name}", DEMO / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def cuda_line(path: Path) -> int:
    """The demo's blocking copy (its comment marks it)."""
    lines = path.read_text().splitlines()
    return next(
        i for i, t in enumerate(lines, start=1) if ".cuda()" in t and "# blocking copy" in t
    )


def check_h2d_report(rep: dict, steps: int) -> None:
    assert rep["equivalence"]["status"] == "identical", rep["equivalence"]
    sy = rep["syncs"]
    assert sy["available"], sy
    rows = {r["line"]: r for r in sy["lines"]}
    row = rows[cuda_line(DEMO / "h2d_loop.py")]
    assert row["rewritten"] and row["before"] == steps and row["after"] == 0 and row["flag"] is None
    assert sy["drop"] >= steps and not sy["rose"]
    for side in ("original", "rewritten"):
        assert sy["cross_check"][side]["agree"], sy["cross_check"][side]
    assert rep["timing"]["available"] and rep["timing"]["ratio"] > 0
    assert rep["verdict"]["exit_code"] == 0


def test_verify_planted_non_blocking_rewrite_drops_syncs(run_cli):
    steps = 40
    r = run_cli(
        "verify",
        str(DEMO / "h2d_loop.py"),
        "--fixer",
        PLANTED,
        "--json",
        "--repeats",
        "5",
        "--",
        "--steps",
        str(steps),
        cwd=DEMO,
    )
    assert r.exit_code == 0, r.stdout + r.stderr
    check_h2d_report(r.report, steps)


def test_verify_with_syncfix_rules(run_cli):
    from syncfix import fix_code

    src = (DEMO / "h2d_loop.py").read_text()
    if fix_code(src, path=str(DEMO / "h2d_loop.py"), select=["SFX101"]) == src:
        pytest.skip("SFX101 no longer rewrites this demo")
    steps = 40
    r = run_cli(
        "verify",
        str(DEMO / "h2d_loop.py"),
        "--select",
        "SFX101",
        "--json",
        "--repeats",
        "5",
        "--",
        "--steps",
        str(steps),
        cwd=DEMO,
    )
    assert r.exit_code == 0, r.stdout + r.stderr
    check_h2d_report(r.report, steps)
    assert [f["code"] for rw in r.report["rewrites"] for f in rw["fixes"]] == ["SFX101"]


def test_planted_wrong_rewrite_is_caught(run_cli):
    r = run_cli(
        "verify",
        str(DEMO / "pinned_race.py"),
        "--fixer",
        PLANTED,
        "--json",
        "--repeats",
        "1",
        cwd=DEMO,
    )
    assert r.exit_code == 1, r.stdout + r.stderr
    rep = r.report
    assert rep["equivalence"]["status"] == "mismatch"
    paths = {m["path"] for m in rep["equivalence"]["mismatches"]}
    assert "record('firsts')" in paths and "stdout line 1" in paths
    # and the syncs did drop: the rewrite is fast, and wrong
    assert rep["syncs"]["drop"] >= 4


def test_counter_agrees_with_debug_mode_and_sees_synchronize():
    from syncfix.harness.counter import SyncRecorder, install

    ops = load_demo("sync_ops")
    expected = ops.expectations(str(DEMO / "sync_ops.py"))
    install()
    x = torch.linspace(-1, 1, 1000, device="cuda")
    ops.exercise(x)  # warm-up
    with SyncRecorder(cross_check=True, measure_wait=True) as rec:
        ops.exercise(x)
    seen = {
        (s.line, s.kind): s.count for s in rec.site_list() if s.file == str(DEMO / "sync_ops.py")
    }
    assert seen == {(line, kind): 1 for line, kind in expected.items()}
    cc = rec.cross_check_report()
    assert cc["agree"], cc["disagreements"]
    # the debug mode saw each copy/stream line and none of the device/event lines
    for line, kind in expected.items():
        want = 1 if kind in ("copy", "stream") else 0
        assert rec.debug_mode[(str(DEMO / "sync_ops.py"), line)] == want, (line, kind)
    assert cc["trace_only_device_event"] == 2
    # the line after torch.cuda._sleep waited longest
    slowest = max(rec.site_list(), key=lambda s: s.wait_s)
    assert "x.max()" in (DEMO / "sync_ops.py").read_text().splitlines()[slowest.line - 1]
    assert slowest.wait_s > 0.001


def test_trace_attributes_syncs_to_lines(run_cli):
    ops_path = DEMO / "sync_ops.py"
    ops = load_demo("sync_ops")
    expected = ops.expectations(str(ops_path))
    r = run_cli("trace", str(ops_path), "--json", "--warmup", "1", cwd=DEMO)
    assert r.exit_code == 0, r.stdout + r.stderr
    rep = r.report
    got = {(s["line"], s["kind"]): s["count"] for s in rep["sites"] if s["file"] == str(ops_path)}
    assert got == {(line, kind): 3 for line, kind in expected.items()}  # exercise() runs 3 times
    assert rep["cross_check"]["agree"]
    assert rep["wait_measured"]
    top = rep["sites"][0]
    assert "x.max()" in top["code"] and top["wait_s"] > 0.003
    by_line = {s["line"]: s for s in rep["sites"]}
    blocking = by_line[
        next(ln for ln in expected if ".cuda()" in ops_path.read_text().splitlines()[ln - 1])
    ]
    from syncfix import check_code

    findings = {
        (f.code)
        for f in check_code(ops_path.read_text(), path=str(ops_path))
        if f.line == blocking["line"]
    }
    assert {x["code"] for x in blocking["rules"]} == findings


PLUGIN_TESTS = """
import pytest
import torch
from syncfix.pytest_plugin import allow_sync

x = torch.ones(1000, device="cuda")


@pytest.mark.syncfree
def test_clean():
    y = (x * 2).sum()
    assert y.device.type == "cuda"


@pytest.mark.syncfree
def test_synchronize():
    y = x * 2
    torch.cuda.synchronize()  # LINE-SYNC


@pytest.mark.syncfree
def test_item():
    float(x.sum())  # LINE-ITEM


@pytest.mark.syncfree
def test_allowed():
    with allow_sync():
        torch.cuda.synchronize()


def test_region(no_sync):
    x.sum().item()
    with no_sync():
        ev = torch.cuda.Event()
        ev.record()
        ev.synchronize()  # LINE-EVENT
"""


def test_pytest_plugin_on_cuda(tmp_path):
    from test_syncfree_plugin import run_pytest

    (tmp_path / "test_gpu.py").write_text(PLUGIN_TESTS)
    res = run_pytest(tmp_path)

    def line(marker: str) -> int:
        return next(i for i, t in enumerate(PLUGIN_TESTS.splitlines(), start=1) if marker in t)

    assert res["test_clean"][0] == "passed", res["test_clean"]
    assert res["test_allowed"][0] == "passed", res["test_allowed"]
    for name, marker, kind in (
        ("test_synchronize", "LINE-SYNC", "device"),
        ("test_item", "LINE-ITEM", "copy"),
        ("test_region", "LINE-EVENT", "event"),
    ):
        outcome, msg = res[name]
        assert outcome == "failure", (name, msg)
        assert f"test_gpu.py:{line(marker)}" in msg and f"[{kind}] x1" in msg, msg


if __name__ == "__main__":  # pragma: no cover
    sys.exit(pytest.main([__file__, "-v"]))
