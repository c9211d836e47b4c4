"""On a GPU: the read SFX206 reports at ``scaler.step(opt)``, and that its advice removes it. ``GradScaler.step`` with a
default optimizer reads the overflow flag on the host once per step; with ``fused=True`` it
hands the flag to the optimizer's kernel and reads nothing. Run with ``-s`` to see the counts."""

from __future__ import annotations

import pytest

from ..support import count_syncs

torch = pytest.importorskip("torch")


def _steps(opt, scaler, model, xs):
    for x in xs:
        with torch.autocast("cuda"):
            loss = model(x).float().square().mean()
        scaler.scale(loss).backward()
        scaler.step(opt)
        scaler.update()
        opt.zero_grad(set_to_none=True)
    return model.weight.detach().clone()


@pytest.mark.cuda
@pytest.mark.parametrize("kind", ["SGD", "AdamW"])
def test_sfx206_fused_optimizer_steps_without_reading_the_flag(kind):
    torch.manual_seed(0)
    xs = [torch.randn(64, 32, device="cuda") for _ in range(8)]
    counts = {}
    for fused in (False, True):
        model = torch.nn.Linear(32, 32, device="cuda")
        opt = getattr(torch.optim, kind)(model.parameters(), lr=1e-3, fused=fused)
        scaler = torch.amp.GradScaler("cuda")
        _, counts[fused] = count_syncs(_steps, opt, scaler, model, xs)
    print(f"\nSFX206 GradScaler {kind}: syncs over {len(xs)} steps, default {counts[False]}, fused {counts[True]}")
    assert counts[False] >= len(xs), "the default optimizer's step did not read the flag each step"
    assert counts[True] == 0


def _read_scales(scaler, n):
    return [scaler.get_scale() for _ in range(n)]


@pytest.mark.cuda
def test_sfx206_get_scale_reads_the_scale_once_per_call_when_enabled():
    counts = {}
    for enabled in (True, False):
        scaler = torch.amp.GradScaler("cuda", enabled=enabled)
        scaler.scale(torch.ones((), device="cuda"))  # the scale tensor is made on the first use
        _, counts[enabled] = count_syncs(_read_scales, scaler, 8)
    print(f"\nSFX206 get_scale: syncs over 8 reads, enabled {counts[True]}, disabled {counts[False]}")
    assert counts[True] >= 8
    assert counts[False] == 0
