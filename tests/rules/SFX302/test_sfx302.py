"""Edge cases of SFX302 that must not be rewritten (or only as shown)."""

from __future__ import annotations

import json

from click.testing import CliRunner

from syncfix import check_code, fix_code
from syncfix.cli import cli

from ..support import HEAD, fix_body


def test_sfx302_while_loop_and_break():
    code = (
        "def f(vals, stop):\n"
        "    total = 0.0\n"
        "    i = 0\n"
        "    while i < len(vals):\n"
        "        t = torch.full((), vals[i], dtype=torch.float32, device=dev)\n"
        "        if stop(i):\n"
        "            break\n"
        "        total += t.item()\n"
        "        i += 1\n"
        "    return total\n"
    )
    out = fix_body(code, "SFX302")
    assert "total_acc += t.detach()" in out
    assert out.rstrip().endswith("total = total_acc.item()\n    return total")


def test_sfx302_total_in_for_else_is_not_rewritten():
    code = (
        "def f(ds):\n"
        "    total = 0.0\n"
        "    for x in torch.utils.data.DataLoader(ds):\n"
        "        total += x.to(dev).float().sum().item()\n"
        "    else:\n"
        "        print(total)\n"
        "    return total\n"
    )
    assert fix_body(code, "SFX302") == code
    # the loop needs its host value: reported, with why there is no fix
    (finding,) = check_code(HEAD + code, select=["SFX302"])
    assert finding.fix is None and "`total` is read elsewhere in the loop" in finding.message


def test_read_backs_are_written_once_per_block_and_not_reported_again():
    # SFX302's read-back before the first statement of a logging block serves the next one too
    # (nothing adds to the total in between), and SFX105 does not report the read the fix keeps
    from pathlib import Path

    import pytest

    torch = pytest.importorskip("torch")
    from ..support import load

    src = (Path(__file__).parent / "fixtures/shown_twice.in.py").read_text()
    fixed = fix_code(src, select=["SFX302"], unsafe_fixes=True)
    assert fixed.count("tr_loss = tr_loss_acc.item()") == 2, fixed  # in the block, after the loop
    again = check_code(fixed, select=["SFX105", "SFX302"], unsafe_fixes=True)
    assert not [f for f in again if "tr_loss_acc.item()" in fixed.splitlines()[f.line - 1]], again

    class Writer:
        def __init__(self):
            self.calls = []

        def add_scalar(self, *args):
            self.calls.append(args)

    torch.manual_seed(0)
    model = torch.nn.Linear(4, 3)
    data = [(torch.randn(8, 4), torch.randint(0, 3, (8,))) for _ in range(7)]
    results = []
    for code in (src, fixed):
        m = torch.nn.Linear(4, 3)
        m.load_state_dict(model.state_dict())
        opt = torch.optim.SGD(m.parameters(), lr=0.1)
        writer = Writer()
        results.append((load(code, "train")(m, data, opt, writer, 3), writer.calls))
    assert results[0] == results[1] and type(results[1][0]) is float


EVALUATE = '''
import torch


def evaluate(model, val_loader, criterion):
    total = 0.0
    for x, y in val_loader:
        loss = criterion(model(x), y)
        total += loss.item()
    return total
'''


def test_a_likely_summand_on_an_unnamed_device_states_both_facts():
    (finding,) = check_code(EVALUATE, select=["SFX302"], unsafe_fixes=True)
    assert finding.fix is not None and finding.fix.applicability == "unsafe"
    why = finding.fix.description
    assert "likely a one-element tensor" in why and "MPS has no float64" in why


def test_a_module_that_mentions_mps_gets_no_float64_accumulator():
    src = EVALUATE.replace('\ndef evaluate', '\n# accelerator: "cuda", "mps" or "cpu"\ndef evaluate')
    (finding,) = check_code(src, select=["SFX302"], unsafe_fixes=True)
    assert finding.fix is None
    assert "mentions MPS" in finding.message


def test_declared_devices_bring_the_float64_accumulator_back(tmp_path):
    src = EVALUATE.replace('\ndef evaluate', '\n# accelerator: "cuda", "mps" or "cpu"\ndef evaluate')
    (tmp_path / "pyproject.toml").write_text('[tool.syncfix.torch]\ndevices = ["cuda", "cpu"]\n')
    (tmp_path / "train.py").write_text(src)
    out = CliRunner().invoke(
        cli, ["check", "--no-cache", "--unsafe-fixes", "--select", "SFX302", "-o", "json", "--exit-zero", str(tmp_path)]
    )
    (finding,) = json.loads(out.output)
    assert finding["fix"]["applicability"] == "unsafe"
    assert "MPS" not in finding["fix"]["message"]


def test_a_with_that_may_swallow_an_error_keeps_the_total_on_the_host():
    """Beside the tqdm case (a progress bar lets errors through): `suppress` gets no fix at all."""
    from pathlib import Path

    from syncfix import check_code, fix_code

    src = (Path(__file__).parent / "fixtures/swallowing_with_untouched.in.py").read_text()
    assert fix_code(src, select=["SFX302"], unsafe_fixes=True) == src
    (f,) = check_code(src, select=["SFX302"])
    assert "might suppress an exception" in f.message
    with_bar = src.replace("contextlib.suppress(StopIteration)", "contextlib.nullcontext()")
    assert fix_code(with_bar, select=["SFX302"], unsafe_fixes=True) != with_bar


def test_a_meter_updated_under_an_if_is_said_to_sync_as_often_as_the_if_lets_it():
    from pathlib import Path

    src = (Path(__file__).parent / "fixtures/meter_untouched.in.py").read_text()
    lines = src.splitlines()
    messages = {lines[f.line - 1].strip(): f.message for f in check_code(src, select=["SFX302"])}
    assert "every iteration" in messages["losses.update(loss.item(), images.size(0))  # expect: SFX302"]
    logged = messages["logger.update(loss=loss.item())  # expect: SFX302"]
    assert "one sync each time its `if` lets it run" in logged and "every iteration" not in logged
    # a meter may also take Python numbers, keep a deque or be a library's: the advice says when
    # a device sum applies instead of prescribing a line of its code
    for message in messages.values():
        assert "self.sum +=" not in message and "where the meter is yours" in message


def test_a_weight_named_for_a_size_is_a_count():
    # ogb's link-prediction loops: `num_examples = pos_out.size(0)` on the line before the total
    src = (
        "import torch\n"
        "def train(model, xs: torch.Tensor):\n"
        "    total = 0\n"
        "    for x in xs.cuda():\n"
        "        out = model(x).float()\n"
        "        loss = (out * 2).sum()\n"
        "        n = out.size(0)\n"
        "        total += loss.item() * n\n"
        "    return total\n"
    )
    (finding,) = check_code(src, select=["SFX302"])
    assert finding.fix is not None, finding.message
    assert "torch.float64) * n).to(total_acc.device)" in fix_code(src, select=["SFX302"], unsafe_fixes=True)


def test_a_name_bound_to_a_tensors_size_is_a_count():
    src = (
        "import torch\n"
        "def train(xs: torch.Tensor):\n"
        "    total = 0\n"
        "    for x in xs.cuda():\n"
        "        out = torch.relu(x).float()\n"
        "        n = out.size(0)\n"
        "        total += out.sum().item() * n\n"
        "    return total\n"
    )
    (finding,) = check_code(src, select=["SFX302"])
    assert finding.fix is not None and "not provably a count" not in finding.message, finding.message


TWO_TOTALS = """
import torch
import torch.nn.functional as F


def evaluate(model, loader):
    total = 0.0
    correct = 0
    for x, y in loader:
        x = x.to("cuda", non_blocking=True)
        y = y.to("cuda", non_blocking=True)
        out = model(x)
        total += F.nll_loss(out, y, reduction="sum").item()
        correct += (out.argmax(1) == y).sum().item()
    return total / len(loader), correct


def main(model, loader):
    for epoch in range(10):
        print(evaluate(model, loader))
"""


def test_the_fixed_totals_read_after_their_loop_are_not_reported_again():
    # the fix's ``total = total_acc.item()`` and ``correct = correct_acc.item()``: two 0-d
    # totals of a float and an int dtype (added to in place, so 0-d and of their dtype), one
    # read per dtype kind, nothing to merge (SFX301 said "not provably one-element")
    fixed = fix_code(TWO_TOTALS, unsafe_fixes=True)
    assert "total = total_acc.item()" in fixed and "correct = correct_acc.item()" in fixed, fixed
    assert check_code(fixed, unsafe_fixes=True) == []


def test_a_copy_to_the_host_before_the_read_is_part_of_the_read():
    # BackgroundMattingV2's validation: ``loss_total += loss.cpu().item() * batch_size``
    source = (
        "import torch\nimport torch.nn.functional as F\n\n\n"
        "def valid(model, loader):\n"
        "    model = model.cuda()\n"
        "    total = 0.0\n"
        "    for x, y in loader:\n"
        "        x, y = x.cuda(), y.cuda()\n"
        "        loss = F.mse_loss(model(x), y)\n"
        "        total += loss.cpu().item() * x.size(0)\n"
        "    return total\n"
    )
    (found,) = check_code(source, select=["SFX302"], unsafe_fixes=True)
    assert found.fix is not None
    fixed = fix_code(source, select=["SFX302"], unsafe_fixes=True)
    assert "loss.detach()" in fixed and ".cpu()" not in fixed


def test_a_meter_of_a_class_this_file_defines_is_named_with_its_line():
    # WideResNet-pytorch's `losses = AverageMeter()`, its class at the bottom of train.py
    src = (
        "import torch\n\n\ndef train(loader, model, criterion):\n    losses = AverageMeter()\n"
        "    for x, y in loader:\n        loss = criterion(model(x.cuda()), y.cuda())\n"
        "        losses.update(loss.item(), x.size(0))\n\n\nclass AverageMeter:\n"
        "    def update(self, val, n=1):\n        self.sum = getattr(self, 'sum', 0) + val * n\n"
    )
    (f,) = check_code(src, select=["SFX302"])
    assert "the meter is `AverageMeter`, a class of this file (line 11)" in f.message
    assert "where the meter is yours" not in f.message
