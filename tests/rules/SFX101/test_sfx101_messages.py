"""An unsafe SFX101 fix states every fact it rests on: the source's, and the device's when
syncfix cannot name it (another accelerator may read host memory after a non-blocking call)."""

from __future__ import annotations

import pytest

from syncfix.api import check_code

SRC = """\
import numpy as np
import torch
{device}

def step(model, frames{param}):
    for im in frames:
        x = torch.from_numpy(im).to(device)
        model(x)
"""


@pytest.mark.parametrize(
    ("device", "param", "names_device"),
    [("", ", device", True), ('device = torch.device("cuda")\n', "", False)],
)
def test_the_device_fact_is_stated_where_the_fix_rests_on_it(device, param, names_device):
    source = SRC.format(device=device, param=param)
    (found,) = [f for f in check_code(source, path="train.py", unsafe_fixes=True) if f.code == "SFX101"]
    assert found.fix is not None
    assert "numpy's own" in found.fix.description
    assert ("device is not provably CUDA" in found.fix.description) is names_device


ALREADY_THERE = '''import torch
def main(args):
    device = torch.device("cuda" if torch.cuda.is_available() and args.cuda else "cpu")
    rewards = torch.zeros((4, 2)).to(device)
    for it in range(10):
        rewards[it % 4] = 1.0
        advantages = torch.zeros_like(rewards).to(device)
        returns = (advantages + rewards).to(device)
'''


def test_a_tensor_placed_with_the_same_device_expression_is_not_copied():
    # cleanrl's `advantages = torch.zeros_like(rewards).to(device)`: `.to` returns the tensor
    # itself, so there is no copy and no wait to report
    from syncfix import check_code

    assert [f.line for f in check_code(ALREADY_THERE, select=["SFX101"])] == [4]  # the one real copy
    # a device name bound twice may mean two devices: the copy may be real
    rebound = ALREADY_THERE.replace("    for it in range(10):", '    device = "cuda:1"\n    for it in range(10):')
    assert [f.line for f in check_code(rebound, select=["SFX101"])][:2] == [4, 8]


def test_a_copy_that_may_be_device_to_host_is_not_called_one_to_the_gpu():
    # dinov2's feature gathering: the gathered tensor may be on CUDA and the device the CPU
    source = (
        "import torch\n\n\ndef extract(model, loader, gather, on_cpu):\n"
        "    device = torch.device('cpu') if on_cpu else torch.device('cuda')\n"
        "    for x in loader:\n        feats = torch.cat(gather(model(x))).to(device)\n        print(feats)\n"
    )
    (found,) = [f for f in check_code(source, path="train.py") if f.code == "SFX101"]
    assert found.fix is None
    assert found.message.startswith("Possibly blocking host-to-device copy: if the tensor is on the CPU")
    assert "device-to-host copy, whose result the CPU must wait for" in found.message


def test_a_copy_to_another_tensor_may_convert_its_dtype():
    """fairseq's ``torch.full(...).to(src_tokens)``: an argument syncfix cannot name may be
    another tensor, whose dtype the copy also takes; NaN and inf convert differently on the GPU,
    so the fix says it rests on that (a name that says it is a device does not)."""
    from syncfix import check_code

    src = (
        "import math\nimport torch\n\n\n"
        "def step(n, tokens, device, self):\n"
        "    for _ in range(n):\n"
        "        a = torch.full((3,), math.inf).to(tokens)\n"
        "        b = torch.full((3,), math.inf).to(device)\n"
        "        c = torch.full((3,), math.inf).to('cuda', torch.int64)\n"
        "        d = torch.full((3,), math.inf).to(self.gpu_id)\n"
        "        e = torch.full((3,), math.inf).to(get_model_device(self))\n"
        "        f = torch.full((3,), math.inf).to(tokens[0].device)\n"
        "        print(a, b, c, d, e, f)\n"
    )
    fixes = {f.line: f.fix.description for f in check_code(src, select=["SFX101"], unsafe_fixes=True)}
    assert "converting alike" in fixes[7] and "converting alike" not in fixes[8]
    assert "converting alike" in fixes[9] and ";:" not in fixes[7] + fixes[9]
    assert "converting alike" not in fixes[10] + fixes[11] + fixes[12]


def test_an_array_viewing_another_frameworks_buffer_is_not_called_numpys_own():
    # score_sde's `torch.from_numpy(batch["image"]._numpy())`: TensorFlow's buffer, "to avoid
    # copy"; `t.numpy()` of a tensor may be a pinned buffer too
    for view in ("im._numpy()", "im.numpy()"):
        source = SRC.format(device='device = torch.device("cuda")\n', param="").replace("from_numpy(im)", f"from_numpy({view})")
        (found,) = [f for f in check_code(source, path="train.py", unsafe_fixes=True) if f.code == "SFX101"]
        assert found.fix is not None and "numpy's own" not in found.fix.description
        assert "origin is unknown" in found.fix.description


def test_a_legacy_constructor_of_a_range_is_a_fresh_cpu_tensor():
    # the SSD tutorial's `torch.LongTensor(range(n_objects)).to(device)` in its loss
    source = (
        "import torch\n\ndevice = torch.device('cuda')\n\n\ndef loss(boxes):\n    for b in boxes:\n"
        "        idx = torch.LongTensor(range(len(b))).to(device)\n        b[idx]\n"
    )
    (found,) = [f for f in check_code(source, path="model.py") if f.code == "SFX101"]
    assert found.fix is not None and found.fix.applicability.value == "safe"


def test_a_legacy_constructor_of_anything_is_a_host_tensor_whose_memory_may_be_shared():
    # fast-reid's DSR distance: `Proj_M = torch.FloatTensor(M[k]); Proj_M = Proj_M.cuda()`
    source = (
        "import torch\n\n\ndef dist(M, index, n):\n    for j in range(n):\n"
        "        p = torch.FloatTensor(M[index[j]])\n        p = p.cuda()\n        print(p)\n"
    )
    (found,) = [f for f in check_code(source, path="model.py", unsafe_fixes=True) if f.code == "SFX101"]
    assert found.message.startswith("Blocking host-to-device copy:")  # a CPU tensor, no hedge
    assert found.fix is not None and found.fix.applicability.value == "unsafe"  # it may share memory


def test_a_tensor_that_may_already_be_on_the_gpu_is_a_copy_only_if_it_is_on_the_cpu():
    # insightface's partial_fc_v2: `torch.unique(labels[index_positive]).cuda()`, labels on the GPU
    src = (
        "import torch\n"
        "def sample(labels: torch.Tensor, index_positive: torch.Tensor, steps: int):\n"
        "    for _ in range(steps):\n"
        "        positive = torch.unique(labels[index_positive], sorted=True).cuda()\n"
        "        print(positive.sum())\n"
    )
    (finding,) = check_code(src, select=["SFX101"])
    assert finding.message.startswith("Blocking host-to-device copy if the tensor is on the CPU")
    assert finding.fix is not None  # exact either way: a fresh tensor, to CUDA


def test_a_computed_tensor_cast_like_another_is_not_reported():
    # audiocraft's ``F.dropout(w, ...).to(v)``, sd-scripts' ``self.q_norm(q).to(v)``: ``v`` is
    # another tensor of the same forward (a dtype match), seldom a device; a factory's tensor
    # ``.to(v)`` and a copy ``.to(dev)`` to a device by its name are still reported
    src = (
        "import torch\nimport torch.nn.functional as F\n\n\n"
        "class Attention(torch.nn.Module):\n"
        "    def forward(self, q: torch.Tensor, k: torch.Tensor, value, dev):\n"
        "        v = self.split_heads(value)\n"
        "        w = torch.softmax(torch.einsum('btd,bkd->btk', q, k), dim=-1)\n"
        "        w = F.dropout(w, 0.1, training=self.training).to(v)\n"
        "        y = torch.rand(q.shape[0]).to(v)\n"
        "        z = torch.softmax(q, -1).to(dev)\n"
        "        return torch.einsum('btk,bkd->btd', w, v) + y + z\n"
    )
    assert sorted(f.line for f in check_code(src, select=["SFX101"])) == [10, 11]


def test_a_copy_under_a_test_for_another_device_type_is_not_to_cuda():
    # sd-scripts' ``if self.device.type == "mps": ... .to(self.device)``: off CUDA there; the
    # negation of such a test holds on CUDA and elsewhere, so it proves nothing
    src = (
        "import torch\n\n\nclass Gen:\n    def __init__(self, device):\n        self.device = torch.device(device)\n\n"
        "    def step(self, shape, n):\n        for _ in range(n):\n"
        "            if self.device.type == 'mps':\n"
        "                a = torch.randn(shape, device='cpu').to(self.device)\n"
        "            if not (self.device.type == 'mps'):\n"
        "                b = torch.randn(shape, device='cpu').to(self.device)\n"
        "            print(a, b)\n"
    )
    assert [f.line for f in check_code(src, select=["SFX101"])] == [13]


def test_a_tokenizers_output_moved_whole_is_reported_without_a_fix():
    # BLIP's ``self.tokenizer(caption, ..., return_tensors="pt").to(image.device)`` in every
    # forward: each tensor copied blocking; not a tokenizer's output without the keyword
    src = (
        "import torch\n\n\nclass Model(torch.nn.Module):\n    def forward(self, image, caption):\n"
        "        text = self.tokenizer(caption, padding='longest', return_tensors='pt').to(image.device)\n"
        "        enc = self.tokenizer(caption, return_tensors='pt')\n        enc = enc.to('cuda')\n"
        "        other = self.tokenizer(caption).to(image.device)\n"
        "        return self.text_encoder(text.input_ids, enc, other)\n"
    )
    found = check_code(src, select=["SFX101"], unsafe_fixes=True)
    assert [(f.line, f.fix) for f in found] == [(6, None), (8, None)]
    assert all("tokenizer's output" in f.message and "non_blocking=True" in f.message for f in found)


def test_a_tokenizers_output_moved_inside_a_try_says_why_there_is_no_advice():
    # peft's memory benchmark: ``tokenizer.pad(..., return_tensors="pt").to(model.device)`` in a
    # ``try`` whose handler catches its error (a realcode trap: reported, never rewritten)
    src = (
        "import torch\n\n\ndef run(tokenizer, model, data, steps):\n    for i in range(steps):\n"
        "        try:\n            batch = tokenizer.pad(data[i], return_tensors='pt').to(model.device)\n"
        "            model(**batch).loss.backward()\n        except Exception:\n            pass\n"
    )
    (found,) = check_code(src, select=["SFX101"], unsafe_fixes=True)
    assert found.fix is None and "inside a try" in found.message and "non_blocking=True" not in found.message


def test_a_batch_from_an_iterator_refilled_in_a_handler_is_a_batch():
    # stargan's ``try: x, y = next(it) except: it = iter(loader); x, y = next(it)`` then
    # ``x = x.to(self.device)``: the copy's own binding from the last step never reaches it
    src = (
        "import torch\n\n\nclass Solver:\n    def train(self, data_loader, steps):\n"
        "        data_iter = iter(data_loader)\n        for i in range(steps):\n"
        "            try:\n                x, y = next(data_iter)\n"
        "            except StopIteration:\n                data_iter = iter(data_loader)\n"
        "                x, y = next(data_iter)\n"
        "            x = x.to(self.device)\n            self.step(x, y)\n"
    )
    (found,) = [f for f in check_code(src, path="solver.py", unsafe_fixes=True) if f.code == "SFX101"]
    assert found.line == 13 and found.fix is not None and found.fix.applicability.value == "unsafe"


@pytest.mark.parametrize(
    ("loop", "fixed"),
    [
        ("for k in batch.keys():\n            batch[k] = batch[k].to(device)", True),
        ("for k in batch:\n            batch[k] = batch[k].to(device)", True),
        ("for k, v in batch.items():\n            batch[k] = v.to(device)", True),
        ("batch['x'] = batch['x'].to(device)", True),
        # an in-place write in the value, or a key that is not one of the mapping's: no fix
        ("for k in batch.keys():\n            batch[k] = batch[k].to(device).add_(1)", False),
        ("for k in keys:\n            batch[k] = batch[k].to(device)", False),
    ],
)
def test_a_copy_put_back_under_its_key_writes_no_tensor(loop, fixed):
    # OpenNMT's ``tensor_batch[key] = tensor_batch[key].to(self.device)``: the entry is rebound,
    # the copied tensor is not written
    src = (
        "import torch\n\n\ndef train(model, loader, device, keys):\n    for batch in loader:\n"
        f"        {loop}\n        model(**batch)\n"
    )
    found = [f for f in check_code(src, path="train.py", unsafe_fixes=True) if f.code == "SFX101"]
    assert found and (found[0].fix is not None) is fixed
    if not fixed:
        assert "the source may be written again" in found[0].message


def test_a_cpu_tensor_a_class_keeps_is_said_to_be_copied_again_each_time():
    # DPM-Solver's ``self.t_array.to(t.device)``: the advice is to move it once, and no fix
    from pathlib import Path

    source = (Path(__file__).parent / "fixtures" / "kept_on_host_untouched.in.py").read_text()
    found = [f for f in check_code(source, path="schedule.py", unsafe_fixes=True) if f.code == "SFX101"]
    kept = [f for f in found if "`self.t_array` is a CPU tensor its class keeps" in f.message]
    assert len(kept) == 1 and kept[0].fix is None and "move it to the device once" in kept[0].message


def test_a_typed_constructor_of_an_unknown_value_says_it_may_share_memory():
    # faster-rcnn's ``torch.FloatTensor(cfg.TRAIN.BBOX_NORMALIZE_STDS).cuda()`` each test image:
    # the reason is the constructor's, not a write syncfix saw
    src = (
        "import torch\n"
        "def test(cfg, deltas, images):\n"
        "    for image in images:\n"
        "        deltas = deltas * torch.FloatTensor(cfg.STDS).cuda()\n"
        "        deltas = cfg.refine(deltas)\n"
        "    return deltas\n"
    )
    (f,) = check_code(src, select=["SFX101"])
    assert "`torch.FloatTensor` of a value syncfix cannot name" in f.message and f.fix is None
    (g,) = check_code(src.replace("cfg.STDS", "[0.1, 0.2]"), select=["SFX101"])
    assert g.fix is not None


def test_a_cpu_embedding_a_class_keeps_is_said_to_be_copied_each_time():
    # vit-pytorch's SimpleViT: a sin-cos embedding made on the CPU (through `torch.meshgrid` and
    # `.type(dtype)`) kept as a plain attribute, copied to the input's device every forward
    src = (
        "import torch\n\n\n"
        "def posemb(h, w, dim, dtype=torch.float32):\n"
        "    y, x = torch.meshgrid(torch.arange(h), torch.arange(w), indexing='ij')\n"
        "    omega = torch.arange(dim // 4) / (dim // 4 - 1)\n"
        "    pe = torch.cat((x.flatten()[:, None] * omega, y.flatten()[:, None] * omega), dim=1)\n"
        "    return pe.type(dtype)\n\n\n"
        "class SimpleViT(torch.nn.Module):\n"
        "    def __init__(self, h, w, dim):\n"
        "        super().__init__()\n"
        "        self.pos_embedding = posemb(h, w, dim)\n\n"
        "    def forward(self, img):\n"
        "        x = img.flatten(2)\n"
        "        return x + self.pos_embedding.to(img.device, dtype=x.dtype)\n"
    )
    (found,) = check_code(src, select=["SFX101"], path="vit.py")
    assert "`self.pos_embedding` is a CPU tensor its class keeps" in found.message
    assert found.fix is None


def test_a_copy_of_a_join_of_a_loaders_parts_says_to_copy_the_parts():
    # SimCLR's ``images = torch.cat(images, dim=0); images = images.to(self.args.device)`` of a
    # loader's two views: 56 MB of new pageable memory, which a non-blocking copy still waits for
    # (measured on an H200: 138 ms against 0.2 ms for the pinned parts copied, then joined)
    src = (
        "import torch\n\n\ndef train(model, train_loader, args):\n    for images, _ in train_loader:\n"
        "        images = torch.cat(images, dim=0)\n        images = images.to(args.device)\n"
        "        model(images)\n"
    )
    (found,) = [f for f in check_code(src, path="train.py") if f.code == "SFX101"]
    assert "copy the parts with `non_blocking=True`" in found.message
    assert "pass non_blocking=True yourself" not in found.message
    single = src.replace("        images = torch.cat(images, dim=0)\n", "")
    assert all("copy the parts" not in f.message for f in check_code(single, path="train.py"))


def test_a_copy_in_a_loop_that_reads_a_gpu_value_every_time_round_says_the_fix_pays_little():
    # HRNet's flip test: `flip_back(output.cpu().numpy())`, then the flipped heatmaps copied back;
    # a running total's read (SFX302) or a logged one (SFX401) has fixes of its own: no note
    src = (
        "import numpy as np\nimport torch\n\n\ndef validate(loader, flip):\n"
        "    model = torch.nn.Linear(4, 4).cuda()\n    for x in loader:\n        out = model(x.cuda())\n"
        "        flipped = flip(out.cpu().numpy())\n        back = torch.from_numpy(flipped.copy()).cuda()\n"
        "        print((out + back).sum())\n    return model\n\n\n"
        "def train(model, loader, flip):\n    total = 0.0\n    for x in loader:\n"
        "        out = model(torch.from_numpy(np.zeros(4)).cuda())\n        total += out.sum().item()\n"
        "        print(out.mean().item())\n    return total\n"
    )
    found = {f.line: f for f in check_code(src, select=["SFX101"]) if f.fix is not None}
    assert "reads a tensor's value on the host at line 9, every time round" in found[10].message
    assert "every time round" not in found[18].message


def test_a_type_as_copy_of_a_table_held_on_the_host_in_one_branch_names_that_line():
    # VideoMAE's encoder: a parameter if learnable, else a fixed table on the host, expanded to
    # the batch before it is converted (each step copies the batch-sized expansion)
    source = (
        "import torch\n\n\nclass Enc(torch.nn.Module):\n"
        "    def __init__(self, learnable=False):\n        super().__init__()\n"
        "        if learnable:\n            self.pos = torch.nn.Parameter(torch.zeros(1, 4, 8))\n"
        "        else:\n            self.pos = torch.zeros(1, 4, 8)\n\n"
        "    def forward(self, x):\n        return x + self.pos.expand(x.shape[0], -1, -1).type_as(x)\n"
    )
    (found,) = check_code(source, path="model.py", select=["SFX101"])
    assert "the CPU tensor of line 10, not an `nn.Parameter`" in found.message
    assert "convert it before `.expand(...)`" in found.message
