"""SFX206: its findings land where marked (``# SFX206``), and its messages name the restructuring."""

from __future__ import annotations

from pathlib import Path

from syncfix import check_code, fix_code


def test_true_dependencies_are_found_where_marked():
    path = Path(__file__).parent / "fixtures/training_loop.in.py"
    src = path.read_text()
    marked = {i for i, line in enumerate(src.splitlines(), 1) if line.rstrip().endswith("# SFX206")}
    found = {f.line for f in check_code(src, select=["SFX206"])}
    assert found == marked
    assert fix_code(src, select=["SFX206"], unsafe_fixes=True) == src


def test_true_dependency_messages_name_the_restructuring():
    src = (Path(__file__).parent / "fixtures/training_loop.in.py").read_text()
    messages = " ".join(f.message for f in check_code(src, select=["SFX206"]))
    for advice in ("fused=True", "every N", "_assert_async", "torch.minimum"):
        assert advice in messages
