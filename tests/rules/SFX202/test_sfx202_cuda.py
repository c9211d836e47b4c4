"""On a GPU: SFX202's unsafe rewrite (made by ``syncfix.fix_code``, never by hand) gives the same
values (bitwise) with fewer syncs, counted with ``torch.cuda.set_sync_debug_mode("warn")``."""

from __future__ import annotations

import pytest

from ..support import check_rewrite_keeps_values_with_fewer_syncs

torch = pytest.importorskip("torch")


BUILTIN_MAX = '''
import torch


def f(v: float, w: float):
    a = torch.full((), v, device="cuda")
    b = torch.full((), w, device="cuda")
    return max(a, b)
'''

CASES = [
    # (code, snippet, unsafe, args, bitwise)
    ("SFX202", BUILTIN_MAX, True, (0.25, 0.75), True),
]


@pytest.mark.cuda
@pytest.mark.parametrize(
    "code,src,unsafe,args,bitwise",
    CASES,
    ids=[f"{c[0]}-{i}" for i, c in enumerate(CASES)],
)
def test_rewrite_keeps_values_with_fewer_syncs(code, src, unsafe, args, bitwise):
    check_rewrite_keeps_values_with_fewer_syncs(code, src, unsafe, args, bitwise)
