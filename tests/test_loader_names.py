"""Names that read as a loader's (analysis/loader_names.py): a likely fact, so its cases are
spelled out."""

from __future__ import annotations

import pytest

from syncfix.analysis.loader_names import loader_like


@pytest.mark.parametrize(
    ("name", "loader"),
    [
        ("train_loader", True),
        ("trainDL", True),
        ("pbar", True),
        # Informer's ``pred_data, pred_loader = self._get_data(flag="pred")``: a loader for
        # prediction, named so outright
        ("pred_loader", True),
        ("outputs_dataloader", True),
        ("batch_outputs", False),
        ("gpu_data", False),
        ("preds", False),
    ],
)
def test_names_that_read_as_a_loader(name, loader):
    assert loader_like(name) is loader
