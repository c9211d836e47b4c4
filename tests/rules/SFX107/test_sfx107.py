"""SFX107 (empty-cache-in-loop): its own tests; the fixtures are checked by tests/rules/test_rules.py."""

from __future__ import annotations

from syncfix import check_code, fix_code

LOOP = "import torch\n\ndef train(model, loader, opt):\n    for x in loader:\n        model(x).backward()\n"


def test_sfx107_says_how_often_and_changes_nothing():
    src = LOOP + "        opt.step()\n        torch.cuda.empty_cache()\n"
    (finding,) = check_code(src, select=["SFX107"])
    assert "every iteration of its loop" in finding.message and "no fix" in finding.message
    assert finding.fix is None
    assert fix_code(src, select=["SFX107"], unsafe_fixes=True) == src


def test_sfx107_under_an_if_says_so():
    src = LOOP + "        if opt.step():\n            torch.cuda.empty_cache()\n"
    (finding,) = check_code(src, select=["SFX107"])
    assert "each time its `if` lets it run" in finding.message


def test_sfx107_in_one_time_code_is_quiet_unless_asked():
    src = "import torch\n\ndef setup(model):\n    model.cuda()\n    torch.cuda.empty_cache()\n"
    assert check_code(src, select=["SFX107"]) == []
    assert [f.code for f in check_code(src, select=["SFX107"], include_cold=True)] == []  # not in a loop


def test_sfx107_once_an_epoch_is_quiet():
    # BLIP's ``torch.cuda.empty_cache()`` at the end of each epoch, after its evaluation; the
    # same call in the loop over the epoch's batches is reported
    src = (
        "import torch\n\n\ndef main(model, loader, epochs):\n    for epoch in range(epochs):\n"
        "        for x in loader:\n            model(x).sum().backward()\n            torch.cuda.empty_cache()\n"
        "        torch.cuda.empty_cache()\n"
    )
    assert [f.line for f in check_code(src, select=["SFX107"])] == [8]
