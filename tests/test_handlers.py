"""A fix that stops or moves a wait is not given where a ``try`` (or ``suppress``) around it, or
around a call of its function, would see the error that wait surfaces (an earlier kernel's
fault is raised at the next sync); SFX103, whose finding is no wait, is not held back."""

from __future__ import annotations

import pytest

from syncfix import check_code

BRANCH = '''
import torch


@torch.no_grad()
def ema_scale(steps: int):
    x = torch.randn(64, device="cuda")
    scale = torch.ones((), device="cuda")
    for _ in range(steps):
        m = x.abs().mean()
        {open}
            if m > 0.5:
                scale = scale * 0.5
            else:
                scale = scale * 2.0
        {close}
    return scale
'''

LOADER = '''
import torch
from torch.utils.data import DataLoader


def train(dataset, model):
    {open}
        for x in DataLoader(dataset, batch_size=8):
            model(x.to("cuda"))
    {close}
'''

GUARDS = [
    ("try:", "except RuntimeError:\n            pass"),
    ("try:", "except Exception:\n            pass"),
    ("with contextlib.suppress(RuntimeError):", ""),
]


def _fixable(src: str, code: str) -> list[bool]:
    return [f.fix is not None for f in check_code(src, select=[code], unsafe_fixes=True)]


@pytest.mark.parametrize(("opening", "closing"), GUARDS)
def test_no_fix_where_a_handler_sees_the_wait(opening, closing):
    plain = BRANCH.format(open="if True:", close="")
    guarded = "import contextlib\n" + BRANCH.format(open=opening, close=closing)
    assert _fixable(plain, "SFX201") == [True]
    assert _fixable(guarded, "SFX201") == [False]
    (finding,) = check_code(guarded, select=["SFX201"], unsafe_fixes=True)
    assert "inside a try whose handler catches its error" in finding.message


def test_a_handler_that_cannot_catch_runtime_errors_keeps_the_fix():
    src = BRANCH.format(open="try:", close="except (KeyError, ValueError):\n            pass")
    assert _fixable(src, "SFX201") == [True]


def test_pinning_a_loader_is_not_held_back_by_a_handler():
    guarded = LOADER.format(open="try:", close="except RuntimeError:\n        pass")
    assert _fixable(guarded, "SFX103") == [True]
