"""Run syncfix over real code (torch's own Python files and the standard library) and report:
files seen, files parsed, crashes, parse-failure reasons, rewrites whose output does not parse,
non-idempotent files (a second pass changes something), and findings per rule.

    python benchmarks/selfcheck.py [--torch] [--stdlib] [--limit N] [--jobs N] [--json OUT]

Nothing is written to disk: each file is checked and fixed in memory (with --unsafe-fixes, the
widest set of rewrites).
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import random
import sys
import sysconfig
import time
import traceback
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import libcst as cst

from syncfix.config import Settings
from syncfix.engine import InternalError, process_source
from syncfix.fileio import FileError, read_source


def one(path: str) -> dict:
    settings = Settings(select=("ALL",), unsafe_fixes=True)
    out: dict = {"path": path, "status": "ok", "findings": {}, "fixed": 0}
    try:
        snap = read_source(path)
        new, remaining, applied = process_source(snap.data, path, settings, fix=True, with_edits=False)
        out["parsed"] = bool(remaining or applied or new != snap.data) or b"torch" in snap.data
        out["fixed"] = len(applied)
        for f in remaining + applied:
            out["findings"][f.code] = out["findings"].get(f.code, 0) + 1
        if new != snap.data:
            try:
                cst.parse_module(new)
            except Exception as exc:  # a rewrite that does not parse is a bug
                out["status"] = "bad-output"
                out["reason"] = str(exc).splitlines()[0]
                return out
            again, _, applied2 = process_source(new, path, settings, fix=True, with_edits=False)
            if again != new or applied2:
                out["status"] = "not-idempotent"
    except FileError as exc:
        out["status"] = "skipped"
        out["reason"] = str(exc).split(":")[0]
    except InternalError as exc:
        out["status"] = "internal-error"
        out["reason"] = str(exc)
    except Exception as exc:  # a crash: the point of this script is to find them
        out["status"] = "crash"
        out["reason"] = f"{type(exc).__name__}: {exc}"
        out["trace"] = traceback.format_exc(limit=6)
    return out


def files_under(root: Path) -> list[str]:
    return sorted(str(p) for p in root.rglob("*.py") if p.is_file())


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--torch", action="store_true", help="torch's installed Python files")
    ap.add_argument("--stdlib", action="store_true", help="the standard library")
    ap.add_argument("--limit", type=int, default=0, help="a seeded random sample of N files per corpus")
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--json", help="write the full results here")
    args = ap.parse_args()
    corpora: dict[str, list[str]] = {}
    if args.torch:
        try:
            import torch
        except ImportError:
            print("torch is not installed", file=sys.stderr)
            return 2
        corpora["torch"] = files_under(Path(torch.__file__).parent)
    if args.stdlib or not corpora:
        stdlib = Path(sysconfig.get_paths()["stdlib"])
        corpora["stdlib"] = [f for f in files_under(stdlib) if "site-packages" not in f]
    report = {}
    for name, files in corpora.items():
        if args.limit and len(files) > args.limit:
            files = sorted(random.Random(0).sample(files, args.limit))
        start = time.perf_counter()
        with ProcessPoolExecutor(args.jobs) as pool:
            results = list(pool.map(one, files, chunksize=8))
        seconds = time.perf_counter() - start
        status = collections.Counter(r["status"] for r in results)
        reasons = collections.Counter(r.get("reason", "") for r in results if r["status"] == "skipped")
        rules = collections.Counter()
        for r in results:
            rules.update(r["findings"])
        lines = sum(Path(r["path"]).read_bytes().count(b"\n") for r in results)
        print(f"\n== {name}: {len(files)} files, {lines} lines, {seconds:.1f} s ({args.jobs} jobs)")
        for key in ("ok", "skipped", "crash", "internal-error", "bad-output", "not-idempotent"):
            print(f"  {key:15} {status.get(key, 0)}")
        for reason, n in reasons.most_common(8):
            print(f"    skipped: {n:5} {reason}")
        print("  findings by rule: " + ", ".join(f"{c} {n}" for c, n in sorted(rules.items())))
        print(f"  fixes applied (with --unsafe-fixes): {sum(r['fixed'] for r in results)}")
        for r in results:
            if r["status"] in ("crash", "internal-error", "bad-output", "not-idempotent"):
                print(f"  !! {r['status']}: {r['path']}: {r.get('reason', '')}")
                if "trace" in r:
                    print("     " + r["trace"].replace("\n", "\n     "))
        report[name] = {"files": len(files), "lines": lines, "seconds": seconds, "status": status, "results": results}
    if args.json:
        Path(args.json).write_text(json.dumps(report, indent=1, default=dict))
    bad = sum(report[n]["status"].get(k, 0) for n in report for k in ("crash", "internal-error", "bad-output", "not-idempotent"))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
