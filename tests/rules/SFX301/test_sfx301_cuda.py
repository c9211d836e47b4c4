"""On a GPU: SFX301 turns N syncs into 1 per dtype kind.

Syncs are counted with ``torch.cuda.set_sync_debug_mode("warn")`` warnings (it flags every
``.item()``/``.tolist()``/blocking copy: docs/semantics.md#counting-syncs). The rewritten code comes
from ``syncfix.fix_code``, never by hand; both versions must also return exactly the same values.
"""

from __future__ import annotations

import pytest

from syncfix import fix_code

from ..support import count_syncs, load

pytestmark = pytest.mark.cuda

READS = '''\
import torch

dev = "cuda"


def f(n):
    x = torch.randn(n, device=dev)
    loss = x.pow(2).mean()
    norm = x.norm()
    peak = x.max()
    low = x.min()
    hits = (x > 0).sum()
    kept = (x > 1).sum()
    print(f"loss {loss.item():.4f} norm {norm.item():.4f} peak {peak.item():.3f} low {low.item():.3f}")
    return loss.item(), norm.item(), peak.item(), low.item(), hits.item(), kept.item()
'''


def test_sfx301_n_syncs_become_one_per_group():
    import torch

    fixed = fix_code(READS, select=["SFX301"])
    assert fixed != READS
    before_fn, after_fn = load(READS, "f"), load(fixed, "f")
    before_fn(4096), after_fn(4096)  # warm up: a first CUDA call can sync once on its own
    torch.manual_seed(0)
    before, n_before = count_syncs(before_fn, 4096, warm_up=False)
    torch.manual_seed(0)
    after, n_after = count_syncs(after_fn, 4096, warm_up=False)
    print(f"\nSFX301: {n_before} syncs before, {n_after} after\n{fixed}")
    assert before == after and [type(v) for v in before] == [type(v) for v in after]
    # the print writes no tensor, so it and the return are one run: the 8 float reads (4 of
    # them again the print's tensors) -> 1, and the 2 int reads -> 1
    assert n_before == 10
    assert n_after == 2


DATA_READS = '''\
import torch
import torch.nn as nn

dev = "cuda"
mean_loss = nn.MSELoss(size_average=True)
summed = nn.MSELoss(size_average=False)


def step(batches):
    model = nn.Linear(16, 16).to(dev)
    out = []
    for x, y in batches:
        p = model(x.to(dev))
        loss0 = mean_loss(p, y)
        loss1 = summed(p, y)
        out.append("%f %f" % (loss0.data.item(), loss1.data.item()))
    return out
'''


def test_sfx301_reads_of_data_merge_into_one_transfer():
    # U-2-Net's ``lossN.data.item()`` of legacy-flag losses (means and sums: 0-d)
    import torch

    fixed = fix_code(DATA_READS, select=["SFX301"])
    assert "torch.stack([loss0.data, loss1.data]).tolist()" in fixed, fixed
    batches = [(torch.randn(8, 16, device="cuda"), torch.randn(8, 16, device="cuda")) for _ in range(5)]
    with pytest.warns(UserWarning, match="size_average"):
        before, n_before = count_syncs(load(DATA_READS, "step"), batches, seed=0)  # same weights
        after, n_after = count_syncs(load(fixed, "step"), batches, seed=0)
    print(f"\nSFX301 (.data reads): {n_before} syncs before, {n_after} after")
    assert before == after
    assert n_before - n_after == 5  # one read saved per step (placing the model costs the same)
