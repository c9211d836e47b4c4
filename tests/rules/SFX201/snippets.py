"""SFX201 snippets for the CPU value tests (test_sfx201.py) and the GPU test (test_sfx201_cuda.py).

Each snippet defines ``f``; the tests rewrite it with ``syncfix.fix_code`` (never by hand), run
both versions on the same inputs and compare.
"""

from __future__ import annotations

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

SAFE = [ELIF_FLOAT32, AND_NOT_INT64, IFEXP_ISNAN, BOOL_OR, VECTOR_BRANCH, MULTI_TARGET]

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

# The state arrives through a parameter, placed by one module-level device expression that is
# CUDA or the CPU: safe (test_sfx201_cuda.py runs it on CUDA).
ONE_DEVICE_EXPRESSION = '''
import torch

device = "cuda" if torch.cuda.is_available() else "cpu"


def _setup(n):
    w = torch.randn(n, n, device=device) / n**0.5
    x = torch.randn(64, n, device=device)
    return w, x


@torch.no_grad()
def _run(state, steps):
    w, x = state
    scale = torch.ones((), device=device)
    for _ in range(steps):
        y = torch.tanh(x @ w)
        m = y.abs().mean()
        if m > 0.5:
            scale = scale * 0.5
        else:
            scale = scale * 2.0
        x = y * scale
    return x, scale


def f(n: int, steps: int):
    return _run(_setup(n), steps)
'''
