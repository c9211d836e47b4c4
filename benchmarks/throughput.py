"""Tool throughput: syncfix against TorchFix, Fixit and ruff on the same generated code base.

    python benchmarks/throughput.py [--sizes 10000,100000] [--peers /path/to/venv/bin] [--json OUT]

For each size a corpus is generated (benchmarks/corpus.py), then each command runs REPEAT times
and we report the median wall time, lines per second, peak memory (the child's max RSS, from
``os.wait4``: the largest single process, workers included), and the ratio to syncfix's cold
``check`` on as many cores. Peers live in another virtual environment (``--peers``: the folder
holding their ``torchfix``/``fixit``/``ruff`` executables).
Runs of the variants are interleaved so a noisy neighbour hits all of them alike.
"""

from __future__ import annotations

import argparse
import compileall
import importlib.util
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from corpus import generate  # noqa: E402


def timed(cmd: list[str], cwd: Path) -> tuple[float, int, int]:
    """(seconds, peak RSS in MiB, exit code) of one run of ``cmd``."""
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _, status, usage = os.wait4(proc.pid, 0)
    seconds = time.perf_counter() - start
    return seconds, usage.ru_maxrss // 1024, os.waitstatus_to_exitcode(status)


def precompile() -> None:
    """Write syncfix's bytecode once, as an installed package has it: from an editable checkout
    under PYTHONDONTWRITEBYTECODE every run would otherwise compile ~50 modules (~0.3 s)."""
    for name in ("syncfix", "syncfix.codemods"):
        spec = importlib.util.find_spec(name)
        for folder in (spec.submodule_search_locations or []) if spec else []:
            compileall.compile_dir(folder, quiet=1)


def commands(peers: Path | None, jobs: int) -> dict[str, tuple[list[str] | None, int]]:
    """Each variant's command line and the number of cores it uses."""
    syncfix = [sys.executable, "-m", "syncfix"]
    has_cache = "--no-cache" in subprocess.run(
        [*syncfix, "check", "--help"], capture_output=True, text=True, check=False
    ).stdout
    no_cache = ["--no-cache"] if has_cache else []
    out: dict[str, tuple[list[str] | None, int]] = {
        "syncfix check -j1 (cold)": ([*syncfix, "check", ".", "-j", "1", "-q", *no_cache], 1),
        f"syncfix check -j{jobs} (cold)": ([*syncfix, "check", ".", "-j", str(jobs), "-q", *no_cache], jobs),
        f"syncfix apply --diff -j{jobs} (cold)":
            ([*syncfix, "apply", "--diff", ".", "-j", str(jobs), "-q", *no_cache], jobs),
        f"syncfix check -j{jobs} (warm cache)":
            ([*syncfix, "check", ".", "-j", str(jobs), "-q"] if has_cache else None, jobs),
    }

    def peer(name: str) -> str | None:
        if peers is not None and (peers / name).exists():
            return str(peers / name)
        return shutil.which(name)

    # TorchFix and Fixit use every core unless told otherwise (a process pool each); Fixit has no
    # option to limit it, so it runs only at its default. ruff uses every core too.
    torchfix, fixit, ruff = peer("torchfix"), peer("fixit"), peer("ruff")
    out["torchfix -j1"] = ([torchfix, "--select", "ALL", "-j", "1", "."] if torchfix else None, 1)
    out[f"torchfix -j{jobs}"] = ([torchfix, "--select", "ALL", "-j", str(jobs), "."] if torchfix else None, jobs)
    out[f"fixit lint ({jobs} cores)"] = ([fixit, "lint", "."] if fixit else None, jobs)
    ruff_cmd = [ruff, "check", "--select", "ALL", "--no-cache", "--exit-zero", "-q", "."] if ruff else None
    out[f"ruff check --select ALL ({jobs} cores)"] = (ruff_cmd, jobs)
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", default="10000,100000")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 2)
    ap.add_argument("--peers", type=Path, help="bin/ folder of a venv with torchfix, fixit, ruff")
    ap.add_argument("--peers-up-to", type=int, default=None,
                    help="run the peers only at sizes up to this many lines (they take ~25 min per 1M)")
    ap.add_argument("--only", help="run only the commands whose name matches this regular expression "
                    "(syncfix's cold check always runs: it is what the ratios are against)")
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()
    precompile()
    cmds = commands(args.peers, args.jobs)
    if args.only:
        keep = re.compile(args.only)
        cmds = {n: c for n, c in cmds.items()
                if keep.search(n) or n in {"syncfix check -j1 (cold)", f"syncfix check -j{args.jobs} (cold)"}}
    results = []
    for size in (int(s) for s in args.sizes.split(",")):
        with tempfile.TemporaryDirectory() as tmp:
            root = Path(tmp)
            files, lines = generate(root / "corpus", size)
            cwd = root / "corpus"
            peers_too = args.peers_up_to is None or size <= args.peers_up_to
            runs: dict[str, list[tuple[float, int, int]]] = {
                name: [] for name, (c, _) in cmds.items() if c and (peers_too or name.startswith("syncfix"))
            }
            for _ in range(args.repeat):
                for name, (cmd, _) in cmds.items():
                    if cmd is None or name not in runs:
                        continue
                    if "warm" in name:  # fill the cache first, then time the re-run
                        subprocess.run(cmd, cwd=cwd, capture_output=True, check=False)
                    runs[name].append(timed(cmd, cwd))
                    cache = cwd / ".syncfix_cache"
                    if "cold" in name and cache.exists():
                        shutil.rmtree(cache)
            # each variant against syncfix's cold check on as many cores
            base = {cores: statistics.median(r[0] for r in runs[f"syncfix check -j{cores} (cold)"])
                    for cores in {1, args.jobs}}
            print(f"\n== {lines} lines in {files} files (median of {args.repeat}, {args.jobs} cores)")
            print(f"{'command':40} {'seconds':>9} {'lines/s':>9} {'peak MiB':>9} "
                  f"{'vs syncfix check, same cores':>29} rc")
            for name, rs in runs.items():
                cores = cmds[name][1]
                sec = statistics.median(r[0] for r in rs)
                mem = max(r[1] for r in rs)
                rc = rs[-1][2]
                print(f"{name:40} {sec:9.2f} {lines / sec:9.0f} {mem:9d} {sec / base[cores]:28.2f}x {rc}")
                results.append({"lines": lines, "files": files, "command": name, "cores": cores,
                                "seconds": sec, "all_seconds": [r[0] for r in rs], "peak_mib": mem,
                                "vs_syncfix_check_same_cores": sec / base[cores], "exit_code": rc})
    for name, (cmd, _) in cmds.items():
        if cmd is None:
            print(f"(not run: {name} — not installed)")
    if args.json:
        args.json.write_text(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
