"""Where a node is (line and column), without resolving the positions of the whole module.

LibCST's ``PositionProvider`` generates the code of the whole module to place every node; a
file with a few findings needs a few positions. So the engine generates code, with positions,
only for the statement that holds a finding: a top-level statement, or, inside a top-level
``class`` or ``def``, the statement of its body (a method, a loop of ``main()``) — whose first
line comes from Python's own parse of the text (a C parser, already run for the top-level lines).
tests/test_positions.py checks every node's position against LibCST's.
"""

from __future__ import annotations

import ast
import itertools
import re
from collections.abc import Mapping, Sequence
from typing import cast

import libcst as cst
from libcst.metadata import CodeRange, PositionProvider
from libcst.metadata.position_provider import PositionProvidingCodegenState

# The top-level statements whose body's statements are placed on their own (their ast node is
# kept): a node inside the body of a ``class`` or ``def``.
_NESTED = (cst.ClassDef, cst.FunctionDef)


_LINE = re.compile(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+\Z")


def split_lines(text: str) -> list[str]:
    """Lines with their endings, split only where Python ends a line (not at form feeds...)."""
    return _LINE.findall(text)


def top_lines_of_source(
    module: cst.Module, source: str, asts: dict[cst.CSTNode, ast.stmt] | None = None
) -> dict[cst.CSTNode, tuple[int, str]] | None:
    """Each top-level statement's first line (leading comments included) and exact text, cut
    out of the text the module was parsed from: each statement's first code line from Python's
    parse, less the comment and blank lines LibCST gives it; the lines up to the next statement's
    start are its text (the module is its header, its statements and its footer, in order). None
    wherever the two parses do not line up as expected (the caller then generates the text).
    ``asts`` receives the ast node of each top-level ``class`` and ``def``."""
    try:
        body = ast.parse(source).body
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None  # e.g. syntax newer than this Python's
    lines = split_lines(source)
    matched = _starts(module.body, body, lines)
    if matched is None:
        return None
    starts = [start for start, _ in matched]
    if starts and starts[0] != 1 + len(module.header):
        return None
    bounds = [*starts, len(lines) - len(module.footer) + 1]
    if any(a >= b for a, b in itertools.pairwise(bounds)):
        return None
    if asts is not None:
        for stmt, (_, node) in zip(module.body, matched, strict=True):
            if type(stmt) in _NESTED:
                asts[stmt] = node
    out: dict[cst.CSTNode, tuple[int, str]] = {}
    for i, stmt in enumerate(module.body):
        if i == len(module.body) - 1 and not module.has_trailing_newline:
            break  # the module strips this statement's newline; leave it to the slow path
        out[stmt] = (starts[i], "".join(lines[starts[i] - 1 : bounds[i + 1] - 1]))
    return out


def _starts(
    stmts: Sequence[cst.BaseStatement], body: Sequence[ast.stmt], lines: list[str]
) -> list[tuple[int, ast.stmt]] | None:
    """The first line of each of ``stmts`` (its leading comments and blank lines included),
    from the ast nodes ``body`` of the same statements, with the (first) ast node of each; None
    where they do not line up."""
    starts: list[tuple[int, ast.stmt]] = []
    k = 0
    for stmt in stmts:
        if k >= len(body):
            return None
        node = body[k]
        k += len(stmt.body) if isinstance(stmt, cst.SimpleStatementLine) else 1
        first, lead = node.lineno, len(stmt.leading_lines)  # type: ignore[attr-defined]
        decorators = getattr(stmt, "decorators", ())
        if decorators:
            first = node.decorator_list[0].lineno  # type: ignore[attr-defined]
            lead += len(decorators[0].leading_lines)
            if not lines[first - 1].lstrip().startswith("@"):
                return None  # a decorator whose expression starts below its ``@``
        elif not 0 < first <= len(lines) or not lines[first - 1].strip() or lines[first - 1].lstrip().startswith("#"):
            return None
        starts.append((first - lead, node))
    if k != len(body) or any(a[0] >= b[0] for a, b in itertools.pairwise(starts)):
        return None
    return starts


def body_lines(top: cst.CSTNode, node: ast.stmt, source_lines: list[str]) -> dict[cst.CSTNode, int]:
    """The first line of each statement of a top-level ``class``/``def``'s body (``node`` is its
    ast node); empty where they do not line up (the caller then places the whole statement)."""
    block = getattr(top, "body", None)
    if not isinstance(block, cst.IndentedBlock) or not block.body:
        return {}
    starts = _starts(block.body, getattr(node, "body", ()), source_lines)
    if starts is None:
        return {}
    return {stmt: start for stmt, (start, _) in zip(block.body, starts, strict=True)}


def positions_in(
    stmt: cst.CSTNode, line: int, module: cst.Module, indent: Sequence[str] = ()
) -> Mapping[cst.CSTNode, CodeRange]:
    """The positions of ``stmt``'s nodes: the module's code generation with positions (what
    PositionProvider runs over the whole module), run over one statement that starts at ``line``
    (its leading comments included) inside blocks indented by ``indent`` (none: column 0)."""
    provider = PositionProvider()
    state = PositionProvidingCodegenState(
        default_indent=module.default_indent,
        default_newline=module.default_newline,
        provider=provider,
        line=line,
    )
    state.indent_tokens = list(indent)
    stmt._codegen(state)
    return cast("Mapping[cst.CSTNode, CodeRange]", provider._computed)
