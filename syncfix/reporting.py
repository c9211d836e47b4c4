"""Reporters: small pure functions from findings to text, and the unified diff.

``FORMATS`` maps an ``--output-format`` name to a function ``(findings, ctx)`` that returns the
report as text, or as an iterable of pieces written one after another: the per-finding formats
(full, concise, json, json-lines, grouped) stream, so a report of 80,000 findings is never one
string in memory. More formats (CI ones) register themselves in :mod:`syncfix.formats`.
"""

from __future__ import annotations

import difflib
import functools
import json
import os
import re
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass

from rich.console import Console
from rich.text import Text

from .advice import Explainer
from .model import Applicability, Edit, Finding, Problem
from .observed import Need


@dataclass(frozen=True)
class ReportContext:
    root: str  # paths are shown relative to this folder
    sources: dict[str, str]  # path -> text, for snippets (may be empty)
    unsafe_fixes: bool = False  # whether unsafe fixes count as available
    fixed: int = 0
    mode: str = "check"  # "check" | "apply"
    # Where CI formats read by GitHub/GitLab (github, sarif, gitlab) make paths relative to: the
    # repository root. None: the same as ``root``.
    repo_root: str | None = None
    color: bool = False  # ANSI colours in the human formats (full, concise, grouped)
    # Whether GitHub's job summary ($GITHUB_STEP_SUMMARY) gets the full list: without it, the
    # github format annotates every finding instead of the first 10 per level.
    step_summary: bool = False
    # paths that could not be processed: the summary must not say "passed", and the machine
    # formats list them (human formats have them on stderr already)
    problems: Sequence[Problem] = ()
    # (path, unsafe) -> the file's text after ``apply`` (unsafe: with --unsafe-fixes), or None;
    # rdjson asks it to merge overlapping fixes into one suggestion.
    fixed_text: Callable[[str, bool], str | None] | None = None


Reporter = Callable[[Sequence[Finding], ReportContext], "str | Iterable[str]"]
FORMATS: dict[str, Reporter] = {}


def reporter(name: str) -> Callable[[Reporter], Reporter]:
    def register(fn: Reporter) -> Reporter:
        FORMATS[name] = fn
        return fn

    return register


_LINE = re.compile(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+\Z")


def rel(path: str, root: str) -> str:
    """A repo-relative, forward-slash path (absolute paths outside the root stay absolute)."""
    if path in ("-", "<stdin>", "<string>"):
        return path
    return _rel(os.path.abspath(path), root)


@functools.lru_cache(maxsize=4096)
def _rel(absolute: str, root: str) -> str:
    try:
        relative = os.path.relpath(absolute, root)
    except ValueError:
        return absolute.replace(os.sep, "/")
    if relative.startswith(".."):
        return absolute.replace(os.sep, "/")
    return relative.replace(os.sep, "/")


# ANSI styles of the human formats, as ruff colours them: path bold, separators cyan, code bold
# red, the fix marker cyan, gutter blue, carets red, help cyan, removed lines red, added green.
_SGR = {
    "path": "1",
    "sep": "36",
    "code": "1;31",
    "marker": "36",
    "gutter": "1;34",
    "caret": "1;31",
    "help": "1;36",
    "note": "1",
    "minus": "31",
    "plus": "32",
}


def paint(text: str, style: str, on: bool) -> str:
    return f"\x1b[{_SGR[style]}m{text}\x1b[0m" if on and text else text


def location(path: str, line: int, column: int, on: bool) -> str:
    """``path:line:col:`` (coloured like ruff when ``on``)."""
    colon = paint(":", "sep", on)
    return f"{paint(path, 'path', on)}{colon}{line}{colon}{column}{colon}"


def headline(f: Finding, ctx: ReportContext, message: str) -> str:
    """``path:line:col: CODE [*] message``."""
    mark = paint(marker(f, ctx).strip(), "marker", ctx.color)
    return (
        f"{location(rel(f.path, ctx.root), f.line, f.column, ctx.color)} "
        f"{paint(f.code, 'code', ctx.color)}{' ' + mark if mark else ''} {message}"
    )


def fix_available(f: Finding, ctx: ReportContext) -> bool:
    return f.fix is not None and (f.fix.applicability is not Applicability.UNSAFE or ctx.unsafe_fixes)


def marker(f: Finding, ctx: ReportContext) -> str:
    if not fix_available(f, ctx):
        return ""
    assert f.fix is not None
    return " [*] [observed]" if f.fix.applicability is Applicability.OBSERVED else " [*]"


@reporter("concise")
def concise(findings: Sequence[Finding], ctx: ReportContext) -> Iterator[str]:
    message = Explainer(findings, ctx.unsafe_fixes)
    return (headline(f, ctx, message(f)) + "\n" for f in findings)


def edit_diff(edit: Edit, context: int = 1) -> list[tuple[str, str]]:
    """The lines an edit changes, as (sign, line) with ``context`` unchanged lines around each run
    of changes (sign " "; "..." between runs): a fix that moves one line shows that line, not the
    whole loop it sits in."""
    old = [ln.rstrip("\r\n") for ln in edit.original.splitlines(keepends=True)]
    new = [ln.rstrip("\r\n") for ln in edit.content.splitlines(keepends=True)]
    out: list[tuple[str, str]] = []
    groups = difflib.SequenceMatcher(None, old, new, autojunk=False).get_grouped_opcodes(context)
    for i, group in enumerate(groups):
        if i:
            out.append((" ", "..."))
        for tag, i1, i2, j1, j2 in group:
            if tag == "equal":
                out.extend((" ", ln) for ln in old[i1:i2])
                continue
            out.extend(("-", ln) for ln in old[i1:i2])
            out.extend(("+", ln) for ln in new[j1:j2])
    return out


def edit_hunks(edit: Edit, context: int = 1) -> str:
    """The edit as unified-diff hunks (``@@ -a,b +c,d @@`` with the file's line numbers), only
    the changed lines and ``context`` lines around them."""
    old = [ln.rstrip("\r\n") for ln in edit.original.splitlines(keepends=True)]
    new = [ln.rstrip("\r\n") for ln in edit.content.splitlines(keepends=True)]
    base = edit.start_line - 1
    out: list[str] = []
    for group in difflib.SequenceMatcher(None, old, new, autojunk=False).get_grouped_opcodes(context):
        i1, i2 = group[0][1], group[-1][2]
        j1, j2 = group[0][3], group[-1][4]
        out.append(f"@@ -{base + i1 + 1},{i2 - i1} +{base + j1 + 1},{j2 - j1} @@\n")
        for tag, a1, a2, b1, b2 in group:
            if tag == "equal":
                out.extend(f" {ln}\n" for ln in old[a1:a2])
                continue
            out.extend(f"-{ln}\n" for ln in old[a1:a2])
            out.extend(f"+{ln}\n" for ln in new[b1:b2])
    return "".join(out)


@reporter("full")
def full(findings: Sequence[Finding], ctx: ReportContext) -> Iterator[str]:
    split: dict[str, list[str]] = {}  # the current file's lines, split once
    message = Explainer(findings, ctx.unsafe_fixes)
    on = ctx.color
    bar = paint("|", "gutter", on)
    for f in findings:
        out: list[str] = [headline(f, ctx, message(f)) + "\n"]
        text = ctx.sources.get(f.path)
        if text is not None:
            lines = split.get(f.path)
            if lines is None:
                split.clear()  # findings come sorted by file: keep one file's lines at a time
                # only real newlines end a line (str.splitlines also breaks at form feeds)
                lines = split[f.path] = [ln.rstrip("\r\n") for ln in _LINE.findall(text)]
            width = len(str(f.end_line))
            pad = " " * width
            out.append(f"{pad} {bar}\n")
            for n in range(f.line, min(f.end_line, f.line + 5) + 1):
                if n - 1 >= len(lines):
                    break
                src = lines[n - 1]
                out.append(f"{paint(f'{n:>{width}}', 'gutter', on)} {bar} {src}\n")
                start = f.column - 1 if n == f.line else len(src) - len(src.lstrip())
                end = f.end_column - 1 if n == f.end_line else len(src)
                out.append(f"{pad} {bar} {' ' * start}{paint('^' * max(1, end - start), 'caret', on)}\n")
            out.append(f"{pad} {bar}\n")
        if f.fix is not None:
            label = "help" if fix_available(f, ctx) else "note"
            out.append(f"  = {paint(label + ':', label, on)} {f.fix.description}\n")
            if f.fix.applicability is Applicability.UNSAFE:
                out.append(f"  = {paint('note:', 'note', on)} This is an unsafe fix and may change runtime behavior\n")
            elif f.fix.applicability is Applicability.OBSERVED:
                facts = "; ".join(n.describe() for n in f.fix.needs)
                out.append(f"  = {paint('note:', 'note', on)} An observed fix: a recorded run saw, every time, {facts}\n")
            edit = f.fix.edit
            if edit is not None and (edit.original or edit.content):
                styles = {"-": "minus", "+": "plus", " ": ""}
                for sign, line in edit_diff(edit):
                    row = f"{sign} {line}".rstrip()
                    out.append(f"  {paint(row, styles[sign], on) if styles[sign] else row}\n")
        out.append("\n")
        yield "".join(out)


def finding_json(f: Finding, ctx: ReportContext, message: str | None = None) -> dict:
    fix = None
    if f.fix is not None:
        edit = f.fix.edit
        fix = {
            "applicability": f.fix.applicability.value,
            "message": f.fix.description,
            "needs": [needs_json(n) for n in f.fix.needs],
            "edits": []
            if edit is None
            else [
                {
                    "content": edit.content,
                    "location": {"row": edit.start_line, "column": 1},
                    "end_location": {"row": edit.end_line + 1, "column": 1},
                }
            ],
        }
    return {
        "code": f.code,
        "name": f.name,
        "message": f.message if message is None else message,
        "filename": rel(f.path, ctx.root),
        "location": {"row": f.line, "column": f.column},
        "end_location": {"row": f.end_line, "column": f.end_column},
        "noqa_row": f.line,
        "url": None,
        "fix": fix,
        "needs": [needs_json(n) for n in f.needs],
    }


def needs_json(n: Need) -> dict:
    """A fact a fix rests on (or would need), as JSON outputs give it."""
    return {
        "fact": n.fact,
        "location": {"row": n.line, "column": n.column},
        "end_location": {"row": n.end_line, "column": n.end_column},
    }


def problem_json(p: Problem, ctx: ReportContext) -> dict:
    """A path that could not be processed, as ruff writes a syntax error: no code, no fix."""
    at = {"row": p.line or 1, "column": p.column or 1}
    return {
        "code": None,
        "name": "error",
        "message": p.message,
        "filename": rel(p.path, ctx.root),
        "location": at,
        "end_location": at,
        "noqa_row": None,
        "url": None,
        "fix": None,
        "needs": [],
    }


def json_items(findings: Sequence[Finding], ctx: ReportContext) -> Iterator[dict]:
    """The json formats' entries: the paths that could not be processed, then the findings."""
    for p in ctx.problems:
        yield problem_json(p, ctx)
    message = Explainer(findings, ctx.unsafe_fixes)
    for f in findings:
        yield finding_json(f, ctx, message(f))


@reporter("json")
def as_json(findings: Sequence[Finding], ctx: ReportContext) -> Iterator[str]:
    """One JSON array, written an entry at a time (the same text as ``json.dumps(list, indent=2)``)."""
    empty = True
    for i, item in enumerate(json_items(findings, ctx)):
        empty = False
        yield ("[\n  " if i == 0 else ",\n  ") + json.dumps(item, indent=2).replace("\n", "\n  ")
    yield "[]\n" if empty else "\n]\n"


# ---- summaries -------------------------------------------------------------------------------


def summary(findings: Sequence[Finding], ctx: ReportContext) -> str:
    remaining = len(findings)
    unchecked = ""
    if ctx.problems:
        n = len(ctx.problems)
        unchecked = f"{n} path{'s' if n != 1 else ''} could not be processed (see the errors above).\n"
    if ctx.problems and remaining == 0 and ctx.fixed == 0:
        return "No findings in what was processed; " + unchecked
    if ctx.mode == "apply":
        if remaining == 0 and ctx.fixed == 0:
            return "All checks passed!\n"
        total = remaining + ctx.fixed
        head = f"Found {total} finding{'s' if total != 1 else ''} ({ctx.fixed} fixed, {remaining} remaining).\n"
    else:
        if remaining == 0:
            return "All checks passed!\n"
        head = f"Found {remaining} finding{'s' if remaining != 1 else ''}.\n"
    safe = sum(1 for f in findings if f.fix and f.fix.applicability is Applicability.SAFE)
    unsafe = sum(1 for f in findings if f.fix and f.fix.applicability is Applicability.UNSAFE)
    observed = sum(1 for f in findings if f.fix and f.fix.applicability is Applicability.OBSERVED)
    tail = ""
    if ctx.mode == "check" and (safe or observed or (unsafe and ctx.unsafe_fixes)):
        n = safe + observed + (unsafe if ctx.unsafe_fixes else 0)
        flag = " --observed" if observed else ""
        flag += " --unsafe-fixes" if ctx.unsafe_fixes and unsafe else ""
        kinds = f" ({observed} observed)" if observed else ""
        tail += f"[*] {n} fixable{kinds} with `syncfix apply{flag}`.\n"
    if unsafe and not ctx.unsafe_fixes:
        tail += (
            f"{unsafe} unsafe fix{'es are' if unsafe != 1 else ' is'} available with "
            "`--unsafe-fixes` (review them, or prove them with `syncfix verify`).\n"
        )
    return head + tail + unchecked


# ---- diffs -------------------------------------------------------------------------------------


def unified_diff(path: str, old: str, new: str, root: str) -> str:
    """A git-style diff (``a/`` and ``b/`` prefixes) that ``patch -p1`` and reviewdog accept."""
    name = rel(path, root)
    old_lines = old.splitlines(keepends=True)
    new_lines = new.splitlines(keepends=True)
    out: list[str] = []
    for line in difflib.unified_diff(old_lines, new_lines, f"a/{name}", f"b/{name}", n=3):
        if not line.endswith(("\n", "\r")):
            line += "\n\\ No newline at end of file\n"
        out.append(line)
    return "".join(out)


def diff_text(diff: str) -> Text:
    """The diff styled like git/black: bold headers, cyan hunks, green additions, red removals."""
    text = Text()
    for line in diff.splitlines(keepends=True):
        if line.startswith(("+++", "---")):
            style = "bold"
        elif line.startswith("@@"):
            style = "cyan"
        elif line.startswith("+"):
            style = "green"
        elif line.startswith("-"):
            style = "red"
        else:
            style = ""
        text.append(line, style=style)
    return text


def make_console(stream, color: str) -> Console:
    """A rich console honouring ``--color auto|always|never`` and ``NO_COLOR``."""
    if color == "always":
        return Console(file=stream, force_terminal=True, color_system="standard", highlight=False, soft_wrap=True)
    if color == "never" or os.environ.get("NO_COLOR"):
        return Console(file=stream, no_color=True, color_system=None, highlight=False, soft_wrap=True)
    return Console(file=stream, highlight=False, soft_wrap=True)
