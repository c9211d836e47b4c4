"""Fixtures for the harness's tests: running ``verify``/``trace`` and writing small programs."""

from __future__ import annotations

import json
import os
import textwrap
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from syncfix.harness.commands import trace_command, verify_command

REPO = Path(__file__).resolve().parents[2]
DEMO = REPO / "examples" / "verify_demo"


class CliResult:
    def __init__(self, exit_code: int, stdout: str, stderr: str) -> None:
        self.exit_code = exit_code
        self.stdout = stdout
        self.stderr = stderr

    @property
    def report(self) -> dict[str, Any]:
        return json.loads(self.stdout)


@pytest.fixture
def run_cli(monkeypatch: pytest.MonkeyPatch) -> Callable[..., CliResult]:
    """``run_cli("verify", "prog.py", "--json", cwd=tmp_path)``: the command, in-process."""

    def run(command: str, *args: str, cwd: Path | None = None) -> CliResult:
        if cwd is not None:
            monkeypatch.chdir(cwd)
        cmd = {"verify": verify_command, "trace": trace_command}[command]
        result = CliRunner().invoke(cmd, list(args), catch_exceptions=False)
        stderr = result.stderr if hasattr(result, "stderr") else ""
        return CliResult(result.exit_code, result.stdout, stderr)

    return run


@pytest.fixture
def make_file(tmp_path: Path) -> Callable[[str, str], Path]:
    """``make_file("prog.py", source)`` → the file under tmp_path (source is dedented)."""

    def _write(name: str, source: str) -> Path:
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(source).lstrip("\n"), encoding="utf-8")
        return path

    return _write


def tree_snapshot(root: Path) -> dict[str, bytes]:
    """Every file under ``root`` with its bytes (to prove nothing was written)."""
    out = {}
    for dirpath, _, files in os.walk(root):
        for f in files:
            p = Path(dirpath) / f
            out[str(p.relative_to(root))] = p.read_bytes()
    return out
