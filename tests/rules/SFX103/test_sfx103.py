"""SFX103 with SFX101: the rules compose."""

from __future__ import annotations

from syncfix import check_code, fix_code


def test_rules_compose_pin_then_non_blocking():
    """SFX103 pins the loader, SFX101 then makes the (fresh, pinned) batch copy non-blocking."""
    src = (
        "import torch\nfrom torch.utils.data import DataLoader, TensorDataset\ndef f(model):\n"
        "    ds = TensorDataset(torch.randn(64, 3))\n"
        "    for x in DataLoader(ds, batch_size=8):\n        model(x.cuda())\n"
    )
    out = fix_code(src, select=["SFX101", "SFX103"])
    assert "DataLoader(ds, batch_size=8, pin_memory=True)" in out
    assert 'model(x.to("cuda", non_blocking=True))' in out


def test_no_pin_where_sfx101_makes_a_copy_of_a_batch_written_later():
    """SFX101 makes ``x.cuda()`` of the pageable batch non-blocking (exact: the driver stages it
    at the call); pinning it in the same run would let ``augment_(x)`` reach the copy."""
    src = (
        "import torch\nfrom torch.utils.data import DataLoader, TensorDataset\n"
        "def augment_(t):\n    t.mul_(0.5)\n"
        "def train(model):\n"
        "    loader = DataLoader(TensorDataset(torch.randn(1024, 16)), batch_size=64)\n"
        "    for (x,) in loader:\n        xg = x.cuda()\n        augment_(x)\n        model(xg)\n"
    )
    out = fix_code(src, select=["SFX101", "SFX103"])
    assert 'xg = x.to("cuda", non_blocking=True)' in out
    assert "pin_memory" not in out


def test_message_names_where_batches_are_copied_and_only_the_reasons_that_hold():
    """The finding says where the fix pays (the copy's line); an unsafe fix says which of its
    conditions is unproven here (the device), not every condition the rule has."""
    from syncfix import check_code

    src = (
        "import torch\nimport torchvision\nfrom torch.utils.data import DataLoader\n"
        "def train(model):\n"
        "    device = 'cuda' if torch.cuda.is_available() else 'cpu'\n"
        "    ds = torchvision.datasets.CIFAR10(root='d', download=True)\n"
        "    loader = DataLoader(ds, batch_size=8)\n"
        "    for x, y in loader:\n"
        "        x = x.to(device)\n"
        "        model(x)\n"
    )
    (finding,) = [f for f in check_code(src, select=["SFX103"]) if f.code == "SFX103"]
    assert "pageable memory (line 9): set pin_memory=True" in finding.message
    assert finding.fix is not None
    assert "the device may be the CPU" in finding.fix.description
    assert "collate_fn" not in finding.fix.description
    assert "used outside the loops" not in finding.fix.description
    assert "GPU tensors" not in finding.fix.description


def test_the_condition_a_copy_runs_under_is_quoted():
    # PointNet's train_classification.py: `if not args.use_cpu:` (the message named `use_cuda`)
    src = (
        "import torch\n"
        "import torch.nn.functional as F\n"
        "from torch.utils.data import DataLoader, TensorDataset\n"
        "def train(args, weight: torch.Tensor, optimizer, n: int):\n"
        "    loader = DataLoader(TensorDataset(torch.randn(n, 32), torch.randint(0, 10, (n,))), batch_size=128)\n"
        "    for inputs, targets in loader:\n"
        "        if not args.use_cpu:\n"
        "            inputs = inputs.cuda()\n"
        "        loss = F.cross_entropy(F.linear(inputs, weight), targets)\n"
        "        loss.backward()\n"
        "        optimizer.step()\n"
    )
    (finding,) = check_code(src, select=["SFX103"])
    assert finding.fix is not None
    assert "(`not args.use_cpu`, line 7)" in finding.fix.description


def test_a_nested_loop_over_another_loader_is_that_loaders_copies():
    from pathlib import Path

    src = (Path(__file__).parent / "fixtures" / "validation_inside.in.py").read_text()
    messages = {f.line: f.message for f in check_code(src, path="t.py") if f.code == "SFX103"}
    assert "(lines 12, 13)" in messages[9] and "under" not in messages[9].split(":", 1)[0]
    assert "(line 18)" in messages[10]


def test_a_batch_copy_copied_again_is_no_copy_of_the_loader():
    from pathlib import Path

    src = (Path(__file__).parent / "fixtures" / "copied_again.in.py").read_text()
    (finding,) = [f for f in check_code(src, path="t.py") if f.code == "SFX103"]
    assert "(line 12)" in finding.message  # not line 16's `net_d(x_t.cuda())` of the copy
