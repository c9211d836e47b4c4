"""Score syncfix on real repositories against the hand-marked corpus in benchmarks/realcode/MANIFEST.md.

    python benchmarks/realcode.py [--root /work/scratch/realcode] [--json] [-v]
    python benchmarks/realcode.py --verify          # every quote still on its line at the pinned commit?

For each repository of the manifest, syncfix's CLI runs in a subprocess on the local clone
(``check . -o json --no-cache --isolated``, or ``--config FILE``), once with safe fixes only and once with
``--unsafe-fixes``. The json holds every finding with its fix (edits and applicability). Then:

- a marked **site** is *found* when a finding of any code starts on one of its lines, and
  *safe-fixed* / *unsafe-fixed* when a fix that run would apply (safe; safe or unsafe) edits one
  of its lines;
- a **trap** is *rewritten* when a safe fix edits one of its lines;
- a **control** is *flagged* when any finding starts on one of its lines;
- findings without a fix are grouped by their reason (the text after "no fix", or the message);
- each applied fix is classified **hot** or **cold** by where its finding is (the heuristic is
  ``location_kind`` below: test/example/demo/docs folders are cold; then a function the manifest
  lists as hot is hot (a hand mark wins over the names below); ``__init__``, ``test_*``
  functions and ``if __name__ == "__main__":`` blocks are cold; then a loop around the line or a
  step-like function name make it hot; anything else is cold). A pin-memory fix (SFX103) is
  placed where its message says the loader's batches are copied, since that is where it pays.

A fix's edit replaces whole lines (``location`` to ``end_location`` in the json); a line counts
as edited only when the edit's new text does not keep it (a diff against the clone's file: a fix
that rewrites a whole loop to change two lines edits those two); an edit that replaces nothing
inserts before its start line and touches no existing line.
"""

from __future__ import annotations

import argparse
import ast
import difflib
import fnmatch
import json
import os
import re
import subprocess
import sys
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve().parent
MANIFEST = HERE / "realcode" / "MANIFEST.md"
DEFAULT_ROOT = Path("/work/scratch/realcode")

# Folders and files whose code runs once, in tests or in demonstrations: never hot.
COLD_DIRS = {
    "tests",
    "test",
    "testing",
    "examples",
    "example",
    "demo",
    "demos",
    "docs",
    "notebooks",
}
COLD_FILES = ("test_*.py", "*_test.py", "conftest.py", "setup.py")
# Functions that run once per step (or more) by their name alone.
HOT_NAME = re.compile(
    r"^(forward|__call__|update|step|\w*_step|step_\w*|train|train_\w+|\w+_train|fit|evaluate|eval"
    r"|eval_\w+|validate|validation|test|predict|generate\w*|sample\w*|decode\w*|run_loop)$"
)
LOOPS = (
    ast.For,
    ast.AsyncFor,
    ast.While,
    ast.ListComp,
    ast.SetComp,
    ast.DictComp,
    ast.GeneratorExp,
)


# ---- the manifest ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Mark:
    """One marked line (or line range) of the corpus."""

    kind: str  # site, trap or control
    id: str
    repo: str
    path: str
    first: int
    last: int
    code: str
    info: dict[str, str] = field(default_factory=dict, compare=False, hash=False)

    @property
    def lines(self) -> range:
        return range(self.first, self.last + 1)


@dataclass
class Manifest:
    repos: dict[str, tuple[str, str]]  # repo -> (commit, clone folder)
    marks: list[Mark]
    hot: dict[tuple[str, str], set[str]]  # (repo, path) -> function names

    def of(self, kind: str) -> list[Mark]:
        return [m for m in self.marks if m.kind == kind]


def split_row(row: str) -> list[str]:
    """Cells of a markdown table row; ``\\|`` is a literal pipe."""
    cells = re.split(r"(?<!\\)\|", row.strip().strip("|"))
    return [c.strip().replace("\\|", "|") for c in cells]


def tables(text: str) -> dict[str, list[dict[str, str]]]:
    """Every table under a ``## heading``, as rows keyed by the header cells."""
    out: dict[str, list[dict[str, str]]] = {}
    heading, header = "", None
    for line in text.splitlines():
        if line.startswith("## "):
            heading, header = line[3:].strip().lower(), None
        elif line.startswith("|"):
            cells = split_row(line)
            if header is None:
                header = [c.lower() for c in cells]
            elif not all(set(c) <= set("-: ") for c in cells):
                out.setdefault(heading, []).append(dict(zip(header, cells, strict=True)))
        else:
            header = None
    return out


def unquote(code: str) -> str:
    return code[1:-1] if len(code) >= 2 and code[0] == code[-1] == "`" else code


def parse_manifest(path: Path = MANIFEST) -> Manifest:
    t = tables(path.read_text(encoding="utf-8"))
    repos = {r["repo"]: (r["commit"], r["clone"]) for r in t["repositories"]}
    marks = []
    for kind, heading in (("site", "sites"), ("trap", "traps"), ("control", "controls")):
        for r in t[heading]:
            first, _, last = r["line"].partition("-")
            if r["repo"] not in repos:
                raise ValueError(
                    f"{r['id']}: repository {r['repo']} is not in the repositories table"
                )
            info = {k: v for k, v in r.items() if k not in {"id", "repo", "path", "line", "code"}}
            marks.append(
                Mark(
                    kind,
                    r["id"],
                    r["repo"],
                    r["path"],
                    int(first),
                    int(last or first),
                    unquote(r["code"]),
                    info,
                )
            )
    ids = Counter(m.id for m in marks)
    if dup := [i for i, n in ids.items() if n > 1]:
        raise ValueError(f"duplicate ids in the manifest: {dup}")
    hot: dict[tuple[str, str], set[str]] = {}
    for r in t.get("hot functions", []):
        hot.setdefault((r["repo"], r["path"]), set()).add(r["function"])
    return Manifest(repos, marks, hot)


# ---- clones ------------------------------------------------------------------------------------


def clone_problems(man: Manifest, root: Path) -> tuple[list[str], list[str]]:
    """(repos missing, repos at another commit) under ``root``."""
    missing, other = [], []
    for repo, (commit, folder) in man.repos.items():
        where = root / folder
        if not (where / ".git").exists():
            missing.append(repo)
            continue
        head = subprocess.run(
            ["git", "-C", str(where), "rev-parse", "HEAD"],
            capture_output=True,
            text=True,
            check=False,
        ).stdout.strip()
        if head != commit:
            other.append(f"{repo} is at {head[:12] or '?'}, the manifest pins {commit[:12]}")
    return missing, other


def how_to_clone(man: Manifest, root: Path, repos: list[str]) -> str:
    lines = [f"mkdir -p {root} && cd {root}"]
    for repo in repos:
        commit, folder = man.repos[repo]
        lines.append(
            f"git clone https://github.com/{repo} {folder} && git -C {folder} checkout {commit}"
        )
    return "\n".join(lines)


def verify(man: Manifest, root: Path) -> list[str]:
    """Problems with the manifest against the clones: quotes not on their lines, hot functions
    that do not exist."""
    problems = []
    for m in man.marks:
        _, folder = man.repos[m.repo]
        try:
            text = (root / folder / m.path).read_text(encoding="utf-8").splitlines()
        except OSError as e:
            problems.append(f"{m.id}: {e}")
            continue
        if not any(m.code in text[n - 1] for n in m.lines if n <= len(text)):
            problems.append(f"{m.id}: {m.path}:{m.first} does not hold `{m.code}`")
    for (repo, path), names in man.hot.items():
        source = (root / man.repos[repo][1] / path).read_text(encoding="utf-8")
        defined = {
            n.name
            for n in ast.walk(ast.parse(source))
            if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)
        }
        problems += [
            f"hot function {repo}:{path}:{f} is not defined" for f in sorted(names - defined)
        ]
    return problems


# ---- hot or cold -------------------------------------------------------------------------------


def is_main_guard(node: ast.AST) -> bool:
    return (
        isinstance(node, ast.If)
        and isinstance(node.test, ast.Compare)
        and isinstance(node.test.left, ast.Name)
        and node.test.left.id == "__name__"
    )


class Locator:
    """Where a line of a file sits: hot or cold, by the heuristic in the module docstring."""

    def __init__(self, source: str, hot_functions: set[str] = frozenset()):  # type: ignore[assignment]
        self.hot_functions = hot_functions
        try:
            tree = ast.parse(source)
        except SyntaxError:
            tree = ast.Module(body=[], type_ignores=[])
        self.nodes = [
            n for n in ast.walk(tree) if hasattr(n, "lineno") and hasattr(n, "end_lineno")
        ]

    def enclosing(self, line: int) -> list[ast.AST]:
        return [n for n in self.nodes if n.lineno <= line <= (n.end_lineno or n.lineno)]  # type: ignore[attr-defined]

    def kind(self, line: int) -> str:
        around = self.enclosing(line)
        functions = [
            n.name for n in around if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)
        ]
        if any(f in self.hot_functions for f in functions):
            return "hot"
        if any(f == "__init__" or f.startswith("test") and f != "test" for f in functions):
            return "cold"
        if any(is_main_guard(n) for n in around):
            return "cold"
        if any(isinstance(n, LOOPS) for n in around):
            return "hot"
        if any(HOT_NAME.match(f) for f in functions):
            return "hot"
        return "cold"


def cold_path(path: str) -> bool:
    parts = Path(path).parts
    return bool(set(parts[:-1]) & COLD_DIRS) or any(
        fnmatch.fnmatch(parts[-1], p) for p in COLD_FILES
    )


# SFX103's message: "... copied to the GPU from pageable memory (line 100): set pin_memory=True"
_COPIED_AT = re.compile(r"pageable memory \(lines? (\d+)")


def where_it_pays(finding: dict) -> int:
    """The line whose repetition a fix saves: the finding's own, but for a pin-memory fix the
    (first) line where the loader's batches are copied."""
    m = _COPIED_AT.search(finding["message"]) if finding["code"] == "SFX103" else None
    return int(m.group(1)) if m else finding["location"]["row"]


def location_kind(
    clone: Path, path: str, line: int, hot: set[str], cache: dict[str, Locator]
) -> str:
    if cold_path(path):
        return "cold"
    if path not in cache:
        try:
            cache[path] = Locator((clone / path).read_text(encoding="utf-8"), hot)
        except (OSError, UnicodeDecodeError):
            cache[path] = Locator("", hot)
    return cache[path].kind(line)


# ---- running syncfix ---------------------------------------------------------------------------


def run_syncfix(
    clone: Path,
    unsafe: bool,
    jobs: int,
    timeout: float,
    extra: list[str] = (),  # type: ignore[assignment]
    config: Path | None = None,
) -> tuple[list[dict] | None, float, str]:
    """(findings, seconds, error) of ``syncfix check`` on the whole clone; findings None on failure."""
    cmd = [
        sys.executable,
        "-m",
        "syncfix",
        "check",
        ".",
        "-o",
        "json",
        "--no-cache",
        *(["--config", str(config)] if config else ["--isolated"]),
        "--exit-zero",
        "-j",
        str(jobs),
        "--unsafe-fixes" if unsafe else "--no-unsafe-fixes",
        *extra,
    ]
    env = dict(
        os.environ,
        PYTHONPATH=os.pathsep.join(filter(None, [str(HERE.parent), os.environ.get("PYTHONPATH")])),
    )
    start = time.perf_counter()
    try:
        proc = subprocess.run(
            cmd, cwd=clone, capture_output=True, text=True, timeout=timeout, env=env, check=False
        )
    except subprocess.TimeoutExpired:
        return None, time.perf_counter() - start, f"timed out after {timeout:.0f} s"
    seconds = time.perf_counter() - start
    if proc.returncode != 0:
        return None, seconds, f"exit {proc.returncode}: {proc.stderr.strip()[-500:]}"
    return json.loads(proc.stdout or "[]"), seconds, ""


def edited_lines(finding: dict, original: list[str] | None = None) -> set[int]:
    """The lines a fix changes. An edit replaces whole lines (``location`` to ``end_location``);
    given the file's ``original`` lines, only those the new content does not keep count (a fix
    that rewrites a whole loop to change two of its lines changes two lines, not the loop)."""
    lines: set[int] = set()
    for e in (finding.get("fix") or {}).get("edits", []):
        first, end = e["location"]["row"], e["end_location"]["row"]
        if original is None or "content" not in e:
            lines.update(range(first, end))
            continue
        old = original[first - 1 : end - 1]
        new = e["content"].splitlines(keepends=True)
        matcher = difflib.SequenceMatcher(a=old, b=new, autojunk=False)
        for op, i1, i2, _, _ in matcher.get_opcodes():
            if op in ("replace", "delete"):
                lines.update(range(first + i1, first + i2))
    return lines


def applied(finding: dict, unsafe: bool) -> bool:
    fix = finding.get("fix")
    if not fix or not fix.get("edits"):
        return False
    return fix["applicability"] == "safe" or (unsafe and fix["applicability"] == "unsafe")


def no_fix_reason(finding: dict) -> str:
    msg = finding["message"]
    if m := re.search(r"\(([^()]*?):? no fix\)", msg):
        reason = m.group(1)
    elif m := re.search(r"no fix(?: is offered)?: (.*)$", msg):
        reason = m.group(1)
    else:
        reason = msg
    return f"{finding['code']}: {reason.strip().rstrip('.')[:140]}"


# ---- scoring -----------------------------------------------------------------------------------


def score(
    man: Manifest,
    root: Path,
    jobs: int,
    timeout: float,
    only: set[str] | None,
    skip: dict[str, list[str]] | None = None,
    config: Path | None = None,
) -> dict:
    repos = [r for r in man.repos if not only or r in only]
    runs: dict[str, dict[str, list[dict] | None]] = {}
    timing: dict[str, dict[str, object]] = {}
    for repo in repos:
        clone = root / man.repos[repo][1]
        runs[repo] = {}
        for mode in ("safe", "unsafe"):
            excluded = (skip or {}).get(repo, [])
            extra = [a for path in excluded for a in ("--extend-exclude", path)]
            findings, seconds, error = run_syncfix(clone, mode == "unsafe", jobs, timeout, extra, config=config)
            runs[repo][mode] = findings
            timing.setdefault(repo, {})[mode] = {
                "seconds": round(seconds, 2),
                "error": error or None,
                "excluded": excluded,
            }
            print(
                f"  {repo} ({mode}): {seconds:.1f} s" + (f"  [{error}]" if error else ""),
                file=sys.stderr,
            )

    def at(repo: str, mode: str, path: str) -> list[dict]:
        return [f for f in runs[repo][mode] or [] if f["filename"] == path]

    sources: dict[tuple[str, str], list[str] | None] = {}

    def lines_of(repo: str, path: str) -> list[str] | None:
        if (repo, path) not in sources:
            try:
                text = (root / man.repos[repo][1] / path).read_text(encoding="utf-8")
                sources[repo, path] = text.splitlines(keepends=True)
            except (OSError, UnicodeDecodeError):
                sources[repo, path] = None
        return sources[repo, path]

    marks = []
    for m in man.marks:
        if m.repo not in runs:
            continue
        safe_f, unsafe_f = at(m.repo, "safe", m.path), at(m.repo, "unsafe", m.path)
        found = [f for f in safe_f if f["location"]["row"] in m.lines]
        marks.append(
            {
                "id": m.id,
                "kind": m.kind,
                "repo": m.repo,
                "path": m.path,
                "line": m.first,
                "expert_fix": m.info.get("fix"),
                "rule": m.info.get("rule"),
                "found": bool(found),
                "codes": sorted({f["code"] for f in found}),
                "messages": sorted({f["message"] for f in found}),
                "safe_fixed": any(
                    applied(f, False) and edited_lines(f, lines_of(m.repo, m.path)) & set(m.lines)
                    for f in safe_f
                ),
                "unsafe_fixed": any(
                    applied(f, True) and edited_lines(f, lines_of(m.repo, m.path)) & set(m.lines)
                    for f in unsafe_f
                ),
                "ran": runs[m.repo]["safe"] is not None,
            }
        )

    reasons: Counter[str] = Counter()
    fixes: dict[str, list[dict]] = {"safe": [], "unsafe": []}
    for repo in repos:
        clone, cache = root / man.repos[repo][1], {}
        for mode in ("safe", "unsafe"):
            for f in runs[repo][mode] or []:
                if mode == "safe" and not f.get("fix"):
                    reasons[no_fix_reason(f)] += 1
                if applied(f, mode == "unsafe"):
                    hot = man.hot.get((repo, f["filename"]), set())
                    kind = location_kind(clone, f["filename"], where_it_pays(f), hot, cache)
                    fixes[mode].append(
                        {
                            "repo": repo,
                            "path": f["filename"],
                            "line": f["location"]["row"],
                            "code": f["code"],
                            "where": kind,
                        }
                    )

    def share(kind: str, key: str) -> dict[str, int]:
        sel = [m for m in marks if m["kind"] == kind]
        return {"of": len(sel), "count": sum(1 for m in sel if m[key])}

    summary = {
        "sites_found": share("site", "found"),
        "sites_safe_fixed": share("site", "safe_fixed"),
        "sites_unsafe_fixed": share("site", "unsafe_fixed"),
        "traps_rewritten_by_safe_fix": share("trap", "safe_fixed"),
        "traps_rewritten_by_unsafe_fix": share("trap", "unsafe_fixed"),
        "controls_flagged": share("control", "found"),
        **{
            f"{mode}_fixes_applied": {
                "of": len(fs),
                "count": sum(1 for x in fs if x["where"] == "hot"),
            }
            for mode, fs in fixes.items()
        },
        "findings": sum(len(runs[r]["safe"] or []) for r in repos),
    }
    return {
        "summary": summary,
        "no_fix_reasons": reasons.most_common(),
        "marks": marks,
        "fixes": fixes,
        "runs": timing,
        "repos": {r: man.repos[r][0] for r in repos},
    }


def pct(d: dict[str, int]) -> str:
    return (
        f"{d['count']:3d} / {d['of']:3d}  ({100 * d['count'] / d['of']:5.1f} %)"
        if d["of"]
        else "  – / 0"
    )


def report(result: dict, verbose: bool) -> str:
    s = result["summary"]
    out = ["", "== syncfix on the real-code corpus (benchmarks/realcode/MANIFEST.md)"]
    failed = {r: t for r, t in result["runs"].items() if any(v["error"] for v in t.values())}
    for repo, t in result["runs"].items():
        if t["safe"].get("excluded"):
            out.append(f"  (left out of {repo}: {', '.join(t['safe']['excluded'])})")
    for repo, t in failed.items():
        out.append(
            f"  ! {repo}: " + "; ".join(f"{m} {v['error']}" for m, v in t.items() if v["error"])
        )
    out += [
        f"sites found                    {pct(s['sites_found'])}",
        f"sites fixed by safe fixes      {pct(s['sites_safe_fixed'])}",
        f"sites fixed with --unsafe-fixes{pct(s['sites_unsafe_fixed'])}",
        f"traps rewritten by a safe fix  {pct(s['traps_rewritten_by_safe_fix'])}",
        f"traps rewritten (unsafe too)   {pct(s['traps_rewritten_by_unsafe_fix'])}",
        f"controls flagged               {pct(s['controls_flagged'])}",
        f"applied safe fixes in hot code {pct(s['safe_fixes_applied'])}",
        f"applied fixes in hot code, --unsafe-fixes {pct(s['unsafe_fixes_applied'])}",
        f"findings (all repositories)    {s['findings']}",
        "",
        "no-fix reasons (findings without a fix, by count):",
    ]
    out += [f"  {n:4d}  {reason}" for reason, n in result["no_fix_reasons"]] or ["  (none)"]
    bad = [
        m
        for m in result["marks"]
        if m["kind"] != "site" and (m["found"] if m["kind"] == "control" else m["safe_fixed"])
    ]
    if bad:
        out += ["", "traps rewritten by a safe fix / controls flagged:"]
        out += [
            f"  {m['id']} {m['repo']} {m['path']}:{m['line']} {','.join(m['codes'])}" for m in bad
        ]
    if verbose:
        out += ["", f"{'id':4} {'found':6} {'safe':5} {'unsafe':6} {'codes':14} where"]
        for m in result["marks"]:
            flag = lambda b: "yes" if b else "-"  # noqa: E731
            out.append(
                f"{m['id']:4} {flag(m['found']):6} {flag(m['safe_fixed']):5} {flag(m['unsafe_fixed']):6} "
                f"{','.join(m['codes']) or '-':14} {m['repo']} {m['path']}:{m['line']}"
            )
    return "\n".join(out)


def main() -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--root", type=Path, default=DEFAULT_ROOT, help="folder holding the clones")
    ap.add_argument("--manifest", type=Path, default=MANIFEST)
    ap.add_argument("--jobs", "-j", type=int, default=2, help="syncfix worker processes")
    ap.add_argument(
        "--timeout", type=float, default=900, help="seconds per syncfix run on one repository"
    )
    ap.add_argument("--repo", action="append", help="only this repository (owner/name); repeatable")
    ap.add_argument("--any-commit", action="store_true", help="score clones at other commits too")
    ap.add_argument(
        "--verify", action="store_true", help="check the manifest's quotes against the clones"
    )
    ap.add_argument(
        "--skip-file",
        action="append",
        default=[],
        metavar="OWNER/NAME:PATH",
        help="leave this file out of syncfix's run (e.g. one that takes minutes); repeatable",
    )
    ap.add_argument(
        "--config",
        type=Path,
        help="run syncfix with this config file (a syncfix.toml) instead of --isolated, e.g. one "
        'declaring [torch] devices = ["cuda", "cpu"]; report such runs apart from the default',
    )
    ap.add_argument("--json", action="store_true", help="print the result as JSON")
    ap.add_argument("--json-file", type=Path, help="also write the JSON result here")
    ap.add_argument("-v", "--verbose", action="store_true", help="list every marked line")
    args = ap.parse_args()

    man = parse_manifest(args.manifest)
    missing, other = clone_problems(man, args.root)
    if missing:
        print(
            f"error: {len(missing)} clone(s) missing under {args.root}: {', '.join(missing)}\n"
            f"Get them at the pinned commits with:\n{how_to_clone(man, args.root, missing)}",
            file=sys.stderr,
        )
        return 2
    if other and not args.any_commit:
        print(
            "error: clones at other commits than the manifest pins (lines would not match):\n  "
            + "\n  ".join(other)
            + "\nCheck out the pinned commits, or pass --any-commit.",
            file=sys.stderr,
        )
        return 2
    if args.verify:
        problems = verify(man, args.root)
        print("\n".join(problems) or f"manifest OK: {len(man.marks)} marks, quotes on their lines")
        return 1 if problems else 0
    skip: dict[str, list[str]] = {}
    for spec in args.skip_file:
        repo, sep, path = spec.partition(":")
        if not sep or repo not in man.repos:
            ap.error(
                f"--skip-file {spec!r}: expected OWNER/NAME:PATH with a repository of the manifest"
            )
        skip.setdefault(repo, []).append(path)
    only = set(args.repo) if args.repo else None
    config = args.config.resolve() if args.config else None
    result = score(man, args.root, args.jobs, args.timeout, only, skip, config)
    if args.json_file:
        args.json_file.write_text(json.dumps(result, indent=2))
    print(json.dumps(result, indent=2) if args.json else report(result, args.verbose))
    return 0


if __name__ == "__main__":
    sys.exit(main())
