"""LibCST's module parse, without validating each node its parser builds.

Every LibCST node checks its own fields when constructed (``CSTNode.__post_init__`` calls
``_validate``: parentheses balanced, whitespace where the grammar needs it...). Nodes the parser
builds from source text satisfy those checks by construction (LibCST's own comment there says
as much), yet the checks ran for every node of every file: about 13 % of the parse, measured
on 330 files of four public code bases (benchmarks/throughput.py). While a module is parsed
here, node construction skips them; nodes that rules build for a fix are still checked, and
each rewritten module is parsed again, so a fix that renders code that does not parse is still
caught. One kind of statement breaks the rule: a keyword against a parenthesized conditional
(``assert(x if c else y)``) parses, yet its node fails the checks once rebuilt
(:func:`rejected_by_checks` finds such files; the engine analyses them with the checks off and
offers no fix). Also here: what a syntax error of old PyTorch code means (:func:`legacy_hint`).
"""

from __future__ import annotations

import re
import threading
from collections.abc import Iterator
from contextlib import contextmanager

import libcst as cst

_validating_post_init = cst.CSTNode.__post_init__
_lock = threading.Lock()
_parsing = 0  # parses under way (threads may parse at once: the last to finish restores)


def _unchecked(self: cst.CSTNode) -> None:
    pass


@contextmanager
def without_validation() -> Iterator[None]:
    """Build nodes without LibCST's checks while inside (parses, and :mod:`syncfix.engine`'s
    analysis of a file whose parse those checks would reject)."""
    global _parsing
    with _lock:
        _parsing += 1
        cst.CSTNode.__post_init__ = _unchecked  # type: ignore[method-assign]
    try:
        yield
    finally:
        with _lock:
            _parsing -= 1
            if not _parsing:
                cst.CSTNode.__post_init__ = _validating_post_init  # type: ignore[method-assign]


def parse_module(source: str | bytes, config: cst.PartialParserConfig | None = None) -> cst.Module:
    """``cst.parse_module(source, config)``, the same tree and the same errors, faster."""
    with without_validation():
        if config is None:
            return cst.parse_module(source)
        return cst.parse_module(source, config)


# A keyword written against the parenthesized conditional expression after it (``assert(x if c
# else y)``, ``return(a if c else b)``): LibCST's parser builds the node, and its checks reject it.
_REJECTED = re.compile(
    r"\b(?:assert|return|yield|await|del|not|in|is|and|or|if|elif|while|else|lambda)\((?=[^\n]*\bif\b[^\n]*\belse\b)"
)


def rejected_by_checks(text: str) -> bool:
    """Does ``text`` hold a statement LibCST's node checks reject, though Python and LibCST's
    parser accept it (wanda's ``assert(x if c else True)``)? Then a walk or a fix that rebuilds
    that node raises, unless the checks are off (:func:`without_validation`)."""
    return _REJECTED.search(text) is not None


def legacy_hint(line: str | None) -> str:
    """For a syntax error's line: PyTorch code older than Python 3.7 (tsn-pytorch's
    ``.cuda(async=True)``) gets what it is now, so that the user can fix the line."""
    if line and re.search(r"\basync\s*=", line):
        return " (`async` is a keyword since Python 3.7: PyTorch's `async=True` is `non_blocking=True`)"
    return ""
