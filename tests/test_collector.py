"""When the cycle collector runs in a command-line run (syncfix/collector.py): held during one
file, one young collection after it, long-lived objects frozen for the run and no longer after."""

from __future__ import annotations

import gc
import weakref

import pytest
from click.testing import CliRunner

from syncfix import collector
from syncfix.cli import cli


class _Node:
    def __init__(self) -> None:
        self.me = self  # a cycle: only the collector frees it


@pytest.fixture
def small_file(tmp_path):
    path = tmp_path / "a.py"
    path.write_text("import torch\nx = torch.ones(3).cuda()\n", encoding="utf-8")
    return str(path)


def test_a_file_is_processed_with_collection_held_and_its_cycles_freed_after(small_file):
    assert gc.isenabled()
    with collector.one_file(small_file):
        assert not gc.isenabled()
        garbage = _Node()
        ref = weakref.ref(garbage)
        del garbage
        assert ref() is not None  # nothing collects it while the file is processed
    assert gc.isenabled()
    assert ref() is None


def test_a_file_too_large_to_hold_its_garbage_keeps_the_collector_on(small_file, monkeypatch):
    monkeypatch.setattr(collector, "HOLD_LIMIT", 10)
    with collector.one_file(small_file):
        assert gc.isenabled()


def test_a_collector_the_caller_turned_off_stays_off(small_file):
    gc.disable()
    try:
        with collector.one_file(small_file):
            assert not gc.isenabled()
        assert not gc.isenabled()
    finally:
        gc.enable()


def test_long_lived_objects_are_frozen_only_for_the_run():
    before = gc.get_freeze_count()
    kept = [_Node() for _ in range(10)]
    with collector.long_lived_frozen():
        assert gc.get_freeze_count() >= before + len(kept)
    assert gc.get_freeze_count() == before
    del kept


@pytest.mark.parametrize("jobs", ["1", "2"])
def test_a_command_line_run_leaves_the_callers_collector_as_it_was(tmp_path, monkeypatch, jobs):
    monkeypatch.chdir(tmp_path)
    for i in range(20):  # above the pool's threshold: -j2 runs workers
        (tmp_path / f"m{i}.py").write_text("import torch\nfor i in range(3):\n    x = torch.ones(3).cuda()\n")
    result = CliRunner().invoke(cli, ["check", "--no-cache", f"-j{jobs}", "."], catch_exceptions=False)
    assert result.exit_code == 1, result.output
    assert result.output.count("SFX101") == 20
    assert gc.isenabled()
    assert gc.get_freeze_count() == 0
