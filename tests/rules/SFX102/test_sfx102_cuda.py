"""On a GPU: SFX102's on-device creation gives bit-identical results with fewer syncs.

Syncs are counted with ``torch.cuda.set_sync_debug_mode("warn")`` (one warning per
``memcpy_and_sync``/``stream_synchronize``: docs/semantics.md#counting-syncs). The rewrite is made
by ``syncfix.fix_code``, never by hand. Run with ``-s`` to see the before/after counts.
"""

from __future__ import annotations

import pytest

from ..support import check_fewer_syncs, count_syncs

torch = pytest.importorskip("torch")


@pytest.mark.cuda
def test_sfx102_creation_on_device():
    check_fewer_syncs(
        "SFX102",
        """
        import numpy as np
        import torch

        def run(n=4):
            out = []
            for i in range(n):
                a = torch.tensor(0.1, device="cuda")
                b = torch.tensor(True, device="cuda")
                c = torch.tensor(-7, device="cuda", dtype=torch.int32)
                d = torch.tensor(float(i) / 3, device="cuda", requires_grad=True)
                e = torch.tensor([1.5, 2.5, 3.5], device="cuda", dtype=torch.float64)
                f = torch.as_tensor(np.arange(6, dtype=np.int16), device="cuda")
                g = torch.tensor(np.float32(2.5), device="cuda")
                h = torch.tensor(i, device="cuda")  # a range counter: within int64
                k = torch.tensor([0.0], device="cuda", requires_grad=True)  # one element: filled
                out.append((a, b, c, d, e, f, g, h, k))
            return out
        """,
    )


CUDA_OR_CPU = """
import torch

device = "cuda" if torch.cuda.is_available() else "cpu"


def f(boxes: torch.Tensor, crop_box: list[int]):
    out = ()
    for i in range(8):
        boxes = boxes @ boxes  # queued GPU work a blocking copy would wait for
        ids = torch.tensor([1, 2, 3], dtype=torch.int32, device=device)
        crop = torch.as_tensor(crop_box, dtype=torch.float, device=boxes.device)
        out = out + ((ids, crop, boxes.sum()),)
    return out
"""


@pytest.mark.cuda
def test_sfx102_pageable_copies_to_cuda_or_cpu_and_a_tensors_device():
    from ..support import check_rewrite_keeps_values_with_fewer_syncs

    boxes = torch.eye(256, device="cuda")
    # the `device` of `cuda|cpu` is a safe fix; `boxes.device` an unsafe one: both together here
    check_rewrite_keeps_values_with_fewer_syncs("SFX102", CUDA_OR_CPU, True, (boxes, [1, 2, 3, 4]), True)


NAMED_DEVICE = """
import torch


def f(w: torch.Tensor, counts: list[int], device):
    out = ()
    for i in range(8):
        w = w @ w  # queued GPU work a blocking copy would wait for
        ids = torch.tensor(counts, device=device)  # a device held by a parameter: unsafe fix
        n = torch.tensor(len(counts), device=device)  # a Python int there: filled (unsafe)
        out = out + ((ids, n, w.sum()),)
    return out
"""


@pytest.mark.cuda
@pytest.mark.parametrize("device", ["cuda", "cpu"])
def test_sfx102_pageable_copy_to_a_device_held_by_a_name(device):
    from ..support import check_rewrite_keeps_values_with_fewer_syncs

    # the unsafe fix rests on the device being CUDA or the CPU: exact on both (on the CPU `.to`
    # returns the tensor itself; to CUDA the fresh pageable temporary is staged at once)
    w = torch.eye(256, device="cuda")
    if device == "cuda":
        check_rewrite_keeps_values_with_fewer_syncs("SFX102", NAMED_DEVICE, True, (w, [1, 2, 3, 4], device), True)
    else:
        from syncfix import fix_code

        from ..support import compare, count_syncs, load

        new = fix_code(NAMED_DEVICE, select=["SFX102"], unsafe_fixes=True)
        assert new != NAMED_DEVICE
        before, _ = count_syncs(load(NAMED_DEVICE, "f"), w, [1, 2, 3, 4], device, seed=0)
        after, _ = count_syncs(load(new, "f"), w, [1, 2, 3, 4], device, seed=0)
        compare(before, after, bitwise=True)


def _legacy(sizes, n):
    return [torch.cuda.LongTensor(sizes) for _ in range(n)]


@pytest.mark.cuda
def test_sfx102_legacy_cuda_constructor_of_a_list_waits_each_time():
    # what the legacy-constructor finding states: ``torch.cuda.LongTensor(list)`` copies blocking
    _, syncs = count_syncs(_legacy, [3, 1, 4, 1, 5], 8)
    print(f"\nSFX102 torch.cuda.LongTensor(list): {syncs} syncs over 8 calls")
    assert syncs >= 8


SIZES_AND_IMPORTED = """
import torch
from torch import tensor


def f(data: torch.Tensor, training: bool):
    out = ()
    for i in range(8):
        data = data @ data.T @ data  # queued GPU work a blocking copy would wait for
        num_vectors, device, dtype = data.shape[-2], data.device, data.dtype
        count = tensor(num_vectors, device=device, dtype=dtype)  # a size, filled (unsafe)
        loss = tensor(0.0, device=device, requires_grad=training)  # imported `tensor`, filled
        out = out + ((count, loss, data.sum()),)
    return out
"""


@pytest.mark.cuda
def test_sfx102_sizes_and_an_imported_tensor_fill_on_the_device():
    from ..support import check_rewrite_keeps_values_with_fewer_syncs

    # vector-quantize's codebook: a size unpacked from a tuple, `tensor` imported from torch
    data = torch.eye(64, device="cuda")
    check_rewrite_keeps_values_with_fewer_syncs("SFX102", SIZES_AND_IMPORTED, True, (data, True), True)


NEW_TENSORS = """
import torch


def f(data: torch.Tensor, items: list):
    out = ()
    for i in range(8):
        data = data @ data.T @ data  # queued GPU work a blocking copy would wait for
        n = data.size(0)
        count = data.new_tensor([n], dtype=torch.long)  # a size (unsafe)
        total = data.new_tensor(len(items), dtype=torch.long)
        half = data.new_tensor(0.5)  # data's dtype and device
        out = out + ((count, total, half, data.sum()),)
    return out
"""


@pytest.mark.cuda
def test_sfx102_new_tensor_fills_on_the_device():
    from ..support import check_rewrite_keeps_values_with_fewer_syncs

    # semseg's distributed count: `target.new_tensor([n], dtype=torch.long)` every step
    data = torch.eye(64, device="cuda", dtype=torch.float16)
    check_rewrite_keeps_values_with_fewer_syncs("SFX102", NEW_TENSORS, True, (data, [1, 2, 3]), True)
