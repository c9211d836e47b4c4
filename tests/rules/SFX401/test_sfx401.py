"""Edge cases of SFX401 that must not be rewritten."""

from __future__ import annotations

from syncfix import check_code

from ..support import HEAD, fix_body


def test_sfx401_log_followed_by_break_does_not_move():
    code = (
        "def f(ds, opt, stop):\n"
        "    model = torch.nn.Linear(4, 1).to(dev)\n"
        "    for x in torch.utils.data.DataLoader(ds):\n"
        "        loss = torch.nn.functional.mse_loss(model(x.to(dev)), x.to(dev)[:, :1])\n"
        "        print(loss.item())\n"
        "        if stop():\n"
        "            break\n"
        "        loss.backward()\n"
        "        opt.step()\n"
    )
    assert fix_body(code, "SFX401") == code
    assert [f.code for f in check_code(HEAD + code, select=["SFX401"])] == ["SFX401"]
