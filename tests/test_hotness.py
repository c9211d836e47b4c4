"""Functions called from repeating code in *other* project files are hot (analysis/hotness.py)."""

from __future__ import annotations

import ast
import json
import re
import textwrap
from pathlib import Path

from click.testing import CliRunner

from syncfix.analysis.ast_reading import batch_names, batch_parts
from syncfix.analysis.hotness import batch_param, file_calls, hot_functions
from syncfix.cli import cli
from syncfix.projects import build_index, contexts

NN = '''
import torch


def timestep_embedding(t, dim):
    freqs = torch.exp(torch.arange(dim // 2) * -0.5)
    return torch.cat([t[:, None] * freqs.to(device=t.device)], dim=-1)


def inner(x):
    return helper(x)


def helper(x):
    return x


def never_called(t):
    return torch.arange(4).to(device=t.device)
'''

MODEL = '''
import torch
from .nn import timestep_embedding, inner


class Net(torch.nn.Module):
    def forward(self, x, t):
        return x + timestep_embedding(t, 8) + inner(x)
'''

TEST = '''
from pkg.nn import never_called


def test_it():
    for _ in range(3):
        never_called(None)
'''


def _project(tmp_path: Path) -> Path:
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'p'\n")
    for rel, text in {"pkg/__init__.py": "", "pkg/nn.py": NN, "pkg/model.py": MODEL, "tests/test_nn.py": TEST}.items():
        path = tmp_path / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text).lstrip())
    return tmp_path


def test_fixpoint_over_calls():
    resolve = {"pkg.nn": "pkg.nn", "nn": "pkg.nn", "pkg.model": "pkg.model"}
    files = [
        file_calls("pkg.nn", NN.encode(), ["forward"], resolve),
        file_calls("pkg.model", MODEL.encode(), ["forward"], resolve),
    ]
    hot = hot_functions(files)
    assert hot["pkg.model"] == {"forward"}
    # called from forward in another file, and what that calls in its own file
    assert hot["pkg.nn"] == {"timestep_embedding", "inner", "helper"}


def test_test_files_make_nothing_hot(tmp_path):
    root = _project(tmp_path)
    _, hot = build_index(root)
    assert "never_called" not in hot.get("pkg.nn", frozenset())
    ctx = contexts([str(root / "pkg" / "nn.py")])[str(root / "pkg" / "nn.py")]
    assert {"timestep_embedding", "inner", "helper"} <= ctx.hot
    assert "timestep_embedding" in ctx.fingerprint()  # the results cache keys on it


def test_a_helper_called_from_forward_elsewhere_is_reported(tmp_path, monkeypatch):
    root = _project(tmp_path)
    monkeypatch.chdir(root)
    r = CliRunner().invoke(cli, ["check", "--no-cache", "pkg/nn.py", "-o", "json"])
    lines = {(f["code"], f["location"]["row"]) for f in json.loads(r.stdout)}
    assert ("SFX101", 6) in lines, r.stdout  # the copy in timestep_embedding: runs every forward
    assert not any(row == 18 for _, row in lines)  # never_called: nothing repeats it
    # the same file alone (no project around it) knows nothing of its callers
    alone = tmp_path / "alone"
    alone.mkdir()
    (alone / "nn.py").write_text(textwrap.dedent(NN).lstrip())
    monkeypatch.chdir(alone)
    r = CliRunner().invoke(cli, ["check", "--no-cache", "nn.py", "-o", "json"])
    assert not json.loads(r.stdout)


SAMPLER = '''
import numpy as np


class Sampler:
    def sample(self, n):
        return np.random.choice(n, size=n)

    def update_with_local_losses(self, t, losses):
        return t

    def update(self, x):
        return x
'''

LOOP = '''
class Loop:
    def run_loop(self):
        while True:
            self.sampler.sample(8)
            self.sampler.update_with_local_losses(1, 2)
            self.sampler.update(3)
'''


def _index_of(tmp_path: Path, files: dict[str, str]):
    """The project index of these files (relative path -> text) under ``tmp_path``."""
    for rel, text in files.items():
        path = tmp_path / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return build_index(tmp_path)


def test_methods_called_through_other_objects_resolve_by_a_rare_name():
    resolve = {"pkg.sampler": "pkg.sampler", "pkg.loop": "pkg.loop"}
    files = [
        file_calls("pkg.sampler", SAMPLER.encode(), ["forward"], resolve),
        file_calls("pkg.loop", LOOP.encode(), ["forward"], resolve),
    ]
    hot = hot_functions(files)
    # ``update`` is a name dicts, sets and optimizers have too: not resolved by name
    assert hot["pkg.sampler"] == {"sample", "update_with_local_losses"}


def test_a_name_many_files_define_is_not_resolved():
    resolve = {f"pkg.s{i}": f"pkg.s{i}" for i in range(3)} | {"pkg.loop": "pkg.loop"}
    files = [file_calls(f"pkg.s{i}", SAMPLER.encode(), ["forward"], resolve) for i in range(3)]
    files.append(file_calls("pkg.loop", LOOP.encode(), ["forward"], resolve))
    hot = hot_functions(files)
    assert all(f"pkg.s{i}" not in hot for i in range(3))



DENSE = """
class DenseDetector:
    def forward(self, images):
        return self.forward_training(images)

    def forward_training(self, images):
        raise NotImplementedError

    def inject(self, keys):
        for key in keys:  # a set-up loop over layers: no step
            self.replace(key)

    def replace(self, key):
        pass
"""
RETINA = """
from pkg.dense import DenseDetector


class RetinaNet(DenseDetector):
    def forward_training(self, images):
        return self.losses(images)

    def losses(self, images):
        return images

    def replace(self, key):
        return key
"""
OTHER = """
class Unrelated:
    def forward_training(self, images):
        return self.losses(images)

    def losses(self, images):
        return images
"""


def test_a_self_call_reaches_the_overrides_of_derived_classes_in_other_files():
    """detectron2: ``DenseDetector.forward`` calls ``self.forward_training``, which
    ``RetinaNet`` (another file, derived) overrides; a class that does not derive is not reached,
    nor an override called from a loop that is no step function (peft's set-up loop over layers)."""
    resolve = {m: m for m in ("pkg.dense", "pkg.retina", "pkg.other")}
    files = [
        file_calls("pkg.dense", DENSE.encode(), ["forward"], resolve),
        file_calls("pkg.retina", RETINA.encode(), ["forward"], resolve),
        file_calls("pkg.other", OTHER.encode(), ["forward"], resolve),
    ]
    hot = hot_functions(files)
    assert hot["pkg.retina"] == {"forward_training", "losses"}
    assert "pkg.other" not in hot


_WALK = re.compile(
    r"^(?:(?:enumerate|list|sorted)\()?(?:.+\.(?:(?:named_)?(?:modules|children|parameters|buffers)\(\)|state_dict\(\)\.(?:items|values|keys)\(\))"
    r"|\w*state_dict\.(?:items|values|keys)\(\))\)?$"
)


def _visitor_calls(tree, hot):
    """What ``file_calls`` must find, collected the plain way (recursion over ``ast.iter_fields``),
    resolving each callee as the index does: a call is made in a loop when its innermost loop
    (in its function) does not call ``input()`` on every time round."""
    import ast

    from syncfix.analysis.hotness import FileCalls, _Collector
    from syncfix.analysis.import_names import imports as _imports

    out = FileCalls("m")
    collector = _Collector(out, set(hot), *_imports(tree, "", {})[:3])
    collector.prepare(tree)
    resolve = collector._callee
    made, interactive = [], set()
    sometimes = {ast.If: {"body", "orelse"}, ast.IfExp: {"body", "orelse"}, ast.Try: {"handlers", "orelse"},
                 ast.Match: {"cases"}, ast.For: {"orelse"}, ast.AsyncFor: {"orelse"}, ast.While: {"orelse"}}

    def visit(node, function, loop, every):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            if node.name in hot:
                out.hot_names.add(node.name)
            out.calls.setdefault(node.name, [])
            for stmt in node.body:
                visit(stmt, node.name, None, False)
            return
        one_item = isinstance(getattr(node, "iter", None), (ast.List, ast.Tuple, ast.Set)) and len(node.iter.elts) == 1
        if isinstance(node, (ast.For, ast.AsyncFor, ast.While)) and not one_item:  # one item: runs once
            out.loops = True
            if not (isinstance(node, ast.For) and _WALK.search(ast.unparse(node.iter))):  # over layers
                loop, every = node, True
        if isinstance(node, ast.Assign):
            collector._instance(node)  # ``step = make_step(...)``, ``trainer = Trainer(...)``
        if isinstance(node, ast.Call):
            if isinstance(node.func, ast.Name) and node.func.id == "input" and every:
                interactive.add(loop)
            table = node.func.value if isinstance(node.func, ast.Subscript) else None
            holder = ast.unparse(table) if isinstance(table, (ast.Name, ast.Attribute)) else ""
            if isinstance(node.func, ast.Attribute) and isinstance(node.func.value, ast.Name) and node.func.value.id == "self":
                holder = ast.unparse(node.func)  # ``self.f(...)`` of ``self.f = f``
            for chosen in collector.dispatch.get(holder, []) if holder.count(".") <= 1 else []:
                out.calls.setdefault(function, [])
                made.append((function, chosen, loop))
            callee = resolve(node.func, len(node.args) + len(node.keywords))
            if callee is not None:
                out.calls.setdefault(function, [])
                made.append((function, callee, loop))
            applier = node.func.id if isinstance(node.func, ast.Name) else getattr(node.func, "attr", "")
            hook = isinstance(node.func, ast.Attribute) and node.func.attr.startswith("register_") and node.func.attr.endswith("hook")
            for arg in node.args if applier in ("map", "filter", "partial", "starmap", "multi_apply", "apply", "retry_call") and not hook else ():
                if collector.handed(arg) is not None:
                    out.calls.setdefault(function, [])
                    made.append((function, collector.handed(arg), loop))
        for field, value in ast.iter_fields(node):
            always = every and field not in sometimes.get(type(node), ())
            for i, child in enumerate(value if isinstance(value, list) else [value]):
                if isinstance(child, ast.AST):
                    visit(child, function, loop, always and not (isinstance(node, ast.BoolOp) and i > 0))

    visit(tree, "", None, False)
    for function, callee, loop in made:
        out.calls[function].append((callee, loop is not None and loop not in interactive))
    return out


CHAT = """
def chat(model):
    prepare(model)
    while True:
        line = input("> ")
        answer(model, line)
        for tok in tokens(line):
            show(tok)
    for p in iter(lambda: input(), ""):
        answer(model, p)
    for step in range(3):
        answer(model, step)
    for i in range(9):
        if interactive:
            line = input()
        answer(model, i)
    while True:
        try:
            line = input()
        except EOFError:
            break
        answer(model, line)
    for j in range(2):
        ready = j or input()
        answer(model, j)
"""


def test_file_calls_finds_what_a_plain_visitor_finds():
    import ast

    root = Path(__file__).resolve().parents[1]
    sources = sorted((root / "syncfix").rglob("*.py")) + sorted((root / "tests" / "rules").glob("SFX*/fixtures/*.py"))
    for source in [CHAT.encode(), *(path.read_bytes() for path in sources)]:
        tree = ast.parse(source)
        found, expected = file_calls("m", tree, ("forward", "f"), {}), _visitor_calls(tree, ("forward", "f"))
        assert list(found.calls.items()) == list(expected.calls.items()), source[:200]
        assert (found.loops, found.hot_names) == (expected.loops, expected.hot_names)


def test_calls_in_a_loop_that_waits_for_input_are_not_made_in_a_loop():
    calls = file_calls("m", CHAT.encode(), (), {}).calls["chat"]
    assert [(callee[1], in_loop) for callee, in_loop in calls] == [
        # a loop's header counts as in it (``tokens(line)`` runs once per prompt, but the index
        # takes any part of a loop for its body)
        ("prepare", False), ("input", False), ("answer", False), ("tokens", True), ("show", True),
        ("iter", False), ("input", False), ("answer", False), ("range", True), ("answer", True),
        # input() only when a flag says so (gpt-fast's benchmark loop), or not surely: repeats
        ("range", True), ("input", True), ("answer", True),
        ("input", False), ("answer", False),  # under ``try``: every time round
        ("range", True), ("input", True), ("answer", True),
    ]


SOLVER = """
class StandardSolver:
    def run_epoch(self, loader):
        for idx, batch in enumerate(self.log_progress(loader)):
            metrics = self.run_step(idx, batch)

    def run_step(self, idx, batch):
        raise NotImplementedError

    def build(self, names):
        for name in names:  # a loop over names: no step
            self.make(name)

    def make(self, name):
        pass
"""
MUSICGEN = """
from pkg.base import StandardSolver


class MusicGenSolver(StandardSolver):
    def run_step(self, idx, batch):
        return self.loss(batch)

    def loss(self, batch):
        return batch

    def make(self, name):
        return name
"""


def test_a_self_call_in_a_loop_over_batches_reaches_overrides_in_other_files():
    """audiocraft: ``StandardSolver`` calls ``self.run_step`` for each batch; ``MusicGenSolver``
    (another file) overrides it, so its step runs there; a loop over names is no step."""
    resolve = {m: m for m in ("pkg.base", "pkg.musicgen")}
    files = [
        file_calls("pkg.base", SOLVER.encode(), ["forward"], resolve),
        file_calls("pkg.musicgen", MUSICGEN.encode(), ["forward"], resolve),
    ]
    hot = hot_functions(files)
    assert hot["pkg.musicgen"] == {"run_step", "loss"}
    assert {"run_step", "make"} <= hot["pkg.base"]


def test_a_name_a_star_import_binds_resolves_to_the_module_that_defines_it():
    """a-PyTorch-Tutorial-to-Image-Captioning: train.py does ``from utils import *`` and calls
    ``accuracy(...)`` every step; the ``.item()`` in utils.accuracy repeats."""
    resolve = {m: m for m in ("utils", "train", "other")}
    utils = (
        "def accuracy(s, t):\n    return s.eq(t).sum().item()\n\ndef _private(x):\n    return x\n"
    )
    other = "def accuracy(s, t):\n    return 0\n"
    train = (
        "from other import *\nfrom utils import *\n\n"
        "def main(loader):\n    for s, t in loader:\n        accuracy(s, t)\n        _private(s)\n"
    )
    files = [
        file_calls(m, src.encode(), ["forward"], resolve)
        for m, src in (("utils", utils), ("other", other), ("train", train))
    ]
    hot = hot_functions(files)
    # the last star import that defines the name binds it; an underscored name is not exported
    assert hot.get("utils") == {"accuracy"} and not hot.get("other")
    # a function of the module's own is its own
    own = train + "\ndef accuracy(s, t):\n    return s\n"
    files[2] = file_calls("train", own.encode(), ["forward"], resolve)
    assert not hot_functions(files).get("utils")


def test_a_registered_hook_runs_every_pass():
    # pytorch-grad-cam: `layer.register_forward_hook(self.save_activation)`; the hook copies each
    # activation to the host on every forward
    src = textwrap.dedent(
        """
        import functools

        import torch
        from .hooks import log_grad

        class Recorder:
            def __init__(self, layers, x: torch.Tensor):
                for layer in layers:
                    layer.register_forward_hook(self.save_activation)
                x.register_hook(log_grad)
                x.register_hook(lambda g: g * 2)
                # smoothquant's calibration: one hook per layer, its name bound by `partial`
                for name, layer in x.named_modules():
                    layer.register_forward_hook(functools.partial(self.stat_hook, name=name))

            def save_activation(self, module, input, output):
                self.out = output.cpu()

            def stat_hook(self, module, input, output, name):
                self.stats[name] = output.abs().max().item()

            def unused(self):
                pass
        """
    ).encode()
    files = [
        file_calls("pkg.rec", src, ["forward"], {"pkg.hooks": "pkg.hooks", ".hooks": "pkg.hooks"}),
        file_calls("pkg.hooks", b"def log_grad(g):\n    print(g.norm().item())\n", ["forward"], {}),
    ]
    hot = hot_functions(files)
    assert hot["pkg.rec"] == {"save_activation", "stat_hook"}
    assert "log_grad" in hot["pkg.hooks"]


CREATOR = '''
import torch


class ProposalCreator:
    def __call__(self, loc, score):
        keep = torch.arange(4)
        return torch.from_numpy(loc).cuda()[keep]


class Unused:
    def helper(self):
        return 1
'''

RPN = '''
import torch
from .creator_tool import ProposalCreator, Unused


class RegionProposalNetwork(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.proposal_layer = ProposalCreator()
        self.other = Unused()
        self.scale = 2

    def forward(self, loc, score):
        return self.proposal_layer(loc, score)
'''


def test_an_object_called_through_an_attribute_runs_its_call_method():
    # faster-rcnn: ``self.proposal_layer = ProposalCreator(self)``, then
    # ``self.proposal_layer(...)`` in ``forward``: ``ProposalCreator.__call__`` runs every step
    resolve = {"pkg.creator_tool": "pkg.creator_tool", "pkg.rpn": "pkg.rpn"}
    files = [
        file_calls("pkg.creator_tool", CREATOR.encode(), ["forward"], resolve),
        file_calls("pkg.rpn", RPN.encode(), ["forward"], resolve),
    ]
    assert files[1].instances == {"proposal_layer": ("pkg.creator_tool", "ProposalCreator"), "other": ("pkg.creator_tool", "Unused")}
    hot = hot_functions(files)
    assert hot["pkg.creator_tool"] == {"__call__"}
    # an attribute set to another object runs nothing of this file's
    files[1] = file_calls("pkg.rpn", RPN.replace("self.proposal_layer(", "self.scale(").encode(), ["forward"], resolve)
    assert "pkg.creator_tool" not in hot_functions(files)


LOSS = """\
class RPNLossComputation:
    def __call__(self, anchors, targets):
        return anchors


class Unrelated:
    def __call__(self, x):
        return x


def make_rpn_loss_evaluator(cfg):
    evaluator = RPNLossComputation()
    return evaluator


def make_other(cfg):
    return cfg.build()
"""

RPN_HEAD = """\
from pkg.loss import make_rpn_loss_evaluator, make_other


class RPN:
    def __init__(self, cfg):
        loss_evaluator = make_rpn_loss_evaluator(cfg)
        self.loss_evaluator = loss_evaluator
        self.other = make_other(cfg)

    def forward(self, anchors, targets):
        self.other(anchors)
        return self.loss_evaluator(anchors, targets)
"""


def test_an_object_a_factory_function_returns_runs_its_call_method_where_called_through_an_attribute():
    # maskrcnn-benchmark: ``loss_evaluator = make_rpn_loss_evaluator(cfg, coder)``, kept on
    # ``self`` and called in ``forward``: ``RPNLossComputation.__call__`` runs every step; a
    # factory whose result syncfix cannot name runs nothing of the project
    resolve = {"pkg.loss": "pkg.loss", "pkg.rpn": "pkg.rpn"}
    files = [
        file_calls("pkg.loss", LOSS.encode(), ["forward"], resolve),
        file_calls("pkg.rpn", RPN_HEAD.encode(), ["forward"], resolve),
    ]
    assert files[0].factories == {"make_rpn_loss_evaluator": ("", "RPNLossComputation")}
    assert hot_functions(files)["pkg.loss"] == {"__call__"}
    # without the factory's class, nothing of pkg.loss is hot
    files[0] = file_calls("pkg.loss", LOSS.replace("evaluator = RPNLossComputation()", "evaluator = cfg.build()").encode(), ["forward"], resolve)
    assert "pkg.loss" not in hot_functions(files)


def test_a_function_a_package_re_exports_is_hot_where_called_through_it(tmp_path):
    # gpt-neox's ``mpu.broadcast_data(...)`` every micro-batch: ``megatron/mpu/__init__.py``
    # binds it with ``from .data import broadcast_data`` (relative to the package itself)
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'p'\n")
    files = {
        "top/__init__.py": "",
        "top/mpu/__init__.py": "from .data import broadcast_data\n",
        "top/mpu/data.py": "def broadcast_data(keys, data):\n    return data\n\n\ndef unused(x):\n    return x\n",
        "top/training.py": (
            "from top import mpu\nfrom top.mpu import broadcast_data as bd\n\n\n"
            "def train(loader, keys):\n    for data in loader:\n        mpu.broadcast_data(keys, data)\n\n\n"
            "def evaluate(loader, keys):\n    for data in loader:\n        bd(keys, data)\n"
        ),
    }
    _, hot = _index_of(tmp_path, files)
    assert hot.get("top.mpu.data") == {"broadcast_data"}


def test_a_call_through_an_object_reaches_methods_only():
    # 2DGS's viewer script defines ``def view(...)`` at module level; ``x.view(...)`` on tensors
    # in the training loop runs Tensor.view, never that function
    resolve = {m: m for m in ("viewer", "cameras", "train")}
    viewer = "def view(dataset, pipe):\n    return dataset\n"
    cameras = "class Camera:\n    def project(self, p):\n        return p\n"
    train = (
        "def train(loader, cam):\n    for x in loader:\n        y = x.view(-1)\n        cam.project(y)\n"
    )
    files = [file_calls(m, src.encode(), ["forward"], resolve) for m, src in (("viewer", viewer), ("cameras", cameras), ("train", train))]
    hot = hot_functions(files)
    assert "viewer" not in hot and hot.get("cameras") == {"project"}


def test_a_star_import_of_a_package_reaches_what_its_init_imports(tmp_path):
    # fast-reid: ``from fastreid.modeling.losses import *`` in baseline.py, whose package
    # ``__init__`` binds ``cross_entropy_loss`` by ``from .cross_entroy_loss import ...``
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'p'\n")
    files = {
        "top/__init__.py": "",
        "top/losses/__init__.py": "from .ce import cross_entropy_loss\nfrom .tri import *\n",
        "top/losses/ce.py": "def cross_entropy_loss(x):\n    return x\n\n\ndef unused(x):\n    return x\n",
        "top/losses/tri.py": "def triplet_loss(x):\n    return x\n",
        "top/baseline.py": (
            "from top.losses import *\n\n\n"
            "class Baseline:\n    def forward(self, x):\n        return cross_entropy_loss(x) + triplet_loss(x)\n"
        ),
    }
    _, hot = _index_of(tmp_path, files)
    assert hot.get("top.losses.ce") == {"cross_entropy_loss"}
    assert hot.get("top.losses.tri") == {"triplet_loss"}


def test_a_method_a_base_and_its_subclasses_define_resolves_to_all_of_them():
    # OpenNMT: ``self.decode_strategy.advance(...)`` per decoding step; DecodeStrategy, BeamSearch
    # and GreedySearch each define ``advance`` in a file of their own
    resolve = {m: m for m in ("base", "beam", "greedy", "loop", "other")}
    base = "class DecodeStrategy:\n    def advance(self, x):\n        raise NotImplementedError\n"
    beam = "from base import DecodeStrategy\n\nclass BeamSearch(DecodeStrategy):\n    def advance(self, x):\n        return x\n"
    greedy = "from base import DecodeStrategy\n\nclass GreedySearch(DecodeStrategy):\n    def advance(self, x):\n        return x\n"
    loop = "def translate(strategy, n):\n    for _ in range(n):\n        strategy.advance(1)\n"
    other = "class Unrelated:\n    def advance(self, x):\n        return x\n"
    sources = {"base": base, "beam": beam, "greedy": greedy, "loop": loop}
    files = [file_calls(m, src.encode(), ["forward"], resolve) for m, src in sources.items()]
    hot = hot_functions(files)
    assert all(hot.get(m) == {"advance"} for m in ("base", "beam", "greedy"))
    # an unrelated class of the same method name: too common to resolve by name
    files.append(file_calls("other", other.encode(), ["forward"], resolve))
    assert not hot_functions(files).get("beam")


def test_a_model_zoo_of_overrides_resolves_to_all_of_them_unless_torch_objects_share_the_name():
    # PyTorch-VAE: ``self.model.loss_function(...)`` in ``training_step``; a base class and
    # twenty-odd models override it, each in a file of its own. A distribution's ``q.sample()``
    # in a loop is no model's ``sample``, however many models define one.
    models = [f"m{i}" for i in range(10)]
    resolve = {m: m for m in ("base", "experiment", *models)}
    base = (
        "class BaseVAE:\n    def loss_function(self, *a):\n        raise NotImplementedError\n\n"
        "    def sample(self, n):\n        raise NotImplementedError\n"
    )
    model = (
        "from base import BaseVAE\n\nclass VAE(BaseVAE):\n    def loss_function(self, *a):\n"
        "        return a\n\n    def sample(self, n):\n        return n\n"
    )
    experiment = (
        "class Experiment:\n    def training_step(self, batch, q):\n"
        "        for _ in range(3):\n            q.sample()\n"
        "        return self.model.loss_function(batch)\n"
    )
    sources = {"base": base, "experiment": experiment, **{m: model for m in models}}
    hot = hot_functions([file_calls(m, src.encode(), ["training_step"], resolve) for m, src in sources.items()])
    assert all(hot.get(m) == {"loss_function"} for m in ("base", *models))
    # called in a loop that is not over batches (fast-reid's evaluators, once per test set):
    # too common a name to resolve to twenty-odd classes
    sources["experiment"] = "def test_all(models, batch):\n    for m in models:\n        m.loss_function(batch)\n"
    hot = hot_functions([file_calls(m, src.encode(), ["training_step"], resolve) for m, src in sources.items()])
    assert not any(hot.get(m) for m in ("base", *models))


def test_a_logger_method_called_with_a_key_and_a_value_resolves_by_name():
    # pytorch_sac: ``logger.log("train/batch_reward", reward.mean(), step)`` in the agent's
    # ``update``, whose ``Logger.log`` reads ``value.item()``; a tensor's ``p.log()`` and
    # ``math.log(x, 2)`` do not reach it
    resolve = {m: m for m in ("logger", "agent")}
    logger = (
        "import torch\n\n\nclass Logger:\n    def log(self, key, value, step, n=1):\n"
        "        if type(value) == torch.Tensor:\n            value = value.item()\n        return value\n"
    )
    agent = "class Agent:\n    def update(self, batch, logger, step):\n        logger.log('train/loss', batch.mean(), step)\n"
    tensor_log = "class Agent:\n    def update(self, p):\n        return p.log()\n"
    math_log = "import math\n\n\nclass Agent:\n    def update(self, p):\n        return math.log(p, 2)\n"
    for caller, reached in ((agent, True), (tensor_log, False), (math_log, False)):
        files = [file_calls(m, src.encode(), ["update"], resolve) for m, src in (("logger", logger), ("agent", caller))]
        assert ("log" in hot_functions(files).get("logger", set())) is reached, caller


def test_a_common_method_name_resolves_to_the_class_named_like_the_receiver():
    # pytorch_sac: ``Logger.log`` in logger.py, and an actor's and a critic's ``log(logger,
    # step)`` in files of their own; ``logger.log(key, value, step)`` reaches the logger's only
    resolve = {m: m for m in ("logger", "actor", "critic", "agent")}
    logger = "class MetersGroup:\n    def log(self, key, value, n=1):\n        pass\n\n\nclass Logger:\n    def log(self, key, value, step):\n        pass\n"
    actor = "class DiagGaussianActor:\n    def log(self, logger, step):\n        pass\n"
    critic = "class Critic:\n    def log(self, logger, step):\n        pass\n"
    agent = "class Agent:\n    def update(self, batch, logger, step):\n        logger.log('train/loss', batch.mean(), step)\n"
    sources = {"logger": logger, "actor": actor, "critic": critic, "agent": agent}
    files = [file_calls(m, src.encode(), ["update"], resolve) for m, src in sources.items()]
    hot = hot_functions(files)
    assert "log" in hot.get("logger", set()) and "log" not in hot.get("actor", set()) | hot.get("critic", set())
    sources["agent"] += "        self.critic.log(logger, step)\n"
    hot = hot_functions([file_calls(m, src.encode(), ["update"], resolve) for m, src in sources.items()])
    assert "log" in hot.get("critic", set()) and "log" not in hot.get("actor", set())


ONCE_PER_PASS = """
def main(args, steps, batches):
    for epoch in range(args.start_epoch, args.epochs):
        train(epoch)
        if epoch == args.start_epoch:
            sanity_check(epoch)
        for i, batch in enumerate(batches):
            if i == 0:
                show(batch)
        for step in range(steps):
            step = step + 1
            if step == 3:
                rebound(step)
        for j in range(steps):
            limit = j * 2
            if j == limit:
                moving(j)



def bench(args, steps, batches):
    for k in tqdm(range(steps)):
        if k == args.warm_up:
            warmed(k)
    for x in batches:
        returned(x)
        return x
"""


def test_a_call_under_an_if_on_the_loop_counter_runs_once_per_pass():
    # simsiam's ``if epoch == args.start_epoch: sanity_check(...)``: once, not every epoch; under
    # ``if i == 0:`` of an inner loop, once per pass of the outer one. Not where the body rebinds
    # the counter, or where the value compared with changes in the loop
    calls = file_calls("m", ONCE_PER_PASS.encode(), (), {}).calls["main"]
    in_loop = {callee[1]: made for callee, made in calls}
    assert in_loop["train"] and not in_loop["sanity_check"]
    assert in_loop["show"]  # the epoch loop still repeats it
    assert in_loop["rebound"] and in_loop["moving"]
    # hiera's benchmark, `if i == warm_up:` under a progress bar; a loop that returns at its end
    in_bench = {callee[1]: made for callee, made in file_calls("m", ONCE_PER_PASS.encode(), (), {}).calls["bench"]}
    assert not in_bench["warmed"] and not in_bench["returned"]


def test_a_walk_over_a_models_layers_makes_nothing_hot_by_itself():
    # nanodet's conversion calls each layer's ``repvgg_convert`` once, from a set-up function
    convert = '''
from .layers import fuse, quantize


def convert(model):
    for name, module in model.named_modules():
        fuse(module)


def train(model):
    for step in range(10):
        for p in model.parameters():
            quantize(p)
'''
    layers = "def fuse(m):\n    return m\n\n\ndef quantize(p):\n    return p\n"
    resolve = {"pkg.convert": "pkg.convert", "pkg.layers": "pkg.layers"}
    files = [
        file_calls("pkg.convert", convert.encode(), ["forward"], resolve),
        file_calls("pkg.layers", layers.encode(), ["forward"], resolve),
    ]
    assert hot_functions(files).get("pkg.layers") == {"quantize"}


def test_a_method_of_a_class_built_in_the_loop_runs_in_it():
    # muzero's self-play: ``MCTS(self.config).run(...)`` once per move, whose own loop calls
    # the network; an imported project class's method the same way
    play = """
from .search import Planner


class MCTS:
    def run(self, model):
        return model


def play(config, model):
    while True:
        MCTS(config).run(model)
        Planner(config).plan(model)
        Tokenizer(config).encode(model)
"""
    search = "class Planner:\n    def plan(self, model):\n        return model\n"
    resolve = {"pkg.play": "pkg.play", "pkg.search": "pkg.search"}
    files = [
        file_calls("pkg.play", play.encode(), ["forward"], resolve),
        file_calls("pkg.search", search.encode(), ["forward"], resolve),
    ]
    hot = hot_functions(files)
    assert "run" in hot["pkg.play"]
    assert "plan" in hot["pkg.search"]


def test_a_function_a_factory_returns_runs_where_its_result_is_called():
    # score_sde's ``train_step_fn = losses.get_step_fn(...)`` and BigGAN's
    # ``train = train_fns.GAN_training_function(...)``, each called once per step
    run = """
from . import fns


def main(loader):
    train = fns.make_train(3)
    evaluate = fns.make_eval(3)
    for batch in loader:
        train(batch)
    evaluate(loader)
"""
    fns = """
def make_train(n):
    def train(x):
        return read(x)
    return train


def make_eval(n):
    def evaluate(x):
        return x
    return evaluate


def read(x):
    return x
"""
    resolve = {"pkg.run": "pkg.run", "pkg.fns": "pkg.fns", "pkg": "pkg"}
    files = [
        file_calls("pkg.run", run.encode(), ["forward"], resolve, package="pkg"),
        file_calls("pkg.fns", fns.encode(), ["forward"], resolve, package="pkg"),
    ]
    hot = hot_functions(files)
    assert {"train", "read"} <= hot["pkg.fns"]
    assert "evaluate" not in hot["pkg.fns"]


def test_a_function_handed_to_a_call_runs_where_that_call_does():
    # nanodet's ``multi_apply(self.loss_single, cls_scores, ...)`` in its head's loss, every step
    head = """
from functools import partial


def multi_apply(func, *args):
    return tuple(map(func, *args))


def per_image(x):
    return x


class Head:
    def loss(self, scores):
        multi_apply(self.loss_single, scores)
        record(self.unused)  # handed as data, not applied
        return list(map(partial(per_image), scores))

    def loss_single(self, score):
        return score

    def unused(self, score):
        return score


def train(loader, head):
    for batch in loader:
        head.loss(batch)
"""
    hot = hot_functions([file_calls("pkg.head", head.encode(), ["forward"], {"pkg.head": "pkg.head"})])
    assert {"loss", "loss_single", "per_image", "multi_apply"} <= hot["pkg.head"]
    assert "unused" not in hot["pkg.head"]


def test_a_method_of_a_built_object_handed_to_a_call_runs_where_that_call_does():
    # lightweight-gan's ``while ...: retry_call(model.train, tries=3, ...)`` of ``model =
    # Trainer(...)`` (a class of another file): every step runs ``Trainer.train``
    trainer = """
class Trainer:
    def train(self):
        self.step()

    def step(self):
        pass

    def save(self):
        pass
"""
    cli = """
from retry.api import retry_call
from pkg.trainer import Trainer


def run(steps):
    model = Trainer()
    while model.steps < steps:
        retry_call(model.train, tries=3)
    record(model.save)  # handed as data, not applied
"""
    resolve = {"pkg.trainer": "pkg.trainer", "pkg.cli": "pkg.cli"}
    files = [
        file_calls("pkg.trainer", trainer.encode(), ["forward"], resolve),
        file_calls("pkg.cli", cli.encode(), ["forward"], resolve),
    ]
    hot = hot_functions(files)
    assert {"train", "step"} <= hot["pkg.trainer"]
    assert "save" not in hot["pkg.trainer"]


def test_the_functions_a_dict_holds_run_where_it_is_indexed_and_called():
    # DETR's ``SetCriterion.get_loss``: ``loss_map = {'labels': self.loss_labels, ...}`` then
    # ``loss_map[loss](outputs, ...)``, called from ``forward`` each step; a dict that also holds
    # data is no table of functions
    criterion = """
class SetCriterion:
    def loss_labels(self, outputs):
        return outputs

    def loss_boxes(self, outputs):
        return outputs

    def loss_kept(self, outputs):
        return outputs

    def get_loss(self, loss, outputs):
        loss_map = {"labels": self.loss_labels, "boxes": self.loss_boxes}
        mixed = {"kept": self.loss_kept, "scale": 2}
        mixed["kept"](outputs)
        return loss_map[loss](outputs)

    def forward(self, outputs):
        return [self.get_loss(k, outputs) for k in ("labels", "boxes")]
"""
    hot = hot_functions([file_calls("pkg.crit", criterion.encode(), ["forward"], {"pkg.crit": "pkg.crit"})])
    assert {"forward", "get_loss", "loss_labels", "loss_boxes"} <= hot["pkg.crit"]
    assert "loss_kept" not in hot["pkg.crit"]


MASKING = """
import torch


class CausalMask:
    def __init__(self, b, n, device="cpu"):
        self.mask = torch.ones(b, n, n, dtype=torch.bool).triu(1).to(device)


class Config:
    def __init__(self, n):
        self.n = n
"""

ATTENTION = """
from torch import nn
from .masking import CausalMask, Config


class Attention(nn.Module):
    def __init__(self):
        super().__init__()
        self.config = Config(4)
        self.blocks = []
        for i in range(3):  # set-up: a loop, yet no step
            self.blocks.append(Config(i))

    def forward(self, q):
        return q.masked_fill(CausalMask(q.shape[0], q.shape[1], device=q.device).mask, 0)
"""


def test_a_class_made_where_code_repeats_runs_its_own_init_each_time(tmp_path):
    """Autoformer's masks are made in each forward: that class's ``__init__`` is hot, named with
    its class (another class of the file, made at set-up, is not, even in a loop there)."""
    resolve = {"pkg.masking": "pkg.masking", "pkg.attention": "pkg.attention"}
    files = [
        file_calls("pkg.masking", MASKING.encode(), ["forward"], resolve),
        file_calls("pkg.attention", ATTENTION.encode(), ["forward"], resolve),
    ]
    hot = hot_functions(files)
    assert hot["pkg.masking"] == {"CausalMask.__init__"}
    assert "__init__" not in hot.get("pkg.attention", set())
    root = tmp_path / "proj"
    (root / "pkg").mkdir(parents=True)
    (root / "pkg" / "__init__.py").write_text("")
    (root / "pkg" / "masking.py").write_text(MASKING)
    (root / "pkg" / "attention.py").write_text(ATTENTION)
    (root / "pyproject.toml").write_text("")
    out = CliRunner().invoke(cli, ["check", str(root), "--no-cache", "-o", "json"]).stdout
    assert [(f["filename"].rsplit("/", 1)[-1], f["location"]["row"], f["code"]) for f in json.loads(out)] == [
        ("masking.py", 7, "SFX101")
    ]


FOCAL = """
import torch


def _neg_loss(pred, gt):
    return (torch.log(pred) * gt).sum()


def unused(pred):
    return pred


class FocalLoss(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.neg_loss = _neg_loss
        self.other = unused

    def forward(self, out, target):
        return self.neg_loss(out, target)
"""


def test_a_function_bound_to_an_attribute_runs_where_the_attribute_is_called():
    """FairMOT's ``self.neg_loss = _neg_loss``, called in ``forward``: the function is hot (the
    one bound to an attribute nothing calls is not)."""
    hot = hot_functions([file_calls("pkg.losses", FOCAL.encode(), ["forward"], {"pkg.losses": "pkg.losses"})])
    assert "_neg_loss" in hot["pkg.losses"] and "unused" not in hot["pkg.losses"]


def test_a_function_handed_to_a_parameter_its_callee_calls_runs_where_that_call_does():
    # few-shot's ``fit(..., fit_function=proto_net_episode)`` (another file), whose ``fit``
    # calls ``fit_function`` for each batch; its default (``gradient_step``) too
    train = """
def gradient_step(model, x, y):
    return model(x)


def fit(model, loader, fit_function=gradient_step, eval_fn=None, **kwargs):
    for x, y in loader:
        fit_function(model, x, y)
    eval_fn(model)


class Trainer:
    def run(self, loader, step):
        for batch in loader:
            step(batch)
"""
    experiment = """
from pkg.train import Trainer, fit


def episode(model, x, y):
    return model(x)


def evaluate(model):
    return model


def one_step(batch):
    return batch


def recorded(batch):
    return batch


def main():
    fit(None, [], fit_function=episode, eval_fn=evaluate)
    Trainer().run([], one_step)
    record(recorded)
"""
    resolve = {"pkg.train": "pkg.train", "pkg.exp": "pkg.exp"}
    files = [file_calls(m, src.encode(), ["forward"], resolve) for m, src in (("pkg.train", train), ("pkg.exp", experiment))]
    hot = hot_functions(files)
    assert {"episode", "one_step"} <= hot["pkg.exp"]
    assert "gradient_step" in hot["pkg.train"]
    # called once by ``fit``, which runs once; handed as data; never called
    assert not {"evaluate", "recorded", "main"} & hot["pkg.exp"]
    # ``fit`` called from a loop: what it calls once each time runs every time round too
    looped = experiment.replace("    fit(None, [], fit", "    for _ in range(9):\n        fit(None, [], fit")
    files[1] = file_calls("pkg.exp", looped.encode(), ["forward"], resolve)
    assert "evaluate" in hot_functions(files)["pkg.exp"]


def test_calling_an_instance_of_a_project_class_runs_its_call_method():
    # glide's ``super().p_mean_variance(self._wrap_model(model), ...)``, whose callee calls its
    # ``model`` in each sampling step: ``_WrappedModel.__call__`` runs there; and an instance
    # built then called in a loop (``m = _WrappedModel(...); m(x)``)
    diffusion = """
class GaussianDiffusion:
    def p_mean_variance(self, model, x, t):
        return model(x, t)

    def p_sample_loop(self, model, x):
        for t in range(1000):
            x = self.p_mean_variance(model, x, t)
        return x
"""
    respace = """
from pkg.diffusion import GaussianDiffusion


class SpacedDiffusion(GaussianDiffusion):
    def p_mean_variance(self, model, *args):
        return super().p_mean_variance(self._wrap_model(model), *args)

    def _wrap_model(self, model):
        if isinstance(model, _WrappedModel):
            return model
        return _WrappedModel(model)


class _WrappedModel:
    def __init__(self, model):
        self.model = model

    def __call__(self, x, ts):
        return self.model(x, ts)
"""
    resolve = {"pkg.diffusion": "pkg.diffusion", "pkg.respace": "pkg.respace"}
    files = [file_calls(m, src.encode(), ["forward"], resolve) for m, src in (("pkg.diffusion", diffusion), ("pkg.respace", respace))]
    assert "__call__" in hot_functions(files).get("pkg.respace", set())
    looped = "\nclass Wrapped:\n    def __call__(self, x):\n        return x\n\n\ndef run(xs):\n    for x in xs:\n        m = Wrapped()\n        m(x)\n"
    assert "__call__" in hot_functions([file_calls("pkg.loop", looped.encode(), ["forward"], {})])["pkg.loop"]
    once = looped.replace("    for x in xs:\n        m = Wrapped()\n        m(x)\n", "    m = Wrapped()\n    m(xs)\n")
    assert "__call__" not in hot_functions([file_calls("pkg.loop", once.encode(), ["forward"], {})]).get("pkg.loop", set())
    # timm's ``mixup_fn = Mixup(...)`` handed to ``train_one_epoch``, which calls it per batch
    handed = (
        "\nclass Mixup:\n    def __call__(self, x):\n        return x\n\n\n"
        "def train_one_epoch(loader, mixup_fn=None):\n    for x in loader:\n        x = mixup_fn(x)\n\n\n"
        "def main(loader):\n    mixup_fn = Mixup()\n    train_one_epoch(loader, mixup_fn=mixup_fn)\n"
    )
    assert "__call__" in hot_functions([file_calls("pkg.timm", handed.encode(), ["forward"], {})])["pkg.timm"]
    # the class imported through a package that re-exports it (`from timm.data import Mixup`):
    # its defining module's `__call__`
    resolve = {"timm.data": "timm.data", "timm.data.mixup": "timm.data.mixup", "train": "train"}
    package = "from .mixup import Mixup\n"
    mixup = "class Mixup:\n    def __call__(self, x):\n        return self._mix(x)\n\n    def _mix(self, x):\n        return x\n"
    train = "from timm.data import Mixup\n" + handed[handed.index("def train_one_epoch"):]
    files = [
        file_calls("timm.data", package.encode(), ["forward"], resolve, package="timm.data"),
        file_calls("timm.data.mixup", mixup.encode(), ["forward"], resolve),
        file_calls("train", train.encode(), ["forward"], resolve),
    ]
    assert {"__call__", "_mix"} <= hot_functions(files)["timm.data.mixup"]


FEEDER = """
class {name}Model:
    def feed_data(self, data):
        self.lq = data["lq"]

    def validation(self, loader):
        return loader

    def log_step(self, step):
        return step

    def weighted_loss(self, scores, labels):
        return scores
"""
TRAINER = """
def main(model, prefetcher, val_loaders, loader, device):
    train_data = prefetcher.next()
    while train_data is not None:
        model.feed_data(train_data)
        train_data = prefetcher.next()
    for scores, labels in loader:
        labels = labels.to(device)
        model.weighted_loss(scores, labels)
    for val_loader in val_loaders:
        model.validation(val_loader)
    for i, batch in enumerate(loader):
        model.log_step(i)
"""


def test_a_method_handed_a_loops_batch_through_an_object_is_hot_in_every_class_that_defines_it():
    # BasicSR's train.py: `while train_data is not None: model.feed_data(train_data)`, where five
    # model classes (not all one family) define `feed_data`: each runs every step, and its `data`
    # is a loader's batch (a likely fact); a loader handed on, or a loop's count, is no batch
    modules = [f"pkg.m{i}" for i in range(4)]
    resolve = {m: m for m in modules} | {"pkg.train": "pkg.train"}
    files = [file_calls(m, FEEDER.format(name=f"M{i}").encode(), ["forward"], resolve) for i, m in enumerate(modules)]
    files.append(file_calls("pkg.train", TRAINER.encode(), ["forward"], resolve))
    hot = hot_functions(files)
    for m in modules:
        assert {"feed_data", batch_param("feed_data", 0)} <= hot[m]
        assert not {batch_param("validation", 0), batch_param("log_step", 0)} & hot[m]
        # benchmarking-gnns' `model.loss(scores, labels)`: each step, with the labels' device copy
        assert "weighted_loss" in hot[m] and batch_param("weighted_loss", 1) not in hot[m]


def test_the_parts_of_a_batch_are_names_bound_only_to_its_items_or_their_slices():
    loop = ast.parse(
        "while train_data is not None:\n"
        "    lq = train_data['lq']\n    gt = train_data['gt']\n    lq = lq[indices]\n    gt = gt[:, :, 0:8]\n"
        "    mask = make_mask(gt)\n    pred = model(lq)[0]\n    n = train_data['n']\n    n += 1\n"
        "    train_data = prefetcher.next()\n"
    ).body[0]
    assert isinstance(loop, ast.While)
    assert batch_parts(loop, batch_names(loop)) == {"lq", "gt"}


def test_only_a_batch_name_a_loop_over_batches_binds_is_a_batch():
    loops = {
        "while train_data is not None:\n    pass\n": {"train_data"},
        "while True:\n    pass\n": set(),
        "for x, y in train_loader:\n    pass\n": {"x", "y"},
        "for i, batch in enumerate(loader):\n    pass\n": {"batch"},
        "for val_loader in val_loaders:\n    pass\n": set(),
        "for layer in self.layers:\n    pass\n": set(),
        # benchmarking-gnns: the label a call gets is the device copy, no longer the loader's
        "for x, labels in loader:\n    labels = labels.to(device)\n    model.loss(x, labels)\n": {"x"},
        "while batch is not None:\n    model.step(batch)\n    batch = prefetcher.next()\n": {"batch"},
    }
    for text, names in loops.items():
        assert batch_names(ast.parse(text).body[0]) == names, text


def test_a_method_of_objects_a_file_builds_from_a_class_resolves_by_that_class_name():
    # gptq: `gptq[name] = GPTQ(layer)`, then `gptq[name].fasterquant()` in the layer loop, with
    # three classes defining `fasterquant` (two named GPTQ): the GPTQ ones run, not TrueOBS's
    algo = "class {cls}:\n    def fasterquant(self):\n        return 1\n"
    main = (
        "from algo import GPTQ\n\n\ndef run(layers):\n    for layer in layers:\n        gptq = {}\n"
        "        for name in layer:\n            gptq[name] = GPTQ(layer[name])\n"
        "        for name in gptq:\n            gptq[name].fasterquant()\n"
        "        q = GPTQ(layer)\n        q.fasterquant()\n"
    )
    sources = {"algo": algo.format(cls="GPTQ"), "zs.gptq": algo.format(cls="GPTQ"), "zs.obs": algo.format(cls="TrueOBS")}
    resolve = {m: m for m in [*sources, "main"]}
    files = [file_calls(m, src.encode(), ["forward"], resolve) for m, src in sources.items()]
    files.append(file_calls("main", main.encode(), ["forward"], resolve))
    hot = hot_functions(files)
    assert "fasterquant" in hot.get("algo", set()) and "fasterquant" in hot.get("zs.gptq", set())
    assert "fasterquant" not in hot.get("zs.obs", set())
