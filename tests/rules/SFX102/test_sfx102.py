"""SFX102's pageable form (``torch.tensor(data).to(device, non_blocking=True)``) keeps values,
dtypes and shapes where the device is the CPU; the CUDA side is in test_sfx102_cuda.py."""

from __future__ import annotations

import pytest

from syncfix import check_code, fix_code
from syncfix.analysis.project import ModuleContext

from ..support import compare, load
from .test_sfx102_cuda import CUDA_OR_CPU

torch = pytest.importorskip("torch")


def test_sfx102_pageable_form_is_exact_on_the_cpu():
    safe = fix_code(CUDA_OR_CPU, select=["SFX102"])
    unsafe = fix_code(CUDA_OR_CPU, select=["SFX102"], unsafe_fixes=True)
    # `device` (cuda|cpu) is a safe fix; `boxes.device` (a tensor's) only an unsafe one
    assert "dtype=torch.int32).to(device, non_blocking=True)" in safe
    assert "to(boxes.device, non_blocking=True)" not in safe
    assert "to(boxes.device, non_blocking=True)" in unsafe
    boxes = torch.eye(4)
    before = load(CUDA_OR_CPU, "f")(boxes, [1, 2, 3, 4])
    for fixed in (safe, unsafe):
        compare(before, load(fixed, "f")(boxes, [1, 2, 3, 4]), bitwise=True)


def test_a_device_held_by_a_name_gets_a_fix_only_where_the_code_itself_repeats():
    # ``make_ids`` is hot only because another project file calls it from a loop (by name): the
    # finding stands, the unsafe fix does not (a one-time call of a same-named helper would churn)
    from syncfix.config import Settings
    from syncfix.engine import analyze, parse
    from syncfix.rules import all_rules

    src = (
        "from typing import List\nimport torch\n\n"
        "def make_ids(counts: List[int], device):\n    return torch.tensor(counts, device=device)\n\n"
        "def loop(counts: List[int], device):\n    for _ in range(3):\n        torch.tensor(counts, device=device)\n"
    )
    rules = [all_rules()["SFX102"]]
    settings = Settings(unsafe_fixes=True)

    # what projects.py gives a file: other files call ``make_ids`` from a loop
    context = ModuleContext("m", frozenset(), hot=frozenset({"make_ids"}))
    found = analyze(parse(src.encode(), settings), rules, settings, context)
    by_line = {found.position(f.node).start.line: f for f in found.findings}
    assert set(by_line) == {5, 9}
    assert by_line[5].fix is None and by_line[9].fix is not None


COUNTERS = (
    'import torch\n\ndev = "cuda" if torch.cuda.is_available() else "cpu"\n\n\n'
    "def f(xs: list, n: int):\n"
    "    out = []\n"
    "    for step in range(4611686018427387900, n):\n"
    "        out.append(torch.tensor(step, device=dev))\n"
    "        out.append(torch.tensor(len(xs), device=dev, dtype=torch.long))\n"
    "    return out\n"
)


@pytest.mark.parametrize("n", [4611686018427387900, 4611686018427387904])
def test_sfx102_lengths_and_range_counters_fill_exactly(n):
    # a range counter from a literal start within 2**62 and a length are within int64:
    # torch.full((), v) is safe and gives the same int64 values (near 2**62 too)
    fixed = fix_code(COUNTERS, select=["SFX102"])
    assert fixed.count("torch.full((), ") == 2, fixed
    xs = list(range(7))
    before, after = load(COUNTERS, "f")(xs, n), load(fixed, "f")(xs, n)
    assert len(before) == len(after) == 2 * (n - 4611686018427387900)
    for b, a in zip(before, after, strict=True):
        assert b.dtype == a.dtype == torch.int64 and b.shape == a.shape == () and b.item() == a.item()


def test_no_fix_inside_a_try_whose_handler_catches_and_reasons_are_named():
    """detr's pattern: without CUDA, ``torch.tensor(..., device="cuda")`` raises AssertionError,
    the pinned form RuntimeError; a handler of either must keep seeing the original error."""
    from syncfix import check_code, fix_code

    src = (
        "import torch\n\ndef sizes(steps, n):\n    out = []\n    for _ in range(steps):\n"
        "        try:\n            s = torch.tensor([0], device='cuda')\n"
        "        except AssertionError:\n            s = torch.tensor([0])\n        out.append(s)\n"
        "    return out\n"
    )
    assert fix_code(src, select=["SFX102"], unsafe_fixes=True) == src
    (f,) = check_code(src, select=["SFX102"])
    assert "inside a try whose handler catches its error" in f.message
    # data syncfix cannot prove host data: the message says so (not "could not prove")
    unknown = (
        "import torch\n\ndef sizes(chunks):\n    for t in chunks:\n"
        "        yield torch.tensor([t.numel()], device='cuda')\n"
    )
    (g,) = check_code(unknown, select=["SFX102"], include_cold=True)
    assert "not provably host data" in g.message


def test_a_copy_held_back_by_a_handler_says_so_whatever_the_device():
    # litgpt's generate: `torch.tensor([n], device=device)` with a device syncfix cannot name,
    # called inside a try: the message named the device, not the handler that withholds the fix
    from syncfix import check_code

    src = (
        "import torch\n\ndef step(tokens, device, n):\n    for t in tokens:\n"
        "        pos = torch.tensor([n], device=device, dtype=torch.int64)\n    return pos\n\n"
        "def run(tokens, device):\n    try:\n        return step(tokens, device, 3)\n"
        "    except Exception:\n        return None\n"
    )
    (finding,) = [f for f in check_code(src, unsafe_fixes=True) if f.code == "SFX102"]
    assert finding.fix is None and "inside a try whose handler catches its error" in finding.message
    # and keeps saying the device is unknown (fast-reid's gloo tensors are on the CPU)
    assert "(if the device is a GPU's, which syncfix cannot tell); no fix: inside a try" in finding.message
    unguarded = src.replace("except Exception", "except KeyError")
    (finding,) = [f for f in check_code(unguarded, unsafe_fixes=True) if f.code == "SFX102"]
    assert finding.fix is not None


def test_an_unsafe_fill_says_a_large_int_may_round_differently():
    # torch.tensor rounds an int to a double first, torch.full once: past 2**24 the float32
    # values differ (not only the errors), and the unsafe fix must say so
    from syncfix import check_code

    src = (
        "import torch\n\ndef train(model, xs):\n    for x in xs:\n"
        "        big = torch.tensor(1152921573326323713, device='cuda', dtype=torch.float32)\n"
        "        model(x, big)\n"
    )
    [finding] = check_code(src, select=["SFX102"], unsafe_fixes=True)
    assert finding.fix is not None and "unsafe" in finding.fix.description
    assert "may round differently" in finding.fix.description
    v = 1152921573326323713
    assert torch.tensor(v, dtype=torch.float32).item() != torch.full((), v, dtype=torch.float32).item()


def test_an_exact_fill_on_an_unnamed_device_names_only_the_device():
    # `0.0` fills exactly in any dtype: the unsafe fix rests on the device alone, and says only
    # that (vector-quantize's `residual_lfq`); a size still names the int it takes it to be
    src = (
        "import torch\n\ndef train(model, xs, device):\n    for x in xs:\n"
        "        zero = torch.tensor(0.0, device=device)\n"
        "        n, x_device = x.shape[0], x.device\n"
        "        count = torch.tensor(n, device=x_device, dtype=torch.float32)\n"
        "        model(x, zero, count)\n"
    )
    zero, count = check_code(src, select=["SFX102"], unsafe_fixes=True)
    assert zero.fix is not None and count.fix is not None
    assert "the device may be another accelerator" in zero.fix.description
    assert "2**24" not in zero.fix.description and "float32's range" not in zero.fix.description
    assert "`n` is taken to be an int" in count.fix.description and "2**24" in count.fix.description


def test_a_legacy_cuda_constructor_of_data_is_a_blocking_copy():
    # gpt-neox's ``sizes_cuda = torch.cuda.LongTensor(sizes)`` every micro-batch: reported (no
    # fix); of sizes it allocates on the device, of a CUDA tensor it copies nothing
    src = (
        "import torch\n\n\ndef step(loader, keys, data, gpu: torch.Tensor):\n    for _ in loader:\n"
        "        sizes = [0 for _ in range(4 * len(keys))]\n"
        "        for i, key in enumerate(keys):\n            sizes[i] = data[key].size(0)\n"
        "        a = torch.cuda.LongTensor(sizes)\n"
        "        b = torch.cuda.ByteTensor([1, 0, 1])\n"
        "        c = torch.cuda.FloatTensor(4, 5)\n"
        "        d = torch.cuda.FloatTensor(3)\n"
        "        e = torch.cuda.FloatTensor(gpu.cuda())\n"
        "        print(a, b, c, d, e)\n"
    )
    found = check_code(src, select=["SFX102"])
    assert [(f.line, f.fix) for f in found] == [(9, None), (10, None)]
    assert "`LongTensor` of a list or an array" in found[0].message and "of host data copies" in found[1].message
    # OpenNMT's ``all_gather_list(data, max_size=4096)``: ``torch.cuda.ByteTensor(max_size)`` by size
    sized = (
        "import torch\n\n\ndef gather(items, max_size=4096):\n    for _ in items:\n"
        "        buf = torch.cuda.ByteTensor(max_size)\n        print(buf)\n"
    )
    assert not check_code(sized, select=["SFX102"])
    assert check_code(sized.replace("max_size=4096", "max_size"), select=["SFX102"])  # data or a size


SIZED = """\
import torch


def forward(xyz, npoint, boxes_a, boxes_b, data, steps):
    for _ in range(steps):
        N, _ = xyz.size()
        a = torch.cuda.FloatTensor(N).fill_(1e10)
        b = torch.cuda.IntTensor(npoint.sum().item())
        c = torch.cuda.FloatTensor(torch.Size((boxes_a.shape[0], boxes_b.shape[0]))).zero_()
        d = torch.cuda.FloatTensor(xyz.shape[0])
        e = torch.cuda.FloatTensor(xyz.size())
        n = len(data)
        f = torch.cuda.LongTensor(n)
        g = torch.cuda.FloatTensor(data)
        print(a, b, c, d, e, f, g)
"""


def test_a_legacy_cuda_constructor_of_a_size_allocates():
    # OpenPCDet's iou3d and pointnet2 ops: ``torch.cuda.FloatTensor(N)`` with ``N, _ = xyz.size()``,
    # ``torch.cuda.FloatTensor(torch.Size((m, n)))``, ``torch.cuda.IntTensor(t.sum().item())``:
    # sizes, allocated on the device; only ``data`` may be a list to copy
    assert [f.line for f in check_code(SIZED, select=["SFX102"])] == [14]


ONE_ELEMENT = (
    "import torch\n\n\ndef f(x, n, training):\n    out = []\n    for _ in range(n):\n"
    "        out.append(torch.tensor([0.0], device=x.device, requires_grad=training))\n"
    "        out.append(torch.tensor([3], device=x.device, dtype=torch.long))\n"
    "        out.append(torch.tensor([True], device=x.device))\n"
    "        out.append(torch.tensor([2.5], device=x.device, dtype=torch.float16))\n"
    "    return out\n"
)


@pytest.mark.parametrize("training", [False, True])
def test_a_one_element_list_filled_on_the_device_is_exact_on_the_cpu(training):
    # encodec's ``torch.tensor([0.0], device=device, requires_grad=self.training)`` per forward
    fixed = fix_code(ONE_ELEMENT, select=["SFX102"], unsafe_fixes=True)
    assert fixed.count("torch.full((1,), ") == 4
    x = torch.zeros(2)
    before, after = load(ONE_ELEMENT, "f")(x, 2, training), load(fixed, "f")(x, 2, training)
    compare(before, after, bitwise=True)
    assert [t.requires_grad for t in before] == [t.requires_grad for t in after]
    assert all(t.is_leaf for t in after)


def test_a_tensors_element_count_is_an_int64_filled_safely():
    # DETR's all_gather: ``local_size = torch.tensor([tensor.numel()], device="cuda")``; a count
    # of an object syncfix cannot name may be any number (an unsafe fill, as for ``int(n)``)
    src = (
        "import torch\n\n\ndef gather(chunks, other):\n    for chunk in chunks:\n"
        "        tensor = torch.ByteTensor(list(chunk)).to('cuda')\n"
        "        a = torch.tensor([tensor.numel()], device='cuda')\n"
        "        b = torch.tensor([other.numel()], device='cuda')\n        print(a, b)\n"
    )
    fixes = {f.line: f.fix for f in check_code(src, select=["SFX102"], unsafe_fixes=True)}
    assert fixes[7] is not None and fixes[7].applicability.value == "safe"
    assert "torch.full((1,), tensor.numel(), dtype=torch.int64, device='cuda')" in fix_code(src, select=["SFX102"])
    assert 8 not in fixes or fixes[8] is None or fixes[8].applicability.value != "safe"
