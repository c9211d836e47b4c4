"""Sources that tests of the recorded tree compare against LibCST on: every rule fixture, every
bundled example, and a test's own odd cases."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SOURCES = sorted([*(ROOT / "tests" / "rules").glob("*/fixtures/*.py"), *(ROOT / "examples").rglob("*.py")])


def sources(odd: Mapping[str, str], extra: Iterable[Path] = ()) -> list:
    """One ``pytest.param`` per fixture, example and file of ``extra`` (its text, its path as the
    id), then one per odd case (its text, its name as the id)."""
    params = [pytest.param(p.read_text(), id=str(p.relative_to(ROOT))) for p in [*SOURCES, *extra]]
    return params + [pytest.param(text, id=name) for name, text in odd.items()]
