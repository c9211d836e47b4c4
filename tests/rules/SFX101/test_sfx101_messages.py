"""An unsafe SFX101 fix states every fact it rests on: the source's, and the device's when
syncfix cannot name it (another accelerator may read host memory after a non-blocking call)."""

from __future__ import annotations

import pytest

from syncfix.api import check_code

SRC = """\
import numpy as np
import torch
{device}

def step(model, frames{param}):
    for im in frames:
        x = torch.from_numpy(im).to(device)
        model(x)
"""


@pytest.mark.parametrize(
    ("device", "param", "names_device"),
    [("", ", device", True), ('device = torch.device("cuda")\n', "", False)],
)
def test_the_device_fact_is_stated_where_the_fix_rests_on_it(device, param, names_device):
    source = SRC.format(device=device, param=param)
    (found,) = [f for f in check_code(source, path="train.py", unsafe_fixes=True) if f.code == "SFX101"]
    assert found.fix is not None
    assert "numpy's own" in found.fix.description
    assert ("device is not provably CUDA" in found.fix.description) is names_device
