"""Suppression comments: ``# noqa: SFX101``, ``# syncfix: ignore[SFX101]``, and file-level
``# syncfix: noqa`` / ``# syncfix: noqa: SFX101`` on a line of its own.

A line comment suppresses findings that start or end on its line; on a comment-only line it also
covers the next line. Comments are read with :mod:`tokenize`, so text in strings never counts.

Each comment is also kept as a :class:`Directive`, so the engine can tell which codes suppressed
nothing (SFX900, ``codemods/unused_suppression.py``).
"""

from __future__ import annotations

import io
import re
import tokenize
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

_CODES = r"[A-Z]+[0-9]+(?:\s*,\s*[A-Z]+[0-9]+)*"
_NOQA = re.compile(rf"#\s*noqa(?::\s*(?P<codes>{_CODES}))?(?![:\w])", re.IGNORECASE)
_IGNORE = re.compile(rf"#\s*syncfix:\s*ignore(?:\[(?P<codes>{_CODES})\])?(?![\[\w])")
_FILE = re.compile(rf"^#\s*syncfix:\s*noqa(?::\s*(?P<codes>{_CODES}))?\s*$")

ALL = frozenset({"*"})


@dataclass(frozen=True)
class Directive:
    """One suppression comment."""

    line: int  # where the comment is
    codes: frozenset[str]  # "*" = every code
    targets: tuple[int, ...]  # the lines it covers (empty for a file-level one)
    file_level: bool = False


@dataclass(frozen=True)
class Unused:
    line: int  # the comment's line
    codes: tuple[str, ...]  # the codes in it that suppressed nothing, sorted


@dataclass
class Suppressions:
    directives: list[Directive] = field(default_factory=list)

    def covering(self, code: str, line: int, end_line: int) -> list[int]:
        """Indices of the directives that suppress ``code`` on a finding at ``line..end_line``."""
        return [
            i
            for i, d in enumerate(self.directives)
            if _covers(d.codes, code) and (d.file_level or line in d.targets or end_line in d.targets)
        ]

    def unused(self, used: Iterable[tuple[int, str]], judge: Callable[[str], bool]) -> list[Unused]:
        """Codes that suppressed nothing. Only explicit ``SFX`` codes that ``judge`` accepts count:
        a bare ``# noqa`` or a foreign code may be meant for another tool."""
        taken = set(used)
        out = []
        for i, d in enumerate(self.directives):
            codes = sorted(
                c for c in d.codes if c.startswith("SFX") and (i, c) not in taken and judge(c)
            )
            if codes:
                out.append(Unused(d.line, tuple(codes)))
        return out


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
    for line, comment, own_line in comments:
        if own_line:
            fm = _FILE.match(comment.strip())
            if fm:
                result.directives.append(Directive(line, _codes(fm), (), file_level=True))
                continue
        codes: frozenset[str] = frozenset()
        for pattern in (_NOQA, _IGNORE):
            for m in pattern.finditer(comment):
                codes = codes | _codes(m)
        if not codes:
            continue
        targets = [line, line + 1] if own_line else [line]
        result.directives.append(Directive(line, codes, tuple(targets)))
    return result


def remove_codes(comment: str, codes: Iterable[str]) -> str:
    """``comment`` without ``codes`` in its suppressions; a suppression left with no code goes
    entirely, and so does the comment when nothing else is in it ("" then)."""
    drop = {c.upper() for c in codes}

    def edit(m: re.Match, render: Callable[[list[str]], str]) -> str:
        raw = m.group("codes")
        if not raw:
            return m.group(0)  # a blanket suppression is never ours to remove
        keep = [c.strip() for c in raw.split(",") if c.strip().upper() not in drop]
        return render(keep) if keep else "\0"  # placeholder: removed below with its spacing

    text = _FILE.sub(lambda m: edit(m, lambda k: "# syncfix: noqa: " + ", ".join(k)), comment.strip())
    text = _NOQA.sub(lambda m: edit(m, lambda k: "# noqa: " + ", ".join(k)), text)
    text = _IGNORE.sub(lambda m: edit(m, lambda k: "# syncfix: ignore[" + ", ".join(k) + "]"), text)
    parts = [p.strip() for p in text.split("\0")]
    rest = "  ".join(p for p in parts if p)
    if not rest or rest == "#":
        return ""
    return rest if rest.startswith("#") else "# " + rest
