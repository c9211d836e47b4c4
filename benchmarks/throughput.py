"""Tool throughput: syncfix against TorchFix, Fixit and ruff on the same code, and the least any
Python tool does (``parse_floor.py``: every file parsed with ``ast`` and walked once).

    python benchmarks/throughput.py [--sizes 10000,100000] [--peers /path/to/venv/bin] [--json OUT]
    python benchmarks/throughput.py --repos /work/scratch/realcode/* [--tool-timeout 600] [--per-file]
    python benchmarks/throughput.py --real [--root /work/scratch/realcode]   # the corpus's repos

For each size a corpus is generated (benchmarks/corpus.py); with ``--repos`` (folders) or
``--real`` (the repositories of benchmarks/realcode/MANIFEST.md, cloned under ``--root``) each
folder is one code base. Each command runs REPEAT times in it and we report the median wall
time, lines per second, peak memory (the child's max RSS, from ``os.wait4``: the largest single
process, workers included), and the ratio to syncfix's cold ``check`` on as many cores; for
real repositories also TorchFix's and ruff's time over syncfix's at equal cores. Lines are
those of the folder's ``*.py`` files (each tool then applies its own excludes). A command
that runs past ``--tool-timeout`` is killed and reported as such. Peers live in another
virtual environment (``--peers``: the folder holding their ``torchfix``/``fixit``/``ruff``
executables). Runs of the variants are interleaved so a noisy neighbour hits all of them alike.

``--per-file`` also times syncfix's API (``syncfix.api.check_code``) on each file alone, in one
worker process per code base (a file past ``--file-timeout`` is recorded as such and the worker
restarts after it), and lists the slowest files in ms per 100 lines (target: none over 50).
"""

from __future__ import annotations

import argparse
import compileall
import importlib.util
import json
import os
import queue
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from corpus import generate  # noqa: E402

FLOOR = "Python floor: ast.parse + walk"
TIMED_OUT = -999  # the exit code we report for a command killed at --tool-timeout


def timed(cmd: list[str], cwd: Path, timeout: float | None = None) -> tuple[float, int, int]:
    """(seconds, peak RSS in MiB, exit code) of one run of ``cmd``; killed (with its workers)
    after ``timeout`` seconds, with exit code TIMED_OUT."""
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            start_new_session=True)
    killed = threading.Event()

    def kill() -> None:
        killed.set()
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass

    timer = threading.Timer(timeout, kill) if timeout else None
    if timer:
        timer.start()
    _, status, usage = os.wait4(proc.pid, 0)
    if timer:
        timer.cancel()
    seconds = time.perf_counter() - start
    code = TIMED_OUT if killed.is_set() else os.waitstatus_to_exitcode(status)
    return seconds, usage.ru_maxrss // 1024, code


def py_lines(folder: Path) -> tuple[int, int]:
    """(files, lines) of the ``*.py`` files under ``folder``, outside ``.git``."""
    files = lines = 0
    for path in folder.rglob("*.py"):
        if ".git" in path.parts or not path.is_file():
            continue
        files += 1
        with open(path, "rb") as f:
            lines += sum(1 for _ in f)
    return files, lines


# ---- per-file timing ---------------------------------------------------------------------------

# A small training script that most rules and node types visit: checked once, untimed, so that
# the process's one-time set-up (lazy imports, per-class tables) is charged to no file.
WARM_UP = """
import time
import torch
from torch import nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 2)

    @torch.no_grad()
    def forward(self, x):
        return self.fc(x) if x.sum() > 0 else -self.fc(x)


def train(model, loader, opt, device="cuda"):
    total, correct = 0.0, 0
    for i, (x, y) in enumerate(loader):
        x, y = x.cuda(), y.to(device)
        out = model(x)
        loss = nn.functional.cross_entropy(out, y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        total += loss.item()
        correct += (out.argmax(1) == y).sum().item()
        mask = out[out > 0]
        assert torch.isfinite(loss), f"step {i}"
        if i % 10 == 0:
            print(f"{i}: {loss.item():.3f} {max(out.max(), 0)}", [t.item() for t in out[0]])
            torch.cuda.synchronize()
            t0 = time.perf_counter()
        with torch.autocast("cuda"):
            z = torch.tensor([1.0, 2.0], device=device) + mask.numel()
        try:
            w = z.tolist()
        except RuntimeError:
            w = lambda: None
    return total / len(loader), correct, w


if __name__ == "__main__":
    data = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(torch.randn(8, 4)), batch_size=2)
    train(Net().cuda(), data, None)
"""

WORKER = r"""
import json, sys, time
from syncfix.api import check_code
check_code(sys.argv[1], path="warm_up.py")  # the process's set-up is not a file's cost
for path in sys.stdin.read().splitlines():
    try:
        src = open(path, encoding="utf-8").read()
    except (OSError, UnicodeDecodeError) as e:
        print(json.dumps({"path": path, "error": repr(e)[:200]}), flush=True)
        continue
    print(json.dumps({"start": path}), flush=True)
    t = time.perf_counter()
    try:
        n, err = len(check_code(src, path=path)), None
    except Exception as e:  # a crash is a result too
        n, err = None, repr(e)[:200]
    print(json.dumps({"path": path, "seconds": time.perf_counter() - t, "findings": n,
                      "error": err}), flush=True)
"""


def syncfix_files(folder: Path) -> list[Path]:
    """The files ``syncfix check`` would check in ``folder`` (its own discovery and excludes)."""
    out = subprocess.run([sys.executable, "-m", "syncfix", "check", ".", "--show-files", "--isolated"],
                         cwd=folder, capture_output=True, text=True, check=False).stdout
    return [(folder / line.strip()).resolve() for line in out.splitlines() if line.strip().endswith(".py")]


def per_file_times(files: list[Path], limit: float) -> list[dict]:
    """Seconds of ``check_code`` on each file alone; a file past ``limit`` gets ``timed_out``."""
    results: list[dict] = []
    todo = [str(f) for f in files]
    while todo:
        proc = subprocess.Popen([sys.executable, "-c", WORKER, WARM_UP], stdin=subprocess.PIPE,
                                stdout=subprocess.PIPE, text=True, start_new_session=True)
        lines: queue.Queue[str | None] = queue.Queue()

        def read(out=proc.stdout, q=lines) -> None:
            for line in out:  # type: ignore[union-attr]
                q.put(line)
            q.put(None)

        threading.Thread(target=read, daemon=True).start()
        proc.stdin.write("\n".join(todo))  # type: ignore[union-attr]
        proc.stdin.close()  # type: ignore[union-attr]
        current, done = None, set()
        while True:
            try:
                line = lines.get(timeout=limit if current else 300)
            except queue.Empty:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
                if current is None:  # silent between files: give up on the rest
                    results += [{"path": p, "seconds": None, "error": "worker stalled"}
                                for p in todo if p not in done]
                    done.update(todo)
                    break
                results.append({"path": current, "seconds": None, "timed_out": limit})
                done.add(current)
                break
            if line is None:
                proc.wait()
                if current is not None:  # it died on this file: record that, go on after it
                    results.append({"path": current, "seconds": None,
                                    "error": f"worker exited with {proc.returncode}"})
                    done.add(current)
                break
            rec = json.loads(line)
            if "start" in rec:
                current = rec["start"]
            else:
                results.append(rec)
                done.add(rec["path"])
                current = None
        if not done:  # the worker made no progress (it cannot start): stop here
            results += [{"path": p, "seconds": None, "error": "worker failed to start"} for p in todo]
            break
        todo = [p for p in todo if p not in done]
    for rec in results:
        try:
            with open(rec["path"], "rb") as f:
                rec["lines"] = sum(1 for _ in f)
        except OSError:
            rec["lines"] = 0
        secs = rec.get("seconds")
        rec["ms_per_100_lines"] = (secs * 1000 / max(rec["lines"], 1) * 100) if secs is not None else None
    return results


def print_per_file(name: str, recs: list[dict], worst: int) -> None:
    timed_out = [r for r in recs if r.get("timed_out")]
    ok = [r for r in recs if r.get("seconds") is not None]
    ok.sort(key=lambda r: r["ms_per_100_lines"], reverse=True)
    over = [r for r in ok if r["ms_per_100_lines"] > 50]
    total = sum(r["seconds"] for r in ok)
    print(f"\n-- {name}: syncfix.api.check_code per file: {len(ok)} files in {total:.1f} s, "
          f"{len(over) + len(timed_out)} over 50 ms/100 lines, {len(timed_out)} past the limit")
    for r in timed_out:
        print(f"   > {r['timed_out']:.0f} s  (time limit)   {r['lines']:6d} lines  {r['path']}")
    for r in ok[:worst]:
        print(f"   {r['ms_per_100_lines']:9.1f} ms/100 lines  {r['seconds']:8.2f} s  {r['lines']:6d} lines  {r['path']}")
    errors = [r for r in recs if r.get("error")]
    for r in errors[:5]:
        print(f"   error: {r['path']}: {r['error']}")


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
    # the least any Python tool does (benchmarks/parse_floor.py): what ruff's ratio can come to
    floor = [sys.executable, str(Path(__file__).with_name("parse_floor.py")), ".", "-j", str(jobs)]
    out[f"{FLOOR} ({jobs} cores)"] = (floor, jobs)
    return out


def bench(cmds: dict[str, tuple[list[str] | None, int]], cwd: Path, label: str, files: int, lines: int,
          args: argparse.Namespace, peers_too: bool = True) -> list[dict]:
    """Run every command REPEAT times in ``cwd``, print the table, return its rows."""
    runs: dict[str, list[tuple[float, int, int]]] = {
        name: [] for name, (c, _) in cmds.items() if c and (peers_too or name.startswith("syncfix"))
    }
    cache = cwd / ".syncfix_cache"
    had_cache = cache.exists()
    for _ in range(args.repeat):
        for name, (cmd, _) in cmds.items():
            if cmd is None or name not in runs:
                continue
            if runs[name] and runs[name][-1][2] == TIMED_OUT:
                continue  # once past the limit, not again
            if "warm" in name:  # fill the cache first, then time the re-run
                subprocess.run(cmd, cwd=cwd, capture_output=True, check=False, timeout=args.tool_timeout)
            runs[name].append(timed(cmd, cwd, args.tool_timeout))
            if cache.exists() and not had_cache:
                shutil.rmtree(cache)
    # each variant against syncfix's cold check on as many cores
    base = {cores: statistics.median(r[0] for r in runs[f"syncfix check -j{cores} (cold)"])
            for cores in {1, args.jobs}}
    print(f"\n== {label}: {lines} lines in {files} files (median of {args.repeat}, {args.jobs} cores)")
    print(f"{'command':40} {'seconds':>9} {'lines/s':>9} {'peak MiB':>9} "
          f"{'vs syncfix check, same cores':>29} rc")
    rows = []
    for name, rs in runs.items():
        cores = cmds[name][1]
        sec = statistics.median(r[0] for r in rs)
        mem = max(r[1] for r in rs)
        rc = rs[-1][2]
        late = rc == TIMED_OUT
        shown = f">{sec:8.0f}" if late else f"{sec:9.2f}"
        print(f"{name:40} {shown} {lines / sec:9.0f} {mem:9d} {sec / base[cores]:28.2f}x "
              f"{'timeout' if late else rc}")
        rows.append({"code_base": label, "lines": lines, "files": files, "command": name, "cores": cores,
                     "seconds": sec, "all_seconds": [r[0] for r in rs], "peak_mib": mem,
                     "vs_syncfix_check_same_cores": sec / base[cores], "exit_code": rc,
                     "timed_out": late})
    return rows


def ratios(rows: list[dict], jobs: int) -> str:
    """TorchFix's and ruff's time over syncfix's cold check at equal cores (one line)."""
    by = {r["command"]: r for r in rows}
    mine = by.get(f"syncfix check -j{jobs} (cold)")
    torchfix, ruff = by.get(f"torchfix -j{jobs}"), by.get(f"ruff check --select ALL ({jobs} cores)")
    floor = by.get(f"{FLOOR} ({jobs} cores)")
    if mine is None:
        return ""
    mark = lambda r: ">" if r["timed_out"] else ""  # noqa: E731
    parts = [f"syncfix check -j{jobs}: {mark(mine)}{mine['seconds']:.2f} s"]
    if torchfix:
        parts.append(f"TorchFix/syncfix = {torchfix['seconds'] / mine['seconds']:.2f}x (target >= 10)")
    if ruff:
        parts.append(f"syncfix/ruff = {mine['seconds'] / ruff['seconds']:.2f}x (target <= 3)")
        if floor:
            parts.append(f"Python floor/ruff = {floor['seconds'] / ruff['seconds']:.2f}x")
    return "   " + "; ".join(parts)


def real_folders(root: Path) -> list[Path]:
    """The clones of the repositories in benchmarks/realcode/MANIFEST.md."""
    from realcode import clone_problems, how_to_clone, parse_manifest

    man = parse_manifest()
    missing, _ = clone_problems(man, root)
    if missing:
        raise SystemExit(f"clones missing under {root}: {', '.join(missing)}\n"
                         f"Get them with:\n{how_to_clone(man, root, missing)}")
    return [root / folder for _, folder in man.repos.values()]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", help="generated corpus sizes in lines (default 10000,100000 when no "
                    "--repos/--real is given)")
    ap.add_argument("--repos", type=Path, nargs="+", help="real code bases: one folder each")
    ap.add_argument("--real", action="store_true", help="the repositories of the real-code corpus")
    ap.add_argument("--root", type=Path, default=Path("/work/scratch/realcode"), help="where --real finds them")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 2)
    ap.add_argument("--peers", type=Path, help="bin/ folder of a venv with torchfix, fixit, ruff")
    ap.add_argument("--peers-up-to", type=int, default=None,
                    help="run the peers only at sizes up to this many lines (they take ~25 min per 1M)")
    ap.add_argument("--only", help="run only the commands whose name matches this regular expression "
                    "(syncfix's cold check always runs: it is what the ratios are against)")
    ap.add_argument("--tool-timeout", type=float, default=None,
                    help="kill a command after this many seconds and report it as timed out")
    ap.add_argument("--per-file", action="store_true",
                    help="also time syncfix's API on each file of each code base alone")
    ap.add_argument("--file-timeout", type=float, default=120, help="per-file time limit (--per-file)")
    ap.add_argument("--worst", type=int, default=10, help="slowest files to list (--per-file)")
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()
    precompile()
    cmds = commands(args.peers, args.jobs)
    if args.only:
        keep = re.compile(args.only)
        cmds = {n: c for n, c in cmds.items()
                if keep.search(n) or n in {"syncfix check -j1 (cold)", f"syncfix check -j{args.jobs} (cold)"}}
    folders = list(args.repos or []) + (real_folders(args.root) if args.real else [])
    sizes = args.sizes or ("" if folders else "10000,100000")
    results: list[dict] = []
    per_file: dict[str, list[dict]] = {}
    for size in (int(s) for s in sizes.split(",") if s):
        with tempfile.TemporaryDirectory() as tmp:
            root = Path(tmp)
            files, lines = generate(root / "corpus", size)
            peers_too = args.peers_up_to is None or size <= args.peers_up_to
            results += bench(cmds, root / "corpus", "generated", files, lines, args, peers_too)
    for folder in folders:
        folder = folder.resolve()
        files, lines = py_lines(folder)
        rows = bench(cmds, folder, folder.name, files, lines, args)
        print(ratios(rows, args.jobs))
        results += rows
        if args.per_file:
            recs = per_file_times(syncfix_files(folder), args.file_timeout)
            for rec in recs:  # shown as <folder>/<path in it>
                rec["path"] = os.path.relpath(rec["path"], folder.parent)
            per_file[folder.name] = recs
            print_per_file(folder.name, per_file[folder.name], args.worst)
    if len(folders) > 1:
        total = {}
        for r in results:
            if r["code_base"] != "generated":
                t = total.setdefault(r["command"], {"seconds": 0.0, "timed_out": False, "peak": 0})
                t["seconds"] += r["seconds"]
                t["timed_out"] |= r["timed_out"]
                t["peak"] = max(t["peak"], r["peak_mib"])
        lines = sum(py_lines(f.resolve())[1] for f in folders)
        print(f"\n== all {len(folders)} code bases: {lines} lines (sum of the medians)")
        for name, t in total.items():
            print(f"{name:40} {'>' if t['timed_out'] else ' '}{t['seconds']:8.2f} s {lines / t['seconds']:9.0f} "
                  f"lines/s {t['peak']:6d} MiB")
        print(ratios([{"command": n, "seconds": t["seconds"], "timed_out": t["timed_out"]}
                      for n, t in total.items()], args.jobs))
    if args.per_file and per_file:
        every = [r for recs in per_file.values() for r in recs]
        print_per_file("all code bases", every, args.worst)
    for name, (cmd, _) in cmds.items():
        if cmd is None:
            print(f"(not run: {name} — not installed)")
    if args.json:
        args.json.write_text(json.dumps({"runs": results, "per_file": per_file} if per_file else results,
                                        indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
