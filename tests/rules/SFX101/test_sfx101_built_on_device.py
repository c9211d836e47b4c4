"""SFX101 builds a factory's tensor on a device it cannot name (``torch.ones(n).to(x.device)``
→ ``torch.ones(n, device=x.device)``): the same values, dtypes and devices wherever it runs."""

from __future__ import annotations

import textwrap

import pytest

from syncfix import fix_code

from ..support import assert_same_result, check_fewer_syncs, load

torch = pytest.importorskip("torch")

FACTORIES = """
import torch

def run(x: torch.Tensor, steps=4):
    out = []
    for i in range(steps):
        ones = torch.ones(x.shape[0], 3).to(x.device)
        prefix = torch.full((x.shape[0], 3), -100).to(x.device)
        frac = torch.full((2, 2), 0.1).to(x.device)
        eye = torch.eye(5, dtype=torch.float64).to(x.device)
        ramp = torch.arange(0, 4096, 3).to(device=x.device)
        sized = torch.zeros(*x.shape, dtype=torch.float16).to(x.device)
        out.append((ones, prefix, frac, eye, ramp, sized, x * i))
    return out
"""


def test_factories_are_built_on_the_device_with_the_same_results_on_the_cpu():
    src = textwrap.dedent(FACTORIES)
    fixed = fix_code(src, select=["SFX101"])
    assert fixed.count(".to(") == 0 and fixed.count("device=x.device") == 6
    x = torch.randn(64, 8)
    assert_same_result(load(src, "run")(x), load(fixed, "run")(x))


def test_a_device_that_is_none_or_a_tensor_is_not_taken_for_one():
    # `.to(None)` keeps the tensor where `device=None` is the default device; `.to(t)` takes
    # t's dtype too: only a provable device, or one named so (unsafe), is moved into the factory
    src = textwrap.dedent(
        """
        import torch

        def run(x: torch.Tensor, where, other: torch.Tensor, steps=4):
            out = []
            for _ in range(steps):
                out.append(torch.zeros(2).to(where))
                out.append(torch.zeros(2).to(other))
            return out
        """
    )
    assert "device=" not in fix_code(src, select=["SFX101"], unsafe_fixes=True)


@pytest.mark.cuda
def test_factories_built_on_the_device_sync_less_on_a_gpu():
    check_fewer_syncs("SFX101", FACTORIES, torch.randn(64, 8, device="cuda") if torch.cuda.is_available() else None)
