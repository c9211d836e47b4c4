"""On a GPU: SFX301 turns N syncs into 1, SFX302 turns one sync per iteration into one per loop.

Syncs are counted with ``torch.cuda.set_sync_debug_mode("warn")`` warnings (sync-semantics §2a:
it flags every ``.item()``/``.tolist()``/blocking copy). The rewritten code comes from
``syncfix.fix_code``, never by hand; both versions must also return exactly the same values.
"""

from __future__ import annotations

import warnings

import pytest

from syncfix import fix_code

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

LOOP = '''\
import torch
import torch.nn.functional as F
from torch.utils.data import DataLoader

dev = "cuda"


def evaluate(dataset, model):
    total_loss = 0.0
    correct = 0
    with torch.no_grad():
        for x, y in DataLoader(dataset, batch_size=64):
            x = x.to(dev)
            y = y.to(dev)
            logits = model(x)
            loss = F.cross_entropy(logits, y, reduction="sum")
            total_loss += loss.item()
            correct += (logits.argmax(1) == y).sum().item()
    return total_loss, correct
'''


def _count_syncs(fn, *args):
    import torch

    torch.cuda.synchronize()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        torch.cuda.set_sync_debug_mode("warn")
        try:
            result = fn(*args)
        finally:
            torch.cuda.set_sync_debug_mode("default")
    syncs = [w for w in caught if "synchroniz" in str(w.message).lower()]
    return result, len(syncs)


def _load(code: str, name: str):
    namespace: dict = {}
    exec(compile(code, f"<{name}>", "exec"), namespace)
    return namespace[name]


def test_sfx301_n_syncs_become_one_per_group():
    import torch

    fixed = fix_code(READS, select=["SFX301"])
    assert fixed != READS
    before_fn, after_fn = _load(READS, "f"), _load(fixed, "f")
    before_fn(4096), after_fn(4096)  # warm up: a first CUDA call can sync once on its own
    torch.manual_seed(0)
    before, n_before = _count_syncs(before_fn, 4096)
    torch.manual_seed(0)
    after, n_after = _count_syncs(after_fn, 4096)
    print(f"\nSFX301: {n_before} syncs before, {n_after} after\n{fixed}")
    assert before == after and [type(v) for v in before] == [type(v) for v in after]
    # print: 4 float reads -> 1; return: 4 float reads -> 1 and 2 int reads -> 1
    assert n_before == 10
    assert n_after == 3


def test_sfx302_one_sync_per_loop_instead_of_per_iteration():
    import torch

    fixed = fix_code(LOOP, select=["SFX302"])
    assert "total_loss_acc" in fixed and "correct_acc" in fixed
    torch.manual_seed(0)
    model = torch.nn.Linear(32, 4).to("cuda")
    steps = 20
    data = torch.utils.data.TensorDataset(
        torch.randn(64 * steps, 32, device="cuda"), torch.randint(0, 4, (64 * steps,), device="cuda")
    )
    before, n_before = _count_syncs(_load(LOOP, "evaluate"), data, model)
    after, n_after = _count_syncs(_load(fixed, "evaluate"), data, model)
    print(f"\nSFX302: {n_before} syncs for {steps} iterations before, {n_after} after\n{fixed}")
    assert type(before[0]) is type(after[0]) is float and type(before[1]) is type(after[1]) is int
    assert before == after  # float64 sums in the same order as Python's floats
    assert n_before == 2 * steps
    assert n_after == 2  # one read of each total after the loop


LOOP_UNKNOWN_DEVICE = '''\
import torch
import torch.nn.functional as F


@torch.no_grad()
def evaluate(model, batches):
    total = 0.0
    correct = 0
    for x, y in batches:
        logits = model(x)
        loss = F.cross_entropy(logits, y)
        total += loss.item()
        hits = torch.count_nonzero(logits.argmax(1) == y)
        correct += hits.item()
    return total, correct
'''


def test_sfx302_total_follows_the_summands_device_when_it_is_unknown():
    """Model and batches arrive as parameters: the accumulator is made on the summand's device
    at the first step, so the loop still syncs once per total, after the loop."""
    import torch

    fixed = fix_code(LOOP_UNKNOWN_DEVICE, select=["SFX302"])
    assert "device=loss.device" in fixed and ".to(correct_acc.device)" in fixed
    torch.manual_seed(0)
    model = torch.nn.Linear(32, 4).to("cuda")
    steps = 20
    batches = [
        (torch.randn(64, 32, device="cuda"), torch.randint(0, 4, (64,), device="cuda")) for _ in range(steps)
    ]
    before, n_before = _count_syncs(_load(LOOP_UNKNOWN_DEVICE, "evaluate"), model, batches)
    after, n_after = _count_syncs(_load(fixed, "evaluate"), model, batches)
    empty, _ = _count_syncs(_load(fixed, "evaluate"), model, [])
    print(f"\nSFX302 (unknown device): {n_before} syncs for {steps} iterations before, {n_after} after")
    assert type(before[0]) is type(after[0]) is float and type(before[1]) is type(after[1]) is int
    assert before == after and empty == (0.0, 0)
    assert n_before == 2 * steps
    assert n_after == 2
