"""Calls of functions imported from other project files take what those functions return
(analysis/imported.py): a device helper or a loader builder in ``util.py`` proves the copies of
``train.py`` as if they were written there; anything syncfix cannot pin down stays unknown."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest
from click.testing import CliRunner

from syncfix.analysis import imported
from syncfix.analysis.values import Kind, Value
from syncfix.cli import cli
from syncfix.projects import Project, contexts

UTIL = """
import torch as th


def dev():
    if th.cuda.is_available():
        return th.device("cuda:0")
    return th.device("cpu")


def make_loader(ds):
    return th.utils.data.DataLoader(ds, batch_size=4)


def dev_of(name):
    return th.device(name)


def twice():
    return th.device("cuda")


twice = dev_of
"""

TRAIN = """
import torch as th

import util
from util import dev, make_loader


def main(ds):
    for x, y in make_loader(ds):
        x = x.to(dev())
        y = y.to(util.dev())
        print(x, y)


if __name__ == "__main__":
    main(None)
"""


def _project(root: Path, files: dict[str, str], *, installable: bool = False) -> Path:
    """A project of ``files``; ``installable``: other code may import it (a ``[project]`` table)."""
    (root / "pyproject.toml").write_text("[project]\nname = 'p'\n" if installable else "")
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text).lstrip())
    return root


def _fixes(root: Path, *paths: str) -> dict[int, str | None]:
    """Line → fix applicability of the SFX101 findings of ``paths`` (one file)."""
    result = CliRunner().invoke(
        cli, ["check", "--no-cache", "--select", "SFX101", "-o", "json", "--exit-zero", *[str(root / p) for p in paths]]
    )
    assert result.exit_code == 0, result.output
    return {f["location"]["row"]: (f["fix"] or {}).get("applicability") for f in json.loads(result.output)}


@pytest.fixture(autouse=True)
def _fresh_memo():
    imported._VALUES.clear()
    yield
    imported._VALUES.clear()


def test_a_device_helper_and_a_loader_builder_in_another_file_prove_the_copies(tmp_path):
    root = _project(tmp_path, {"util.py": UTIL, "train.py": TRAIN})
    assert _fixes(root, "train.py") == {9: "safe", 10: "safe"}


def test_without_the_project_the_same_copies_get_no_fix(tmp_path):
    # the same file alone (no project root above it: nothing imported is known)
    (tmp_path / "train.py").write_text(textwrap.dedent(TRAIN).lstrip())
    result = CliRunner().invoke(
        cli, ["check", "--no-cache", "--isolated", "--select", "SFX101", "-o", "json", "--exit-zero", "-"],
        input=(tmp_path / "train.py").read_text(),
    )
    assert result.exit_code == 0, result.output
    # the loader's batches are not known to be tensors: not even an unsafe fix
    assert json.loads(result.output) == []


@pytest.mark.parametrize(
    ("call", "why"),
    [
        ("dev_of('cuda')", "a parameter of a function others may call: the project is installable"),
        ("twice()", "bound twice at the other module's top level"),
        ("missing()", "no such function there"),
    ],
)
def test_what_cannot_be_pinned_down_stays_unknown(tmp_path, call, why):
    train = TRAIN.replace("from util import dev, make_loader", "from util import dev, make_loader, dev_of, twice, missing")
    train = train.replace("x = x.to(dev())", f"x = x.to({call})")
    root = _project(tmp_path, {"util.py": UTIL, "train.py": train}, installable=True)
    assert _fixes(root, "train.py")[9] == "unsafe", why


def test_a_name_rebound_after_its_import_is_not_the_imported_function(tmp_path):
    train = TRAIN.replace("def main(ds):", "def dev():\n    return th.device(input())\n\n\ndef main(ds):")
    root = _project(tmp_path, {"util.py": UTIL, "train.py": train})
    found = _fixes(root, "train.py")
    assert sorted(found.values()) == ["safe", "unsafe"]  # util.dev() still proves its copy


def test_chains_of_files_are_followed_and_cycles_give_unknown(tmp_path):
    files = {
        "a.py": "import torch\nfrom b import g\n\n\ndef f():\n    return g()\n\n\ndef loop():\n    return h()\n\n\nfrom b import h\n",
        "b.py": "import torch\nfrom a import loop\n\n\ndef g():\n    return torch.device('cuda' if torch.cuda.is_available() else 'cpu')\n\n\ndef h():\n    return loop()\n",
        "train.py": (
            "import numpy as np; import torch\nfrom a import f, loop\n\n\ndef main(xs):\n    for x in xs:\n"
            "        x = torch.from_numpy(np.zeros(3)).to(f())\n        y = torch.from_numpy(np.zeros(3)).to(loop())\n"
        ),
    }
    root = _project(tmp_path, files)
    assert _fixes(root, "train.py") == {7: "safe", 8: "unsafe"}


def test_relative_imports_in_a_package(tmp_path):
    files = {
        "pkg/__init__.py": "from .util import dev\n",
        "pkg/util.py": UTIL,
        "pkg/train.py": TRAIN.replace("import util\nfrom util import", "from . import util\nfrom .util import"),
    }
    root = _project(tmp_path, files)
    assert _fixes(root, "pkg/train.py") == {9: "safe", 10: "safe"}


@pytest.mark.parametrize(
    ("init", "want"),
    [
        ("from .util import dev, make_loader\n", {9: "safe", 10: "safe"}),  # BiSeNet's lib/data
        ("from .util import dev\nfrom .other import make_loader\n", {}),  # another one: no batch
        ("from .util import dev, make_loader\nmake_loader = dev\n", {}),  # rebound: no loader
    ],
)
def test_a_package_that_imports_a_function_hands_on_its_value(tmp_path, init, want):
    files = {
        "lib/__init__.py": init,
        "lib/util.py": UTIL,
        "lib/other.py": "def make_loader(ds):\n    return ds\n",
        "train.py": TRAIN.replace("import util\nfrom util import dev, make_loader", "from lib import util\nfrom lib import dev, make_loader"),
    }
    root = _project(tmp_path, files)
    assert _fixes(root, "train.py") == want


def test_a_module_name_two_folders_share_is_not_resolved(tmp_path):
    # ``import util`` from a third folder could be either file, depending on sys.path: neither
    # is assumed; nor beside a package's module (no implicit relative import)
    root = _project(tmp_path, {"a/util.py": UTIL, "b/util.py": UTIL.replace('"cpu"', "input()"), "c/train.py": TRAIN})
    assert "safe" not in _fixes(root, "c/train.py").values()
    packaged = {"p/__init__.py": "", "p/util.py": UTIL, "b/util.py": UTIL, "p/train.py": TRAIN}
    (tmp_path / "pkg").mkdir()
    assert "safe" not in _fixes(_project(tmp_path / "pkg", packaged), "p/train.py").values()


def test_a_module_beside_a_script_is_the_one_it_imports(tmp_path):
    # a script's folder is first on sys.path: PyTorch-GAN's ``implementations/<gan>/`` each hold
    # a ``models.py``, and each script's ``import models`` is its own folder's
    files = {"a/util.py": UTIL, "b/util.py": UTIL.replace('"cpu"', "input()"), "a/train.py": TRAIN}
    assert "safe" in _fixes(_project(tmp_path, files), "a/train.py").values()
    (tmp_path / "other").mkdir()
    assert "safe" not in _fixes(_project(tmp_path / "other", {**files, "b/train.py": TRAIN}), "b/train.py").values()


def test_a_file_changed_after_the_index_read_it_gives_nothing(tmp_path):
    root = _project(tmp_path, {"util.py": UTIL, "train.py": TRAIN})
    context = contexts([str(root / "train.py")])[str(root / "train.py")]
    (root / "util.py").write_text(textwrap.dedent(UTIL).lstrip().replace('"cpu"', "input()"))
    project = imported.ProjectModules(context.modules, None)
    assert project.return_value("util.dev", "") is None


def test_the_cache_key_changes_with_an_imported_file(tmp_path):
    root = _project(tmp_path, {"util.py": UTIL, "train.py": TRAIN, "other.py": "x = 1\n"}, installable=True)
    before = Project(root).context(root / "train.py", "train").fingerprint()
    (root / "other.py").write_text("x = 2\n")
    assert Project(root).context(root / "train.py", "train").fingerprint() == before  # not imported
    (root / "util.py").write_text(textwrap.dedent(UTIL).lstrip() + "\n")
    assert Project(root).context(root / "train.py", "train").fingerprint() != before


def test_the_reduced_source_keeps_the_function_and_every_other_binding():
    src = (
        b"# -*- coding: utf-8 -*-\nimport torch; import os\n\n\n@decorate\nclass Net:\n    pass\n\n\n"
        b"def helper():\n    return 1\n\n\nif os.name:\n    DEV = 'cuda'\n\n\n@torch.no_grad()\ndef dev():\n"
        b"    return torch.device(DEV if SCALE else 'cpu')\n\n\nmax = helper\nSCALE: int = 2\ncfg.x = 1\n"
    )
    out = imported.reduced_source(src, "dev")
    assert out == (
        b"# -*- coding: utf-8 -*-\nimport torch; import os\n"
        + f"Net = {imported.UNKNOWN_BINDING}\nhelper = {imported.UNKNOWN_BINDING}\n".encode()
        + b"if os.name:\n    DEV = 'cuda'\n@torch.no_grad()\ndef dev():\n    return torch.device(DEV if SCALE else 'cpu')\n"
        + f"max = {imported.UNKNOWN_BINDING}\n".encode()  # bound, to nothing known: not the builtin
        + b"SCALE: int = 2\ncfg.x = 1\n"
    )
    assert imported.reduced_source(src, "helper") is not None
    assert imported.reduced_source(src, "Net") is None  # a class, not a function
    assert imported.reduced_source(src, "DEV") is None


def _values(root: Path, path: str) -> dict[str, Value]:
    """The value of each call in ``path``, analysed with its project context."""
    import libcst as cst
    from libcst.metadata import MetadataWrapper

    from syncfix.analysis.module import ModuleAnalysis

    file = root / path
    context = contexts([str(file)])[str(file)]
    module = cst.parse_module(file.read_bytes())
    a = ModuleAnalysis(
        MetadataWrapper(module, unsafe_skip_copy=True),
        module_name=context.module_name,
        imported=context.imported,
        project=imported.ProjectModules(context.modules, None),
        package=context.package,
    )
    found: dict[str, Value] = {}

    class Calls(cst.CSTVisitor):
        def visit_Call(self, node: cst.Call) -> None:
            found[module.code_for_node(node)] = a.value(node)

    a.walk(module, Calls())
    return found


def test_an_imported_class_deriving_from_nn_module_makes_modules(tmp_path):
    files = {
        "base.py": "import torch\n\n\nclass Base(torch.nn.Module):\n    pass\n",
        "nets.py": (
            "import torch.nn as nn\nfrom base import Base\n\n\nclass Net(nn.Module):\n    def forward(self, x):\n"
            "        return x\n\n\nclass Deep(Base):\n    '''Through another file.'''\n\n\nclass Plain:\n    pass\n\n\n"
            "class Twice(nn.Module):\n    pass\n\n\nTwice = Plain\n"
        ),
        "train.py": "import nets\nfrom nets import Deep, Net, Plain\n\nNet()\nDeep()\nPlain()\nnets.Twice()\nnets.Net()\n",
    }
    root = _project(tmp_path, files)
    kinds = {code: v.kind for code, v in _values(root, "train.py").items()}
    assert kinds == {
        "Net()": Kind.MODULE,
        "Deep()": Kind.MODULE,
        "Plain()": Kind.UNKNOWN,
        "nets.Twice()": Kind.UNKNOWN,  # rebound at the other module's top level
        "nets.Net()": Kind.MODULE,
    }


ENGINE = """
import torch


def train_one_epoch(model, loader, device, opt):
    for x, y in loader:
        x = x.to(device)
        y = y.to(device)
        loss = torch.nn.functional.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
"""

MAIN = """
import torch

from engine import train_one_epoch


def main():
    device = torch.device("cuda")
    model = torch.nn.Linear(4, 2).to(device)
    data = torch.utils.data.TensorDataset(torch.randn(64, 4), torch.randint(0, 2, (64,)))
    loader = torch.utils.data.DataLoader(data, batch_size=8)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for _ in range(3):
        train_one_epoch(model, loader, device, opt)


if __name__ == "__main__":
    main()
"""


def test_a_function_of_a_closed_project_takes_its_parameters_from_the_calls_in_other_files(tmp_path):
    # the loader and the device are built in main() of another file and passed on
    root = _project(tmp_path, {"engine.py": ENGINE, "train.py": MAIN})
    assert _fixes(root, "engine.py") == {6: "safe", 7: "safe"}
    # ``import engine`` and ``engine.train_one_epoch(...)`` is a call seen just as well
    main = MAIN.replace("from engine import train_one_epoch", "import engine as eng")
    root = _project(tmp_path, {"engine.py": ENGINE, "train.py": main.replace("        train_one_epoch(", "        eng.train_one_epoch(")})
    assert _fixes(root, "engine.py") == {6: "safe", 7: "safe"}


@pytest.mark.parametrize(
    ("files", "why"),
    [
        ({"pyproject.toml": "[project]\nname = 'p'\n"}, "installable: other code may call it"),
        ({"setup.py": "from setuptools import setup\nsetup()\n"}, "installable: other code may call it"),
        ({"explore.ipynb": "{}"}, "a notebook may call it where syncfix does not look"),
        ({"hooks.py": "from engine import train_one_epoch\nHOOKS = [train_one_epoch]\n"}, "used as a value"),
        ({"star.py": "from engine import *\n"}, "a star import"),
        ({"dyn.py": "import engine\nrun = getattr(engine, 'train_one_epoch')\n"}, "the module used as a value"),
        (
            {"utils.py": "from engine import train_one_epoch\n", "other.py": "import utils\n"},
            "re-exported: other files may reach it through utils",
        ),
        ({"spawn.py": "from engine import train_one_epoch\nargs = ()\ntrain_one_epoch(*args)\n"}, "*args"),
        (
            {"test_engine.py": "from engine import train_one_epoch\n\n\ndef test_it(d):\n    train_one_epoch(None, [], d, None)\n"},
            "another caller passes a device syncfix cannot name",
        ),
    ],
)
def test_a_caller_syncfix_cannot_see_keeps_the_parameters_unknown(tmp_path, files, why):
    root = _project(tmp_path, {"engine.py": ENGINE, "train.py": MAIN})
    for rel, text in files.items():
        (root / rel).write_text(text)
    assert _fixes(root, "engine.py") == {6: "unsafe", 7: "unsafe"}, why


@pytest.mark.parametrize(
    ("pyproject", "extra", "want"),
    [
        # the user's word that nothing outside the project imports it, though it can be installed
        ("[project]\nname = 'p'\n\n[tool.syncfix]\nclosed-project = true\n", {}, "safe"),
        ("[tool.syncfix]\nclosed-project = true\n", {"explore.ipynb": "{}"}, "safe"),
        # and that other code does import it, though nothing here shows it
        ("[tool.syncfix]\nclosed-project = false\n", {}, "unsafe"),
    ],
)
def test_closed_project_setting_overrides_what_the_root_shows(tmp_path, pyproject, extra, want):
    root = _project(tmp_path, {"engine.py": ENGINE, "train.py": MAIN, **extra})
    (root / "pyproject.toml").write_text(pyproject)
    assert _fixes(root, "engine.py") == {6: want, 7: want}
    # a caller syncfix cannot follow still leaves the parameters unknown
    (root / "hooks.py").write_text("from engine import train_one_epoch\nHOOKS = [train_one_epoch]\n")
    assert _fixes(root, "engine.py") == {6: "unsafe", 7: "unsafe"}


def test_a_cpu_caller_joins_to_cuda_or_cpu_which_still_proves_the_copy(tmp_path):
    test = "from engine import train_one_epoch\n\n\ndef test_it():\n    train_one_epoch(None, [], 'cpu', None)\n"
    root = _project(tmp_path, {"engine.py": ENGINE, "train.py": MAIN, "test_engine.py": test})
    # a batch of the test's list is not a loader's: the join with it proves no fresh CPU tensor
    assert "safe" not in _fixes(root, "engine.py").values()
    test = test.replace("[]", "torch.utils.data.DataLoader([])").replace("from engine", "import torch\nfrom engine")
    root = _project(tmp_path, {"engine.py": ENGINE, "train.py": MAIN, "test_engine.py": test})
    assert _fixes(root, "engine.py") == {6: "safe", 7: "safe"}


def test_a_caller_importing_a_name_two_modules_share_keeps_the_parameters_unknown(tmp_path):
    # ``import engine`` in tools/run.py may be a/engine.py or b/engine.py (sys.path decides):
    # a/engine.py's callers are not all known
    files = {
        "a/engine.py": ENGINE,
        "a/train.py": MAIN.replace("from engine import", "from a.engine import"),
        "b/engine.py": ENGINE,
        "tools/run.py": "import engine\n\nengine.train_one_epoch(None, [], input(), None)\n",
    }
    root = _project(tmp_path, files)
    assert _fixes(root, "a/engine.py") == {6: "unsafe", 7: "unsafe"}
    (root / "tools/run.py").unlink()
    (root / "b/engine.py").unlink()
    assert _fixes(root, "a/engine.py") == {6: "safe", 7: "safe"}


def test_a_new_run_in_the_same_process_forgets_what_other_files_said(tmp_path):
    # util.dev() returns chain.dev(): a change in chain.py alone must reach train.py's next run
    files = {
        "chain.py": "import torch\n\n\ndef dev():\n    return torch.device('cuda')\n",
        "util.py": "import chain\n\n\ndef dev():\n    return chain.dev()\n",
        "train.py": TRAIN.replace("from util import dev, make_loader", "from util import dev\nfrom chain import make_loader"),
    }
    files["chain.py"] += "\n\ndef make_loader(ds):\n    import torch\n    return torch.utils.data.DataLoader(ds)\n"
    root = _project(tmp_path, files, installable=True)
    assert _fixes(root, "train.py")[10] == "safe"
    (root / "chain.py").write_text(files["chain.py"].replace("torch.device('cuda')", "torch.device(input())"))
    assert _fixes(root, "train.py")[10] == "unsafe"


def test_an_answer_a_cut_cycle_made_weaker_is_kept_for_the_asking_file_only():
    memo: dict = {}
    weak: dict = {}  # the asking file's own
    outer, inner = ("o", "", None, "f"), ("i", "", None, "g")
    computed: list[str] = []

    def ask_outer():
        computed.append("outer")
        return imported._memoised(memo, outer, lambda: ("outer", imported._memoised(memo, inner, ask_inner, weak)), weak)

    def ask_inner():
        computed.append("inner")
        return ("inner", imported._memoised(memo, outer, ask_outer, weak))  # back to outer: cut

    assert ask_outer() == ("outer", ("inner", None))
    assert memo == {}  # both answers rest on the cut: not kept for other files
    assert weak == {outer: ("outer", ("inner", None)), inner: ("inner", None)}
    # asked again while the same file is analysed: the answer it had, not a second computation
    assert imported._memoised(memo, inner, ask_inner, weak) == ("inner", None)
    assert computed == ["outer", "inner"]
    # what reads a weaker answer rests on the cut too: kept for this file only
    reader = ("r", "", None, "k")
    assert imported._memoised(memo, reader, lambda: imported._memoised(memo, inner, ask_inner, weak), weak)
    assert reader not in memo and reader in weak
    assert imported._memoised(memo, ("x", "", None, "h"), lambda: 1, {}) == 1
    assert memo == {("x", "", None, "h"): 1}  # no cycle: kept for every file


def test_a_whole_module_name_names_that_module_whatever_else_ends_with_it(tmp_path):
    # ``ignite.distributed.utils`` is also the tail of ``tests.ignite.distributed.utils``: the
    # import names the first (it once named either, by the hash order of a set)
    from syncfix.projects import _candidates, _suffixes

    for names in (["pkg.utils", "tests.pkg.utils"], ["tests.pkg.utils", "pkg.utils"]):
        resolve = _suffixes(_candidates(names))
        assert resolve["pkg.utils"] == "pkg.utils"
        assert "utils" not in resolve  # either of two
    root = _project(tmp_path, {"pkg/utils.py": UTIL, "tests/pkg/utils.py": "def dev():\n    return input()\n", "pkg/train.py": TRAIN.replace("import util\nfrom util import", "import pkg.utils as util\nfrom pkg.utils import")}, installable=True)
    assert _fixes(root, "pkg/train.py") == {9: "safe", 10: "safe"}


def test_a_global_another_function_of_the_module_rebinds_is_not_taken_as_bound_once(tmp_path):
    util = (
        "import torch\n\nDEVICE = torch.device('cuda')\n\n\ndef set_device(d):\n    global DEVICE\n"
        "    DEVICE = d\n\n\ndef dev():\n    return DEVICE\n\n\n"
        "def make_loader(ds):\n    return torch.utils.data.DataLoader(ds, batch_size=4)\n"
    )
    root = _project(tmp_path, {"util.py": util, "train.py": TRAIN}, installable=True)
    assert _fixes(root, "train.py")[9] == "unsafe"  # set_device may make it any device
    root = _project(tmp_path, {"util.py": util.replace("    global DEVICE\n", ""), "train.py": TRAIN}, installable=True)
    assert _fixes(root, "train.py")[9] == "safe"  # a local of set_device: DEVICE is bound once


def test_a_big_project_is_not_treated_as_closed(tmp_path, monkeypatch):
    import syncfix.projects as projects

    root = _project(tmp_path, {"engine.py": ENGINE, "train.py": MAIN})
    assert Project(root).closed
    monkeypatch.setattr(projects, "CLOSED_MODULES", 1)
    project = Project(root)
    assert not project.closed
    assert [m.name for m in project.context(root / "train.py", "train").modules] == ["engine"]  # its imports only
    assert not Project(root, closed=True).closed  # not even when the user says it is closed


def test_a_file_importing_only_other_names_of_the_module_is_not_parsed_for_its_calls(tmp_path, monkeypatch):
    # report.py imports engine's other function only: it cannot call train_one_epoch, which
    # its import statements (read with Python's parser) show without LibCST's parse
    engine = ENGINE + "\n\ndef evaluate(model):\n    return model\n"
    files = {"engine.py": engine, "train.py": MAIN, "report.py": "from engine import evaluate\n\nevaluate(None)\n"}
    root = _project(tmp_path, files)
    loaded: list[str] = []
    load = imported.ProjectModules._load

    def counting(self, module, name, **kw):
        loaded.append(Path(module.path).name)
        return load(self, module, name, **kw)

    monkeypatch.setattr(imported.ProjectModules, "_load", counting)
    assert _fixes(root, "engine.py") == {6: "safe", 7: "safe"}
    assert "train.py" in loaded and "report.py" not in loaded
    # importing the module itself may reach any of its functions: that file is read in full
    (root / "report.py").write_text("import engine\n\nengine.evaluate(None)\n")
    loaded.clear()
    imported.forget()
    assert _fixes(root, "engine.py") == {6: "safe", 7: "safe"}
    assert "report.py" in loaded


def test_each_importer_is_parsed_once_per_file_analysed(tmp_path, monkeypatch):
    # a helper module every script imports (dino's utils.py): each of its functions asks every
    # importer what it passes; the importers stay loaded while util.py is analysed, so each is
    # parsed once, not once per question (with four kept, six importers were parsed over and over)
    funcs = "".join(
        f"\n\ndef step{i}(x, device):\n    for _ in range(3):\n        x = x.to(device)\n    return x\n"
        for i in range(6)
    )
    calls = "".join(f"    step{i}(torch.ones(2), dev)\n" for i in range(6))
    scripts = {
        f"script{k}.py": f"import torch\nfrom util import {', '.join(f'step{i}' for i in range(6))}\n\n\n"
        f"def main():\n    dev = torch.device('cuda')\n{calls}"
        for k in range(6)
    }
    root = _project(tmp_path, {"util.py": "import torch" + funcs, **scripts})
    loaded: list[str] = []
    load = imported.ProjectModules._load

    def counting(self, module, name, **kw):
        if name is None:
            loaded.append(Path(module.path).name)
        return load(self, module, name, **kw)

    monkeypatch.setattr(imported.ProjectModules, "_load", counting)
    assert set(_fixes(root, "util.py").values()) == {"safe"}
    assert sorted(loaded) == sorted(scripts)


def test_a_copy_whose_importer_uses_streams_is_not_made_non_blocking(tmp_path):
    # main.py runs load() under a side stream and uses its copy on the default stream: a
    # non-blocking copy of the pinned source could still be running there
    helper = (
        "import torch\n\n\ndef load():\n    x = torch.ones(1 << 20).pin_memory()\n"
        "    return x.cuda()\n"
    )
    main = (
        "import torch\nfrom helper import load\n\n\ndef main():\n    s = torch.cuda.Stream()\n"
        "    with torch.cuda.stream(s):\n        y = load()\n    return y * 2\n"
    )
    root = _project(tmp_path, {"helper.py": helper, "main.py": main})
    assert _fixes(root, "helper.py") == {6: None}
    # through a module between them too
    root = _project(
        tmp_path, {"helper.py": helper, "mid.py": "from helper import load\n", "main.py": main.replace("from helper", "from mid")}
    )
    assert _fixes(root, "helper.py") == {6: None}
    (root / "main.py").write_text("from mid import load\n\n\ndef main():\n    return load() * 2\n")
    assert _fixes(root, "helper.py") == {6: "safe"}


def test_a_copy_handed_to_an_imported_module_that_uses_streams_is_not_made_non_blocking(tmp_path):
    # train.py copies each step and hands the copy to helpers.consume, which reads it on a side
    # stream without waiting: a non-blocking copy from pageable memory would still be running
    # there (20 of 20 wrong results on an H200 with 16 to 65,536 elements)
    helpers = (
        "import torch\n\n_side = torch.cuda.Stream()\n\n\ndef consume(x):\n"
        "    with torch.cuda.stream(_side):\n        return x * 2\n"
    )
    train = (
        "import torch\nfrom helpers import consume\n\n\ndef main():\n    for step in range(100):\n"
        "        x = torch.randn(1024).cuda()\n        consume(x)\n"
    )
    root = _project(tmp_path, {"helpers.py": helpers, "train.py": train})
    assert _fixes(root, "train.py") == {7: None}
    result = CliRunner().invoke(cli, ["check", "--no-cache", "--select", "SFX101", "-o", "json", "--exit-zero", str(root / "train.py")])
    (finding,) = json.loads(result.output)
    assert "(in module `helpers`)" in finding["message"]  # the module to look at is named
    # through a module between them too; without the stream, the fix is safe
    root = _project(
        tmp_path, {"helpers.py": helpers, "mid.py": "from helpers import consume\n", "train.py": train.replace("from helpers", "from mid")}
    )
    assert _fixes(root, "train.py") == {7: None}
    (root / "helpers.py").write_text("import torch\n\n\ndef consume(x):\n    return x * 2\n")
    assert _fixes(root, "train.py") == {7: "safe"}


def test_a_sync_an_importer_may_count_on_is_not_removed_by_a_safe_fix(tmp_path):
    # main.py copies predictions to the host without waiting, then calls labels(), whose blocking
    # copy is what waits for them before the host reads `pred`
    helper = "import torch\n\n\ndef labels(n):\n    return torch.zeros(n, dtype=torch.long).cuda()\n"
    main = (
        "from helper import labels\n\n\ndef evaluate(model, loader):\n    total = 0\n"
        "    for x, y in loader:\n        pred = model(x).argmax(1).to('cpu', non_blocking=True)\n"
        "        lbl = labels(4)\n        total += int(pred.numpy().sum())\n    return total\n"
    )
    root = _project(tmp_path, {"helper.py": helper, "main.py": main})
    assert _fixes(root, "helper.py") == {5: "unsafe"}
    (root / "main.py").write_text(main.replace(", non_blocking=True", ""))
    assert _fixes(root, "helper.py") == {5: "safe"}


def test_a_cpu_attribute_of_a_class_other_files_import_is_a_cpu_tensor_in_the_likely_view(tmp_path):
    # torchrl's _TrajectoryPool: `self._traj_id = torch.zeros((), device="cpu")`, read with
    # `.item()` where code repeats; another file imports the class (and may, in principle, set
    # the attribute too), so this is a likely fact: the read waits for no GPU, no finding
    pool = (
        "import torch\n\n\nclass Pool:\n    def __init__(self):\n"
        "        self._traj_id = torch.zeros((), device='cpu', dtype=torch.int)\n\n"
        "    def get_traj_and_increment(self, n=1):\n        v = self._traj_id.item()\n"
        "        self._traj_id.add_(n)\n        return v\n"
    )
    runner = "from pool import Pool\n\n\ndef run(n):\n    p = Pool()\n    for _ in range(n):\n        p.get_traj_and_increment()\n"
    root = _project(tmp_path, {"pool.py": pool, "runner.py": runner}, installable=True)
    result = CliRunner().invoke(cli, ["check", "--no-cache", "--select", "SFX105", "-o", "json", "--exit-zero", str(root / "pool.py")])
    assert json.loads(result.output) == []
    gpu = root / "pool.py"
    gpu.write_text(pool.replace("device='cpu'", "device=self.device"))
    result = CliRunner().invoke(cli, ["check", "--no-cache", "--select", "SFX105", "-o", "json", "--exit-zero", str(gpu)])
    assert [f["location"]["row"] for f in json.loads(result.output)] == [9]


def test_a_global_read_in_a_main_block_is_not_one_other_files_store_to(tmp_path):
    # run.py runs as __main__: ``import run`` elsewhere makes a second module, so another file's
    # stores to ``run``'s names never reach the names its main block reads (Depth-Anything's
    # ``DEVICE = 'cuda' if ... else 'cpu'``); a function it defines may run as ``run``, though
    run = """
    import torch

    def step(x):
        return x.to(DEVICE)

    if __name__ == "__main__":
        DEVICE = "cuda" if torch.cuda.is_available() else "cpu"
        for i in range(10):
            x = torch.ones(8).to(DEVICE)
            step(torch.ones(8))
    """
    # another file sets attributes by computed names (Depth-Anything has such a ``setattr``)
    other = "import run\n\n\ndef configure(**kw):\n    for k, v in kw.items():\n        setattr(run, k, v)\n"
    root = _project(tmp_path, {"run.py": run, "other.py": other})
    fixes = _fixes(root, "run.py")
    assert fixes[9] == "safe" and fixes.get(4) != "safe"


def test_a_computed_setattr_reaches_a_modules_globals_only_from_a_file_that_holds_it(tmp_path):
    # BigGAN's converter: ``DEVICE = 'cuda'`` at the top of a script no file imports, while a
    # layer file of the project sets attributes by computed names on its own objects
    conv = """
    import torch

    DEVICE = "cuda"

    def sample(G, n):
        for _ in range(n):
            z = torch.randn(4, 8).to(DEVICE)
            G(z)
    """
    layers = (
        "class SpectralNorm:\n    def __init__(self, module, name):\n        self.module, self.name = module, name\n\n"
        "    def update(self, w):\n        setattr(self.module, self.name, w)\n"
    )
    root = _project(tmp_path, {"conv.py": conv, "layers.py": layers})
    assert _fixes(root, "conv.py")[7] == "safe"
    # a file that imports it may set its names by computed names: the device is then unknown
    holder = "import conv\n\n\ndef configure(**kw):\n    for k, v in kw.items():\n        setattr(conv, k, v)\n"
    (tmp_path / "b").mkdir()
    root = _project(tmp_path / "b", {"conv.py": conv, "layers.py": layers, "holder.py": holder})
    assert _fixes(root, "conv.py").get(7) != "safe"
