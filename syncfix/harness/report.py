"""From two runs to a verdict: equivalence, sync counts per line, timing; as rich tables or JSON.

Everything here is a pure function of the runs' data (no processes, no torch except to compare
tensors), so the logic is tested on the CPU with hand-made run data.
"""

from __future__ import annotations

import linecache
import os
import statistics
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from .counter import KIND_HELP, KINDS
from .equivalence import (
    Comparison,
    Mismatch,
    Tolerance,
    compare,
    compare_records,
    compare_text,
    merge,
)
from .rewrite import Hunk
from .runner import Plan, SideResult

VERIFY_SCHEMA = "syncfix.verify/1"
TRACE_SCHEMA = "syncfix.trace/1"
EXIT_OK, EXIT_FAIL, EXIT_ERROR = 0, 1, 2


def rel(path: str) -> str:
    try:
        r = os.path.relpath(path)
    except ValueError:
        return path
    return path if r.startswith("..") else r


def _code(file: str, line: int) -> str:
    return linecache.getline(file, line).strip()


# ----------------------------------------------------------------------------- equivalence


def equivalence(orig: SideResult, new: SideResult, tol: Tolerance, kind: str) -> dict[str, Any]:
    """Compare the first captured run of each side (and the original with itself)."""
    oc = orig.data.get("captures") or []
    nc = new.data.get("captures") or []
    if not oc or not nc or oc[0].get("error") or nc[0].get("error"):
        missing = "original" if not oc or oc[0].get("error") else "rewritten"
        return {
            "status": "not-run",
            "tolerance": tol.describe(),
            "reason": f"the {missing} run did not complete its first run",
            "compared": 0,
            "mismatches": [],
            "notes": [],
        }
    result = _compare_captures(oc[0], nc[0], tol, kind)
    notes: list[str] = []
    if len(oc) > 1 and not oc[1].get("error"):
        self_check = _compare_captures(oc[0], oc[1], tol, kind)
        if not self_check.equal:
            m = self_check.mismatches[0]
            notes.append(
                "the original does not agree with itself across two runs with the same seed "
                f"({m.path}: {m.reason}); its output is not deterministic, so a mismatch may not "
                "be the rewrite's fault (try --rtol/--atol, or seed what the program leaves unseeded)"
            )
    if result.equal:
        status = "identical" if tol.exact else "within-tolerance"
    else:
        status = "mismatch"
    return {
        "status": status,
        "tolerance": tol.describe(),
        "compared": result.compared,
        "mismatches": [m.to_dict() for m in result.mismatches],
        "notes": notes,
    }


def _compare_captures(
    a: dict[str, Any], b: dict[str, Any], tol: Tolerance, kind: str
) -> Comparison:
    parts = [compare_text(a.get("stdout", ""), b.get("stdout", ""), tol)]
    parts.append(compare_records(a.get("records", []), b.get("records", []), tol))
    if kind == "function":
        parts.append(compare(a.get("return"), b.get("return"), tol, "return"))
    return merge(*parts)


# ----------------------------------------------------------------------------- syncs


@dataclass
class _Row:
    file: str
    line: int
    end: int
    before: dict[str, float]
    after: dict[str, float]
    hunk: Hunk | None


def _per_run(sites: Iterable[dict[str, Any]], runs: int) -> dict[tuple[str, int], dict[str, float]]:
    out: dict[tuple[str, int], dict[str, float]] = defaultdict(lambda: dict.fromkeys(KINDS, 0.0))
    for s in sites:
        out[(s["file"], s["line"])][s["kind"]] += s["count"] / max(runs, 1)
    return out


def _num(x: float) -> float | int:
    return int(x) if float(x).is_integer() else round(x, 3)


def syncs(orig: SideResult, new: SideResult) -> dict[str, Any]:
    """Per-line sync counts before/after (per run), flags, totals and the counters' cross-check."""
    skipped = orig.data.get("count_skipped") or new.data.get("count_skipped")
    o_runs, n_runs = orig.data.get("count_runs", 0), new.data.get("count_runs", 0)
    if skipped or not o_runs or not n_runs:
        reason = skipped or "the counted run did not complete"
        return {"available": False, "reason": reason}
    hunks: dict[str, list[Hunk]] = {}
    for rf in new.data.get("rewrites", []):
        hunks[rf["path"]] = [Hunk(**h) for h in rf["hunks"]]

    def inserted_at(site: dict[str, Any]) -> Hunk | None:
        """The pure insertion that holds this rewritten-run site's line, if any."""
        n = site.get("new_line")
        if n is None:
            return None
        for h in hunks.get(site["file"], []):
            if h.end < h.start and h.new_start <= n <= h.new_end:
                return h
        return None

    after_sites: list[dict[str, Any]] = []
    inserted_sites: list[dict[str, Any]] = []
    for site in new.data.get("sites", []):
        (inserted_sites if inserted_at(site) is not None else after_sites).append(site)
    before = _per_run(orig.data.get("sites", []), o_runs)
    after = _per_run(after_sites, n_runs)

    def hunk_of(file: str, line: int) -> Hunk | None:
        for h in hunks.get(file, []):
            if h.end >= h.start and line in h.lines:  # insertions get rows of their own
                return h
        return None

    rows: dict[tuple[str, int], _Row] = {}

    def row_for(file: str, line: int) -> _Row:
        h = hunk_of(file, line)
        key = (file, h.anchor if h else line)
        r = rows.get(key)
        if r is None:
            start = h.anchor if h else line
            end = max(h.lines) if h else line
            r = rows[key] = _Row(
                file, start, end, dict.fromkeys(KINDS, 0.0), dict.fromkeys(KINDS, 0.0), h
            )
        return r

    for (file, line), kinds in before.items():
        r = row_for(file, line)
        for k, v in kinds.items():
            r.before[k] += v
    for (file, line), kinds in after.items():
        r = row_for(file, line)
        for k, v in kinds.items():
            r.after[k] += v
    for file, hs in hunks.items():
        for h in hs:
            if h.end >= h.start:
                row_for(file, h.anchor)

    out_rows = []
    flags = []
    for r in sorted(rows.values(), key=lambda r: (r.file, r.line)):
        b, a = sum(r.before.values()), sum(r.after.values())
        flag = None
        if r.hunk is not None and a >= b:
            flag = "no-drop" if b else "no-syncs-before"
        if a > b:
            flag = "rose"
        entry = {
            "file": r.file,
            "line": r.line,
            "end_line": r.end,
            "new_line": None,
            "code": _code(r.file, r.line),
            "rewritten": r.hunk is not None,
            "inserted": False,
            "before": _num(b),
            "after": _num(a),
            "drop": _num(b - a),
            "before_by_kind": {k: _num(v) for k, v in r.before.items() if v},
            "after_by_kind": {k: _num(v) for k, v in r.after.items() if v},
            "flag": flag,
        }
        out_rows.append(entry)
        if flag:
            flags.append(entry)
    # Lines the rewrite inserted (an accumulator's final read after its loop, an initialisation
    # before it): no original line to compare with, so a row of their own and never a flag; the
    # totals say whether the syncs rose.
    ins: dict[tuple[str, int], dict[str, float]] = defaultdict(lambda: dict.fromkeys(KINDS, 0.0))
    for site in inserted_sites:
        ins[(site["file"], site["new_line"])][site["kind"]] += site["count"] / max(n_runs, 1)
    for (file, n), kinds in ins.items():
        hunk = inserted_at({"file": file, "new_line": n})
        if hunk is None:  # cannot happen: the site was sorted here for having one
            continue
        added = hunk.after.splitlines()
        text = added[n - hunk.new_start] if n - hunk.new_start < len(added) else ""
        a = sum(kinds.values())
        out_rows.append(
            {
                "file": file,
                "line": hunk.anchor,
                "end_line": hunk.anchor,
                "new_line": n,
                "code": text.strip(),
                "rewritten": True,
                "inserted": True,
                "before": 0,
                "after": _num(a),
                "drop": _num(-a),
                "before_by_kind": {},
                "after_by_kind": {k: _num(v) for k, v in kinds.items() if v},
                "flag": None,
            }
        )
    out_rows.sort(key=lambda e: (e["file"], e["line"], e["inserted"], e["new_line"] or 0))

    def totals(per: dict[tuple[str, int], dict[str, float]]) -> dict[str, Any]:
        by_kind = {k: _num(sum(v[k] for v in per.values())) for k in KINDS}
        return {"total": _num(sum(sum(v.values()) for v in per.values())), "by_kind": by_kind}

    tb, ta = totals(before), totals(_per_run(new.data.get("sites", []), n_runs))
    return {
        "available": True,
        "counter": orig.data.get("counter"),
        "runs_counted": {"original": o_runs, "rewritten": n_runs},
        "original": tb,
        "rewritten": ta,
        "drop": _num(tb["total"] - ta["total"]),
        "rose": ta["total"] > tb["total"],
        "lines": out_rows,
        "flags": flags,
        "cross_check": {
            "original": orig.data.get("cross_check", {"armed": False}),
            "rewritten": new.data.get("cross_check", {"armed": False}),
        },
    }


# ----------------------------------------------------------------------------- timing


def timing(orig: SideResult, new: SideResult) -> dict[str, Any]:
    if not orig.times or not new.times:
        return {
            "available": False,
            "reason": "no timed runs" if orig.ok and new.ok else "a run failed",
        }
    mo, mn = statistics.median(orig.times), statistics.median(new.times)
    return {
        "available": True,
        "method": "host wall clock between torch.cuda.synchronize() calls (synchronize-then-clock); "
        "runs interleaved A B, B A; counter off",
        "repeats": min(len(orig.times), len(new.times)),
        "original_s": orig.times,
        "rewritten_s": new.times,
        "original_median_s": mo,
        "rewritten_median_s": mn,
        "original_range_s": [min(orig.times), max(orig.times)],
        "rewritten_range_s": [min(new.times), max(new.times)],
        "ratio": (mn / mo) if mo > 0 else None,
        "speedup": (mo / mn) if mn > 0 else None,
    }


# ----------------------------------------------------------------------------- rewrites


def rewrites(new: SideResult, plan: Plan) -> list[dict[str, Any]]:
    """Each rewritten file with its hunks and the fixes that made them: only fixes the run could
    have applied (safe ones, and unsafe ones with --unsafe-fixes), of rules whose fixes did apply."""
    out = []
    findings_by_file: dict[str, list[Any]] = {}
    applied_codes: dict[str, set[str]] = {}
    unsafe = bool(plan.fixer.get("unsafe_fixes"))
    if not plan.fixer.get("spec"):
        changed = [rf["path"] for rf in new.data.get("rewrites", []) if rf.get("changed")]
        findings_by_file = _findings(changed, plan.fixer)
        applied_codes = _applied_codes(changed, plan.fixer)
    for rf in new.data.get("rewrites", []):
        hs = [Hunk(**h) for h in rf["hunks"]]
        fixed = []
        for f in findings_by_file.get(rf["path"], []):
            if f.fix is None or f.code not in applied_codes.get(rf["path"], set()):
                continue
            if f.fix.applicability.value == "unsafe" and not unsafe:
                continue  # offered, but not applied in this run
            if any(f.line <= max(h.lines) and f.end_line >= min(h.lines) for h in hs):
                fixed.append(
                    {"code": f.code, "line": f.line, "applicability": f.fix.applicability.value}
                )
        out.append({**rf, "fixes": fixed})
    return out


def _applied_codes(paths: list[str], fixer: dict[str, Any]) -> dict[str, set[str]]:
    """The rules whose fixes ``apply`` (with the run's settings) applies to each file."""
    from syncfix import fix_code_with_findings

    out: dict[str, set[str]] = {}
    for p in paths:
        try:
            with open(p, encoding="utf-8") as fh:
                _, applied = fix_code_with_findings(
                    fh.read(),
                    path=p,
                    select=fixer.get("select") or None,
                    ignore=fixer.get("ignore") or None,
                    unsafe_fixes=bool(fixer.get("unsafe_fixes")),
                    observations=fixer.get("observations"),
                )
            out[p] = {f.code for f in applied}
        except Exception:  # the report must not die on a file it cannot re-check
            out[p] = set()
    return out


def _findings(paths: list[str], fixer: dict[str, Any]) -> dict[str, list[Any]]:
    from syncfix import check_code

    out: dict[str, list[Any]] = {}
    for p in paths:
        try:
            with open(p, encoding="utf-8") as fh:
                src = fh.read()
            out[p] = check_code(
                src,
                path=p,
                select=fixer.get("select"),
                ignore=fixer.get("ignore"),
                unsafe_fixes=bool(fixer.get("unsafe_fixes")),
                observations=fixer.get("observations"),
            )
        except Exception:  # the report must not die on a file it cannot re-check
            out[p] = []
    return out


# ----------------------------------------------------------------------------- verify report


def verify_report(plan: Plan, orig: SideResult, new: SideResult, tol: Tolerance) -> dict[str, Any]:
    errors = [f.to_dict() for f in (orig.failure, new.failure) if f is not None]
    eq = equivalence(orig, new, tol, plan.target.kind)
    sy = syncs(orig, new)
    tm = timing(orig, new)
    rw = rewrites(new, plan)
    reasons = []
    code = EXIT_OK
    if orig.failure is not None:
        code = EXIT_ERROR
        reasons.append(
            f"the original program failed ({orig.failure.kind} in the {orig.failure.phase} run)"
        )
    if new.failure is not None:
        code = max(code, EXIT_FAIL)
        reasons.append(
            f"the rewritten program failed ({new.failure.kind} in the {new.failure.phase} run)"
        )
    if eq["status"] == "mismatch":
        code = max(code, EXIT_FAIL)
        reasons.append(f"{len(eq['mismatches'])} value(s) differ ({eq['tolerance']})")
    if sy.get("available") and sy["rose"]:
        code = max(code, EXIT_FAIL)
        reasons.append(
            f"syncs rose: {sy['original']['total']} → {sy['rewritten']['total']} per run"
        )
    if code == EXIT_OK:
        reasons.append("numbers match" + ("" if sy.get("available") else "; syncs not counted"))
    notes = list(eq.get("notes", []))
    notes += orig.data.get("notes", []) + [
        n for n in new.data.get("notes", []) if n not in orig.data.get("notes", [])
    ]
    if not any(r.get("changed") for r in rw) and new.ok:
        notes.append(
            "syncfix changed nothing in the files this program loaded: both runs ran the same code"
        )
    for r in rw:
        if r.get("error"):
            notes.append(f"could not rewrite {rel(r['path'])}: {r['error']} (ran it unchanged)")
    return {
        "schema": VERIFY_SCHEMA,
        "target": plan.target.to_dict(),
        "settings": {
            "root": plan.root,
            "select": plan.fixer.get("select"),
            "ignore": plan.fixer.get("ignore"),
            "unsafe_fixes": bool(plan.fixer.get("unsafe_fixes")),
            "fixer": plan.fixer.get("spec"),
            "tolerance": {"rtol": tol.rtol, "atol": tol.atol},
            "seed": plan.seed,
            "deterministic": plan.deterministic,
            "warmup": plan.warmup,
            "repeats": plan.repeats,
            "timeout_s": plan.timeout,
        },
        "environment": orig.data.get("environment") or new.data.get("environment") or {},
        "rewrites": rw,
        "equivalence": eq,
        "syncs": sy,
        "timing": tm,
        "errors": errors,
        "notes": notes,
        "verdict": {"ok": code == EXIT_OK, "exit_code": code, "reasons": reasons},
    }


# ----------------------------------------------------------------------------- trace report


def trace_report(
    plan: Plan, side: SideResult, *, select: list[str] | None = None
) -> dict[str, Any]:
    sites = side.data.get("sites", [])
    runs = side.data.get("count_runs", 0)
    files = sorted({s["file"] for s in sites if os.path.isfile(s["file"])})
    findings = _findings(files, {"select": select, "unsafe_fixes": True})
    out_sites = []
    for s in sites:
        rules = []
        for f in findings.get(s["file"], []):
            if f.line <= s["line"] <= f.end_line:
                fix = f.fix.applicability.value if f.fix is not None else None
                rules.append({"code": f.code, "fix": fix, "message": f.message})
        out_sites.append({**s, "code": _code(s["file"], s["line"]), "rules": rules})
    out_sites.sort(key=lambda s: (-s["wait_s"], -s["count"], s["file"], s["line"]))
    total = sum(s["count"] for s in sites)
    available = bool(runs) and not side.data.get("count_skipped")
    code = EXIT_OK
    reasons = []
    if side.failure is not None:
        code = EXIT_ERROR
        reasons.append(f"the program failed ({side.failure.kind} in the {side.failure.phase} run)")
    if not available:
        code = EXIT_ERROR
        reasons.append(side.data.get("count_skipped") or "no counted run completed")
    return {
        "schema": TRACE_SCHEMA,
        "target": plan.target.to_dict(),
        "environment": side.data.get("environment", {}),
        "available": available,
        "reason": None
        if available
        else (side.data.get("count_skipped") or "no counted run completed"),
        "counter": side.data.get("counter"),
        "warmup": plan.warmup,
        "wait_measured": bool(side.data.get("wait_measured")),
        "run_s": side.times[0] if side.times else None,
        "total": total,
        "by_kind": {k: sum(s["count"] for s in sites if s["kind"] == k) for k in KINDS},
        "total_wait_s": sum(s["wait_s"] for s in sites),
        "sites": out_sites,
        "cross_check": side.data.get("cross_check", {"armed": False}),
        "errors": [side.failure.to_dict()] if side.failure else [],
        "verdict": {"ok": code == EXIT_OK, "exit_code": code, "reasons": reasons},
    }


# ----------------------------------------------------------------------------- rendering


def _lines(text: str) -> str:
    return "\n".join(ln.strip() for ln in text.splitlines() if ln.strip())


def _kinds_text(by_kind: dict[str, Any]) -> str:
    return ", ".join(f"{k} {v}" for k, v in by_kind.items() if v) or "-"


def _span(times: list[float]) -> str:
    return f"[{min(times) * 1e3:.3f}–{max(times) * 1e3:.3f}]"


def _ms(s: float | None) -> str:
    return "-" if s is None else f"{s * 1e3:.3f} ms"


def _fix_label(fixes: list[dict[str, Any]]) -> str:
    """``SFX301, SFX401 (safe)``: every fix behind a hunk, grouped by safety."""
    out = []
    for kind in ("safe", "observed", "unsafe"):
        codes = sorted({f["code"] for f in fixes if f["applicability"] == kind})
        if codes:
            out.append(f"{', '.join(codes)} ({kind})")
    return "; ".join(out)


def _sync_location(r: dict[str, Any]) -> str:
    if r.get("inserted"):
        return f"{rel(r['file'])}:{r['line']}+"
    return f"{rel(r['file'])}:{r['line']}" + (
        f"-{r['end_line']}" if r["end_line"] != r["line"] else ""
    )


def render_verify(report: dict[str, Any], console: Any) -> None:
    """The verify report as rich tables. Every string that comes from the user's program or
    files is escaped: ``x[mask]`` must not be read as rich markup."""
    from rich.markup import escape as esc
    from rich.panel import Panel
    from rich.table import Table
    from rich.text import Text

    t = report["target"]
    env = report["environment"]
    head = Text()
    head.append("syncfix verify ", style="bold")
    head.append(" ".join([t["spec"], *t["args"]]))
    env_bits = [f"python {env.get('python', '?')}", f"torch {env.get('torch') or 'not imported'}"]
    env_bits.append(env.get("device") or ("CUDA available" if env.get("cuda") else "no CUDA"))
    head.append("\n" + " · ".join(env_bits), style="dim")
    console.print(head)

    # rewrites
    rw = [r for r in report["rewrites"] if r.get("changed")]
    if rw:
        table = Table(
            title="Rewrites applied (in memory; your files are untouched)", title_justify="left"
        )
        # The location is never cut (a cut one hides the line): the other cells wrap instead.
        table.add_column("location", no_wrap=True)
        for col in ("original", "rewritten", "fix"):
            table.add_column(col, overflow="fold")
        for r in rw:
            for h in r["hunks"]:
                hk = Hunk(**h)
                lo, hi = min(hk.lines), max(hk.lines)
                fixes = [f for f in r.get("fixes", []) if lo <= f["line"] <= hi]
                table.add_row(
                    Text(f"{rel(r['path'])}:{hk.anchor}"),
                    Text(_lines(h["before"]) or "(inserted)"),
                    Text(_lines(h["after"]) or "(deleted)"),
                    Text(_fix_label(fixes)),
                )
        console.print(table)
    for note in report["notes"]:
        console.print(Text.assemble(("note: ", "yellow"), note))

    # errors
    for e in report["errors"]:
        body = e["message"]
        if e.get("traceback"):
            body += "\n\n" + e["traceback"].rstrip()
        elif e.get("stderr_tail"):
            body += "\n\nstderr (tail):\n" + e["stderr_tail"].rstrip()
        title = f"{e['side']} run: {e['kind']} in the {e['phase']} run"
        console.print(Panel(Text(body), title=esc(title), border_style="red"))

    # equivalence
    eq = report["equivalence"]
    style = {"identical": "green", "within-tolerance": "green", "mismatch": "red"}.get(
        eq["status"], "yellow"
    )
    if eq["status"] == "not-run":
        console.print(
            Text.assemble(
                ("Numbers: ", "bold"), ("not compared", "yellow"), f": {eq.get('reason', '')}"
            )
        )
    else:
        console.print(
            Text.assemble(
                ("Numbers: ", "bold"),
                (eq["status"], style),
                f" ({eq['tolerance']}, {eq['compared']} values compared)",
            )
        )
    if eq["mismatches"]:
        table = Table(title="Values that differ", title_justify="left", show_lines=True)
        for col in ("value", "how", "original", "rewritten"):
            table.add_column(col, overflow="fold")
        for m in eq["mismatches"][:20]:
            table.add_row(
                Text(m["path"]), Text(m["reason"]), Text(m["original"]), Text(m["rewritten"])
            )
        console.print(table)
        if len(eq["mismatches"]) > 20:
            console.print(f"... and {len(eq['mismatches']) - 20} more (see --json)")

    # syncs
    sy = report["syncs"]
    if not sy.get("available"):
        console.print(
            Text.assemble(("Syncs: ", "bold"), ("not counted", "yellow"), f": {sy.get('reason')}")
        )
    else:
        table = Table(
            title=f"Syncs per run by line (counter: {esc(str(sy.get('counter')))}; warm-up excluded)",
            title_justify="left",
        )
        table.add_column("location", no_wrap=True)
        for col in ("code", "kind", "before", "after", "drop", ""):
            table.add_column(
                col,
                justify="right" if col in ("before", "after", "drop") else "left",
                overflow="fold",
            )
        marks = {
            "rose": Text("✗ rose", "red"),
            "no-drop": Text("⚠ rewritten, no drop", "yellow"),
            "no-syncs-before": Text("⚠ rewritten, no syncs here", "yellow"),
        }
        for r in sy["lines"]:
            kinds = r["before_by_kind"] or r["after_by_kind"]
            mark = marks.get(r["flag"] or "") or (
                Text("inserted", "cyan")
                if r.get("inserted")
                else Text("rewritten ✓", "green")
                if r["rewritten"]
                else Text("")
            )
            table.add_row(
                Text(_sync_location(r)),
                Text(r["code"][:60]),
                ", ".join(kinds),
                str(r["before"]),
                str(r["after"]),
                str(r["drop"]),
                mark,
            )
        o, n = sy["original"], sy["rewritten"]
        table.add_section()
        table.add_row(
            "total",
            "",
            "",
            str(o["total"]),
            str(n["total"]),
            str(sy["drop"]),
            marks["rose"] if sy["rose"] else "",
        )
        console.print(table)
        console.print(
            Text(
                f"  by kind: original {_kinds_text(o['by_kind'])}; rewritten {_kinds_text(n['by_kind'])}",
                "dim",
            )
        )
        if any(r.get("inserted") for r in sy["lines"]):
            console.print(
                Text(
                    "  N+: a line the rewrite inserted after original line N (no original to "
                    "compare with; the total says whether syncs rose)",
                    "dim",
                )
            )
        for side in ("original", "rewritten"):
            cc = sy["cross_check"][side]
            if cc.get("armed"):
                verdict = (
                    "agree" if cc["agree"] else f"DISAGREE on {len(cc['disagreements'])} line(s)"
                )
                console.print(
                    Text(
                        f"  cross-check ({side}): trace saw {cc['trace_copy_stream']} copy/stream syncs, "
                        f"set_sync_debug_mode saw {cc['debug_mode']} → {verdict}; "
                        f"{cc['trace_only_device_event']} device/event sync(s) only the trace can see",
                        "dim" if cc["agree"] else "red",
                    )
                )

    # timing
    tm = report["timing"]
    if tm.get("available"):
        ratio = tm["ratio"]
        console.print(
            Text.assemble(
                ("Time: ", "bold"),
                f"original {_ms(tm['original_median_s'])} {_span(tm['original_s'])}, "
                f"rewritten {_ms(tm['rewritten_median_s'])} {_span(tm['rewritten_s'])} "
                f"(medians [min–max] of {tm['repeats']} interleaved runs); rewritten/original = "
                + (f"{ratio:.3f}" if ratio is not None else "-"),
            )
        )
    else:
        console.print(Text.assemble(("Time: ", "bold"), f"not measured: {tm.get('reason')}"))

    v = report["verdict"]
    colour = "green" if v["ok"] else ("red" if v["exit_code"] == EXIT_FAIL else "magenta")
    word = "OK" if v["ok"] else "FAIL" if v["exit_code"] == EXIT_FAIL else "ERROR"
    console.print(Text.assemble((word, f"bold {colour}"), ": " + "; ".join(v["reasons"])))


def render_trace(report: dict[str, Any], console: Any, *, limit: int | None = None) -> None:
    from rich.markup import escape as esc
    from rich.panel import Panel
    from rich.table import Table
    from rich.text import Text

    t = report["target"]
    console.print(Text.assemble(("syncfix trace ", "bold"), " ".join([t["spec"], *t["args"]])))
    for e in report["errors"]:
        body = e["message"] + ("\n\n" + e["traceback"].rstrip() if e.get("traceback") else "")
        if not e.get("traceback") and e.get("stderr_tail"):
            body += "\n\nstderr (tail):\n" + e["stderr_tail"].rstrip()
        console.print(
            Panel(Text(body), title=esc(f"{e['kind']} in the {e['phase']} run"), border_style="red")
        )
    if not report["available"]:
        console.print(Text.assemble(("Syncs not counted: ", "yellow"), str(report["reason"])))
        return
    wait = report["wait_measured"]
    table = Table(
        title=f"{report['total']} syncs in one run (warm-up runs: {report['warmup']}; "
        f"counter: {esc(str(report['counter']))})",
        title_justify="left",
    )
    show_via = any(s.get("via") for s in report["sites"])
    cols = ["location", "function", "kind", "count", "host wait", "code", "rule"] + (
        ["via"] if show_via else []
    )
    for col in cols:
        table.add_column(col, justify="right" if col in ("count", "host wait") else "left")
    sites = report["sites"] if limit is None else report["sites"][:limit]
    for s in sites:
        rules = ", ".join(
            f"{r['code']} ({r['fix']} fix)" if r["fix"] else f"{r['code']} (no fix)"
            for r in s["rules"]
        )
        row = [
            Text(f"{rel(s['file'])}:{s['line']}"),
            Text(s["function"]),
            s["kind"],
            str(s["count"]),
            _ms(s["wait_s"]) if wait else "n/a",
            Text(s["code"][:70]),
            Text(rules),
        ]
        if show_via:
            row.append(Text(s.get("via") or ""))
        table.add_row(*row)
    console.print(table)
    if limit is not None and len(report["sites"]) > limit:
        console.print(f"... and {len(report['sites']) - limit} more sites (see --json)")
    total_wait = _ms(report["total_wait_s"]) if wait else "n/a"
    console.print(
        Text(f"  by kind: {_kinds_text(report['by_kind'])}; total host wait {total_wait}", "dim")
    )
    console.print(Text("  kinds: " + "; ".join(f"{k} = {v}" for k, v in KIND_HELP.items()), "dim"))
    cc = report["cross_check"]
    if cc.get("armed"):
        verdict = "agree" if cc["agree"] else f"DISAGREE on {len(cc['disagreements'])} line(s)"
        console.print(
            Text(
                f"  cross-check: set_sync_debug_mode saw {cc['debug_mode']} of the trace's "
                f"{cc['trace_copy_stream']} copy/stream syncs ({verdict}); device/event syncs it "
                f"cannot see: {cc['trace_only_device_event']}",
                "dim" if cc["agree"] else "red",
            )
        )


__all__ = [
    "EXIT_ERROR",
    "EXIT_FAIL",
    "EXIT_OK",
    "Mismatch",
    "equivalence",
    "render_trace",
    "render_verify",
    "syncs",
    "timing",
    "trace_report",
    "verify_report",
]
