"""What ``syncfix trace --record`` costs the program it watches (CPU; no GPU needed).

    python benchmarks/record_overhead.py [--steps 2000] [--rounds 7]

A training-style loop copies a batch and reads a device, as the examples do; the same code runs
plain and instrumented (the batch and the device watched, as for SFX101's observed fixes), in
interleaved rounds. Prints the median time per step of each and the cost per watched evaluation.
"""

from __future__ import annotations

import argparse
import statistics
import time

from syncfix.harness.record import Observer
from syncfix.observed import Need

SOURCE = '''
import torch
def run(steps, dim):
    device = torch.device("cpu")
    w = torch.randn(dim, dim)
    total = torch.zeros(())
    for step in range(steps):
        x = torch.randn(64, dim)
        x = x.to(device)
        total += (x @ w).sum()
    return total
'''


def _needs() -> list[Need]:
    lines = SOURCE.splitlines()
    row = next(i for i, line in enumerate(lines, 1) if "x = x.to(device)" in line)
    text = lines[row - 1]
    recv = text.index("x.to") + 1
    dev = text.index("device)") + 1
    return [Need("unshared_source", row, recv, row, recv + 1), Need("cuda_device", row, dev, row, dev + 6)]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--steps", type=int, default=2000)
    ap.add_argument("--dim", type=int, default=64)
    ap.add_argument("--rounds", type=int, default=7)
    args = ap.parse_args()
    plain: dict = {}
    exec(compile(SOURCE, "<plain>", "exec"), plain)
    observer = Observer({"<watched>": _needs()})
    observer.install()
    watched: dict = {}
    exec(compile(observer.instrument("<watched>", SOURCE), "<watched>", "exec"), watched)
    assert observer.instrumented["<watched>"] == 2
    times: dict[str, list[float]] = {"plain": [], "watched": []}
    for _ in range(args.rounds):
        for name, ns in (("plain", plain), ("watched", watched)):
            t0 = time.perf_counter()
            ns["run"](args.steps, args.dim)
            times[name].append((time.perf_counter() - t0) / args.steps)
    p, w = statistics.median(times["plain"]), statistics.median(times["watched"])
    per_eval = (w - p) / 2  # two watched expressions per step
    print(f"{args.steps} steps x {args.rounds} rounds, interleaved; medians per step")
    print(f"plain     {p * 1e6:8.1f} us")
    print(f"watched   {w * 1e6:8.1f} us  ({w / p:.2f}x)")
    print(f"per watched evaluation: {per_eval * 1e6:.1f} us")


if __name__ == "__main__":
    main()
