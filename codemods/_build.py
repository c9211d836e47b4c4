"""Small node builders the rules share when they write code."""

from __future__ import annotations

import libcst as cst


def comma() -> cst.Comma:
    """``, `` (a comma and one space)."""
    return cst.Comma(whitespace_after=cst.SimpleWhitespace(" "))


def kwarg(name: str, value: cst.BaseExpression) -> cst.Arg:
    """``name=value`` with no spaces around ``=`` (PEP 8 for keyword arguments)."""
    return cst.Arg(
        value=value,
        keyword=cst.Name(name),
        equal=cst.AssignEqual(cst.SimpleWhitespace(""), cst.SimpleWhitespace("")),
    )
