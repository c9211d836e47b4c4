"""The pytest plugin (``@pytest.mark.syncfree``, ``no_sync``), run in a child pytest.

Without a GPU, CUDA is faked by a conftest that stubs ``cuda_available``/``install`` and the test
bodies drive the sync callbacks by hand; ``test_harness_cuda.py`` runs the real thing.
"""

from __future__ import annotations

import importlib.metadata
import importlib.util as _importlib_util
import subprocess
import sys
import textwrap
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

NEEDS_TORCH = pytest.mark.skipif(
    _importlib_util.find_spec("torch") is None, reason="needs torch (pip install -e '.[verify]')"
)

TESTS = """
import pytest
from syncfix.harness import counter
from syncfix.pytest_plugin import allow_sync


@pytest.fixture
def syncing_fixture():
    counter._dispatch("device")  # set-up may sync
    yield
    counter._dispatch("device")  # and tear-down


@pytest.mark.syncfree
def test_clean(syncing_fixture):
    assert 1 + 1 == 2


@pytest.mark.syncfree
def test_dirty():
    counter._dispatch("device")  # LINE-DIRTY


@pytest.mark.syncfree
def test_allowed():
    with allow_sync():
        counter._dispatch("device")


def test_unmarked():
    counter._dispatch("device")


def test_region(no_sync):
    counter._dispatch("device")
    with no_sync():
        counter._dispatch("stream", 0)  # LINE-REGION
        with no_sync.allow_sync():
            counter._dispatch("device")


def test_region_clean(no_sync):
    with no_sync():
        pass


@pytest.mark.syncfree
def test_own_failure_wins():
    counter._dispatch("device")
    assert False, "own failure"
"""

FAKE_CUDA = """
from syncfix.harness import counter


counter.cuda_available = lambda: True
counter.install = lambda: "fake"
"""


def plugin_args() -> list[str]:
    """``-p syncfix.pytest_plugin`` unless the installed entry point already loads it."""
    eps = importlib.metadata.entry_points(group="pytest11")
    if any(ep.value == "syncfix.pytest_plugin" for ep in eps):
        return []
    return ["-p", "syncfix.pytest_plugin"]


def run_pytest(folder: Path, *extra: str) -> dict[str, tuple[str, str]]:
    """{test name: (outcome, message)} from a child pytest run in ``folder``."""
    xml = folder / "report.xml"
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-p",
            "no:cacheprovider",
            "--strict-markers",
            f"--junitxml={xml}",
            "-q",
            *plugin_args(),
            *extra,
            str(folder),
        ],
        capture_output=True,
        text=True,
        cwd=folder,
        timeout=120,
    )
    assert xml.exists(), proc.stdout + proc.stderr
    out = {}
    for case in ET.parse(xml).getroot().iter("testcase"):
        outcome, message = "passed", ""
        for child in case:
            if child.tag in ("failure", "error", "skipped"):
                outcome = child.tag
                message = (child.get("message") or "") + "\n" + (child.text or "")
        out[case.get("name")] = (outcome, message)
    return out


def line_of(marker: str) -> int:
    return next(i for i, t in enumerate(TESTS.splitlines(), start=1) if marker in t)


def test_with_cuda_faked(tmp_path):
    (tmp_path / "conftest.py").write_text(textwrap.dedent(FAKE_CUDA))
    (tmp_path / "test_x.py").write_text(TESTS)
    res = run_pytest(tmp_path)
    assert res["test_clean"][0] == "passed"  # the fixture's syncs are outside the call phase
    assert res["test_allowed"][0] == "passed"
    assert res["test_unmarked"][0] == "passed"
    assert res["test_region_clean"][0] == "passed"
    outcome, msg = res["test_dirty"]
    assert outcome == "failure"
    assert "synchronized with the GPU 1 time" in msg
    assert f"test_x.py:{line_of('LINE-DIRTY')} in test_dirty" in msg and "[device] x1" in msg
    outcome, msg = res["test_region"]
    assert (
        outcome == "failure" and f"test_x.py:{line_of('LINE-REGION')}" in msg and "[copy] x1" in msg
    )
    assert "LINE-REGION" in msg  # the source line is shown
    outcome, msg = res["test_own_failure_wins"]
    assert outcome == "failure" and "own failure" in msg


@NEEDS_TORCH
def test_without_cuda_everything_skips_cleanly(tmp_path):
    import torch

    if torch.cuda.is_available():
        pytest.skip("this machine has CUDA")
    (tmp_path / "test_x.py").write_text(TESTS)
    res = run_pytest(tmp_path)
    for name in (
        "test_clean",
        "test_dirty",
        "test_allowed",
        "test_region",
        "test_own_failure_wins",
    ):
        assert res[name][0] == "skipped", (name, res[name])
        assert "needs CUDA" in res[name][1]
    assert res["test_unmarked"][0] == "passed"


def test_plugin_import_is_cheap():
    code = "import sys, syncfix.pytest_plugin; print('torch' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
    code = "import sys, syncfix.verify; print('torch' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_record_outside_the_harness_is_a_no_op():
    from syncfix.verify import is_active, record

    value = object()
    assert record("x", value) is value
    assert not is_active()
    with pytest.raises(TypeError):
        record(1, value)  # type: ignore[arg-type]
