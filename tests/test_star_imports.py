"""``from module import *`` may bind a builtin's name (analysis/star_imports.py): for a project
module syncfix lists the names it binds; otherwise no name of the importing module is taken for
a builtin (``range``, ``len``, ``enumerate``...)."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest
from click.testing import CliRunner

from syncfix.analysis import star_imports
from syncfix.cli import cli

TRAIN = """
import torch
from models import *

device = torch.device("cuda")


def decode(model, tokens: list):
    for step in range(3):
        model(torch.tensor(step, device=device))
        model(torch.tensor(len(tokens), device=device))
"""


def _fixes(root: Path, files: dict[str, str], target: str = "train.py") -> list[str | None]:
    """The applicability of each SFX102 fix in ``target`` of a project of ``files``."""
    (root / "pyproject.toml").write_text("")
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text).lstrip())
    result = CliRunner().invoke(
        cli, ["check", "--no-cache", "--select", "SFX102", "-o", "json", "--exit-zero", str(root / target)]
    )
    assert result.exit_code == 0, result.output
    return [(f["fix"] or {}).get("applicability") for f in json.loads(result.output)]


@pytest.fixture(autouse=True)
def _fresh_memo():
    star_imports._EXPORTS.clear()
    yield
    star_imports._EXPORTS.clear()


def test_a_project_module_that_binds_no_builtin_keeps_them(tmp_path):
    # models/__init__.py star-imports its submodules, none of which binds `range` or `len`
    files = {
        "train.py": TRAIN,
        "models/__init__.py": "from .vgg import *\nfrom .resnet import ResNet18\n",
        "models/vgg.py": "cfg = {}\nclass VGG:\n    pass\ndef _range():\n    pass\n",
        "models/resnet.py": "class ResNet18:\n    pass\n",
    }
    assert _fixes(tmp_path, files) == ["safe", "safe"]


@pytest.mark.parametrize(
    ("vgg", "expected"),
    [
        ("def len(x):\n    return 2**70\n", ["safe", None]),  # binds `len`: only `range` is the builtin
        ("range = lambda *a: [2**70]\n", [None, "safe"]),  # binds `range`: only `len` is
        ("__all__ = ['VGG'] + extra\n", [None, None]),  # an __all__ syncfix cannot read
        ("globals()['len'] = max\n", [None, None]),  # names set at run time
        ("from torch import *\n", [None, None]),  # a module outside the project
        ("__all__ = ['VGG']\n__all__[:] = ['VGG', 'len']\n", [None, None]),  # __all__ changed in place
        ("import sys\nsetattr(sys.modules[__name__], 'len', max)\n", [None, None]),  # set at run time
        ("import builtins\nbuiltins.len = max\n", [None, None]),  # a builtin replaced
    ],
)
def test_a_star_import_that_may_bind_a_builtin_leaves_it_unknown(tmp_path, vgg, expected):
    files = {"train.py": TRAIN, "models/__init__.py": "from .vgg import *\n", "models/vgg.py": vgg}
    assert _fixes(tmp_path, files) == expected


def test_an_all_that_leaves_the_builtin_out_keeps_it(tmp_path):
    files = {
        "train.py": TRAIN,
        "models/__init__.py": "from .vgg import *\n",
        "models/vgg.py": "__all__ = ['VGG']\nclass VGG:\n    pass\ndef len(x):\n    return 0\n",
    }
    assert _fixes(tmp_path, files) == ["safe", "safe"]


def test_a_module_another_file_may_stand_for_leaves_no_builtin(tmp_path):
    # run as `python scripts/train.py`, `models` is scripts/models.py (which binds `len`); run
    # from the root as a module, it is the package: syncfix cannot tell which
    files = {
        "train.py": "",
        "scripts/train.py": TRAIN,
        "scripts/models.py": "def len(x):\n    return 0\n",
        "models/__init__.py": "class VGG:\n    pass\n",
    }
    assert _fixes(tmp_path, files, "scripts/train.py") == [None, None]


def test_common_attributes_of_the_same_names_keep_the_builtins(tmp_path):
    # `model.modules()`, `self.__dict__` and `setattr(self, ...)` in a model file set no module
    # names: its star import still binds neither `range` nor `len`
    vgg = (
        "class VGG:\n    def __init__(self, **kw):\n        self.__dict__.update(kw)\n"
        "        setattr(self, 'depth', 16)\n        for m in self.modules():\n            pass\n"
    )
    files = {"train.py": TRAIN, "models/__init__.py": "from .vgg import *\n", "models/vgg.py": vgg}
    assert _fixes(tmp_path, files) == ["safe", "safe"]


def test_keywords_are_never_taken_for_rebound_builtins(tmp_path):
    # `non_blocking=True` adds the name `True`, which no star import can rebind: a module
    # outside the project, whose names syncfix cannot list, leaves the fix alone
    train = (
        "import torch\nfrom data import *\n\n\ndef step(model, x: torch.Tensor):\n"
        "    for _ in range(3):\n        model(torch.ones(3).cuda())\n"
    )
    (tmp_path / "pyproject.toml").write_text("")
    (tmp_path / "train.py").write_text(train)
    result = CliRunner().invoke(
        cli, ["check", "--no-cache", "--select", "SFX101", "-o", "json", "--exit-zero", str(tmp_path / "train.py")]
    )
    (finding,) = json.loads(result.output)
    assert "builtin" not in finding["message"]
    assert (finding["fix"] or {}).get("applicability") == "safe"


LOSS = """
from utils import *


class MultiBoxLoss(nn.Module):
    def forward(self, predicted, boxes, device):
        total = 0
        for i in range(len(boxes)):
            priors = torch.zeros((len(boxes[i]), 4)).to("cuda")
            total = total + predicted[i].sum() + priors.sum()
        return total
"""


def _codes(path: Path, select: str) -> list[str]:
    """The rule codes ``check`` reports on ``path`` (one file of a project), for ``select``."""
    result = CliRunner().invoke(
        cli, ["check", "--no-cache", "--select", select, "-o", "json", "--exit-zero", str(path)]
    )
    return [f["code"] for f in json.loads(result.stdout)]


@pytest.mark.parametrize(
    ("utils", "found"),
    [
        # the SSD tutorial: `torch` and `nn` reach model.py only through `from utils import *`
        ("import torch\nimport torch.nn as nn\n\n\ndef helper(x):\n    return x\n", True),
        # an `__all__` that leaves them out binds nothing of theirs
        ("import torch\nimport torch.nn as nn\n\n__all__ = ['helper']\n\n\ndef helper(x):\n    return x\n", False),
        # bound twice (an import that may fail): not known to be torch
        ("try:\n    import torch\nexcept ImportError:\n    torch = None\nimport torch.nn as nn\n", False),
    ],
)
def test_torch_bound_by_a_star_import_of_a_project_module_is_torch(tmp_path, utils, found):
    (tmp_path / ".git").mkdir()
    (tmp_path / "utils.py").write_text(utils)
    (tmp_path / "model.py").write_text(textwrap.dedent(LOSS).lstrip())
    assert _codes(tmp_path / "model.py", "SFX101") == (["SFX101"] if found else [])


TRAIN_LOOP = """
from modeling.deeplab import *


class Trainer:
    def training(self, loader):
        train_loss = 0.0
        for i, sample in enumerate(loader):
            loss = self.criterion(self.model(sample))
            loss.backward()
            self.writer.add_scalar("train/loss", loss.item(), i)
"""


@pytest.mark.parametrize(("deeplab", "found"), [("import torch\n", True), ("import numpy as np\n", False)])
def test_a_file_that_gets_torch_from_a_star_import_is_torch_code(tmp_path, deeplab, found):
    # pytorch-deeplab-xception's train.py imports no torch of its own: ``loss.item()`` in its
    # loop reads a tensor all the same (the likely view's reads of torch code)
    (tmp_path / ".git").mkdir()
    (tmp_path / "modeling").mkdir()
    (tmp_path / "modeling" / "__init__.py").write_text("")
    (tmp_path / "modeling" / "deeplab.py").write_text(deeplab)
    (tmp_path / "train.py").write_text(textwrap.dedent(TRAIN_LOOP).lstrip())
    assert _codes(tmp_path / "train.py", "SFX105") == (["SFX105"] if found else [])


@pytest.mark.parametrize(("base", "found"), [("import torch\n\n\nclass Template(torch.nn.Module):\n    pass\n", True), ("class Template:\n    pass\n", False)])
def test_a_subclass_of_a_project_module_class_is_torch_code(tmp_path, base, found):
    # OpenPCDet's detectors import no torch: ``class PointPillar(Detector3DTemplate)``, whose
    # ``get_training_loss`` reads ``loss_rpn.item()`` every step
    (tmp_path / ".git").mkdir()
    (tmp_path / "det").mkdir()
    (tmp_path / "det" / "__init__.py").write_text("")
    (tmp_path / "det" / "template.py").write_text(base)
    (tmp_path / "det" / "pillar.py").write_text(
        "from .template import Template\n\n\nclass PointPillar(Template):\n"
        "    def forward(self, batch):\n        return self.get_training_loss()\n\n"
        "    def get_training_loss(self):\n        loss_rpn, tb_dict = self.dense_head.get_loss()\n"
        "        tb_dict = {'loss_rpn': loss_rpn.item(), **tb_dict}\n        return loss_rpn, tb_dict\n"
    )
    assert _codes(tmp_path / "det" / "pillar.py", "SFX105") == (["SFX105"] if found else [])


LAYER = """
import torch.nn as nn
from utils import *


class Layer(nn.Module):
    def forward(self, p, t):
        mask = t.cuda() > 0
        if mask.sum().float() > 0:
            p = p * 2
        return p


def evaluate(model, loader):
    total = 0.0
    for x in loader:
        loss = model(x.cuda()).sum()
        total += loss.item()
    return total
"""


@pytest.mark.parametrize(("utils", "found"), [("import torch\n", True), ("import numpy as np\n", False)])
def test_torch_from_a_star_import_counts_as_torch_code_for_likely_facts_and_fixes(tmp_path, utils, found):
    # Towards-Realtime-MOT's models.py has only `import torch.nn as nn` and `from utils.utils
    # import *`: torch code, so `.cuda()` of an unknown value is a tensor there as in a file
    # that imports torch by name (its `if nM > 0:` was missed); and a fix may write `torch.`
    # where the star import binds that name
    (tmp_path / ".git").mkdir()
    (tmp_path / "utils.py").write_text(utils)
    (tmp_path / "models.py").write_text(textwrap.dedent(LAYER).lstrip())
    assert _codes(tmp_path / "models.py", "SFX206") == ["SFX206"]
    result = CliRunner().invoke(
        cli, ["check", "--no-cache", "--unsafe-fixes", "--select", "SFX302", "-o", "json", "--exit-zero", str(tmp_path / "models.py")]
    )
    fixes = [f["fix"] for f in json.loads(result.stdout)]
    assert len(fixes) == 1 and (fixes[0] is not None) == found
    if found:
        assert "torch.full(" in fixes[0]["edits"][0]["content"]


TRACKER = """
import torch
from models import *


class Tracker:
    def __init__(self, cfg):
        self.model = Darknet(cfg)
        self.model.cuda().eval()

    def update(self, im):
        with torch.no_grad():
            pred = self.model(im)
        return pred[pred[:, 4] > 0.5]
"""


@pytest.mark.parametrize(
    ("models", "module"),
    [
        ("import torch.nn as nn\n\n\nclass Darknet(nn.Module):\n    def forward(self, x):\n        return x\n", True),
        ("class Darknet:\n    def __call__(self, x):\n        return x\n\n    def cuda(self):\n        return self\n", False),
    ],
)
def test_a_class_a_star_import_binds_is_the_project_class_it_defines(tmp_path, models, module):
    # Towards-Realtime-MOT's tracker: `from models import *`, `self.model = Darknet(...)`: its
    # `.cuda()` places a module (no SFX101), and what it returns is a tensor on its device
    (tmp_path / ".git").mkdir()
    (tmp_path / "models.py").write_text(models)
    (tmp_path / "tracker.py").write_text(textwrap.dedent(TRACKER).lstrip())
    codes = _codes(tmp_path / "tracker.py", "SFX101,SFX205")
    assert "SFX101" not in codes and ("SFX205" in codes) == module


@pytest.mark.parametrize(
    ("star", "expected"),
    [
        ("from timm.models import *\n", [None, "safe"]),  # a library's: `len` holds, `range` may not
        ("from models import *\n", [None, None]),  # a project module that binds names it cannot list
    ],
)
def test_a_library_star_import_binds_no_iteration_builtin(tmp_path, star, expected):
    # T2T-ViT's `from timm.models import *`: numpy's and torch's star imports bind `sum`, `max`,
    # even `range`, but no library binds `len`, `enumerate`, `zip`, `iter`, `next`, `isinstance`
    files = {
        "train.py": TRAIN.replace("from models import *\n", star),
        "models/__init__.py": "globals()['len'] = max\n",
    }
    assert _fixes(tmp_path, files) == expected
