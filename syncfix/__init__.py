"""syncfix: find and rewrite needless CPU-GPU synchronizations in PyTorch code.

The public API is small: :func:`check_code` and :func:`fix_code` work on source text; the CLI
(``syncfix check|apply|rule|verify|trace``) works on files.
"""

from __future__ import annotations

__version__ = "0.1.0"

from .api import check_code, fix_code  # noqa: E402

__all__ = ["__version__", "check_code", "fix_code"]
