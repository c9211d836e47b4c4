"""On a GPU: SFX205's unsafe rewrite (made by ``syncfix.fix_code``, never by hand) gives the same
values (bitwise, or close where the summation order changes) with fewer syncs, counted with
``torch.cuda.set_sync_debug_mode("warn")``."""

from __future__ import annotations

import pytest

from ..support import check_rewrite_keeps_values_with_fewer_syncs

torch = pytest.importorskip("torch")


MASKED_SUM = '''
import torch


def f(n: int):
    x = torch.randn(n, device="cuda")
    return x[x > 0].sum()
'''

REPEAT_OUTPUT_SIZE = '''
import torch


def f(n: int):
    x = torch.arange(n, device="cuda")
    reps = torch.arange(n, device="cuda") % 3
    k = reps.sum().item()
    y = torch.repeat_interleave(x, reps)
    return y, k
'''

CASES = [
    # (code, snippet, unsafe, args, bitwise)
    ("SFX205", MASKED_SUM, True, (1000,), False),  # summation order changes
    ("SFX205", REPEAT_OUTPUT_SIZE, True, (100,), True),
]


@pytest.mark.cuda
@pytest.mark.parametrize(
    "code,src,unsafe,args,bitwise",
    CASES,
    ids=[f"{c[0]}-{i}" for i, c in enumerate(CASES)],
)
def test_rewrite_keeps_values_with_fewer_syncs(code, src, unsafe, args, bitwise):
    check_rewrite_keeps_values_with_fewer_syncs(code, src, unsafe, args, bitwise)
