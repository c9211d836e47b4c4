"""CI reporters: ``github``, ``sarif``, ``rdjson``, ``rdjsonl``, ``json-lines``, ``junit``,
``gitlab`` and ``grouped`` (``full``, ``concise`` and ``json`` live in :mod:`syncfix.reporting`).

Paths: human formats (and json, json-lines, rdjson, rdjsonl, grouped, junit) are relative to where
syncfix runs (``ReportContext.root``), as ruff and reviewdog expect: reviewdog resolves paths
against its own working directory, which is syncfix's when piped. The formats GitHub and GitLab
read on their own (``github``, ``sarif``, ``gitlab``) are relative to the repository root
(``ReportContext.repo_root``: the git work tree holding the working directory, else the config
file's folder), because code scanning, annotations and Code Quality resolve paths from there.

Every finding carries its fix and whether it is safe wherever the format can hold it; rdjson and
SARIF have no field for fix safety, so an unsafe fix is tagged "[unsafe fix]" in the message and
SARIF also sets ``properties.applicability``.
"""

from __future__ import annotations

import difflib
import hashlib
import json
import urllib.parse
import xml.etree.ElementTree as ET
from collections import Counter
from collections.abc import Iterator, Sequence

from .advice import Explainer
from .model import Applicability, Edit, Finding, Problem
from .reporting import (
    ReportContext,
    edit_hunks,
    fix_available,
    json_items,
    marker,
    paint,
    rel,
    reporter,
)
from .rules import Rule, all_rules
from .version import __version__

TOOL = "syncfix"
SARIF_SCHEMA = "https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json"
ANNOTATIONS_PER_LEVEL = 10  # GitHub shows at most 10 annotations of each level per step
UNSAFE_TAG = "[unsafe fix]"
OBSERVED_TAG = "[observed fix]"  # rests on facts a recorded run showed (``--observed``)
SUMMARY_BUDGET = 900_000  # GitHub rejects a step summary over 1 MiB


# ---- shared helpers ----------------------------------------------------------------------------


def _edit_of(f: Finding) -> Edit:
    assert f.fix is not None and f.fix.edit is not None
    return f.fix.edit


def repo_rel(path: str, ctx: ReportContext) -> str:
    return rel(path, ctx.repo_root or ctx.root)


def is_unsafe(f: Finding) -> bool:
    return f.fix is not None and f.fix.applicability is Applicability.UNSAFE


def tagged_message(f: Finding, message: str | None = None) -> str:
    """The message (with why there is no fix), tagged for formats with no field for fix safety."""
    text = f.message if message is None else message
    if is_observed(f):
        return f"{text} {OBSERVED_TAG}"
    return f"{text} {UNSAFE_TAG}" if is_unsafe(f) else text


def is_observed(f: Finding) -> bool:
    return f.fix is not None and f.fix.applicability is Applicability.OBSERVED


def level(f: Finding) -> str:
    # SFX9xx are about syncfix's own comments, not about the program: a notice, not a warning.
    return "notice" if f.code.startswith("SFX9") else "warning"


def _lines(ctx: ReportContext, path: str) -> list[str] | None:
    text = ctx.sources.get(path)
    return None if text is None else text.splitlines(keepends=True)


def byte_column(line: str, column: int) -> int:
    """A 1-based code-point column as a 1-based UTF-8 byte column (rdjson counts bytes)."""
    return len(line[: column - 1].encode("utf-8")) + 1


def line_edit(edit: Edit, lines: list[str] | None) -> Edit | None:
    """``edit`` as a replacement of at least one whole line (a pure insertion takes its neighbour).

    Review tools can only suggest replacing existing lines; None when that needs the source.
    """
    if edit.end_line >= edit.start_line:
        return edit
    if lines is None or not lines:
        return None
    if edit.start_line <= len(lines):  # insert before start_line: replace that line with both
        n = edit.start_line
        return Edit(n, n, edit.content + lines[n - 1], lines[n - 1])
    last = lines[-1]  # insert at the end: keep the last line, then the new text
    sep = "" if last.endswith(("\n", "\r")) else "\n"
    return Edit(len(lines), len(lines), last + sep + edit.content, last)


def _strip_eol(text: str) -> str:
    for eol in ("\r\n", "\n", "\r"):
        if text.endswith(eol):
            return text[: -len(eol)]
    return text


# ---- grouped and json-lines ----------------------------------------------------------------


@reporter("grouped")
def grouped(findings: Sequence[Finding], ctx: ReportContext) -> Iterator[str]:
    by_file: dict[str, list[Finding]] = {}
    message = Explainer(findings, ctx.unsafe_fixes)
    on = ctx.color
    for f in findings:
        by_file.setdefault(f.path, []).append(f)
    for path, group in by_file.items():
        width = max(len(f"{f.line}:{f.column}") for f in group)
        out = [f"{paint(rel(path, ctx.root), 'path', on)}{paint(':', 'sep', on)}\n"]
        for f in group:
            mark = paint(marker(f, ctx).strip(), "marker", on)
            out.append(
                f"  {f'{f.line}:{f.column}':<{width}} {paint(f.code, 'code', on)}"
                f"{' ' + mark if mark else ''} {message(f)}\n"
            )
        out.append("\n")
        yield "".join(out)


@reporter("json-lines")
def json_lines(findings: Sequence[Finding], ctx: ReportContext) -> Iterator[str]:
    return (json.dumps(item) + "\n" for item in json_items(findings, ctx))


# ---- GitHub workflow commands ------------------------------------------------------------------


def escape_data(text: str) -> str:
    """A workflow-command message, escaped as ``@actions/core`` does."""
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def escape_property(text: str) -> str:
    """A workflow-command property value: the message escapes plus ``:`` and ``,``."""
    return escape_data(text).replace(":", "%3A").replace(",", "%2C")


def _fix_note(f: Finding) -> str:
    if f.fix is None:
        return ""
    return f"{f.fix.description} ({f.fix.applicability.value} fix)"


def annotation(f: Finding, ctx: ReportContext, text: str | None = None) -> str:
    props = {
        "title": f"{TOOL} ({f.code})",
        "file": repo_rel(f.path, ctx),
        "line": str(f.line),
        "col": str(f.column),
        "endLine": str(f.end_line),
        "endColumn": str(f.end_column),
    }
    message = f"{f.code} {f.message if text is None else text}"
    if f.fix is not None:
        message += f"\n  help: {_fix_note(f)}"
    head = ",".join(f"{k}={escape_property(v)}" for k, v in props.items())
    return f"::{level(f)} {head}::{escape_data(message)}\n"


def problem_annotation(p: Problem, ctx: ReportContext) -> str:
    props = {"title": TOOL, "file": repo_rel(p.path, ctx)}
    if p.line is not None:
        props["line"] = str(p.line)
        if p.column is not None:
            props["col"] = str(p.column)
    head = ",".join(f"{k}={escape_property(v)}" for k, v in props.items())
    return f"::error {head}::{escape_data(p.message)}\n"


@reporter("github")
def github(findings: Sequence[Finding], ctx: ReportContext) -> str:
    """Annotations: the first 10 per level when the job summary lists the rest, else all of them
    (outside Actions, or with no step summary, nothing else would show the others)."""
    out: list[str] = [problem_annotation(p, ctx) for p in ctx.problems]
    shown: Counter[str] = Counter()
    hidden = 0
    message = Explainer(findings, ctx.unsafe_fixes)
    for f in findings:
        lv = level(f)
        if ctx.step_summary and shown[lv] >= ANNOTATIONS_PER_LEVEL:
            hidden += 1
            continue
        shown[lv] += 1
        out.append(annotation(f, ctx, message(f)))
    if hidden:
        # A plain log line, not an annotation: an annotation over the cap would be dropped too.
        out.append(
            f"{TOOL}: {hidden} more finding{'s' if hidden != 1 else ''} not annotated "
            f"(GitHub shows {ANNOTATIONS_PER_LEVEL} per level); see the job summary.\n"
        )
    return "".join(out)


def github_summary(findings: Sequence[Finding], ctx: ReportContext) -> str:
    """The full list in markdown, for ``$GITHUB_STEP_SUMMARY`` (shown on fork PRs too)."""
    unchecked = "".join(f"- not checked: `{repo_rel(p.path, ctx)}`: {_md_cell(p.message)}\n" for p in ctx.problems)
    if not findings:
        return f"### {TOOL}\n\n" + (unchecked or "All checks passed.\n")
    n = len(findings)
    message = Explainer(findings, ctx.unsafe_fixes)
    out = [f"### {TOOL}: {n} finding{'s' if n != 1 else ''}\n\n", unchecked + "\n" if unchecked else ""]
    out.append("| Location | Code | Message | Fix |\n|---|---|---|---|\n")
    size = 0
    for i, f in enumerate(findings):
        where = f"`{repo_rel(f.path, ctx)}:{f.line}:{f.column}`"
        fix = _fix_note(f) or "none"
        out.append(f"| {where} | {f.code} | {_md_cell(message(f))} | {_md_cell(fix)} |\n")
        size += len(out[-1])
        if size > SUMMARY_BUDGET // 2 and i + 1 < len(findings):
            out.append(f"\n{len(findings) - i - 1} more not listed (the summary is size-limited).\n")
            return "".join(out)
    diffs = [f for f in findings if f.fix is not None and f.fix.edit is not None]
    if diffs:
        out.append("\n<details><summary>Suggested fixes</summary>\n\n")
        for i, f in enumerate(diffs):
            if size > SUMMARY_BUDGET:
                out.append(f"{len(diffs) - i} more fixes not shown (the summary is size-limited).\n\n")
                break
            assert f.fix is not None and f.fix.edit is not None  # as chosen above
            edit = f.fix.edit
            body = edit_hunks(edit)
            fence = "`" * max(3, _longest_backticks(body) + 1)
            out.append(
                f"**{repo_rel(f.path, ctx)}:{f.line}** {f.code} ({f.fix.applicability.value} fix)\n\n"
                f"{fence}diff\n{body}{fence}\n\n"
            )
            size += len(out[-1])
        out.append("</details>\n")
    return "".join(out)


def _md_cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def _longest_backticks(text: str) -> int:
    best = run = 0
    for ch in text:
        run = run + 1 if ch == "`" else 0
        best = max(best, run)
    return best


# ---- reviewdog rdjson / rdjsonl ----------------------------------------------------------------


def _region(old: list[str], new: list[str], start: int, end: int) -> Edit:
    """The smallest run of ``old``'s lines holding every change between ``old`` and ``new`` that
    touches lines ``start..end``, and what it became in ``new`` (no change straddles its edges).
    Unchanged lines give an edit whose content equals its original."""
    a0, a1 = start - 1, end  # 0-based, half-open
    ops = [op for op in difflib.SequenceMatcher(None, old, new, autojunk=False).get_opcodes() if op[0] != "equal"]

    def touches(i1: int, i2: int) -> bool:
        return (i1 < a1 and i2 > a0) or (i1 == i2 and a0 <= i1 <= a1)

    hit = [op for op in ops if touches(op[1], op[2])]
    if not hit:
        return Edit(start, end, "".join(old[a0:a1]), "".join(old[a0:a1]))
    a0, a1 = min(op[1] for op in hit), max(op[2] for op in hit)
    grown = True
    while grown:  # a change that starts inside and ends outside (or the reverse) joins in
        grown = False
        for _, i1, i2, _, _ in ops:
            if touches(i1, i2) and (i1 < a0 or i2 > a1):
                a0, a1, grown = min(a0, i1), max(a1, i2), True
    inside = [op for op in ops if touches(op[1], op[2])]
    shift = sum((op[4] - op[3]) - (op[2] - op[1]) for op in ops if op not in inside and op[2] <= a0)
    grow = sum((op[4] - op[3]) - (op[2] - op[1]) for op in inside)
    j0, j1 = a0 + shift, a1 + shift + grow
    return Edit(a0 + 1, a1, "".join(new[j0:j1]), "".join(old[a0:a1]))


def _clusters(spans: list[tuple[int, int, int]]) -> list[list[tuple[int, int, int]]]:
    """(start, end, key) spans grouped where their line ranges overlap."""
    groups: list[list[tuple[int, int, int]]] = []
    last_end = 0
    for span in sorted(spans):
        if groups and span[0] <= last_end:
            groups[-1].append(span)
            last_end = max(last_end, span[1])
        else:
            groups.append([span])
            last_end = span[1]
    return groups


def rd_suggestions(
    findings: Sequence[Finding], ctx: ReportContext
) -> dict[int, tuple[Edit, bool, list[int], list[int]]]:
    """index of a finding -> (its whole-line suggestion, unsafe?, the other findings whose fixes
    it holds, the findings whose fixes overlap it but are not in it).

    GitHub takes one suggestion per line in a review, so fixes whose lines overlap (SFX301, SFX401
    and SFX402 on one log line) become one suggestion: the text ``apply`` writes for those lines
    (with --unsafe-fixes only when no safe fix changes them), carried by the first finding.
    """
    out: dict[int, tuple[Edit, bool, list[int], list[int]]] = {}
    by_path: dict[str, list[int]] = {}
    for i, f in enumerate(findings):
        if f.fix is not None and f.fix.edit is not None:
            by_path.setdefault(f.path, []).append(i)
    for path, indices in by_path.items():
        lines = _lines(ctx, path)
        edits = {i: line_edit(_edit_of(findings[i]), lines) for i in indices}
        spans = [(e.start_line, e.end_line, i) for i, e in edits.items() if e is not None]
        fixed = _FixedLines(ctx, path)
        groups = _clusters(spans)
        while True:
            results = []
            for group in groups:
                members = [k for _, _, k in sorted(group, key=lambda s: s[2])]
                start, end = min(s[0] for s in group), max(s[1] for s in group)
                results.append(
                    _merged(members, findings, edits, lines, start, end, fixed, ctx.unsafe_fixes)
                )
            # A merged text may reach past its group's lines into another group's: merge those too.
            regrouped = _clusters(
                [(r[0].start_line, r[0].end_line, n) for n, r in enumerate(results)]
            )
            if len(regrouped) == len(groups):
                break
            groups = [[s for _, _, n in g for s in groups[n]] for g in regrouped]
        for edit, unsafe, applied, members in results:
            out[applied[0]] = (edit, unsafe, applied[1:], [k for k in members if k not in applied])
    return out


class _FixedLines:
    """A file's lines after ``apply`` (asked of the context once per file and setting)."""

    def __init__(self, ctx: ReportContext, path: str) -> None:
        self.ctx, self.path = ctx, path
        self.done: dict[bool, list[str] | None] = {}

    def __call__(self, unsafe: bool) -> list[str] | None:
        if unsafe not in self.done:
            ask = self.ctx.fixed_text
            text = ask(self.path, unsafe) if ask is not None else None
            self.done[unsafe] = None if text is None else text.splitlines(keepends=True)
        return self.done[unsafe]


def _merged(
    members, findings, edits, lines, start, end, fixed, unsafe_fixes: bool
) -> tuple[Edit, bool, list[int], list[int]]:
    """One suggestion for overlapping fixes: (edit, unsafe?, the findings whose fixes it holds,
    the first of which carries it, every finding of the group)."""
    first = members[0]
    if len(members) > 1 and lines is not None:
        for unsafe in sorted({unsafe_fixes, True}):
            if unsafe and not unsafe_fixes and not any(is_unsafe(findings[k]) for k in members):
                break
            new = fixed(unsafe)
            if new is None:
                break
            edit = _region(lines, new, start, end)
            if edit.content != edit.original:
                applied = [k for k in members if unsafe or not is_unsafe(findings[k])]
                return line_edit(edit, lines) or edit, unsafe, applied, members
    return edits[first], is_unsafe(findings[first]), [first], members


_OWN_FIX: tuple[Edit, bool, list[int], list[int]] = (Edit(0, 0, "", ""), False, [], [])  # own fix


def rd_diagnostic(
    f: Finding,
    ctx: ReportContext,
    suggestion: tuple[Edit, bool, list[int], list[int]] | None = _OWN_FIX,
    message: str | None = None,
) -> dict:
    """One reviewdog Diagnostic: 1-based lines, UTF-8 byte columns, exclusive end.

    With a suggestion, the range spans exactly the suggestion's lines: reviewdog's
    github-pr-review posts a suggestion only when the comment's lines equal the suggestion's.
    ``suggestion`` comes from :func:`rd_suggestions` (None: no suggestion); by default, the
    finding's own fix.
    """
    lines = _lines(ctx, f.path)

    def col(line_no: int, column: int) -> int:
        if lines is None or not 1 <= line_no <= len(lines):
            return column  # no source: code points equal bytes for ASCII, the common case
        return byte_column(lines[line_no - 1], column)

    start = {"line": f.line, "column": col(f.line, f.column)}
    end = {"line": f.end_line, "column": col(f.end_line, f.end_column)}
    text = f.message if message is None else message
    unsafe = is_unsafe(f)
    edit: Edit | None = None
    if suggestion is _OWN_FIX:
        edit = line_edit(f.fix.edit, lines) if f.fix is not None and f.fix.edit is not None else None
    elif suggestion is not None:
        edit, unsafe = suggestion[0], suggestion[1]
    diag: dict = {
        "message": f"{text} {UNSAFE_TAG}" if unsafe and edit is not None
        else f"{text} {OBSERVED_TAG}" if is_observed(f) and edit is not None else text,
        "location": {"path": rel(f.path, ctx.root), "range": {"start": start, "end": end}},
        "severity": "WARNING" if level(f) == "warning" else "INFO",
        "source": {"name": TOOL},
        "code": {"value": f.code},
    }
    if edit is not None:
        # Whole-line suggestion (no columns); reviewdog adds the final newline itself.
        diag["suggestions"] = [
            {
                "range": {"start": {"line": edit.start_line}, "end": {"line": edit.end_line}},
                "text": _strip_eol(edit.content),
            }
        ]
        if f.line != edit.start_line:
            start = {"line": edit.start_line, "column": 1}
        if f.end_line != edit.end_line:
            last = lines[edit.end_line - 1] if lines and edit.end_line <= len(lines) else ""
            end = {"line": edit.end_line, "column": len(_strip_eol(last).encode("utf-8")) + 1}
        diag["location"]["range"] = {"start": start, "end": end}
    return diag


def rd_problem(p: Problem, ctx: ReportContext) -> dict:
    """A path that could not be processed: an ERROR diagnostic with no code."""
    location: dict = {"path": rel(p.path, ctx.root)}
    if p.line is not None:
        location["range"] = {"start": {"line": p.line, "column": p.column or 1}}
    return {"message": p.message, "location": location, "severity": "ERROR", "source": {"name": TOOL}}


def rd_diagnostics(findings: Sequence[Finding], ctx: ReportContext) -> list[dict]:
    """Every finding as a diagnostic; at most one suggestion touches any line."""
    suggestions = rd_suggestions(findings, ctx)
    carried_by: dict[int, int] = {k: i for i, s in suggestions.items() for k in s[2]}
    overlaps: dict[int, int] = {k: i for i, s in suggestions.items() for k in s[3]}
    message = Explainer(findings, ctx.unsafe_fixes)
    out = [rd_problem(p, ctx) for p in ctx.problems]
    for i, f in enumerate(findings):
        text = message(f)
        if i in suggestions:
            others = sorted({findings[k].code for k in suggestions[i][2]} - {f.code})
            if others:
                text += f" (the suggestion also applies {', '.join(others)})"
            out.append(rd_diagnostic(f, ctx, suggestions[i], text))
        else:
            if i in carried_by:
                host = findings[carried_by[i]]
                text += f"; its fix is in the {host.code} suggestion at line {host.line}"
            elif i in overlaps:
                host = findings[overlaps[i]]
                text += (
                    f"; its fix overlaps the {host.code} suggestion at line {host.line} "
                    "(one suggestion per line: commit that one, then run syncfix again)"
                )
            out.append(rd_diagnostic(f, ctx, None, text))
    return out


@reporter("rdjson")
def rdjson(findings: Sequence[Finding], ctx: ReportContext) -> str:
    result = {
        "source": {"name": TOOL},
        "severity": "WARNING",
        "diagnostics": rd_diagnostics(findings, ctx),
    }
    return json.dumps(result, indent=2, ensure_ascii=False) + "\n"


@reporter("rdjsonl")
def rdjsonl(findings: Sequence[Finding], ctx: ReportContext) -> str:
    return "".join(json.dumps(d, ensure_ascii=False) + "\n" for d in rd_diagnostics(findings, ctx))


# ---- SARIF 2.1.0 -------------------------------------------------------------------------------


def sarif_schema() -> dict:
    """The SARIF 2.1.0 schema the output's ``$schema`` names (shipped in ``syncfix/data``)."""
    from importlib.resources import files

    return json.loads(files("syncfix").joinpath("data/sarif-schema-2.1.0.json").read_text("utf-8"))



def _uri(path: str, ctx: ReportContext) -> str:
    return urllib.parse.quote(repo_rel(path, ctx), safe="/")


def sarif_rule(rule: type[Rule]) -> dict:
    doc = rule.doc()
    return {
        "id": rule.CODE,
        "name": rule.NAME,
        "shortDescription": {"text": rule.MESSAGE},
        "fullDescription": {"text": _first_section(doc)[:1000]},
        "help": {"text": doc, "markdown": doc},
        "defaultConfiguration": {"level": "note" if rule.CODE.startswith("SFX9") else "warning"},
        "properties": {"fix": rule.FIX, "tags": ["performance", "pytorch", "synchronization"]},
    }


def _first_section(doc: str) -> str:
    """The text under the first ``##`` heading (*What it finds*), one paragraph."""
    parts = doc.split("\n## ", 2)
    body = parts[1].split("\n", 1)[1] if len(parts) > 1 and "\n" in parts[1] else doc
    return " ".join(body.split()) or doc


def sarif_fix(f: Finding, ctx: ReportContext) -> dict | None:
    if f.fix is None or f.fix.edit is None:
        return None
    edit = f.fix.edit
    # Whole lines start_line..end_line, newline included: up to column 1 of the line after.
    region = {"startLine": edit.start_line, "startColumn": 1, "endLine": edit.end_line + 1, "endColumn": 1}
    if edit.end_line < edit.start_line:  # pure insertion before start_line
        region = {"startLine": edit.start_line, "startColumn": 1, "endLine": edit.start_line, "endColumn": 1}
    return {
        "description": {"text": f"{f.fix.description} ({f.fix.applicability.value} fix)"},
        "artifactChanges": [
            {
                "artifactLocation": {"uri": _uri(f.path, ctx), "uriBaseId": "%SRCROOT%"},
                # insertedContent even when empty: reviewdog skips replacements without it.
                "replacements": [{"deletedRegion": region, "insertedContent": {"text": edit.content}}],
            }
        ],
        "properties": {"applicability": f.fix.applicability.value},
    }


def sarif_problem(p: Problem, ctx: ReportContext) -> dict:
    """A path that could not be processed, as a notification of the run (not a result)."""
    physical: dict = {"artifactLocation": {"uri": _uri(p.path, ctx), "uriBaseId": "%SRCROOT%"}}
    if p.line is not None:
        physical["region"] = {"startLine": p.line, **({"startColumn": p.column} if p.column else {})}
    return {"level": "error", "message": {"text": p.message}, "locations": [{"physicalLocation": physical}]}


@reporter("sarif")
def sarif(findings: Sequence[Finding], ctx: ReportContext) -> str:
    rules = list(all_rules().values())
    index = {r.CODE: i for i, r in enumerate(rules)}
    results = []
    for f in findings:
        result: dict = {
            "ruleId": f.code,
            "level": "note" if level(f) == "notice" else "warning",
            "message": {"text": tagged_message(f)},
            "locations": [
                {
                    "physicalLocation": {
                        "artifactLocation": {"uri": _uri(f.path, ctx), "uriBaseId": "%SRCROOT%"},
                        "region": {
                            "startLine": f.line,
                            "startColumn": f.column,
                            "endLine": f.end_line,
                            "endColumn": f.end_column,
                        },
                    }
                }
            ],
        }
        if f.fix is not None:
            result["properties"] = {"applicability": f.fix.applicability.value}
        if f.code in index:
            result["ruleIndex"] = index[f.code]
        fix = sarif_fix(f, ctx)
        if fix is not None:
            result["fixes"] = [fix]
        results.append(result)
    log = {
        "$schema": SARIF_SCHEMA,
        "version": "2.1.0",
        "runs": [
            {
                "tool": {
                    "driver": {
                        "name": TOOL,
                        "version": __version__,
                        "rules": [sarif_rule(r) for r in rules],
                    }
                },
                "invocations": [
                    {
                        "executionSuccessful": not ctx.problems,
                        "toolExecutionNotifications": [sarif_problem(p, ctx) for p in ctx.problems],
                    }
                ],
                "columnKind": "unicodeCodePoints",  # LibCST columns count code points
                "originalUriBaseIds": {"%SRCROOT%": {"description": {"text": "The repository root."}}},
                "results": results,
            }
        ],
    }
    return json.dumps(log, indent=2, ensure_ascii=False) + "\n"


# ---- GitLab Code Quality and JUnit -------------------------------------------------------------


def gitlab_problem(p: Problem, ctx: ReportContext) -> dict:
    path = repo_rel(p.path, ctx)
    return {
        "description": f"not checked: {p.message}",
        "check_name": "syncfix-error",
        "fingerprint": hashlib.sha256(f"{path}\0error\0{p.message}".encode()).hexdigest(),
        "severity": "major",
        "location": {"path": path, "lines": {"begin": p.line or 1}},
    }


@reporter("gitlab")
def gitlab(findings: Sequence[Finding], ctx: ReportContext) -> str:
    out = [gitlab_problem(p, ctx) for p in ctx.problems]
    seen: Counter[str] = Counter()
    for f in findings:
        path = repo_rel(f.path, ctx)
        lines = _lines(ctx, f.path)
        text = lines[f.line - 1].strip() if lines and f.line <= len(lines) else ""
        # Stable across unrelated edits: no line numbers, but the line's text and an occurrence count.
        base = f"{path}\0{f.code}\0{f.message}\0{text}"
        seen[base] += 1
        fingerprint = hashlib.sha256(f"{base}\0{seen[base]}".encode()).hexdigest()
        description = f"{f.code} {f.message}"
        if f.fix is not None:
            description += f" (fix: {_fix_note(f)})"
        out.append(
            {
                "description": description,
                "check_name": f.code,
                "fingerprint": fingerprint,
                "severity": "info" if level(f) == "notice" else "minor",
                "location": {"path": path, "lines": {"begin": f.line, "end": f.end_line}},
            }
        )
    return json.dumps(out, indent=2) + "\n"


@reporter("junit")
def junit(findings: Sequence[Finding], ctx: ReportContext) -> str:
    n = len(findings) + len(ctx.problems)
    suites = ET.Element(
        "testsuites", name=TOOL, tests=str(max(1, n)), failures=str(len(findings)), errors=str(len(ctx.problems))
    )
    for p in ctx.problems:
        path = rel(p.path, ctx.root)
        suite = ET.SubElement(suites, "testsuite", name=path, tests="1", failures="0", errors="1")
        case = ET.SubElement(suite, "testcase", name=f"{TOOL}.error", classname=path, file=path)
        if p.line is not None:
            case.set("line", str(p.line))
        ET.SubElement(case, "error", message=p.message, type="error").text = p.message
    by_file: dict[str, list[Finding]] = {}
    for f in findings:
        by_file.setdefault(rel(f.path, ctx.root), []).append(f)
    if not by_file and not ctx.problems:
        suite = ET.SubElement(suites, "testsuite", name=TOOL, tests="1", failures="0")
        ET.SubElement(suite, "testcase", name=TOOL, classname=TOOL)
    for path, group in by_file.items():
        suite = ET.SubElement(suites, "testsuite", name=path, tests=str(len(group)), failures=str(len(group)))
        for f in group:
            case = ET.SubElement(
                suite, "testcase", name=f"{TOOL}.{f.code}", classname=path, file=path, line=str(f.line)
            )
            failure = ET.SubElement(case, "failure", message=f.message, type=f.code)
            body = f"line {f.line}, col {f.column}, {f.message}"
            if f.fix is not None:
                body += f"\nfix: {_fix_note(f)}"
            failure.text = body
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(suites, encoding="unicode") + "\n"


# ---- statistics --------------------------------------------------------------------------------


def statistics(findings: Sequence[Finding], ctx: ReportContext, as_json: bool) -> str:
    """One line per code, most frequent first: ``count<TAB>CODE<TAB>[*]<TAB>name``."""
    rows: dict[str, dict] = {}
    for f in findings:
        row = rows.setdefault(
            f.code, {"code": f.code, "name": f.name, "count": 0, "fixable_count": 0, "observed_count": 0}
        )
        row["count"] += 1
        row["fixable_count"] += fix_available(f, ctx)
        row["observed_count"] += is_observed(f)
    ordered = sorted(rows.values(), key=lambda r: (-r["count"], r["code"]))
    for row in ordered:
        row["fixable"] = row["fixable_count"] > 0
    if as_json:
        return json.dumps(ordered, indent=2) + "\n"
    return "".join(
        f"{r['count']}\t{r['code']}\t{'[*]' if r['fixable'] else '[ ]'}\t{r['name']}"
        + (f"\t({r['observed_count']} observed)" if r["observed_count"] else "")
        + "\n"
        for r in ordered
    )
