"""On a GPU: SFX206's one fix (unsafe), a column read once before a `range` loop instead of one
element per iteration, made by ``syncfix.fix_code``: the same lists, fewer syncs."""

from __future__ import annotations

import pytest

from ..support import check_rewrite_keeps_values_with_fewer_syncs

torch = pytest.importorskip("torch")

RLE = """
import torch


def _rle(tensor: torch.Tensor):
    b, hw = tensor.shape
    out = []
    for i in range(b):
        counts = [] if tensor[i, 0] == 0 else [0]
        out.append(counts)
    return out


def f(tensor: torch.Tensor):
    return (_rle(tensor),)
"""


@pytest.mark.cuda
def test_sfx206_column_read_once_before_the_loop():
    mask = torch.rand(32, 64, device="cuda") > 0.5
    check_rewrite_keeps_values_with_fewer_syncs("SFX206", RLE, True, (mask,), True)


CHECKS = """
import torch


class _Trainer:
    def __init__(self, grads):
        self.grads = grads

    def step(self):
        if any(not torch.isfinite(g).all() for g in self.grads):
            return "skip"
        return "ok"


def f(n: int, bad: int):
    grads = [torch.randn(256, device="cuda") for _ in range(n)]
    if bad >= 0:
        grads[bad][0] = float("nan")
    return (_Trainer(grads).step(), _Trainer([]).step())
"""


@pytest.mark.cuda
@pytest.mark.parametrize("bad", [-1, 7])
def test_sfx206_tests_stacked_and_read_once(bad):
    # 16 parameters: one `bool()` each (up to the first non-finite) becomes one read
    check_rewrite_keeps_values_with_fewer_syncs("SFX206", CHECKS, True, (16, bad), True)
