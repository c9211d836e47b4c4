"""Facts observed on a real run: what a fix needs, what a recorded run saw, and whether it held.

Some facts no static analysis proves (a loader from a library yields CPU tensors; a device from a
config file is CUDA). A rule that can build a fix but lacks such facts attaches the fix with the
``Need``s it rests on; ``syncfix trace --record`` watches the value of each needed expression on
every execution and writes what it saw to an observation file; ``syncfix apply --observed`` applies
a fix, in the *observed* tier, only when each of its needs held on every recorded execution.

This module is plain data and pure predicates (no torch, no libcst), shared by the rules' side and
the recorder's side. The observation file's schema is documented in docs/harness.md.

A span is the expression's source range as findings give it: 1-based line, 1-based column in code
points, end exclusive. The recorder evaluates the expression as the program does and looks at the
value it produced; it never evaluates anything the program would not.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

SCHEMA = "syncfix-observed/1"
DEFAULT_FILE = os.path.join(".syncfix", "observed.json")

# What each fact asks of the value at its span, on every execution (the words `syncfix rule` uses).
FACTS: dict[str, str] = {
    "tensor": "is a torch.Tensor",
    "cpu_tensor": "is a torch.Tensor on the CPU",
    "cuda_tensor": "is a torch.Tensor on a CUDA device",
    "cuda_device": "names a CUDA device (a device string, index or torch.device; a tensor's device)",
    "floating": "is a tensor of a floating-point dtype",
    "real": "is a tensor of a real (not complex) dtype",
    "one_element": "is a tensor of exactly one element",
    "unshared_source": (
        "is a CPU tensor that is pageable, or pinned and never written in place between two "
        "copies (its storage's version counter unchanged when the same storage comes back)"
    ),
    "python_float": "is a Python float",
}
# Facts only a run with CUDA can show (a CPU-only run records them as not seen).
NEEDS_CUDA = frozenset({"cuda_tensor", "cuda_device"})


@dataclass(frozen=True)
class Need:
    """A fact a fix rests on, about the value of the expression at a span of the file."""

    fact: str  # a key of FACTS
    line: int
    column: int
    end_line: int
    end_column: int

    def __post_init__(self) -> None:
        if self.fact not in FACTS:
            raise ValueError(f"unknown fact {self.fact!r}")

    @property
    def key(self) -> str:
        return span_key(self.line, self.column, self.end_line, self.end_column)

    def describe(self) -> str:
        return f"the value at {self.line}:{self.column} {FACTS[self.fact]}"


def span_key(line: int, column: int, end_line: int, end_column: int) -> str:
    """How a span is written in the observation file: ``"12:9-12:21"``."""
    return f"{line}:{column}-{end_line}:{end_column}"


def source_hash(data: bytes | str) -> str:
    """The hash observations are keyed by (sha256 of the file's bytes, UTF-8 for text)."""
    if isinstance(data, str):
        data = data.encode("utf-8")
    return hashlib.sha256(data).hexdigest()


# ---- one span's record ------------------------------------------------------------------------
#
# What the recorder keeps per span (all counts are executions):
#   count                 how often the expression was evaluated
#   types                 {"torch.Tensor": n, "int": m, ...}   qualified type names
#   devices               {"cuda": n, "cpu": m}   a tensor's device type, or the device a
#                         device-like value (str, int, torch.device) names; absent for others
#   dtypes                {"torch.float32": n}    tensors only
#   numel                 {"min": a, "max": b}    tensors only
#   ndim                  {"0": n, "2": m}        tensors only
#   pinned                {"true": n, "false": m} CPU tensors only
#   reused_storage        executions whose tensor storage (data pointer) came back from an earlier one
#   written_between       of those, how many found the storage's version counter changed since
#                         the copy before: the buffer was refilled in place


def holds(fact: str, record: Mapping[str, Any] | None) -> bool | None:
    """Whether ``fact`` held on every execution ``record`` saw; None when never executed."""
    if not record or not record.get("count"):
        return None
    n = int(record["count"])
    types: Mapping[str, int] = record.get("types", {})
    devices: Mapping[str, int] = record.get("devices", {})
    dtypes: Mapping[str, int] = record.get("dtypes", {})
    numel: Mapping[str, int] = record.get("numel", {})
    pinned: Mapping[str, int] = record.get("pinned", {})
    tensors = types.get("torch.Tensor", 0) + types.get("torch.nn.parameter.Parameter", 0)
    all_tensors = tensors == n
    if fact == "tensor":
        return all_tensors
    if fact == "cpu_tensor":
        return all_tensors and devices.get("cpu", 0) == n
    if fact == "cuda_tensor":
        return all_tensors and devices.get("cuda", 0) == n
    if fact == "cuda_device":
        return devices.get("cuda", 0) == n
    if fact == "floating":
        return all_tensors and sum(v for k, v in dtypes.items() if _floating(k)) == n
    if fact == "real":
        return all_tensors and sum(v for k, v in dtypes.items() if not k.startswith("torch.complex")) == n
    if fact == "one_element":
        return all_tensors and numel.get("min") == 1 and numel.get("max") == 1
    if fact == "unshared_source":
        if not (all_tensors and devices.get("cpu", 0) == n):
            return False
        if pinned.get("true", 0) == 0:
            return True  # pageable: the copy is staged before the call returns
        return int(record.get("written_between", 0)) == 0
    if fact == "python_float":
        return types.get("float", 0) == n
    raise ValueError(f"unknown fact {fact!r}")


def _floating(dtype: str) -> bool:
    name = dtype.removeprefix("torch.")
    return name.startswith(("float", "bfloat", "half", "double")) and "complex" not in name


# ---- the file ---------------------------------------------------------------------------------


class ObservationError(Exception):
    """An observation file that cannot be read: reported with exit code 2."""


@dataclass
class Observations:
    """A loaded observation file: per file (relative to ``root``), its hash and span records."""

    root: str
    files: dict[str, dict[str, Any]]  # relpath -> {"sha256": ..., "spans": {span_key: record}}
    meta: dict[str, Any]  # schema, created, target, python, torch, cuda, device

    @classmethod
    def load(cls, path: str, root: str | None = None) -> Observations:
        try:
            with open(path, encoding="utf-8") as fh:
                data = json.load(fh)
        except OSError as exc:
            raise ObservationError(f"cannot read observations {path}: {exc.strerror or exc}") from exc
        except json.JSONDecodeError as exc:
            raise ObservationError(f"{path} is not an observation file (bad JSON: {exc})") from exc
        if not isinstance(data, dict) or data.get("schema") != SCHEMA:
            raise ObservationError(f"{path} is not an observation file (schema is not {SCHEMA})")
        files = data.get("files")
        if not isinstance(files, dict):
            raise ObservationError(f"{path}: 'files' must be an object")
        meta = {k: v for k, v in data.items() if k != "files"}
        base = root if root is not None else str(data.get("root") or os.path.dirname(os.path.dirname(os.path.abspath(path))))
        return cls(os.path.abspath(base), files, meta)

    def for_file(self, path: str, source: bytes | str) -> FileObservations:
        """The records of ``path``: empty and ``stale`` when the file changed since the run."""
        rel = relpath(path, self.root)
        entry = self.files.get(rel)
        if entry is None:
            return FileObservations(rel, {}, stale=False, known=False)
        if entry.get("sha256") != source_hash(source):
            return FileObservations(rel, {}, stale=True, known=True)
        return FileObservations(rel, dict(entry.get("spans", {})), stale=False, known=True)

    def to_json(self) -> dict[str, Any]:
        return {**self.meta, "schema": SCHEMA, "root": self.root, "files": self.files}

    def save(self, path: str) -> None:
        os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
        tmp = path + ".tmp"
        with open(tmp, "w", encoding="utf-8") as fh:
            json.dump(self.to_json(), fh, indent=1, sort_keys=True)
            fh.write("\n")
        os.replace(tmp, path)


@dataclass(frozen=True)
class FileObservations:
    rel: str
    spans: Mapping[str, Mapping[str, Any]]
    stale: bool  # the file changed since the recorded run: its observations are ignored
    known: bool  # the run recorded this file at all

    def check(self, needs: tuple[Need, ...] | list[Need]) -> tuple[bool, str]:
        """Whether every need held on every execution, and if not, why (for the finding)."""
        if self.stale:
            return False, "the file changed since the recorded run: record again"
        for need in needs:
            verdict = holds(need.fact, self.spans.get(need.key))
            if verdict is None:
                return False, f"line {need.line} never ran in the recorded run"
            if not verdict:
                return False, f"observed: the value at {need.line}:{need.column} is not always {FACTS[need.fact].removeprefix('is ')}"
        return True, ""


def relpath(path: str, root: str) -> str:
    """``path`` relative to ``root`` with forward slashes (absolute when outside it)."""
    p = os.path.abspath(path)
    r = os.path.relpath(p, root)
    return p.replace(os.sep, "/") if r.startswith("..") else r.replace(os.sep, "/")
