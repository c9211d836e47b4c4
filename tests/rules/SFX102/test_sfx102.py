"""SFX102's pageable form (``torch.tensor(data).to(device, non_blocking=True)``) keeps values,
dtypes and shapes where the device is the CPU; the CUDA side is in test_sfx102_cuda.py."""

from __future__ import annotations

import pytest

from syncfix import fix_code

from ..support import compare, load
from .test_sfx102_cuda import CUDA_OR_CPU

torch = pytest.importorskip("torch")


def test_sfx102_pageable_form_is_exact_on_the_cpu():
    safe = fix_code(CUDA_OR_CPU, select=["SFX102"])
    unsafe = fix_code(CUDA_OR_CPU, select=["SFX102"], unsafe_fixes=True)
    # `device` (cuda|cpu) is a safe fix; `boxes.device` (a tensor's) only an unsafe one
    assert "dtype=torch.int32).to(device, non_blocking=True)" in safe
    assert "to(boxes.device, non_blocking=True)" not in safe
    assert "to(boxes.device, non_blocking=True)" in unsafe
    boxes = torch.eye(4)
    before = load(CUDA_OR_CPU, "f")(boxes, [1, 2, 3, 4])
    for fixed in (safe, unsafe):
        compare(before, load(fixed, "f")(boxes, [1, 2, 3, 4]), bitwise=True)
