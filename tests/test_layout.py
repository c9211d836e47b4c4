"""How syncfix is laid out on disk and what importing it costs: the rules install as
``syncfix.codemods`` (a user's own ``codemods`` package cannot hide them), and the modules user
code imports at run time (``syncfix.verify``, the pytest plugin) stay free of LibCST."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from syncfix.rules import all_rules

ROOT = Path(__file__).resolve().parent.parent
FINDING = "import torch\nfor step in range(3):\n    x = torch.ones(3).cuda()\n"


def _user_project(tmp_path: Path) -> Path:
    """A project with its own ``codemods`` package, which Python finds first from its folder."""
    project = tmp_path / "project"
    (project / "codemods").mkdir(parents=True)
    (project / "codemods" / "__init__.py").write_text("USERS_OWN = True\n")
    (project / "codemods" / "refactor.py").write_text("X = 1\n")
    (project / "train.py").write_text(FINDING)
    return project


def _check(project: Path, pythonpath: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": pythonpath, "PYTHONDONTWRITEBYTECODE": "1"}
    env.pop("SYNCFIX_OUTPUT_FORMAT", None)
    return subprocess.run(
        [sys.executable, "-m", "syncfix", "check", "--no-cache", "--isolated", "-o", "json", "."],
        cwd=project, env=env, capture_output=True, text=True, timeout=120, check=False,
    )


def _rule_count(pythonpath: str, cwd: Path) -> int:
    env = {**os.environ, "PYTHONPATH": pythonpath}
    out = subprocess.run(
        [sys.executable, "-c", "from syncfix.rules import all_rules; print(len(all_rules()))"],
        cwd=cwd, env=env, capture_output=True, text=True, timeout=60, check=True,
    )
    return int(out.stdout)


def test_a_users_codemods_package_does_not_hide_the_rules(tmp_path):
    project = _user_project(tmp_path)
    result = _check(project, str(ROOT))
    assert result.returncode == 1, result.stderr  # findings, not "unknown rule selector"
    assert [f["code"] for f in json.loads(result.stdout)] == ["SFX101"]
    assert _rule_count(str(ROOT), project) == len(all_rules())


def test_rule_modules_are_imported_as_syncfix_codemods():
    modules = {rule.__module__ for rule in all_rules().values()}
    assert modules and all(m.startswith("syncfix.codemods.") for m in modules)
    assert "codemods" not in sys.modules  # nothing imports a top-level "codemods"
    import syncfix.codemods

    assert [Path(p).resolve() for p in syncfix.codemods.__path__] == [ROOT / "codemods"]


@pytest.mark.slow
def test_the_wheel_installs_the_rules_under_syncfix(tmp_path):
    """Build the wheel, unpack it as pip would install it, and run it from the user project."""
    source = tmp_path / "source"  # a copy: setuptools writes build/ beside the sources
    for name in ("pyproject.toml", "README.md", "LICENSE"):
        source.mkdir(exist_ok=True)
        shutil.copy(ROOT / name, source / name)
    for name in ("syncfix", "codemods"):
        shutil.copytree(ROOT / name, source / name, ignore=shutil.ignore_patterns("__pycache__"))
    built = subprocess.run(
        # build isolation: the build backend pyproject.toml asks for, not whatever setuptools the
        # venv was seeded with (a fresh venv's is too old for `license = "MIT"`)
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "-q",
         "-w", str(tmp_path / "dist"), str(source)],
        capture_output=True, text=True, timeout=300, check=False,
    )
    if built.returncode != 0 and "No module named pip" in built.stderr:
        pytest.skip("pip is not available")
    assert built.returncode == 0, built.stderr
    (wheel,) = (tmp_path / "dist").glob("syncfix-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    rule_files = sorted(p.name for p in (ROOT / "codemods").glob("*.py"))
    assert sorted(n.split("/")[-1] for n in names if n.startswith("syncfix/codemods/")) == rule_files
    assert not [n for n in names if n.startswith("codemods/")]
    assert [n for n in names if n.endswith(".dist-info/licenses/LICENSE")]
    # the stand-in __init__.py of the checkout is not what was packed
    packed = zipfile.ZipFile(wheel).read("syncfix/codemods/__init__.py")
    assert packed == (ROOT / "codemods" / "__init__.py").read_bytes()

    site = tmp_path / "site"
    zipfile.ZipFile(wheel).extractall(site)
    project = _user_project(tmp_path)
    result = _check(project, str(site))
    assert result.returncode == 1, result.stderr
    assert [f["code"] for f in json.loads(result.stdout)] == ["SFX101"]
    assert _rule_count(str(site), project) == len(all_rules())


def test_verify_and_the_pytest_plugin_import_neither_libcst_nor_the_engine():
    code = (
        "import sys\n"
        "import syncfix.verify, syncfix.pytest_plugin\n"
        "from syncfix.verify import record\n"
        "assert record('x', 3) == 3\n"
        "heavy = sorted(m for m in sys.modules if m == 'libcst' or m.startswith('libcst.')\n"
        "               or m in ('syncfix.engine', 'syncfix.analysis', 'syncfix.rules', 'torch'))\n"
        "print(heavy)\n"
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    out = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=60, check=True
    )
    assert out.stdout.strip() == "[]"


def test_the_public_api_still_imports_from_the_package():
    code = "from syncfix import check_code, fix_code; print(len(check_code('import torch\\nfor i in range(3):\\n    x = torch.ones(3).cuda()\\n')))"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    out = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=60, check=True
    )
    assert out.stdout.strip() == "1"
