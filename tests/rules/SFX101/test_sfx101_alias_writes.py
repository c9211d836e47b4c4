"""Writes through another name for a copied tensor's memory keep the copy blocking, as the
command line sees a project (the fixture files ``*_untouched.in.py`` beside this test, run here
as a project's script: the setting where syncfix otherwise proves the loader's batches fresh)."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

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
