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

import hashlib
import json
import urllib.parse
import xml.etree.ElementTree as ET
from collections import Counter
from collections.abc import Sequence

from .model import Applicability, Edit, Finding
from .reporting import ReportContext, finding_json, fix_available, marker, rel, reporter
from .rules import Rule, all_rules
from .version import __version__

TOOL = "syncfix"
SARIF_SCHEMA = "https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json"
ANNOTATIONS_PER_LEVEL = 10  # GitHub shows at most 10 annotations of each level per step
UNSAFE_TAG = "[unsafe fix]"
SUMMARY_BUDGET = 900_000  # GitHub rejects a step summary over 1 MiB


# ---- shared helpers ----------------------------------------------------------------------------


def repo_rel(path: str, ctx: ReportContext) -> str:
    return rel(path, ctx.repo_root or ctx.root)


def is_unsafe(f: Finding) -> bool:
    return f.fix is not None and f.fix.applicability is Applicability.UNSAFE


def tagged_message(f: Finding) -> str:
    """The message, tagged for formats with no field for fix safety."""
    return f"{f.message} {UNSAFE_TAG}" if is_unsafe(f) else f.message


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
def grouped(findings: Sequence[Finding], ctx: ReportContext) -> str:
    out: list[str] = []
    by_file: dict[str, list[Finding]] = {}
    for f in findings:
        by_file.setdefault(f.path, []).append(f)
    for path, group in by_file.items():
        width = max(len(f"{f.line}:{f.column}") for f in group)
        out.append(f"{rel(path, ctx.root)}:\n")
        for f in group:
            out.append(f"  {f'{f.line}:{f.column}':<{width}} {f.code}{marker(f, ctx)} {f.message}\n")
        out.append("\n")
    return "".join(out)


@reporter("json-lines")
def json_lines(findings: Sequence[Finding], ctx: ReportContext) -> str:
    return "".join(json.dumps(finding_json(f, ctx)) + "\n" for f in findings)


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


def annotation(f: Finding, ctx: ReportContext) -> str:
    props = {
        "title": f"{TOOL} ({f.code})",
        "file": repo_rel(f.path, ctx),
        "line": str(f.line),
        "col": str(f.column),
        "endLine": str(f.end_line),
        "endColumn": str(f.end_column),
    }
    message = f"{f.code} {f.message}"
    if f.fix is not None:
        message += f"\n  help: {_fix_note(f)}"
    head = ",".join(f"{k}={escape_property(v)}" for k, v in props.items())
    return f"::{level(f)} {head}::{escape_data(message)}\n"


@reporter("github")
def github(findings: Sequence[Finding], ctx: ReportContext) -> str:
    out: list[str] = []
    shown: Counter[str] = Counter()
    hidden = 0
    for f in findings:
        lv = level(f)
        if shown[lv] >= ANNOTATIONS_PER_LEVEL:
            hidden += 1
            continue
        shown[lv] += 1
        out.append(annotation(f, ctx))
    if hidden:
        # A plain log line, not an annotation: an annotation over the cap would be dropped too.
        out.append(
            f"{TOOL}: {hidden} more finding{'s' if hidden != 1 else ''} not annotated "
            f"(GitHub shows {ANNOTATIONS_PER_LEVEL} per level); see the job summary.\n"
        )
    return "".join(out)


def github_summary(findings: Sequence[Finding], ctx: ReportContext) -> str:
    """The full list in markdown, for ``$GITHUB_STEP_SUMMARY`` (shown on fork PRs too)."""
    if not findings:
        return f"### {TOOL}\n\nAll checks passed.\n"
    n = len(findings)
    out = [f"### {TOOL}: {n} finding{'s' if n != 1 else ''}\n\n"]
    out.append("| Location | Code | Message | Fix |\n|---|---|---|---|\n")
    size = 0
    for i, f in enumerate(findings):
        where = f"`{repo_rel(f.path, ctx)}:{f.line}:{f.column}`"
        fix = _fix_note(f) or "none"
        out.append(f"| {where} | {f.code} | {_md_cell(f.message)} | {_md_cell(fix)} |\n")
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
            body = "".join(f"-{x}" for x in _with_eol(edit.original))
            body += "".join(f"+{x}" for x in _with_eol(edit.content))
            fence = "`" * max(3, _longest_backticks(body) + 1)
            out.append(
                f"**{repo_rel(f.path, ctx)}:{f.line}** {f.code} ({f.fix.applicability.value} fix)\n\n"
                f"{fence}diff\n@@ -{edit.start_line} @@\n{body}{fence}\n\n"
            )
            size += len(out[-1])
        out.append("</details>\n")
    return "".join(out)


def _with_eol(text: str) -> list[str]:
    return [x if x.endswith(("\n", "\r")) else x + "\n" for x in text.splitlines(keepends=True)]


def _md_cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def _longest_backticks(text: str) -> int:
    best = run = 0
    for ch in text:
        run = run + 1 if ch == "`" else 0
        best = max(best, run)
    return best


# ---- reviewdog rdjson / rdjsonl ----------------------------------------------------------------


def rd_diagnostic(f: Finding, ctx: ReportContext) -> dict:
    """One reviewdog Diagnostic: 1-based lines, UTF-8 byte columns, exclusive end.

    With a suggestion, the range spans exactly the suggestion's lines: reviewdog's
    github-pr-review posts a suggestion only when the comment's lines equal the suggestion's.
    """
    lines = _lines(ctx, f.path)

    def col(line_no: int, column: int) -> int:
        if lines is None or not 1 <= line_no <= len(lines):
            return column  # no source: code points equal bytes for ASCII, the common case
        return byte_column(lines[line_no - 1], column)

    start = {"line": f.line, "column": col(f.line, f.column)}
    end = {"line": f.end_line, "column": col(f.end_line, f.end_column)}
    diag: dict = {
        "message": tagged_message(f),
        "location": {"path": rel(f.path, ctx.root), "range": {"start": start, "end": end}},
        "severity": "WARNING" if level(f) == "warning" else "INFO",
        "source": {"name": TOOL},
        "code": {"value": f.code},
    }
    edit = line_edit(f.fix.edit, lines) if f.fix is not None and f.fix.edit is not None else None
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


@reporter("rdjson")
def rdjson(findings: Sequence[Finding], ctx: ReportContext) -> str:
    result = {
        "source": {"name": TOOL},
        "severity": "WARNING",
        "diagnostics": [rd_diagnostic(f, ctx) for f in findings],
    }
    return json.dumps(result, indent=2, ensure_ascii=False) + "\n"


@reporter("rdjsonl")
def rdjsonl(findings: Sequence[Finding], ctx: ReportContext) -> str:
    return "".join(json.dumps(rd_diagnostic(f, ctx), ensure_ascii=False) + "\n" for f in findings)


# ---- SARIF 2.1.0 -------------------------------------------------------------------------------


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
                "columnKind": "unicodeCodePoints",  # LibCST columns count code points
                "originalUriBaseIds": {"%SRCROOT%": {"description": {"text": "The repository root."}}},
                "results": results,
            }
        ],
    }
    return json.dumps(log, indent=2, ensure_ascii=False) + "\n"


# ---- GitLab Code Quality and JUnit -------------------------------------------------------------


@reporter("gitlab")
def gitlab(findings: Sequence[Finding], ctx: ReportContext) -> str:
    out = []
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
    suites = ET.Element("testsuites", name=TOOL, tests=str(max(1, len(findings))), failures=str(len(findings)))
    by_file: dict[str, list[Finding]] = {}
    for f in findings:
        by_file.setdefault(rel(f.path, ctx.root), []).append(f)
    if not by_file:
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
        row = rows.setdefault(f.code, {"code": f.code, "name": f.name, "count": 0, "fixable_count": 0})
        row["count"] += 1
        row["fixable_count"] += fix_available(f, ctx)
    ordered = sorted(rows.values(), key=lambda r: (-r["count"], r["code"]))
    for row in ordered:
        row["fixable"] = row["fixable_count"] > 0
    if as_json:
        return json.dumps(ordered, indent=2) + "\n"
    return "".join(
        f"{r['count']}\t{r['code']}\t{'[*]' if r['fixable'] else '[ ]'}\t{r['name']}\n" for r in ordered
    )
