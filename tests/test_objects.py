"""Calls through objects across files (analysis/members.py): in a closed project, a class's
``__init__`` takes its parameters from the calls of the class in every file, its methods from
every ``obj.method(...)`` call, ``self.<attr>`` holds what its methods assign when no file stores
it elsewhere, and a generator that passes on a loader's batches iterates like the loader."""

from __future__ import annotations

import ast
import textwrap

import pytest

from syncfix.analysis import imported
from syncfix.analysis.members import Members, kept, member_use

from .test_imported import _fixes, _project

TRAINER = """
import torch


class Trainer:
    def __init__(self, model, data, device):
        self.model = model
        self.data = data
        self.device = device

    def fit(self, steps):
        for _ in range(steps):
            x, y = next(self.data)
            self.train_step(x, y)

    def train_step(self, x, y):
        x = x.to(self.device)
        y = y.to(self.device)
        return self.model(x), y

    def evaluate(self, x):
        return self.model(x.to(self.device))
"""

DATA = """
import torch


def batches(dataset):
    loader = torch.utils.data.DataLoader(dataset, batch_size=8)
    while True:
        yield from loader
"""

MAIN = """
import torch

from data import batches
from trainer import Trainer


def main():
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    model = torch.nn.Linear(4, 2).to(device)
    data = torch.utils.data.TensorDataset(torch.randn(64, 4), torch.randint(0, 2, (64,)))
    trainer = Trainer(model, batches(data), device)
    trainer.fit(10)
    for _ in range(3):
        trainer.evaluate(torch.randn(3, 4))


if __name__ == "__main__":
    main()
"""

FILES = {"trainer.py": TRAINER, "data.py": DATA, "train.py": MAIN}
# SFX101 lines of trainer.py: the two batch copies (train_step) and the evaluation copy
COPIES = (16, 17, 21)


@pytest.fixture(autouse=True)
def _fresh_memo():
    imported.forget()
    yield
    imported.forget()


def test_a_loader_and_a_device_passed_to_a_class_in_another_file_prove_its_copies(tmp_path):
    root = _project(tmp_path, FILES)
    assert _fixes(root, "trainer.py") == dict.fromkeys(COPIES, "safe")


@pytest.mark.parametrize(
    ("extra", "why"),
    [
        ({"pyproject.toml": "[project]\nname = 'p'\n"}, "installable: other code may build a Trainer"),
        ({"sub.py": "from trainer import Trainer\n\n\nclass Fast(Trainer):\n    pass\n"}, "derived from elsewhere"),
        ({"tool.py": "def run(t, name):\n    getattr(t, name)(1)\n"}, "a method called by a computed name"),
        ({"tool.py": "def run(t):\n    Trainer.train_step(t, 1, 2)\n"}, "called on the class"),
        ({"tool.py": "def run(t, batch):\n    t.train_step(*batch)\n"}, "called with *args"),
        ({"tool.py": "def run(t):\n    return t.train_step\n"}, "the method used as a value"),
        ({"tool.py": "def run(t, a, b):\n    t.train_step(a, b)\n"}, "another caller passes what syncfix cannot see"),
    ],
)
def test_the_batch_copies_lose_the_proof_when_a_caller_is_out_of_sight(tmp_path, extra, why):
    files = dict(FILES)
    files.update(extra)
    root = _project(tmp_path, files)
    if "pyproject.toml" in extra:
        (root / "pyproject.toml").write_text(extra["pyproject.toml"])
    fixes = _fixes(root, "trainer.py")
    assert fixes.get(16) != "safe" and fixes.get(17) != "safe", why


def test_a_device_stored_on_the_object_elsewhere_is_not_the_class_s_own(tmp_path):
    files = dict(FILES)
    files["train.py"] = MAIN.replace("    trainer.fit(10)", "    trainer.device = 'mps'\n    trainer.fit(10)")
    root = _project(tmp_path, files)
    assert "safe" not in _fixes(root, "trainer.py").values()
    # storing it on self in an unrelated class of another file changes nothing
    files = dict(FILES)
    files["other.py"] = "class Other:\n    def __init__(self):\n        self.device = 'mps'\n"
    root = _project(tmp_path, files)
    assert _fixes(root, "trainer.py") == dict.fromkeys(COPIES, "safe")


def test_a_class_with_a_base_from_outside_the_project_keeps_its_parameters_unknown(tmp_path):
    files = dict(FILES)
    files["trainer.py"] = TRAINER.replace("class Trainer:", "class Trainer(torch.nn.Module):")
    root = _project(tmp_path, files)
    assert "safe" not in _fixes(root, "trainer.py").values()


@pytest.mark.parametrize(
    "loop",
    [
        "        for b in loader:\n            yield [t * 2 for t in b]",  # other values
        "        for b in loader:\n            yield b\n            b[0].zero_()",  # written once handed on
    ],
)
def test_a_generator_that_yields_other_values_is_no_loader(tmp_path, loop):
    files = dict(FILES)
    files["data.py"] = DATA.replace("        yield from loader", loop)
    root = _project(tmp_path, files)
    fixes = _fixes(root, "trainer.py")
    assert fixes.get(16) != "safe" and fixes.get(17) != "safe"
    assert fixes[21] == "safe"  # the evaluation copy's tensor is the caller's own


def test_a_generator_that_passes_each_batch_on_is_a_loader(tmp_path):
    # ``for b in loader: yield b`` hands on the loader's own batches, as ``yield from`` does
    files = dict(FILES)
    files["data.py"] = DATA.replace("        yield from loader", "        for b in loader:\n            yield b")
    (tmp_path / "for").mkdir()
    (tmp_path / "from").mkdir()
    passed_on = _fixes(_project(tmp_path / "for", files), "trainer.py")
    assert passed_on == _fixes(_project(tmp_path / "from", dict(FILES)), "trainer.py")
    assert passed_on[16] == passed_on[17] == "safe"


def test_the_summary_reads_calls_stores_and_other_uses_by_name():
    src = textwrap.dedent(
        """
        class A(Base, mod.Other):
            def m(self):
                self.x = 1

        def f(a, name):
            a.m(1)
            a.y = 2
            h = a.z
            A.m(a)
            a.w(*name)
            setattr(a, "v", 1)
        """
    )
    use = member_use(ast.parse(src))
    assert use.calls == {"m"}
    assert {"z", "m", "w"} <= use.other_uses
    assert use.stores == {"y", "v"} and use.self_stores == {"x"}
    assert use.bases == {"Base", "Other"} and use.methods == {"m"}
    assert not use.dynamic_calls and not use.dynamic_stores
    dyn = member_use(ast.parse("def f(a, n):\n    getattr(a, n)()\n    setattr(a, n, 1)\n"))
    assert dyn.dynamic_calls and dyn.dynamic_stores
    # only names the project's classes define travel with the contexts
    table = Members(kept({"a": use, "b": member_use(ast.parse("def g(o):\n    o.m(2)\n    o.q(3)\n"))}))
    assert table.callers("m") == ["a", "b"] and table.callers("q") == []
    assert table.escapes("m") and not table.escapes("x")
    assert table.derived("Base") and not table.derived("Base", skip="a")


def test_a_base_class_in_another_file_that_sets_the_attribute_makes_it_unknown(tmp_path):
    trainer = textwrap.dedent(
        """
        import torch

        from base import Base


        class Trainer(Base):
            def __init__(self, dataset):
                self.device = torch.device("cuda")
                self.loader = torch.utils.data.DataLoader(dataset, batch_size=8)

            def fit(self):
                for x, y in self.loader:
                    x = x.to(self.device)
        """
    )
    base = "class Base:\n    def setup(self):\n        self.ready = True\n"
    main = "from trainer import Trainer\n\nif __name__ == '__main__':\n    Trainer(None).fit()\n"
    root = _project(tmp_path, {"trainer.py": trainer, "base.py": base, "train.py": main})
    assert _fixes(root, "trainer.py") == {13: "safe"}
    imported.forget()
    root = _project(tmp_path, {"base.py": base.replace("self.ready = True", "self.device = 'mps'")})
    assert _fixes(root, "trainer.py").get(13) != "safe"
