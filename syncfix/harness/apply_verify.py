"""``syncfix apply PATHS --verify TARGET [-- ARGS]``: write only the fixes a run of TARGET proved.

1. The original program runs under the harness (it must succeed: exit 2 otherwise).
2. Where fixes wait for facts a run can show, one run records them (``trace --record``).
3. The candidates: safe and observed fixes (and unsafe ones with ``--unsafe-fixes``) of the files
   under PATHS, each a whole-line edit; overlapping ones wait for a later pass.
4. The program runs rewritten, in memory, with every candidate, beside the original: the values
   must be equal under the harness's rules (bitwise by default) and the syncs must not rise. On a
   mismatch, the candidates are bisected (halves tried on top of what already passed) down to the
   edits that cause it; those are dropped, with the value that differed.
5. The kept edits are written (or, with ``--diff``, shown); further passes take the fixes that
   overlapped, until none is left (at most ``MAX_PASSES``).
"""

from __future__ import annotations

import difflib
import os
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

from ..observed import Observations
from .equivalence import BITWISE, Tolerance
from .record import RecordError, project_files, record
from .report import equivalence, syncs
from .runner import Plan, RunFailure, run_pair
from .target import parse_target

MAX_PASSES = 3
EXIT_OK, EXIT_DROPPED, EXIT_ERROR = 0, 1, 2
T = TypeVar("T")
_LINE = re.compile(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+\Z")


class OriginalFailed(Exception):
    """The program fails as it is: nothing can be verified."""


@dataclass
class Candidate:
    path: str
    finding: Any  # a syncfix Finding whose fix has an edit
    dropped_because: str = ""
    syncs_before: float | None = None
    syncs_after: float | None = None

    @property
    def tier(self) -> str:
        return str(self.finding.fix.applicability.value)

    @property
    def edit(self) -> Any:
        return self.finding.fix.edit

    def label(self, root: str) -> str:
        f = self.finding
        return f"{os.path.relpath(self.path, root)}:{f.line} {f.code}"


@dataclass
class Outcome:
    kept: list[Candidate] = field(default_factory=list)
    dropped: list[Candidate] = field(default_factory=list)
    unrun: list[Candidate] = field(default_factory=list)  # in files the program never loaded
    texts: dict[str, str] = field(default_factory=dict)  # path -> verified text
    originals: dict[str, str] = field(default_factory=dict)
    runs: int = 0
    syncs_before: float | None = None
    syncs_after: float | None = None
    notes: list[str] = field(default_factory=list)


def split_lines(text: str) -> list[str]:
    return _LINE.findall(text)


def apply_edits(text: str, edits: Sequence[Any]) -> str:
    """``text`` with whole-line, non-overlapping ``edits`` (syncfix ``Edit``s) applied."""
    lines = split_lines(text)
    for e in sorted(edits, key=lambda e: e.start_line, reverse=True):
        lines[e.start_line - 1 : e.end_line] = split_lines(e.content)
    return "".join(lines)


def bisect(
    units: Sequence[T],
    passes: Callable[[list[T]], bool],
    on_drop: Callable[[T], None] = lambda unit: None,
) -> tuple[list[T], list[T]]:
    """Split ``units`` into kept and dropped: each group is tried on top of those kept so far; a
    failing group is halved until the single units that fail are found (``on_drop`` is called
    for each, right after its failing try). All passing: one call."""
    kept: list[T] = []
    dropped: list[T] = []
    queue: list[list[T]] = [list(units)] if units else []
    while queue:
        group = queue.pop(0)
        if passes(kept + group):
            kept += group
        elif len(group) == 1:
            dropped += group
            on_drop(group[0])
        else:
            half = len(group) // 2
            queue[:0] = [group[:half], group[half:]]
    return kept, dropped


def _files(paths: Sequence[str]) -> list[str]:
    out: list[str] = []
    for p in paths:
        if os.path.isdir(p):
            out += [os.path.abspath(f) for f in project_files(p)]
        elif p.endswith(".py") and os.path.isfile(p):
            out.append(os.path.abspath(p))
    return sorted(dict.fromkeys(out))


def _read(path: str) -> str:
    with open(path, encoding="utf-8", newline="") as fh:
        return fh.read()


def _candidates(
    texts: dict[str, str], options: dict[str, Any], observations: Observations | None
) -> tuple[list[Candidate], int]:
    """Non-overlapping candidate fixes (observed first, then in line order) and how many wait."""
    from syncfix import check_code

    out: list[Candidate] = []
    waiting = 0
    for path, text in texts.items():
        found = check_code(
            text,
            path=path,
            select=options.get("select"),
            ignore=options.get("ignore"),
            unsafe_fixes=bool(options.get("unsafe_fixes")),
            include_cold=bool(options.get("include_cold")),
            observations=observations,
        )
        usable: list[tuple[Any, Any]] = [
            (f, f.fix.edit) for f in found
            if f.fix is not None and f.fix.edit is not None
            and (f.fix.applicability.value != "unsafe" or options.get("unsafe_fixes"))
        ]
        usable.sort(key=lambda fe: (fe[0].fix.applicability.value != "observed", fe[1].start_line))
        taken: list[tuple[int, int]] = []
        seen_edits: set[tuple[int, int, str]] = set()
        for f, e in usable:
            key = (e.start_line, e.end_line, e.content)
            if key in seen_edits:
                continue  # one fix that several findings share
            lo, hi = e.start_line, max(e.end_line, e.start_line)
            if any(lo <= t_hi and t_lo <= hi for t_lo, t_hi in taken):
                waiting += 1
                continue
            taken.append((lo, hi))
            seen_edits.add(key)
            out.append(Candidate(path, f))
    return out, waiting


class Verifier:
    """Runs the program with chosen candidates applied, beside the original."""

    def __init__(self, plan: Plan, texts: dict[str, str], tol: Tolerance, tick: Callable[[str], None]) -> None:
        self.plan = plan
        self.texts = texts
        self.tol = tol
        self.tick = tick
        self.runs = 0
        self.last: dict[str, Any] = {}
        self.loaded: set[str] | None = None  # files the rewritten run loaded with an edit (first run)

    def texts_with(self, chosen: Sequence[Candidate]) -> dict[str, str]:
        by_file: dict[str, list[Any]] = {}
        for c in chosen:
            by_file.setdefault(c.path, []).append(c.edit)
        return {p: apply_edits(self.texts[p], edits) for p, edits in by_file.items()}

    def passes(self, chosen: list[Candidate]) -> bool:
        self.runs += 1
        self.tick(f"run {self.runs}: {len(chosen)} fix{'es' if len(chosen) != 1 else ''}")
        plan = Plan(**{**self.plan.__dict__, "fixer": {"texts": self.texts_with(chosen)}})
        orig, new = run_pair(plan)
        if orig.failure is not None:
            raise OriginalFailed(_failure_text(orig.failure))
        if self.loaded is None:
            self.loaded = {os.path.abspath(r["path"]) for r in new.data.get("rewrites", []) if r.get("changed")}
        eq = equivalence(orig, new, self.tol, plan.target.kind)
        sy = syncs(orig, new)
        self.last = {"equivalence": eq, "syncs": sy, "failure": new.failure}
        why = ""
        if new.failure is not None:
            why = f"the rewritten program failed: {_failure_text(new.failure)}"
        elif eq["status"] == "mismatch":
            first = eq["mismatches"][0] if eq["mismatches"] else {}
            why = "values differ" + (f": {_mismatch_text(first)}" if first else "")
        elif sy.get("available") and sy["rose"]:
            why = f"syncs rose: {sy['original']['total']} → {sy['rewritten']['total']} per run"
        self.last["why"] = why
        return not why

    def blame(self, unit: Candidate) -> None:
        unit.dropped_because = self.last.get("why", "")


def _failure_text(f: RunFailure) -> str:
    return f"{f.kind} in the {f.phase} run: {f.message}"


def _mismatch_text(m: dict[str, Any]) -> str:
    """``path``: what differed, with the two values (as the verify report gives them)."""
    text = f"{m.get('path', 'a value')}: {m.get('reason', '')}".rstrip(": ")
    if m.get("original") or m.get("rewritten"):
        text += f" (original {m.get('original')}, rewritten {m.get('rewritten')})"
    return text


def run(
    paths: Sequence[str],
    target: str,
    args: Sequence[str],
    options: dict[str, Any],
    *,
    root: str,
    tol: Tolerance = BITWISE,
    timeout: float = 300.0,
    seed: int = 0,
    deterministic: bool = True,
    write: bool = True,
    tick: Callable[[str], None] = lambda what: None,
) -> Outcome:
    """Verify candidate fixes for ``paths`` on ``target`` and (with ``write``) write the kept ones."""
    from syncfix import observable_needs

    files = _files(paths)
    texts = {p: _read(p) for p in files}
    outcome = Outcome(originals=dict(texts))
    plan = Plan(
        target=parse_target(target, tuple(args)),
        root=root,
        fixer={},
        seed=seed,
        deterministic=deterministic,
        warmup=1,
        repeats=1,
        timeout=timeout,
        cross_check=False,
    )
    for n in range(MAX_PASSES):
        observations = None
        if write or n == 0:
            needs = observable_needs(files, select=options.get("select"), ignore=options.get("ignore"),
                                     include_cold=bool(options.get("include_cold")))
            if needs:
                tick("recording the facts fixes wait for")
                try:
                    observations = record(target, args, needs, root=root, timeout=timeout, seed=seed,
                                          deterministic=deterministic)
                except RecordError as exc:
                    raise OriginalFailed(str(exc)) from exc
                outcome.runs += 1
        candidates, waiting = _candidates(texts, options, observations)
        if not candidates:
            break
        verifier = Verifier(plan, texts, tol, tick)
        # the first run, with every candidate, also shows which files the program loads: a fix
        # in a file it never loads is not proved by it, so it is neither tried further nor written
        first_ok = verifier.passes(candidates)
        loaded = verifier.loaded or set()
        outcome.unrun += [c for c in candidates if c.path not in loaded]
        candidates = [c for c in candidates if c.path in loaded]
        kept: list[Candidate]
        dropped: list[Candidate]
        if first_ok:
            kept, dropped = candidates, []
        else:
            kept, dropped = bisect(candidates, verifier.passes, verifier.blame)
        if dropped and kept:
            verifier.passes(kept)  # the kept set once more, whole: its numbers for the report
        outcome.runs += verifier.runs
        sy = verifier.last.get("syncs", {})
        if sy.get("available"):
            if outcome.syncs_before is None:
                outcome.syncs_before = sy["original"]["total"]
            outcome.syncs_after = sy["rewritten"]["total"]
            _per_fix_syncs(kept, sy)
        outcome.kept += kept
        outcome.dropped += dropped
        new_texts = verifier.texts_with(kept)
        texts.update(new_texts)
        if write:
            for p, t in new_texts.items():
                _write(p, t)
        if not waiting or not kept:
            if waiting:
                outcome.notes.append(f"{waiting} fix(es) overlapping dropped ones were not tried")
            break
        if not write:
            outcome.notes.append(
                f"{waiting} fix(es) overlapping these wait for the next `apply --verify` (with "
                "--diff nothing is written, so a second pass cannot record on the new text)"
            )
            break
    outcome.texts = {p: t for p, t in texts.items() if t != outcome.originals[p]}
    return outcome


def _per_fix_syncs(kept: Sequence[Candidate], sy: dict[str, Any]) -> None:
    for c in kept:
        lo, hi = c.edit.start_line, max(c.edit.end_line, c.edit.start_line)
        rows = [r for r in sy.get("lines", []) if os.path.abspath(r["file"]) == c.path and lo <= r["line"] <= hi]
        c.syncs_before = sum(r["before"] for r in rows)
        c.syncs_after = sum(r["after"] for r in rows)


def _write(path: str, text: str) -> None:
    tmp = f"{path}.syncfix-tmp"
    with open(tmp, "w", encoding="utf-8", newline="") as fh:
        fh.write(text)
    os.replace(tmp, path)


def diff_text(outcome: Outcome, root: str) -> str:
    out: list[str] = []
    for path, new in sorted(outcome.texts.items()):
        name = os.path.relpath(path, root)
        old = outcome.originals[path]
        out += difflib.unified_diff(
            old.splitlines(keepends=True), new.splitlines(keepends=True), f"a/{name}", f"b/{name}"
        )
    return "".join(out)


def summary_line(outcome: Outcome) -> str:
    tiers = [c.tier for c in outcome.kept]
    kinds = ", ".join(f"{tiers.count(t)} {t}" for t in ("safe", "observed", "unsafe") if tiers.count(t))
    n = len(outcome.kept)
    text = f"{n} fix{'es' if n != 1 else ''} verified" + (f" ({kinds})" if kinds else "")
    if outcome.dropped:
        d = len(outcome.dropped)
        text += f", {d} dropped ({'; '.join(sorted({c.dropped_because or 'failed' for c in outcome.dropped}))})"
    if outcome.unrun:
        text += f", {len(outcome.unrun)} not run by the program (not written)"
    if outcome.syncs_before is not None and outcome.syncs_after is not None:
        text += f", syncs per run {outcome.syncs_before:,g} → {outcome.syncs_after:,g}"
    return text


def report_lines(outcome: Outcome, root: str) -> list[str]:
    lines = []
    for c in outcome.kept:
        facts = "; ".join(n.describe() for n in c.finding.fix.needs) if c.finding.fix.needs else ""
        syncs_text = (
            f"syncs on its lines {c.syncs_before:g} → {c.syncs_after:g} per run"
            if c.syncs_before is not None and c.syncs_after is not None
            else "syncs not counted (no CUDA)"
        )
        lines.append(
            f"  verified  {c.label(root)} [{c.tier}] {c.finding.fix.description}; numbers equal; {syncs_text}"
            + (f"; relied on: {facts}" if facts else "")
        )
    for c in outcome.dropped:
        lines.append(f"  dropped   {c.label(root)} [{c.tier}] {c.dropped_because or 'failed verification'}")
    for c in outcome.unrun:
        lines.append(f"  not run   {c.label(root)} [{c.tier}] the program never loaded this file: not verified, not written")
    return lines


def to_json(outcome: Outcome, root: str) -> dict[str, Any]:
    def one(c: Candidate) -> dict[str, Any]:
        return {
            "file": os.path.relpath(c.path, root),
            "line": c.finding.line,
            "code": c.finding.code,
            "tier": c.tier,
            "description": c.finding.fix.description,
            "needs": [n.__dict__ for n in c.finding.fix.needs],
            "syncs_before": c.syncs_before,
            "syncs_after": c.syncs_after,
            "dropped_because": c.dropped_because or None,
        }

    return {
        "schema": "syncfix.apply-verify/1",
        "verified": [one(c) for c in outcome.kept],
        "dropped": [one(c) for c in outcome.dropped],
        "not_run": [one(c) for c in outcome.unrun],
        "syncs_per_run": {"before": outcome.syncs_before, "after": outcome.syncs_after},
        "runs": outcome.runs,
        "notes": outcome.notes,
        "summary": summary_line(outcome),
    }
