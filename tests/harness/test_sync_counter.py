"""The counter's logic on the CPU: attribution, kinds, suppression, the cross-check.

The GPU-trace callbacks are driven by hand (``counter._dispatch``), the way PyTorch's C++ code
calls them; the CUDA tests check the real hooks.
"""

from __future__ import annotations

import importlib.util as _importlib_util
import os
import sys

import pytest

from syncfix.harness import counter
from syncfix.harness.counter import SyncRecorder, allow_sync

NEEDS_TORCH = pytest.mark.skipif(
    _importlib_util.find_spec("torch") is None, reason="needs torch (pip install -e '.[verify]')"
)


def this_line() -> int:
    return sys._getframe(1).f_lineno


def fake_library(filename: str, function: str, hook: str = "stream"):
    """A function compiled as if it lived in ``filename`` that makes a sync of ``hook``."""
    src = f"def {function}():\n    dispatch({hook!r})\n"
    ns: dict = {"dispatch": counter._dispatch}
    exec(compile(src, filename, "exec"), ns)
    return ns[function]


def test_a_sync_is_charged_to_the_users_line():
    with SyncRecorder() as rec:
        line = this_line() + 1
        counter._dispatch("stream", 0)
    (site,) = rec.site_list()
    assert (site.file, site.line, site.kind, site.count) == (__file__, line, "copy", 1)
    assert site.function == "test_a_sync_is_charged_to_the_users_line"
    assert site.via is None


def test_library_frames_are_skipped_and_named_as_via():
    lib = os.path.join(os.sep, "opt", "py", "site-packages", "torch", "functional.py")
    with SyncRecorder() as rec:
        line = this_line() + 1
        fake_library(lib, "unique")()
    (site,) = rec.site_list()
    assert (site.file, site.line) == (__file__, line)
    assert site.via == "torch/functional.py:2 (unique)"


def test_stream_synchronize_is_told_apart_from_copies():
    streams = os.path.join(os.sep, "opt", "py", "site-packages", "torch", "cuda", "streams.py")
    with SyncRecorder() as rec:
        fake_library(streams, "synchronize")()
        fake_library(streams, "query")()  # a stream hook from elsewhere is a copy
        counter._dispatch("event", 1)
        counter._dispatch("device")
    assert rec.by_kind() == {"copy": 1, "stream": 1, "event": 1, "device": 1}
    assert rec.total() == 4


def test_counts_accumulate_per_line_and_kind():
    with SyncRecorder() as rec:
        for _ in range(3):
            counter._dispatch("stream", 0)
        counter._dispatch("device")
    assert sorted((s.kind, s.count) for s in rec.site_list()) == [("copy", 3), ("device", 1)]


def test_nothing_is_counted_outside_a_recorder_or_inside_allow_sync():
    counter._dispatch("device")
    with SyncRecorder() as rec:
        with allow_sync():
            counter._dispatch("device")
            with allow_sync():
                counter._dispatch("device")
            counter._dispatch("device")
        counter._dispatch("device")
    counter._dispatch("device")
    assert rec.total() == 1


def test_nested_recorders_both_count():
    with SyncRecorder() as outer:
        counter._dispatch("device")
        with SyncRecorder() as inner:
            counter._dispatch("device")
    assert (outer.total(), inner.total()) == (2, 1)


def test_resolve_maps_rewritten_lines_back():
    def resolve(file, line):
        return ("/orig.py", line - 10) if file == __file__ else (file, line)

    with SyncRecorder(resolve=resolve) as rec:
        line = this_line() + 1
        counter._dispatch("stream", 0)
    (site,) = rec.site_list()
    assert (site.file, site.line) == ("/orig.py", line - 10)


def test_rewritten_pseudo_files_are_user_code():
    assert not counter.is_library_file("<syncfix:/home/u/train.py>")
    assert not counter.is_library_file(__file__)
    assert counter.is_library_file(os.__file__)
    assert counter.is_library_file(pytest.__file__)
    assert counter.is_library_file(counter.__file__)


def test_cross_check_report_compares_line_by_line():
    with SyncRecorder() as rec:
        counter._dispatch("stream", 0)
        line = this_line() - 1
        counter._dispatch("device")
    assert rec.cross_check_report() == {"armed": False}
    rec.debug_mode_armed = True  # as if set_sync_debug_mode("warn") had been on
    rec.debug_mode[(__file__, line)] += 1
    report = rec.cross_check_report()
    assert (
        report["agree"]
        and report["trace_copy_stream"] == 1
        and report["trace_only_device_event"] == 1
    )
    rec.debug_mode[(__file__, line)] += 1
    report = rec.cross_check_report()
    assert not report["agree"]
    assert report["disagreements"] == [
        {"file": __file__, "line": line, "trace": 1, "debug_mode": 2}
    ]


@NEEDS_TORCH
def test_install_without_cuda_says_why(monkeypatch):
    import torch

    if torch.cuda.is_available():
        pytest.skip("this machine has CUDA")
    with pytest.raises(counter.CounterUnavailable, match="CUDA is not available"):
        counter.install()


def test_format_sites_names_file_line_and_code():
    with SyncRecorder() as rec:
        counter._dispatch("device")  # the line to report
    text = counter.format_sites(rec.site_list())
    assert "test_sync_counter.py" in text and "the line to report" in text and "[device] x1" in text


@NEEDS_TORCH
def test_child_counts_only_where_it_can(tmp_path):
    """The child's count phase says why it skipped (no CUDA here), even as the first run."""
    import torch

    if torch.cuda.is_available():
        pytest.skip("this machine has CUDA")
    from syncfix.harness.child import Child
    from syncfix.harness.target import parse_target

    script = tmp_path / "s.py"
    script.write_text("import torch\nx = torch.ones(2).sum()\n")
    child = Child(
        {"target": parse_target(str(script)).to_dict(), "root": str(tmp_path), "result_path": "-"}
    )
    try:
        reply = child.run("count")
    finally:
        child.close()
    assert reply == {"ok": True, "skipped": "CUDA is not available: sync counts need a CUDA device"}
    assert child.count_runs == 0 and child.recorder is None
