"""The engine on bad and unusual input: nothing lost, nothing half written, a reason for every skip."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from syncfix.config import Settings
from syncfix.engine import Job, process_file, process_source
from syncfix.fileio import FileError, read_source, write_atomic

ROOT = Path(__file__).resolve().parent.parent

SAFE = "import torch\nx = torch.rand(3).cuda()\n"
FIXED_LINE = 'x = torch.rand(3).to("cuda", non_blocking=True)'


def apply_file(path) -> tuple:
    result = process_file(Job(str(path), fix=True, write=True, want_source=False), Settings())
    return result, path.read_bytes()


def test_syntax_error_is_reported_not_raised(tmp_path):
    p = tmp_path / "bad.py"
    p.write_text("import torch\ndef f(:\n    x.cuda()\n")
    result, data = apply_file(p)
    assert result.error and result.error.startswith("syntax error")
    assert data == b"import torch\ndef f(:\n    x.cuda()\n"


def test_python2_print_is_a_syntax_error(tmp_path):
    p = tmp_path / "py2.py"
    p.write_text('import torch\nprint "hello"\nx = torch.rand(2).cuda()\n')
    result, _ = apply_file(p)
    assert "syntax error" in result.error


def test_binary_file(tmp_path):
    p = tmp_path / "bin.py"
    p.write_bytes(b"torch\x00\x01.cuda(")
    result, data = apply_file(p)
    assert result.error == "binary file (contains NUL bytes)"
    assert data == b"torch\x00\x01.cuda("


def test_undecodable_file(tmp_path):
    p = tmp_path / "latin.py"
    p.write_bytes(b"import torch\ns = '\xe9'\nx = torch.rand(3).cuda()\n")
    result, _ = apply_file(p)
    assert result.error.startswith("cannot decode as utf-8")


def test_latin1_with_coding_cookie_keeps_its_encoding(tmp_path):
    p = tmp_path / "latin.py"
    src = "# -*- coding: latin-1 -*-\nimport torch\ns = 'café'\nx = torch.rand(3).cuda()\n"
    p.write_bytes(src.encode("latin-1"))
    result, data = apply_file(p)
    assert result.error is None and result.written
    assert data == src.replace("x = torch.rand(3).cuda()", FIXED_LINE).encode("latin-1")


def test_bad_coding_cookie(tmp_path):
    p = tmp_path / "cookie.py"
    p.write_bytes(b"# -*- coding: klingon -*-\nimport torch\n")
    result, _ = apply_file(p)
    assert result.error.startswith("bad encoding declaration")


def test_crlf_and_bom_are_kept(tmp_path):
    p = tmp_path / "crlf.py"
    src = "\ufeffimport torch\r\n\r\nx = torch.rand(3).cuda()\r\ny = 1\r\n"
    p.write_bytes(src.encode("utf-8"))
    result, data = apply_file(p)
    assert result.written
    assert data == src.replace("x = torch.rand(3).cuda()", FIXED_LINE).encode("utf-8")
    assert data.startswith(b"\xef\xbb\xbf")


def test_mixed_line_endings_tabs_and_no_trailing_newline(tmp_path):
    p = tmp_path / "mixed.py"
    src = "import torch\r\nif True:\n\tx = torch.rand(3).cuda()\r\n\ty = 2\x0c\n\tz = 3"
    p.write_bytes(src.encode())
    _, data = apply_file(p)
    assert data == src.replace("x = torch.rand(3).cuda()", FIXED_LINE).encode()


def test_read_only_file_is_reported_and_unchanged(tmp_path):
    p = tmp_path / "ro.py"
    p.write_text(SAFE)
    p.chmod(0o444)
    try:
        result, data = apply_file(p)
        assert result.error == "read-only file; not written"
        assert data == SAFE.encode() and not result.written and result.fixed == []
    finally:
        p.chmod(0o644)


def test_permissions_are_kept_and_no_temp_files_left(tmp_path):
    p = tmp_path / "perm.py"
    p.write_text(SAFE)
    p.chmod(0o640)
    result, _ = apply_file(p)
    assert result.written
    assert stat.S_IMODE(p.stat().st_mode) == 0o640
    assert sorted(x.name for x in tmp_path.iterdir()) == ["perm.py"]


def test_unchanged_file_is_never_written(tmp_path):
    p = tmp_path / "clean.py"
    p.write_text("import torch\nx = torch.rand(3).to('cuda', non_blocking=True)\n")
    before = p.stat().st_mtime_ns
    result, _ = apply_file(p)
    assert not result.written and p.stat().st_mtime_ns == before


def test_file_changed_between_read_and_write_is_not_clobbered(tmp_path):
    p = tmp_path / "race.py"
    p.write_text(SAFE)
    snap = read_source(str(p))
    p.write_text(SAFE + "# edited by someone else\n")
    os.utime(p, ns=(snap.mtime_ns + 10**9, snap.mtime_ns + 10**9))
    with pytest.raises(FileError, match="changed on disk"):
        write_atomic(str(p), b"new", snap)
    assert p.read_text().endswith("# edited by someone else\n")


def test_symlink_loop_named_explicitly(tmp_path):
    loop = tmp_path / "loop.py"
    loop.symlink_to(tmp_path / "loop.py")
    result, = [process_file(Job(str(loop), fix=False, write=False, want_source=False), Settings())]
    assert "symbolic links" in result.error


def test_symlinked_file_is_written_at_its_target(tmp_path):
    real = tmp_path / "real.py"
    real.write_text(SAFE)
    link = tmp_path / "link.py"
    link.symlink_to(real)
    result, _ = apply_file(link)
    assert result.written and link.is_symlink()
    assert FIXED_LINE in real.read_text()


def test_empty_file_and_no_torch(tmp_path):
    for text in ("", "x = 1\n", "import os\ny = x.cuda()\n"):
        new, findings, _ = process_source(text.encode(), "f.py", Settings(), fix=True)
        assert new == text.encode() and findings == []


def test_a_statement_libcst_rejects_keeps_the_files_findings_without_fixes():
    # wanda's `assert(x if c else True)`: Python parses it, LibCST's node checks reject it (no
    # space after the keyword) once a walk rebuilds the node; the file's findings stay, unfixed
    text = (
        "import torch\n\n\ndef f(x, c, loader):\n    assert(x if c else True)\n"
        "    for b in loader:\n        y = torch.zeros(3).cuda()\n    return(y if c else x)\n"
    )
    fixable = text.replace("assert(", "assert (").replace("return(", "return (")
    process_source(fixable.encode(), "g.py", Settings(), fix=False)  # the same kinds of node, checked first
    new, remaining, applied = process_source(text.encode(), "f.py", Settings(), fix=True)
    assert new == text.encode() and applied == []
    (found,) = [f for f in remaining if f.code == "SFX101"]
    assert found.fix is None and "LibCST rejects a statement" in found.message
    new, _, applied = process_source(fixable.encode(), "f.py", Settings(), fix=True)
    assert [f.code for f in applied] == ["SFX101"] and b"device=\"cuda\")" in new


def test_deep_nesting_does_not_crash(tmp_path):
    p = tmp_path / "deep.py"
    p.write_text("import torch\nx = " + "(" * 400 + "torch.rand(2).cuda()" + ")" * 400 + "\n")
    result, _ = apply_file(p)
    assert result.error is None or "nested" in result.error or "syntax" in result.error


def test_output_does_not_depend_on_hash_seed(tmp_path):
    (tmp_path / "a.py").write_text(
        "import torch\ndef f(x: torch.Tensor, y):\n    a = x.cuda()\n    b = torch.rand(2).cuda()\n"
        "    for i in range(3):\n        c = y.cuda()\n    return a, b, c\n"
    )
    outputs = set()
    for seed in ("0", "1", "12345"):
        env = {**os.environ, "PYTHONHASHSEED": seed}
        r = subprocess.run(
            [sys.executable, "-m", "syncfix", "check", ".", "--output-format", "json"],
            cwd=tmp_path, env=env, capture_output=True, text=True, check=False,
        )
        assert r.returncode == 1, r.stderr
        outputs.add(r.stdout)
    assert len(outputs) == 1


def test_file_libcst_cannot_reproduce_is_left_untouched(tmp_path):
    # LibCST 1.9 regenerates this source without its blank line; no fix may then be written.
    p = tmp_path / "odd.py"
    src = "import torch\nx = torch.rand(2).cuda()\n\n #"
    p.write_text(src)
    import libcst as cst

    if cst.parse_module(src).code == src:
        pytest.skip("this LibCST reproduces the file exactly")
    result, data = apply_file(p)
    assert "byte for byte" in result.error
    assert data == src.encode()


def _all_sources():
    from syncfix.rules import all_rules

    from .rules.fixture_cases import cases

    for case in cases():
        yield case.id, case.source
    for code, rule in all_rules().items():
        for i, example in enumerate(rule.INVALID):
            yield f"{code}-{i}", example.code
    yield "crlf", "import torch\r\n\r\nx = torch.rand(3).cuda()\r\n"
    yield "formfeed", "import torch\n\x0c\nx = 1  # \x0c\nif True:\n    y = torch.rand(3).cuda()\n"
    yield "no-final-newline", "import torch\nx = torch.rand(3).cuda()"


@pytest.mark.parametrize("name,source", list(_all_sources()))
def test_fast_fix_edits_equal_the_whole_module_reference(name, source):
    """The per-statement edit must be exactly what regenerating the whole module gives."""
    import libcst as cst

    from syncfix.engine import analyze, enabled_rules, fix_edit, fix_edit_slow

    settings = Settings(select=("ALL",), unsafe_fixes=True)
    module = cst.parse_module(source)
    analyzed = analyze(module, enabled_rules(settings, "f.py"), settings)
    fixes = [raw.fix for raw in analyzed.findings if raw.fix is not None]
    for fix in fixes:
        assert fix_edit(analyzed, fix) == fix_edit_slow(module, fix), name


# ---- the prefilter's torch gate ----------------------------------------------------------------


@pytest.mark.parametrize(
    "source, expected",
    [
        ("import torch\n", True),
        ("import os, torch.nn as nn\n", True),
        ("from torch.utils.data import DataLoader\n", True),
        ("def f():\n    import torch\n", True),
        ("from . import torch_helpers\n", True),  # anything named torch-ish is let through
        ("x = 1\n", False),
        ('"""No torch here."""\nimport json\n', False),  # a mention is not an import
        ("y = torch.randn(3)\n", False),  # an unbound name proves nothing
        ("import torch\ndef f(:\n", True),  # unparsable: LibCST decides
        # an ``import torch`` line is read without parsing; one in a string only costs time
        ('"""Example:\nimport torch\n"""\nimport json\n', True),
        ('"""Example: import torch"""\nimport json\n', False),
    ],
)
def test_imports_torch(source, expected):
    from syncfix.engine import imports_torch

    assert imports_torch(source.encode()) is expected


def _without_torch_imports(source: str) -> str:
    """Every import statement that names torch replaced by ``pass`` (line numbers kept)."""
    import ast
    import re

    lines = source.splitlines(keepends=True)
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, (ast.Import, ast.ImportFrom)) and "torch" in ast.get_source_segment(source, node):
            for i in range(node.lineno - 1, node.end_lineno):
                lines[i] = re.match(r"[ \t]*", lines[i]).group(0) + "pass\n"
    return "".join(lines)


def _examples():
    from syncfix.rules import all_rules

    for code, rule in sorted(all_rules().items()):
        for i, src in enumerate([*rule.VALID, *(inv.code for inv in rule.INVALID)]):
            yield pytest.param(src, id=f"{code}-{i}")
    for path in sorted((ROOT / "tests" / "rules").glob("*/fixtures/*.in.py")):
        yield pytest.param(path.read_text(), id=path.parent.parent.name + "/" + path.name)


@pytest.mark.parametrize("source", list(_examples()))
def test_rules_that_need_torch_find_nothing_without_its_imports(source):
    """The engine skips a file without torch imports for every rule with NEEDS_TORCH: that is
    only right if such a rule, run anyway, would find nothing there."""
    from syncfix import engine
    from syncfix.rules import all_rules

    stripped = _without_torch_imports(source)
    if engine.imports_torch(stripped.encode()):
        pytest.skip("still imports torch")
    rules = [r for r in all_rules().values() if r.NEEDS_TORCH]
    found = engine.analyze(engine.parse(stripped.encode(), Settings()), rules, Settings()).findings
    assert [(f.rule.CODE, f.message) for f in found] == []
