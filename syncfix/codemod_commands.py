"""Every rule as a LibCST codemod command, for LibCST's own tool::

    python -m libcst.tool codemod -x syncfix.codemod_commands.BlockingHostToDevice src/

The attribute is a rule's class name or its code (``SFX101``); the command applies that rule's
safe fixes (``--unsafe-fixes`` for the rest) through the engine, so it rewrites exactly what
``syncfix apply --select <code>`` would. Commands are built on first use: importing
``libcst.codemod`` costs half a second, which a ``syncfix check`` should not pay.
"""

from __future__ import annotations

import argparse
from typing import Any

import libcst as cst

from .config import Settings
from .engine import process_source
from .parsing import parse_module
from .rules import Rule, all_rules

_BUILT: dict[str, type] = {}


def __getattr__(name: str) -> Any:
    rule = next(
        (r for code, r in all_rules().items() if name in (code, r.__name__)),
        None,
    )
    if rule is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    if rule.CODE not in _BUILT:
        _BUILT[rule.CODE] = codemod_for(rule)
    return _BUILT[rule.CODE]


def codemod_for(rule: type[Rule]) -> type:
    """A codemod command that applies ``rule``'s fixes (safe ones unless ``--unsafe-fixes``)."""
    from libcst.codemod import CodemodContext, VisitorBasedCodemodCommand

    class Command(VisitorBasedCodemodCommand):
        DESCRIPTION = f"{rule.CODE} {rule.NAME}: {rule.MESSAGE}"

        def __init__(self, context: CodemodContext, unsafe_fixes: bool = False) -> None:
            super().__init__(context)
            self.unsafe_fixes = unsafe_fixes

        @staticmethod
        def add_args(arg_parser: argparse.ArgumentParser) -> None:
            arg_parser.add_argument("--unsafe-fixes", action="store_true", default=False)

        def transform_module_impl(self, tree: cst.Module) -> cst.Module:
            settings = Settings(select=(rule.CODE,), unsafe_fixes=self.unsafe_fixes)
            new, remaining, _ = process_source(
                tree.bytes, self.context.filename or "<stdin>", settings, fix=True, with_edits=False
            )
            for finding in remaining:
                self.warn(f"{finding.line}:{finding.column} {finding.code} {finding.message}")
            return parse_module(new) if new != tree.bytes else tree

    Command.__name__ = Command.__qualname__ = rule.__name__
    return Command
