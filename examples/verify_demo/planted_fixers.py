"""Hand-written rewrites for testing the harness (``syncfix verify --fixer FILE:FUNCTION``).

They stand in for rules, so the harness's tests do not depend on which rules exist.
"""

import re


def non_blocking_h2d(source: str, path: str) -> str:
    """Every ``.cuda()`` → ``.to("cuda", non_blocking=True)``, with no safety analysis at all:
    right for fresh pageable tensors (h2d_loop.py), wrong for a refilled pinned buffer
    (pinned_race.py)."""
    return "".join(
        line if "``" in line else re.sub(r"\.cuda\(\)", '.to("cuda", non_blocking=True)', line)
        for line in source.splitlines(keepends=True)
    )


def identity(source: str, path: str) -> str:
    return source
