"""SFX303 reports elements indexed out of one tensor by a comprehension's variable and read one
by one (``[passk[k - 1].item() for k in ks]``, nanochat's pass@k), with no fix: which read
replaces them depends on the indices."""

from __future__ import annotations

import pytest

from syncfix import check_code

HEAD = "import torch\n\n\ndef evaluate(loader, ks, model):\n    for x in loader:\n"


def _findings(body: str) -> list:
    return check_code(HEAD + body, select=["SFX303", "SFX105"])


@pytest.mark.parametrize(
    "body",
    [
        # a CUDA tensor, indexed by the variable, read per element
        "        t = torch.zeros(10, device='cuda')\n        a = [t[k - 1].item() for k in ks]\n",
        # inside a larger expression, and in a dict comprehension
        "        t = torch.zeros(10, device='cuda')\n        a = {k: t[k].item() * 2 for k in ks}\n",
        # two variables, two subscripts
        "        t = torch.zeros(10, 3, device='cuda')\n        a = [t[k][j].item() for k in ks for j in range(3)]\n",
        # a reduction of each indexed part
        "        t = torch.zeros(10, 3, device='cuda')\n        a = [float(t[k, :2].sum()) for k in ks]\n",
    ],
)
def test_elements_indexed_out_of_a_gpu_tensor_are_one_read_each(body):
    (f,) = _findings(body)
    assert f.code == "SFX303" and f.fix is None
    assert "indexed out of `t`" in f.message and "t.tolist()" in f.message
    assert "if the tensors are on a GPU" not in f.message


def test_a_tensor_syncfix_cannot_place_is_hedged():
    (f,) = _findings("        t = model(x).softmax(-1)\n        a = [t[k].item() for k in ks]\n")
    assert f.code == "SFX303" and "if the tensors are on a GPU" in f.message


@pytest.mark.parametrize(
    "body",
    [
        # a CPU tensor: nothing waits
        "        t = torch.zeros(10)\n        a = [t[k].item() for k in ks]\n",
        # a list of tensors: no one read of it (each element is its own tensor)
        "        t = [torch.zeros((), device='cuda') for _ in ks]\n        a = [t[k].item() for k in ks]\n",
    ],
)
def test_no_finding_where_one_read_cannot_replace_them(body):
    assert [f.code for f in _findings(body)] == []


@pytest.mark.only_repeated
def test_one_time_code_is_quiet():
    src = "import torch\n\nt = torch.zeros(10, device='cuda')\nvals = [t[k].item() for k in range(3)]\n"
    assert check_code(src, select=["SFX303"]) == []


def test_a_name_bound_again_before_the_comprehension_is_read_as_it_holds_there():
    # XLM's translate loop: `sent = sent.cuda()`, then `[dico[sent[k].item()] for k in ...]`;
    # inside the comprehension `sent` was the join of both bindings, no longer a likely tensor
    (f,) = _findings("        x = x.cuda()\n        a = [ks[x[k].item()] for k in range(len(x))]\n")
    assert f.code == "SFX303" and "indexed out of `x`" in f.message
