"""Suppression comments: ``# noqa: SFX101``, ``# syncfix: ignore[SFX101]``, and file-level
``# syncfix: noqa`` / ``# syncfix: noqa: SFX101`` on a line of its own.

A line comment suppresses findings that start or end on its line; on a comment-only line it also
covers the next line. Comments are read with :mod:`tokenize`, so text in strings never counts.
"""

from __future__ import annotations

import io
import re
import tokenize
from dataclasses import dataclass, field

_CODES = r"[A-Z]+[0-9]+(?:\s*,\s*[A-Z]+[0-9]+)*"
_NOQA = re.compile(rf"#\s*noqa(?::\s*(?P<codes>{_CODES}))?(?![:\w])", re.IGNORECASE)
_IGNORE = re.compile(rf"#\s*syncfix:\s*ignore(?:\[(?P<codes>{_CODES})\])?(?![\[\w])")
_FILE = re.compile(rf"^#\s*syncfix:\s*noqa(?::\s*(?P<codes>{_CODES}))?\s*$")

ALL = frozenset({"*"})


@dataclass
class Suppressions:
    by_line: dict[int, frozenset[str]] = field(default_factory=dict)  # "*" = every code
    file_codes: frozenset[str] = frozenset()

    def suppresses(self, code: str, line: int, end_line: int) -> bool:
        if _covers(self.file_codes, code):
            return True
        return any(_covers(self.by_line.get(n, frozenset()), code) for n in {line, end_line})


def _covers(codes: frozenset[str], code: str) -> bool:
    return "*" in codes or code in codes


def _codes(match: re.Match) -> frozenset[str]:
    raw = match.group("codes")
    if not raw:
        return ALL
    return frozenset(c.strip().upper() for c in raw.split(","))


def parse(text: str) -> Suppressions:
    result = Suppressions()
    if "noqa" not in text.lower() and "syncfix:" not in text:
        return result
    try:
        comments = [
            (tok.start[0], tok.string, tok.line.strip().startswith("#"))
            for tok in tokenize.generate_tokens(io.StringIO(text).readline)
            if tok.type == tokenize.COMMENT
        ]
    except (tokenize.TokenError, SyntaxError, IndentationError):
        comments = [
            (n, line[line.index("#") :], line.strip().startswith("#"))
            for n, line in enumerate(text.splitlines(), 1)
            if "#" in line
        ]
    file_codes: set[str] = set()
    for line, comment, own_line in comments:
        if own_line:
            fm = _FILE.match(comment.strip())
            if fm:
                file_codes |= _codes(fm)
                continue
        codes: frozenset[str] = frozenset()
        for pattern in (_NOQA, _IGNORE):
            for m in pattern.finditer(comment):
                codes = codes | _codes(m)
        if not codes:
            continue
        targets = [line, line + 1] if own_line else [line]
        for n in targets:
            result.by_line[n] = result.by_line.get(n, frozenset()) | codes
    result.file_codes = frozenset(file_codes)
    return result
