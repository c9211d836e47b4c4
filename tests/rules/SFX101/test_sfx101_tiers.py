"""SFX101's tiers on the CPU: what is proven, what rests on a likely fact (and how a user makes
it safe), and what the no-fix messages tell the user to do."""

from __future__ import annotations

import json
import textwrap

import pytest
from click.testing import CliRunner

from syncfix import check_code, fix_code
from syncfix.cli import cli
from syncfix.model import Applicability

TRAIN = textwrap.dedent(
    """\
    def train_one_epoch(model, loader, optimizer):
        for x, y in loader:
            x = x.cuda()
            y = y.to("cuda")
            model(x, y).backward()
            optimizer.step()
    """
)
TRAIN_FIXED = TRAIN.replace("x.cuda()", 'x.to("cuda", non_blocking=True)').replace(
    'y.to("cuda")', 'y.to("cuda", non_blocking=True)'
)


def test_batch_items_of_an_unseen_loader_get_an_unsafe_fix_that_names_the_config_key():
    findings = check_code(TRAIN, select=["SFX101"])
    assert [f.line for f in findings] == [3, 4]
    for f in findings:
        assert f.fix is not None and f.fix.applicability is Applicability.UNSAFE
        assert 'extend-safe-fixes = ["SFX101"]' in f.fix.description
    assert fix_code(TRAIN, select=["SFX101"]) == TRAIN
    assert fix_code(TRAIN, select=["SFX101"], unsafe_fixes=True) == TRAIN_FIXED


def test_extend_safe_fixes_makes_the_likely_fix_apply(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "pyproject.toml").write_text('[tool.syncfix]\nextend-safe-fixes = ["SFX101"]\n')
    (tmp_path / "train.py").write_text(TRAIN)
    result = CliRunner().invoke(cli, ["apply", "--no-cache", "train.py"], catch_exceptions=False)
    assert (tmp_path / "train.py").read_text() == TRAIN_FIXED, result.output


@pytest.mark.parametrize(
    ("snippet", "says"),
    [
        # neither a tensor nor a batch item: annotate it
        ("def f(model, n):\n    for _ in range(n):\n        s = model.state.cuda()\n",
         "annotate it as `torch.Tensor`"),
        # a batch written after the copy is queued
        ("def f(loader):\n    for b in loader:\n        y = b.cuda()\n        b.zero_()\n",
         "written again before a non-blocking copy"),
        # the device may be anything and the tensor anywhere
        ("import torch\ndef f(x: torch.Tensor, args):\n    for _ in range(3):\n"
         "        y = x.to(args.device)\n",
         "name the device"),
        # a try that catches the copy's error
        ("def f(loader):\n    for b in loader:\n        try:\n            b = b.cuda()\n"
         "        except Exception:\n            pass\n",
         "inside a try whose handler catches its error"),
    ],
)
def test_no_fix_messages_say_what_to_do(snippet, says, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "a.py").write_text(snippet)
    findings = check_code(snippet, select=["SFX101"], unsafe_fixes=True)
    assert len(findings) == 1 and findings[0].fix is None
    out = CliRunner().invoke(cli, ["check", "--no-cache", "--isolated", "--unsafe-fixes", "a.py"])
    assert says in " ".join(out.output.split()), out.output


def test_a_cpu_to_cpu_to_returns_the_tensor_itself():
    """The fact that makes a fix exact for a ``cuda|cpu`` device when the source is on the CPU."""
    torch = pytest.importorskip("torch")
    t = torch.arange(6.0)
    assert t.to("cpu", non_blocking=True) is t
    assert t.to(torch.device("cpu"), non_blocking=True) is t


def test_copy_between_gpus_is_not_reported():
    """``.to("cuda:0")`` of a tensor provably on a GPU copies between devices: the host does not
    wait for it, so there is nothing to report (nor to fix)."""
    src = (
        "import torch\ndef step(xs):\n    for x in xs:\n"
        "        y = torch.randn(4, device=\"cuda:1\")\n"
        "        z = y.to(\"cuda:0\")\n        w = (y * 2).cuda()\n        print(z, w)\n"
    )
    assert [f.code for f in check_code(src, select=["SFX101"])] == []
    on_the_cpu = src.replace(', device="cuda:1"', "")  # the same copies from the host are reported
    assert [f.code for f in check_code(on_the_cpu, select=["SFX101"])] == ["SFX101", "SFX101"]


def test_a_copy_to_an_unnamed_device_is_said_to_wait_only_on_a_gpu():
    src = (
        "import torch\n\ndef step(A, n: int, device):\n    for _ in range(n):\n"
        "        eye = torch.eye(n).to(device)\n        cuda = torch.eye(n).to('cuda')\n        A = A @ eye @ cuda\n"
    )
    unnamed, named = sorted(check_code(src, select=["SFX101"], unsafe_fixes=True), key=lambda f: f.line)
    assert unnamed.message.startswith("Blocking host-to-device copy if the device is a GPU's")
    assert named.message.startswith("Blocking host-to-device copy: the CPU waits")


TRAIN_ON_DATASET = textwrap.dedent(
    """\
    import torch
    from torch.utils.data import DataLoader


    def train(model, dataset):
        device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
        for x in DataLoader(dataset, batch_size=2):
            model(x.to(device))
    """
)


@pytest.mark.parametrize(
    ("item", "placed"),
    [
        ("return self.data[i : i + 8].long()", False),
        ("return self.data[i : i + 8].long().to(self.device)", True),
        ("return self.data[i : i + 8].cuda()", True),
    ],
)
def test_a_dataset_in_another_file_that_places_its_items_makes_batches_of_any_device(
    item, placed, tmp_path, monkeypatch
):
    """The default collate keeps the device of the dataset's items, and the dataset a loader
    reads may be built in any file of the project: one that places its items (on the GPU)
    makes a copy to a device that may be the CPU a possible device-to-host one."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / ".git").mkdir()
    (tmp_path / "train.py").write_text(TRAIN_ON_DATASET)
    (tmp_path / "data.py").write_text(
        "from torch.utils.data import Dataset\n\n\nclass Windows(Dataset):\n"
        "    def __init__(self, data, device):\n        self.data, self.device = data, device\n\n"
        f"    def __getitem__(self, i):\n        {item}\n"
    )
    (tmp_path / "main.py").write_text(
        "import torch\nfrom data import Windows\nfrom train import train\n\n"
        "train(torch.nn.Linear(8, 1), Windows(torch.arange(100), 'cuda'))\n"
    )
    out = CliRunner().invoke(cli, ["apply", "--no-cache", "train.py"], catch_exceptions=False)
    fixed = "non_blocking=True" in (tmp_path / "train.py").read_text()
    assert fixed is not placed, out.output


def test_a_dataset_that_places_its_items_reaches_only_the_programs_that_import_it(tmp_path, monkeypatch):
    """syncfix's own examples sit in a project whose test fixtures place items on the GPU; those
    datasets never reach the examples' loaders."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / ".git").mkdir()
    (tmp_path / "train.py").write_text(TRAIN_ON_DATASET)
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "fake_data.py").write_text(
        "from torch.utils.data import Dataset\n\n\nclass OnGpu(Dataset):\n"
        "    def __getitem__(self, i):\n        return self.data[i].cuda()\n"
    )
    out = CliRunner().invoke(cli, ["apply", "--no-cache", "train.py"], catch_exceptions=False)
    assert "non_blocking=True" in (tmp_path / "train.py").read_text(), out.output


def test_a_module_that_names_only_the_current_stream_uses_no_other_stream():
    # stylegan2's training loop times its phases with ``Event.record(torch.cuda.current_stream(device))``
    src = (
        "import torch\n\ndef train(n, model, device):\n"
        "    start = torch.cuda.Event(enable_timing=True)\n"
        "    for _ in range(n):\n        images = torch.randn(64, 3).to('cuda')\n"
        "        start.record(torch.cuda.current_stream(device))\n        model(images)\n"
    )
    (finding,) = check_code(src, select=["SFX101"])
    assert finding.fix is not None and finding.fix.applicability == "safe"
    # a stream of its own: copy ordering is not syncfix's to prove
    side = src.replace("        model(images)\n", "        with torch.cuda.stream(torch.cuda.Stream()):\n            model(images)\n")
    assert all(f.fix is None for f in check_code(side, select=["SFX101"]))


# Lightning moves a step's batch to the module's device before ``training_step`` gets it
# (nanodet's TrainingTask passes it on to a helper, and ``test_step`` through ``predict``): those
# copies return their tensors. A class that is no LightningModule, or that overrides
# ``transfer_batch_to_device``, gets its batch as its caller made it.
LIGHTNING = '''\
import torch
from pytorch_lightning import LightningModule


class Task(LightningModule):
    def __init__(self, model):
        super().__init__()
        self.model = model

    def _prepare(self, batch):
        batch_imgs = batch["img"]
        if isinstance(batch_imgs, list):
            batch["img"] = torch.stack([img.to(self.device) for img in batch_imgs])
        return batch

    def predict(self, batch, batch_idx=None):
        batch = self._prepare(batch)
        return self.model(batch["img"])

    def training_step(self, batch, batch_idx):
        batch = self._prepare(batch)
        batch_targets = batch["target"]
        batch_targets = [t.to(self.device) for t in batch_targets]
        return torch.nn.functional.mse_loss(self.model(batch["img"]), torch.stack(batch_targets))

    def test_step(self, batch, batch_idx):
        return self.predict(batch, batch_idx)


class OwnTransfer(LightningModule):
    def __init__(self, model):
        super().__init__()
        self.model = model

    def transfer_batch_to_device(self, batch, device, dataloader_idx):
        return batch

    def training_step(self, batch, batch_idx):
        batch_imgs = batch["img"]
        x = torch.stack([img.to(self.device) for img in batch_imgs])  # reported
        return self.model(x).sum()


class Plain(torch.nn.Module):
    def __init__(self, model):
        super().__init__()
        self.model = model

    def training_step(self, batch, batch_idx):
        batch_imgs = batch["img"]
        x = torch.stack([img.to(self.model.weight.device) for img in batch_imgs])  # reported
        return self.model(x).sum()
'''


@pytest.mark.parametrize("base", ["pytorch_lightning.LightningModule", "lightning.pytorch.LightningModule"])
def test_a_lightning_step_batch_is_on_the_device_already(base):
    module, name = base.rsplit(".", 1)
    src = LIGHTNING.replace("from pytorch_lightning import LightningModule", f"from {module} import {name}")
    findings = check_code(src, select=["SFX101"], unsafe_fixes=True)
    reported = [n for n, line in enumerate(src.splitlines(), 1) if line.endswith("# reported")]
    assert len(reported) == 2
    assert [f.line for f in findings] == reported


def test_a_factory_sized_by_a_tensor_is_a_cpu_tensor_not_on_that_tensors_device():
    # ``torch.zeros(z0.size())`` is made on the CPU: ``.size()`` places nothing (torchdiffeq's
    # latent ODE, every step); ``torch.zeros_like(z0)`` is on z0's device
    source = textwrap.dedent(
        """\
        import torch

        device = "cuda"


        def step(model, n):
            for _ in range(n):
                z0 = torch.randn(4, 8).to(device) * 2.0
                prior = torch.zeros(z0.size()).to(device)
                same = torch.zeros_like(z0).to(device)
                model(prior, same)
        """
    )
    assert [f.line for f in check_code(source, select=["SFX101"])] == [8, 9]


@pytest.mark.parametrize(("device", "safe"), [("'cuda:' + str(gpu)", True), ("'cuda:' + gpu", False), ("'cpu:' + str(gpu)", False)])
def test_a_cuda_device_string_built_by_concatenation(device, safe):
    source = textwrap.dedent(
        f"""\
        import torch
        from torch.utils.data import DataLoader


        def step(model, gpu: int, data):
            d = torch.device({device} if torch.cuda.is_available() else "cpu")
            for x in DataLoader(data, batch_size=4):
                model(x.to(d))
        """
    )
    (found,) = check_code(source, select=["SFX101"])
    assert (found.fix is not None and found.fix.applicability is Applicability.SAFE) is safe


MODEL = """
import torch


class Model:
    def __init__(self):
        self.device = torch.device("cuda")

    def feed_data(self, data):
        self.lq = data["lq"].to(self.device)
"""


@pytest.mark.parametrize(
    ("call", "fixed"),
    [
        ("model.feed_data(train_data)", "unsafe"),  # BasicSR's training loop, in another file
        ("model.feed_data(settings)", None),  # not the loop's batch: not reported
        # Restormer's train.py: a dict of the batch's parts, cut to a smaller patch each step
        ('lq = train_data["lq"]\n        lq = lq[:, :, 0:8]\n        model.feed_data({"lq": lq})', "unsafe"),
        ('lq = train_data["lq"]\n        lq = scale(lq)\n        model.feed_data({"lq": lq})', None),
        ('lq = train_data["lq"]\n        model.feed_data({"lq": lq, "cfg": settings})', None),
    ],
)
def test_a_method_handed_a_batch_from_another_files_loop_copies_a_likely_batch_item(tmp_path, monkeypatch, call, fixed):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "pyproject.toml").write_text("")
    (tmp_path / "model.py").write_text(MODEL)
    (tmp_path / "train.py").write_text(
        "def main(model, prefetcher, settings):\n    train_data = prefetcher.next()\n"
        f"    while train_data is not None:\n        {call}\n        train_data = prefetcher.next()\n"
    )
    result = CliRunner().invoke(cli, ["check", "--no-cache", "--unsafe-fixes", "-o", "json", "--select", "SFX101", "."])
    found = [f["fix"]["applicability"] if f["fix"] else None for f in json.loads(result.output) if f["filename"] == "model.py"]
    assert found == ([fixed] if fixed else []), result.output



ATTENTION = """\
# Swin's window attention (BiRefNet's backbone): the relative position bias table is a parameter
# of the module and its index a buffer; both move with the module, so `.to(device=q.device)` of
# them, for a `q` the module computed, is a cast (likely), not a copy: not reported. A plain
# tensor the class keeps is not moved with the module: its copy is reported.
import torch
from torch import nn


class WindowAttention(nn.Module):
    def __init__(self, dim: int, heads: int, window: int):
        super().__init__()
        self.heads = heads
        self.table = nn.Parameter(torch.zeros((2 * window - 1) ** 2, heads))
        self.register_buffer("index", torch.arange(window * window).repeat(window * window, 1))
        self.kept = torch.zeros(window * window, window * window)
        self.qkv = nn.Linear(dim, dim * 3)

    def forward(self, x):
        b, n, c = x.shape
        qkv = self.qkv(x).reshape(b, n, 3, self.heads, c // self.heads).permute(2, 0, 3, 1, 4)
        q, k, v = qkv.unbind(0)
        bias = self.table[self.index.view(-1)].view(n, n, -1).permute(2, 0, 1).unsqueeze(0).to(dtype=q.dtype, device=q.device)
        kept = self.kept.to(dtype=q.dtype, device=q.device)
        return (q @ k.transpose(-2, -1) + bias + kept).softmax(-1) @ v
"""


def test_a_modules_own_parameter_moved_to_its_outputs_device_is_no_copy(tmp_path, monkeypatch):
    # Swin's window attention in BiRefNet's backbone, a class another file imports (so syncfix
    # cannot name what `self.table` holds): the parameter and the buffer move with the module,
    # so `.to(device=q.device)` is a cast; a plain tensor the class keeps is copied (reported)
    monkeypatch.chdir(tmp_path)
    (tmp_path / "pyproject.toml").write_text("")
    (tmp_path / "attn.py").write_text(ATTENTION)
    (tmp_path / "build.py").write_text("from attn import WindowAttention\n\n\ndef build():\n    return WindowAttention(96, 3, 7)\n")
    result = CliRunner().invoke(cli, ["check", "--no-cache", "-o", "json", "--select", "SFX101", "."])
    lines = [f["location"]["row"] for f in json.loads(result.output) if f["filename"] == "attn.py"]
    assert lines == [ATTENTION.splitlines().index("        kept = self.kept.to(dtype=q.dtype, device=q.device)") + 1], result.output


EVAL = """\
import torch
from torch.utils.data import DataLoader

from misc import collate_fn


def evaluate(model, loader, device):
    for samples, targets in loader:
        samples = samples.to(device)
        model(samples)


def main(dataset, model, device):
    loader = DataLoader(dataset, batch_size=2, collate_fn=collate_fn)
    evaluate(model, loader, device)
"""


@pytest.mark.parametrize(
    ("narrow", "collate", "fixed"),
    [
        (True, ", collate_fn=collate_fn", None),
        (False, ", collate_fn=collate_fn", "unsafe"),
        # the default collate makes tensors (or raises): motion-diffusion-model's evaluation
        (True, "", "unsafe"),
    ],
)
def test_a_loaders_item_may_be_a_project_object_whose_to_takes_no_non_blocking(tmp_path, monkeypatch, narrow, collate, fixed):
    # YOLOS's COCO evaluation: its collate_fn builds `NestedTensor`s, whose `to(self, device)`
    # would raise a TypeError on `non_blocking=True`
    monkeypatch.chdir(tmp_path)
    (tmp_path / "pyproject.toml").write_text("")
    nested = "class NestedTensor:\n    def __init__(self, t):\n        self.t = t\n\n    def to(self, device):\n        return NestedTensor(self.t.to(device))\n\n\n" if narrow else ""
    (tmp_path / "misc.py").write_text(nested + "def collate_fn(batch):\n    return tuple(zip(*batch))\n")
    (tmp_path / "main.py").write_text(EVAL.replace(", collate_fn=collate_fn", collate))
    result = CliRunner().invoke(cli, ["check", "--no-cache", "--unsafe-fixes", "-o", "json", "--select", "SFX101", "."])
    found = [f["fix"]["applicability"] if f["fix"] else None for f in json.loads(result.output) if f["filename"] == "main.py"]
    assert found == [fixed], result.output
