"""What SFX105 says (its fixtures check where it reports)."""

from __future__ import annotations

import pytest

from syncfix import check_code, fix_code
from syncfix.advice import Explainer

from ..support import LOOP, run_snippet
from ..support import messages_in_loop as _messages


def test_d2h_collected_value_suggests_event_wait():
    (msg,) = _messages("    out.append(x.cpu())\n", "SFX105")
    assert "only collected" in msg and "non_blocking=True" in msg
    # as reported, no generic no-fix reason is added that contradicts it
    findings = check_code(LOOP + "    out.append(x.cpu())\n", select=["SFX105"])
    shown = Explainer(findings, unsafe_fixes=False)(findings[0])
    assert "only collected" in shown and "read on the host in the loop" not in shown


def test_d2h_value_read_now_says_it_must_wait():
    # a streamer or a queue's consumer reads what is put at once: not "only collected"
    for body in ("    print(x.cpu())\n", "    out.append(x.cpu().tolist())\n", "    y = x.tolist()\n",
                 "    streamer.put(x.cpu())\n"):
        (msg,) = _messages(body, "SFX105")
        assert "reads the value here" in msg, body


def test_d2h_maybe_cpu_device_is_hedged():
    src = (
        "import torch\nd = 'cuda' if torch.cuda.is_available() else 'cpu'\n"
        "x = torch.ones(3, device=d)\nfor _ in range(3):\n    print(x.cpu())\n"
    )
    (finding,) = check_code(src, select=["SFX105"])
    assert "when the tensor is on CUDA" in finding.message


HOST_LIST = """
import torch

dev = "cuda" if torch.cuda.is_available() else "cpu"


def f(groups):
    out = ()
    for _ in range(3):
        lengths = torch.tensor([len(g) for g in groups], device=dev{dtype})
        widest = lengths.{high}().item()
        counts = []
        for g in groups:
            counts.append(len(g) * 2 - 7)
        counts = torch.tensor(counts, device=dev{dtype})
        fewest = counts.{low}().item()
        out = out + (widest, fewest, counts.shape)
    return out
"""


def test_sfx105_host_list_reduction_keeps_values_and_types():
    # `t.max().item()` of `t = torch.tensor(ints)` -> `max(ints)` (unsafe): the same Python
    # ints for int64 and int32 tensors; an empty list raises in both (another exception type)
    pytest.importorskip("torch")
    for dtype in ("", ", dtype=torch.long", ", dtype=torch.int32"):
        for high, low in (("max", "min"), ("amax", "amin")):
            src = HOST_LIST.format(dtype=dtype, high=high, low=low)
            fixed = fix_code(src, select=["SFX105"], unsafe_fixes=True)
            assert f"{high}(lengths_host)".replace("amax", "max") in fixed and "min(counts_host)" in fixed, fixed
            assert fix_code(src, select=["SFX105"]) == src  # unsafe only
            for groups in ([[1, 2], [], [3, 4, 5]], [[0] * 9]):
                before = run_snippet(src.replace("def f(groups)", f"def f(groups={groups!r})"))
                after = run_snippet(fixed.replace("def f(groups)", f"def f(groups={groups!r})"))
                assert before == after and type(before[1][0]) is type(after[1][0]) is int
            empty_before = run_snippet(src.replace("def f(groups)", "def f(groups=())"))
            empty_after = run_snippet(fixed.replace("def f(groups)", "def f(groups=())"))
            assert empty_before[0] == empty_after[0] == "raised"


READ_AGAIN = """
import torch

dev = "cuda" if torch.cuda.is_available() else "cpu"


def f(make=lambda v: torch.tensor(v, device=dev), values=(3.0, 4.5, -0.0, 2**40 + 0.5)):
    out = []
    for v in values:
        total = make(v)  # a tensor syncfix cannot name
        n = int(total.item())
        if abs(n - total.item()) > 1e-4:
            out.append(("off", n))
        seen = total.item()
        out.append((seen, total.item() * 2))
    return out
"""


def test_sfx105_read_again_keeps_values():
    # `n = int(t.item()); if abs(n - t.item()) > eps:` -> one read used twice (unsafe): the same
    # results, -0.0 and float32 rounding included
    fixed = fix_code(READ_AGAIN, select=["SFX105"], unsafe_fixes=True)
    assert fixed.count("total_value = total.item()") >= 1 and fix_code(READ_AGAIN, select=["SFX105"]) == READ_AGAIN
    before, after = run_snippet(READ_AGAIN), run_snippet(fixed)
    assert repr(before) == repr(after), (fixed, before, after)


ELEMENTS = """
import torch


def f(make, values, shape):
    out = []
    for _ in range(2):
        t = make(values, shape)  # a tensor syncfix cannot name
        row = int(t[0].cpu().item()), t[1].item(), t[2].detach().item()
        out.append(row)
    return out
"""


@pytest.mark.parametrize(
    "values, shape, dtype",
    [
        ([3, -7, 2**40], (3,), "int64"),
        ([0.5, -0.0, 1e30], (3,), "float32"),
        ([1, 0, 1], (3, 1), "bool"),
        ([1.0, 2.0, 3.0, 4.0], (4,), "float64"),
        ([1, 2, 3, 4, 5, 6], (3, 2), "int32"),  # rows of two: RuntimeError in both
        ([1, 2], (2,), "int64"),  # too short: IndexError before, RuntimeError after
    ],
)
def test_sfx105_element_reads_at_once_keep_values(values, shape, dtype):
    pytest.importorskip("torch")
    fixed = fix_code(ELEMENTS, select=["SFX105"], unsafe_fixes=True)
    assert "t_values = t[0:3].reshape(3).tolist()" in fixed and fix_code(ELEMENTS, select=["SFX105"]) == ELEMENTS
    make = f"lambda v, s: torch.tensor(v, dtype=torch.{dtype}).reshape(s)"
    call = f"def f(make={make}, values={values!r}, shape={shape!r})"
    before = run_snippet(ELEMENTS.replace("def f(make, values, shape)", call))
    after = run_snippet(fixed.replace("def f(make, values, shape)", call))
    if len(values) < 3:
        assert before[:2] == ("raised", "IndexError") and after[:2] == ("raised", "RuntimeError")
    elif before[0] == "raised":
        assert before[:2] == after[:2] == ("raised", "RuntimeError")
    else:
        assert repr(before) == repr(after), (before, after)


# The same read reported by SFX105 (no fix) and by a rule that owns it: one finding, not two.
DEFERRED = {
    # a value read only for a later log line: SFX401 keeps the tensor and reads it in the log
    "SFX401": (
        "import torch\n\ndef train(model, loader, opt):\n    for x in loader:\n"
        "        out = torch.relu(model(x))\n        d = out.mean().item()\n        out.sum().backward()\n"
        "        opt.step()\n        print(d)\n"
    ),
    # two reads in one statement, not provably one-element: SFX301 reports them together
    "SFX301": (
        "import torch\n\ndef step(a: torch.Tensor, b: torch.Tensor):\n    return a.item(), b.item()\n\n"
        "def run(loader):\n    for a, b in loader:\n        step(a, b)\n"
    ),
    # a value collected in a list read after the loop: SFX404 reads them all at once there
    "SFX404": (
        "import torch\n\ndef evaluate(model, loader):\n    losses = []\n    for x, y in loader:\n"
        "        loss = torch.nn.functional.cross_entropy(model(x), y)\n        losses.append(loss.item())\n"
        "    return sum(losses) / len(losses)\n"
    ),
}


@pytest.mark.parametrize("owner", sorted(DEFERRED))
def test_a_read_another_rule_reports_is_not_reported_twice(owner):
    src = DEFERRED[owner]
    both = check_code(src, select=["SFX105", owner])
    assert [f.code for f in both if f.code == owner], "the owning rule reports the read"
    assert not [f for f in both if f.code == "SFX105" and f.fix is None]
    # with the owner off, SFX105's finding is back: the deferral never hides a sync
    (alone,) = [f for f in check_code(src, select=["SFX105"]) if f.code == "SFX105"]
    assert alone.fix is None
    assert (alone.line, alone.column) in {(f.line, f.column) for f in both if f.code == owner}


def test_a_read_under_an_if_is_not_said_to_sync_every_step():
    src = (
        "import torch\n\ndef train(model, loader, opt, log_every):\n"
        "    for step, x in enumerate(loader):\n        loss = model(x)\n        loss.backward()\n"
        "        opt.step()\n        v = loss.item()\n"
        "        if step % log_every == 0:\n            w = loss.item()\n            print(v, w)\n"
    )
    every, sometimes = sorted(check_code(src, select=["SFX105"]), key=lambda f: f.line)
    assert "every iteration of its loop, if the tensor is on a GPU" in every.message
    assert "each time its `if` lets it run" in sometimes.message and "every iteration" not in sometimes.message


def test_a_read_under_an_if_that_picks_the_loops_items_runs_for_each_item_it_passes():
    # ijepa's gradient logger: `if p.grad is not None:` filters parameters, it does not throttle
    src = (
        "import torch\n\ndef grad_logger(named_params, stats):\n"
        "    for n, p in named_params:\n"
        "        if p.grad is not None and not n.endswith('.bias'):\n"
        "            stats.update(float(torch.norm(p.grad)))\n"
        "        if n.startswith('head') and len(stats) % 10 == 0:\n"
        "            stats.update(float(torch.norm(p)))\n"
        "    for i, p in enumerate(named_params):\n"
        "        if i != 0:\n"
        "            stats.update(float(torch.norm(p)))\n"
    )
    each, counted, first = sorted(check_code(src, select=["SFX105", "SFX302"]), key=lambda f: f.line)
    assert "every iteration of its loop that its `if` lets through" in each.message
    assert "each time its `if` lets it run" in counted.message
    assert "each time its `if` lets it run" in first.message


def test_float_and_int_of_a_tensor_are_reads_like_item():
    src = (
        "import torch\n\ndef train(model, loader, opt, accs):\n    for x, y in loader:\n"
        "        preds = model(x).argmax(1)\n        acc = float(preds.eq(y).sum())\n"
        "        n = int(x.shape[0])\n        lr = float(opt.param_groups[0]['lr'])\n"
        "        opt.step()\n        accs.append((acc, n, lr))\n"
    )
    (finding,) = check_code(src, select=["SFX105"])
    assert finding.line == 6 and finding.fix is None  # not the size, not the learning rate
    assert "GPU value read on the host" in finding.message


def test_a_read_outside_a_loop_syncs_as_often_as_its_function_runs():
    """gpt-neox's evaluation: the read after the evaluation loop runs once per ``evaluate`` call,
    which the training loop makes every N steps: not "every step"."""
    src = (
        "import torch\n\ndef evaluate(model, batches):\n    losses = []\n"
        "    for x in batches:\n        losses.append(model(x).mean())\n"
        "    return torch.stack(losses).mean().item()\n\n"
        "def train(model, opt, batches, val, every):\n"
        "    for it, x in enumerate(batches):\n        model(x).mean().backward()\n        opt.step()\n"
        "        if it % every == 0:\n            evaluate(model, val)\n"
    )
    (found,) = check_code(src, select=["SFX105"])
    assert "each time `evaluate` runs, if the tensor is on a GPU" in found.message
    assert "every iteration" not in found.message


def test_a_read_used_as_a_key_is_not_said_to_be_collected():
    """detr's ``groups[label.item()].append(k)``: the value picks the list (Python needs it)."""
    src = (
        "import torch\nfrom collections import defaultdict\n\ndef group(model, batches):\n"
        "    for x in batches:\n        groups = defaultdict(list)\n"
        "        for k, label in enumerate(model(x).argmax(-1)):\n"
        "            groups[label.item()].append(k)\n"
    )
    (f,) = check_code(src, select=["SFX105"])
    assert "only collected" not in f.message and "Python uses the value here" in f.message


def test_a_total_rebound_with_plus_is_left_to_sfx302():
    src = (
        "import torch\n\ndef f(model, loader):\n    total = 0.0\n    for x in loader:\n"
        "        total = total + model(x).sum().item()\n    return total\n"
    )
    assert [f.code for f in check_code(src, select=["SFX105", "SFX302"])] == ["SFX302"]


def test_reads_in_a_tuple_added_to_a_tuple_are_not_a_running_total():
    """``out = out + (s[0].item(), s[1].item())`` is no total SFX302 owns: SFX105 reads them at once."""
    src = (
        "import torch\n\ndef f(x: torch.Tensor, make):\n    out = ()\n    for _ in range(4):\n"
        "        stats = make(x)\n        out = out + (stats[0].item(), stats[1].item())\n    return out\n"
    )
    found = [f for f in check_code(src, select=["SFX105"], unsafe_fixes=True) if f.fix is not None]
    assert found and "one transfer" in found[0].fix.description


def test_a_read_after_an_inner_loop_of_steps_says_once_per_pass():
    # an epoch's end: the read follows the loop over the loader's batches
    src = (
        "import torch\n\ndef fit(model, loader, opt, epochs):\n    for epoch in range(epochs):\n"
        "        for x, y in loader:\n"
        "            loss = torch.nn.functional.cross_entropy(model(x), y)\n"
        "            loss.backward()\n        print(loss.item())\n"
    )
    (f,) = [f for f in check_code(src, select=["SFX105"]) if f.line == 8]
    assert "once per pass of its loop, after the loop before it" in f.message
    # a loop over a batch's keys inside a step is no loop of steps: the read is every step's
    step = (
        "import torch\n\ndef fit(model, loader, rank, totals):\n    for batch in loader:\n"
        "        for key in batch.keys():\n            batch[key] = batch[key].to(rank)\n"
        "        loss = model(batch['x'])['loss']\n        totals[0] += loss.item()\n"
    )
    (g,) = [f for f in check_code(step, select=["SFX105"]) if f.line == 8]
    assert "every iteration of its loop" in g.message and "once per pass" not in g.message
    # nor is a loop over the images of one batch (vit-pytorch's na_vit forward)
    images = (
        "import torch\n\ndef fit(model, batched_images, totals):\n    for images in batched_images:\n"
        "        for image in images:\n            model(image)\n"
        "        totals[0] += model(images).sum().item()\n"
    )
    (h,) = [f for f in check_code(images, select=["SFX105"]) if f.line == 7]
    assert "every iteration of its loop" in h.message and "once per pass" not in h.message
    # nor a loop over the items of a batch's dict (SlowFast's ``for key, val in meta.items():``)
    items = (
        "import torch\n\ndef train(loader, model, opt, log):\n    for x, y, meta in loader:\n"
        "        for k, v in meta.items():\n            meta[k] = v.cuda(non_blocking=True)\n"
        "        loss = model(x, y)\n        loss.backward()\n        opt.step()\n"
        "        value = loss.item()\n        log(value)\n"
    )
    (i,) = [f for f in check_code(items, select=["SFX105"]) if f.line == 10]
    assert "every iteration of its loop" in i.message and "once per pass" not in i.message
    # nor a loop over sub-batches inside a loop over a loader (hysts's ``zip(data_chunks, ...)``)
    chunks = (
        "import torch\n\ndef train(train_loader, model, split, meter):\n"
        "    for step, (data, targets) in enumerate(train_loader):\n"
        "        data_chunks, target_chunks = split(data, targets)\n"
        "        for data_chunk, target_chunk in zip(data_chunks, target_chunks):\n"
        "            loss = model(data_chunk, target_chunk)\n            loss.backward()\n"
        "        value = loss.item()\n        meter(value)\n"
    )
    (j,) = [f for f in check_code(chunks, select=["SFX105"]) if f.line == 9]
    assert "every iteration of its loop" in j.message and "once per pass" not in j.message


def test_a_read_after_an_early_return_runs_only_when_the_if_lets_it():
    # torchtitan's train_step: `if not should_log: return` before the logged reads
    src = (
        "import torch\n\nclass Trainer:\n    def train_step(self, model, batch, step):\n"
        "        loss = model(batch).mean()\n        loss.backward()\n"
        "        if not self.should_log(step):\n            return\n"
        "        v = loss.item()\n        print(v)\n"
    )
    (f,) = check_code(src, select=["SFX105"])
    assert "each time its `if` lets it run" in f.message and "each time `train_step` runs" not in f.message
    (g,) = check_code(src.replace("            return\n", "            print(step)\n"), select=["SFX105"])
    assert "each time `train_step` runs" in g.message


def test_a_read_after_a_loop_ending_break_runs_every_iteration():
    # pytorch-cifar100's lr_finder: `if n > args.num_iter: break` ends the loop, it skips no
    # iteration; a `continue` does
    src = (
        "import torch\n\ndef fit(model, loader, opt, num_iter):\n    n = 0\n    for x in loader:\n"
        "        if n > num_iter:\n            break\n"
        "        loss = model(x.cuda()).mean()\n        loss.backward()\n        opt.step()\n"
        "        v = loss.item()\n        n += 1\n        print(v)\n"
    )
    (f,) = check_code(src, select=["SFX105"])
    assert "every iteration of its loop" in f.message
    (g,) = check_code(src.replace("            break\n", "            continue\n"), select=["SFX105"])
    assert "each time its `if` lets it run" in g.message


@pytest.mark.parametrize(
    ("src", "line"),
    [
        # minimind's train_agent: a `for i in range(...)` of debug prints inside the step
        (
            "import torch\n\ndef fit(model, loader, opt, n):\n    for x, y in loader:\n"
            "        out = model(x)\n        for i in range(n):\n            print(i)\n"
            "        v = out.sum().item()\n        opt.step()\n        print(v)\n",
            8,
        ),
        # minRF's main_t2i.py: `for t, l in info["batchwise_loss"]` in the step is no pass over batches
        (
            "import torch\n\ndef fit(model, loader, bins):\n    for x in loader:\n"
            "        loss, info = model(x)\n        batchwise_loss = info['batchwise_loss']\n"
            "        for t, l in batchwise_loss:\n            bins[int(t * 10)] += l\n"
            "        print(loss.item())\n",
            9,
        ),
    ],
)
def test_an_inner_loop_inside_a_step_does_not_make_a_later_read_once_per_pass(src, line):
    (f,) = [f for f in check_code(src, select=["SFX105"]) if f.line == line]
    assert "every iteration of its loop" in f.message and "once per pass" not in f.message


CUDA_LOGS = """
import torch


def train(opt, writer, steps):
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    for step in range(steps):
        v_loss = torch.randn(8, device=device).mean()
        pg_loss = torch.randn(8, device=device).mean()
        opt.step()
        writer.add_scalar("losses/value_loss", v_loss.item(), step)
        writer.add_scalar("losses/policy_loss", pg_loss.item(), step)
        if step % 100 == 0:
            print(v_loss.item())
"""


def test_log_lines_of_cuda_tensors_no_logging_rule_takes_are_reported_here():
    """cleanrl's ppo.py: a metric per line at the end of each iteration. SFX401 has nothing to
    move them past, SFX402 no single log line to defer, SFX301 no quiet run to merge (each line
    calls the writer): each read is reported here, without a fix."""
    found = [(f.line, f.code, f.fix) for f in check_code(CUDA_LOGS, select=["SFX105", "SFX301", "SFX401", "SFX402"], unsafe_fixes=True)]
    assert found == [(11, "SFX105", None), (12, "SFX105", None)]
    # a log line SFX401 moves after the iteration's GPU work is its finding alone
    before = CUDA_LOGS.replace("        opt.step()\n", "").replace(
        '        writer.add_scalar("losses/policy_loss", pg_loss.item(), step)\n',
        '        writer.add_scalar("losses/policy_loss", pg_loss.item(), step)\n        opt.step()\n',
    )
    codes = sorted((f.line, f.code) for f in check_code(before, select=["SFX105", "SFX401"]))
    assert (10, "SFX401") in codes and (10, "SFX105") not in codes


def test_an_element_indexed_by_the_loop_variable_says_to_read_the_tensor_once():
    """Time-Series-Library's AutoCorrelation: ``-int(index[i])`` for each of ``top_k`` delays."""
    src = (
        "import torch\n\ndef corr(values, top_k, delays):\n    for b in range(3):\n"
        "        weights, index = torch.topk(values, top_k, dim=-1)\n"
        "        for i in range(top_k):\n"
        "            delays.append(torch.roll(values, -int(index[i]), -1))\n"
    )
    (f,) = check_code(src, select=["SFX105"])
    assert "indexed out of `index`" in f.message and "index.tolist()" in f.message
    # an element the loop reads at a fixed place is no such read
    (g,) = check_code(src.replace("index[i]", "index[0]"), select=["SFX105"])
    assert "indexed out of" not in g.message


@pytest.mark.parametrize("read", ["loss.cpu().item()", "loss.detach().cpu().item()"])
def test_a_read_of_a_host_copy_is_one_finding_at_the_copy(read):
    # fastMRI's ``loss_cpu = loss_gpu.cpu().item()``: the copy waits; the read of the copy does not
    src = (
        "import torch\n\ndef train(step, loader, opt):\n    for batch in loader:\n"
        "        loss_dict = step(batch)\n        for name in loss_dict:\n"
        f"            loss = loss_dict[name]\n            value = {read}\n            loss_dict[name] = value\n"
    )
    for unsafe in (False, True):
        (finding,) = check_code(src, select=["SFX105"], unsafe_fixes=unsafe)
        assert finding.message.startswith("Blocking device-to-host copy"), finding.message
    # a read of the tensor itself, or of a copy not reported as one, is still the sync it is
    for other in ("loss.item()", "loss.to('cpu')[0].item()"):
        (finding,) = check_code(src.replace(read, other), select=["SFX105"], unsafe_fixes=True)
        assert finding.message.startswith("GPU value read"), other


def test_a_read_in_a_file_that_imports_only_a_torch_library_is_a_likely_tensor_read():
    # deep-person-reid's engines import ``torchreid``, never ``torch``: ``loss.item()`` after
    # ``loss.backward()`` every step
    src = (
        "{imp}\n\n\nclass Engine:\n    def train_step(self, data):\n"
        "        loss = self.compute_loss(self.criterion, self.model(data), data)\n"
        "        loss.backward()\n        return {{'loss': loss.item()}}\n"
    )
    found = [f for f in check_code(src.format(imp="from torchreid import metrics"), path="engine.py") if f.code == "SFX105"]
    assert [f.line for f in found] == [8]
    assert not [f for f in check_code(src.format(imp="from mylib import metrics"), path="engine.py") if f.code == "SFX105"]


def test_a_read_an_event_timing_counts_on_says_so():
    # 2DGS: ``loss.item()`` then ``iter_start.elapsed_time(iter_end)`` each step; moving the read
    # away makes elapsed_time raise (the end event not yet complete)
    src = (
        "import torch\n\n\ndef train(model, loader, report):\n"
        "    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)\n"
        "    for x in loader:\n        start.record()\n        loss = model(x)\n        end.record()\n"
        "        ema = 0.4 * loss.item()\n        report(ema, {timing})\n"
    )
    (found,) = [f for f in check_code(src.format(timing="start.elapsed_time(end)"), path="train.py") if f.code == "SFX105"]
    assert "`start.elapsed_time(end)` later in the loop needs its events complete" in found.message
    assert "call `end.synchronize()` before it" in found.message
    (found,) = [f for f in check_code(src.format(timing="0"), path="train.py") if f.code == "SFX105"]
    assert "elapsed_time" not in found.message
    # k-diffusion: the end event is recorded after the read, which so cannot wait for it
    late = src.replace("        end.record()\n", "").replace("report(ema, {timing})", "end.record()\n        report(ema, {timing})")
    (found,) = [f for f in check_code(late.format(timing="start.elapsed_time(end)"), path="train.py") if f.code == "SFX105"]
    assert "elapsed_time" not in found.message


def test_reads_of_a_cpu_copy_are_not_reported_whatever_was_copied():
    # ``out.cpu()`` is on the host whatever ``out`` was (BackgroundMattingV2's export check):
    # the copy itself may sync, reading its result does not
    source = (
        "import torch\n\n\n"
        "def compare(outputs):\n"
        "    for out in outputs:\n"
        "        host = out.cpu()\n"
        "        print(host.sum().item(), host.max().tolist())\n"
    )
    assert [f.line for f in check_code(source, select=["SFX105"])] == []
    moved = source.replace("host = out.cpu()", "host = out.cuda()")
    assert [f.line for f in check_code(moved, select=["SFX105"])] == [7, 7]


def test_the_output_of_a_parameter_used_as_a_model_is_likely_a_tensor():
    # Sequence-Labeling's ``crf_scores = model(...)`` then ``crf_scores.to("cpu")`` every step:
    # a parameter the function calls ``.train()`` on is a model, and what it returns tensors
    source = (
        "import torch\n\n\n"
        "def train(model, loader):\n"
        "    model.train()\n"
        "    for x, lengths in loader:\n"
        "        scores, sorted_lengths = model(x)\n"
        "        decoded = decode(scores.to('cpu'), sorted_lengths.tolist())\n"
    )
    assert [f.line for f in check_code(source, select=["SFX105"])] == [8, 8]
    unknown = source.replace("    model.train()\n", "")  # a callable syncfix cannot name
    assert [f.line for f in check_code(unknown, select=["SFX105"])] == []


LIGHTNING = """\
import torch
import lightning.pytorch as pl


class Diffusion({base}):
    def training_step(self, batch, batch_idx):
        loss = self.model(batch["x"]).mean()
        self.log(name="trainer/loss", value=loss.item(), on_step=True)
        return loss
"""


def test_a_value_read_for_lightnings_log_says_the_log_takes_the_tensor():
    # mdlm's training step: `self.log(..., value=loss.item())`; Lightning takes tensors
    (lit,) = [f.message for f in check_code(LIGHTNING.format(base="pl.LightningModule")) if f.code == "SFX105"]
    assert "Lightning's `self.log` takes the tensor (`loss.detach()`)" in lit
    # a class of the project with its own `log`: Python uses the value, as far as syncfix knows
    (other,) = [f.message for f in check_code(LIGHTNING.format(base="torch.nn.Module")) if f.code == "SFX105"]
    assert "Lightning" not in other and "Python uses the value here" in other
