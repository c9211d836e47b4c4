"""A project that names an accelerator other than CUDA (analysis/accelerators.py) gets no copy
fix that rests on "a device syncfix cannot name is CUDA or the CPU" (nanochat picks "mps" in one
module and copies to that device in others)."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest
from click.testing import CliRunner

from syncfix.analysis.accelerators import names_other_accelerator
from syncfix.cli import cli


@pytest.mark.parametrize(
    "code",
    [
        'device_type = "mps"\n',
        'dev = torch.device("xla:0")\n',
        "import torch\nok = torch.backends.mps.is_available()\n",
        "import torch\ntorch.xpu.synchronize()\n",
        "import torch_xla.core.xla_model as xm\n",
        "from torch_npu import npu\n",
        'parser.add_argument("--device", choices=["cuda", "cpu", "mps"])\n',
        # a device option's help: the user may pass it on (makemore)
        'parser.add_argument("--device", help="cuda, cpu or mps")\n',
        "p.add_argument('--device', help='examples: cpu|cuda|cuda:2|mps')\n",
        "s = 'run on xla:0 or cuda'\n",
        "def f(:\n    'mps'\n",  # does not parse: read as text that may name it
    ],
)
def test_code_that_names_another_accelerator(code):
    assert names_other_accelerator(code.encode())


@pytest.mark.parametrize(
    "code",
    [
        'device = "cuda" if torch.cuda.is_available() else "cpu"\n',
        "# runs on mps too, some day\nx = 1\n",
        '"timestamps", "num_mps", "torch.mps.foo"\n',
        "timestamps = [1, 2]\nmps_count = 3\n",
        "import torch\ntorch.cuda.synchronize()\n",
    ],
)
def test_code_that_names_no_other_accelerator(code):
    assert not names_other_accelerator(code.encode())


COMMON = """
import torch

def pick():
    if torch.cuda.is_available():
        return "cuda"
    elif torch.backends.mps.is_available():
        return "mps"
    return "cpu"
"""

TRAIN = """
import torch
import common

def train(model, loader, device):
    for step in range(100):
        x = torch.randn(64, 64).to(device)
        n = torch.tensor([1.5, 2.5], device=device)
        model(x, n)
"""


def _project(root: Path, files: dict[str, str], pyproject: str = "") -> Path:
    (root / "pyproject.toml").write_text(pyproject)
    for rel, text in files.items():
        (root / rel).write_text(textwrap.dedent(text).lstrip())
    return root


def _findings(root: Path) -> dict[tuple[int, str], dict]:
    result = CliRunner().invoke(
        cli,
        ["check", "--no-cache", "--unsafe-fixes", "--select", "SFX101,SFX102", "-o", "json", "--exit-zero", str(root / "train.py")],
    )
    assert result.exit_code == 0, result.output
    return {(f["location"]["row"], f["code"]): f for f in json.loads(result.output)}


def test_copies_to_an_unnamed_device_get_no_fix_where_the_project_names_mps(tmp_path):
    (tmp_path / "a").mkdir()
    alone = _findings(_project(tmp_path / "a", {"train.py": TRAIN}))
    assert {k: f["fix"]["applicability"] for k, f in alone.items()} == {(6, "SFX101"): "unsafe", (7, "SFX102"): "unsafe"}

    (tmp_path / "b").mkdir()
    root = _project(tmp_path / "b", {"train.py": TRAIN, "common.py": COMMON})
    found = _findings(root)
    assert set(found) == {(6, "SFX101"), (7, "SFX102")}
    for f in found.values():
        assert f["fix"] is None
        assert "(module `common` names it)" in f["message"] and 'non_blocking=(torch.device(device).type == "cuda")' in f["message"]
    # a tensor built with device= takes no non_blocking: it is built first, then copied
    assert "build it without `device=`" in found[(7, "SFX102")]["message"]
    assert "build it without" not in found[(6, "SFX101")]["message"]

    # another program of the project (one train.py neither imports nor is imported by) may
    # name one: train.py's device is not picked there
    (tmp_path / "d").mkdir()
    root = _project(tmp_path / "d", {"train.py": TRAIN, "common.py": "X = 1\n", "demo.py": COMMON})
    assert all(f["fix"] is not None for f in _findings(root).values())

    # a program that imports modules by a computed name may include any module: the device
    # picked where it does (Time-Series-Library's models, loaded by importlib) reaches train.py
    (tmp_path / "e").mkdir()
    loader = "import importlib\nimport common\n\ndef load(name):\n    return importlib.import_module(name)\n"
    root = _project(tmp_path / "e", {"train.py": TRAIN.replace("import common\n", ""), "common.py": COMMON, "run.py": loader})
    assert all(f["fix"] is None and "(module `common` names it)" in f["message"] for f in _findings(root).values())
    # a literal name is an import like any other: train.py is not in that program
    root = _project(tmp_path / "e", {"run.py": loader.replace("import_module(name)", 'import_module("json")')})
    assert all(f["fix"] is not None for f in _findings(root).values())

    # declared: the project runs on CUDA and the CPU only, whatever else its code names
    (tmp_path / "c").mkdir()
    root = _project(tmp_path / "c", {"train.py": TRAIN, "common.py": COMMON}, '[tool.syncfix.torch]\ndevices = ["cuda", "cpu"]\n')
    assert all(f["fix"] is not None for f in _findings(root).values())


SCALED = """
import torch
import common

class Scaled(torch.nn.Module):
    def forward(self, x, scale, offset):
        if isinstance(scale, (int, float)):
            x = x * torch.tensor(scale, device=x.device, dtype=x.dtype)
        if isinstance(offset, (int, float)):
            x = x + torch.tensor(offset, device=x.device)
        return x
"""


def test_a_narrowed_number_is_filled_where_the_project_names_mps(tmp_path):
    # a fill copies nothing, so another accelerator does not hold it back (peft's embed scale);
    # without dtype= a numpy float64 passing the isinstance test would build float64: no fill
    found = _findings(_project(tmp_path, {"train.py": SCALED, "common.py": COMMON}))
    assert set(found) == {(7, "SFX102"), (9, "SFX102")}
    fill = found[(7, "SFX102")]["fix"]
    assert fill["applicability"] == "unsafe"
    assert [e["content"].strip() for e in fill["edits"]] == ["x = x * torch.full((), scale, device=x.device, dtype=x.dtype)"]
    assert found[(9, "SFX102")]["fix"] is None
    assert "(module `common` names it)" in found[(9, "SFX102")]["message"]


LOOP = """
import torch
import common


def train(model, loader, opt):
    total = 0.0
    for x, y in loader:
        loss = model(x, y)
        loss.backward()
        opt.step()
        total += loss.item()
    return total
"""


def test_a_float64_total_on_an_unnamed_device_gets_no_fix_where_the_project_names_mps(tmp_path):
    # MPS has no float64: the accumulator SFX302 would make on the loss's device
    def fixes(root: Path) -> list:
        result = CliRunner().invoke(
            cli, ["check", "--no-cache", "--unsafe-fixes", "--select", "SFX302", "-o", "json", "--exit-zero", str(root / "train.py")]
        )
        return [(f["fix"] or {}).get("applicability") for f in json.loads(result.output)]

    (tmp_path / "a").mkdir()
    assert fixes(_project(tmp_path / "a", {"train.py": LOOP})) == ["unsafe"]
    (tmp_path / "b").mkdir()
    root = _project(tmp_path / "b", {"train.py": LOOP, "common.py": COMMON})
    assert fixes(root) == [None]
