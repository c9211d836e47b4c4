"""syncfix.parsing: LibCST's parse without node validation gives the same trees and errors, and
leaves validation on for every node built afterwards."""

from __future__ import annotations

from pathlib import Path

import libcst as cst
import pytest

from syncfix.parsing import parse_module

ROOT = Path(__file__).resolve().parents[1]
# a large module of syncfix, and every fourth rule fixture (comments, odd layouts, must-not-touch cases)
SOURCES = [ROOT / "syncfix" / "engine.py"] + sorted((ROOT / "tests" / "rules").glob("SFX*/fixtures/*.py"))[::4]


def test_same_trees_as_libcst() -> None:
    assert len(SOURCES) > 50
    for path in SOURCES:
        data = path.read_bytes()
        ours, theirs = parse_module(data), cst.parse_module(data)
        assert ours.bytes == data
        assert ours.deep_equals(theirs), path


@pytest.mark.parametrize("source", ["def f(:\n", "x = (1,\n", "  x = 1\n", "f(**a, *b)\n"])
def test_same_errors_as_libcst(source: str) -> None:
    with pytest.raises(Exception) as theirs:
        cst.parse_module(source)
    with pytest.raises(type(theirs.value)) as ours:
        parse_module(source)
    assert str(ours.value) == str(theirs.value)


def test_config_is_passed_on() -> None:
    config = cst.PartialParserConfig(python_version="3.8")
    assert parse_module("x = 1\n", config).deep_equals(cst.parse_module("x = 1\n", config))


def _count_validations(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    calls: list[int] = []
    real = cst.Name._validate

    def counted(self: cst.Name) -> None:
        calls.append(1)
        real(self)

    monkeypatch.setattr(cst.Name, "_validate", counted)
    return calls


def test_parsed_nodes_are_not_validated_again(monkeypatch: pytest.MonkeyPatch) -> None:
    calls = _count_validations(monkeypatch)
    cst.parse_module("x = y + z\n")
    assert len(calls) == 3  # LibCST's own parse checks each of the three names
    calls.clear()
    parse_module("x = y + z\n")
    assert calls == []


def test_nodes_built_afterwards_are_validated(monkeypatch: pytest.MonkeyPatch) -> None:
    parse_module("x = 1\n")
    with pytest.raises(cst.ParserSyntaxError):
        parse_module("def f(:\n")  # a parse that fails restores validation too
    with pytest.raises(cst.CSTValidationError):
        cst.Name("")
    calls = _count_validations(monkeypatch)
    cst.Name("x")
    assert calls == [1]
