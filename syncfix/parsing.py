"""LibCST's module parse, without validating each node its parser builds.

Every LibCST node checks its own fields when constructed (``CSTNode.__post_init__`` calls
``_validate``: parentheses balanced, whitespace where the grammar needs it...). Nodes the parser
builds from source text satisfy those checks by construction (LibCST's own comment there says
as much), yet the checks ran for every node of every file: about 13 % of the parse, measured
on 330 files of four public code bases (benchmarks/throughput.py). While a module is parsed
here, node construction skips them; nodes that rules build for a fix are still checked, and
each rewritten module is parsed again, so a fix that renders code that does not parse is still
caught.
"""

from __future__ import annotations

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
