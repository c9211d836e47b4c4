"""Shared test set-up: CUDA-marked tests skip cleanly on machines without a GPU."""

from __future__ import annotations

import pytest


def _cuda_available() -> bool:
    try:
        import torch
    except ImportError:
        return False
    return torch.cuda.is_available()


def pytest_collection_modifyitems(config, items):
    if _cuda_available():
        return
    skip = pytest.mark.skip(reason="needs a CUDA GPU")
    for item in items:
        if "cuda" in item.keywords:
            item.add_marker(skip)


@pytest.fixture(autouse=True)
def _every_finding(request, monkeypatch):
    """Rule tests judge a rule's logic on snippets that are mostly one-time code, so they see
    every finding, as ``--include-cold`` shows them. Tests of the default (findings only where
    the sync repeats) are marked ``only_repeated``."""
    if "only_repeated" in request.keywords:
        return
    from syncfix import engine

    monkeypatch.setattr(engine, "only_where_repeated", lambda raws, analyzed, path: raws)
    monkeypatch.setattr(engine, "skips_one_time_code", lambda settings, rules: False)
