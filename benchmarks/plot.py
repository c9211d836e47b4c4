"""Turn the benchmarks' JSON into PNG plots for docs/benchmarks.md (needs matplotlib).

    python benchmarks/plot.py --gpu docs/results/gpu_effect_h200.json --throughput docs/results/throughput.json
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

VARIANTS = ["original", "safe", "unsafe", "ideal"]


def gpu(path: Path, out: Path) -> None:
    data = json.loads(path.read_text())
    rows = data["rows"]
    cases = sorted({(r["workload"], r["scale"]) for r in rows}, key=lambda c: (c[0], c[1] != "small"))
    fig, (ax1, ax2) = plt.subplots(2, 1, figsize=(15, 7), sharex=True)
    width = 0.2
    for i, v in enumerate(VARIANTS):
        by = {(r["workload"], r["scale"]): r for r in rows if r["variant"] == v}
        xs = [k + (i - 1.5) * width for k in range(len(cases))]
        ax1.bar(xs, [by[c].get("speedup", 1) for c in cases], width, label=v)
        ax2.bar(xs, [by[c].get("syncs_per_step", 0) for c in cases], width, label=v)
    ax1.axhline(1, color="k", lw=0.5)
    ax1.set_ylabel("speed-up over original")
    ax2.set_ylabel("syncs per step")
    ax2.set_xticks(range(len(cases)), [f"{w.replace(':', chr(10))}\n{s}" for w, s in cases], fontsize=8)
    ax1.legend(ncol=4)
    ax1.set_title(f"Effect of syncfix's rewrites — {data['device']}, torch {data['torch']}")
    fig.tight_layout()
    fig.savefig(out, dpi=110)


def throughput(path: Path, out: Path) -> None:
    rows = json.loads(path.read_text())
    commands = list(dict.fromkeys(r["command"] for r in rows))
    sizes = sorted({r["lines"] for r in rows})
    fig, ax = plt.subplots(figsize=(9, 5))
    for c in commands:
        pts = sorted((r["lines"], r["seconds"]) for r in rows if r["command"] == c)
        ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o", label=c)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xticks(sizes, [f"{s / 1e6:.1f}M" if s >= 10**6 else f"{s // 1000}k" for s in sizes])
    ax.set_xlabel("lines of code")
    ax.set_ylabel("wall seconds (median)")
    ax.set_title("Tool throughput on a generated PyTorch code base (2 cores)")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(out, dpi=110)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--gpu", type=Path)
    ap.add_argument("--throughput", type=Path)
    ap.add_argument("--out", type=Path, default=Path("docs"))
    args = ap.parse_args()
    if args.gpu:
        gpu(args.gpu, args.out / "benchmarks_gpu.png")
    if args.throughput:
        throughput(args.throughput, args.out / "benchmarks_throughput.png")


if __name__ == "__main__":
    main()
