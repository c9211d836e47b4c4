"""SFX206: its findings land where marked (``# SFX206``), and its messages name the restructuring."""

from __future__ import annotations

from pathlib import Path

import pytest

from syncfix import check_code, fix_code


def test_true_dependencies_are_found_where_marked():
    path = Path(__file__).parent / "fixtures/training_loop_untouched.in.py"
    src = path.read_text()
    marked = {i for i, line in enumerate(src.splitlines(), 1) if line.rstrip().endswith("# SFX206")}
    found = {f.line for f in check_code(src, select=["SFX206"])}
    assert found == marked
    assert fix_code(src, select=["SFX206"], unsafe_fixes=True) == src


def test_true_dependency_messages_name_the_restructuring():
    src = (Path(__file__).parent / "fixtures/training_loop_untouched.in.py").read_text()
    messages = " ".join(f.message for f in check_code(src, select=["SFX206"]))
    for advice in ("fused=True", "every N", "_assert_async", "torch.minimum"):
        assert advice in messages


def test_an_early_return_is_not_called_early_stopping():
    src = (
        "import torch\n\n\n"
        "def forward(x: torch.Tensor, y: torch.Tensor):\n"
        "    for _ in range(3):\n"
        "        x = x.cuda() * 2\n"
        "        if x.sum() < 1e-14:\n"
        "            return y\n"
        "        if x.sum() > 10:\n"
        "            break\n"
        "    return x\n"
    )
    by_line = {f.line: f.message for f in check_code(src, select=["SFX206"])}
    assert "return early" in by_line[7] and "early stopping" not in by_line[7].split("if it ends training")[0]
    # gpt-neox's Sinkhorn convergence test and per-token stop test have no epochs to read it in
    assert "leave the loop (early stopping, a convergence test, a stop token)" in by_line[9]
    assert "epoch" not in by_line[9] and "every N iterations" in by_line[9]


def test_numpy_counts_of_a_closed_project_are_no_gpu_value(tmp_path):
    # in a closed project the class's numpy arrays and constants are known: ``counts == 10`` is
    # numpy's array, so ``.all()`` of it is too, never a tensor read by ``if``
    import json

    from click.testing import CliRunner

    from syncfix.cli import cli

    (tmp_path / "pyproject.toml").write_text("")
    src = (Path(__file__).parent / "fixtures/numpy_counts_untouched.in.py").read_text()
    (tmp_path / "warm.py").write_text(src)
    result = CliRunner().invoke(cli, ["check", "--no-cache", "-o", "json", "--include-cold", str(tmp_path)])
    assert result.exit_code == 0, result.output
    assert json.loads(result.output) == []
    # an operand syncfix cannot name may be a tensor (which wins over the array): reported
    unknown = src.replace("self.counts == NEEDED", "self.counts == limits()")
    (tmp_path / "warm.py").write_text("from settings import limits\n" + unknown)
    result = CliRunner().invoke(cli, ["check", "--no-cache", "-o", "json", "--include-cold", str(tmp_path)])
    assert [f["code"] for f in json.loads(result.output)] == ["SFX206"]


torch = pytest.importorskip("torch")

HOIST = (
    "import torch\n"
    "def rle(tensor: torch.Tensor):\n"
    "    b, hw = tensor.shape\n"
    "    out = []\n"
    "    for i in range(b):\n"
    "        counts = [] if tensor[i, 0] == 0 else [0]\n"
    "        counts.append(int(tensor[i].sum()))\n"
    "        out.append(counts)\n"
    "    return out\n"
    "def step(tensor):\n"
    "    return rle(tensor)\n"
)


@pytest.mark.parametrize("dtype", ["bool", "uint8", "int64"])
@pytest.mark.parametrize("rows", [0, 1, 5])
def test_a_column_read_once_before_the_loop_decides_alike(dtype, rows):
    # integer and bool masks: the Python test of the read value decides as the tensor's test
    from ..support import load

    fixed = fix_code(HOIST, select=["SFX206"], unsafe_fixes=True)
    assert "tensor_column = tensor[:, 0].tolist()" in fixed and "tensor_column[i] == 0" in fixed
    assert fix_code(HOIST, select=["SFX206"]) == HOIST  # never a safe fix
    torch.manual_seed(rows)
    mask = (torch.rand(rows, 6) > 0.5).to(getattr(torch, dtype))
    assert load(HOIST, "step")(mask) == load(fixed, "step")(mask)


CHECKS = (
    "import torch\n"
    "class T:\n"
    "    def __init__(self, grads):\n"
    "        self.grads = grads\n"
    "    def step(self):\n"
    "        if any(not torch.isfinite(g).all() for g in self.grads):\n"
    "            return 'skip'\n"
    "        if all(not (torch.abs(g).amax() > 1.0) for g in self.grads):\n"
    "            return 'small'\n"
    "        return 'ok'\n"
    "def f(grads):\n"
    "    return T(grads).step()\n"
)


@pytest.mark.parametrize(
    "grads",
    [[], [[0.5, 0.2]], [[0.5], [float("nan")]], [[float("inf"), 0.0]], [[2.0], [0.1, 0.3]]],
    ids=["none", "small", "nan", "inf", "large"],
)
def test_stacked_tests_decide_as_any_and_all_do(grads):
    # `any(not e ...)` and `all(e ...)` over 0-d tensor tests, read once: the same decision,
    # an empty sequence included (`any` false, `all` true)
    from ..support import load

    fixed = fix_code(CHECKS, select=["SFX206"], unsafe_fixes=True)
    assert fixed.count("torch.stack(checks") == 2, fixed
    tensors = [torch.tensor(g) for g in grads]
    assert load(CHECKS, "f")(tensors) == load(fixed, "f")(tensors)


METADATA = '''
import torch
from torch import Tensor


def log_probs(model, ids: Tensor, keep: int) -> Tensor:
    ids = ids.detach().clone() if ids.is_inference() else ids
    rows = []
    for row, ids_row in zip(model(ids), ids[:, -keep:]):
        ids_row = ids_row.long() if ids_row.is_signed() else ids_row
        rows.append(row[ids_row])
    return torch.stack(rows)


def train(model, loader):
    for ids in loader:
        log_probs(model, ids, 4).sum().backward()
'''


def test_a_tensor_metadata_test_is_no_gpu_value():
    # `is_inference()`, `is_signed()`: Python bools from the tensor's metadata, no wait
    assert not check_code(METADATA, select=["SFX206"], include_cold=True)
    tested = METADATA.replace("ids_row.is_signed()", "ids_row.any()")
    assert [f.line for f in check_code(tested, select=["SFX206"], include_cold=True)] == [10]


SCALER = '''
import torch


def train(model, loader, opt, args):
    scaler = {ctor}
    for x in loader:
        scaler.scale(model(x).mean()).backward()
        scaler.step(opt)
        scaler.update()
'''


@pytest.mark.parametrize(
    ("ctor", "says"),
    [
        ('torch.amp.GradScaler("cuda")', ""),
        ('torch.GradScaler("cuda")', ""),
        ("torch.cpu.amp.GradScaler(2.0**16, 2.0, 0.5, 2000, args.fp16)", "`enabled=args.fp16`"),
        ('torch.amp.GradScaler("cuda", enabled=True)', ""),
        ("torch.cuda.amp.GradScaler(enabled=args.dtype == 'float16')", "`enabled=args.dtype == 'float16'`"),
        ('torch.amp.GradScaler("cuda", 2.0**16, 2.0, 0.5, 2000, args.fp16)', "`enabled=args.fp16`"),
        ("torch.cuda.amp.GradScaler(2.0**16, 2.0, 0.5, 2000, args.fp16)", "`enabled=args.fp16`"),
        ('torch.amp.GradScaler("cuda", enabled=False)', None),
        ("torch.cuda.amp.GradScaler(65536.0, 2.0, 0.5, 2000, False)", None),
    ],
)
def test_a_grad_scaler_syncs_only_when_enabled(ctor, says):
    found = check_code(SCALER.format(ctor=ctor), select=["SFX206"])
    if says is None:
        assert not found  # a disabled scaler's step only calls the optimizer's
        return
    (finding,) = found
    assert "found_inf" in finding.message
    assert ("when the scaler is enabled" in finding.message) == bool(says)
    assert says in finding.message


def test_arrays_from_cv2_and_scipy_are_no_gpu_values():
    from syncfix import check_code

    src = (Path(__file__).parent / "fixtures/library_arrays_untouched.in.py").read_text()
    assert [f.code for f in check_code(src, select=["SFX2"])] == []
    # the same branch on a tensor's method is still a GPU read
    tensor = src.replace("rows, cols = linear_sum_assignment(cost)", "rows = gt.float()")
    assert [f.code for f in check_code(tensor, select=["SFX2"])] == ["SFX206"]


def test_a_branch_that_only_picks_values_is_not_said_to_have_side_effects():
    """DomainBed's ``if loss > max_env_loss: max_env_loss = loss`` (device a parameter): the branch
    rebinds a name, so the advice is ``torch.where``, not "side effects"."""
    from syncfix import check_code

    src = (
        "import torch\nimport torch.nn.functional as F\n"
        "def gap(model, batches, device):\n"
        "    worst = torch.tensor([-float('inf')], device=device)\n"
        "    for x, y in batches:\n"
        "        loss = F.cross_entropy(model(x), y)\n"
        "        if loss > worst:\n"
        "            worst = loss\n"
        "    return worst\n"
    )
    (f,) = check_code(src, select=["SFX206"])
    assert "only choose values" in f.message and "torch.where" in f.message
    assert "side effects" not in f.message
    logged = src.replace("            worst = loss\n", "            print(loss)\n")
    (g,) = check_code(logged, select=["SFX206"])
    assert "runs on the host after the decision" in g.message


def test_a_branch_that_sets_a_host_flag_or_concatenates_is_not_offered_torch_where():
    """swav's queue branch sets a Python flag and grows ``out`` with ``torch.cat``: neither is a
    choice ``torch.where`` can make, so the message says what the branch does instead."""
    from syncfix import check_code

    src = (
        "import torch\n"
        "def train(loader, queue, crops):\n"
        "    use_the_queue = False\n"
        "    for out in loader:\n"
        "        out = out.cuda()\n"
        "        for i in crops:\n"
        "            if use_the_queue or not torch.all(queue[i] == 0):\n"
        "                use_the_queue = True\n"
        "            if out.sum() > 0:\n"
        "                out = torch.cat((queue[i], out))\n"
    )
    flag, grown = check_code(src, select=["SFX206"])
    assert "sets the Python value `use_the_queue`" in flag.message
    assert "changes the shape of `out`" in grown.message
    assert "only choose values" not in flag.message + grown.message


def test_what_numpy_gives_is_an_array_whatever_it_was_called_on():
    # likely view: an unknown value's ``.sum()`` reads as a tensor's, but not an array's
    source = (Path(__file__).parent / "fixtures/numpy_of_a_value_untouched.in.py").read_text()
    assert check_code(source, select=["SFX206"]) == []
    assert len(check_code(source.replace(".cpu().numpy()", ".cpu()"), select=["SFX206"])) == 2


def test_a_branch_that_selects_rows_by_a_mask_is_not_offered_torch_where():
    """detectron2's ``if not valid_mask.all(): boxes = boxes[valid_mask]``: as many rows as the
    mask selects, a shape ``torch.where`` cannot give."""
    src = (
        "import torch\n"
        "def forward(boxes: torch.Tensor, scores: torch.Tensor):\n"
        "    for _ in range(2):\n"
        "        valid = torch.isfinite(boxes).all(dim=1)\n"
        "        if not valid.all():\n"
        "            boxes = boxes[valid]\n"
        "    return boxes\n"
    )
    (f,) = check_code(src, select=["SFX206"])
    assert "changes the shape of `boxes`" in f.message and "only choose values" not in f.message
    (g,) = check_code(src.replace("boxes[valid]", "boxes[1:]"), select=["SFX206"])
    assert "only choose values" in g.message


def test_skipping_an_iteration_is_called_a_nan_step_skip_only_on_a_loss_or_nan_test():
    """detectron2's rejection-sampling crop (``if overlaps.min() < min_iou: continue``) is no
    training step skipped on NaN."""
    src = (
        "import torch\n"
        "def train(loader, model, opt):\n"
        "    for x in loader:\n"
        "        loss = model(x.cuda())\n"
        "        if torch.isnan(loss):\n"
        "            continue\n"
        "        loss.backward()\n"
        "        opt.step()\n"
    )
    (nan,) = check_code(src, select=["SFX206"])
    assert "skipping a step (e.g. on NaN)" in nan.message
    crop = src.replace("torch.isnan(loss)", "x.cuda().min() < 0.5")
    (other,) = check_code(crop, select=["SFX206"])
    assert "skip the rest of the iteration" in other.message and "NaN" not in other.message


def test_a_read_in_an_except_handler_is_not_said_to_run_every_step():
    """fairseq's trainer checks the grads for inf only under ``except OverflowError:``."""
    src = (
        "import torch\n\n\ndef train_step(model, params, batch):\n"
        "    try:\n        loss = model(batch)\n"
        "    except OverflowError:\n"
        "        for p in params:\n"
        "            if torch.isinf(p.grad).any():\n                print('inf')\n"
        "        raise\n"
        "    return loss\n"
    )
    (f,) = check_code(src, select=["SFX206"])
    assert "each time its `except` handles an error" in f.message and "every iteration" not in f.message


def test_a_conditional_expression_outside_a_loop_is_not_told_to_read_before_the_loop():
    # trl's compute_loss: `(entropy_sum / num_valid).item() if num_valid > 0 else 0.0`, no loop
    src = (
        "import torch\n\nclass T:\n    def compute_loss(self, model, inputs):\n"
        "        out = model(**inputs)\n        n = self.gather(out.num_valid).sum()\n"
        "        s = self.gather(out.entropy_sum).sum()\n"
        "        self.log.append((s / n).item() if n > 0 else 0.0)\n        return out.loss\n"
    )
    (f,) = check_code(src, select=["SFX206"])
    assert "a conditional expression picks" in f.message and "before the loop" not in f.message
    looped = src.replace("        self.log.append(", "        for _ in range(2):\n            self.log.append(")
    (g,) = check_code(looped, select=["SFX206"])
    assert "a conditional expression picks" in g.message and "before the loop" in g.message


def test_an_optional_tensor_parameter_is_a_tensor_where_it_is_used():
    # nanotron's rotary embedding: `position_ids: Optional[torch.LongTensor]`, tested per forward
    src = (
        "from typing import Optional\nimport torch\n\n\nclass Rotary(torch.nn.Module):\n"
        "    def forward(self, x: torch.Tensor, position_ids: Optional[torch.LongTensor]):\n"
        "        if position_ids[-1, -1] >= self.end:\n            self.end *= 2\n        return x\n"
    )
    for ann in ("Optional[torch.LongTensor]", "torch.LongTensor | None", "Union[None, torch.Tensor]"):
        code = src.replace("Optional[torch.LongTensor]", ann).replace("import Optional", "import Optional, Union")
        assert [f.line for f in check_code(code, select=["SFX206"])] == [7], ann
    assert check_code(src.replace("Optional[torch.LongTensor]", "Optional[int]"), select=["SFX206"]) == []


def test_a_host_operand_after_the_gpu_test_is_offered_first():
    # nerf-pytorch's `if (torch.isnan(ret[k]).any() or ...) and DEBUG:`: tested first, the flag
    # spares the read wherever it decides alone; a tensor or a call there is no such operand
    src = (
        "import torch\n\nDEBUG = False\n\n\n"
        "def render(chunks, flags):\n"
        "    for c in chunks:\n"
        "        x = c.cuda() * 2\n"
        "        if torch.isnan(x).any() and DEBUG:\n"
        "            print('nan')\n"
        "        if x.sum() > 0 or flags.verbose:\n"
        "            print('big')\n"
        "        if x.sum() > 0 and x.max() > 1:\n"
        "            print('both')\n"
        "        if x.sum() > 0 and flags.check(x):\n"
        "            print('called')\n"
    )
    by_line = {f.line: f.message for f in check_code(src, select=["SFX206"])}
    assert "test `DEBUG` first (`DEBUG and (...)`)" in by_line[9] and "only where `DEBUG` holds" in by_line[9]
    assert "test `flags.verbose` first (`flags.verbose or (...)`)" in by_line[11]
    assert "first (" not in by_line[13] and "first (" not in by_line[15]


SCALED = """\
{imports}

class Trainer:
    def __init__(self, model, opt, amp):
        self.model, self.optimizer = model, opt
        self.grad_scaler = {build}

    def train_step(self, x):
        loss = self.model(x).mean()
        self.grad_scaler.scale(loss).backward()
        self.grad_scaler.step(self.optimizer)
        self.grad_scaler.update()
"""


def test_a_scaler_kept_on_self_is_reported_where_the_file_names_grad_scaler():
    # nnUNet's ``self.grad_scaler.step(self.optimizer)``: built in ``__init__``
    src = SCALED.format(imports="from torch.amp import GradScaler", build="GradScaler('cuda', enabled=amp)")
    (finding,) = check_code(src, select=["SFX206"])
    assert "GradScaler.step" in finding.message and "when the scaler is enabled" in finding.message
    assert "unless the optimizer is fused" in finding.message
    # no GradScaler in the file: ``self.grad_scaler`` may be anything
    other = SCALED.format(imports="import torch", build="make_scaler()")
    assert check_code(other, select=["SFX206"]) == []


def test_a_scaler_class_bound_twice_is_still_torchs():
    # RAFT: ``try: from torch.cuda.amp import GradScaler`` with a stand-in for old versions
    src = (
        "import torch\ntry:\n    from torch.cuda.amp import GradScaler\nexcept ImportError:\n"
        "    class GradScaler:\n        def step(self, opt):\n            opt.step()\n\n"
        "def train(model, loader, opt, amp):\n    scaler = GradScaler(enabled=amp)\n"
        "    for x in loader:\n        scaler.scale(model(x)).backward()\n        scaler.step(opt)\n"
    )
    (finding,) = check_code(src, select=["SFX206"])
    assert "`enabled=amp`" in finding.message


def test_a_name_bound_to_another_class_is_no_scaler_by_its_name():
    src = (
        "import torch\nfrom torch.amp import GradScaler\n\nclass NativeScaler:\n"
        "    def step(self, opt):\n        opt.step()\n\n"
        "def train(model, loader, opt):\n    scaler = NativeScaler()\n"
        "    for x in loader:\n        model(x).backward()\n        scaler.step(opt)\n"
    )
    assert check_code(src, select=["SFX206"]) == []


def test_a_branch_of_nested_choices_is_not_said_to_have_side_effects():
    # sentence-transformers' NaN filter: the branch only rebinds `value` (under a nested test),
    # which is no side effect; the message says what it is instead
    from syncfix import check_code

    src = (
        "import torch\n\ndef track(losses: dict, seen: dict, step: int):\n"
        "    for key, value in losses.items():\n"
        "        value = torch.as_tensor(value)\n"
        "        if torch.isnan(value) or torch.isinf(value):\n"
        "            if key not in seen:\n"
        "                value = torch.zeros(())\n"
        "            else:\n"
        "                value = seen[key] / (1 + step)\n"
        "        seen[key] = value\n"
    )
    [finding] = [f for f in check_code(src, select=["SFX206"]) if f.code == "SFX206"]
    assert "side effect" not in finding.message
    assert "does more than choose values" in finding.message


GET_SCALE = '''
import torch
from torch.amp import GradScaler


def train(model, loader, opt, args, log):
    scaler = {ctor}
    for step, x in enumerate(loader):
        before = scaler.get_scale()
        scaler.scale(model(x).mean()).backward()
        scaler.step(opt)
        scaler.update()
        skipped = scaler.get_scale() != before
        if step % 100 == 0:
            log(scale=scaler.get_scale())
'''


@pytest.mark.parametrize(
    ("ctor", "says"),
    [
        ('GradScaler("cuda")', ""),
        ('GradScaler("cuda", enabled=args.fp16)', "`enabled=args.fp16`"),
        ('GradScaler("cuda", enabled=False)', None),
    ],
)
def test_get_scale_reads_the_scale_every_step_where_the_scaler_is_enabled(ctor, says):
    # sentence-transformers' fit loop reads it twice a step, audiocraft's once for a metric;
    # the read on one step in 100 is left alone
    found = check_code(GET_SCALE.format(ctor=ctor), select=["SFX206"])
    reads = [f for f in found if "get_scale()" in f.message]
    if says is None:
        assert reads == []  # a disabled scaler returns 1.0 without a read
        return
    assert [f.line for f in reads] == [9, 13]
    assert all(f.fix is None and ("when the scaler is enabled" in f.message) == bool(says) for f in reads)
    assert says in reads[0].message and "every N steps" in reads[0].message


def test_get_scale_of_anything_else_is_no_finding():
    src = GET_SCALE.format(ctor="make_scaler()").replace("from torch.amp import GradScaler\n", "")
    assert [f for f in check_code(src, select=["SFX206"]) if "get_scale()" in f.message] == []
    # ``self.scaler`` in a file that names GradScaler: a scaler by its name
    kept = (
        "import torch\n\nclass Solver:\n    def __init__(self):\n        self.scaler = torch.amp.GradScaler('cuda')\n\n"
        "    def train_step(self, loss, metrics):\n        self.scaler.scale(loss).backward()\n"
        "        metrics['grad_scale'] = self.scaler.get_scale()\n"
    )
    (finding,) = [f for f in check_code(kept, select=["SFX206"]) if "get_scale()" in f.message]
    assert finding.line == 9 and "when the scaler is enabled" in finding.message


def test_a_tokenizers_tensors_are_read_without_a_wait():
    # sd-scripts' ``if ids_chunk[-2] != tokenizer.eos_token_id:`` on ``tokenizer(caption,
    # return_tensors="pt").input_ids`` (new CPU tensors, likely); a model's output is still reported
    src = (
        "import torch\n\n\ndef encode(tokenizer, captions, model, eos):\n    out = []\n"
        "    for caption in captions:\n"
        "        input_ids = tokenizer(caption, padding='max_length', return_tensors='pt').input_ids\n"
        "        ids_chunk = torch.cat((input_ids[0].unsqueeze(0), input_ids[1:5], input_ids[-1].unsqueeze(0)))\n"
        "        if ids_chunk[-2] != eos:\n            ids_chunk[-1] = eos\n"
        "        enc = tokenizer(caption, return_tensors='pt')\n"
        "        if enc['attention_mask'].sum() > 3:\n            out.append(ids_chunk)\n"
        "        gpu = model(ids_chunk.cuda())\n"
        "        if gpu.sum() > 0:\n            out.append(gpu)\n    return out\n"
    )
    assert [f.line for f in check_code(src, select=["SFX206"])] == [15]
    # another keyword, or none: no tokenizer's output by that sign
    other = src.replace("return_tensors='pt'", "return_tensors='np'")
    assert [f.line for f in check_code(other, select=["SFX206"])] == [9, 12, 15]


def test_a_branch_that_calls_code_syncfix_cannot_see_offers_torch_where_only_if_it_is_pure():
    """imagen's ``if ... not torch.all(is_last): renoised = scheduler.q_sample_from_to(img, ...)``:
    the call draws random numbers, which ``torch.where`` would draw on every step: the message
    says so."""
    from syncfix import check_code

    src = (
        "import torch\n"
        "def sample(unet, img, steps, scheduler):\n"
        "    for t in steps:\n"
        "        img = unet(img.cuda(), t)\n"
        "        if not torch.all(img > 0):\n"
        "            img = scheduler.renoise(img, t)\n"
        "    return img\n"
    )
    (f,) = check_code(src, select=["SFX206"])
    assert "computes `img` with calls syncfix cannot see into" in f.message and "draw no random numbers" in f.message
    assert "only choose values" not in f.message
    (g,) = check_code(src.replace("scheduler.renoise(img, t)", "img * 0.5"), select=["SFX206"])
    assert "only choose values" in g.message


def test_a_break_of_an_inner_loop_is_not_said_to_leave_the_loop_of_the_test():
    # llm-awq's token scan: the `break` ends the `for` inside the branch, not the decode loop
    from syncfix.api import check_code

    src = (
        "import torch\n\n\ndef stream(model, ids, n):\n    for _ in range(n):\n        out = model(ids)\n"
        "        k = torch.sum(ids == 7)\n        if k == 1:\n            for t in range(3):\n                break\n"
        "            ids = ids + 1\n        if k == 2:\n            break\n        ids = out\n"
    )
    found = {f.line: f.message for f in check_code(src, path="m.py") if f.code == "SFX206"}
    assert "whether to leave the loop" not in found[8]
    assert "whether to leave the loop" in found[12]
