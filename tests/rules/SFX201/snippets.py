"""Snippets for the SFX2xx value tests (CPU) and sync-count tests (CUDA).

Each snippet defines ``f``; the tests rewrite it with ``syncfix.fix_code`` (never by hand), run
both versions on the same inputs and compare.
"""

from __future__ import annotations

import math

# ---- safe rewrites ---------------------------------------------------------------------------

ELIF_FLOAT32 = '''
import torch


@torch.no_grad()
def f(m0: float, s0: float):
    m = torch.full((), m0, device="cuda")
    s = torch.full((), s0, device="cuda")
    if m > 0.5:
        s = s * 0.5
    elif m.item() < 0.25:
        s = s * 2.0
    else:
        s = s + 1.0
    return s
'''

AND_NOT_INT64 = '''
import torch


def f(v: int, w: int):
    n = torch.full((), v, device="cuda")
    k = torch.full((), w, device="cuda")
    flag = k > 3
    if n.item() >= 10 and not flag:
        r = n - 1
    else:
        r = n * 2
    return r
'''

IFEXP_ISNAN = '''
import torch


def f(v: float):
    t = torch.full((), v, device="cuda")
    u = t * 2 if torch.isnan(t) else t * 3
    return u
'''

BOOL_OR = '''
import torch


def f(p: bool, q: bool):
    x = torch.full((), p, device="cuda")
    y = torch.full((), q, device="cuda")
    if x or not y:
        z = x & y
    else:
        z = x | y
    return z
'''

VECTOR_BRANCH = '''
import torch


@torch.no_grad()
def f(n: int, shift: float):
    x = torch.randn(n, device="cuda") + shift
    m = x.mean()
    if m > 0:
        y = x * 2.0
    else:
        y = -x
    return y
'''

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

MULTI_TARGET = '''
import torch


@torch.no_grad()
def f(m0: float, s0: float):
    m = torch.full((), m0, device="cuda")
    s = torch.full((), s0, device="cuda")
    if not m <= 0.5:
        a = s * 2.0
        b = s - 1.0
    else:
        a = s * 3.0
        b = s + 1.0
    return a, b
'''

SAFE = {
    "SFX201": [ELIF_FLOAT32, AND_NOT_INT64, IFEXP_ISNAN, BOOL_OR, VECTOR_BRANCH, MULTI_TARGET],
    "SFX204": [MASKED_FILL_FLOAT, MASKED_FILL_INT],
}

FLOATS = [
    0.0, -0.0, 0.1, 0.25, 0.5, 0.2500001, 0.4999999, 1.0, -1.0, 3.5, 1e-30, -1e30, 16777217.0,
    math.inf, -math.inf, math.nan,
]
INTS = [0, 1, 3, 4, 9, 10, 11, -1, -(2**40), 2**40, 2**62, -(2**62), 16777217]

# ---- the float32 0.1 case: no safe fix, and the unsafe one really decides differently --------

POINT_ONE = '''
import torch


@torch.no_grad()
def f(m0: float):
    m = torch.full((), m0, device="cuda")
    s = torch.ones((), device="cuda")
    if m.item() > 0.1:
        s = s * 0.5
    else:
        s = s * 2.0
    return s
'''

# ---- unsafe rewrites (CUDA sync-count tests compare values where they must agree) ------------

ASSERT_ASYNC = '''
import torch


def f(n: int):
    x = torch.rand(n, device="cuda")
    assert (x >= 0).all(), "negative"
    return x * 2
'''

BUILTIN_MAX = '''
import torch


def f(v: float, w: float):
    a = torch.full((), v, device="cuda")
    b = torch.full((), w, device="cuda")
    return max(a, b)
'''

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
