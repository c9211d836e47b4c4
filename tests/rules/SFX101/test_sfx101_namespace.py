"""SFX101 with the device kept on a parsed command line (``args.device = device`` in ``main``,
read in the functions ``args`` is handed to): proven only where every way to the read passes a
store on that one namespace, and nothing else may write ``.device``."""

from __future__ import annotations

import json
import textwrap

import pytest
from click.testing import CliRunner

from syncfix import check_code
from syncfix.cli import cli
from syncfix.model import Applicability

SCRIPT = textwrap.dedent(
    """\
    import argparse

    import torch
    from torch.utils.data import DataLoader, TensorDataset


    def train(args, model, loader):
        for x, y in loader:
            model(x.to(args.device)).sum().backward()


    def main():
        parser = argparse.ArgumentParser()
        args = parser.parse_args()
        loader = DataLoader(TensorDataset(torch.randn(64, 4), torch.randn(64, 4)), batch_size=8)
        model = torch.nn.Linear(4, 4)
        device = "cuda" if torch.cuda.is_available() else "cpu"
    #   STORE
        train(args, model, loader)
    #   AFTER


    if __name__ == "__main__":
        main()
    """
)
STORE = "    args.device = device"


def _copy_fix(source: str) -> Applicability | None:
    findings = [f for f in check_code(source, select=["SFX101"]) if f.line == 9]
    assert len(findings) == 1, findings
    fix = findings[0].fix
    return fix.applicability if fix is not None else None


def _script(store: str = STORE, after: str = "") -> str:
    return SCRIPT.replace("#   STORE", store).replace("#   AFTER", after)


def test_a_store_before_the_call_proves_the_device():
    assert _copy_fix(_script()) is Applicability.SAFE


@pytest.mark.parametrize(
    ("source", "why"),
    [
        (_script(store=""), "nothing stores the device: the parser's own value, if any"),
        (_script(store="", after=STORE), "stored only after the call"),
        (_script(store="    if torch.cuda.is_available():\n        args.device = device"), "stored on one path only"),
        (_script(store='    args.device = "cuda" if torch.cuda.is_available() else "mps"'), "may be MPS"),
        (_script(after="    setattr(args, name, 0.1)"), "a computed setattr may write it"),
        (_script(after="    vars(args).update(device='cpu')"), "vars() may write it"),
        (_script(after="    other = object()\n    other.device = 'cpu'"), "a store on another object"),
        (_script(after="    train(argparse.Namespace(device='mps'), model, loader)"), "another namespace"),
        (_script(after="    callbacks = [train]"), "the function escapes"),
        (_script(after="    train(*[args, model, loader])"), "a starred call"),
    ],
)
def test_the_device_is_not_proven_where_a_way_to_the_read_may_miss_the_store(source, why):
    assert _copy_fix(source) is not Applicability.SAFE, why


def test_a_namespace_handed_back_by_a_function_of_the_module_is_the_same_one():
    handed = _script().replace(
        "    train(args, model, loader)", "    args, model = setup(args, model)\n    train(args, model, loader)"
    ) + "\n\ndef setup(args, model):\n    return args, model.to(args.device)\n"
    assert _copy_fix(handed) is Applicability.SAFE
    rebuilt = handed.replace("return args, model", "return argparse.Namespace(device='mps'), model")
    assert _copy_fix(rebuilt) is not Applicability.SAFE


@pytest.mark.parametrize(
    ("helper", "safe"),
    [
        ("def configure(ns):\n    ns.lr = 0.1\n", True),
        ("def configure(ns):\n    ns.device = 'mps'\n", False),  # another file stores `.device`
    ],
)
def test_a_store_of_device_in_another_file_of_the_project_may_be_on_the_namespace(tmp_path, monkeypatch, helper, safe):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "pyproject.toml").write_text("")
    (tmp_path / "helpers.py").write_text(helper)
    script = _script(after="    configure(args)").replace("import argparse\n", "import argparse\n\nfrom helpers import configure\n")
    (tmp_path / "train.py").write_text(script)
    result = CliRunner().invoke(cli, ["check", "--no-cache", "-o", "json", "--select", "SFX101", "."])
    found = [f for f in json.loads(result.output) if f["filename"] == "train.py"]
    assert len(found) == 1, result.output
    assert (found[0]["fix"] is not None and found[0]["fix"]["applicability"] == "safe") is safe


def test_a_setattr_of_the_literal_name_is_a_store():
    assert _copy_fix(_script(store='    setattr(args, "device", device)')) is Applicability.SAFE
    assert _copy_fix(_script(store='    setattr(args, "device", "mps")')) is not Applicability.SAFE
    assert _copy_fix(_script(after='    delattr(args, "device")')) is not Applicability.SAFE


def test_the_namespace_of_parse_known_args_is_its_first_item():
    known = _script().replace("args = parser.parse_args()", "args, rest = parser.parse_known_args()")
    assert _copy_fix(known) is Applicability.SAFE
    rest = known.replace("args, rest = parser", "rest, args = parser")
    assert _copy_fix(rest) is not Applicability.SAFE
