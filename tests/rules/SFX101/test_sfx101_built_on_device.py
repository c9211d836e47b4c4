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

def run(x: torch.Tensor, y: torch.Tensor, steps=4):
    out = []
    for i in range(steps):
        ones = torch.ones(x.shape[0], 3).to(x.device)
        prefix = torch.full((x.shape[0], 3), -100).to(x.device)
        frac = torch.full((2, 2), 0.1).to(x.device)
        eye = torch.eye(5, dtype=torch.float64).to(x.device)
        ramp = torch.arange(0, 4096, 3).to(device=x.device)
        sized = torch.zeros(*x.shape, dtype=torch.float16).to(x.device)
        like = torch.ones(2, 2).to(y)
        out.append((ones, prefix, frac, eye, ramp, sized, like, x * i))
    return out
"""


def test_factories_are_built_on_the_device_with_the_same_results_on_the_cpu():
    src = textwrap.dedent(FACTORIES)
    fixed = fix_code(src, select=["SFX101"])
    assert fixed.count(".to(") == 0 and fixed.count("device=x.device") == 6
    assert "torch.ones(2, 2, dtype=y.dtype, device=y.device)" in fixed
    x, y = torch.randn(64, 8), torch.randn(3, dtype=torch.float64)
    assert_same_result(load(src, "run")(x, y), load(fixed, "run")(x, y))


def test_a_device_that_is_none_or_a_tensor_is_not_taken_for_one():
    # `.to(None)` keeps the tensor where `device=None` is the default device; `.to(t)` takes
    # t's dtype too: only a provable device, or one named so (unsafe), is moved into the factory
    # alone, and a tensor's dtype goes with its device
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
    fixed = fix_code(src, select=["SFX101"], unsafe_fixes=True)
    assert "device=where" not in fixed and "torch.zeros(2).to(where" in fixed
    assert "torch.zeros(2, dtype=other.dtype, device=other.device)" in fixed


@pytest.mark.cuda
def test_factories_built_on_the_device_sync_less_on_a_gpu():
    if not torch.cuda.is_available():
        pytest.skip("needs CUDA")
    x, y = torch.randn(64, 8, device="cuda"), torch.randn(3, dtype=torch.float64, device="cuda")
    check_fewer_syncs("SFX101", FACTORIES, x, y)


UNDER_DEFAULT = """
import torch

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
torch.set_default_tensor_type(torch.DoubleTensor)

def run(xs):
    out = []
    for x in xs:
        pad = torch.zeros(x.shape[0], 2).to(device)
        kernel = torch.tensor([1.0, 4.0, 1.0]).to(device)
        out.append((torch.cat([x, pad], dim=1), kernel))
    return out
"""


@pytest.mark.filterwarnings("ignore:torch.set_default_tensor_type\\(\\) is deprecated")
def test_under_a_default_tensor_type_a_factory_is_built_on_the_device_and_data_is_explained():
    # with a default device or tensor type set, a factory's tensor may already be on a GPU: the
    # copy's direction is unknown, but building it on the device is exact either way
    from syncfix import check_code

    src = textwrap.dedent(UNDER_DEFAULT)
    by_line = {f.line: f for f in check_code(src, select=["SFX101"])}
    assert by_line[10].fix is not None and by_line[11].fix is None
    assert "set_default_tensor_type" in by_line[11].message
    fixed = fix_code(src, select=["SFX101"])
    assert "torch.zeros(x.shape[0], 2, device=device)" in fixed
    previous = torch.get_default_dtype()
    try:
        xs = [torch.randn(3, 4, dtype=torch.float64)]
        assert_same_result(load(src, "run")(xs), load(fixed, "run")(xs))
    finally:
        torch.set_default_dtype(previous)


TO_CUDA = """
import torch

def run(x: torch.Tensor, steps=4):
    out = []
    for i in range(steps):
        ones = torch.ones(x.shape).cuda()
        zeros = torch.zeros(x.shape[0], 4, dtype=torch.float16).to("cuda")
        filled = torch.full((3, 3), -1.5).cuda()
        out.append((ones * x, zeros, filled, x * i))
    return out
"""


@pytest.mark.cuda
def test_factories_copied_to_cuda_are_built_there_with_the_same_results_and_fewer_syncs():
    # retinanet's ``torch.ones(classification.shape).cuda()``: no host tensor and no copy, where a
    # non-blocking copy of a large pageable tensor would still wait
    if not torch.cuda.is_available():
        pytest.skip("needs CUDA")
    fixed = fix_code(TO_CUDA, select=["SFX101"])
    assert fixed.count('device="cuda"') == 3 and "non_blocking" not in fixed
    x = torch.randn(256, 8, device="cuda")
    assert_same_result(load(TO_CUDA, "run")(x), load(fixed, "run")(x))
    check_fewer_syncs("SFX101", TO_CUDA, x)


CHAINS = """
import torch

def run(x: torch.Tensor, lst, steps=3):
    out = []
    for i in range(steps):
        n = len(lst) + i
        out.append(torch.zeros(n).long().to(x.device))
        out.append(torch.LongTensor(n, 4).fill_(0).to(x.device))
        out.append(torch.LongTensor(n, 3, 1).fill_(-1).to(x.device))
        out.append(torch.ByteTensor(n, 3).zero_().view(-1).to(x.device))
        out.append(torch.arange(n).long().unsqueeze(0).to(x.device))
        out.append(torch.DoubleTensor(n, 2).fill_(0.25).to(x.device))
    return out
"""


def test_a_factory_under_exact_methods_is_built_on_the_device_with_the_same_results():
    # Towards-Realtime-MOT's 10 MiB `torch.LongTensor(...).fill_(-1).cuda()` of targets, CMC's
    # `torch.zeros(bsz).long().cuda()`: no copy at all, the same values and dtypes
    src = textwrap.dedent(CHAINS)
    fixed = fix_code(src, select=["SFX101"])
    assert fixed.count(".to(") == 0 and fixed.count("device=x.device") == 6
    assert "torch.full((n, 3, 1), -1, dtype=torch.int64, device=x.device)" in fixed
    assert "torch.full((n, 2), 0.25, dtype=torch.float64, device=x.device)" in fixed
    x = torch.randn(4)
    assert_same_result(load(src, "run")(x, [1, 2]), load(fixed, "run")(x, [1, 2]))


@pytest.mark.cuda
def test_factories_under_exact_methods_built_on_the_device_sync_less_on_a_gpu():
    if not torch.cuda.is_available():
        pytest.skip("needs CUDA")
    check_fewer_syncs("SFX101", CHAINS, torch.randn(4, device="cuda"), [1, 2])
