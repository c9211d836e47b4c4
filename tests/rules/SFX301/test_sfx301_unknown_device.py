"""SFX301's merged read where the tensors' device is unknown (an unsafe fix): on the CPU the
original and the rewrite print exactly the same."""

from __future__ import annotations

import contextlib
import io
from pathlib import Path

import pytest

from syncfix import fix_code

from ..support import load

torch = pytest.importorskip("torch")

SOURCE = (Path(__file__).parent / "fixtures" / "unknown_device.in.py").read_text()


def test_sfx301_merge_of_unknown_device_losses_prints_the_same():
    fixed = fix_code(SOURCE, select=["SFX301"], unsafe_fixes=True)
    assert "torch.stack([err_d, err_g]).tolist()" in fixed
    torch.manual_seed(0)
    net_d = torch.nn.Sequential(torch.nn.Linear(4, 1), torch.nn.Sigmoid(), torch.nn.Flatten(0))
    net_g = torch.nn.Linear(3, 4)
    loader = [(torch.randn(5, 4), torch.randn(5, 3)) for _ in range(4)]
    printed = []
    for code in (SOURCE, fixed):
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            load(code, "train")(loader, net_d, net_g, "cpu")
        printed.append(out.getvalue())
    assert printed[0] == printed[1] and printed[0].count("\n") == 4
