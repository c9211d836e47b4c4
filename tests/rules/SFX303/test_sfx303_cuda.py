"""On a GPU: SFX303's one read per tensor instead of one per element (the rewrite comes from
``syncfix.fix_code``; values and Python types must match, syncs must fall)."""

from __future__ import annotations

import pytest

from ..support import check_rewrite_keeps_values_with_fewer_syncs

torch = pytest.importorskip("torch")

LOOP = """
import torch


def f(sequence: torch.Tensor, first: torch.Tensor):
    best = -1
    for _ in range(4):
        starts = (sequence == first).nonzero(as_tuple=True)[0]
        for start in starts:
            idx = start.item()
            if idx + 2 <= len(sequence):
                best = max(best, idx)
    return (best,)
"""

ROWS = """
import torch


def f(logits: torch.Tensor):
    out = ()
    for _ in range(4):
        tokens = torch.argmax(logits, dim=-1, keepdim=True)
        out = out + (tuple([t.item() for t in tokens]),)
        logits = logits.roll(1, 0)
    return out
"""


@pytest.mark.cuda
def test_sfx303_loop_over_indices_reads_once():
    sequence = torch.tensor([3, 1, 3, 3, 2, 3] * 8, device="cuda")
    check_rewrite_keeps_values_with_fewer_syncs("SFX303", LOOP, False, (sequence, sequence[0]), True)


@pytest.mark.cuda
def test_sfx303_rows_of_unknown_rank_read_once():
    logits = torch.randn(16, 50, device="cuda")
    check_rewrite_keeps_values_with_fewer_syncs("SFX303", ROWS, True, (logits,), True)


STACKED = """
import torch


def f(x: torch.Tensor, world: int):
    out = ()
    for _ in range(4):
        x = x @ x.T / x.shape[1]  # queued GPU work
        sizes = [torch.zeros(1, dtype=torch.int32, device=x.device) + i for i in range(world)]
        parts = [x.sum(), x.amax(), x.abs().mean()]
        none = [t for t in parts if t is None]
        out = out + (tuple([s.item() for s in sizes]), tuple([p.item() for p in parts]), [n.item() for n in none])
    return out
"""


@pytest.mark.cuda
def test_sfx303_list_of_tensors_read_with_one_stack():
    # ints stay ints (int32 shape-(1,) tensors), floats floats, and an empty list gives []
    x = torch.randn(64, 64, device="cuda")
    check_rewrite_keeps_values_with_fewer_syncs("SFX303", STACKED, True, (x, 5), True)


PARTS = """
import torch


def f(x: torch.Tensor, sizes: list):
    out = ()
    for _ in range(4):
        x = x @ x.T / x.shape[1]  # queued GPU work
        batches = [torch.zeros(x.shape[1]).to(x) for _ in sizes]
        for i, b in enumerate(batches):
            b.copy_(x[i])  # filled in place, as all_gather fills them
        values = [v.item() for y, n in zip(batches, sizes) for v in y[:n]]
        out = out + (tuple(values),)
    return out
"""


@pytest.mark.cuda
def test_sfx303_parts_of_a_list_read_with_one_cat():
    # 4 steps of 3 + 0 + 5 element reads become one `torch.cat(...).tolist()` per step
    x = torch.randn(64, 64, device="cuda")
    check_rewrite_keeps_values_with_fewer_syncs("SFX303", PARTS, True, (x, [3, 0, 5]), True)


GATHERED = """
import torch
import torch.distributed as dist


def update(local_ts: torch.Tensor, local_losses: torch.Tensor):
    sizes = [
        torch.tensor([0], dtype=torch.int32, device=local_ts.device)
        for _ in range(dist.get_world_size())
    ]
    dist.all_gather(sizes, torch.tensor([len(local_ts)], dtype=torch.int32, device=local_ts.device))
    sizes = [s.item() for s in sizes]
    max_bs = max(sizes)
    ts_batches = [torch.zeros(max_bs).to(local_ts) for _ in sizes]
    loss_batches = [torch.zeros(max_bs).to(local_losses) for _ in sizes]
    dist.all_gather(ts_batches, local_ts)
    dist.all_gather(loss_batches, local_losses)
    timesteps = [t.item() for y, bs in zip(ts_batches, sizes) for t in y[:bs]]
    values = [t.item() for y, bs in zip(loss_batches, sizes) for t in y[:bs]]
    return tuple(sizes), tuple(timesteps), tuple(values)


def f(x: torch.Tensor, losses: torch.Tensor):
    out = ()
    for _ in range(4):
        x = x @ x.T / x.shape[1]  # queued GPU work
        out = out + update((x[0] * 100).abs().long()[:13], losses[:13])
    return out
"""


@pytest.mark.cuda
def test_sfx303_gathered_lists_read_at_once_safe():
    # a loss-aware sampler's gathered sizes and padded batches (4 ranks simulated by a fake
    # all_gather that writes each rank's data in place, on the GPU): safe fixes, one stack and
    # two cats per step instead of 4 + 2 x 4 x 13 reads, the same ints and floats
    from unittest import mock

    import torch.distributed as dist

    ranks = [13, 9, 0, 13]

    def all_gather(out, tensor):
        for rank, o in enumerate(out):
            if o.numel() == 1:
                o.fill_(ranks[rank])
            else:
                o.copy_(torch.roll(tensor, rank)[: o.numel()].to(o.dtype))

    x = torch.randn(64, 64, device="cuda")
    losses = torch.rand(64, device="cuda", dtype=torch.float64)
    with mock.patch.object(dist, "all_gather", all_gather), mock.patch.object(dist, "get_world_size", lambda: 4):
        check_rewrite_keeps_values_with_fewer_syncs("SFX303", GATHERED, False, (x, losses), True)


DICT = """
import torch


def f(x: torch.Tensor):
    out = ()
    for _ in range(4):
        x = x @ x.T / x.shape[1]  # queued GPU work
        losses = {"sum": x.sum(), "max": x.amax().reshape(1), "mean": x.abs().mean()}
        out = out + (tuple({k: v.detach().cpu().item() / 2 for k, v in losses.items()}.items()),)
    return out
"""


@pytest.mark.cuda
def test_sfx303_dict_of_losses_read_with_one_stack():
    # three `.cpu().item()` reads per step become one stack read to the host
    x = torch.randn(64, 64, device="cuda")
    check_rewrite_keeps_values_with_fewer_syncs("SFX303", DICT, True, (x,), True)


DICT_LOOP_KEPT = """
import torch


def f(x: torch.Tensor):
    out = []
    for _ in range(4):
        x = x @ x.T / x.shape[1]  # queued GPU work
        losses = {"sum": x.sum(1), "max": x.amax(1), "mean": x.abs().mean(1)}
        for key, values in losses.items():
            out.append((key, values.mean().item()))
            out.append(values.double().sum(0).cpu())  # the tensor is used again: the loop keeps it
    return out
"""


@pytest.mark.cuda
def test_sfx303_dict_loop_keeping_the_tensor_read_with_one_stack():
    # three `.mean().item()` reads per step become one stack read; the loop keeps each tensor
    x = torch.randn(64, 64, device="cuda")
    check_rewrite_keeps_values_with_fewer_syncs("SFX303", DICT_LOOP_KEPT, True, (x,), True)
