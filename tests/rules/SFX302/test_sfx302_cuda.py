"""On a GPU: SFX302 turns one sync per iteration into one per loop.

Syncs are counted with ``torch.cuda.set_sync_debug_mode("warn")`` warnings (it flags every
``.item()``/``.tolist()``/blocking copy: docs/semantics.md#counting-syncs). The rewritten code comes
from ``syncfix.fix_code``, never by hand; both versions must also return exactly the same values.
"""

from __future__ import annotations

import pytest

from syncfix import fix_code

from ..support import count_syncs, load

pytestmark = pytest.mark.cuda

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
    # warmed up: the first CUDA calls of a fresh process (handles, kernels) may sync once more
    before, n_before = count_syncs(load(LOOP, "evaluate"), data, model)
    after, n_after = count_syncs(load(fixed, "evaluate"), data, model)
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

    # the device is a tensor's: it may be MPS (no float64), so the float total is an unsafe fix
    fixed = fix_code(LOOP_UNKNOWN_DEVICE, select=["SFX302"], unsafe_fixes=True)
    assert "device=loss.device" in fixed and ".to(correct_acc.device)" in fixed
    torch.manual_seed(0)
    model = torch.nn.Linear(32, 4).to("cuda")
    steps = 20
    batches = [
        (torch.randn(64, 32, device="cuda"), torch.randint(0, 4, (64,), device="cuda")) for _ in range(steps)
    ]
    before, n_before = count_syncs(load(LOOP_UNKNOWN_DEVICE, "evaluate"), model, batches, warm_up=False)
    after, n_after = count_syncs(load(fixed, "evaluate"), model, batches, warm_up=False)
    empty, _ = count_syncs(load(fixed, "evaluate"), model, [], warm_up=False)
    print(f"\nSFX302 (unknown device): {n_before} syncs for {steps} iterations before, {n_after} after")
    assert type(before[0]) is type(after[0]) is float and type(before[1]) is type(after[1]) is int
    assert before == after and empty == (0.0, 0)
    assert n_before == 2 * steps
    assert n_after == 2


LOOP_LOSS_MODULE_AND_COUNTS = '''\
import torch
import torch.nn as nn

criterion = nn.CrossEntropyLoss()


def f(xs, ys):
    torch.manual_seed(0)
    model = nn.Linear(8, 4).cuda()
    run = 0
    hits = 0
    same = 0
    for x, y in zip(xs, ys):
        out = model(x)
        loss = criterion(out, y)
        run += loss.item()
        hits += (out.argmax(1) == y).sum().item()
        _, p = out.max(1)
        same += p.eq(y).sum().item()
    return run, hits, same
'''


def test_sfx302_loss_module_int_start_and_counts_are_exact_with_fewer_syncs():
    # a module-level loss module, an int start summing floats, counts with `==` and `.eq`
    import torch

    # the device is a tensor's: it may be MPS (no float64), so the float total is an unsafe fix
    fixed = fix_code(LOOP_LOSS_MODULE_AND_COUNTS, select=["SFX302"], unsafe_fixes=True)
    assert all(f"{t}_acc +=" in fixed for t in ("run", "hits", "same")), fixed
    torch.manual_seed(1)
    xs = [torch.randn(64, 8, device="cuda") for _ in range(20)]
    ys = [torch.randint(0, 4, (64,), device="cuda") for _ in range(20)]
    before, n_before = count_syncs(load(LOOP_LOSS_MODULE_AND_COUNTS, "f"), xs, ys)
    after, n_after = count_syncs(load(fixed, "f"), xs, ys)
    assert before == after and [type(v) for v in before] == [type(v) for v in after] == [float, int, int]
    assert n_after < n_before // 4, (n_before, n_after)
    empty_before, empty_after = load(LOOP_LOSS_MODULE_AND_COUNTS, "f")([], []), load(fixed, "f")([], [])
    assert empty_before == empty_after == (0, 0, 0) and type(empty_after[0]) is int


LOOP_AFTER_BACKWARD = '''\
import torch
import torch.nn as nn


def f(xs, ys):
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 1)).cuda()
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    running = 0
    for x, y in zip(xs, ys):
        loss = (model(x) - y).pow(2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        running += loss.item()
    return running
'''


def test_sfx302_total_after_backward_is_exact_with_fewer_syncs():
    # nothing names the loss's dtype: the `backward()` before the read proves it a real float
    import torch

    # the device is a tensor's: it may be MPS (no float64), so the float total is an unsafe fix
    fixed = fix_code(LOOP_AFTER_BACKWARD, select=["SFX302"], unsafe_fixes=True)
    assert "running_acc +=" in fixed, fixed
    torch.manual_seed(1)
    xs = [torch.randn(64, 8, device="cuda") for _ in range(20)]
    ys = [torch.randn(64, 1, device="cuda") for _ in range(20)]
    before, n_before = count_syncs(load(LOOP_AFTER_BACKWARD, "f"), xs, ys)
    after, n_after = count_syncs(load(fixed, "f"), xs, ys)
    assert before == after and type(before) is type(after) is float
    assert n_after < n_before // 4, (n_before, n_after)
    assert load(fixed, "f")([], []) == 0 and type(load(fixed, "f")([], [])) is int


TENSOR_TOTALS = '''
import torch


def f(xs, ys):
    correct = torch.zeros((), dtype=torch.long, device="cuda")
    counts = {"seen": torch.zeros((), dtype=torch.float64, device="cuda")}
    for x, y in zip(xs, ys):
        out = x @ x.T
        correct += (out.argmax(1) == y).sum().item()
        counts["seen"] += out.abs().mean().item()
    return correct, counts["seen"]
'''


def test_sfx302_sfx105_adding_into_tensor_totals_keeps_values_without_syncs():
    # the totals are device tensors already: `.item()` only synced; the tensor is added instead
    import torch

    fixed = fix_code(TENSOR_TOTALS, select=["SFX302", "SFX105"], unsafe_fixes=True)
    assert ".item()" not in fixed, fixed
    torch.manual_seed(2)
    xs = [torch.randn(64, 64, device="cuda") for _ in range(16)]
    ys = [torch.randint(0, 64, (64,), device="cuda") for _ in range(16)]
    before, n_before = count_syncs(load(TENSOR_TOTALS, "f"), xs, ys)
    after, n_after = count_syncs(load(fixed, "f"), xs, ys)
    print(f"SFX302/SFX105 tensor totals: syncs before={n_before} after={n_after}")
    for b, a in zip(before, after, strict=True):
        assert b.dtype == a.dtype and torch.equal(b, a) and not a.requires_grad
    assert n_after == 0 and n_before >= 32, (n_before, n_after)


COPIED_THEN_READ = '''\
import torch
import torch.nn.functional as F

dev = "cuda"


def validate(batches, model):
    total = 0.0
    with torch.no_grad():
        for x, y in batches:
            loss = F.mse_loss(model(x), y, size_average=False)
            total += loss.cpu().item() * x.size(0)
    return total
'''


def test_sfx302_a_total_of_copies_read_on_the_host_keeps_the_device_values():
    # BackgroundMattingV2's ``loss_total += loss.cpu().item() * batch_size``, with the legacy
    # ``size_average=False`` (a sum: 0-d); the device total keeps ``loss`` itself
    import torch

    fixed = fix_code(COPIED_THEN_READ, select=["SFX302"], unsafe_fixes=True)
    assert ".cpu()" not in fixed and "total_acc" in fixed, fixed
    torch.manual_seed(0)
    model = torch.nn.Linear(16, 16).to("cuda")
    batches = [(torch.randn(8, 16, device="cuda"), torch.randn(8, 16, device="cuda")) for _ in range(10)]
    with pytest.warns(UserWarning, match="size_average"):
        before, n_before = count_syncs(load(COPIED_THEN_READ, "validate"), batches, model)
        after, n_after = count_syncs(load(fixed, "validate"), batches, model)
    print(f"\nSFX302 (.cpu().item()): {n_before} syncs before, {n_after} after")
    assert type(before) is type(after) is float and before == after
    assert n_before == 10 and n_after == 1


LOSS_OF_A_PLACED_TARGET = '''\
import torch
import torch.nn as nn
import torch.nn.functional as F


def f(xs: list[torch.Tensor], ys: list[torch.Tensor]):
    torch.manual_seed(0)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    unet = nn.Conv2d(3, 1, 3, padding=1).to(device)
    criterion = nn.BCELoss()
    epoch_loss = 0
    for images, GT in zip(xs, ys):
        images = images.to(device)
        GT = GT.to(device)
        SR_flat = F.sigmoid(unet(images)).view(images.size(0), -1)
        GT_flat = GT.view(GT.size(0), -1)
        loss = criterion(SR_flat, GT_flat)
        epoch_loss += loss.item()
        loss.backward()
    return epoch_loss
'''

FLOAT_OF_A_CHECKED_LOSS = '''\
import torch
import torch.nn as nn


def f(xs, ys):
    torch.manual_seed(0)
    heads = nn.ModuleList([nn.Linear(8, 4), nn.Linear(8, 4)]).cuda()
    criterion = nn.CrossEntropyLoss()
    loss = 0
    for x, y in zip(xs, ys):
        iter_loss = 0
        for head in heads:
            iter_loss += criterion(head(x), y)
        iter_loss /= 2
        iter_loss.backward()
        loss += float(iter_loss)
    return loss
'''


def test_sfx302_a_loss_on_its_placed_targets_device_and_a_float_after_backward_total_exactly():
    # Image_Segmentation's BCELoss of `GT.view(n, -1)` placed on a CUDA-or-CPU device: a safe
    # fix; deeplab's `float(iter_loss)` of a name `backward()` just ran on: an unsafe one
    import torch

    torch.manual_seed(1)
    images = [torch.rand(4, 3, 8, 8) for _ in range(20)]
    masks = [(torch.rand(4, 1, 8, 8) > 0.5).float() for _ in range(20)]
    safe = fix_code(LOSS_OF_A_PLACED_TARGET, select=["SFX302"])
    assert "epoch_loss_acc +=" in safe, safe
    before, n_before = count_syncs(load(LOSS_OF_A_PLACED_TARGET, "f"), images, masks)
    after, n_after = count_syncs(load(safe, "f"), images, masks)
    assert before == after and type(before) is type(after) is float
    assert n_after < n_before, (n_before, n_after)
    xs = [torch.randn(64, 8, device="cuda") for _ in range(20)]
    ys = [torch.randint(0, 4, (64,), device="cuda") for _ in range(20)]
    unsafe = fix_code(FLOAT_OF_A_CHECKED_LOSS, select=["SFX302"], unsafe_fixes=True)
    assert "loss_acc +=" in unsafe, unsafe
    before, n_before = count_syncs(load(FLOAT_OF_A_CHECKED_LOSS, "f"), xs, ys)
    after, n_after = count_syncs(load(unsafe, "f"), xs, ys)
    assert before == after and type(before) is type(after) is float
    assert n_after < n_before // 4, (n_before, n_after)


SCRIPT = '''\
import torch

torch.manual_seed(0)
weight = torch.randn(64, 1, device="cuda")
batches = [torch.randn(256, 64) for _ in range(20)]
epoch_loss = 0.0
for x in batches:
    loss = (x.cuda().float() * 0.5).square().mean()
    epoch_loss += loss.item()
'''


def test_sfx302_total_of_a_scripts_module_level_loop(tmp_path):
    # MIRNet's train_denoising.py: the loop at module level of a script no project file imports;
    # the total is kept on the device by `syncfix apply --unsafe-fixes` (a project run: it needs
    # the index; unsafe: the batch's copy is a tensor only by the likely view)

    from click.testing import CliRunner

    from syncfix.cli import cli

    (tmp_path / ".git").mkdir()
    script = tmp_path / "train.py"
    script.write_text(SCRIPT)
    result = CliRunner().invoke(cli, ["apply", str(tmp_path), "--select", "SFX302", "--unsafe-fixes", "--no-cache"])
    after = script.read_text()
    assert "epoch_loss_acc" in after, (result.output, after)

    def run(src: str) -> float:
        scope: dict = {}
        exec(compile(src, "train.py", "exec"), scope)
        return scope["epoch_loss"]

    before, syncs_before = count_syncs(run, SCRIPT)
    fixed, syncs_after = count_syncs(run, after)
    print(f"\nSFX302 module-level total: syncs {syncs_before} -> {syncs_after}\n{after}")
    assert type(fixed) is type(before) and fixed == before
    assert syncs_after < syncs_before
