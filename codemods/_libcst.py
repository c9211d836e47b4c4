"""Wrap a syncfix rule as a LibCST ``VisitorBasedCodemodCommand`` (for ``python -m libcst.tool``)."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import Any

import libcst as cst


def lazy_codemod(rule) -> Callable[[str], Any]:
    """A module ``__getattr__`` that builds ``Codemod`` on first use: importing
    ``libcst.codemod`` costs half a second, which a warm ``syncfix check`` should not pay."""
    built: list = []

    def __getattr__(name: str) -> Any:
        if name != "Codemod":
            raise AttributeError(name)
        if not built:
            built.append(codemod_for(rule))
        return built[0]

    return __getattr__


def codemod_for(rule):
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
            from syncfix.config import Settings
            from syncfix.engine import process_source

            settings = Settings(select=(rule.CODE,), unsafe_fixes=self.unsafe_fixes)
            new, remaining, _ = process_source(
                tree.bytes, self.context.filename or "<stdin>", settings, fix=True, with_edits=False
            )
            for finding in remaining:
                self.warn(f"{finding.line}:{finding.column} {finding.code} {finding.message}")
            return cst.parse_module(new) if new != tree.bytes else tree

    Command.__name__ = Command.__qualname__ = f"{rule.__name__}Codemod"
    Command.__module__ = rule.__module__
    return Command
