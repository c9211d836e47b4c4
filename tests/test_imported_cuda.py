"""On a GPU: a training step in one file, its loader, model and device built in another
(analysis/imported.py). ``syncfix apply`` (safe fixes only) on the two-file project makes the
batch copies non-blocking; the run gives bit-identical results with fewer syncs. Run with ``-s``
to see the counts."""

from __future__ import annotations

import importlib
import sys
import textwrap

import pytest
from click.testing import CliRunner

from syncfix.cli import cli

from .rules.support import assert_same_result, count_syncs

torch = pytest.importorskip("torch")

ENGINE = """
import torch


def train_one_epoch(model, loader, device, opt):
    losses = []
    for x, y in loader:
        x = x.to(device)
        y = y.to(device)
        loss = torch.nn.functional.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.detach())
    return losses
"""

TRAIN = """
import torch

from engine import train_one_epoch


def main():
    device = torch.device("cuda", torch.cuda.current_device())
    g = torch.Generator().manual_seed(0)
    data = torch.utils.data.TensorDataset(torch.randn(256, 64, generator=g), torch.randint(0, 4, (256,), generator=g))
    loader = torch.utils.data.DataLoader(data, batch_size=32)
    model = torch.nn.Linear(64, 4).to(device)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    losses = []
    for _ in range(2):
        losses += train_one_epoch(model, loader, device, opt)
    return losses, [p.detach() for p in model.parameters()]


if __name__ == "__main__":
    main()
"""


def _run(folder):
    sys.path.insert(0, str(folder))
    try:
        for name in ("engine", "train"):
            sys.modules.pop(name, None)
        return count_syncs(importlib.import_module("train").main, seed=0)
    finally:
        sys.path.remove(str(folder))
        for name in ("engine", "train"):
            sys.modules.pop(name, None)


@pytest.mark.cuda
def test_copies_in_a_step_function_of_another_file_become_non_blocking(tmp_path):
    folders = {}
    for side in ("before", "after"):
        folder = tmp_path / side
        folder.mkdir()
        (folder / "pyproject.toml").write_text("")
        (folder / "engine.py").write_text(textwrap.dedent(ENGINE).lstrip())
        (folder / "train.py").write_text(textwrap.dedent(TRAIN).lstrip())
        folders[side] = folder
    result = CliRunner().invoke(cli, ["apply", "--no-cache", "--select", "SFX101", str(folders["after"])])
    assert result.exit_code == 0, result.output
    rewritten = (folders["after"] / "engine.py").read_text()
    assert rewritten.count("non_blocking=True") == 2, rewritten
    before, n_before = _run(folders["before"])
    after, n_after = _run(folders["after"])
    print(f"\ncross-file SFX101: syncs before={n_before} after={n_after}")
    assert_same_result(before, after)
    assert n_after < n_before
