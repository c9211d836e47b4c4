"""The observed tier: fixes whose facts a recorded run showed, in every output."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from click.testing import CliRunner

from syncfix import check_code, observable_needs
from syncfix.cli import cli
from syncfix.model import Applicability
from syncfix.observed import SCHEMA, source_hash

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "train_from_config.py"


def _record(n: int = 3, device: str = "cpu", pinned: bool = False) -> dict:
    """What the recorder writes for a value seen ``n`` times (a tensor, or a device)."""
    return {
        "count": n,
        "types": {"torch.Tensor": n},
        "devices": {device: n},
        "dtypes": {"torch.float32": n},
        "numel": {"min": 4, "max": 4},
        "pinned": {"true" if pinned else "false": n},
    }


def _project(tmp_path: Path, *, cuda: bool = True, stale: bool = False, ran: bool = True) -> tuple[Path, Path]:
    script = tmp_path / "train.py"
    shutil.copy(EXAMPLE, script)
    needs = observable_needs([str(script)])[str(script)]
    spans = {}
    for need in needs:
        if need.fact == "cuda_device":
            spans[need.key] = {"count": 3, "types": {"torch.device": 3}, "devices": {"cuda" if cuda else "cpu": 3}}
        else:
            spans[need.key] = _record()
    if not ran:
        spans = {}
    source = script.read_bytes() + (b"# edited\n" if stale else b"")
    obs = tmp_path / ".syncfix" / "observed.json"
    obs.parent.mkdir()
    obs.write_text(json.dumps({
        "schema": SCHEMA, "root": str(tmp_path),
        "files": {"train.py": {"sha256": source_hash(source), "spans": spans}},
    }))
    return script, obs


def _run(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(cli, list(args))
    return result.exit_code, result.output


def test_needs_point_at_the_receiver_and_the_device(tmp_path):
    script, _ = _project(tmp_path)
    lines = script.read_text().splitlines()
    needs = observable_needs([str(script)])[str(script)]
    texts = {(n.fact, lines[n.line - 1][n.column - 1 : n.end_column - 1]) for n in needs}
    assert texts == {("unshared_source", "x"), ("cuda_device", "device"), ("unshared_source", "y")}


def test_observed_fixes_apply_only_with_observations(tmp_path):
    script, obs = _project(tmp_path)
    source = script.read_text()
    plain = check_code(source, path=str(script))
    assert not any(f.fix and f.fix.applicability is Applicability.OBSERVED for f in plain)
    seen = check_code(source, path=str(script), observations=str(obs))
    kinds = {f.line: f.fix.applicability for f in seen if f.fix}
    assert kinds[46] is Applicability.OBSERVED and kinds[47] is Applicability.OBSERVED
    observed = [f for f in seen if f.fix and f.fix.applicability is Applicability.OBSERVED]
    assert {n.fact for f in observed for n in f.fix.needs} == {"unshared_source", "cuda_device"}


def test_check_and_apply_label_observed_fixes(tmp_path):
    script, obs = _project(tmp_path)
    code, out = _run("check", "--no-cache", "--isolated", "--output-format", "concise", "--observed", str(obs), str(script))
    assert code == 1 and out.count("[*] [observed]") == 2, out
    code, out = _run("check", "--no-cache", "--isolated", "--statistics", "--observed", str(obs), str(script))
    assert "(2 observed)" in out, out
    code, out = _run("apply", "--no-cache", "--isolated", "--diff", "--observed", str(script))  # default file
    assert "# syncfix: observed fixes (facts a recorded run showed) at lines 46, 47" in out, out
    assert 'x = x.to(device, non_blocking=True)' in out
    assert "non_blocking" not in script.read_text()  # --diff writes nothing
    code, out = _run("apply", "--no-cache", "--isolated", "--observed", str(obs), str(script))
    assert script.read_text().count("non_blocking=True") == 2


def test_machine_formats_carry_the_tier(tmp_path):
    script, obs = _project(tmp_path)
    base = ("check", "--no-cache", "--isolated", "--observed", str(obs), str(script), "--output-format")
    _, out = _run(*base, "json")
    fixes = [f["fix"] for f in json.loads(out) if f["fix"] and f["fix"]["applicability"] == "observed"]
    assert len(fixes) == 2 and all(fx["needs"] for fx in fixes)
    _, out = _run(*base, "sarif")
    props = [r.get("properties", {}) for r in json.loads(out)["runs"][0]["results"]]
    fix_props = [fx.get("properties", {}) for r in json.loads(out)["runs"][0]["results"] for fx in r.get("fixes", [])]
    assert any(p.get("applicability") == "observed" for p in props + fix_props), out
    _, out = _run(*base, "rdjson")
    assert "[observed fix]" in out and "[unsafe fix]" not in out, out


def test_stale_or_unexecuted_observations_give_no_fix(tmp_path):
    script, obs = _project(tmp_path, stale=True)
    _, out = _run("check", "--no-cache", "--isolated", "-o", "concise", "--observed", str(obs), str(script))
    assert "[observed]" not in out and "the file changed since the recorded run: record again" in out, out
    script, obs = _project(tmp_path / "b", ran=False) if (tmp_path / "b").mkdir() is None else (None, None)
    _, out = _run("check", "--no-cache", "--isolated", "-o", "concise", "--observed", str(obs), str(script))
    assert "[observed]" not in out and "never ran in the recorded run" in out, out


def test_a_cpu_device_is_not_observed_as_cuda(tmp_path):
    script, obs = _project(tmp_path, cuda=False)
    _, out = _run("check", "--no-cache", "--isolated", "-o", "concise", "--observed", str(obs), str(script))
    assert "[observed]" not in out and "not always names a CUDA device" in out, out


def test_missing_or_bad_observation_file_exits_2(tmp_path):
    script = tmp_path / "train.py"
    shutil.copy(EXAMPLE, script)
    code, out = _run("check", "--no-cache", "--isolated", "--observed", str(script))
    assert code == 2 and "record one with `syncfix trace TARGET --record`" in out, out
    bad = tmp_path / "bad.json"
    bad.write_text("{}")
    code, out = _run("check", "--no-cache", "--isolated", "--observed", str(bad), str(script))
    assert code == 2 and "not an observation file" in out, out


def test_a_source_seen_on_cuda_gets_no_observed_fix(tmp_path):
    # a CUDA source copies without the host waiting: nothing to make non-blocking
    script, obs = _project(tmp_path)
    data = json.loads(obs.read_text())
    for key, rec in data["files"]["train.py"]["spans"].items():
        if "types" in rec and "torch.Tensor" in rec["types"]:
            data["files"]["train.py"]["spans"][key] = _record(device="cuda")
    obs.write_text(json.dumps(data))
    _, out = _run("check", "--no-cache", "--isolated", "-o", "concise", "--observed", str(obs), str(script))
    assert "[observed]" not in out and "is not always a CPU tensor that is pageable" in out, out


SFX302_SOURCE = """import torch


def run(values):
    total = 0.0
    for v in values:
        t = torch.as_tensor(v, device="cuda")
        total += t.item()
    return total
"""


def _observations_for(tmp_path: Path, source: str, dtype: str) -> tuple[Path, Path]:
    script = tmp_path / "acc.py"
    script.write_text(source)
    needs = observable_needs([str(script)], include_cold=True)[str(script)]
    assert {n.fact for n in needs} == {"floating", "one_element"}
    spans = {n.key: {**_record(device="cuda"), "dtypes": {dtype: 3}, "numel": {"min": 1, "max": 1}} for n in needs}
    obs = tmp_path / "obs.json"
    obs.write_text(json.dumps({"schema": SCHEMA, "root": str(tmp_path),
                               "files": {"acc.py": {"sha256": source_hash(source), "spans": spans}}}))
    return script, obs


def test_sfx302_total_of_an_observed_float_scalar(tmp_path):
    script, obs = _observations_for(tmp_path, SFX302_SOURCE, "torch.float32")
    found = check_code(SFX302_SOURCE, path=str(script), include_cold=True, select=["SFX302"], observations=str(obs))
    assert [f.fix.applicability for f in found if f.fix] == [Applicability.OBSERVED]
    plain = check_code(SFX302_SOURCE, path=str(script), include_cold=True, select=["SFX302"], unsafe_fixes=True)
    assert all(f.fix is None for f in plain)
    script, obs = _observations_for(tmp_path / "i" if (tmp_path / "i").mkdir() is None else tmp_path, SFX302_SOURCE, "torch.int64")
    found = check_code(SFX302_SOURCE, path=str(script), include_cold=True, select=["SFX302"], observations=str(obs))
    assert all(f.fix is None for f in found) and "not always a tensor of a floating-point dtype" in found[0].message
