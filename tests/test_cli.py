"""The command line, through click's runner: exit codes, formats, diffs, config, suppression."""

from __future__ import annotations

import json
import os

import pytest
from click.testing import CliRunner

from syncfix.cli import cli

SAFE = "import torch\nx = torch.rand(3).cuda()\n"
SAFE_FIXED = 'import torch\nx = torch.rand(3).to("cuda", non_blocking=True)\n'
UNSAFE = "import torch\ndef f(x: torch.Tensor):\n    return x.cuda()\n"
UNSAFE_FIXED = 'import torch\ndef f(x: torch.Tensor):\n    return x.to("cuda", non_blocking=True)\n'
CLEAN = "import torch\nx = torch.ones(3)\n"


@pytest.fixture
def project(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("SYNCFIX_OUTPUT_FORMAT", raising=False)
    monkeypatch.delenv("NO_COLOR", raising=False)

    def write(name: str, text: str) -> str:
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        return name

    return write


def run(*args, input=None):
    return CliRunner().invoke(cli, list(args), input=input, catch_exceptions=False)


def test_check_reports_and_changes_nothing(project):
    project("a.py", SAFE)
    r = run("check", "a.py", "--output-format", "concise")
    assert r.exit_code == 1
    assert "a.py:2:5: SFX101 [*] Blocking host-to-device copy" in r.output
    assert "Found 1 finding." in r.output
    assert open("a.py").read() == SAFE


def test_check_clean_exits_zero(project):
    project("a.py", CLEAN)
    r = run("check", ".")
    assert r.exit_code == 0 and "All checks passed!" in r.output


def test_full_format_shows_snippet_and_fix(project):
    project("a.py", SAFE)
    r = run("check", "a.py")
    assert "2 | x = torch.rand(3).cuda()" in r.output
    assert "^^^^" in r.output
    assert "help: Copy with non_blocking=True" in r.output


def test_apply_writes_safe_fixes_only(project):
    project("a.py", SAFE)
    project("b.py", UNSAFE)
    r = run("apply", ".")
    assert r.exit_code == 1  # the unsafe one remains
    assert open("a.py").read() == SAFE_FIXED
    assert open("b.py").read() == UNSAFE
    assert "Found 2 findings (1 fixed, 1 remaining)." in r.output
    assert "--unsafe-fixes" in r.output
    r = run("apply", ".", "--unsafe-fixes")
    assert r.exit_code == 0
    assert open("b.py").read() == UNSAFE_FIXED


def test_apply_twice_changes_nothing_and_keeps_mtime(project):
    project("a.py", SAFE)
    assert run("apply", "a.py").exit_code == 0
    before = os.stat("a.py").st_mtime_ns
    r = run("apply", "a.py")
    assert r.exit_code == 0 and "All checks passed!" in r.output
    assert os.stat("a.py").st_mtime_ns == before


def test_diff_is_git_style_and_writes_nothing(project):
    project("pkg/a.py", SAFE)
    r = run("apply", "--diff", "pkg")
    assert r.exit_code == 1
    assert "--- a/pkg/a.py\n+++ b/pkg/a.py\n" in r.stdout
    assert '+x = torch.rand(3).to("cuda", non_blocking=True)' in r.stdout
    assert "\x1b[" not in r.stdout  # piped: no colour
    assert open("pkg/a.py").read() == SAFE
    assert "Would fix 1 finding in 1 file." in r.stderr


def test_diff_colour_always(project):
    project("a.py", SAFE)
    r = run("apply", "--diff", "--color", "always", "a.py")
    assert "\x1b[" in r.stdout


def test_diff_empty_exits_zero(project):
    project("a.py", CLEAN)
    r = run("apply", "--diff", "a.py")
    assert r.exit_code == 0 and r.stdout == ""


def test_json_output_carries_fix_applicability(project):
    project("a.py", SAFE)
    project("b.py", UNSAFE)
    r = run("check", ".", "--output-format", "json")
    data = json.loads(r.stdout)
    by_file = {d["filename"]: d for d in data}
    assert by_file["a.py"]["fix"]["applicability"] == "safe"
    assert by_file["b.py"]["fix"]["applicability"] == "unsafe"
    edit = by_file["a.py"]["fix"]["edits"][0]
    assert edit["content"] == 'x = torch.rand(3).to("cuda", non_blocking=True)\n'
    assert edit["location"] == {"row": 2, "column": 1}


def test_select_and_ignore(project):
    project("a.py", SAFE)
    assert run("check", "a.py", "--ignore", "SFX1").exit_code == 0
    assert run("check", "a.py", "--select", "SFX101").exit_code == 1
    assert run("check", "a.py", "--select", "ALL", "--ignore", "SFX101").exit_code == 0
    r = run("check", "a.py", "--select", "SFX999")
    assert r.exit_code == 2 and "unknown rule selector" in r.output


def test_exit_zero(project):
    project("a.py", SAFE)
    assert run("check", "a.py", "--exit-zero").exit_code == 0


def test_config_in_pyproject(project):
    project("a.py", SAFE)
    project("pyproject.toml", '[tool.syncfix]\nignore = ["SFX101"]\n')
    assert run("check", "a.py").exit_code == 0
    # CLI flags win
    assert run("check", "a.py", "--select", "SFX101", "--ignore", "SFX1").exit_code == 1


def test_nearest_config_wins(project):
    project("pyproject.toml", '[tool.syncfix]\nignore = ["SFX101"]\n')
    project("sub/syncfix.toml", 'select = ["SFX"]\n')
    project("sub/a.py", SAFE)
    assert run("check", "sub/a.py").exit_code == 1


def test_bad_config_exits_two(project):
    project("a.py", SAFE)
    project("pyproject.toml", '[tool.syncfix]\nselekt = ["SFX"]\n')
    r = run("check", "a.py")
    assert r.exit_code == 2 and "unknown setting 'selekt'" in r.output
    project("pyproject.toml", "[tool.syncfix\n")
    assert run("check", "a.py").exit_code == 2


@pytest.mark.parametrize(
    ("setting", "message"),
    [
        ('per-file-ignores = { "a.py" = "SFX402" }', "'per-file-ignores' value for 'a.py' must be a list of strings"),
        ('per-file-ignores = { "a.py" = ["SFX999"] }', "unknown rule selector 'SFX999'"),
        ("target-version = 312", "'target-version' must be a string"),
    ],
)
def test_mistyped_config_exits_two(project, setting, message):
    """A string for a list would match rules by its characters ("S" is every rule), silently."""
    project("a.py", SAFE)
    project("pyproject.toml", f"[tool.syncfix]\n{setting}\n")
    r = run("check", "a.py")
    assert r.exit_code == 2 and message in r.output


def test_closed_project_is_true_or_false(project):
    project("a.py", SAFE)
    project("pyproject.toml", '[tool.syncfix]\nclosed-project = "yes"\n')
    r = run("check", "a.py")
    assert r.exit_code == 2 and "'closed-project' must be true or false" in r.output
    project("pyproject.toml", "[tool.syncfix]\nclosed-project = true\n")
    assert "closed_project = True" in run("check", "--show-settings").output
    project("pyproject.toml", "")
    assert "closed_project = None" in run("check", "--show-settings").output


def test_extend_safe_fixes(project):
    project("b.py", UNSAFE)
    project("pyproject.toml", '[tool.syncfix]\nextend-safe-fixes = ["SFX101"]\n')
    assert run("apply", "b.py").exit_code == 0
    assert open("b.py").read() == UNSAFE_FIXED


ACCELERATOR = (
    "import torch\n"
    "device = torch.accelerator.current_accelerator()\n"
    "def train(steps: int):\n"
    "    for _ in range(steps):\n"
    "        x = (torch.randn(8) * 2).to(device)\n"
    "        print(x.shape)\n"
)


def test_declared_devices_make_copies_to_an_unnamed_device_safe(project):
    # `torch.accelerator.current_accelerator()` may be MPS or XPU: the fix stays unsafe, and the
    # message says how to declare otherwise; with `devices = ["cuda", "cpu"]` it is safe
    project("c.py", ACCELERATOR)
    r = run("check", "c.py", "--no-cache")
    assert "[*]" not in r.output and 'devices = ["cuda", "cpu"]' in r.output, r.output
    project("pyproject.toml", '[tool.syncfix.torch]\ndevices = ["cuda", "cpu"]\n')
    assert run("apply", "c.py", "--no-cache").exit_code == 0
    assert "x = (torch.randn(8) * 2).to(device, non_blocking=True)" in open("c.py").read()
    project("c.py", ACCELERATOR)
    project("pyproject.toml", '[tool.syncfix.torch]\ndevices = ["cuda", "mps"]\n')
    run("apply", "c.py", "--no-cache")
    assert open("c.py").read() == ACCELERATOR  # MPS copies are not proven
    project("pyproject.toml", '[tool.syncfix.torch]\ndevices = ["gpu"]\n')
    r = run("check", "c.py")
    assert r.exit_code == 2 and "torch.devices" in r.output and "not gpu" in r.output


def test_with_devices_declared_an_unnamed_device_asks_for_a_type_not_the_declaration(project):
    # disentangling-vae's ``torch.randperm(n).to(latent_sample.device)`` of a parameter: with the
    # project's devices declared, what is missing is that the expression names a device at all
    project("f.py", (
        "import torch\n\n\ndef permute_dims(latent_sample):\n    for z in range(4):\n"
        "        pi = torch.randperm(8).to(latent_sample.device)\n        latent_sample[pi, z]\n"
    ))
    project("pyproject.toml", '[tool.syncfix.torch]\ndevices = ["cuda", "cpu"]\n')
    r = run("check", "f.py", "--no-cache", "--unsafe-fixes")
    assert "cannot tell that `latent_sample.device` names a device" in r.output, r.output
    assert "annotate `latent_sample: torch.Tensor`" in r.output and "declare `devices" not in r.output
    project("f.py", open("f.py").read().replace("(latent_sample)", "(latent_sample: torch.Tensor)"))
    assert run("apply", "f.py", "--no-cache").exit_code == 0
    assert ".to(latent_sample.device, non_blocking=True)" in open("f.py").read()


@pytest.mark.parametrize(
    "line",
    [
        "x = torch.rand(3).cuda()  # noqa: SFX101",
        "x = torch.rand(3).cuda()  # noqa",
        "x = torch.rand(3).cuda()  # syncfix: ignore[SFX101]",
        "x = torch.rand(3).cuda()  # noqa: E501, SFX101",
    ],
)
def test_line_suppression(project, line):
    project("a.py", f"import torch\n{line}\n")
    assert run("check", "a.py").exit_code == 0


def test_suppression_on_the_line_above_and_file_level(project):
    project("a.py", "import torch\n# syncfix: ignore[SFX101]\nx = torch.rand(3).cuda()\n")
    assert run("check", "a.py").exit_code == 0
    project("b.py", "# syncfix: noqa: SFX101\nimport torch\nx = torch.rand(3).cuda()\n")
    assert run("check", "b.py").exit_code == 0


def test_suppression_of_another_code_does_not_count(project):
    project("a.py", "import torch\nx = torch.rand(3).cuda()  # noqa: SFX201\n")
    assert run("check", "a.py").exit_code == 1
    # text in a string is not a comment
    project("b.py", 'import torch\nx = torch.rand(3).cuda(); s = "# noqa: SFX101"\n')
    assert run("check", "b.py").exit_code == 1


def test_stdin(project):
    r = run("check", "-", "--output-format", "concise", input=SAFE)
    assert r.exit_code == 1 and "-:2:5: SFX101" in r.output
    r = run("apply", "-", input=SAFE)
    assert r.stdout == SAFE_FIXED


def test_gitignore_and_excludes(project):
    project(".gitignore", "generated/\n")
    (project("generated/a.py", SAFE))
    project(".venv/lib/b.py", SAFE)
    project("build/c.py", SAFE)
    project("src/d.py", SAFE)
    os.makedirs(".git")
    r = run("check", ".", "--show-files")
    assert r.output.split() == ["src/d.py"]
    # an explicitly named file is processed anyway, unless --force-exclude
    assert run("check", "generated/a.py").exit_code == 1
    assert run("check", "generated/a.py", "--force-exclude").exit_code == 0
    # a file inside an excluded folder counts as excluded too
    assert run("check", "build/c.py", "--force-exclude").exit_code == 0
    assert run("check", "build/c.py").exit_code == 1
    r = run("check", ".", "--show-files", "--extend-exclude", "src")
    assert r.output.split() == []


def test_missing_path_is_a_usage_error_and_not_a_pass(project):
    """As ruff: a path that does not exist exits 2, and nothing claims the checks passed."""
    project("a.py", CLEAN)
    for args in (["nope.py"], ["a.py", "nope.py"]):
        r = run("check", *args)
        assert r.exit_code == 2
        assert "nope.py: No such file or directory" in r.stderr
        assert "All checks passed" not in r.output
    assert run("check", "nope.py", "--exit-zero").exit_code == 2


def test_folder_without_python_files_warns(project):
    project("docs/readme.txt", "not python\n")
    r = run("check", "docs")
    assert r.exit_code == 0
    assert "warning: No Python files found" in r.stderr


def test_read_only_file_reports_the_lines_on_disk(project):
    """Not written: the findings left point at the file as it is, not at the fixed text."""
    import stat

    src = (
        "import torch\ndef f(xs: torch.Tensor, opt):\n    for x in xs.cuda():\n"
        "        loss = x.pow(2).mean()\n        print(loss.item())\n        loss.backward()\n"
        "        opt.step()\n"
    )
    project("a.py", src)
    checked = run("check", "a.py", "--output-format", "concise").stdout
    os.chmod("a.py", stat.S_IRUSR)
    try:
        r = run("apply", "a.py", "--output-format", "concise")
    finally:
        os.chmod("a.py", stat.S_IRUSR | stat.S_IWUSR)
    assert "a.py:5:" in checked
    assert [line for line in r.stdout.splitlines() if line.startswith("a.py:")] == [
        line for line in checked.splitlines() if line.startswith("a.py:")
    ]


def test_read_only_file_keeps_its_finding(project):
    import stat

    project("a.py", SAFE)
    os.chmod("a.py", stat.S_IRUSR)
    try:
        r = run("apply", "a.py", "--output-format", "concise")
    finally:
        os.chmod("a.py", stat.S_IRUSR | stat.S_IWUSR)
    assert r.exit_code == 1
    assert "a.py: read-only file; not written" in r.stderr
    assert "a.py:2:5: SFX101" in r.stdout  # the finding is still there, and is reported
    assert "All checks passed" not in r.output
    assert open("a.py").read() == SAFE


def test_check_fix_is_apply(project):
    """ruff's habit: `check --fix` writes fixes, `check --diff` shows them."""
    project("a.py", SAFE)
    r = run("check", "--diff", "a.py")
    assert r.exit_code == 1 and "+x = torch.rand(3).to(" in r.stdout
    assert open("a.py").read() == SAFE
    r = run("check", "--fix", "a.py")
    assert r.exit_code == 0
    assert open("a.py").read() == SAFE_FIXED
    project("b.py", UNSAFE)
    assert run("check", "--fix", "--unsafe-fixes", "b.py").exit_code == 0
    assert open("b.py").read() == UNSAFE_FIXED
    assert run("check", "--fix", "--add-noqa", "b.py").exit_code == 2


def test_help_does_not_cut_command_descriptions():
    r = CliRunner().invoke(cli, ["--help"], terminal_width=80)
    commands = r.output.split("Commands:", 1)[1]
    assert "..." not in commands
    assert {"apply", "check", "rule", "clean"} <= {line.split()[0] for line in commands.strip().splitlines()}


def test_findings_are_coloured_only_when_asked_or_on_a_terminal(project):
    project("a.py", SAFE)
    for fmt in ("full", "concise", "grouped"):
        plain = run("check", "a.py", "-o", fmt).stdout  # CliRunner's stdout is not a terminal
        assert "\x1b[" not in plain
        coloured = run("check", "a.py", "-o", fmt, "--color", "always").stdout
        assert "\x1b[1;31mSFX101\x1b[0m" in coloured  # the code, bold red
        assert "\x1b[36m[*]\x1b[0m" in coloured  # the fix marker, cyan
        assert "\x1b[" not in run("check", "a.py", "-o", fmt, "--color", "never").stdout
    full = run("check", "a.py", "--color", "always").stdout
    assert "\x1b[1;31m^^^^" in full  # the caret, red
    assert "\x1b[1ma.py\x1b[0m\x1b[36m:\x1b[0m2" in full  # the location: path bold, colons cyan
    assert "\x1b[" not in run("check", "a.py", "-o", "json", "--color", "always").stdout


LOGGED = """import torch
import torch.nn.functional as F


def train(model: torch.nn.Module, opt, xs: torch.Tensor, ys: torch.Tensor, steps: int):
    for step in range(steps):
        logits = model(xs)
        loss = F.cross_entropy(logits, ys)
        print(f"step {step} loss {loss.item():.5f}")
        opt.zero_grad()
        loss.backward()
        opt.step()
"""


def test_multi_line_fix_shows_a_minimal_hunk(project):
    """SFX401 moves one line: the preview shows that line leaving and arriving, not the loop."""
    project("t.py", LOGGED)
    out = run("check", "t.py", "--select", "SFX401").stdout
    fix = out.split("= help:", 1)[1]
    assert fix.count('print(f"step') == 2
    assert '  -         print(f"step' in fix and '  +         print(f"step' in fix
    assert "  - " + "        opt.zero_grad()" not in fix  # unchanged lines are not removed and re-added
    assert "  + " + "        opt.zero_grad()" not in fix


def test_messages_say_why_there_is_no_fix(project):
    project("u.py", UNSAFE)
    project("n.py", "import torch\nfor b in loader:\n    s = b.state.cuda()\n")
    out = run("check", "u.py", "n.py", "-o", "concise").stdout
    unsafe_line = next(x for x in out.splitlines() if x.startswith("u.py"))
    assert "the fix is unsafe: review it and pass --unsafe-fixes" in unsafe_line
    none_line = next(x for x in out.splitlines() if x.startswith("n.py"))
    assert "receiver not provably a tensor: no fix" in none_line
    # a GPU tensor's `.cuda()` copies nothing: the copy is only possibly blocking
    assert "Possibly blocking host-to-device copy: if the receiver is a CPU tensor" in none_line
    assert "to get a fix, annotate it as `torch.Tensor`" in none_line
    # with --unsafe-fixes the unsafe fix is available: no excuse is given
    out = run("check", "u.py", "-o", "concise", "--unsafe-fixes").stdout
    assert "--unsafe-fixes" not in out.splitlines()[0]


def test_per_file_problems_do_not_stop_the_run(project):
    project("bad.py", "import torch\ndef f(:\n    x.cuda()\n")
    project("good.py", SAFE)
    r = run("apply", ".")
    assert r.exit_code == 1
    assert "bad.py: syntax error" in r.output
    assert open("good.py").read() == SAFE_FIXED


def test_interactive_accept_skip_and_quit(project):
    project(
        "a.py",
        "import torch\nx = torch.rand(3).cuda()\ny = torch.randn(2).cuda()\nz = torch.rand(1).cuda()\n",
    )
    r = run("apply", "--interactive", "a.py", input="y\nn\nq\n")
    text = open("a.py").read()
    assert 'x = torch.rand(3).to("cuda", non_blocking=True)' in text
    assert "y = torch.randn(2).cuda()" in text
    assert "z = torch.rand(1).cuda()" in text
    assert "[safe]" in r.output


def test_interactive_accept_rest_of_rule(project):
    project("a.py", "import torch\nx = torch.rand(3).cuda()\ny = torch.randn(2).cuda()\n")
    run("apply", "--interactive", "a.py", input="a\n")
    assert ".cuda()" not in open("a.py").read()


def test_rule_docs(project):
    r = run("rule", "SFX101")
    assert r.exit_code == 0
    for section in ("## What it finds", "## Why it costs", "## Fix safety"):
        assert section in r.output
    r = run("rule", "--all", "--output-format", "json")
    assert {d["code"] for d in json.loads(r.output)} >= {"SFX101"}
    assert run("rule", "SFX999").exit_code == 2


def test_parallel_and_serial_runs_agree(project, tmp_path):
    for i in range(40):
        project(f"m{i:02}.py", SAFE if i % 2 else UNSAFE)
    serial = run("check", ".", "-j", "1", "--output-format", "json").stdout
    parallel = run("check", ".", "-j", "2", "--output-format", "json").stdout
    assert serial == parallel and len(json.loads(serial)) == 40


def test_version():
    r = run("--version")
    assert r.exit_code == 0 and "syncfix" in r.output


def test_diff_and_interactive_conflict(project):
    project("a.py", SAFE)
    assert run("apply", "--diff", "--interactive", "a.py").exit_code == 2


def test_output_file(project):
    project("a.py", SAFE)
    r = run("check", "a.py", "--output-format", "json", "--output-file", "out.json")
    assert r.exit_code == 1
    assert json.loads(open("out.json").read())[0]["code"] == "SFX101"


def _readme_setup_commands() -> list[str]:
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    readme = open(os.path.join(root, "README.md"), encoding="utf-8").read()
    block = readme.split("## Set-up", 1)[1].split("```bash\n", 1)[1].split("```", 1)[0]
    return [line.split("  #", 1)[0].strip() for line in block.splitlines() if line.strip()]


def test_readme_main_command_runs_on_examples():
    """The README's first set-up command ends in a syncfix run over the bundled examples that
    exits 0 (so `&&` chains go on) while still printing the diff."""
    first, second = _readme_setup_commands()
    assert second == "python -m pytest -q"
    syncfix = first.split("&&")[-1].split()
    assert syncfix[0] == "syncfix"
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    old = os.getcwd()
    os.chdir(root)
    try:
        r = run(*syncfix[1:])
    finally:
        os.chdir(old)
    assert r.exit_code == 0
    assert "+++ b/examples/train_classifier.py" in r.stdout
    # the batch copies the GPU harness proves (docs/benchmarks.md): no file elsewhere in this
    # project (a test fixture's dataset on the GPU) may hold them back
    assert "+        x = x.to(device, non_blocking=True)" in r.stdout


def test_readme_example_is_real_output(project):
    """The README's before/after diff is what `syncfix apply` produces."""
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    readme = open(os.path.join(root, "README.md"), encoding="utf-8").read()
    block = readme.split("```diff\n", 1)[1].split("```", 1)[0]
    # pasted as is (its imports included), it is a complete module
    before = "".join(line[1:] + "\n" for line in block.splitlines() if line[:1] in (" ", "-"))
    after = "".join(line[1:] + "\n" for line in block.splitlines() if line[:1] in (" ", "+"))
    assert before.startswith("import torch\n")
    project("ex.py", before)
    run("apply", "ex.py")
    assert open("ex.py").read() == after


def test_a_finding_without_a_fix_is_not_said_to_be_fixed_by_an_edit_of_its_line():
    # Two copies in one line: the rule fixes one and says "no fix" for the other. The fix's
    # edit replaces the whole line, which is no reason to say the other is fixed with it.
    from syncfix.advice import Explainer
    from syncfix.model import Applicability, Edit, Finding, FixInfo

    line = "x, y = x.to(device=d, dtype=t), y.to(device=d)\n"
    edit = Edit(4, 4, line.replace("d)\n", "d, non_blocking=True)\n"), line)
    fixed = Finding("SFX101", "n", "Blocking copy", "f.py", 4, 34, 4, 48,
                    FixInfo(Applicability.SAFE, "Copy with non_blocking=True", edit))
    unfixed = Finding("SFX101", "n", "Blocking copy (the source may be written again: no fix)",
                      "f.py", 4, 8, 4, 32)
    covered = Finding("SFX101", "n", "Blocking copy", "f.py", 4, 8, 4, 32)
    explain = Explainer([fixed, unfixed, covered], unsafe_fixes=False)
    assert "fixed together" not in explain(unfixed)
    assert "see `syncfix rule SFX101`" in explain(unfixed)
    assert explain(covered).endswith("fixed together with the finding at line 4")


def test_stdin_that_cannot_be_parsed(project):
    broken = "import torch\ndef f(:\n    x.cuda()\n"
    # an editor replaces its buffer with what apply writes: it gets its text back unchanged
    r = run("apply", "-", input=broken)
    assert (r.exit_code, r.stdout) == (1, broken)
    assert "syncfix: error: -: syntax error at 2:7" in r.stderr
    assert run("apply", "-", "--diff", input=broken).stdout == ""
    (entry,) = json.loads(run("check", "-", "-o", "json", "--stdin-filename", "m.py", input=broken).stdout)
    assert (entry["code"], entry["filename"], entry["location"]) == (None, "m.py", {"row": 2, "column": 7})


@pytest.mark.parametrize("version", ["py27", "py2", "foo"])
def test_an_unknown_target_version_is_a_usage_error_that_lists_the_accepted_ones(project, version):
    project("a.py", "import torch\nfor i in range(3):\n    y = torch.ones(3).cuda()\n")
    result = CliRunner().invoke(cli, ["check", "--no-cache", "--target-version", version, "a.py"])
    assert result.exit_code == 2
    assert "internal error" not in result.output
    assert "'py312'" in result.output


def test_a_known_target_version_parses_with_that_grammar(project):
    project("a.py", "import torch\nfor i in range(3):\n    y = torch.ones(3).cuda()\n")
    result = run("check", "--no-cache", "--target-version", "py310", "a.py")
    assert result.exit_code == 1 and "SFX101" in result.output, result.output
    match = run("check", "--no-cache", "--target-version", "py39", "a.py")
    assert match.exit_code == 1, match.output


def test_a_legacy_async_keyword_says_what_it_is_now(project):
    # tsn-pytorch's `input.cuda(async=True)`: a syntax error since Python 3.7
    r = run("check", "-", input="import torch\nx = torch.ones(2).cuda(async=True)\n")
    assert "syntax error at 2:" in r.stderr
    assert "`async=True` is `non_blocking=True`" in r.stderr
    assert "non_blocking" not in run("check", "-", input="import torch\ndef f(:\n    pass\n").stderr


def test_apply_fixes_what_check_offers_in_one_run_however_files_are_ordered(tmp_path, monkeypatch):
    # yolov4-pytorch: `apply` wrote utils/callbacks.py (a caller of `non_max_suppression`, with
    # fixes of its own) before it analysed utils/utils_bbox.py, which then read the caller as
    # changed and held its fixes back; every file is now analysed before any is written
    monkeypatch.chdir(tmp_path)
    (tmp_path / "pyproject.toml").write_text("")
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "a_caller.py").write_text(
        "import torch\n\nfrom .z_box import Box\n\n\ndef run(xs):\n    box = Box()\n    for x in xs:\n"
        "        y = torch.rand(3).cuda()\n        box.nms(x + y)\n    try:\n        print('done')\n"
        "    except Exception as e:\n        print(e)\n"
    )
    (pkg / "z_box.py").write_text(
        "import torch\n\n\nclass Box:\n    def nms(self, x):\n        labels = x.cpu().unique()\n        return labels.cuda()\n"
    )
    checked = json.loads(CliRunner().invoke(cli, ["check", "--no-cache", "-j", "1", "-o", "json", "."]).stdout)
    fixable = {(f["filename"], f["location"]["row"]) for f in checked if f["fix"] is not None}
    assert ("pkg/z_box.py", 7) in fixable
    CliRunner().invoke(cli, ["apply", "--no-cache", "-j", "1", "."])
    assert "labels.to(\"cuda\", non_blocking=True)" in (pkg / "z_box.py").read_text()
    assert "non_blocking=True" in (pkg / "a_caller.py").read_text()
