"""``--add-noqa``: suppress every current finding with a ``# noqa: SFXnnn`` comment.

A finding is suppressed by a comment on its start or end line (see :mod:`syncfix.suppression`).
The comment goes on the start line, unless that line ends inside a multi-line string (a comment
there would become part of the string) or a backslash continuation (a comment there is a syntax
error); then on the end line; failing both, on a line of its own just above the start line, which
covers the next line. An existing ``# noqa: ...`` on the line is merged with, never duplicated.
"""

from __future__ import annotations

import io
import re
import tokenize
from collections.abc import Sequence

from .model import Finding
from .suppression import _NOQA

_EOL = re.compile(r"(\r\n|\r|\n)?\Z")


def _eol(line: str) -> str:
    """The line's ending ("" for none): ``_EOL`` matches every string."""
    match = _EOL.search(line)
    return (match.group(1) if match else None) or ""


def add_noqa(text: str, findings: Sequence[Finding]) -> tuple[str, int]:
    """``text`` with the findings' codes added to noqa comments; returns (text, lines changed)."""
    lines = text.splitlines(keepends=True)
    scanned = _scan(text)
    if scanned is None:
        return text, 0  # cannot tell where strings are: touch nothing
    unsafe, comments = scanned
    trailing: dict[int, set[str]] = {}
    above: dict[int, set[str]] = {}
    for f in findings:
        target = next((n for n in (f.line, f.end_line) if n not in unsafe and n <= len(lines)), None)
        if target is not None:
            trailing.setdefault(target, set()).add(f.code)
        elif f.line <= len(lines) and f.line - 1 not in unsafe:  # the line before ends cleanly
            above.setdefault(f.line, set()).add(f.code)
    changed = 0
    for n, codes in trailing.items():
        new = _merge(lines[n - 1], comments.get(n), codes)
        if new != lines[n - 1]:
            lines[n - 1], changed = new, changed + 1
    for n in sorted(above, reverse=True):  # bottom-up: earlier line numbers stay valid
        line = lines[n - 1]
        indent = line[: len(line) - len(line.lstrip(" \t"))]
        eol = _eol(line) or "\n"
        lines.insert(n - 1, f"{indent}# noqa: {', '.join(sorted(above[n]))}{eol}")
        changed += 1
    return "".join(lines), changed


def _scan(text: str) -> tuple[set[int], dict[int, int]] | None:
    """Lines whose end cannot take a comment, and the column where each line's comment starts."""
    unsafe: set[int] = set()
    comments: dict[int, int] = {}
    try:
        for tok in tokenize.generate_tokens(io.StringIO(text).readline):
            if tok.type == tokenize.COMMENT:
                comments[tok.start[0]] = tok.start[1]
            elif tok.end[0] > tok.start[0] and tok.type not in (tokenize.NL, tokenize.NEWLINE):
                unsafe.update(range(tok.start[0], tok.end[0]))  # a string over several lines
    except (tokenize.TokenError, SyntaxError):  # e.g. newer syntax than this Python tokenizes
        return None
    for n, line in enumerate(text.splitlines(), 1):
        if line.rstrip().endswith("\\") and n not in comments:
            unsafe.add(n)  # explicit line joining
    return unsafe, comments


def _merge(line: str, comment_col: int | None, codes: set[str]) -> str:
    eol = _eol(line)
    body = line[: len(line) - len(eol)]
    if comment_col is not None:
        code_part, comment = body[:comment_col], body[comment_col:]
        m = _NOQA.search(comment)
        if m is not None:
            if not m.group("codes"):
                return line  # a bare noqa already suppresses everything
            existing = [c.strip() for c in m.group("codes").split(",")]
            new = [c for c in sorted(codes) if c not in {e.upper() for e in existing}]
            if not new:
                return line
            merged = "# noqa: " + ", ".join(existing + new)
            return code_part + comment[: m.start()] + merged + comment[m.end() :] + eol
    # after the code, or after a comment that has no noqa yet (noqa is found anywhere in it)
    return body.rstrip() + f"  # noqa: {', '.join(sorted(codes))}" + eol
