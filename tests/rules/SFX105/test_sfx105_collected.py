"""SFX105 advises a non-blocking copy and one wait only where the copied value is only
collected: not where the loop reads the container again (it would read an unfilled buffer)."""

from __future__ import annotations

import pytest

from syncfix.api import check_code

LOOP = """\
import torch


def log_images(images: dict, clamp: bool):
    for k in images:
        if isinstance(images[k], torch.Tensor):
            images[k] = images[k].detach().float().cpu()
{after}
    return images


def step(images):
    for _ in range(3):
        log_images(images, True)
"""


def _message(after: str) -> str:
    (found,) = [f for f in check_code(LOOP.format(after=after), path="train.py") if f.code == "SFX105"]
    return found.message


def test_a_container_read_again_in_the_loop_is_not_only_collected():
    read = "            if clamp:\n                images[k] = torch.clamp(images[k], -1.0, 1.0)"
    assert "only collected" not in _message(read)


def test_a_container_only_written_in_the_loop_is_collected():
    assert "the value is only collected here" in _message("")


def test_an_array_stored_into_a_container_syncfix_cannot_name_is_not_only_collected():
    # RETRO's `memmap[sl] = model(x).cpu().numpy()`: a numpy buffer copies the values at once,
    # so a non-blocking copy would store bytes not yet written; a tensor stored into a dict keeps it
    src = (
        "import torch\n\n\ndef embed(chunks, out, slices):\n    for sl in slices:\n"
        "        out[sl] = torch.as_tensor(chunks[sl], device='cuda').mul(2).cpu(){}\n"
    )
    for tail, collected in ((".numpy()", False), ("", True)):
        (found,) = [f for f in check_code(src.format(tail), path="embed.py") if f.code == "SFX105"]
        assert ("only collected" in found.message) is collected, tail


GENERATE = """\
import torch


def generate(model, prompt, stop_tokens, max_length):
    generated = []
    token = model(prompt).argmax(-1)
    for _ in range(max_length):
        {check}
        token = model(token).argmax(-1)
        generated.append(token.item())
    return torch.tensor(generated)
"""


def test_a_value_the_loop_reads_again_is_not_advised_to_be_collected():
    # the stop check at the loop's top reads the token anyway: collecting it saves no sync
    check = "if token.item() in stop_tokens:\n            break"
    (found,) = [f for f in check_code(GENERATE.format(check=check), path="gen.py") if f.code == "SFX105"]
    assert "reads `token` on the host at line 8 too" in found.message
    assert "only collected" not in found.message
    for check in ("pass", "if _ % 100 == 0:\n            print(token.item())"):
        # no other read, or one only every 100 steps: collecting saves the other 99
        (found,) = [f for f in check_code(GENERATE.format(check=check), path="gen.py") if f.code == "SFX105"]
        assert "the value is only collected here" in found.message


TWO_BRANCHES = """\
import torch


def train(model, loader, use_amp):
    losses = []
    for x in loader:
        if use_amp:
            loss = model(x)
            losses.append(loss.item())
        else:
            loss = model(x)
            losses.append(loss.item())
        {after}
    return losses
"""


def test_a_read_in_the_other_branch_of_an_if_is_not_a_read_again():
    # PatchTST's train loop: one `train_loss.append(loss.item())` under `if use_amp:`, one in
    # its `else:`; only one runs on a pass, so each is only collected
    found = [f for f in check_code(TWO_BRANCHES.format(after="pass"), path="t.py") if f.code == "SFX105"]
    assert len(found) == 2 and all("the value is only collected here" in f.message for f in found)
    # a read after the `if`, on every pass, reads it again
    after = "print(loss.item())"
    found = [f for f in check_code(TWO_BRANCHES.format(after=after), path="t.py") if f.code == "SFX105"]
    assert any("reads `loss` on the host at line 13 too" in f.message for f in found)


def test_a_module_is_neither_copied_to_the_gpu_nor_back():
    """pytorch/examples' parameter server: ``m = rpc_sync(...).cuda()`` then
    ``m.cpu().parameters()``: ``m`` is a model (its ``.parameters()``), so neither its ``.cuda()``
    nor its ``.cpu()`` copies a tensor."""
    src = (
        "import torch\n\n\nclass Trainer:\n"
        "    def train(self, fetch, batches):\n"
        "        m = fetch(None).cuda()\n"
        "        for inputs, labels in batches:\n"
        "            self.loss_fn(m(inputs), labels).backward()\n"
        "            m = fetch([p.grad for p in m.cpu().parameters()]).cuda()\n"
    )
    assert check_code(src, path="trainer.py") == []
    tensor = src.replace("m.cpu().parameters()", "m.cpu().flatten()")
    assert {f.code for f in check_code(tensor, path="trainer.py")} == {"SFX101", "SFX105"}


def test_an_array_view_of_the_copy_appended_is_only_collected():
    # stylegan2's ppl.py: `distances.append(dist.to("cpu").numpy())`, joined after the loop
    src = (
        "import numpy as np\nimport torch\n\n\ndef ppl(batches, g):\n    distances = []\n"
        "    for x in batches:\n        dist = g(x.cuda()).sum(1)\n"
        "        distances.append(dist.to('cpu').numpy())\n    return np.concatenate(distances, 0)\n"
    )
    (found,) = [f for f in check_code(src, path="ppl.py") if f.code == "SFX105"]
    assert "the value is only collected here" in found.message
    read = src.replace("        distances.append(dist.to('cpu').numpy())\n", "        distances.append(dist.to('cpu').numpy().mean())\n")
    (found,) = [f for f in check_code(read, path="ppl.py") if f.code == "SFX105"]
    assert "only collected" not in found.message


@pytest.mark.parametrize("owner", ["self", "stats"])
def test_a_copy_handed_to_a_method_of_the_modules_own_class_is_not_only_collected(owner):
    # stylegan2's FeatureStats.append sums the array it is given at once: a non-blocking copy
    # read there would read memory the copy has not filled yet
    src = (
        "import torch\n\nclass Stats:\n    def append(self, x):\n        self.total = x.sum()\n\n"
        "    def append_torch(self, xs):\n        for x in xs:\n"
        f"            {owner}.append(x.cpu().numpy())\n"
    )
    if owner == "stats":
        src = src.replace("    def append_torch(self, xs):\n", "    def append_torch(self, xs, stats):\n")
    messages = [f.message for f in check_code(src, select=["SFX105"])]
    assert messages and not any("only collected" in m for m in messages)
    # a list the function builds is collected, as before
    listed = src.replace(f"            {owner}.append", "            out.append").replace(
        "        for x in xs:\n", "        out = []\n        for x in xs:\n"
    )
    assert any("only collected" in f.message for f in check_code(listed, select=["SFX105"]))


SHOWN = """\
import numpy as np
import torch

criterion = torch.nn.CrossEntropyLoss().cuda()


def train(model, loader):
    train_loss = []
    for i, (x, y) in enumerate(loader):
        loss = criterion(model(x.cuda()), y.cuda())
        train_loss.append(loss.item())
        if (i + 1) % 100 == 0:
            print(np.asarray(train_loss)[-100:].mean(0))
"""


def test_a_list_read_in_the_loop_is_named_with_its_line():
    # pytorch-vqvae: the list is shown every 100 steps, not read after the loop
    (found,) = [f for f in check_code(SHOWN, path="train.py") if f.code == "SFX105"]
    assert "`train_loss` is read in the loop at line 13" in found.message
    assert "if the list is read after the loop" not in found.message


STORED = """\
import numpy as np
import torch


def embed(batches: list, n: int, width: int):
    {made}
    for i, batch in enumerate(batches):
        out[{where}] = (batch.cuda() * 2).cpu()
    return out
"""


@pytest.mark.parametrize(
    ("made", "where", "collected"),
    [
        ("out = {}", "i", True),  # a dict keeps the tensor itself
        ("out = [None] * n", "i", True),
        ("out = np.zeros((n, width))", "i", False),  # an array copies the values at once
        ("out = torch.zeros(n, width)", "i", False),  # so does a tensor
        ("out = [None] * n", "i:i + 1", False),  # a slice store iterates the values at once
    ],
)
def test_only_a_store_that_keeps_the_tensor_itself_collects_it(made, where, collected):
    source = STORED.format(made=made, where=where)
    (found,) = [f for f in check_code(source, path="embed.py") if f.code == "SFX105"]
    assert ("the value is only collected here" in found.message) is collected, found.message


def test_rows_copied_one_by_one_are_advised_to_be_copied_once():
    # VideoMAE's final_test: `output.data[i].cpu()` per row of each batch; a tensor the loop
    # writes is not advised so
    src = (
        "import torch\n\n\ndef final_test(model, loader, out):\n    for images in loader:\n"
        "        output = model(images.cuda())\n        for i in range(output.size(0)):\n"
        "            out.append(str(output.data[i].cpu().numpy().tolist()))\n{extra}"
    )
    (found,) = [f for f in check_code(src.format(extra=""), path="evaluate.py") if f.code == "SFX105"]
    assert "copy it once, before the loop (`output.data.cpu()`)" in found.message
    written = src.format(extra="            output[i] = 0\n")
    (found,) = [f for f in check_code(written, path="evaluate.py") if f.code == "SFX105"]
    assert "copy it once" not in found.message


def test_only_rows_counted_by_range_are_advised_to_be_copied_once():
    # peft's `for category in progress_bar: [layer_dict[category].cpu() for ...]`: keys, no rows
    src = (
        "import torch\n\n\ndef export(weights, categories, out):\n"
        "    for category in categories:\n        out.write(str(weights[category].cuda().cpu().numpy()))\n"
    )
    (found,) = [f for f in check_code(src, path="export.py") if f.code == "SFX105"]
    assert "copy it once" not in found.message
