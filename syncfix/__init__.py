"""syncfix: find and rewrite needless CPU-GPU synchronizations in PyTorch code.

The public API is small: :func:`check_code`, :func:`fix_code` and
:func:`fix_code_with_findings` work on source text (:func:`observable_needs` lists what a
recorded run should watch in files); the CLI
(``syncfix check|apply|rule|verify|trace``) works on files.

The two functions are imported on first use: ``syncfix.verify`` and the pytest plugin (loaded by
every pytest run once syncfix is installed) import this package, and must not pay for LibCST.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .version import __version__

if TYPE_CHECKING:
    from .api import check_code, fix_code, fix_code_with_findings, observable_needs

__all__ = ["__version__", "check_code", "fix_code", "fix_code_with_findings", "observable_needs"]


def __getattr__(name: str) -> Any:
    if name in ("check_code", "fix_code", "fix_code_with_findings", "observable_needs"):
        from . import api

        return getattr(api, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
