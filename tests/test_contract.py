"""What the engine promises rules and callers: a rule's declared LibCST metadata is resolved (for
that rule only), and every way of processing a file reports a failure the same way."""

from __future__ import annotations

import libcst as cst
import pytest
from click.testing import CliRunner
from libcst.metadata import MetadataWrapper, ParentNodeProvider, ScopeProvider

from syncfix import engine
from syncfix.cli import cli
from syncfix.config import Settings
from syncfix.rules import Rule, all_rules

SOURCE = "import torch\n\ndef f(x):\n    return torch.ones(3).cuda()\n"


class ParentOfCalls(Rule):
    """Reports each call with the type of its parent, asked through ``get_metadata``."""

    CODE = "SFX990"
    NAME = "parent-of-calls"
    MESSAGE = "call"
    METADATA_DEPENDENCIES = (ParentNodeProvider, ScopeProvider)

    def visit_Call(self, node: cst.Call) -> None:
        parent = self.get_metadata(ParentNodeProvider, node)
        scope = self.get_metadata(ScopeProvider, node)
        self.report(node, f"{type(parent).__name__} in {type(scope).__name__}")


class PlainCalls(Rule):
    CODE = "SFX991"
    NAME = "plain-calls"
    MESSAGE = "call"

    def visit_Call(self, node: cst.Call) -> None:
        self.report(node)


@pytest.fixture
def resolved(monkeypatch):
    """The providers the engine asked the metadata wrapper for."""
    asked: list[type] = []
    real = MetadataWrapper.resolve_many

    def spy(self, providers):
        asked.extend(providers)
        return real(self, providers)

    monkeypatch.setattr(MetadataWrapper, "resolve_many", spy)
    return asked


def _messages(rules: list[type[Rule]]) -> list[str]:
    analyzed = engine.analyze(cst.parse_module(SOURCE), rules, Settings())
    return sorted(f.message for f in analyzed.findings)


def test_a_rules_declared_metadata_is_resolved(resolved):
    assert _messages([ParentOfCalls]) == [
        "Attribute in FunctionScope",  # torch.ones(3) is the receiver of .cuda
        "Return in FunctionScope",
    ]
    assert {ParentNodeProvider, ScopeProvider} <= set(resolved)  # and what they depend on


def test_rules_that_declare_nothing_resolve_nothing(resolved):
    assert _messages([PlainCalls]) == ["call", "call"]
    assert resolved == []
    assert all(not r.get_inherited_dependencies() for r in all_rules().values())


def test_the_declared_metadata_is_resolved_alongside_other_rules(resolved):
    assert _messages([PlainCalls, ParentOfCalls]) == [
        "Attribute in FunctionScope", "Return in FunctionScope", "call", "call",
    ]


def _apply(tmp_path, monkeypatch, *args: str, input: str | None = None):
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("SYNCFIX_OUTPUT_FORMAT", raising=False)
    return CliRunner().invoke(cli, ["apply", "--isolated", "--no-cache", *args, "bad.py"], input=input)


def _fails_deep_inside(*args, **kwargs):
    raise RecursionError("maximum recursion depth exceeded")


@pytest.mark.parametrize(
    "source, patch, message",
    [
        ("import torch\nx = torch.ones(3).cuda(\n", None, "bad.py: syntax error at 2:"),
        (SOURCE, _fails_deep_inside, "bad.py: too deeply nested to analyse"),
    ],
    ids=["syntax-error", "recursion"],
)
def test_interactive_and_batch_runs_report_a_bad_file_alike(tmp_path, monkeypatch, source, patch, message):
    (tmp_path / "bad.py").write_text(source)
    if patch is not None:
        monkeypatch.setattr(engine, "process_source", patch)
    batch = _apply(tmp_path, monkeypatch)
    interactive = _apply(tmp_path, monkeypatch, "--interactive", input="y\n")
    assert batch.exception is None or isinstance(batch.exception, SystemExit)
    assert interactive.exception is None or isinstance(interactive.exception, SystemExit)
    assert message in batch.stderr
    errors = [line for line in batch.stderr.splitlines() if line.startswith("syncfix: error")]
    assert errors == [line for line in interactive.stderr.splitlines() if line.startswith("syncfix: error")]
    assert batch.exit_code == interactive.exit_code == 1
    assert (tmp_path / "bad.py").read_text() == source
