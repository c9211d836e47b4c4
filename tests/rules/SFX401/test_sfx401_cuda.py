"""On a GPU: a training loop's syncs per iteration before and after SFX401 + SFX301.

SFX401 moves the log after ``opt.step()`` (the whole iteration is queued before the read) and
SFX301 merges its two reads into one transfer: 2 syncs per iteration become 1. Counted with
``torch.cuda.set_sync_debug_mode("warn")``; the rewrite comes from ``syncfix.fix_code``.
"""

from __future__ import annotations

import contextlib
import io
import warnings

import pytest

from syncfix import fix_code

pytestmark = pytest.mark.cuda

TRAIN = '''\
import torch
import torch.nn.functional as F
from torch.utils.data import DataLoader

device = "cuda"


def train(dataset, model, opt):
    for step, (x, y) in enumerate(DataLoader(dataset, batch_size=64)):
        x = x.to(device)
        y = y.to(device)
        logits = model(x)
        loss = F.cross_entropy(logits, y)
        acc = (logits.argmax(dim=1) == y).float().mean()
        print(f"step {step} loss {loss.item():.4f} acc {acc.item():.4f}")
        opt.zero_grad()
        loss.backward()
        opt.step()
'''


def _run(code: str, dataset):
    import torch

    namespace: dict = {}
    exec(compile(code, "<train>", "exec"), namespace)
    # built outside the counted region: copying the parameters to the GPU syncs
    torch.manual_seed(0)
    model = torch.nn.Sequential(
        torch.nn.Linear(32, 64), torch.nn.ReLU(), torch.nn.Linear(64, 4)
    ).to("cuda")
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    out = io.StringIO()
    torch.cuda.synchronize()
    with warnings.catch_warnings(record=True) as caught, contextlib.redirect_stdout(out):
        warnings.simplefilter("always")
        torch.cuda.set_sync_debug_mode("warn")
        try:
            namespace["train"](dataset, model, opt)
        finally:
            torch.cuda.set_sync_debug_mode("default")
    syncs = [w for w in caught if "synchroniz" in str(w.message).lower()]
    return out.getvalue(), len(syncs)


def test_sfx401_and_sfx301_one_sync_per_iteration_after_the_step():
    import torch

    fixed = fix_code(TRAIN, select=["SFX301", "SFX401"])
    body = fixed.split("for step", 1)[1]
    assert body.index("opt.step()") < body.index("torch.stack([loss, acc]).tolist()")
    steps = 12
    gen = torch.Generator(device="cuda").manual_seed(0)
    data = torch.utils.data.TensorDataset(
        torch.randn(64 * steps, 32, device="cuda", generator=gen),
        torch.randint(0, 4, (64 * steps,), device="cuda", generator=gen),
    )
    _run(TRAIN, data)  # warm-up (allocator, cuBLAS handles)
    before_out, before = _run(TRAIN, data)
    after_out, after = _run(fixed, data)
    print(f"\nsyncs per iteration: before {before / steps:g}, after {after / steps:g}\n{fixed}")
    assert before_out == after_out  # same lines, same values, same order
    assert before == 2 * steps
    assert after == steps
