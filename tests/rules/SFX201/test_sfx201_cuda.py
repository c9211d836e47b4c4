"""On a GPU: SFX201's safe rewrites (made by ``syncfix.fix_code``, never by hand) give bitwise the
same values with fewer syncs, counted with ``torch.cuda.set_sync_debug_mode("warn")``; the
float32 ``0.1`` case decides differently on the GPU too."""

from __future__ import annotations

import pytest

from syncfix import fix_code

from ..support import check_rewrite_keeps_values_with_fewer_syncs, load
from . import snippets as S

torch = pytest.importorskip("torch")

CASES = [
    # (code, snippet, unsafe, args, bitwise)
    ("SFX201", S.ELIF_FLOAT32, False, (0.3, 1.5), True),
    ("SFX201", S.AND_NOT_INT64, False, (12, 1), True),
    ("SFX201", S.IFEXP_ISNAN, False, (float("nan"),), True),
    ("SFX201", S.VECTOR_BRANCH, False, (1000, 0.5), True),
    ("SFX201", S.ONE_DEVICE_EXPRESSION, False, (64, 12), True),
]


@pytest.mark.cuda
@pytest.mark.parametrize(
    "code,src,unsafe,args,bitwise",
    CASES,
    ids=[f"{c[0]}-{i}" for i, c in enumerate(CASES)],
)
def test_rewrite_keeps_values_with_fewer_syncs(code, src, unsafe, args, bitwise):
    check_rewrite_keeps_values_with_fewer_syncs(code, src, unsafe, args, bitwise)


@pytest.mark.cuda
def test_float32_point_one_differs_on_gpu_too():
    unsafe = fix_code(S.POINT_ONE, select=["SFX201"], unsafe_fixes=True)
    assert fix_code(S.POINT_ONE, select=["SFX201"]) == S.POINT_ONE
    assert load(S.POINT_ONE, "f")(0.1).item() == 0.5
    assert load(unsafe, "f")(0.1).item() == 2.0
