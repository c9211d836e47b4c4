"""SFX204 snippets for the CPU value tests (test_sfx204.py) and the GPU test (test_sfx204_cuda.py).

Each snippet defines ``f``; the tests rewrite it with ``syncfix.fix_code`` (never by hand), run
both versions on the same inputs and compare.
"""

from __future__ import annotations

MASKED_FILL_FLOAT = '''
import torch


@torch.no_grad()
def f(n: int, thr: float):
    x = torch.randn(n, device="cuda")
    fill = x.mean()
    x[x < thr] = fill
    return x
'''

MASKED_FILL_INT = '''
import torch


def f(n: int, thr: int):
    c = (torch.randn(n, device="cuda") * 10).long()
    top = c.amax()
    c[c < thr] = top
    return c
'''

SAME_MASK_VALUES = '''
import torch


@torch.no_grad()
def f(n: int, thr: float):
    x = torch.randn(n, 4, device="cuda")
    floor = torch.rand_like(x) * thr
    m = x < floor
    x[m] = floor[m]
    return x
'''

MASKED_UPDATE = '''
import torch


def f(n: int, thr: float):
    # muzero's floor on a range: selected elements updated in place, negative zeros kept
    x = torch.rand(n, 4, device="cuda") * 1e-4
    x[::3] = -0.0
    x[x < 1e-5] += 1e-5
    x[x > thr] *= 2
    return x
'''

SAFE = [MASKED_FILL_FLOAT, MASKED_FILL_INT, SAME_MASK_VALUES, MASKED_UPDATE]
