"""Findings only where the sync repeats (the default); one-time code is quiet unless asked."""

from __future__ import annotations

import textwrap

import pytest
from click.testing import CliRunner

from syncfix.api import check_code
from syncfix.cli import cli

pytestmark = pytest.mark.only_repeated


def codes(src: str, path: str = "train.py", **kw) -> list[tuple[str, int]]:
    return [(f.code, f.line) for f in check_code(textwrap.dedent(src), path=path, **kw)]


SETUP_AND_LOOP = """\
import torch

model = torch.nn.Linear(3, 3)
w = torch.ones(3).cuda()

def main():
    bias = torch.zeros(3).cuda()
    for step in range(10):
        x = torch.ones(3).cuda()

if __name__ == "__main__":
    y = torch.ones(3).cuda()
    main()
"""


def test_one_time_code_is_quiet_and_loops_report():
    assert codes(SETUP_AND_LOOP) == [("SFX101", 9)]


def test_include_cold_reports_everything():
    assert codes(SETUP_AND_LOOP, include_cold=True) == [
        ("SFX101", 4),
        ("SFX101", 7),
        ("SFX101", 9),
        ("SFX101", 12),
    ]


def test_step_functions_and_what_loops_call_repeat():
    src = """\
    import torch

    class Net(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.scale = torch.ones(3).cuda()

        def forward(self, x):
            return x * torch.ones(3).cuda()

    def move():
        return torch.ones(3).cuda()

    def once():
        return torch.ones(3).cuda()

    def train():
        once()
        for step in range(10):
            move()
    """
    assert codes(src) == [("SFX101", 9), ("SFX101", 12)]


def test_the_step_hooks_of_a_hugging_face_trainer_and_lightning_repeat():
    # ``compute_loss`` runs every training step, ``prediction_step`` every evaluation step, and
    # a method they call on ``self`` with them; ``create_optimizer`` runs once, and so does a
    # module's top-level function that only shares a hook's name (a nested one is handed to an
    # engine: ignite's ``Engine(test_step)``)
    src = """\
    import torch
    from transformers import Trainer

    class MyTrainer(Trainer):
        def compute_loss(self, model, inputs):
            loss, metrics = self.get_batch_loss_metrics(model, inputs)
            return loss

        def get_batch_loss_metrics(self, model, inputs):
            loss = model(**inputs).loss
            return loss, {"loss": loss.detach().mean().item()}

        def prediction_step(self, model, inputs):
            return model(**inputs).loss.item()

        def create_optimizer(self):
            self.scale = self.model.scale.item()

    def predict_step(model):  # a plain function of a hook's name: a debug script's, one-time
        return model.scale.item()

    def run(engine_class, evaluator_data):
        def test_step(engine, batch):
            return batch.sum().item()
        return engine_class(test_step).run(evaluator_data)
    """
    assert [code for code in codes(src)] == [("SFX105", 11), ("SFX105", 14), ("SFX105", 24)]


def test_a_method_call_of_the_same_name_does_not_run_a_function():
    # `model.train()` in the loop is nn.Module's, not the script's `def train()`: its set-up
    # line runs once; a method called as `self.warmup()` in a loop does repeat
    src = """\
    import torch

    def train(model, loader):
        model(torch.zeros(1, 3).cuda())
        for x in loader:
            model.train()
            model(x).sum().backward()

    class Trainer:
        def warmup(self):
            self.model(torch.zeros(1, 3).cuda())

        def fit(self, loader):
            for x in loader:
                self.warmup()
                self.cooldown()

        if torch.cuda.is_available():
            def cooldown(self):
                self.model(torch.ones(1, 3).cuda())
    """
    assert codes(src) == [("SFX101", 11), ("SFX101", 20)]


def test_test_files_are_quiet_even_in_loops():
    src = """\
    import torch

    def test(model, loader):  # a training script's evaluation loop, not a pytest test
        for i in range(3):
            x = torch.ones(3).cuda()

    for i in range(3):
        y = torch.ones(3).cuda()
    """
    assert codes(src) == [("SFX101", 5), ("SFX101", 8)]
    assert codes(src, path="tests/test_copy.py") == []
    assert codes(src, path="pkg/conftest.py") == []
    # a ``test_*.py`` name outside a test folder is a test file only where it holds tests:
    # detectron2's ``test_time_augmentation.py`` is inference code
    assert codes(src, path="pkg/test_time_augmentation.py") == [("SFX101", 5), ("SFX101", 8)]
    assert codes("import pytest\n" + textwrap.dedent(src), path="pkg/test_copy.py") == []
    assert codes(src.replace("def test(", "def test_copy("), path="pkg/test_copy.py") == []
    # so is a ``*_test.py`` name: TCN's training scripts are ``add_test.py``, ``pmnist_test.py``
    assert codes(src, path="adding_problem/add_test.py") == [("SFX101", 5), ("SFX101", 8)]
    assert codes("import unittest\n" + textwrap.dedent(src), path="pkg/copy_test.py") == []


def test_a_test_function_in_a_library_file_is_quiet():
    # mamba's kernels module ends with ``def test_...():`` checks, run by pytest or from
    # ``__main__``: their loops are no training loop
    src = """\
    import torch

    def test_segsum_correctness():
        for case in range(3):
            x = torch.ones(3).cuda()

    def test_epoch(model, loader):  # an evaluation loop: it takes its model and loader
        for i in range(3):
            y = torch.ones(3).cuda()

    if __name__ == "__main__":
        test_segsum_correctness()
    """
    assert codes(src, path="pkg/kernels.py") == [("SFX101", 9)]
    assert codes(src, path="pkg/kernels.py", include_cold=True) == [("SFX101", 5), ("SFX101", 9)]
    # called from a loop, it repeats like any other function
    looped = src.replace('if __name__ == "__main__":', "for _ in range(9):")
    assert codes(looped, path="pkg/kernels.py") == [("SFX101", 5), ("SFX101", 9)]


def test_a_loader_built_at_set_up_still_gets_pinned():
    src = """\
    import torch
    from torch.utils.data import DataLoader

    def main(ds):
        loader = DataLoader(ds, batch_size=64)
        for x, y in loader:
            x = x.cuda()
    """
    assert "SFX103" in {c for c, _ in codes(src)}


def test_cli_flag_and_config_key(tmp_path):
    (tmp_path / "m.py").write_text(SETUP_AND_LOOP, encoding="utf-8")
    runner = CliRunner()
    quiet = runner.invoke(cli, ["check", str(tmp_path), "--no-cache", "-o", "concise"])
    loud = runner.invoke(cli, ["check", str(tmp_path), "--no-cache", "-o", "concise", "--include-cold"])
    assert quiet.output.count("SFX101") == 1
    assert loud.output.count("SFX101") == 4
    (tmp_path / "pyproject.toml").write_text("[tool.syncfix]\ninclude-cold = true\n", encoding="utf-8")
    configured = runner.invoke(cli, ["check", str(tmp_path), "--no-cache", "-o", "concise"])
    assert configured.output.count("SFX101") == 4


def test_a_memoized_function_is_one_time_code():
    """``@lru_cache`` runs the body once per distinct arguments, however often it is called."""
    src = """\
    import functools
    import torch

    @functools.lru_cache(maxsize=None)
    def filters(n):
        return torch.ones(n).cuda()

    def plain(n):
        return torch.ones(n).cuda()

    def run(steps):
        for _ in range(steps):
            filters(80)
            plain(80)
    """
    assert codes(src) == [("SFX101", 9)]


def test_the_library_api_finds_what_the_cli_finds_in_a_function_its_loops_call(tmp_path):
    """A read in a helper that only the file's own loop calls: ``check_code`` (no project
    around it) takes the helper to repeat as ``syncfix check`` on the file does."""
    src = textwrap.dedent(
        """\
        import torch

        def score(model, x):
            return model(x).mean().item()

        def run(model, batches):
            for x in batches:
                score(model, x)
        """
    )
    (tmp_path / "run.py").write_text(src)
    cli_out = CliRunner().invoke(cli, ["check", "--no-cache", "-o", "json", str(tmp_path / "run.py")])
    import json

    assert [(f["code"], f["location"]["row"]) for f in json.loads(cli_out.output)] == [("SFX105", 4)]
    assert codes(src, path="run.py") == [("SFX105", 4)]


INTERACTIVE = """\
import torch

def translate(model, src):
    prefix = torch.ones(3).cuda()
    out = []
    for _ in range(20):
        tok = model(src, prefix).argmax().item()
        out.append(tok)
    return out

def chat(model):
    while True:
        line = input("> ")
        src = torch.tensor([len(line)])
        print(translate(model, src))
        print(src.cuda())
        for i in range(3):
            print(torch.ones(i).cuda())

def train(model, loader):
    for x in loader:
        print(torch.ones(3).cuda())
"""


def test_a_loop_that_waits_for_input_does_not_repeat():
    # a chat or translation prompt: each time round waits for a person, so neither the loop's
    # own copy (line 16) nor the one-time part of what it calls (line 4) is worth a change;
    # the per-token loop it calls (line 7), a loop nested in it (line 18) and a plain loop (22) do
    found = codes(INTERACTIVE)
    assert ("SFX101", 4) not in found and ("SFX101", 16) not in found
    assert {("SFX101", 18), ("SFX101", 22)} <= set(found)
    assert any(line == 7 for _, line in found)
    cold = codes(INTERACTIVE, include_cold=True)
    assert {("SFX101", 4), ("SFX101", 16)} <= set(cold)


def test_a_loop_without_input_still_makes_what_it_calls_repeat():
    src = INTERACTIVE.replace('line = input("> ")', 'line = "a b"')
    assert {("SFX101", 4), ("SFX101", 16)} <= set(codes(src))


def test_what_a_loop_waiting_for_input_calls_in_another_file_does_not_repeat(tmp_path):
    (tmp_path / "pyproject.toml").write_text("")
    (tmp_path / "decode.py").write_text(INTERACTIVE.split("def chat")[0])
    (tmp_path / "chat.py").write_text(
        "from decode import translate\n\ndef chat(model):\n    while True:\n"
        "        line = input()\n        print(translate(model, line))\n"
    )
    (tmp_path / "bench.py").write_text(
        "from decode import translate\n\ndef bench(model, xs):\n    for x in xs:\n        translate(model, x)\n"
    )
    runner = CliRunner()
    out = runner.invoke(cli, ["check", "--no-cache", "-o", "concise", str(tmp_path / "decode.py")])
    assert "decode.py:4:" in out.output  # bench.py calls it from a plain loop
    (tmp_path / "bench.py").unlink()
    out = runner.invoke(cli, ["check", "--no-cache", "-o", "concise", str(tmp_path / "decode.py")])
    assert "decode.py:4:" not in out.output and "decode.py:7:" in out.output


def test_a_loop_that_asks_for_input_only_sometimes_still_repeats():
    # gpt-fast's benchmark loop reads a prompt only with --interactive: by default it repeats
    src = """\
    import torch

    def main(interactive):
        for i in range(10):
            if interactive:
                prompt = input()
            print(torch.ones(3).cuda())
        while True:
            try:
                prompt = input()
            except EOFError:
                break
            print(torch.ones(3).cuda())
    """
    # (printing the CUDA tensor is a sync of its own: SFX403)
    assert codes(src) == [("SFX101", 7), ("SFX403", 7)]
    assert codes(src, include_cold=True) == [("SFX101", 7), ("SFX403", 7), ("SFX101", 13), ("SFX403", 13)]


def test_an_attribute_made_on_first_use_is_one_time_code():
    # BasicSR's training-pair pool: made under `if not hasattr(self, ...)` on the first step
    src = """\
    import torch

    class Model:
        def forward(self, x):
            if not hasattr(self, "queue"):
                self.queue = torch.zeros(8).cuda()
                self.ptr = 0
            if self.cache is None:
                self.cache = torch.ones(3).cuda()
            if self.flag:
                y = torch.ones(3).cuda()
            if self.other is None:
                z = torch.ones(3).cuda()
            return x
    """
    assert codes(src) == [("SFX101", 11), ("SFX101", 13)]
    assert codes(src, include_cold=True) == [("SFX101", 6), ("SFX101", 9), ("SFX101", 11), ("SFX101", 13)]


def test_a_cache_refilled_when_its_inputs_change_is_one_time_code():
    # pytorch_ssim's SSIM.forward (BiRefNet's loss.py and many more): the window is rebuilt and
    # copied only when the channel count or dtype changes; the next call finds it in `self`
    src = """\
    import torch

    class SSIM(torch.nn.Module):
        def forward(self, img1, img2):
            channel = img1.size(1)
            if channel == self.channel and self.window.dtype == img1.dtype:
                window = self.window
            else:
                window = torch.ones(channel, 1, 11, 11).cuda()
                self.window = window
                self.channel = channel
            if channel == self.size:
                other = self.other
            else:
                other = torch.ones(channel).cuda()
                self.other = other
            if self.total.ndim == 0:
                self.total = torch.zeros(channel).cuda()
            else:
                self.total = self.total + torch.ones(channel).cuda()
            return window, other
    """
    # `self.size` is not stored again: no cache; ignite's accumulator stores on both sides: no cache
    assert codes(src) == [("SFX101", 15), ("SFX101", 18), ("SFX101", 20)]
    assert codes(src, include_cold=True) == [("SFX101", 9), ("SFX101", 15), ("SFX101", 18), ("SFX101", 20)]


def test_a_buffer_registered_on_first_use_is_one_time_code():
    # stable-diffusion's `to_rgb`: `if not hasattr(self, "colorize"): self.register_buffer(...)`
    src = """\
    import torch

    class Model(torch.nn.Module):
        def forward(self, x):
            if not hasattr(self, "colorize"):
                self.register_buffer("colorize", torch.randn(3, 4).cuda())
            if not hasattr(self, "other"):
                self.register_buffer("colorize", torch.randn(3, 4).cuda())
            return x
    """
    assert codes(src) == [("SFX101", 8)]
    assert codes(src, include_cold=True) == [("SFX101", 6), ("SFX101", 8)]


def test_a_value_made_once_per_key_of_a_cache_is_one_time_code():
    # edm2's torch_utils/misc.constant: made on a cache miss, then reused for that key
    src = """\
    import torch

    _cache = {}

    class Model:
        def forward(self, x, key):
            t = _cache.get(key, None)
            if t is None:
                t = torch.ones(3).cuda()
                _cache[key] = t
            if key not in _cache:
                _cache[key] = torch.zeros(3).cuda()
            u = _cache.get(key)
            if u is None:
                u = torch.ones(3).cuda()
            if key not in self.other:
                _cache[key] = torch.zeros(3).cuda()
            if key not in self.memo:
                self.memo[key] = torch.zeros(3).cuda()
            local = {}
            if key not in local:
                local[key] = torch.zeros(3).cuda()
            return x + t
    """
    # stored nowhere, under another cache, or in a cache made afresh by each call (peft's
    # per-forward `cached_invocation_tensors`): each call makes it again
    assert codes(src) == [("SFX101", 15), ("SFX101", 17), ("SFX101", 22)]
    assert [c for c in codes(src, include_cold=True) if c[0] == "SFX101"] == [
        ("SFX101", 9), ("SFX101", 12), ("SFX101", 15), ("SFX101", 17), ("SFX101", 19), ("SFX101", 22),
    ]


def test_what_runs_when_the_counter_equals_a_fixed_value_runs_once_per_pass():
    # edm2's calculate_metrics: `if batch_idx == num_batches - 1:` closes the statistics once
    src = """\
    import torch
    from tqdm import tqdm

    def stats(batches, n, fit):
        for i, x in enumerate(batches):
            if i == n - 1:
                w = torch.ones(3).cuda()
            if i == 0:
                w = torch.ones(3).cuda()
            if i == x:
                w = torch.ones(3).cuda()
            if i > 0:
                w = torch.ones(3).cuda()
        for epoch in range(n):
            for j in range(8):
                if j == 7:
                    w = torch.ones(3).cuda()
            fit()
        for k in tqdm(range(n)):  # hiera's benchmark: `if i == warm_up:` under a progress bar
            if k == n - 1:
                w = torch.ones(3).cuda()
    """
    # compared with what the loop changes, or not an equality: every step may run it
    assert codes(src) == [("SFX101", 11), ("SFX101", 13), ("SFX101", 17)]
    assert [c for c in codes(src, include_cold=True) if c[0] == "SFX101"] == [
        ("SFX101", 7), ("SFX101", 9), ("SFX101", 11), ("SFX101", 13), ("SFX101", 17), ("SFX101", 21),
    ]


def test_a_loop_whose_body_ends_in_break_runs_once():
    # vits's evaluate: one batch from the loader, then `break`; a `continue` may skip the break
    src = """\
    import torch

    def evaluate(loader):
        for x in loader:
            y = torch.ones(3).cuda()
            break

    def evaluate_valid(loader):
        for x in loader:
            if x is None:
                continue
            y = torch.ones(3).cuda()
            break

    def throughput(loader):  # FocalNet's: one batch, then `return`
        for x in loader:
            y = torch.ones(3).cuda()
            return y
    """
    assert codes(src) == [("SFX101", 12)]


def test_a_loop_over_one_item_runs_once():
    # yolov7's detect.py: `for opt.weights in ['yolov7.pt']: detect()` runs detect() once;
    # a loop around the one-item loop still repeats
    src = """\
    import torch

    def detect(weights):
        model = torch.ones(3).cuda()
        return model

    if __name__ == "__main__":
        for w in ["yolov7.pt"]:
            detect(w)

    def main(epochs):
        for epoch in range(epochs):
            for w in ("a",):
                x = torch.ones(3).cuda()
    """
    assert codes(src) == [("SFX101", 14)]
    assert codes(src, include_cold=True) == [("SFX101", 4), ("SFX101", 14)]


def test_the_message_of_a_raise_runs_once():
    # lerobot's ``raise FrameTimestampError(f"... {min_[~is_within_tol]} ...")``: on the error
    # path, once, as the error leaves the loop
    src = """\
    import torch

    def decode(ts, tol, n):
        for _ in range(n):
            d = torch.randn(8, device="cuda")
            ok = d <= tol
            if not bool(ok.all()):
                raise ValueError(f"too far: {d[~ok]}")
            y = d[ok]
    """
    assert codes(src) == [("SFX203", 7), ("SFX205", 9)]
    assert ("SFX205", 8) in codes(src, include_cold=True)


def test_a_walk_over_a_models_layers_repeats_only_where_the_code_around_it_does():
    # a conversion run once (nanodet's RepVGG weights) is quiet; the same walk in a step
    # function, or inside the training loop, repeats
    src = """\
    import torch

    def convert(model):
        weights = {}
        for name, module in model.named_modules():
            weights[name] = module.weight.detach().cpu().numpy()
        for i, (name, p) in enumerate(model.named_parameters()):
            weights[name] = p.detach().cpu().numpy()
        for k, v in model.state_dict().items():
            weights[k] = v.cpu().numpy()
        return weights

    def sanity_check(state_dict, pre):
        for k in list(state_dict.keys()):
            assert (state_dict[k] == pre[k]).all(), k  # (a `.cpu()` copy would be read on the host)

    class Net(torch.nn.Module):
        def forward(self, x):
            for m in self.modules():
                print(m.weight.detach().cpu().numpy())
            return x

    def train(model, loader):
        for step in range(10):
            for p in model.parameters():
                print(p.grad.norm().cpu().numpy())
        for layer in model.layers:
            print(layer.weight.cpu().numpy())

    if __name__ == "__main__":
        convert(torch.nn.Linear(2, 2))
        sanity_check(torch.nn.Linear(2, 2).state_dict(), {})
    """
    assert [line for _, line in codes(src, select=["SFX105"])] == [20, 26, 28]
    assert [line for _, line in codes(src, select=["SFX105"], include_cold=True)] == [6, 8, 10, 20, 26, 28]
    # moco's ``sanity_check``: a walk over a state dict passed in, run once
    assert ("SFX203", 15) not in codes(src) and ("SFX203", 15) in codes(src, include_cold=True)
