"""Held-out check: syncfix on public repositories it was not developed against.

    python benchmarks/heldout.py CLONE [CLONE ...] [--jobs 2] [--json OUT]

The marked corpus (benchmarks/realcode.py) scores syncfix against an expert's marks, but its
ten repositories are also the ones the rules were tuned on. This script runs
``syncfix check --unsafe-fixes`` on other clones and prints what a reviewer needs to judge the
rules on code they never saw: per repository its commit, lines, findings, fixes by tier and
where they land (hot or cold, by realcode.py's heuristic), the time; then every safe fix with
its new text, to be read by hand (a wrong safe fix is the worst bug), and the no-fix reasons.
Nothing is scored automatically: there are no marks here.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import subprocess
import sys
from collections import Counter
from pathlib import Path

HERE = Path(__file__).resolve().parent
_spec = importlib.util.spec_from_file_location("realcode", HERE / "realcode.py")
assert _spec and _spec.loader
realcode = importlib.util.module_from_spec(_spec)
sys.modules.setdefault("realcode", realcode)
_spec.loader.exec_module(realcode)


def commit_of(clone: Path) -> str:
    proc = subprocess.run(
        ["git", "-C", str(clone), "rev-parse", "--short=8", "HEAD"],
        capture_output=True,
        text=True,
        check=False,
    )
    return proc.stdout.strip() or "?"


def lines_of(clone: Path) -> int:
    total = 0
    for path in clone.rglob("*.py"):
        if ".git" not in path.parts:
            try:
                total += path.read_bytes().count(b"\n")
            except OSError:
                pass
    return total


def summarise(clone: Path, findings: list[dict]) -> dict:
    """Counts for one repository and its fixes (each with where it lands and its new text)."""
    cache: dict = {}
    fixes = []
    for f in findings:
        fix = f.get("fix")
        if not fix or not fix.get("edits"):
            continue
        where = realcode.location_kind(clone, f["filename"], f["location"]["row"], set(), cache)
        fixes.append(
            {
                "path": f["filename"],
                "line": f["location"]["row"],
                "code": f["code"],
                "tier": fix["applicability"],
                "where": where,
                "new": "".join(e.get("content", "") for e in fix["edits"]).rstrip(),
            }
        )
    reasons = Counter(realcode.no_fix_reason(f) for f in findings if not f.get("fix"))
    return {
        "findings": len(findings),
        "safe": sum(1 for x in fixes if x["tier"] == "safe"),
        "unsafe": sum(1 for x in fixes if x["tier"] == "unsafe"),
        "hot": sum(1 for x in fixes if x["where"] == "hot"),
        "fixes": fixes,
        "reasons": reasons.most_common(),
    }


def report(results: dict[str, dict]) -> str:
    out = [
        "",
        "== syncfix check --unsafe-fixes on held-out repositories",
        f"{'repository':44} {'commit':9} {'lines':>7} {'time':>7} {'findings':>8} "
        f"{'safe':>5} {'unsafe':>6} {'fixes hot':>9}",
    ]
    for name, r in results.items():
        if r.get("error"):
            out.append(f"{name:44} {r['commit']:9} {r['lines']:7d}  ! {r['error']}")
            continue
        fixes = r["safe"] + r["unsafe"]
        out.append(
            f"{name:44} {r['commit']:9} {r['lines']:7d} {r['seconds']:6.1f}s {r['findings']:8d} "
            f"{r['safe']:5d} {r['unsafe']:6d} {r['hot']:4d} / {fixes}"
        )
    ok = [r for r in results.values() if not r.get("error")]
    out.append(
        f"{'all':44} {'':9} {sum(r['lines'] for r in results.values()):7d} "
        f"{sum(r['seconds'] for r in ok):6.1f}s {sum(r['findings'] for r in ok):8d} "
        f"{sum(r['safe'] for r in ok):5d} {sum(r['unsafe'] for r in ok):6d} "
        f"{sum(r['hot'] for r in ok):4d} / {sum(r['safe'] + r['unsafe'] for r in ok)}"
    )
    out += ["", "safe fixes, to review by hand:"]
    for name, r in results.items():
        for x in r.get("fixes", []):
            if x["tier"] == "safe":
                new = x["new"].replace("\n", "\n" + " " * 10)
                out.append(f"  {name}/{x['path']}:{x['line']} {x['code']} ({x['where']})\n          {new}")
    reasons: Counter[str] = Counter()
    for r in ok:
        reasons.update(dict(r["reasons"]))
    out += ["", "no-fix reasons (findings without a fix, by count):"]
    out += [f"  {n:4d}  {reason}" for reason, n in reasons.most_common(15)] or ["  (none)"]
    return "\n".join(out)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("clones", nargs="+", type=Path, help="one folder per repository")
    ap.add_argument("--jobs", "-j", type=int, default=2, help="syncfix worker processes")
    ap.add_argument("--timeout", type=float, default=900, help="seconds per repository")
    ap.add_argument("--json", type=Path, help="write the results here too")
    args = ap.parse_args()
    results: dict[str, dict] = {}
    for clone in args.clones:
        clone = clone.resolve()
        findings, seconds, error = realcode.run_syncfix(clone, True, args.jobs, args.timeout)
        r: dict = {"commit": commit_of(clone), "lines": lines_of(clone), "seconds": round(seconds, 2)}
        if findings is None:
            r["error"] = error
        else:
            r.update(summarise(clone, findings))
        results[clone.name] = r
        print(f"  {clone.name}: {seconds:.1f} s" + (f"  [{error}]" if error else ""), file=sys.stderr)
    print(report(results))
    if args.json:
        args.json.write_text(json.dumps(results, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
