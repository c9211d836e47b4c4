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


def test_sfx401_a_list_append_after_the_log_is_no_gpu_work():
    # pytorch-cifar100's lr_finder: after the step, the log line is followed only by
    # `learning_rate.append(optimizer.param_groups[0]['lr'])` onto a list: nothing to move past
    code = (
        "def f(ds, opt):\n"
        "    model = torch.nn.Linear(4, 1).to(dev)\n"
        "    lrs = []\n"
        "    for x in torch.utils.data.DataLoader(ds):\n"
        "        loss = torch.nn.functional.mse_loss(model(x.to(dev)), x.to(dev)[:, :1])\n"
        "        loss.backward()\n"
        "        opt.step()\n"
        "        print(loss.item())\n"
        "        lrs.append(opt.param_groups[0]['lr'])\n"
    )
    assert check_code(HEAD + code, select=["SFX401"]) == []
    # an append onto something that is not provably a list may be anything
    other = code.replace("    lrs = []\n", "    lrs = make_log()\n")
    assert [f.code for f in check_code(HEAD + other, select=["SFX401"])] == ["SFX401"]
