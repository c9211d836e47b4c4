"""SFX201: the safe rewrites keep values, dtypes, shapes and Python types (checked on CPU over
many inputs), and the float32 ``0.1`` case stays untouched."""

from __future__ import annotations

from pathlib import Path

import pytest

from syncfix import check_code, fix_code
from syncfix.codemods._support import representable

from ..support import check_safe_rewrite_is_exact_on_cpu, on_cpu
from . import snippets as S

torch = pytest.importorskip("torch")

SAFE_CASES = [pytest.param("SFX201", src, id=f"SFX201-{i}") for i, src in enumerate(S.SAFE)]


@pytest.mark.parametrize("code,src", SAFE_CASES)
def test_safe_rewrite_is_exact_on_cpu(code, src):
    check_safe_rewrite_is_exact_on_cpu(code, src)


def test_float32_point_one_has_no_safe_fix_and_the_unsafe_one_differs():
    src = S.POINT_ONE
    assert fix_code(src, select=["SFX201"]) == src
    unsafe = fix_code(src, select=["SFX201"], unsafe_fixes=True)
    assert "torch.where(m > 0.1" in unsafe
    # the reason: Python compares the double 0.100000001490116..., the tensor compares in float32
    old, new = on_cpu(src)["f"](0.1), on_cpu(unsafe)["f"](0.1)
    assert old.item() == 0.5 and new.item() == 2.0


def test_side_effect_branches_are_never_rewritten():
    src = (Path(__file__).parent / "fixtures/side_effects_untouched.in.py").read_text()
    assert fix_code(src, select=["SFX201"], unsafe_fixes=True) == src
    assert len(check_code(src, select=["SFX201"])) == 6


DTYPES = ["torch.float32", "torch.float16", "torch.bfloat16", "torch.float64", "torch.int64",
          "torch.int32", "torch.uint8", "torch.bool"]
LITERALS = [0, 1, -1, 3, 255, 256, -129, 2**31, 2**53 + 1, 0.5, 0.1, 0.25, 1e-30, 65504.0, 65520.0,
            16777217, 1.5, 3.0000001, True]


@pytest.mark.parametrize("dtype", DTYPES)
def test_exact_literals_compare_like_python(dtype):
    """The claim behind SFX201's safe conditions: for a literal ``c`` that ``representable`` accepts,
    ``t.item() OP c`` and ``bool(t OP c)`` agree for every value ``t`` of the dtype we try."""
    import operator

    dt = getattr(torch, dtype.split(".")[1])
    gen = torch.Generator().manual_seed(0)
    if dt.is_floating_point:
        raw = torch.randn(400, generator=gen, dtype=torch.float64) * 10.0 ** torch.randint(-3, 6, (400,), generator=gen)
        specials = torch.tensor([0.0, -0.0, 0.1, 0.5, 1.0, 255, 256, 65504, float("inf"), float("nan")],
                                dtype=torch.float64)
        values = torch.cat([raw, specials, torch.tensor([float(c) for c in LITERALS], dtype=torch.float64)]).to(dt)
    elif dt == torch.bool:
        values = torch.tensor([False, True])
    else:
        info = torch.iinfo(dt)
        values = torch.cat([
            torch.randint(max(info.min, -1000), min(info.max, 1000), (200,), generator=gen, dtype=torch.int64),
            torch.tensor([info.min, info.max, 0, 1, 255]),
        ]).clamp(info.min, info.max).to(dt)
    checked = 0
    for c in LITERALS:
        if not representable(c, dtype):
            continue
        for op in (operator.gt, operator.ge, operator.lt, operator.le, operator.eq, operator.ne):
            for t in values:
                assert op(t.item(), c) == bool(op(t, c)), (dtype, c, op, t)
        checked += 1
    assert checked >= 3
    # and 0.1 is rejected for float32: the documented counter-example
    assert not representable(0.1, "torch.float32")
    assert torch.tensor(0.1).item() > 0.1 and not bool(torch.tensor(0.1) > 0.1)


def test_enable_grad_inside_no_grad_keeps_the_autograd_caveat():
    src = (
        "import torch\n\n\ndef f(w: torch.Tensor):\n    m = torch.rand((), device='cuda')\n"
        "    with torch.no_grad():\n        with torch.enable_grad():\n"
        "            if m > 0.5:\n                y = w * 2.0\n            else:\n                y = w * 3.0\n"
        "        if m > 0.5:\n            z = w * 2.0\n        else:\n            z = w * 3.0\n"
        "    return y, z\n"
    )
    first, second = sorted(check_code(src, select=["SFX201"]), key=lambda f: f.line)
    assert "autograd" in first.fix.description
    assert "autograd" not in second.fix.description


def test_a_branch_without_else_names_the_value_it_lacks():
    # the shape of detr's padding before all_gather: `padding` has no value before the `if`
    src = (
        "import torch\n\ndef pad(tensor, local_size, max_size):\n"
        "    for _ in range(3):\n"
        "        local = torch.tensor([local_size], device='cuda')\n"
        "        if local != max_size:\n"
        "            padding = torch.empty(size=(max_size - local_size,), device='cuda')\n"
        "            tensor = torch.cat((tensor, padding))\n"
        "    return tensor\n"
    )
    [finding] = check_code(src, select=["SFX201"])
    assert "the branch does not use `padding`'s value from before the `if`: no fix" in finding.message
    assert finding.fix is None


def test_a_branch_sized_by_a_gpu_value_does_not_offer_where():
    # detr's all_gather pads to the largest size: the padding's shape is the tested value itself
    src = (
        "import torch\n\ndef pad(tensor, max_size):\n"
        "    local_size = torch.tensor([tensor.numel()], device='cuda')\n"
        "    if local_size != max_size:\n"
        "        padding = torch.empty(size=(max_size - local_size,), dtype=torch.uint8, device='cuda')\n"
        "        tensor = torch.cat((tensor, padding), dim=0)\n"
        "    return tensor\n"
    )
    (f,) = check_code(src, select=["SFX201"], include_cold=True)
    assert "whose size comes from a GPU value (`(max_size - local_size,)`)" in f.message
    assert "`torch.where` picks" not in f.message and f.fix is None
