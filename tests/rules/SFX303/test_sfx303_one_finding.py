"""A read of the element of a loop over a tensor is SFX303's: the generic rules (SFX105's
read in a loop, SFX404's read into a list) do not report it again."""

from __future__ import annotations

import textwrap

from syncfix.api import check_code

LOOP = """\
import torch


class Nonzero:
    def step(self, x):
        idx = torch.where(x > 0)[0]
        out = []
        for v in idx:
            out.append(v.item())
        n = 0
        for v in idx:
            k = v.item()
            n += k
        return out, n
"""


def test_an_element_read_gets_one_finding():
    found = [(f.line, f.code) for f in check_code(textwrap.dedent(LOOP), path="train.py", select=["SFX105", "SFX303", "SFX404"])]
    assert sorted(found) == [(9, "SFX303"), (12, "SFX303")]


ITEMS = """\
import torch


class Trainer:
    def train_step(self, losses: dict, metrics: dict):
        for key, value in losses.items():
            metrics[key] = value.detach().cpu().item()
        logged = {k: v.cpu().item() for k, v in losses.items()}
        for name, t in losses.items():
            metrics[name] = t.item() * t.numel()
        return metrics, logged
"""


def test_a_mapping_value_read_with_one_stack_gets_one_finding():
    # SFX303 reads the first loop's and the comprehension's values with one stack (unsafe), so
    # SFX105 reports neither the `.cpu()` copy nor the `.item()` there; the third loop uses its
    # value twice, gets no stack, and its read stays SFX105's
    found = [(f.line, f.code) for f in check_code(ITEMS, path="train.py")]
    assert sorted(found) == [(7, "SFX303"), (8, "SFX303"), (10, "SFX105")]


def test_elements_of_a_tensor_copied_to_the_cpu_are_not_reported():
    # trl's ``[c[m].tolist() for c, m in zip(ids.cpu(), mask.bool().cpu())]``: whatever ``ids`` is,
    # ``ids.cpu()`` is on the CPU, so its rows read without a wait (the copies themselves are
    # SFX105's); a tensor that may be on the GPU is still reported
    src = (
        "import torch\n\n\ndef decode(ids, mask, steps):\n    for _ in range(steps):\n"
        "        rows = [c[m].tolist() for c, m in zip(ids.cpu(), mask.bool().cpu())]\n"
        "        gpu_rows = [c.tolist() for c in ids.float()]\n"
        "        print(rows, gpu_rows)\n"
    )
    assert [f.line for f in check_code(src, select=["SFX303"])] == [7]


def test_values_of_a_placed_dict_of_mixed_dtypes_say_why_there_is_no_fix():
    """The items of a dict built here of CUDA tensors are CUDA tensors; a float beside a bool
    has no one-stack read, and the finding says so (it said nothing once the items were known)."""
    from syncfix import check_code

    src = (
        "import torch\n\n\nclass T:\n    def training_step(self):\n"
        '        mixed = {"n": torch.ones(3, device="cuda").sum(), "ok": (torch.ones(3, device="cuda") > 0).all()}\n'
        "        return {k: v.item() for k, v in mixed.items()}\n"
    )
    (f,) = [f for f in check_code(src, path="m.py") if f.code == "SFX303"]
    assert "not provably of one dtype kind" in f.message and f.fix is None
