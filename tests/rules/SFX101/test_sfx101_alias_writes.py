"""Writes through another name for a copied tensor's memory keep the copy blocking, as the
command line sees a project (the fixture files ``*_untouched.in.py`` beside this test, run here
as a project's script: the setting where syncfix otherwise proves the loader's batches fresh)."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from syncfix import check_code
from syncfix.cli import cli

HERE = Path(__file__).resolve().parent.parent
CASES = [
    HERE / "SFX101" / "fixtures" / "pinned_batch_written_through_aliases_untouched.in.py",
    HERE / "SFX102" / "fixtures" / "numpy_view_of_pinned_untouched.in.py",
    HERE / "SFX404" / "fixtures" / "kept_tensor_written_through_view_function_untouched.in.py",
]


@pytest.mark.parametrize("case", CASES, ids=lambda p: p.name)
def test_no_fix_crosses_a_write_through_an_alias(case, tmp_path, monkeypatch):
    code = case.parent.parent.name  # the rule whose fixture it is
    monkeypatch.chdir(tmp_path)
    (tmp_path / ".git").mkdir()
    (tmp_path / "train.py").write_text(case.read_text(encoding="utf-8"), encoding="utf-8")
    result = CliRunner().invoke(cli, ["apply", "--diff", "--unsafe-fixes", "--no-cache", "--select", code, "train.py"])
    assert result.exit_code == 0, result.output  # no diff


SAME_DEVICE = """\
import torch
from torch.utils.data import DataLoader

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
other = torch.device("cuda:1" if torch.cuda.device_count() > 1 else "cpu")


def train(model, crit, dataset):
    loader = DataLoader(dataset, batch_size=8, pin_memory=True)
    for batch in loader:
        images, masks = batch["image"], batch["mask"]
        images = images.to(device)
        masks = masks.to({target})
        loss = crit(model(images), masks)
"""


def test_a_part_copied_to_the_same_device_is_new_memory_where_the_race_could_be():
    # UNet: ``true_masks = true_masks.to(device=device)`` after ``images.to(device=device)``;
    # where ``device`` is CUDA both are copies, where it is the CPU nothing is copied late
    (first, _) = sorted(check_code(SAME_DEVICE.format(target="device"), select=["SFX101"], unsafe_fixes=True), key=lambda f: f.line)
    assert first.fix is not None
    # to another device, ``masks`` may be the batch's own memory, which ``crit`` may write
    (first, _) = sorted(check_code(SAME_DEVICE.format(target="other"), select=["SFX101"], unsafe_fixes=True), key=lambda f: f.line)
    assert first.fix is None and "written again" in first.message
