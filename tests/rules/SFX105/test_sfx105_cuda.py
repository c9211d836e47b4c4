"""On a GPU: SFX105's host-list fix reads a size from the list the tensor was built from (the
rewrite comes from ``syncfix.fix_code``; values and Python types must match, syncs must fall)."""

from __future__ import annotations

import pytest

from ..support import check_rewrite_keeps_values_with_fewer_syncs

torch = pytest.importorskip("torch")

PACK = """
import torch


def f(x: torch.Tensor):
    out = ()
    for step in range(4):
        x = x @ x.T / x.shape[1]  # queued GPU work
        sequences = [x[: 3 + (step + i) % 5] for i in range(6)]
        lengths = torch.tensor([seq.shape[0] for seq in sequences], device=x.device, dtype=torch.long)
        width = lengths.amax().item()
        counts = []
        for seq in sequences:
            counts.append(len(seq) // 2)
        counts = torch.tensor(counts, device=x.device)
        fewest = counts.min().item()
        out = out + (width, fewest, (torch.arange(width, device=x.device)[None] < lengths[:, None]).sum())
    return out
"""


@pytest.mark.cuda
def test_sfx105_host_list_reduction_has_no_sync():
    x = torch.randn(64, 64, device="cuda")
    check_rewrite_keeps_values_with_fewer_syncs("SFX105", PACK, True, (x,), True)


READ_AGAIN = """
import torch


def f(x: torch.Tensor, make=lambda t: t.sum().round()):
    out = ()
    for _ in range(4):
        x = x @ x.T / x.shape[1]  # queued GPU work
        total = make(x)  # a tensor syncfix cannot name
        n = int(total.item())
        if abs(n - total.item()) > 1e-4:
            n = -1
        out = out + (n,)
    return out
"""


@pytest.mark.cuda
def test_sfx105_value_read_again_is_read_once():
    x = torch.randn(64, 64, device="cuda")
    check_rewrite_keeps_values_with_fewer_syncs("SFX105", READ_AGAIN, True, (x,), True)


ELEMENTS = """
import torch


def f(x: torch.Tensor, make=lambda t: torch.stack([t.sum(), t.amax(), t.abs().mean()])):
    out = ()
    for _ in range(4):
        x = x @ x.T / x.shape[1]  # queued GPU work
        stats = make(x)  # a tensor syncfix cannot name
        out = out + (stats[0].cpu().item(), stats[1].item(), stats[2].item())
    return out
"""


@pytest.mark.cuda
def test_sfx105_element_reads_take_one_transfer():
    x = torch.randn(64, 64, device="cuda")
    check_rewrite_keeps_values_with_fewer_syncs("SFX105", ELEMENTS, True, (x,), True)


def _gathered(losses, n):
    out = []
    for _ in range(n):
        out.append(torch.Tensor([losses]))
        out.append(torch.tensor(losses))
    return out


@pytest.mark.cuda
def test_a_tensor_built_from_a_list_of_gpu_tensors_reads_each_one():
    # what SFX105 says of SRGAN's `torch.Tensor([losses])`: one sync per element, each time
    from ..support import count_syncs

    losses = [torch.rand((), device="cuda") for _ in range(5)]
    _, syncs = count_syncs(_gathered, losses, 4)
    print(f"\nSFX105 torch.Tensor([5 GPU losses]) and torch.tensor(...), 4 times each: {syncs} syncs")
    assert syncs >= 2 * 4 * 5


def _sized(lengths, steps):
    out = []
    for _ in range(steps):
        out.append(torch.arange(lengths.max(), device=lengths.device) < lengths[:, None])
        out.append(torch.zeros(lengths[0], device=lengths.device))
        out.append(list(range(lengths[1])))
    return out


@pytest.mark.cuda
def test_a_gpu_tensor_given_as_a_factory_size_is_read_on_the_host():
    # what SFX105 says of XLM's `torch.arange(src_len.max(), device=...)`: a sync each time
    from ..support import count_syncs

    lengths = torch.tensor([3, 5, 2], device="cuda")
    _, syncs = count_syncs(_sized, lengths, 4)
    print(f"\nSFX105 torch.arange/zeros/range of a CUDA tensor, 4 times each: {syncs} syncs")
    assert syncs >= 3 * 4
