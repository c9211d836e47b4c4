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
