"""SFX103 with SFX101: the rules compose."""

from __future__ import annotations

from syncfix import fix_code


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
