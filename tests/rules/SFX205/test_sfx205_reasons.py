"""SFX205 says why a data-dependent shape keeps its sync, in words a user can act on."""

from __future__ import annotations

import pytest

from syncfix.api import check_code

HEAD = "import torch\n\ndef step(x: torch.Tensor, m):\n    for i in range(3):\n        y = x.cuda()\n"


@pytest.mark.parametrize(
    ("line", "reason"),
    [
        ("a = y[y > 0]", "depends on how the selected values are used"),
        ("g = m.grad[m.grad > 0]", "depends on how the selected values are used"),
        ("b = torch.unique(y)", "moving it out of the loop"),
        ("c = torch.bincount(y.long())", "a number only the author knows"),
        ("d = y.nonzero()", "a number only the author knows"),
        ("e = torch.repeat_interleave(y, y.long())", "`output_size` must equal `repeats.sum()`"),
        # a count of selected bools needs no number (attention-is-all-you-need's n_correct)
        ("n = y.eq(1).masked_select(y > 0).sum()", "`(x & mask).sum()` (the same int64)"),
    ],
)
def test_a_finding_without_a_fix_says_why(line, reason):
    found = [f for f in check_code(HEAD + "        " + line + "\n", path="train.py", unsafe_fixes=True) if f.code == "SFX205"]
    assert len(found) == 1 and found[0].fix is None
    assert reason in found[0].message.split("; no fix: ")[1]


def test_the_masked_sum_fix_states_no_reason():
    (found,) = [f for f in check_code(HEAD + "        f = y[y > 0].sum()\n", path="train.py", unsafe_fixes=True) if f.code == "SFX205"]
    assert found.fix is not None and "no fix" not in found.message


MASKS = (
    "import torch\n\n"
    "def loss(s: torch.Tensor, targets: torch.Tensor, mask: torch.Tensor, mask_idx: torch.Tensor, masked_target: torch.Tensor, device, i_mask: torch.Tensor):\n"
    "    out = []\n"
    "    for k in range(4):\n"
    "        eye = torch.eye(s.shape[0], dtype=torch.bool).to(device)\n"
    "        out.append(s[~eye])\n"  # 7: a bool tensor copied to a device (named so), inverted
    "        out.append(targets[mask])\n"  # 8: a name that says mask, dtype unknown
    "        out.append(targets[~mask])\n"  # 9
    "        out.append(targets[mask_idx])\n"  # 10: an index tensor
    "        out.append(s[-1])\n"  # 11: a literal index
    "        out.append(targets[masked_target])\n"  # 12: Megatron's target with entries masked
    "        out.append(targets[mask[k] & (s[k] >= 0)])\n"  # 13: flair's row of a mask, and a test
    "        out.append(targets[mask_idx & (s[k] >= 0)])\n"  # 14: an index, whatever it is combined with
    "        out.append(targets[i_mask])\n"  # 15: MobileSAM's index of a mask, from its NMS
    "        mask_slice = slice(1, None) if k else slice(0, 1)\n"
    "        out.append(targets[:, mask_slice])\n"  # 17: sam-hq's slice of the masks, no mask
    "    return out\n"
)


def test_boolean_mask_reads_of_tensors_on_an_unknown_device():
    found = {f.line: f.message for f in check_code(MASKS, path="train.py") if f.code == "SFX205"}
    assert sorted(found) == [7, 8, 9, 13]
    assert "as its name says" not in found[7]
    assert "(if `mask` is boolean, as its name says: syncfix cannot read its dtype)" in found[8]
    assert "(if `~mask` is boolean" in found[9]


def test_a_mask_named_index_of_a_cuda_tensor_is_a_boolean_mask_read():
    src = (
        "import torch\n\ndef f(pad, n):\n    y = torch.randn(n, device='cuda')\n"
        "    pad_mask = torch.as_tensor(pad).cuda()\n    for _ in range(3):\n        z = y[pad_mask]\n        w = y[pad]\n"
    )
    found = [f for f in check_code(src, path="train.py") if f.code == "SFX205"]
    assert [f.line for f in found] == [7] and found[0].fix is None


UNNAMED = (
    "import torch\n\n"
    "class Policy(torch.nn.Module):\n"
    "    def __init__(self):\n        super().__init__()\n        self.mask_generator = torch.nn.Identity()\n\n"
    "    def compute_loss(self, batch, normalize, pick, obs_mask, cond: torch.Tensor, plain):\n"
    "        cond_data = batch if pick else normalize(batch)\n"
    "        condition_mask = self.mask_generator(cond_data)\n"
    "        a = cond_data[condition_mask]\n"  # 11: a mask tensor indexes what syncfix cannot name
    "        b = cond[obs_mask]\n"  # 12: a parameter named mask indexes a tensor
    "        c = plain[obs_mask]\n"  # 13: neither side known to be a tensor
    "        return a, b, c\n"
)


def test_a_mask_read_of_a_value_syncfix_cannot_name():
    # diffusion_policy's ``noisy_trajectory[condition_mask] = cond_data[condition_mask]`` every
    # training step, ``cond_data`` a join of a ``torch.cat`` and a normalizer's output
    found = [f.line for f in check_code(UNNAMED, path="policy.py") if f.code == "SFX205"]
    assert found == [11, 12]


@pytest.mark.parametrize("mask", ["p.triu(diagonal=1)", "torch.tril(p)", "p.triu(1).view(-1)", "p.logical_not()"])
def test_a_mask_stays_a_mask_through_triangles_views_and_negation(mask):
    # circle loss (Person_reID): a label-equality matrix's upper triangle selects the pairs
    src = HEAD + f"        p = y.unsqueeze(1) == y.unsqueeze(0)\n        a = y.view(-1)[{mask}]\n"
    found = [f for f in check_code(src, path="train.py") if f.code == "SFX205"]
    assert len(found) == 1 and "boolean-mask read" in found[0].message


def test_a_nonzero_of_a_parameter_the_function_uses_as_a_tensor_is_reported():
    # transformer-xl's ``mask_i = (target >= l) & (target < r); mask_i.nonzero()`` in each forward,
    # where ``target.index_select(0, indices_i)`` shows ``target`` is a tensor
    src = (
        "import torch\nfrom torch import nn\n\nclass Crit(nn.Module):\n    def forward(self, hidden, target):\n"
        "        for lo in range(3):\n            mask = (target >= lo) & (target < lo + 1)\n"
        "            idx = mask.nonzero().squeeze()\n            hidden = hidden + target.index_select(0, idx).sum()\n"
        "        return hidden\n"
    )
    found = [f for f in check_code(src, path="model.py") if f.code == "SFX205"]
    assert [f.line for f in found] == [8] and found[0].fix is None
    assert "a number only the author knows" in found[0].message
    unused = src.replace("target.index_select(0, idx)", "idx")
    assert not [f for f in check_code(unused, path="model.py") if f.code == "SFX205"]
