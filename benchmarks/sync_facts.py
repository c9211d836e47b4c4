"""Measure the facts docs/semantics.md states: which PyTorch operations make the host wait for the
GPU, and whether the sync-free forms the rules write are exact.

    python benchmarks/sync_facts.py [--json OUT] [--sleep-ms 50]   (needs only torch)

Part 1 (needs a CUDA GPU), per operation, after a warm-up call:
- ``trace``: syncs seen by PyTorch's GPU-trace callbacks (the hooks ``syncfix trace`` counts with);
- ``debug``: warnings from ``torch.cuda.set_sync_debug_mode("warn")``;
- ``wait``: host time of the operation alone with ``--sleep-ms`` of GPU work queued just before
  it (about that long: the host waited for the queue; well under it: it did not).
Part 2 (CPU, one check also on CUDA): the exactness checks behind the rewrites (dtype promotion, Python types, errors).
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import logging
import math
import sys
import time
import warnings
from collections import Counter
from collections.abc import Callable
from pathlib import Path

import torch


def _ops() -> list[tuple[str, str, Callable[[], object]]]:
    """(section, operation as written, a call doing it) on fresh CUDA tensors."""
    dev = torch.device("cuda")
    t0 = torch.tensor(0.5, device=dev)
    a0, b0 = torch.tensor(0.25, device=dev), torch.tensor(0.75, device=dev)
    x = torch.randn(4096, device=dev)
    x8 = torch.randn(8, device=dev)
    x6 = torch.randn(6, device=dev)
    y = x.clone()
    mask = x > 0
    mask_cpu = mask.cpu()
    idx_cpu = torch.tensor([3, 1, 4])
    idx_cuda = idx_cpu.to(dev)
    ints = torch.randint(0, 50, (4096,), device=dev)
    reps = torch.randint(0, 3, (4096,), device=dev)
    reps_total = int(reps.sum())
    small = torch.randn(16)
    big_pageable = torch.randn(16 * 2**20)  # 64 MiB
    big_pinned = big_pageable.pin_memory()
    event = torch.cuda.Event()
    event.record()
    stream = torch.cuda.current_stream()
    quiet = logging.getLogger("sync_facts.quiet")
    quiet.setLevel(logging.INFO)
    quiet.propagate = False
    model = torch.nn.Linear(64, 64).to(dev)
    model(torch.randn(8, 64, device=dev)).sum().backward()
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    scaler = torch.amp.GradScaler("cuda")

    def scaler_step():
        opt.zero_grad()
        scaler.scale(model(torch.randn(8, 64, device=dev)).sum()).backward()
        scaler.step(opt)
        scaler.update()

    def masked_store_python():
        x[mask] = 0.0

    def masked_store_cuda():
        x[mask] = t0

    def index_store_cpu():
        x[idx_cpu] = 0.0

    def branch():
        return 1 if t0 > 0 else 0

    return [
        ("host reads", "t.item()  (0-d float32)", t0.item),
        ("host reads", "float(t)", lambda: float(t0)),
        ("host reads", "if t > 0:  (Tensor.__bool__)", branch),
        ("host reads", "x.tolist()  (4096 elements)", x.tolist),
        ("host reads", "x.cpu()", x.cpu),
        ("host reads", 'x.to("cpu", non_blocking=True)', lambda: x.to("cpu", non_blocking=True)),
        ("host reads", "str(t)  (0-d, as print(t) formats it)", lambda: str(t0)),
        ("host reads", "str(x)  (6 elements)", lambda: str(x6)),
        ("host reads", 'f"{t}"  (0-d)', lambda: f"{t0}"),
        ("host reads", 'f"{t:.3f}"  (0-d)', lambda: f"{t0:.3f}"),
        ("host reads", 'logger.debug("%s", t)  (DEBUG filtered out)', lambda: quiet.debug("%s", t0)),
        ("host reads", 'logger.debug(f"{t}")  (DEBUG filtered out)', lambda: quiet.debug(f"{t0}")),
        ("host reads", "max(a, b)  (builtin, two 0-d)", lambda: max(a0, b0)),
        ("host reads", "max(x)  (builtin, 8 elements)", lambda: max(x8)),
        ("host reads", "torch.maximum(a, b)", lambda: torch.maximum(a0, b0)),
        ("host reads", "torch.equal(x, y)", lambda: torch.equal(x, y)),
        ("host reads", "(x > 0).any()  (kept as a tensor)", lambda: (x > 0).any()),
        ("data-dependent shapes", "torch.nonzero(x)", lambda: torch.nonzero(x)),
        ("data-dependent shapes", "x[mask]  (CUDA bool mask)", lambda: x[mask]),
        ("data-dependent shapes", "x[mask_cpu]  (CPU bool mask)", lambda: x[mask_cpu]),
        ("data-dependent shapes", "torch.unique(ints)", lambda: torch.unique(ints)),
        ("data-dependent shapes", "torch.repeat_interleave(x, reps)", lambda: torch.repeat_interleave(x, reps)),
        (
            "data-dependent shapes",
            "torch.repeat_interleave(x, reps, output_size=n)",
            lambda: torch.repeat_interleave(x, reps, output_size=reps_total),
        ),
        ("masked and indexed stores", "x[mask] = 0.0  (Python number)", masked_store_python),
        ("masked and indexed stores", "x[mask] = v  (CUDA 0-d value)", masked_store_cuda),
        ("masked and indexed stores", "torch.where(mask, v, x)", lambda: torch.where(mask, t0, x)),
        ("masked and indexed stores", "x[idx_cpu]  (CPU int64 index)", lambda: x[idx_cpu]),
        ("masked and indexed stores", "x[[3, 1, 4]]  (list index)", lambda: x[[3, 1, 4]]),
        ("masked and indexed stores", "x[idx]  (CUDA int64 index)", lambda: x[idx_cuda]),
        ("masked and indexed stores", "x[idx_cpu] = 0.0", index_store_cpu),
        ("creation and copies", 'torch.tensor(0.5, device="cuda")', lambda: torch.tensor(0.5, device=dev)),
        ("creation and copies", 'torch.tensor([1.0, 2.0, 3.0], device="cuda")', lambda: torch.tensor([1.0, 2.0, 3.0], device=dev)),
        ("creation and copies", 'torch.full((), 0.5, device="cuda")', lambda: torch.full((), 0.5, device=dev)),
        (
            "creation and copies",
            'torch.tensor([1.0, 2.0, 3.0], pin_memory=True).to("cuda", non_blocking=True)',
            lambda: torch.tensor([1.0, 2.0, 3.0], pin_memory=True).to(dev, non_blocking=True),
        ),
        ("creation and copies", "h.cuda()  (pageable, 64 B)", small.cuda),
        ("creation and copies", "h.cuda()  (pageable, 64 MiB)", big_pageable.cuda),
        ("creation and copies", "h.cuda()  (pinned, 64 MiB)", big_pinned.cuda),
        ("creation and copies", 'h.to("cuda", non_blocking=True)  (pageable, 64 B)', lambda: small.to(dev, non_blocking=True)),
        ("creation and copies", 'h.to("cuda", non_blocking=True)  (pageable, 64 MiB)', lambda: big_pageable.to(dev, non_blocking=True)),
        ("creation and copies", 'h.to("cuda", non_blocking=True)  (pinned, 64 MiB)', lambda: big_pinned.to(dev, non_blocking=True)),
        ("explicit waits", "torch.cuda.synchronize()", torch.cuda.synchronize),
        ("explicit waits", "event.synchronize()  (event recorded earlier)", event.synchronize),
        ("explicit waits", "torch.cuda.current_stream().synchronize()", stream.synchronize),
        ("explicit waits", "event.query()", event.query),
        ("training utilities", "clip_grad_norm_(params, 1.0)", lambda: torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)),
        ("training utilities", "GradScaler step + update (SGD, not fused)", scaler_step),
        ("training utilities", "F.one_hot(idx)", lambda: torch.nn.functional.one_hot(idx_cuda)),
        ("training utilities", "F.one_hot(idx, num_classes=8)", lambda: torch.nn.functional.one_hot(idx_cuda, 8)),
    ]


def _sleep_cycles(ms: float) -> int:
    """Cycles of ``torch.cuda._sleep`` that keep the GPU busy for about ``ms``."""
    torch.cuda._sleep(1000)  # the first launch loads the kernel: not part of the rate
    torch.cuda.synchronize()
    cycles = 20_000_000
    start = time.perf_counter()
    torch.cuda._sleep(cycles)
    torch.cuda.synchronize()
    per_cycle = (time.perf_counter() - start) / cycles
    return int(ms / 1000 / per_cycle)


def _trace_counter() -> Counter:
    """Register PyTorch's GPU-trace sync callbacks (the hooks syncfix's counter uses; standalone
    here so the script needs nothing but torch). Counts syncs by the hook that fired."""
    import torch.cuda._gpu_trace as trace

    counts: Counter = Counter()
    trace.register_callback_for_stream_synchronization(lambda stream: counts.update(["stream"]))
    trace.register_callback_for_event_synchronization(lambda event: counts.update(["event"]))
    trace.register_callback_for_device_synchronization(lambda: counts.update(["device"]))
    torch._C._activate_gpu_trace()
    return counts


def measure_syncs(sleep_ms: float) -> list[dict]:
    cycles = _sleep_cycles(sleep_ms)
    rows = []
    ops = _ops()
    for section, name, call in ops:  # timing first: the GPU trace, once on, slows allocations
        with contextlib.redirect_stdout(io.StringIO()):
            call()
            torch.cuda.synchronize()
            torch.cuda._sleep(cycles)
            start = time.perf_counter()
            call()
            wait_ms = (time.perf_counter() - start) * 1000
            torch.cuda.synchronize()
        rows.append({"section": section, "operation": name, "wait_ms": round(wait_ms, 2)})
    counts = _trace_counter()
    with warnings.catch_warnings(record=True):  # the first warning of a process is not counted
        warnings.simplefilter("always")
        torch.cuda.set_sync_debug_mode("warn")
        torch.ones(1, device="cuda").item()
        torch.cuda.set_sync_debug_mode(0)
    for row, (_, _, call) in zip(rows, ops, strict=True):
        call()
        torch.cuda.synchronize()
        counts.clear()
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            torch.cuda.set_sync_debug_mode("warn")
            try:
                call()
            finally:
                torch.cuda.set_sync_debug_mode(0)
        row["trace"] = sum(counts.values())
        row["hooks"] = dict(counts)
        row["debug"] = sum(1 for w in caught if "synchroniz" in str(w.message))
        torch.cuda.synchronize()
    return rows


def exactness() -> list[dict]:
    """(claim, observed, holds) for the value facts the rewrites rely on; CPU tensors."""
    out = []

    def check(claim: str, observed: object, holds: bool) -> None:
        out.append({"claim": claim, "observed": repr(observed), "holds": bool(holds)})

    t = torch.tensor(0.1, dtype=torch.float32)
    check("float32 t = 0.1: t.item() > 0.1 is True but bool(t > 0.1) is False",
          (t.item() > 0.1, bool(t > 0.1)), t.item() > 0.1 and not bool(t > 0.1))
    i = torch.tensor(16777217, dtype=torch.int64)
    f = torch.tensor(0.5, dtype=torch.float32)
    mixed = torch.stack([i.to(torch.float32), f]).tolist()
    check("stacking int64 16777217 with float32 reads 16777216.0 (item() gives the int 16777217)",
          (mixed[0], i.item()), mixed[0] == 16777216.0 and i.item() == 16777217)
    b = torch.tensor(True)
    stacked = torch.stack([b.to(torch.int64), i]).tolist()
    check("stacking bool with int64 reads 1, not True", stacked[0], stacked[0] == 1 and type(stacked[0]) is int)
    big = torch.tensor(2**53 + 1, dtype=torch.int64)
    as_f64 = torch.stack([big.to(torch.float64), torch.tensor(0.5, dtype=torch.float64)]).tolist()[0]
    check("stacking int64 2**53+1 with float64 reads 9007199254740992.0", as_f64, as_f64 == 2.0**53)
    try:
        torch.stack([torch.tensor(1.0), torch.tensor([2.0])])
        raised = "no error"
    except RuntimeError as exc:
        raised = type(exc).__name__
    check("torch.stack of a 0-d and a shape-(1,) tensor raises RuntimeError", raised, raised == "RuntimeError")
    floats = [torch.tensor(v, dtype=d) for v, d in ((0.1, torch.float16), (0.3, torch.bfloat16),
                                                   (0.7, torch.float32), (1 / 3, torch.float64))]
    merged = torch.stack([v.to(torch.float64) for v in floats]).tolist()
    check("floats of any width stacked as float64 read the same Python floats as item()",
          merged, merged == [v.item() for v in floats])
    ints = [torch.tensor(v, dtype=d) for v, d in ((-7, torch.int8), (255, torch.uint8), (2**40, torch.int64))]
    merged_i = torch.stack([v.to(torch.int64) for v in ints]).tolist()
    check("integers of any width stacked as int64 read the same Python ints as item()",
          merged_i, merged_i == [v.item() for v in ints] and all(type(v) is int for v in merged_i))
    single = torch.tensor(2.5, dtype=torch.float32)
    check("tolist() of a float32 0-d tensor equals item()", (single.tolist(), single.item()),
          single.tolist() == single.item() and type(single.tolist()) is float)
    nan = torch.tensor(float("nan"))
    try:
        int(nan)
        err1 = "no error"
    except ValueError as exc:
        err1 = f"ValueError: {exc}"
    try:
        int(nan.item())
        err2 = "no error"
    except ValueError as exc:
        err2 = f"ValueError: {exc}"
    check("int(t) of a NaN tensor and int(t.item()) raise the same ValueError", (err1, err2), err1 == err2 != "no error")
    pairs = []
    for v in (True, 3, -2**40, 0.5, math.inf, math.nan):
        pairs.append((repr(v), str(torch.tensor(v).dtype), str(torch.full((), v).dtype)))
    check("torch.full((), v) infers the dtype torch.tensor(v) does for Python bool/int/float",
          pairs, all(a == b for _, a, b in pairs))
    try:
        torch.full((), 1e300)
        overflow = "no error"
    except RuntimeError as exc:
        overflow = f"RuntimeError: {exc}"
    check("... but a float beyond float32's range: torch.tensor(1e300) is inf, torch.full((), 1e300) raises",
          (str(torch.tensor(1e300)), overflow), overflow != "no error" and math.isinf(torch.tensor(1e300).item()))
    if torch.cuda.is_available():
        try:
            torch.full((), 1e300, device="cuda")
            overflow_cuda = "no error"
        except RuntimeError as exc:
            overflow_cuda = f"RuntimeError: {exc}"
        on_cuda = torch.tensor(1e300, device="cuda").item()
        check('... the same on CUDA: torch.tensor(1e300, device="cuda") is inf, torch.full raises',
              (on_cuda, overflow_cuda), math.isinf(on_cuda) and overflow_cuda != "no error")
    import numpy as np

    np_pair = (str(torch.tensor(np.float64(2.5)).dtype), str(torch.full((), np.float64(2.5)).dtype))
    check("... but not for a NumPy float64 scalar (tensor keeps float64, full gives the default float32)",
          np_pair, np_pair[0] != np_pair[1])
    py = max([1.0, math.nan, 3.0])
    dev = torch.max(torch.tensor([1.0, math.nan, 3.0])).item()
    check("builtin max([1, nan, 3]) is 3.0 while torch.max gives nan", (py, dev), py == 3.0 and math.isnan(dev))
    w = torch.where(torch.tensor(True), torch.tensor(1.0, dtype=torch.float32), torch.tensor(2.0, dtype=torch.float64))
    check("torch.where(c, float32, float64) has dtype float64 (promotion)", str(w.dtype), w.dtype == torch.float64)
    w2 = torch.where(torch.tensor([True]), torch.tensor(1.0), torch.tensor(2.0))
    check("torch.where with a shape-(1,) condition and 0-d branches has shape (1,)", tuple(w2.shape), tuple(w2.shape) == (1,))
    z = torch.tensor(0.1)
    check('f"{t}" of a 0-d tensor is the Python float\'s text, str(t) is "tensor(...)"',
          (f"{z}", str(z)), f"{z}" == repr(z.item()) and str(z).startswith("tensor("))
    x = torch.tensor([1.0, -2.0, 3.0])
    m = x > 0
    a = x.clone()
    a[m] = torch.tensor(9.0)
    bw = torch.where(m, torch.tensor(9.0), x)
    check("x[mask] = v and torch.where(mask, v, x) give the same tensor", (a.tolist(), bw.tolist()), torch.equal(a, bw))
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", type=Path)
    parser.add_argument("--sleep-ms", type=float, default=50.0)
    args = parser.parse_args()
    print(f"torch {torch.__version__}", end="")
    rows: list[dict] = []
    if torch.cuda.is_available():
        print(f", {torch.cuda.get_device_name()}, CUDA {torch.version.cuda}")
        rows = measure_syncs(args.sleep_ms)
        print(f"\nPart 1: syncs per call, and host time with {args.sleep_ms:g} ms of GPU work queued first\n")
        print(f"| {'operation':<78} | trace | debug | wait (ms) |")
        print(f"|{'-' * 80}|-------|-------|-----------|")
        section = None
        for row in rows:
            if row["section"] != section:
                section = row["section"]
                print(f"| **{section}**{' ' * (74 - len(section))} |       |       |           |")
            print(f"| {row['operation']:<78} | {row['trace']:>5} | {row['debug']:>5} | {row['wait_ms']:>9.2f} |")
    else:
        print(" (no CUDA: part 1 skipped)")
    facts = exactness()
    print("\nPart 2: exactness (CPU)\n")
    for fact in facts:
        print(f"- [{'holds' if fact['holds'] else 'FAILS'}] {fact['claim']}: {fact['observed']}")
    if args.json:
        args.json.write_text(json.dumps({"torch": torch.__version__, "syncs": rows, "exactness": facts}, indent=1))
    return 0 if all(f["holds"] for f in facts) else 1


if __name__ == "__main__":
    sys.exit(main())
