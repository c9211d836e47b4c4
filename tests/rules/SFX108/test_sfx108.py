"""SFX108 (grad-scaler-step): its own tests; the fixtures are checked by tests/rules/test_rules.py."""

from __future__ import annotations

from syncfix import check_code, fix_code

STEP = (
    "import torch\n\ndef train(model, loader, opt):\n    scaler = torch.amp.GradScaler({args})\n"
    "    for x in loader:\n        scaler.scale(model(x)).backward()\n        scaler.step(opt)\n"
    "        scaler.update()\n"
)


def test_sfx108_hedges_what_it_cannot_see_and_changes_nothing():
    src = STEP.format(args="enabled=amp")
    (finding,) = check_code(src, select=["SFX108"])
    assert "when the scaler is enabled" in finding.message
    assert "unless `opt` was built with `fused=True`" in finding.message
    assert "every iteration of its loop" in finding.message and finding.fix is None
    assert fix_code(src, select=["SFX108"], unsafe_fixes=True) == src


def test_sfx108_says_plainly_what_it_sees():
    src = STEP.format(args="").replace(
        "    for x", "    opt = torch.optim.Adam(model.parameters(), fused=False)\n    for x"
    )
    (finding,) = check_code(src, select=["SFX108"])
    assert "unless" not in finding.message and "when the scaler" not in finding.message


def test_sfx108_by_name_needs_the_file_to_name_grad_scaler():
    src = "import torch\n\ndef fit(loader, opt, scaler):\n    for x in loader:\n        scaler.step(opt)\n"
    assert check_code(src, select=["SFX108"]) == []
    assert [f.code for f in check_code("from torch.amp import GradScaler\n" + src, select=["SFX108"])] == ["SFX108"]
