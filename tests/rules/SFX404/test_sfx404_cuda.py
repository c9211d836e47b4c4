"""On a GPU: SFX404's safe rewrite (made by ``syncfix.fix_code``, never by hand) fills the list
with the same strings and numbers, with one sync per store after the loop instead of one per
read per step."""

from __future__ import annotations

import pytest

from ..support import check_rewrite_keeps_values_with_fewer_syncs

torch = pytest.importorskip("torch")

TRAIN = '''
import torch
import torch.nn.functional as F

device = "cuda" if torch.cuda.is_available() else "cpu"


def _train(model, opt, data, labels, steps):
    logged = []
    for step in range(steps):
        x = data[step % 4].to("cuda", non_blocking=True)
        y = labels[step % 4].to("cuda", non_blocking=True)
        logits = model(x)
        loss = F.cross_entropy(logits, y)
        acc = (logits.argmax(dim=1) == y).float().mean()
        logged.append(f"loss {loss.item():.6f} acc {acc.item():.4f}")
        opt.zero_grad()
        loss.backward()
        norm = torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        logged.append(f"norm {norm.item():.6f}")
    return logged


def _counts(xs, steps):
    counts = []
    for step in range(steps):
        x = xs[step % 4].to(device)
        n = (x > 0).sum()
        counts.append(n.item())
    return counts


def f(steps: int):
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(32, 64), torch.nn.ReLU(), torch.nn.Linear(64, 10)).to(device)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    data = torch.randn(4, 16, 32)
    labels = torch.randint(0, 10, (4, 16))
    return _train(model, opt, data, labels, steps), _counts(data, steps), _counts(data, 0)
'''


@pytest.mark.cuda
def test_logged_values_are_read_once_after_the_loop():
    # 12 steps: 3 reads each before; after, one read per store (2 stores + 1) after the loops.
    check_rewrite_keeps_values_with_fewer_syncs("SFX404", TRAIN, False, (12,), True)
