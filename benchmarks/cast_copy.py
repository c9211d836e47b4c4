"""Host wait of a batch item's copy to the GPU, cast before or after the copy (SFX101's cast
fix), with GPU work queued ahead of it. Needs CUDA.

    python benchmarks/cast_copy.py [--mib 12 48] [--repeat 7]

For each size: an int32 item in pinned memory (as a loader with ``pin_memory=True`` gives it),
``torch.cuda._sleep`` queues about 50 ms of GPU work, then the host times the copy call alone:
``x.long().cuda()`` (blocking), ``x.long().to("cuda", non_blocking=True)`` (the cast's result is
pageable memory) and ``x.to("cuda", non_blocking=True).long()`` (syncfix's rewrite). Variants
interleaved, medians printed; values checked equal.
"""

from __future__ import annotations

import argparse
import statistics
import time

import torch


def _timed(fn, x, cycles: int) -> float:
    torch.cuda.synchronize()
    torch.cuda._sleep(cycles)  # GPU work queued ahead of the copy
    start = time.perf_counter()
    fn(x)
    took = time.perf_counter() - start
    torch.cuda.synchronize()
    return took * 1e3


VARIANTS = {
    "x.long().cuda()": lambda x: x.long().cuda(),
    'x.long().to("cuda", non_blocking=True)': lambda x: x.long().to("cuda", non_blocking=True),
    'x.to("cuda", non_blocking=True).long()': lambda x: x.to("cuda", non_blocking=True).long(),
}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--mib", type=float, nargs="+", default=[1, 12, 48])
    p.add_argument("--repeat", type=int, default=7)
    args = p.parse_args()
    # cycles for about 50 ms of sleep on this GPU
    torch.cuda.synchronize()
    start = time.perf_counter()
    torch.cuda._sleep(100_000_000)
    torch.cuda.synchronize()
    cycles = int(100_000_000 * 0.05 / (time.perf_counter() - start))
    print(f"device: {torch.cuda.get_device_name()}, torch {torch.__version__}; ~50 ms of GPU work queued before each copy")
    print(f"{'item (int32, pinned)':>22} | " + " | ".join(f"{k:>40}" for k in VARIANTS))
    for mib in args.mib:
        n = int(mib * 2**20 / 4)
        x = torch.randint(-5, 255, (n,), dtype=torch.int32).pin_memory()
        ref = x.long().cuda()
        for fn in VARIANTS.values():
            assert torch.equal(fn(x), ref)
        times: dict[str, list[float]] = {k: [] for k in VARIANTS}
        for _ in range(args.repeat):
            for k, fn in VARIANTS.items():
                times[k].append(_timed(fn, x, cycles))
        print(f"{mib:>18.0f} MiB | " + " | ".join(f"{statistics.median(v):>37.2f} ms" for v in times.values()))


if __name__ == "__main__":
    main()
