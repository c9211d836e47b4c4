"""On a GPU: SFX203's unsafe rewrite (made by ``syncfix.fix_code``, never by hand) gives the same
values (bitwise) with fewer syncs, counted with ``torch.cuda.set_sync_debug_mode("warn")``."""

from __future__ import annotations

import pytest

from ..support import check_rewrite_keeps_values_with_fewer_syncs

torch = pytest.importorskip("torch")


ASSERT_ASYNC = '''
import torch


def f(n: int):
    x = torch.rand(n, device="cuda")
    assert (x >= 0).all(), "negative"
    return x * 2
'''

CASES = [
    # (code, snippet, unsafe, args, bitwise)
    ("SFX203", ASSERT_ASYNC, True, (1000,), True),
]


@pytest.mark.cuda
@pytest.mark.parametrize(
    "code,src,unsafe,args,bitwise",
    CASES,
    ids=[f"{c[0]}-{i}" for i, c in enumerate(CASES)],
)
def test_rewrite_keeps_values_with_fewer_syncs(code, src, unsafe, args, bitwise):
    check_rewrite_keeps_values_with_fewer_syncs(code, src, unsafe, args, bitwise)
