"""syncfix in CI: the pre-commit hooks, the GitHub Action, the new CLI flags (--statistics,
--exit-non-zero-on-fix, --add-noqa) and unused-suppression findings (SFX900)."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from syncfix import check_code, fix_code
from syncfix.cli import cli
from syncfix.model import Finding
from syncfix.noqa import add_noqa

REPO = Path(__file__).resolve().parent.parent
SAFE = "import torch\nfor step in range(3):\n    x = torch.rand(3).cuda()\n"
UNSAFE = "import torch\ndef forward(x: torch.Tensor):\n    return x.cuda()\n"
NO_FIX = "import torch\nfor b in loader:\n    s = b.state.cuda()\n"  # not provably a tensor: no fix
FIXED = 'import torch\nfor step in range(3):\n    x = torch.rand(3).to("cuda", non_blocking=True)\n'


def _invoke(*args: str):
    return CliRunner().invoke(cli, [*args, "--no-cache"])


@pytest.fixture
def workdir(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    return tmp_path


# ---- pre-commit ---------------------------------------------------------------------------------


def _hooks() -> dict[str, dict]:
    hooks = yaml.safe_load((REPO / ".pre-commit-hooks.yaml").read_text(encoding="utf-8"))
    return {h["id"]: h for h in hooks}


def test_pre_commit_manifest():
    hooks = _hooks()
    assert set(hooks) == {"syncfix", "syncfix-apply"}
    assert hooks["syncfix"]["entry"] == "syncfix check --force-exclude"
    assert hooks["syncfix-apply"]["entry"] == "syncfix apply --force-exclude"
    for h in hooks.values():
        assert h["name"] and h["language"] == "python"
        assert h["types_or"] == ["python"]
        assert h["require_serial"] is True
        assert h["minimum_pre_commit_version"] == "2.9.2"


def _run_entry(entry: str, files: list[str], cwd: Path) -> subprocess.CompletedProcess:
    """Run a hook's entry as pre-commit does (entry + file names), with this checkout's syncfix:
    `python -m syncfix` with the repo on PYTHONPATH stands in for the installed console script."""
    argv = shlex.split(entry)
    assert argv[0] == "syncfix"
    env = {**os.environ, "PYTHONPATH": str(REPO), "SYNCFIX_CACHE_DIR": str(cwd / ".cache")}
    return subprocess.run(
        [sys.executable, "-m", "syncfix", *argv[1:], *files],
        cwd=cwd, env=env, capture_output=True, text=True, timeout=120,
    )


def test_pre_commit_hook_entries(tmp_path, monkeypatch):
    hooks = _hooks()
    (tmp_path / "safe.py").write_text(SAFE, encoding="utf-8")
    (tmp_path / "clean.py").write_text(FIXED, encoding="utf-8")
    (tmp_path / "pyproject.toml").write_text('[tool.syncfix]\nextend-exclude = ["gen_*.py"]\n', encoding="utf-8")
    (tmp_path / "gen_x.py").write_text(SAFE, encoding="utf-8")

    check = hooks["syncfix"]["entry"]
    r = _run_entry(check, ["safe.py", "clean.py", "gen_x.py"], tmp_path)
    assert r.returncode == 1, r.stderr
    assert "safe.py:3:9: SFX101" in r.stdout and "gen_x.py" not in r.stdout
    assert (tmp_path / "safe.py").read_text() == SAFE  # the checking hook never writes
    # --force-exclude: an excluded file named by pre-commit is still skipped
    assert _run_entry(check, ["clean.py", "gen_x.py"], tmp_path).returncode == 0
    monkeypatch.chdir(tmp_path)  # and the flag is what skips it
    assert CliRunner().invoke(cli, ["check", "gen_x.py", "--no-cache"]).exit_code == 1

    apply = hooks["syncfix-apply"]["entry"]
    r = _run_entry(apply, ["safe.py", "clean.py"], tmp_path)
    assert r.returncode == 0, r.stdout + r.stderr  # fixed all; pre-commit fails on the change
    assert (tmp_path / "safe.py").read_text() == FIXED
    assert (tmp_path / "clean.py").read_text() == FIXED
    (tmp_path / "unsafe.py").write_text(UNSAFE, encoding="utf-8")
    r = _run_entry(apply, ["unsafe.py"], tmp_path)
    assert r.returncode == 1 and (tmp_path / "unsafe.py").read_text() == UNSAFE


# ---- the GitHub Action --------------------------------------------------------------------------


def test_action_definition():
    action = yaml.safe_load((REPO / "action.yml").read_text(encoding="utf-8"))
    assert action["runs"]["using"] == "composite"
    inputs = action["inputs"]
    assert {"args", "output-format", "version", "src"} <= set(inputs)
    script = "\n".join(step.get("run", "") for step in action["runs"]["steps"])
    assert "syncfix" in script and "SYNCFIX_OUTPUT_FORMAT" in json.dumps(action)
    assert all("shell" in s for s in action["runs"]["steps"] if "run" in s)


def test_action_run_step_passes_inputs_and_reports_the_exit_code(tmp_path):
    action = yaml.safe_load((REPO / "action.yml").read_text(encoding="utf-8"))
    step = next(s for s in action["runs"]["steps"] if s.get("id") == "run")
    bindir = tmp_path / "bin"
    bindir.mkdir()
    shim = bindir / "syncfix"  # this checkout's syncfix in place of the installed one
    shim.write_text(f'#!/bin/sh\nexec "{sys.executable}" -m syncfix "$@"\n', encoding="utf-8")
    shim.chmod(0o755)
    (tmp_path / "m.py").write_text(SAFE, encoding="utf-8")
    env = {
        **os.environ,
        "PATH": f"{bindir}{os.pathsep}{os.environ['PATH']}",
        "PYTHONPATH": str(REPO),
        "INPUT_ARGS": "check --no-cache",
        "INPUT_SRC": "m.py",
        "INPUT_OUTPUT_FILE": "out.sarif",
        "SYNCFIX_OUTPUT_FORMAT": "sarif",
        "GITHUB_OUTPUT": str(tmp_path / "gh_output"),
    }
    # how Actions runs `shell: bash`
    r = subprocess.run(
        ["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", step["run"]],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120,
    )
    assert r.returncode == 1, r.stderr
    assert (tmp_path / "gh_output").read_text() == "exit-code=1\n"
    assert json.loads((tmp_path / "out.sarif").read_text())["runs"][0]["results"][0]["ruleId"] == "SFX101"


def test_docs_have_copy_paste_workflows():
    text = (REPO / "docs" / "ci.md").read_text(encoding="utf-8")
    blocks = text.split("```yaml")[1:]
    workflows = [yaml.safe_load(b.split("```", 1)[0]) for b in blocks]
    jobs = [w for w in workflows if isinstance(w, dict) and "jobs" in w]
    assert len(jobs) >= 3
    body = json.dumps(jobs)
    for needle in ("--output-format github", "reviewdog", "-f=rdjson", "upload-sarif", "security-events"):
        assert needle in body, needle


def test_install_lines_work_without_a_pypi_release():
    """No snippet installs `syncfix` from PyPI (there is no release) or names a placeholder
    owner; each install line names a git URL or a path."""
    import re

    for doc in (REPO / "README.md", REPO / "docs" / "ci.md"):
        code = "\n".join(part.split("```", 1)[0] for part in doc.read_text(encoding="utf-8").split("```")[1::2])
        assert "OWNER/" not in code, doc
        for line in code.splitlines():
            for spec in re.findall(r"pip install ([^&|#]+)", line):
                bare = re.fullmatch(r"(-\S+ +)*[\"']?syncfix(\[\w+\])?(==\S+)?[\"']?", spec.strip())
                assert not bare, (doc, line)


# ---- CLI flags ----------------------------------------------------------------------------------


def test_statistics(workdir):
    (workdir / "m.py").write_text(SAFE + UNSAFE.split("\n", 1)[1] + NO_FIX.split("\n", 1)[1], encoding="utf-8")
    r = _invoke("check", "m.py", "--statistics")
    assert r.exit_code == 1
    assert r.stdout == "3\tSFX101\t[*]\tblocking-host-to-device\n"
    r = _invoke("check", "m.py", "--statistics", "-o", "json")
    assert json.loads(r.stdout) == [
        {"code": "SFX101", "name": "blocking-host-to-device", "count": 3, "fixable_count": 1, "observed_count": 0, "fixable": True}
    ]
    r = _invoke("check", "m.py", "--statistics", "-o", "json", "--unsafe-fixes")
    assert json.loads(r.stdout)[0]["fixable_count"] == 2
    (workdir / "u.py").write_text(NO_FIX, encoding="utf-8")
    assert _invoke("check", "u.py", "--statistics").stdout == "1\tSFX101\t[ ]\tblocking-host-to-device\n"


def test_exit_non_zero_on_fix(workdir):
    (workdir / "m.py").write_text(SAFE, encoding="utf-8")
    assert _invoke("apply", "m.py", "--exit-non-zero-on-fix").exit_code == 1
    assert (workdir / "m.py").read_text() == FIXED
    assert _invoke("apply", "m.py", "--exit-non-zero-on-fix").exit_code == 0  # nothing left to do
    (workdir / "m.py").write_text(SAFE, encoding="utf-8")
    assert _invoke("apply", "m.py").exit_code == 0  # without the flag: all fixed is success


def test_add_noqa_suppresses_every_finding(workdir):
    source = (
        "import torch\n"
        "x = torch.rand(3).cuda()  # noqa: E501\n"
        "def f(x: torch.Tensor):\n"
        "    return x.cuda()  # a note\n"
        "for b in loader:\n"
        "    y = b.cuda()\n"
    )
    (workdir / "m.py").write_text(source, encoding="utf-8")
    r = _invoke("check", "m.py", "--add-noqa")
    assert r.exit_code == 0 and "Added 3 noqa directives." in r.stderr
    assert (workdir / "m.py").read_text() == (
        "import torch\n"
        "x = torch.rand(3).cuda()  # noqa: E501, SFX101\n"
        "def f(x: torch.Tensor):\n"
        "    return x.cuda()  # a note  # noqa: SFX101\n"
        "for b in loader:\n"
        "    y = b.cuda()  # noqa: SFX101\n"
    )
    assert _invoke("check", "m.py").exit_code == 0
    r = _invoke("check", "m.py", "--add-noqa")  # nothing left: nothing added
    assert "Added 0 noqa directives." in r.stderr


def _f(line: int, end_line: int, code: str = "SFX101") -> Finding:
    return Finding(code, "n", "m", "m.py", line, 1, end_line, 2)


def test_add_noqa_never_breaks_a_multi_line_string():
    # start line ends inside a string: the comment goes on the end line
    text = 'x = f(a="""one\ntwo""").cuda()\n'
    new, n = add_noqa(text, [_f(1, 2)])
    assert new == 'x = f(a="""one\ntwo""").cuda()  # noqa: SFX101\n' and n == 1
    # both lines end inside strings: a comment line above covers the next line
    text = 'if x:\n    y = a.cuda(); s = """one\n    two"""; t = """three\n    four"""\n'
    new, _ = add_noqa(text, [_f(2, 3)])
    assert new == 'if x:\n    # noqa: SFX101\n    y = a.cuda(); s = """one\n    two"""; t = """three\n    four"""\n'
    compile(new, "m.py", "exec")
    # a backslash-continued line cannot take a comment
    text = "y = a.cuda() + \\\n    1\n"
    new, _ = add_noqa(text, [_f(1, 2)])
    assert new == "y = a.cuda() + \\\n    1  # noqa: SFX101\n"
    # merging: existing codes stay, in their order, with no duplicates; CRLF kept
    text = "y = a.cuda()  # noqa: F401,SFX101\r\nz = 1  # NOQA:E501 why\r\n"
    new, n = add_noqa(text, [_f(1, 1), _f(2, 2, "SFX102"), _f(2, 2)])
    assert new == "y = a.cuda()  # noqa: F401,SFX101\r\nz = 1  # noqa: E501, SFX101, SFX102 why\r\n"
    assert n == 1


# ---- SFX900: unused suppressions ----------------------------------------------------------------


def test_used_suppressions_are_not_reported():
    src = "import torch\nx = torch.rand(3).cuda()  # noqa: SFX101\ny = torch.rand(3).cuda()  # syncfix: ignore[SFX101]\n"
    assert check_code(src) == []
    src = "# syncfix: noqa: SFX101\nimport torch\nx = torch.rand(3).cuda()\n"
    assert check_code(src) == []


def test_unused_suppression_of_an_enabled_rule():
    src = 'import torch\nx = torch.rand(3).to("cuda", non_blocking=True)  # noqa: SFX101, E501\n'
    (f,) = check_code(src)
    assert (f.code, f.line, f.fix.applicability.value) == ("SFX900", 2, "safe")
    assert "nothing to suppress: SFX101" in f.message
    assert f.fix.edit.content == 'x = torch.rand(3).to("cuda", non_blocking=True)  # noqa: E501\n'
    assert fix_code(src) == 'import torch\nx = torch.rand(3).to("cuda", non_blocking=True)  # noqa: E501\n'


def test_bare_and_foreign_noqa_and_disabled_rules_are_never_reported():
    assert check_code("import torch\nx = 1  # noqa\ny = 2  # noqa: E501, F401\n") == []
    # SFX101 disabled for this run: its noqa may well be needed when it is on
    assert check_code("import torch\nx = 1  # noqa: SFX101\n", ignore=["SFX101"]) == []


def test_a_file_without_torch_still_gets_stale_codes_reported():
    (f,) = check_code("x = 1  # noqa: SFX101\n")
    assert f.code == "SFX900"
    assert fix_code("x = 1  # noqa: SFX101\n") == "x = 1\n"


def test_apply_fixes_findings_and_removes_stale_codes_together(workdir):
    src = SAFE + "y = 2  # noqa: SFX101\n"
    (workdir / "m.py").write_text(src, encoding="utf-8")
    r = _invoke("apply", "m.py")
    assert r.exit_code == 0, r.output
    assert (workdir / "m.py").read_text() == FIXED + "y = 2\n"


def test_unused_suppression_can_itself_be_suppressed():
    assert check_code("import torch\nx = 1  # noqa: SFX101  # noqa: SFX900\n") == []


def test_add_noqa_leaves_a_file_it_cannot_tokenize_alone():
    text = 'x = a.cuda()\ns = """never closed\n'
    assert add_noqa(text, [_f(1, 1)]) == (text, 0)


def test_add_noqa_refuses_stdin():
    r = CliRunner().invoke(cli, ["check", "-", "--add-noqa"], input=SAFE)
    assert r.exit_code == 2 and "stdin" in r.output
