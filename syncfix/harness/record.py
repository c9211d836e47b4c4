"""``syncfix trace --record``: watch, on a real run, the values that fixes wait for.

The parent asks syncfix which facts its fixes need (:func:`syncfix.observable_needs`: a span of
the source and a fact, e.g. "the receiver of this ``.to(device)`` is a CPU tensor nothing
refills"). The child compiles each such file from an instrumented tree: every needed expression
``E`` becomes ``__syncfix_observe__(i, E)``, which evaluates ``E`` once, as before, notes what
the value was, and returns it unchanged. Line numbers stay those of the file, so tracebacks do
too. At the end the child hands back one record per span, in the format of
:mod:`syncfix.observed`, and the parent writes the observation file.

What the observer reads never waits for the GPU: a tensor's type, device, dtype, numel and
dimensions, ``is_pinned()``, its storage's data pointer and its version counter.
"""

from __future__ import annotations

import ast
import builtins
import os
import sys
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from ..observed import DEFAULT_FILE, NEEDS_CUDA, Need, Observations, relpath, source_hash, span_key

HOOK = "__syncfix_observe__"
_SKIP_DIRS = frozenset(
    {"site-packages", "dist-packages", ".venv", "venv", ".tox", ".nox", ".git", "__pycache__", "build"}
)


class Observer:
    """Instruments files and records, per needed span, what each evaluation produced."""

    def __init__(self, needs: Mapping[str, Sequence[Mapping[str, Any]]]) -> None:
        # path -> {span key: id}; the id is what the instrumented code passes back
        self.wanted: dict[str, dict[str, int]] = {}
        self.where: list[tuple[str, str]] = []  # id -> (path, span key)
        for path, items in needs.items():
            spans = self.wanted.setdefault(os.path.abspath(path), {})
            for item in items:
                need = item if isinstance(item, Need) else Need(**item)
                if need.key not in spans:
                    spans[need.key] = len(self.where)
                    self.where.append((os.path.abspath(path), need.key))
        self.records: dict[int, dict[str, Any]] = {}
        self._storages: dict[int, dict[int, int]] = {}  # id -> {storage pointer: version}
        self.instrumented: dict[str, int] = {}  # path -> spans found in its tree
        self.missing: dict[str, list[str]] = {}  # path -> span keys that match no expression

    def install(self) -> None:
        setattr(builtins, HOOK, self.observe)

    # ---- compiling ---------------------------------------------------------------------------
    def instrument(self, path: str, source: str) -> ast.Module | None:
        """``source``'s tree with the needed expressions wrapped; None if it has none."""
        spans = self.wanted.get(os.path.abspath(path))
        if not spans:
            return None
        tree = ast.parse(source, path)
        found = _Wrapper(source, spans)
        tree = found.visit(tree)
        ast.fix_missing_locations(tree)
        self.instrumented[path] = len(found.done)
        self.missing[path] = sorted(set(spans) - found.done)
        return tree

    # ---- observing ---------------------------------------------------------------------------
    def observe(self, ident: int, value: Any) -> Any:
        try:
            self._note(ident, value)
        except Exception:  # noqa: BLE001 - observing must never change what the program does
            pass
        return value

    def _note(self, ident: int, value: Any) -> None:
        rec = self.records.setdefault(ident, {"count": 0, "types": {}})
        rec["count"] += 1
        _inc(rec, "types", _type_name(value))
        torch = sys.modules.get("torch")
        if torch is None:
            return
        if isinstance(value, torch.Tensor):
            device = value.device.type
            _inc(rec, "devices", device)
            _inc(rec, "dtypes", str(value.dtype))
            _inc(rec, "ndim", str(value.dim()))
            n = value.numel()
            numel = rec.setdefault("numel", {"min": n, "max": n})
            numel["min"], numel["max"] = min(numel["min"], n), max(numel["max"], n)
            if device == "cpu":
                _inc(rec, "pinned", "true" if value.is_pinned() else "false")
                ptr = value.untyped_storage().data_ptr()
                seen = self._storages.setdefault(ident, {})
                version = value._version
                if ptr in seen:
                    rec["reused_storage"] = rec.get("reused_storage", 0) + 1
                    if seen[ptr] != version:  # refilled in place since the last time here
                        rec["written_between"] = rec.get("written_between", 0) + 1
                seen[ptr] = version
            return
        named = _device_type(torch, value)
        if named is not None:
            _inc(rec, "devices", named)

    def results(self) -> dict[str, dict[str, dict[str, Any]]]:
        """Per file, per span key, the record (spans never evaluated are absent)."""
        out: dict[str, dict[str, dict[str, Any]]] = {}
        for ident, rec in self.records.items():
            path, key = self.where[ident]
            out.setdefault(path, {})[key] = rec
        return out


def _inc(rec: dict[str, Any], field: str, key: str) -> None:
    counts = rec.setdefault(field, {})
    counts[key] = counts.get(key, 0) + 1


def _type_name(value: Any) -> str:
    t = type(value)
    module = t.__module__
    if module == "builtins":
        return t.__qualname__
    if module == "torch" and t.__qualname__ == "Tensor":
        return "torch.Tensor"
    return f"{module}.{t.__qualname__}"


def _device_type(torch: Any, value: Any) -> str | None:
    """The device type a device-like value names (``"cuda:1"``, ``1``, ``torch.device``)."""
    if isinstance(value, torch.device):
        return str(value.type)
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return "cuda"  # ``.to(local_rank)``: an index is a CUDA device
    if isinstance(value, str):
        try:
            return str(torch.device(value).type)
        except (RuntimeError, ValueError, TypeError):
            return None
    return None


class _Wrapper(ast.NodeTransformer):
    """Wraps each expression whose span is wanted in ``__syncfix_observe__(id, ...)``."""

    def __init__(self, source: str, spans: Mapping[str, int]) -> None:
        self.lines = source.splitlines(keepends=True)
        self.spans = spans
        self.done: set[str] = set()

    def _col(self, line: int, byte_offset: int) -> int:
        """A UTF-8 byte offset in a line as a 1-based column in code points (as findings give)."""
        text = self.lines[line - 1] if line - 1 < len(self.lines) else ""
        return len(text.encode("utf-8")[:byte_offset].decode("utf-8", errors="replace")) + 1

    def _keys(self, node: ast.expr) -> Iterator[str]:
        if node.end_lineno is None or node.end_col_offset is None:
            return
        start = (node.lineno, self._col(node.lineno, node.col_offset))
        end = (node.end_lineno, self._col(node.end_lineno, node.end_col_offset))
        yield span_key(*start, *end)
        # LibCST counts the parentheses around an expression as its own: ``(x)`` at 3..6
        for pad in range(1, 4):
            yield span_key(start[0], start[1] - pad, end[0], end[1] + pad)

    def generic_visit(self, node: ast.AST) -> ast.AST:
        new = super().generic_visit(node)
        if not isinstance(new, ast.expr) or isinstance(getattr(new, "ctx", None), (ast.Store, ast.Del)):
            return new
        if isinstance(new, (ast.Starred, ast.Slice)):
            return new
        for key in self._keys(new):
            ident = self.spans.get(key)
            if ident is not None and key not in self.done:
                self.done.add(key)
                call = ast.Call(ast.Name(HOOK, ast.Load()), [ast.Constant(ident), new], [])
                return ast.copy_location(call, new)
        return new


def project_files(root: str) -> list[str]:
    """The Python files of the project under ``root`` (no virtual environments or builds)."""
    out: list[str] = []
    for folder, dirs, files in os.walk(root):
        dirs[:] = sorted(d for d in dirs if d not in _SKIP_DIRS and not d.startswith("."))
        out.extend(os.path.join(folder, f) for f in sorted(files) if f.endswith(".py"))
    return out


def cuda_facts(needs: Mapping[str, Sequence[Need]]) -> list[str]:
    """The facts among ``needs`` that only a run with CUDA can show."""
    return sorted({n.fact for items in needs.values() for n in items if n.fact in NEEDS_CUDA})


class RecordError(Exception):
    """The recorded run failed (the program raised, exited non-zero, crashed or hung)."""


def record(
    target: str,
    args: Sequence[str],
    needs: Mapping[str, Sequence[Need]],
    *,
    root: str,
    out: str | None = None,
    timeout: float | None = None,
    seed: int = 0,
    deterministic: bool = True,
) -> Observations:
    """Run ``target`` once with ``needs`` watched; write and return the observations.

    ``needs`` maps files (absolute paths) to the facts their fixes wait for. The file goes to
    ``out`` (default ``ROOT/.syncfix/observed.json``); nothing is written when the run fails.
    """
    import datetime
    import platform
    from dataclasses import asdict

    from .runner import Plan, run_single
    from .target import parse_target

    tgt = parse_target(target, tuple(args))
    hashes = {}
    for path in needs:
        with open(path, "rb") as fh:
            hashes[path] = source_hash(fh.read())
    plan = Plan(
        target=tgt,
        root=root,
        fixer={},
        seed=seed,
        deterministic=deterministic,
        warmup=0,
        repeats=0,
        timeout=timeout or 300.0,
        cross_check=False,
        observe={p: [asdict(n) for n in items] for p, items in needs.items()},
    )
    side = run_single(plan, count=False)
    if side.failure is not None:
        f = side.failure
        detail = f.traceback or f.stderr_tail or f.stdout_tail
        raise RecordError(f"the program failed ({f.kind} in {f.phase}): {f.message}\n{detail}".rstrip())
    seen = side.data.get("observations", {})
    files = {
        relpath(path, root): {"sha256": hashes[path], "spans": seen.get(path, {})} for path in needs
    }
    env = side.data.get("environment", {})
    meta = {
        "created": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "target": [target, *args],
        "python": platform.python_version(),
        "torch": env.get("torch"),
        "cuda": bool(env.get("cuda")),
        "device": env.get("device"),
        "instrumented": {relpath(p, root): n for p, n in side.data.get("instrumented", {}).items()},
    }
    obs = Observations(os.path.abspath(root), files, meta)
    obs.save(out or os.path.join(root, DEFAULT_FILE))
    return obs
