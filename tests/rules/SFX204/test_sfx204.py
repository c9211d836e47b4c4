"""SFX204: the safe rewrites keep values, dtypes, shapes and Python types (checked on CPU over
many inputs)."""

from __future__ import annotations

import pytest

from ..support import check_safe_rewrite_is_exact_on_cpu
from . import snippets as S

torch = pytest.importorskip("torch")

SAFE_CASES = [pytest.param("SFX204", src, id=f"SFX204-{i}") for i, src in enumerate(S.SAFE)]


@pytest.mark.parametrize("code,src", SAFE_CASES)
def test_safe_rewrite_is_exact_on_cpu(code, src):
    check_safe_rewrite_is_exact_on_cpu(code, src)
