"""On-the-fly rewriting: line maps, the import hook, and never touching the user's files."""

from __future__ import annotations

import importlib
import inspect
import os
import sys
import traceback

import pytest
from conftest import tree_snapshot

from syncfix import fix_code
from syncfix.harness.rewrite import Rewriter, align, changed_lines, make_fixer


def test_align_replace_insert_delete():
    old = "a\nb\nc\nd\n"
    new = "a\nB\nc\nnew1\nnew2\nd\n"
    hunks, line_map = align(old, new)
    assert [(h.start, h.end) for h in hunks] == [(2, 2), (4, 3)]
    assert hunks[1].anchor == 3  # an insertion is charged to the line before it
    assert line_map == [1, 2, 3, 3, 3, 4]
    assert changed_lines(hunks) == {2, 3}
    hunks, line_map = align("a\nb\nc\n", "a\nc\n")
    assert [(h.start, h.end, h.new_start, h.new_end) for h in hunks] == [(2, 2, 2, 1)]
    assert line_map == [1, 3]


def test_align_multiline_replacement_maps_into_the_old_block():
    old = "x = f(\n    1,\n)\ny = 2\n"
    new = "x = g(1)\ny = 2\n"
    hunks, line_map = align(old, new)
    assert [(h.start, h.end) for h in hunks] == [(1, 3)]
    assert line_map == [1, 4]


def _project(make_file):
    make_file("pkg/__init__.py", "")
    make_file(
        "pkg/mod.py",
        """
        VALUE = 1


        def where():
            return VALUE
        """,
    )
    lib = make_file(".venv/lib/site-packages/vendored.py", "VALUE = 1\n")
    return lib.parents[3]


def _bump(source: str, path: str) -> str:
    return source.replace("VALUE = 1", "VALUE = 2\nEXTRA = True")


@pytest.fixture
def clean_modules():
    yield
    for name in [m for m in sys.modules if m == "pkg" or m.startswith("pkg.") or m == "vendored"]:
        del sys.modules[name]


def test_wants_only_the_users_sources(tmp_path):
    rw = Rewriter(None, str(tmp_path))
    assert rw.wants(str(tmp_path / "a" / "b.py"))
    assert not rw.wants(str(tmp_path / "a" / "b.txt"))
    assert not rw.wants(str(tmp_path / ".venv" / "lib" / "x.py"))
    assert not rw.wants(str(tmp_path / "lib" / "site-packages" / "x.py"))
    assert not rw.wants(str(tmp_path.parent / "elsewhere.py"))


def test_import_hook_rewrites_in_memory(tmp_path, make_file, monkeypatch, clean_modules):
    root = _project(make_file)
    before = tree_snapshot(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.syspath_prepend(str(tmp_path / ".venv/lib/site-packages"))
    rw = Rewriter(_bump, str(root))
    rw.install()
    try:
        mod = importlib.import_module("pkg.mod")
        vendored = importlib.import_module("vendored")
    finally:
        rw.uninstall()
    assert mod.VALUE == 2 and mod.EXTRA is True
    assert vendored.VALUE == 1  # under the root, but in site-packages: never rewritten
    assert mod.__file__ == str(tmp_path / "pkg" / "mod.py")  # __file__ stays the real path
    code_name = mod.where.__code__.co_filename
    assert code_name == f"<syncfix:{mod.__file__}>"
    # the rewritten text is what inspect and tracebacks show, and lines map back
    assert "return VALUE" in inspect.getsource(mod.where)
    assert "VALUE = 2" in "".join(inspect.findsource(mod.where)[0])
    assert rw.resolve(code_name, 6) == (mod.__file__, 5)  # `def where` moved down by one
    assert tree_snapshot(tmp_path) == before  # no file written, no __pycache__
    (changed,) = rw.changed_files()
    assert [(h.start, h.end) for h in changed.hunks] == [(1, 1)]


def test_traceback_shows_rewritten_source(tmp_path, make_file):
    path = make_file("boom.py", "x = 1\nraise ValueError(x)\n")
    rw = Rewriter(lambda s, p: s.replace("x = 1", "x = 1\ny = 2"), str(tmp_path))
    code = rw.compile_file(str(path))
    with pytest.raises(ValueError) as info:
        exec(code, {"__name__": "boom"})
    frame = traceback.extract_tb(info.value.__traceback__)[-1]
    assert frame.line == "raise ValueError(x)" and frame.lineno == 3
    assert rw.resolve(frame.filename, frame.lineno) == (str(path), 2)


def test_fixer_error_runs_the_original_and_says_so(tmp_path, make_file):
    path = make_file("m.py", "x = 1\n")

    def broken(source, path):
        raise RuntimeError("parser exploded")

    rw = Rewriter(broken, str(tmp_path))
    ns: dict = {}
    exec(rw.compile_file(str(path)), ns)
    assert ns["x"] == 1
    (rf,) = rw.changed_files()
    assert not rf.changed and "parser exploded" in rf.error


def test_unchanged_files_keep_their_real_filename(tmp_path, make_file):
    path = make_file("m.py", "x = 1\n")
    rw = Rewriter(lambda s, p: s, str(tmp_path))
    assert rw.compile_file(str(path)).co_filename == str(path)
    assert rw.changed_files() == []


def test_make_fixer_is_syncfix_fix_code():
    src = "import torch\nfor i in range(3):\n    x = torch.ones(3).cuda()\n"
    fixer = make_fixer(select=None, unsafe_fixes=True)
    assert fixer(src, "t.py") == fix_code(src, path="t.py", unsafe_fixes=True)
    nothing = make_fixer(select=["SFX999"])
    assert nothing(src, "t.py") == fix_code(src, path="t.py", select=["SFX999"])


def test_make_fixer_loads_a_custom_function(tmp_path, make_file):
    path = make_file("myfix.py", "def fix(source, path):\n    return source.upper()\n")
    assert make_fixer(spec=f"{path}:fix")("abc", "x.py") == "ABC"


def test_imports_made_by_the_fixer_itself_are_not_rewritten(
    tmp_path, make_file, monkeypatch, clean_modules
):
    """syncfix's own rules may live under the root (its repository): the fixer imports them
    while fixing, and rewriting them then would re-enter the fixer (a circular import)."""
    make_file("pkg/__init__.py", "")
    make_file("pkg/rules.py", "VALUE = 1\n")
    make_file("pkg/user.py", "VALUE = 1\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    calls = []

    def fixer(source, path):
        calls.append(path)
        import pkg.rules  # noqa: F401  (lazily loaded rules)

        return source.replace("VALUE = 1", "VALUE = 2")

    rw = Rewriter(fixer, str(tmp_path))
    rw.install()
    try:
        user = importlib.import_module("pkg.user")
    finally:
        rw.uninstall()
    assert user.VALUE == 2
    assert sys.modules["pkg.rules"].VALUE == 1
    assert sorted(os.path.basename(c) for c in calls) == ["__init__.py", "user.py"]


def test_the_default_fixer_judges_a_file_in_its_project(tmp_path):
    # `syncfix verify` proves what `syncfix apply` would write: the project's [tool.syncfix]
    # settings hold (here: SFX101 ignored), which plain fix_code on the text alone cannot know
    (tmp_path / "pyproject.toml").write_text('[tool.syncfix]\nignore = ["SFX101"]\n')
    script = tmp_path / "train.py"
    script.write_text(
        "import torch\n\n\ndef run(n):\n    for _ in range(n):\n"
        "        x = torch.randn(4) * 2\n        x = x.cuda()\n        print(x)\n\n\nrun(3)\n"
    )
    source = script.read_text()
    assert "non_blocking=True" in fix_code(source, path=str(script))
    assert make_fixer()(source, str(script)) == source
