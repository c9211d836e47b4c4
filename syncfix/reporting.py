"""Reporters: small pure functions from findings to text, and the unified diff.

``FORMATS`` maps an ``--output-format`` name to a function ``(findings, ctx) -> str``. More formats
(CI ones) register themselves in :mod:`syncfix.formats`.
"""

from __future__ import annotations

import difflib
import functools
import json
import os
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from rich.console import Console
from rich.text import Text

from .model import Applicability, Finding


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


Reporter = Callable[[Sequence[Finding], ReportContext], str]
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


def fix_available(f: Finding, ctx: ReportContext) -> bool:
    return f.fix is not None and (f.fix.applicability is Applicability.SAFE or ctx.unsafe_fixes)


def marker(f: Finding, ctx: ReportContext) -> str:
    return " [*]" if fix_available(f, ctx) else ""


@reporter("concise")
def concise(findings: Sequence[Finding], ctx: ReportContext) -> str:
    return "".join(
        f"{rel(f.path, ctx.root)}:{f.line}:{f.column}: {f.code}{marker(f, ctx)} {f.message}\n"
        for f in findings
    )


@reporter("full")
def full(findings: Sequence[Finding], ctx: ReportContext) -> str:
    out: list[str] = []
    split: dict[str, list[str]] = {}  # each file's lines, split once
    for f in findings:
        out.append(f"{rel(f.path, ctx.root)}:{f.line}:{f.column}: {f.code}{marker(f, ctx)} {f.message}\n")
        text = ctx.sources.get(f.path)
        if text is not None:
            lines = split.get(f.path)
            if lines is None:
                # only real newlines end a line (str.splitlines also breaks at form feeds)
                lines = split[f.path] = [ln.rstrip("\r\n") for ln in _LINE.findall(text)]
            width = len(str(f.end_line))
            pad = " " * width
            out.append(f"{pad} |\n")
            for n in range(f.line, min(f.end_line, f.line + 5) + 1):
                if n - 1 >= len(lines):
                    break
                src = lines[n - 1]
                out.append(f"{n:>{width}} | {src}\n")
                start = f.column - 1 if n == f.line else len(src) - len(src.lstrip())
                end = f.end_column - 1 if n == f.end_line else len(src)
                out.append(f"{pad} | {' ' * start}{'^' * max(1, end - start)}\n")
            out.append(f"{pad} |\n")
        if f.fix is not None:
            label = "help" if fix_available(f, ctx) else "note"
            out.append(f"  = {label}: {f.fix.description}\n")
            if f.fix.applicability is Applicability.UNSAFE:
                out.append("  = note: This is an unsafe fix and may change runtime behavior\n")
            edit = f.fix.edit
            if edit is not None and (edit.original or edit.content):
                for line in edit.original.splitlines():
                    out.append(f"  - {line}\n")
                for line in edit.content.splitlines():
                    out.append(f"  + {line}\n")
        out.append("\n")
    return "".join(out)


def finding_json(f: Finding, ctx: ReportContext) -> dict:
    fix = None
    if f.fix is not None:
        edit = f.fix.edit
        fix = {
            "applicability": f.fix.applicability.value,
            "message": f.fix.description,
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
        "message": f.message,
        "filename": rel(f.path, ctx.root),
        "location": {"row": f.line, "column": f.column},
        "end_location": {"row": f.end_line, "column": f.end_column},
        "noqa_row": f.line,
        "url": None,
        "fix": fix,
    }


@reporter("json")
def as_json(findings: Sequence[Finding], ctx: ReportContext) -> str:
    return json.dumps([finding_json(f, ctx) for f in findings], indent=2) + "\n"


# ---- summaries -------------------------------------------------------------------------------


def summary(findings: Sequence[Finding], ctx: ReportContext) -> str:
    remaining = len(findings)
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
    tail = ""
    if ctx.mode == "check" and (safe or (unsafe and ctx.unsafe_fixes)):
        n = safe + (unsafe if ctx.unsafe_fixes else 0)
        flag = " --unsafe-fixes" if ctx.unsafe_fixes and unsafe else ""
        tail += f"[*] {n} fixable with `syncfix apply{flag}`.\n"
    if unsafe and not ctx.unsafe_fixes:
        tail += (
            f"{unsafe} unsafe fix{'es are' if unsafe != 1 else ' is'} available with "
            "`--unsafe-fixes` (review them, or prove them with `syncfix verify`).\n"
        )
    return head + tail


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
