"""The observation file: predicates over recorded spans, stale files, bad input."""

from __future__ import annotations

import json

import pytest

from syncfix.observed import (
    SCHEMA,
    Need,
    ObservationError,
    Observations,
    holds,
    source_hash,
    span_key,
)


def _tensor(n: int = 3, device: str = "cpu", dtype: str = "torch.float32", **extra):
    return {
        "count": n,
        "types": {"torch.Tensor": n},
        "devices": {device: n},
        "dtypes": {dtype: n},
        "numel": {"min": 1, "max": 1},
        **extra,
    }


def test_facts_on_a_cpu_float_scalar():
    rec = _tensor()
    assert holds("tensor", rec) and holds("cpu_tensor", rec) and holds("floating", rec)
    assert holds("one_element", rec) and holds("real", rec)
    assert holds("cuda_tensor", rec) is False and holds("cuda_device", rec) is False


def test_a_fact_must_hold_on_every_execution():
    rec = _tensor(4)
    rec["types"] = {"torch.Tensor": 3, "NoneType": 1}
    assert holds("tensor", rec) is False
    mixed = _tensor(4)
    mixed["dtypes"] = {"torch.float32": 3, "torch.int64": 1}
    assert holds("floating", mixed) is False
    assert holds("one_element", {**_tensor(), "numel": {"min": 1, "max": 8}}) is False


def test_never_executed_is_unknown_not_false():
    assert holds("tensor", None) is None
    assert holds("tensor", {"count": 0}) is None


def test_unshared_source_pinned_and_refilled():
    assert holds("unshared_source", _tensor(pinned={"false": 3})) is True
    assert holds("unshared_source", _tensor(pinned={"true": 3}, reused_storage=2, written_between=0)) is True
    assert holds("unshared_source", _tensor(pinned={"true": 3}, reused_storage=2, written_between=1)) is False
    assert holds("unshared_source", _tensor(device="cuda")) is False


def test_device_values():
    rec = {"count": 2, "types": {"str": 1, "torch.device": 1}, "devices": {"cuda": 2}}
    assert holds("cuda_device", rec) is True
    assert holds("cuda_device", {**rec, "devices": {"cuda": 1, "cpu": 1}}) is False


def test_unknown_fact_is_an_error():
    with pytest.raises(ValueError):
        Need("nonsense", 1, 1, 1, 2)


def _write(tmp_path, files):
    path = tmp_path / ".syncfix" / "observed.json"
    path.parent.mkdir()
    path.write_text(json.dumps({"schema": SCHEMA, "root": str(tmp_path), "files": files}))
    return str(path)


def test_stale_file_is_ignored(tmp_path):
    src = "x = 1\n"
    need = Need("tensor", 1, 5, 1, 6)
    obs = Observations.load(_write(tmp_path, {"a.py": {"sha256": source_hash(src), "spans": {need.key: _tensor()}}}))
    ok, why = obs.for_file(str(tmp_path / "a.py"), src).check([need])
    assert ok and why == ""
    stale = obs.for_file(str(tmp_path / "a.py"), src + "y = 2\n")
    assert stale.stale
    ok, why = stale.check([need])
    assert not ok and "changed since the recorded run" in why


def test_unexecuted_span_gets_nothing(tmp_path):
    src = "x = 1\n"
    obs = Observations.load(_write(tmp_path, {"a.py": {"sha256": source_hash(src), "spans": {}}}))
    ok, why = obs.for_file(str(tmp_path / "a.py"), src).check([Need("tensor", 1, 1, 1, 2)])
    assert not ok and "never ran" in why


def test_bad_files(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text("{")
    with pytest.raises(ObservationError, match="bad JSON"):
        Observations.load(str(bad))
    bad.write_text(json.dumps({"schema": "other", "files": {}}))
    with pytest.raises(ObservationError, match="schema"):
        Observations.load(str(bad))
    with pytest.raises(ObservationError, match="cannot read"):
        Observations.load(str(tmp_path / "missing.json"))


def test_round_trip(tmp_path):
    obs = Observations(str(tmp_path), {"a.py": {"sha256": "0", "spans": {span_key(1, 1, 1, 2): _tensor()}}}, {})
    out = tmp_path / "o.json"
    obs.save(str(out))
    again = Observations.load(str(out))
    assert again.files == obs.files and again.root == str(tmp_path)
