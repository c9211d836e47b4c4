"""The effect of syncfix's rewrites on real GPU programs.

    python benchmarks/gpu_effect.py [--steps 50] [--rounds 7] [--scales small,large] [--json OUT]

For each workload in ``benchmarks/workloads/`` (written as people write them) four variants run:
``original``; ``safe`` and ``unsafe`` — produced *now* by ``syncfix.fix_code`` on the original
(never hand-edited); and ``ideal``, a hand-written sync-free reference. For each scale ("small":
launch/CPU-bound, "large": GPU-bound) we report, per variant:

- syncs per iteration, from syncfix's GPU-trace counter (counted after all timing, because the
  trace slows every allocation and cannot be switched off);
- median time per step (synchronize, clock, run ``steps`` iterations, synchronize, clock), with
  the spread (min-max) over ``rounds`` rounds in which the variants run interleaved;
- speed-up over the original, and the share of the ideal's speed-up reached;
- whether the values match the original (bitwise for ``safe``; ``unsafe`` and ``ideal`` may differ
  in the last bits where reduction order changes, shown as "close").
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import math
import statistics
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).parent
WORKLOADS = ["train_loop", "eval_loop", "decode_loop", "scalar_branch", "data_loading"]
# "<workload>:typed" is the same script with its ``state`` parameter annotated, as typed code
# is written: syncfix trusts ``torch.Tensor`` annotations (and the items of ``tuple[...]``).
TYPED = {
    "train_loop": "tuple[torch.nn.Module, torch.optim.Optimizer, torch.Tensor, torch.Tensor]",
    "eval_loop": "tuple[torch.nn.Module, torch.Tensor, torch.Tensor]",
    "scalar_branch": "tuple[torch.Tensor, torch.Tensor]",
}
WORKLOADS += [f"{w}:typed" for w in TYPED]


def load(path: Path, name: str):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def variants(workload: str, tmp: Path) -> tuple[dict, dict]:
    from syncfix import check_code, fix_code

    base, _, typed = workload.partition(":")
    src = (HERE / "workloads" / f"{base}.py").read_text()
    if typed:
        signature = "def run(state, steps):"
        assert signature in src, f"{base}: no `{signature}` to annotate"
        src = src.replace(signature, f"def run(state: {TYPED[base]}, steps: int):")
    texts = {
        "original": src,
        "safe": fix_code(src),
        "unsafe": fix_code(src, unsafe_fixes=True),
        "ideal": (HERE / "workloads" / f"{base}_ideal.py").read_text(),
    }
    findings = check_code(src, unsafe_fixes=True)
    fixes = {
        "safe": sorted({f.code for f in findings if f.fix and f.fix.applicability.value == "safe"}),
        "unsafe": sorted({f.code for f in findings if f.fix}),
        "found": sorted({f.code for f in findings}),
    }
    modules = {}
    for name, text in texts.items():
        stem = workload.replace(":", "_")
        path = tmp / f"{stem}_{name}.py"
        path.write_text(text)
        modules[name] = load(path, f"{stem}_{name}")
    return modules, fixes


def same(a, b, exact: bool) -> bool:
    if type(a) is not type(b):
        return False
    if isinstance(a, (list, tuple)):
        return len(a) == len(b) and all(same(x, y, exact) for x, y in zip(a, b, strict=True))
    if isinstance(a, float):
        if math.isnan(a) and math.isnan(b):
            return True
        return a == b if exact else math.isclose(a, b, rel_tol=1e-4, abs_tol=1e-6)
    if isinstance(a, str) and not exact:
        return a == b or _close_text(a, b)
    return a == b


def _close_text(a: str, b: str) -> bool:
    pa, pb = a.split(), b.split()
    if len(pa) != len(pb):
        return False
    for x, y in zip(pa, pb, strict=True):
        if x == y:
            continue
        try:
            if not math.isclose(float(x), float(y), rel_tol=1e-3, abs_tol=1e-4):
                return False
        except ValueError:
            return False
    return True


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--steps", type=int, default=50)
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--scales", default="small,large")
    ap.add_argument("--workloads", default=",".join(WORKLOADS))
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()

    import torch

    cuda = torch.cuda.is_available()
    device_name = torch.cuda.get_device_name() if cuda else "CPU (no CUDA: no sync counts)"
    sync = torch.cuda.synchronize if cuda else (lambda: None)
    torch.backends.cudnn.benchmark = False
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        loaded = {w: variants(w, Path(tmp)) for w in args.workloads.split(",")}
        # 1. Values and timings, variants interleaved.
        for workload, (mods, fixes) in loaded.items():
            for scale in args.scales.split(","):
                reference = None
                times: dict[str, list[float]] = {v: [] for v in mods}
                states = {}
                match = {}
                for v, mod in mods.items():
                    torch.manual_seed(0)
                    out = mod.run(mod.setup(scale), args.steps)
                    if v == "original":
                        reference = out
                    match[v] = "exact" if same(out, reference, True) else ("close" if same(out, reference, False) else "DIFFERENT")
                    torch.manual_seed(0)
                    states[v] = mod.setup(scale)
                    mod.run(states[v], 3)  # warm-up
                order = list(mods)
                for r in range(args.rounds):
                    for v in order[r % len(order):] + order[: r % len(order)]:
                        sync()
                        t0 = time.perf_counter()
                        mods[v].run(states[v], args.steps)
                        sync()
                        times[v].append((time.perf_counter() - t0) / args.steps * 1e3)
                for v in mods:
                    rows.append({
                        "workload": workload, "scale": scale, "variant": v,
                        "ms_per_step": statistics.median(times[v]),
                        "ms_min": min(times[v]), "ms_max": max(times[v]),
                        "values": match[v],
                        "rules": fixes.get(v, fixes["found"] if v == "original" else []),
                    })
        # 2. Sync counts (after timing: the trace cannot be switched off).
        if cuda:
            from syncfix.harness.counter import SyncRecorder, install

            install()
            for workload, (mods, _) in loaded.items():
                for scale in args.scales.split(","):
                    for v, mod in mods.items():
                        torch.manual_seed(0)
                        state = mod.setup(scale)
                        mod.run(state, 2)
                        sync()
                        with SyncRecorder() as rec:
                            mod.run(state, args.steps)
                            sync()
                        row = next(r for r in rows if (r["workload"], r["scale"], r["variant"]) == (workload, scale, v))
                        row["syncs_per_step"] = max(0, rec.total() - 1) / args.steps  # minus our own final sync
    # 3. Report.
    print(f"device: {device_name}; torch {torch.__version__}; {args.steps} steps x {args.rounds} rounds, interleaved")
    head = f"{'workload':20} {'scale':6} {'variant':9} {'syncs/step':>10} {'ms/step':>9} {'min-max':>15} {'speed-up':>9} {'of ideal':>9} {'avoid. syncs':>12} {'values':>9}  rules"
    print(head)
    by = {(r["workload"], r["scale"], r["variant"]): r for r in rows}
    for r in rows:
        base = by[(r["workload"], r["scale"], "original")]
        ideal = by[(r["workload"], r["scale"], "ideal")]
        speed = base["ms_per_step"] / r["ms_per_step"]
        ideal_gain = base["ms_per_step"] / ideal["ms_per_step"] - 1
        share = (speed - 1) / ideal_gain if ideal_gain > 0.02 else float("nan")
        syncs = r.get("syncs_per_step")
        avoid = None
        if syncs is not None and base.get("syncs_per_step") is not None:
            avoidable = base["syncs_per_step"] - ideal["syncs_per_step"]
            avoid = (base["syncs_per_step"] - syncs) / avoidable if avoidable > 0 else float("nan")
        r.update(speedup=speed, share_of_ideal=share, avoidable_removed=avoid)
        print(
            f"{r['workload']:20} {r['scale']:6} {r['variant']:9} "
            f"{'-' if syncs is None else f'{syncs:.2f}':>10} {r['ms_per_step']:9.3f} "
            f"{r['ms_min']:7.3f}-{r['ms_max']:<7.3f} {speed:8.2f}x "
            f"{'-' if math.isnan(share) else f'{share:.0%}':>9} "
            f"{'-' if avoid is None or math.isnan(avoid) else f'{avoid:.0%}':>12} {r['values']:>9}  "
            f"{','.join(r['rules'])}"
        )
    if args.json:
        args.json.write_text(json.dumps({"device": device_name, "torch": torch.__version__, "rows": rows}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
