"""The report: per-line sync comparison, flags, timing, verdict and rendering, from run data."""

from __future__ import annotations

import io
import json

import pytest
from rich.console import Console

from syncfix import check_code
from syncfix.harness.equivalence import Tolerance, snapshot
from syncfix.harness.report import (
    EXIT_ERROR,
    EXIT_FAIL,
    EXIT_OK,
    render_trace,
    render_verify,
    syncs,
    timing,
    trace_report,
    verify_report,
)
from syncfix.harness.rewrite import align
from syncfix.harness.runner import Plan, RunFailure, SideResult
from syncfix.harness.target import parse_target

SRC = "import torch\nx = load()\nfor i in range(10):\n    y = x.cuda()\n    z = y.sum().item()\n"


def site(file, line, kind="copy", count=1, wait=0.0):
    return {
        "file": file,
        "line": line,
        "function": "<module>",
        "kind": kind,
        "count": count,
        "wait_s": wait,
        "via": None,
    }


def sides(tmp_path, before_sites, after_sites, *, new_src=None, captures=None):
    path = tmp_path / "train.py"
    path.write_text(SRC)
    new_src = (
        new_src
        if new_src is not None
        else SRC.replace("x.cuda()", 'x.to("cuda", non_blocking=True)')
    )
    hunks, _ = align(SRC, new_src)
    caps = captures or (
        [{"stdout": "1.0\n", "records": [], "return": None}],
        [{"stdout": "1.0\n", "records": [], "return": None}],
    )
    common = {"counter": "torch.cuda._gpu_trace", "count_runs": 1, "cross_check": {"armed": False}}
    orig = SideResult(
        "original",
        times=[0.010, 0.011, 0.012],
        data={**common, "sites": before_sites, "captures": caps[0], "rewrites": []},
    )
    rewrites = [
        {
            "path": str(path),
            "changed": bool(hunks),
            "hunks": [h.to_dict() for h in hunks],
            "error": None,
        }
    ]
    new = SideResult(
        "rewritten",
        times=[0.008, 0.009, 0.007],
        data={**common, "sites": after_sites, "captures": caps[1], "rewrites": rewrites},
    )
    plan = Plan(
        target=parse_target(str(path)),
        root=str(tmp_path),
        fixer={"select": None, "ignore": None, "unsafe_fixes": False, "spec": None},
    )
    return plan, orig, new, str(path)


def test_sync_drop_per_line_and_totals(tmp_path):
    path = str(tmp_path / "train.py")
    plan, orig, new, path = sides(
        tmp_path, [site(path, 4, count=10), site(path, 5, count=10)], [site(path, 5, count=10)]
    )
    s = syncs(orig, new)
    assert s["available"] and (s["original"]["total"], s["rewritten"]["total"], s["drop"]) == (
        20,
        10,
        10,
    )
    rows = {r["line"]: r for r in s["lines"]}
    assert rows[4]["rewritten"] and (rows[4]["before"], rows[4]["after"], rows[4]["flag"]) == (
        10,
        0,
        None,
    )
    assert rows[4]["code"] == "y = x.cuda()"
    assert not rows[5]["rewritten"] and rows[5]["drop"] == 0 and rows[5]["flag"] is None
    assert not s["rose"] and s["flags"] == []


def test_rewritten_line_without_a_drop_is_flagged(tmp_path):
    path = str(tmp_path / "train.py")
    plan, orig, new, path = sides(tmp_path, [site(path, 4, count=10)], [site(path, 4, count=10)])
    s = syncs(orig, new)
    (flag,) = s["flags"]
    assert (flag["line"], flag["flag"]) == (4, "no-drop")
    report = verify_report(plan, orig, new, Tolerance())
    assert report["verdict"]["exit_code"] == EXIT_OK  # flagged, but syncs did not rise


def test_rewritten_line_with_no_syncs_at_all_is_flagged(tmp_path):
    plan, orig, new, path = sides(tmp_path, [], [])
    (flag,) = syncs(orig, new)["flags"]
    assert flag["flag"] == "no-syncs-before"


def test_a_rise_fails_the_verdict(tmp_path):
    path = str(tmp_path / "train.py")
    plan, orig, new, path = sides(tmp_path, [site(path, 5, count=1)], [site(path, 5, count=2)])
    report = verify_report(plan, orig, new, Tolerance())
    assert report["syncs"]["rose"]
    assert {f["line"]: f["flag"] for f in report["syncs"]["flags"]}[5] == "rose"
    assert report["verdict"]["exit_code"] == EXIT_FAIL


def test_several_counted_runs_are_averaged(tmp_path):
    path = str(tmp_path / "train.py")
    plan, orig, new, path = sides(tmp_path, [site(path, 5, count=6)], [site(path, 5, count=3)])
    orig.data["count_runs"] = 2
    new.data["count_runs"] = 2
    s = syncs(orig, new)
    assert (s["original"]["total"], s["rewritten"]["total"]) == (3, 1.5)


def test_no_cuda_means_no_counts_but_a_reason(tmp_path):
    plan, orig, new, path = sides(tmp_path, [], [])
    for side in (orig, new):
        side.data["count_skipped"] = "CUDA is not available: sync counts need a CUDA device"
        side.data["count_runs"] = 0
    report = verify_report(plan, orig, new, Tolerance())
    assert report["syncs"] == {
        "available": False,
        "reason": "CUDA is not available: sync counts need a CUDA device",
    }
    assert report["verdict"]["exit_code"] == EXIT_OK
    text = render(report)
    assert "sync counts need a CUDA device" in text


def test_timing_medians_and_ratio(tmp_path):
    plan, orig, new, path = sides(tmp_path, [], [])
    t = timing(orig, new)
    assert t["original_median_s"] == pytest.approx(0.011) and t[
        "rewritten_median_s"
    ] == pytest.approx(0.008)
    assert t["ratio"] == pytest.approx(0.008 / 0.011)
    assert t["repeats"] == 3
    assert t["original_range_s"] == [0.010, 0.012] and t["rewritten_range_s"] == [0.007, 0.009]


def test_mismatch_and_failures_set_exit_codes(tmp_path):
    caps = (
        [{"stdout": "", "records": [("loss", snapshot(1.0))], "return": None}],
        [{"stdout": "", "records": [("loss", snapshot(1.5))], "return": None}],
    )
    plan, orig, new, path = sides(tmp_path, [], [], captures=caps)
    report = verify_report(plan, orig, new, Tolerance())
    assert report["equivalence"]["status"] == "mismatch"
    assert report["equivalence"]["mismatches"][0]["path"] == "record('loss')"
    assert report["verdict"]["exit_code"] == EXIT_FAIL
    assert verify_report(plan, orig, new, Tolerance(atol=1.0))["verdict"]["exit_code"] == EXIT_OK

    new.failure = RunFailure(
        "rewritten", "time", "error", "ValueError: boom", traceback="Traceback ..."
    )
    assert verify_report(plan, orig, new, Tolerance(atol=1.0))["verdict"]["exit_code"] == EXIT_FAIL
    orig.failure = RunFailure("original", "capture", "timeout", "no answer within 3 s")
    report = verify_report(plan, orig, new, Tolerance(atol=1.0))
    assert report["verdict"]["exit_code"] == EXIT_ERROR
    assert {e["side"] for e in report["errors"]} == {"original", "rewritten"}
    assert "timeout" in render(report)


def test_findings_of_the_applied_fixes_are_listed(tmp_path):
    plan, orig, new, path = sides(tmp_path, [], [])
    report = verify_report(plan, orig, new, Tolerance())
    (rw,) = report["rewrites"]
    expected = [f for f in check_code(SRC, path=path) if f.fix is not None and f.line == 4]
    assert [(f["code"], f["line"]) for f in rw["fixes"]] == [(f.code, f.line) for f in expected]


def test_json_is_serializable_and_rich_renders(tmp_path):
    path = str(tmp_path / "train.py")
    plan, orig, new, path = sides(tmp_path, [site(path, 4, count=10)], [])
    report = verify_report(plan, orig, new, Tolerance())
    assert json.loads(json.dumps(report, default=str))["schema"] == "syncfix.verify/1"
    text = render(report)
    assert "y = x.cuda()" in text and "rewritten ✓" in text and "OK" in text


def test_trace_report_sorts_by_wait_and_matches_rules(tmp_path):
    path = tmp_path / "train.py"
    path.write_text(SRC)
    side = SideResult(
        "original",
        times=[0.5],
        data={
            "sites": [
                site(str(path), 5, count=10, wait=0.001),
                site(str(path), 4, count=10, wait=0.090),
            ],
            "count_runs": 1,
            "counter": "torch.cuda._gpu_trace",
            "wait_measured": True,
            "cross_check": {
                "armed": True,
                "trace_copy_stream": 20,
                "debug_mode": 20,
                "trace_only_device_event": 0,
                "agree": True,
                "disagreements": [],
            },
        },
    )
    plan = Plan(target=parse_target(str(path)), root=str(tmp_path), fixer={}, warmup=0)
    report = trace_report(plan, side)
    assert [s["line"] for s in report["sites"]] == [4, 5]
    expected = {
        (f.code, f.fix.applicability.value if f.fix else None)
        for f in check_code(SRC, path=str(path), unsafe_fixes=True)
        if f.line <= 4 <= f.end_line
    }
    assert {(r["code"], r["fix"]) for r in report["sites"][0]["rules"]} == expected
    assert report["verdict"]["exit_code"] == EXIT_OK and report["total"] == 20
    out = io.StringIO()
    render_trace(report, Console(file=out, width=200))
    assert "train.py:4" in out.getvalue() and "90.000 ms" in out.getvalue()


def render(report) -> str:
    out = io.StringIO()
    render_verify(report, Console(file=out, width=200))
    return out.getvalue()


# ---- recorded reports of the bundled examples: labels and inserted lines -----------------------

EXAMPLES = __import__("pathlib").Path(__file__).resolve().parents[2] / "examples"


def _recorded(tmp_path, name, before_sites, after_sites, *, unsafe_fixes=False, subdir=""):
    """A verify run of ``examples/name`` rebuilt from data: its rewrite is syncfix's own (the
    hunks a real run records), its syncs the given sites. No process, no GPU."""
    from syncfix import fix_code

    folder = tmp_path / subdir if subdir else tmp_path
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    src = (EXAMPLES / name).read_text(encoding="utf-8")
    path.write_text(src, encoding="utf-8")
    new_src = fix_code(src, path=str(path), unsafe_fixes=unsafe_fixes)
    hunks, _ = align(src, new_src)
    common = {"counter": "torch.cuda._gpu_trace", "count_runs": 1, "cross_check": {"armed": False}}
    caps = [{"stdout": "1.0\n", "records": [], "return": None}]
    rewrites = [{"path": str(path), "changed": True, "hunks": [h.to_dict() for h in hunks], "error": None}]
    for s in before_sites + after_sites:
        s["file"] = str(path)
    orig = SideResult("original", times=[0.01], data={**common, "sites": before_sites, "captures": caps, "rewrites": []})
    new = SideResult("rewritten", times=[0.01], data={**common, "sites": after_sites, "captures": caps, "rewrites": rewrites})
    plan = Plan(
        target=parse_target(str(path)),
        root=str(tmp_path),
        fixer={"select": None, "ignore": None, "unsafe_fixes": unsafe_fixes, "spec": None},
    )
    return verify_report(plan, orig, new, Tolerance()), hunks


def _render(rep, width=100):
    buf = io.StringIO()
    render_verify(rep, Console(file=buf, width=width, color_system=None))
    return buf.getvalue()


def test_verify_labels_only_the_fixes_it_applied(tmp_path, monkeypatch):
    """Without --unsafe-fixes, train_logged.py's log line is rewritten by SFX301 + SFX401 (safe);
    SFX402's unsafe fix is offered on the same line but was not applied."""
    monkeypatch.chdir(tmp_path)
    before = [site("", 20, "copy", 2)]
    after = [site("", 20, "copy", 1)]
    after[0]["new_line"] = 24
    rep, _ = _recorded(tmp_path, "train_logged.py", before, after)
    (rw,) = rep["rewrites"]
    assert {f["code"] for f in rw["fixes"]} == {"SFX301", "SFX401"}
    assert {f["applicability"] for f in rw["fixes"]} == {"safe"}
    text = _render(rep)
    assert "SFX402" not in text and "(unsafe)" not in text
    assert "SFX301, SFX401 (safe)" in text
    # with --unsafe-fixes, what runs is SFX402's rewrite, labelled unsafe
    rep, _ = _recorded(tmp_path, "train_logged.py", before, after, unsafe_fixes=True)
    labels = {(f["code"], f["applicability"]) for f in rep["rewrites"][0]["fixes"]}
    assert ("SFX402", "unsafe") in labels


def test_verify_location_column_is_never_cut(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    rep, hunks = _recorded(
        tmp_path, "train_logged.py", [site("", 20, "copy", 2)], [site("", 20, "copy", 1)],
        subdir="a_rather_long_folder_name/with/more/levels",
    )
    where = "a_rather_long_folder_name/with/more/levels/train_logged.py:20"
    for width in (100, 140):
        text = _render(rep, width=width)
        assert text.count(where) == 2  # in the rewrites table and the syncs table, whole
        assert "…" not in text  # the code cells wrap instead


def test_verify_gives_inserted_lines_rows_of_their_own(tmp_path, monkeypatch):
    """evaluate.py's accumulators: initialisations inserted before the loop and final reads
    after it. The final reads' syncs get rows of their own (no flag); the neighbours of the
    insertions are neither "rose" nor "rewritten, no syncs here"."""
    monkeypatch.chdir(tmp_path)
    before = [site("", 17, "copy", 10), site("", 18, "copy", 10), site("", 21, "copy", 10), site("", 22, "copy", 10)]
    after = [site("", 23, "copy", 1), site("", 23, "copy", 1)]  # the copies became non-blocking
    for s, n in zip(after, (26, 27), strict=True):
        s["new_line"] = n
    rep, hunks = _recorded(tmp_path, "evaluate.py", before, after)
    inserted = [h for h in hunks if h.end < h.start]
    assert [h.anchor for h in inserted] == [15, 23]  # `with torch.no_grad():` and `seen += ...`
    sy = rep["syncs"]
    assert sy["flags"] == []
    rows = {(r["line"], r["new_line"]): r for r in sy["lines"]}
    new_rows = [r for r in sy["lines"] if r["inserted"]]
    assert [(r["line"], r["new_line"], r["after"], r["flag"]) for r in new_rows] == [(23, 26, 1, None), (23, 27, 1, None)]
    assert new_rows[0]["code"] == "total_loss = total_loss_acc.item()"
    assert (15, None) not in rows and (23, None) not in rows  # neighbours get no row
    assert rows[(21, None)]["drop"] == 20 and rows[(21, None)]["rewritten"]
    assert (sy["original"]["total"], sy["rewritten"]["total"]) == (40, 2)
    assert rep["verdict"]["ok"]
    text = _render(rep, width=120)
    assert "evaluate.py:23+" in text and "✗ rose" not in text and "no syncs here" not in text
