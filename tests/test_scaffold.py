"""scripts/new_rule.py, run into a copy of the repository: the new rule loads, its doc page and
README row are generated, its fixtures are collected, and its first test fails until it works."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    ignore = shutil.ignore_patterns("__pycache__", ".syncfix_cache", ".hypothesis", "*.pyc")
    for folder in ("codemods", "syncfix", "scripts", "tests", "docs/rules"):
        shutil.copytree(ROOT / folder, root / folder, ignore=ignore)
    for name in ("README.md", "pyproject.toml"):
        shutil.copy(ROOT / name, root / name)
    return root


def _run(root: Path, *args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(root)}
    return subprocess.run(
        [sys.executable, *args], cwd=root, env=env, capture_output=True, text=True, timeout=300
    )


def test_new_rule_scaffold_makes_a_rule_that_loads(repo: Path):
    made = _run(repo, "scripts/new_rule.py", "SFX299", "example-rule", "--root", str(repo))
    assert made.returncode == 0, made.stderr
    assert (repo / "codemods" / "example_rule.py").exists()

    loaded = _run(
        repo,
        "-c",
        "from syncfix.rules import all_rules; r = all_rules()['SFX299']; "
        "print(r.__module__, r.__name__, r.NAME, r.FIX, r.SAFETY)",
    )
    module, *rest = loaded.stdout.split(None, 4)
    assert module.endswith("codemods.example_rule"), loaded.stderr  # however codemods installs
    assert rest == ["ExampleRule", "example-rule", "sometimes", "('safe',)\n"], loaded.stderr

    page = (repo / "docs" / "rules" / "SFX299.md").read_text()
    assert "# example-rule (SFX299)" in page and "## Fix safety" in page
    assert "| [SFX299](docs/rules/SFX299.md) | example-rule |" in (repo / "README.md").read_text()
    assert _run(repo, "scripts/gen_docs.py", "--check", "--root", str(repo)).returncode == 0

    collected = _run(
        repo, "-c", "from tests.rules.fixture_cases import cases; "
        "print(sorted(c.id for c in cases() if c.code == 'SFX299'))"
    )
    assert collected.stdout.strip() == "['SFX299/example', 'SFX299/example_untouched']", collected.stderr

    # a scaffold is not a rule: its first test fails until the rule finds its example
    first = _run(repo, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests/rules/SFX299/test_sfx299.py")
    assert first.returncode == 1 and "SFX299 finds nothing yet" in first.stdout

    again = _run(repo, "scripts/new_rule.py", "SFX299", "other-name", "--root", str(repo))
    assert again.returncode == 2 and "SFX299 is taken" in again.stderr


@pytest.mark.parametrize(
    "code,name,message",
    [("SFX29", "x-y", "three digits"), ("SFX298", "Bad_Name", "kebab-case"), ("SFX298", "merge-scalar-reads", "is taken")],
)
def test_new_rule_refuses_bad_or_taken_names(repo: Path, code, name, message):
    out = _run(repo, "scripts/new_rule.py", code, name, "--root", str(repo))
    assert out.returncode == 2 and message in out.stderr
    assert not (repo / "tests" / "rules" / code).exists()
