"""The project index across files: a function another project file imports has callers out of
sight, and the results cache notices when that changes."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from syncfix.cli import cli
from syncfix.projects import contexts, module_name, project_root

TRAIN = """\
import torch
from torch.utils.data import DataLoader


def train_one_epoch(loader, device):
    for x, y in loader:
        x = x.cuda()


def main():
    train_one_epoch(DataLoader(range(8), batch_size=2), torch.device("cuda"))


if __name__ == "__main__":
    main()
"""


@pytest.fixture
def project(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'p'\n", encoding="utf-8")
    (tmp_path / "scripts").mkdir()
    (tmp_path / "scripts" / "train.py").write_text(TRAIN, encoding="utf-8")
    return tmp_path


def _fixes(*args: str) -> list[bool]:
    """For each SFX101 finding: does it have a safe fix?"""
    result = CliRunner().invoke(cli, ["check", "scripts/train.py", "-o", "json", "--include-cold", *args])
    assert result.exit_code in (0, 1), result.output
    return [
        f["fix"] is not None and f["fix"]["applicability"] == "safe"
        for f in json.loads(result.stdout)
        if f["code"] == "SFX101"
    ]


def test_module_names_and_root(project):
    assert project_root(project / "scripts" / "train.py") == project.resolve()
    assert module_name(project / "pkg" / "__init__.py", project.resolve()) == "pkg"
    assert contexts(["scripts/train.py"])["scripts/train.py"].imported == frozenset()


@pytest.mark.parametrize("cache", [[], ["--no-cache"]])
def test_importer_in_another_file_makes_the_function_escape(project, cache):
    assert _fixes(*cache) == [True]  # only main() calls it: the loader and device are proven
    tests = project / "tests"
    tests.mkdir()
    (tests / "test_train.py").write_text("from train import train_one_epoch\n", encoding="utf-8")
    assert _fixes(*cache) == [False]  # a test may pass anything: no safe fix (cache or not)
    (tests / "test_train.py").write_text("from train import main\n", encoding="utf-8")
    assert _fixes(*cache) == [True]


def test_file_outside_any_project_has_its_folder_as_project(tmp_path):
    """Without pyproject.toml or .git, the scripts beside a file are its project (not the
    folders below: a loose folder may be large): a neighbour that runs it under a side stream
    is seen."""
    lone = tmp_path / "lone.py"
    lone.write_text("import torch\ndef to_gpu(n):\n    return torch.randn(n).cuda()\n", encoding="utf-8")
    if project_root(lone) is not None:
        pytest.skip("the temporary folder lies inside a project")
    assert not contexts([str(lone)])[str(lone)].streams_around
    runner = "import torch\nfrom lone import to_gpu\nwith torch.cuda.stream(torch.cuda.Stream()):\n    to_gpu(4)\n"
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "runner.py").write_text(runner.replace("from lone", "from ..lone"), encoding="utf-8")
    assert not contexts([str(lone)])[str(lone)].streams_around  # below the folder: not indexed
    (tmp_path / "runner.py").write_text(runner, encoding="utf-8")
    context = contexts([str(lone)])[str(lone)]
    assert context.streams_around == "runner" and not context.closed  # named in the findings


TRAINER = """\
import torch


class Trainer:
    def __init__(self):
        self.device = torch.device("cuda")

    def step(self, batches: torch.Tensor):
        for x in batches:
            y = x.float() * 2  # a new tensor wherever the batches are
            z = y.to(self.device)
"""


def test_a_class_imported_elsewhere_keeps_no_attribute_facts(project):
    """A subclass in the importing file may set ``self.device = "cpu"``: then ``y.to(self.device)``
    of a tensor that may be on CUDA is a device-to-host copy that must stay blocking."""
    (project / "scripts" / "trainer.py").write_text(TRAINER, encoding="utf-8")

    def safe_fixes() -> int:
        result = CliRunner().invoke(cli, ["check", "scripts/trainer.py", "-o", "json", "--no-cache"])
        assert result.exit_code in (0, 1), result.output
        found = json.loads(result.stdout)
        return sum(f["fix"] is not None and f["fix"]["applicability"] == "safe" for f in found)

    assert safe_fixes() == 1  # only this file knows the class: its one assignment proves CUDA
    (project / "scripts" / "cpu.py").write_text(
        "from trainer import Trainer\n\nclass CPUTrainer(Trainer):\n"
        "    def __init__(self):\n        self.device = 'cpu'\n",
        encoding="utf-8",
    )
    assert safe_fixes() == 0


def _big_project(root, n: int) -> list[str]:
    (root / ".git").mkdir()
    files = []
    for i in range(n):
        path = root / "pkg" / f"m{i}.py"
        path.parent.mkdir(exist_ok=True)
        nxt = f"from .m{i + 1} import step{i + 1}\n" if i + 1 < n else ""
        call = f"        step{i + 1}(x)\n" if i + 1 < n else ""
        path.write_text(f"import torch\n{nxt}\n\nclass C{i}:\n    def forward(self, x):\n        return x\n\n\n"
                        f"def step{i}(x):\n    for _ in range(3):\n{call}        x.item()\n")
        files.append(str(path))
    (root / "tests").mkdir()
    (root / "tests" / "test_m.py").write_text("from pkg.m0 import step0\n\n\ndef test_step():\n    step0(1)\n")
    return files


def test_the_index_read_in_worker_processes_is_the_index_read_here(tmp_path):
    from syncfix.cli import INDEX_PARALLEL_THRESHOLD, _index_summarizer
    from syncfix.config import Settings

    files = _big_project(tmp_path, INDEX_PARALLEL_THRESHOLD + 6)
    here = contexts(files)
    spread = contexts(files, summarize=_index_summarizer(Settings(jobs=2)))
    assert spread == here
    assert {k: v.fingerprint() for k, v in spread.items()} == {k: v.fingerprint() for k, v in here.items()}
    assert "step5" in here[files[5]].hot  # the index did read the calls (step4 calls it in a loop)


def test_a_small_project_is_read_without_workers(tmp_path, monkeypatch):
    import syncfix.cli as cli_module
    from syncfix.config import Settings

    def no_pool(*args, **kwargs):
        raise AssertionError("a pool was started")

    monkeypatch.setattr(cli_module, "ProcessPoolExecutor", no_pool)
    files = _big_project(tmp_path, 5)
    spread = contexts(files, summarize=cli_module._index_summarizer(Settings(jobs=2)))
    assert spread == contexts(files)


def test_stream_use_is_read_from_code_not_from_strings():
    from syncfix.analysis.async_copies import uses_streams

    assert uses_streams(b"import torch\ns = torch.cuda.Stream()\n")
    assert uses_streams(b"import torch\nwith torch.cuda.stream(s):\n    pass\n")
    assert uses_streams(b"from torch.cuda import graph\n")
    assert uses_streams(b"x.record_stream(s)\n")
    assert uses_streams(b"torch.cuda.stream(\n")  # does not parse: counted
    assert not uses_streams(b'doc = "with torch.cuda.stream(s): ..."  # torch.cuda.Stream()\n')
    assert not uses_streams(b"import torch\nx = torch.ones(3).cuda()\n")
    # a stream API under another name
    assert uses_streams(b"import torch\ncuda = torch.cuda\nwith cuda.stream(s):\n    pass\n")
    assert uses_streams(b"import torch\ndm = torch.get_device_module('cuda')\nwith dm.stream(s):\n    pass\n")
    # a name that may hold one: a parameter without a telling annotation, a loop or `with` target
    assert uses_streams(b"import torch\ndef f(dm):\n    dm.stream(s)\n")
    assert uses_streams(b"import torch\nfor r in things:\n    r.stream(3)\n")
    assert uses_streams(b"from torch import Stream\ndef f(r: Stream):\n    r.stream(3)\n")
    # the current and default streams are the ones every op runs on: naming them adds none
    assert not uses_streams(b"import torch\ne = torch.cuda.Event()\ne.record(torch.cuda.current_stream(d))\n")
    assert not uses_streams(b"from torch.cuda import current_stream, default_stream\nh = current_stream().cuda_stream\n")


def test_a_method_called_stream_of_an_object_that_is_no_torch_one_is_no_stream_use():
    # point-e's evals: `streamer: NpzStreamer` reads numpy files in batches
    from syncfix.analysis.async_copies import uses_streams

    src = b"from .npz import NpzStreamer\ndef f(streamer: NpzStreamer):\n    for x in streamer.stream(4):\n        pass\n"
    assert not uses_streams(src)
    assert not uses_streams(b"from mylib import Reader\nr = Reader('x')\nfor b in r.stream(3):\n    pass\n")
    # OpenPCDet's rotated-IoU kernels: numba's CUDA streams order numba's work, not torch's
    assert not uses_streams(b"from numba import cuda\nstream = cuda.stream()\n")
    assert uses_streams(b"import torch.cuda as cuda\nstream = cuda.stream()\n")


def _files(tmp_path, monkeypatch, files: dict[str, str]) -> None:
    """A closed project (a ``.git`` folder, no packaging) of these files, as the working folder."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / ".git").mkdir()
    for name, text in files.items():
        (tmp_path / name).write_text(text, encoding="utf-8")


def _safe_fixes(path: str) -> int:
    result = CliRunner().invoke(cli, ["check", path, "-o", "json", "--no-cache"])
    assert result.exit_code in (0, 1), result.output
    return sum(f["fix"] is not None and f["fix"]["applicability"] == "safe" for f in json.loads(result.stdout))


ENGINE = """\
import torch
from torch.utils.data import DataLoader, TensorDataset

DEVICE = "cuda"


class Trainer:
    device = "cuda"

    def fit(self):
        for x, y in DataLoader(TensorDataset(torch.randn(10, 3), torch.randn(10)), batch_size=2):
            print(x.to(self.device), y)


def run():
    for x, y in DataLoader(TensorDataset(torch.randn(10, 3), torch.randn(10)), batch_size=2):
        print(x.to(DEVICE), y)
"""


@pytest.mark.parametrize(
    ("other", "left"),
    [
        ("import engine\n", 4),  # nothing set elsewhere: both loops get SFX103 and SFX101 fixes
        ("import engine\nengine.DEVICE = 'cpu'\n", 2),  # a module global set from another file
        ("from engine import Trainer\nTrainer.device = 'cpu'\n", 2),  # a class attribute, likewise
        # a computed ``setattr`` on any object may set ``device`` on a Trainer (or the module)...
        ("import engine\ndef put(o, k, v):\n    setattr(o, k, v)\n", 0),
        # ...but on ``self`` of another class (once-for-all's worker info) it sets only that class's
        (
            "import engine\nclass Info:\n    def __init__(self, **kw):\n        for k, v in kw.items():\n"
            "            setattr(self, k, v)\n",
            4,
        ),
        # unless the Trainer derives from that class
        ("from engine import Trainer\nclass Info(Trainer):\n    def set(self, k, v):\n        setattr(self, k, v)\n", 2),
    ],
)
def test_names_set_from_another_file_keep_no_device_fact(tmp_path, monkeypatch, other, left):
    """``engine.DEVICE = "cpu"`` (or ``Trainer.device = "cpu"``) in another file of a closed
    project makes the name's device unknown: pinning and non-blocking copies are not proven."""
    _files(tmp_path, monkeypatch, {"engine.py": ENGINE, "main.py": other})
    assert _safe_fixes("engine.py") == left


def test_a_computed_setattr_on_self_in_a_base_class_elsewhere_may_set_any_attribute(tmp_path, monkeypatch):
    base = "class Base:\n    def set(self, k, v):\n        setattr(self, k, v)\n"
    engine = ENGINE.replace("class Trainer:", "class Trainer(Base):").replace("import torch\n", "import torch\nfrom base import Base\n", 1)
    _files(tmp_path, monkeypatch, {"engine.py": engine, "base.py": base})
    assert _safe_fixes("engine.py") == 2  # the module global's loop keeps both; the Trainer's loses its copy fix
    (tmp_path / "base.py").write_text("class Base:\n    pass\n", encoding="utf-8")
    assert _safe_fixes("engine.py") == 4


COPIES = """\
import torch
import precision


device = "cuda" if torch.cuda.is_available() else "cpu"


def run(steps):
    for _ in range(steps):
        x = torch.ones(3)
        print(x.to(device))
"""


@pytest.mark.parametrize(
    ("precision", "left"),
    [
        ("import torch\n", 1),
        # the default dtype moves nothing off the CPU: the copy's source is still a CPU tensor
        ("import torch\ntorch.set_default_dtype(torch.bfloat16)\n", 1),
        ("import torch\ntorch.set_default_device('cuda')\n", 0),
    ],
)
def test_a_default_dtype_set_elsewhere_keeps_device_facts(tmp_path, monkeypatch, precision, left):
    _files(tmp_path, monkeypatch, {"main.py": COPIES, "precision.py": precision})
    assert _safe_fixes("main.py") == left


LOSS_CHECK = """\
import math
import sys

import torch


def train(model, loader):
    for x in loader:
        loss_value = model(x).item()
        if not math.isfinite(loss_value):
            sys.exit(1)
"""


def test_a_computed_setattr_elsewhere_leaves_an_imported_module_a_module(tmp_path, monkeypatch):
    """A computed ``setattr`` in another file (a network's modules swapped by name, as
    torchvision does) once made every module global unknown, ``math`` too, and
    ``math.isfinite`` of the float read looked like a tensor's method: a false SFX206. The
    read itself is the finding."""
    other = "def swap(m, name, new):\n    setattr(m, name, new)\n"
    _files(tmp_path, monkeypatch, {"engine.py": LOSS_CHECK, "other.py": other})
    result = CliRunner().invoke(cli, ["check", "engine.py", "-o", "json", "--no-cache"])
    assert [(f["code"], f["location"]["row"]) for f in json.loads(result.stdout)] == [("SFX105", 9)]


ADJUST = """\
import torch
import precision

device = "cuda" if torch.cuda.is_available() else "cpu"


def adjust():
    m = torch.ones((), device=device) * 256
    scale = torch.ones((), device=device)
    with torch.no_grad():
        if m.item() >= 257.0:
            scale = scale * 2
        else:
            scale = scale * 3
    return scale


for _ in range(3):
    print(adjust())
"""


@pytest.mark.parametrize(("precision", "left"), [("import torch\n", 1), ("import torch\ntorch.set_default_dtype(torch.bfloat16)\n", 0)])
def test_default_dtype_set_in_another_file(tmp_path, monkeypatch, precision, left):
    """torch's default dtype is the process's: set in any project file (bfloat16 here, where
    257.0 rounds to 256), no module's default float is provable, and SFX201's comparison with a
    literal is not proven exact."""
    _files(tmp_path, monkeypatch, {"main.py": ADJUST, "precision.py": precision})
    assert _safe_fixes("main.py") == left


TRAINER_WITH_DEVICE = """\
class Trainer:
    def __init__(self, model, loader, device):
        self.model = model
        self.loader = loader
        self.device = device

    def fit(self):
        for x, y in self.loader:
            self.model(x.to(self.device), y.to(self.device))
"""
MAKES_TRAINER = """\
import torch
from torch.utils.data import DataLoader, TensorDataset
from trainer import Trainer


def main():
    ds = TensorDataset(torch.randn(10, 3), torch.randn(10))
    Trainer(torch.nn.Linear(3, 1), DataLoader(ds, batch_size=2), torch.device("cuda")).fit()


if __name__ == "__main__":
    main()
"""


@pytest.mark.parametrize(("other", "left"), [("", 2), ("def again(t, m, l):\n    type(t)(m, l, 'mps').fit()\n", 0)])
def test_a_class_built_through_type_elsewhere_has_unseen_callers(tmp_path, monkeypatch, other, left):
    """``type(t)(m, l, "mps")`` in another file calls the class without naming it: its
    constructor's call sites are not all in sight, so ``self.device`` proves nothing."""
    _files(tmp_path, monkeypatch, {"trainer.py": TRAINER_WITH_DEVICE, "main.py": MAKES_TRAINER, "other.py": other})
    assert _safe_fixes("trainer.py") == left


@pytest.mark.parametrize(
    ("body", "left"),
    [
        ("        xg = to_device(torch.ones(3))\n", 1),
        ("        try:\n            xg = to_device(torch.ones(3))\n        except RuntimeError:\n            xg = None\n", 0),
    ],
)
def test_a_try_around_a_call_in_another_file_keeps_the_copy_blocking(tmp_path, monkeypatch, body, left):
    """A caller in another file that catches the copy's error in a ``try`` (a health check)
    needs it raised there: the copy stays blocking."""
    main = f"import torch\n\nfrom steps import to_device\n\n\ndef run(model, data):\n    for chunk in data:\n{body}        model(xg)\n"
    _files(tmp_path, monkeypatch, {"steps.py": 'def to_device(x):\n    return x.to("cuda")\n', "main.py": main})
    assert _safe_fixes("steps.py") == left


def test_the_names_of_a_from_import_are_not_modules_of_their_own():
    # `from .fileio import decode` imports `decode` from syncfix.fileio (or the submodule
    # syncfix.fileio.decode), never a top-level module `decode`; `import` statements after `;`
    # or `:` still count, and words in a docstring or comment do not
    from syncfix.analysis.project import ALL, module_imports

    source = (
        b"import os, sys\nfrom .fileio import FileError, decode\nif x: import json\n"
        b"x = 1; import re\n'''import inside a docstring'''\n# import in a comment\n"
    )
    found = module_imports(source, "syncfix.engine")
    assert ("decode", ALL) not in found and ("FileError", ALL) not in found
    assert ("syncfix.fileio", "decode") in found and ("syncfix.fileio.decode", ALL) in found
    assert {("os", ALL), ("sys", ALL), ("json", ALL), ("re", ALL)} <= set(found)
    assert not any(name in ("inside", "in") for name, _ in found)


ENGINE_NESTED = """\
import torch


def train_one_epoch(model, data_loader, device):
    for samples, targets in data_loader:
        samples = samples.to(device)
        model(samples, targets)
"""


@pytest.mark.parametrize(
    ("misc", "fixed"),
    [
        ("def helper():\n    return 1\n", True),
        # DETR's shape: a project class with its own `.to(self, device)`: a batch part may be one
        ("class NestedTensor:\n    def to(self, device):\n        return self\n", False),
        # one that passes keywords on (BigGAN's) takes non_blocking
        ("class Holder:\n    def to(self, *args, **kwargs):\n        return self\n", True),
    ],
)
def test_a_batch_part_gets_no_unsafe_fix_where_a_project_class_defines_a_narrow_to(tmp_path, monkeypatch, misc, fixed):
    _files(tmp_path, monkeypatch, {"engine.py": "import misc\n" + ENGINE_NESTED, "misc.py": misc})
    result = CliRunner().invoke(cli, ["check", "engine.py", "--unsafe-fixes", "-o", "json", "--no-cache"])
    assert [f["fix"] is not None for f in json.loads(result.stdout) if f["code"] == "SFX101"] == [fixed]


def test_a_batch_part_tested_to_be_a_tensor_is_no_instance_of_a_project_class(tmp_path, monkeypatch):
    # motion-diffusion-model: `val.to(device) if torch.is_tensor(val) else val` is a tensor's
    # `.to`, whatever `to` a project class defines
    engine = ENGINE_NESTED.replace("samples = samples.to(device)", "samples = samples.to(device) if torch.is_tensor(samples) else samples")
    misc = "class NestedTensor:\n    def to(self, device):\n        return self\n"
    _files(tmp_path, monkeypatch, {"engine.py": "import misc\n" + engine, "misc.py": misc})
    result = CliRunner().invoke(cli, ["check", "engine.py", "--unsafe-fixes", "-o", "json", "--no-cache"])
    assert [f["fix"] is not None for f in json.loads(result.stdout) if f["code"] == "SFX101"] == [True]


def test_a_class_with_a_narrow_to_anywhere_in_an_installable_project_holds_back_a_batch_part_fix(tmp_path, monkeypatch):
    # maskrcnn-benchmark's shape: the trainer imports no module of the class, the project can be
    # installed (so not closed), and the targets are copied in a list comprehension
    _files(tmp_path, monkeypatch, {
        "setup.py": "",
        "trainer.py": (
            "import torch\n\n\ndef do_train(model, data_loader, device):\n"
            "    for images, targets in data_loader:\n"
            "        targets = [target.to(device) for target in targets]\n"
            "        model(images, targets)\n"
        ),
        "boxes.py": "class BoxList:\n    def to(self, device):\n        return self\n",
    })
    result = CliRunner().invoke(cli, ["check", "trainer.py", "--unsafe-fixes", "-o", "json", "--no-cache"])
    found = [f for f in json.loads(result.stdout) if f["code"] == "SFX101"]
    assert [f["fix"] for f in found] == [None]
    # the message names the class, which may be unrelated (opacus's benchmark `Layer`)
    assert "an instance of `BoxList` (module `boxes`)" in found[0]["message"]
    (tmp_path / "boxes.py").write_text("class BoxList:\n    def to(self, *args, **kwargs):\n        return self\n")
    result = CliRunner().invoke(cli, ["check", "trainer.py", "--unsafe-fixes", "-o", "json", "--no-cache"])
    assert [f["fix"] is not None for f in json.loads(result.stdout) if f["code"] == "SFX101"] == [True]


def test_a_folder_named_on_the_command_line_is_the_project_of_files_under_no_marker(tmp_path, monkeypatch):
    # no .git, no pyproject.toml: the helper in pkg/ runs under a side stream that main.py sets,
    # which only an index of the whole named folder sees
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "b.py").write_text(
        "import torch\n\ndef step(model, loader):\n    for x in loader:\n"
        "        t = torch.zeros(4).cuda()\n        model(x, t)\n"
    )
    (tmp_path / "main.py").write_text(
        "import torch\nfrom pkg.b import step\ns = torch.cuda.Stream()\n"
        "with torch.cuda.stream(s):\n    step(None, [])\n"
    )
    monkeypatch.chdir(tmp_path)

    def fixes(target: str) -> list:
        result = CliRunner().invoke(cli, ["check", target, "-o", "json", "--no-cache"])
        return [f["fix"] for f in json.loads(result.output) if f["code"] == "SFX101"]

    assert fixes(".") == [None]
    places = contexts([str(tmp_path / "pkg" / "b.py")], given=[str(tmp_path)])
    assert places[str(tmp_path / "pkg" / "b.py")].streams_around == "main"
    # a file named alone is the project of its own folder, as before
    assert fixes("pkg/b.py") != [None]


SCRIPT = """\
import torch
from torch.utils.data import DataLoader, TensorDataset
from tqdm import tqdm

device = "cuda" if torch.cuda.is_available() else "cpu"
loader = DataLoader(TensorDataset(torch.randn(10, 3)), batch_size=2)


def train():
    for i, (x,) in tqdm(enumerate(loader)):
        print(x.to(device))


train()
"""


@pytest.mark.parametrize(
    ("config", "left"),
    [
        # safari's config helper sets class attributes by computed name: no file holding the
        # script's loader can reach it, so its batches stay fresh (SFX101's fix safe)
        ("def configure(cls, **kw):\n    for k, v in kw.items():\n        setattr(cls, k, v)\n", 1),
        # a file that imports the script may read its loader and set any attribute on it
        ("import train\ndef configure(cls, **kw):\n    for k, v in kw.items():\n        setattr(cls, k, v)\n", 0),
    ],
)
def test_a_computed_setattr_reaches_a_loader_only_from_files_that_can_hold_it(tmp_path, monkeypatch, config, left):
    _files(tmp_path, monkeypatch, {"train.py": SCRIPT, "config.py": config})
    result = CliRunner().invoke(cli, ["check", "train.py", "-o", "json", "--no-cache", "--select", "SFX101"])
    fixes = [f["fix"]["applicability"] for f in json.loads(result.stdout) if f["fix"] is not None]
    assert fixes.count("safe") == left


HANDED = """\
import torch
from torch.utils.data import DataLoader, TensorDataset

from helpers import log_loader


def train(train_loader, model):
    for i, (x, y) in enumerate(train_loader):
        y = y.cuda()
        model(x, y)


def main(model):
    loader = DataLoader(TensorDataset(torch.randn(10, 3), torch.randn(10)), batch_size=2)
    for epoch in range(3):
        train({handed}, model)
"""


@pytest.mark.parametrize(
    ("handed", "left"),
    [
        # TSM: the loader handed to this file's `train`, which only iterates it, is confined as
        # if iterated here: a computed setattr in a file that cannot hold it does not reach it
        ("loader", 1),
        # handed on to another file's function too: that code may set its collate_fn
        ("log_loader(loader)", 0),
    ],
)
def test_a_loader_handed_to_a_function_of_its_module_that_iterates_it_stays_confined(tmp_path, monkeypatch, handed, left):
    config = "def configure(obj, **kw):\n    for k, v in kw.items():\n        setattr(obj, k, v)\n"
    helpers = "def log_loader(loader):\n    print(len(loader))\n    return loader\n"
    _files(tmp_path, monkeypatch, {"train.py": HANDED.format(handed=handed), "config.py": config, "helpers.py": helpers})
    result = CliRunner().invoke(cli, ["check", "train.py", "-o", "json", "--no-cache", "--select", "SFX101"])
    fixes = [f["fix"]["applicability"] for f in json.loads(result.stdout) if f["fix"] is not None]
    assert fixes.count("safe") == left, result.stdout


def test_an_absolute_import_of_a_standard_library_module_is_no_project_module_named_like_it(tmp_path, monkeypatch):
    # UniFormer: mmdet's `import logging` was taken for slowfast/utils/logging.py, so a module
    # that uses CUDA streams there reached unrelated files
    (tmp_path / "slowfast" / "utils").mkdir(parents=True)
    (tmp_path / "mmdet").mkdir()
    _files(tmp_path, monkeypatch, {
        "slowfast/utils/logging.py": "import torch\n\n\ndef setup():\n    return torch.cuda.Stream()\n",
        "mmdet/contextmanagers.py": "import logging\n\nlog = logging.getLogger(__name__)\n",
        "mmdet/helpers.py": "from slowfast.utils.logging import setup\n",
    })
    places = contexts(["mmdet/contextmanagers.py", "mmdet/helpers.py"], given=["."])
    assert places["mmdet/contextmanagers.py"].streams_around == ""
    assert places["mmdet/helpers.py"].streams_around == "slowfast.utils.logging"
