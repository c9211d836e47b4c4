"""SFX302 says truly why a running total stays on the host."""

from __future__ import annotations

from syncfix.api import check_code

SRC = """\
import torch


def accuracy(network, xs, y):
    correct = 0
    for x in xs:
        p = network(x.cuda())
        if p.size(1) == 1:
            correct += p.gt(0).eq(y).sum().item()
        else:
            correct += p.argmax(1).eq(y).sum().item()
{extra}
    return correct
"""


def _reasons(extra: str) -> list[str]:
    found = check_code(SRC.format(extra=extra), path="train.py", unsafe_fixes=True)
    return [f.message.split("no fix: ")[1] for f in found if f.code == "SFX302"]


def test_a_total_added_to_in_each_branch_is_not_said_to_be_read():
    reasons = _reasons("")
    assert len(reasons) == 2 and all("added to in more than one statement" in r for r in reasons)


def test_a_total_read_in_the_loop_is_said_to_be_read():
    reasons = _reasons("        print(correct)")
    assert reasons and all("is read elsewhere in the loop" in r for r in reasons)


def test_a_count_converted_with_float_is_said_to_be_a_count():
    # Person_reID's ``running_corrects += float(torch.sum(preds == labels.data))``
    src = (
        "import torch\n\ndef epoch(model, xs: list[torch.Tensor], y: torch.Tensor):\n"
        "    correct = 0.0\n"
        "    for x in xs:\n"
        "        preds = model(x.cuda()).argmax(1)\n"
        "        correct += float(torch.sum(preds == y.data))\n"
        "    return correct\n"
    )
    (found,) = [f for f in check_code(src, path="train.py", unsafe_fixes=True) if f.code == "SFX302"]
    assert found.fix is None
    assert "an integer count converted with `float()`" in found.message


def test_a_total_added_to_at_two_depths_and_logged_every_n_steps_names_both_additions():
    # transformer-xl's step: one addition per chunk in an inner loop, one in the ``else``; the
    # total is logged and reset every N steps (a read the fix would keep), so the blocker is the
    # second addition, not "read elsewhere" or "not bound once before the loop"
    src = (
        "import torch\nimport torch.nn.functional as F\n\n\n"
        "def train(model, loader, log_interval, chunk):\n"
        "    train_loss = 0\n"
        "    for step, (x, y) in enumerate(loader):\n"
        "        if chunk > 1:\n"
        "            for i in range(chunk):\n"
        "                loss = F.cross_entropy(model(x), y)\n"
        "                train_loss += loss.float().item()\n"
        "        else:\n"
        "            loss = F.cross_entropy(model(x), y)\n"
        "            train_loss += loss.float().item()\n"
        "        if step % log_interval == 0:\n"
        "            print(train_loss / log_interval)\n"
        "            train_loss = 0\n"
    )
    found = [f for f in check_code(src, path="train.py", unsafe_fixes=True) if f.code == "SFX302"]
    reasons = sorted(f.message.split("no fix: ")[1] for f in found)
    assert len(reasons) == 2
    assert "added to in more than one statement (also at line 11)" in reasons[0]
    assert "added to in more than one statement (also at line 14)" in reasons[1]


def test_a_summand_no_device_total_keeps_is_the_reason_not_an_edit_that_gets_no_fix():
    # FocalNet's grad norm: `total_norm += param_norm.item() ** norm_type`, the total starting at
    # the int 0; "start it at 0.0 for a fix" would be false advice, as the power still blocks one
    src = (
        "import torch\n\n\ndef grad_norm(parameters, norm_type=2):\n    norm_type = float(norm_type)\n"
        "    total_norm = 0\n    for p in parameters:\n        param_norm = p.grad.data.norm(norm_type)\n"
        "        total_norm += param_norm.item() ** norm_type\n    return total_norm\n\n\n"
        "def train(model, loader):\n    for x in loader:\n        grad_norm(model.parameters())\n"
    )
    (found,) = [f for f in check_code(src, path="utils.py") if f.code == "SFX302"]
    assert "is not a value or a value times a count" in found.message
    assert "start it at 0.0" not in found.message


SCRIPT = """\
import torch
import torch.nn.functional as F

model = torch.nn.Linear(4, 1).cuda()
batches = [(torch.randn(8, 4), torch.randn(8, 1)) for _ in range(4)]
for epoch in range(3):
    epoch_loss = 0.0
    for x, y in batches:
        loss = F.mse_loss(model(x.cuda()), y.cuda())
        loss.backward()
        epoch_loss += loss.item()
    print(epoch, epoch_loss)
"""


def test_a_total_of_a_scripts_module_level_loop_is_fixed_where_no_project_file_imports_it(tmp_path):
    # MIRNet's train_denoising.py: the training loop at module level, in a script nothing imports;
    # where another file imports the module, it may read the total: a module global, no fix
    import json

    from click.testing import CliRunner

    from syncfix.cli import cli

    (tmp_path / ".git").mkdir()
    (tmp_path / "train.py").write_text(SCRIPT)

    def found() -> dict:
        result = CliRunner().invoke(cli, ["check", str(tmp_path), "--select", "SFX302", "--unsafe-fixes", "--no-cache", "-o", "json"])
        (finding,) = json.loads(result.stdout)
        return finding

    assert found()["fix"] is not None
    (tmp_path / "other.py").write_text("import train\n")
    finding = found()
    assert finding["fix"] is None and "`epoch_loss` is a module global" in finding["message"]
