"""``syncfix verify`` / ``trace`` end to end on the CPU: real child processes, small programs.

Most programs here do not import torch and pass --no-deterministic, to keep these tests fast;
one test runs the full torch set-up.
"""

from __future__ import annotations

import importlib.util as _importlib_util
import sys

import pytest
from conftest import tree_snapshot

NEEDS_TORCH = pytest.mark.skipif(
    _importlib_util.find_spec("torch") is None, reason="needs torch (pip install -e '.[verify]')"
)

FAST = ("--no-deterministic", "--repeats", "2", "--json")

SCRIPT = """
    import sys
    from syncfix.verify import record

    values = [i * 0.5 for i in range(int(sys.argv[1]))]
    total = sum(values)
    print("total", total, "n", len(values))
    record("values", values)
    record("stats", {"total": total, "max": max(values)})
    """

FIXERS = """
    def same_meaning(source, path):
        return source.replace("total = sum(values)", "total = 0.0\\nfor v in values:\\n    total += v")

    def wrong(source, path):
        return source.replace("i * 0.5", "i * 0.5 + 1e-12")

    def crash(source, path):
        return source.replace("total = sum(values)", "raise RuntimeError('planted')")
    """


@pytest.fixture
def project(make_file, tmp_path):
    make_file("prog.py", SCRIPT)
    make_file("fixers.py", FIXERS)
    return tmp_path


@NEEDS_TORCH  # the harness runs only with torch
def test_equivalent_rewrite_passes_and_touches_no_file(project, run_cli):
    before = tree_snapshot(project)
    r = run_cli(
        "verify", "prog.py", "--fixer", "fixers.py:same_meaning", *FAST, "--", "5", cwd=project
    )
    assert r.exit_code == 0, r.stdout + r.stderr
    rep = r.report
    assert rep["equivalence"]["status"] == "identical"
    assert rep["equivalence"]["compared"] == 9  # 2 printed numbers, 5 values, 2 stats
    (rw,) = rep["rewrites"]
    assert rw["path"] == str(project / "prog.py") and rw["changed"]
    assert [(h["start"], h["end"]) for h in rw["hunks"]] == [(5, 5)]
    assert rep["syncs"] == {"available": False, "reason": "the target did not import torch"}
    assert rep["timing"]["available"] and rep["timing"]["repeats"] == 2
    assert rep["target"]["args"] == ["5"]
    assert tree_snapshot(project) == before


@NEEDS_TORCH  # the harness runs only with torch
def test_wrong_rewrite_is_a_mismatch_naming_the_values(project, run_cli):
    r = run_cli("verify", "prog.py", "--fixer", "fixers.py:wrong", *FAST, "--", "4", cwd=project)
    assert r.exit_code == 1
    paths = {m["path"] for m in r.report["equivalence"]["mismatches"]}
    assert {"stdout line 1", "record('values')[0]", "record('stats')['total']"} <= paths
    # 0.5 * 1 + 1e-12 rounds to a different float; the report shows both
    m = next(m for m in r.report["equivalence"]["mismatches"] if m["path"] == "record('values')[1]")
    assert (m["original"], m["rewritten"]) == ("0.5", repr(0.5 + 1e-12))
    loose = run_cli(
        "verify",
        "prog.py",
        "--fixer",
        "fixers.py:wrong",
        *FAST,
        "--atol",
        "1e-9",
        "--",
        "4",
        cwd=project,
    )
    assert loose.exit_code == 0 and loose.report["equivalence"]["status"] == "within-tolerance"


@NEEDS_TORCH  # the harness runs only with torch
def test_rewritten_crash_is_reported_with_its_traceback(project, run_cli):
    r = run_cli("verify", "prog.py", "--fixer", "fixers.py:crash", *FAST, "--", "4", cwd=project)
    assert r.exit_code == 1
    (err,) = r.report["errors"]
    assert (err["side"], err["phase"], err["kind"]) == ("rewritten", "capture", "error")
    assert "planted" in err["message"] and "prog.py" in err["traceback"]
    assert "syncfix/harness" not in err["traceback"]


@NEEDS_TORCH  # the harness runs only with torch
def test_original_crash_or_exit_status_is_an_error(make_file, tmp_path, run_cli):
    make_file("bad.py", "import sys\nprint('hi')\nsys.exit(3)\n")
    r = run_cli("verify", "bad.py", *FAST, cwd=tmp_path)
    assert r.exit_code == 2
    err = r.report["errors"][0]
    assert err["side"] == "original" and err["kind"] == "exit" and "3" in err["message"]


@NEEDS_TORCH  # the harness runs only with torch
def test_a_hang_is_killed_and_reported(make_file, tmp_path, run_cli):
    make_file("hang.py", "while True:\n    pass\n")
    r = run_cli("verify", "hang.py", *FAST, "--timeout", "1", cwd=tmp_path)
    assert r.exit_code == 2
    kinds = {(e["side"], e["kind"]) for e in r.report["errors"]}
    assert ("original", "timeout") in kinds


@NEEDS_TORCH  # the harness runs only with torch
def test_a_hard_crash_is_reported(make_file, tmp_path, run_cli):
    make_file("die.py", "import os\nos._exit(9)\n")
    r = run_cli("verify", "die.py", *FAST, cwd=tmp_path)
    assert r.exit_code == 2
    err = r.report["errors"][0]
    assert err["kind"] == "crash" and "exit status 9" in err["message"]


@NEEDS_TORCH  # the harness runs only with torch
def test_function_target_compares_the_return_value(make_file, tmp_path, run_cli):
    make_file("lib/__init__.py", "")
    make_file(
        "lib/calc.py",
        """
        import random

        def compute():
            random.random()  # seeded identically in both runs
            return {"a": [1, 2.5, (True, None)], "r": random.random()}
        """,
    )
    make_file(
        "fixers.py",
        """
        def flip(source, path):
            return source.replace("(True, None)", "(1, None)")
        """,
    )
    ok = run_cli("verify", "lib.calc:compute", "--fixer", "fixers.py:same", *FAST, cwd=tmp_path)
    assert ok.exit_code == 2 and "--fixer" in ok.stderr  # fixers.py has no `same`
    ok = run_cli("verify", "lib.calc:compute", *FAST, cwd=tmp_path)
    assert ok.exit_code == 0 and ok.report["equivalence"]["status"] == "identical"
    bad = run_cli("verify", "lib.calc:compute", "--fixer", "fixers.py:flip", *FAST, cwd=tmp_path)
    assert bad.exit_code == 1
    (m,) = bad.report["equivalence"]["mismatches"]
    assert m["path"] == "return['a'][2][0]" and "type differs: bool vs int" in m["reason"]
    also_file = run_cli(
        "verify", "lib/calc.py:compute", "--fixer", "fixers.py:flip", *FAST, cwd=tmp_path
    )
    assert also_file.exit_code == 1


@NEEDS_TORCH  # the harness runs only with torch
def test_nondeterministic_original_is_pointed_out(make_file, tmp_path, run_cli):
    make_file("clock.py", "import time\nprint(time.perf_counter_ns())\n")
    r = run_cli("verify", "clock.py", *FAST, cwd=tmp_path)
    assert any("not deterministic" in n for n in r.report["notes"])


@NEEDS_TORCH
def test_torch_program_with_deterministic_settings(make_file, tmp_path, run_cli):
    make_file(
        "t.py",
        """
        import torch
        from syncfix.verify import record

        assert torch.are_deterministic_algorithms_enabled()
        x = torch.randn(3, 4)  # seeded by the harness
        record("x", x)
        print(x.sum())
        """,
    )
    make_file(
        "fixers.py",
        """
        def scale(source, path):
            return source.replace('record("x", x)', 'record("x", x * 1.0000001)')
        """,
    )
    args = ("--fixer", "fixers.py:scale", "--warmup", "1", "--repeats", "0", "--json")
    r = run_cli("verify", "t.py", *args, cwd=tmp_path)
    assert r.exit_code == 1, r.stdout
    (m,) = r.report["equivalence"]["mismatches"]
    assert (
        m["path"] == "record('x')"
        and "elements differ" in m["reason"]
        and "dtype=torch.float32" in m["original"]
    )
    assert r.report["environment"]["torch"]


@NEEDS_TORCH  # the harness runs only with torch
def test_real_rules_are_applied(make_file, tmp_path, run_cli):
    from syncfix import fix_code

    src = "import sys\nvalues = [1, 2]\nprint(sum(values))\n"
    make_file("plain.py", src)
    r = run_cli("verify", "plain.py", "--select", "SFX101", "--unsafe-fixes", *FAST, cwd=tmp_path)
    assert r.exit_code == 0
    changed = (
        fix_code(src, path=str(tmp_path / "plain.py"), select=["SFX101"], unsafe_fixes=True) != src
    )
    assert bool(r.report["rewrites"]) == changed
    assert r.report["settings"]["select"] == ["SFX101"] and r.report["settings"]["unsafe_fixes"]


@NEEDS_TORCH  # the harness runs only with torch
def test_human_report(project, run_cli):
    r = run_cli(
        "verify",
        "prog.py",
        "--fixer",
        "fixers.py:wrong",
        "--no-deterministic",
        "--repeats",
        "1",
        "--",
        "3",
        cwd=project,
    )
    assert r.exit_code == 1
    assert (
        "Values that differ" in r.stdout and "record('values')" in r.stdout and "FAIL" in r.stdout
    )


def test_usage_errors_exit_2(tmp_path, run_cli):
    assert run_cli("verify", "missing.py", cwd=tmp_path).exit_code == 2
    assert run_cli("verify", "not a target", cwd=tmp_path).exit_code == 2
    assert run_cli("trace", "missing.py", cwd=tmp_path).exit_code == 2


@pytest.mark.skipif(sys.platform != "linux", reason="posix only")
@NEEDS_TORCH
def test_trace_without_cuda_says_so(make_file, tmp_path, run_cli):
    import torch

    if torch.cuda.is_available():
        pytest.skip("this machine has CUDA")
    make_file("p.py", "print(1)\n")
    r = run_cli("trace", "p.py", "--json", cwd=tmp_path)
    assert r.exit_code == 2 and "needs a CUDA device" in r.report["reason"]


def test_without_torch_verify_says_how_to_install_it(project, run_cli, monkeypatch):
    """No tracebacks and no "the original program failed": torch is missing, and how to get it."""
    monkeypatch.setitem(sys.modules, "torch", None)  # `import torch` now fails, as without torch
    for command in ("verify", "trace"):
        r = run_cli(command, "prog.py", "--no-deterministic", "--", "3", cwd=project)
        assert r.exit_code == 2
        assert "torch is not installed" in r.stderr and '".[verify]"' in r.stderr
        assert "Traceback" not in r.stdout + r.stderr and "program failed" not in r.stdout
    r = run_cli("verify", "prog.py", "--json", "--", "3", cwd=project)
    assert r.exit_code == 2 and "torch is not installed" in r.report["verdict"]["reasons"][0]
