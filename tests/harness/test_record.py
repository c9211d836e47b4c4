"""``syncfix trace --record``: the observer, the instrumented compile, the file, the CLI (CPU)."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

from syncfix.harness.record import Observer
from syncfix.observed import SCHEMA, Need, Observations, holds

torch = pytest.importorskip("torch")

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "train_from_config.py"


def _need(source: str, text: str, fact: str = "tensor", line: int | None = None) -> Need:
    """The need for the first occurrence of ``text`` (on ``line`` if given), 1-based columns."""
    pattern = re.escape(text) + (r"\b" if text[-1].isidentifier() else "")
    for n, row in enumerate(source.splitlines(), 1):
        m = re.search(r"(?<![\w.])" + pattern, row)
        if (line is None or n == line) and m:
            return Need(fact, n, m.start() + 1, n, m.end() + 1)
    raise AssertionError(text)


def _run(source: str, needs: list[Need], path: str = "/tmp/snippet.py") -> tuple[Observer, dict]:
    observer = Observer({path: needs})
    observer.install()
    tree = observer.instrument(path, source)
    assert tree is not None
    namespace: dict = {}
    exec(compile(tree, path, "exec"), namespace)
    return observer, observer.results().get(path, {})


def test_types_devices_dtypes_and_counts():
    source = (
        "import torch\n"
        "out = []\n"
        "for i in range(3):\n"
        "    t = torch.ones(2, 3) if i else torch.ones(())\n"
        "    out.append(t.sum())\n"
        "    n = len(out)\n"
    )
    tensor, count = _need(source, "t", line=5), _need(source, "out", line=6)
    _, seen = _run(source, [tensor, count])
    rec = seen[tensor.key]
    assert rec["count"] == 3 and rec["types"] == {"torch.Tensor": 3} and rec["devices"] == {"cpu": 3}
    assert rec["dtypes"] == {"torch.float32": 3} and rec["numel"] == {"min": 1, "max": 6}
    assert rec["ndim"] == {"0": 1, "2": 2} and rec["pinned"] == {"false": 3}
    assert holds("cpu_tensor", rec) and holds("floating", rec) and not holds("one_element", rec)
    assert seen[count.key]["types"] == {"list": 3} and not holds("tensor", seen[count.key])


def test_device_values_name_their_device():
    source = 'import torch\nfor d in ["cpu", torch.device("cuda", 1), 0]:\n    x = str(d)\n'
    need = _need(source, "d", "cuda_device", line=3)
    _, seen = _run(source, [need])
    assert seen[need.key]["devices"] == {"cpu": 1, "cuda": 2}


def test_each_expression_is_evaluated_once_and_unchanged():
    source = "calls = []\ndef f(v):\n    calls.append(v)\n    return v * 2\ny = f(3) + 1\n"
    need = _need(source, "f(3)")
    observer = Observer({"/tmp/once.py": [need]})
    observer.install()
    namespace: dict = {}
    exec(compile(observer.instrument("/tmp/once.py", source), "/tmp/once.py", "exec"), namespace)
    assert namespace["calls"] == [3] and namespace["y"] == 7
    assert observer.results()["/tmp/once.py"][need.key]["types"] == {"int": 1}


def test_a_span_never_run_is_absent_and_unmatched_spans_are_listed():
    source = "x = 1\nif x > 5:\n    y = x + 1\n"
    ran, never = _need(source, "x", line=2), _need(source, "x", line=3)
    bogus = Need("tensor", 1, 1, 1, 3)
    observer, seen = _run(source, [ran, never, bogus])
    assert ran.key in seen and never.key not in seen
    assert observer.missing["/tmp/snippet.py"] == [bogus.key]


def test_a_buffer_refilled_in_place_is_caught_and_fresh_tensors_are_not():
    refilled = (
        "import torch\nbuf = torch.zeros(4)\n"
        "for i in range(4):\n    buf.copy_(torch.full((4,), float(i)))\n    y = buf.clone()\n"
    )
    need = _need(refilled, "buf", "unshared_source", line=5)
    _, seen = _run(refilled, [need])
    rec = seen[need.key]
    assert rec["reused_storage"] == 3 and rec["written_between"] == 3
    fresh = "import torch\nkeep = []\nfor i in range(4):\n    t = torch.full((4,), float(i))\n    keep.append(t)\n"
    need = _need(fresh, "t", "unshared_source", line=5)
    _, seen = _run(fresh, [need])
    assert seen[need.key].get("written_between", 0) == 0
    assert holds("unshared_source", seen[need.key]) is True


def test_pinned_flag():
    try:
        torch.empty(1).pin_memory()
    except RuntimeError:
        pytest.skip("no pinned memory on this machine")
    source = "import torch\nfor _ in range(2):\n    b = torch.ones(3).pin_memory()\n    c = b + 0\n"
    need = _need(source, "b", line=4)
    _, seen = _run(source, [need])
    assert seen[need.key]["pinned"] == {"true": 2}


def _project(tmp_path: Path) -> Path:
    script = tmp_path / "train.py"
    shutil.copy(EXAMPLE, script)
    return script


CPU_CONFIG = '{"device": "cpu", "data": "synthetic", "batch_size": 64, "dim": 32, "epochs": 1}'


def test_trace_record_writes_the_file_and_apply_observed_reads_it(tmp_path, run_cli):
    script = _project(tmp_path)
    r = run_cli("trace", "train.py", "--record", "--json", "--", "--config", CPU_CONFIG, cwd=tmp_path)
    assert r.exit_code == 0, r.stdout + r.stderr
    summary = json.loads(r.stdout)
    assert summary["spans"] == summary["spans_run"] == 4 and summary["executions"] == 4 * 60
    assert summary["needs_cuda"] == (["cuda_device"] if not torch.cuda.is_available() else [])
    data = json.loads((tmp_path / ".syncfix" / "observed.json").read_text())
    assert data["schema"] == SCHEMA and data["target"][0] == "train.py"
    obs = Observations.load(str(tmp_path / ".syncfix" / "observed.json"))
    spans = obs.for_file(str(script), script.read_bytes()).spans
    assert all(rec["count"] == 60 for rec in spans.values())
    # the device was the CPU: the copies' fixes are not observed, and the finding says why
    from syncfix import check_code

    found = check_code(script.read_text(), path=str(script), observations=obs)
    copies = [f for f in found if f.code == "SFX101"]
    assert copies and all(f.fix is None or f.fix.applicability.value != "observed" for f in copies)
    assert all("not always names a CUDA device" in f.message for f in copies if f.fix is None)


def test_trace_record_of_a_failing_program_writes_nothing(tmp_path, run_cli):
    script = _project(tmp_path)
    script.write_text(script.read_text().replace("    torch.manual_seed(0)\n", "    raise SystemExit(3)\n"))
    r = run_cli("trace", "train.py", "--record", "--", "--config", CPU_CONFIG, cwd=tmp_path)
    assert r.exit_code == 2 and "Nothing was written" in r.stderr
    assert not (tmp_path / ".syncfix").exists()


def test_trace_record_to_a_named_file(tmp_path, run_cli):
    _project(tmp_path)
    r = run_cli("trace", "train.py", "--record", "obs.json", "--", "--config", CPU_CONFIG, cwd=tmp_path)
    assert r.exit_code == 0, r.stderr
    assert json.loads((tmp_path / "obs.json").read_text())["schema"] == SCHEMA
