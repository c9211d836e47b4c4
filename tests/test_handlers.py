"""A fix that stops or moves a wait is not given where a ``try`` (or ``suppress``) around it, or
around a call of its function, would see the error that wait surfaces (an earlier kernel's
fault is raised at the next sync); SFX103, whose finding is no wait, is not held back."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from syncfix import check_code
from syncfix.cli import cli

BRANCH = '''
import torch


@torch.no_grad()
def ema_scale(steps: int):
    x = torch.randn(64, device="cuda")
    scale = torch.ones((), device="cuda")
    for _ in range(steps):
        m = x.abs().mean()
        {open}
            if m > 0.5:
                scale = scale * 0.5
            else:
                scale = scale * 2.0
        {close}
    return scale
'''

LOADER = '''
import torch
from torch.utils.data import DataLoader


def train(dataset, model):
    {open}
        for x in DataLoader(dataset, batch_size=8):
            model(x.to("cuda"))
    {close}
'''

GUARDS = [
    ("try:", "except RuntimeError:\n            pass"),
    ("try:", "except Exception:\n            pass"),
    ("with contextlib.suppress(RuntimeError):", ""),
]


def _fixable(src: str, code: str) -> list[bool]:
    return [f.fix is not None for f in check_code(src, select=[code], unsafe_fixes=True)]


@pytest.mark.parametrize(("opening", "closing"), GUARDS)
def test_no_fix_where_a_handler_sees_the_wait(opening, closing):
    plain = BRANCH.format(open="if True:", close="")
    guarded = "import contextlib\n" + BRANCH.format(open=opening, close=closing)
    assert _fixable(plain, "SFX201") == [True]
    assert _fixable(guarded, "SFX201") == [False]
    (finding,) = check_code(guarded, select=["SFX201"], unsafe_fixes=True)
    assert "inside a try whose handler catches its error" in finding.message


@pytest.mark.parametrize(
    "handler",
    [
        "except (KeyError, ValueError):",
        # an out-of-memory error is raised where memory is allocated, never at a later wait
        # (Pytorch-UNet's train.py retries its whole training on one)
        "except torch.cuda.OutOfMemoryError:",
        "except torch.OutOfMemoryError:",
        # MobileLLM's data reader: a JSON line it cannot decode (a ValueError's subclass)
        "except json.JSONDecodeError:",
    ],
)
def test_a_handler_that_cannot_catch_what_a_wait_raises_keeps_the_fix(handler):
    src = BRANCH.format(open="try:", close=f"{handler}\n            pass")
    assert _fixable(src, "SFX201") == [True]


def test_pinning_a_loader_is_not_held_back_by_a_handler():
    guarded = LOADER.format(open="try:", close="except RuntimeError:\n        pass")
    assert _fixable(guarded, "SFX103") == [True]


# ---- a handler the function reaches through a decorator, or a call it is handed to --------------

STEP = '''
import torch
{before}

{decorator}
def step(model, n):
    idx = torch.arange(n).cuda()
    return model(idx)


def train(model):
    for i in range(100):
        {call}
'''

RETRY = '''
def retry(fn):
    def wrapper(*args):
        try:
            return fn(*args)
        except RuntimeError:
            return fn(*args)
    return wrapper
'''

RUN_WITH_RETRY = '''
def run_with_retry(fn, *args):
    try:
        return fn(*args)
    except RuntimeError:
        return fn(*args)
'''

PLAIN_RUNNER = '''
def run(fn, *args):
    return fn(*args)
'''


@pytest.mark.parametrize(
    ("before", "decorator", "call", "fixed"),
    [
        ("", "", "step(model, 10)", True),
        ("", "@torch.no_grad()", "step(model, 10)", True),
        (RETRY, "@retry", "step(model, 10)", False),  # the wrapper catches around the call
        ("from tenacity import retry", "@retry", "step(model, 10)", False),  # a retrying library decorator
        ("from lightning.pytorch.utilities import rank_zero_only", "@rank_zero_only", "step(model, 10)", True),
        (PLAIN_RUNNER.replace("def run", "def deco"), "@deco", "step(model, 10)", True),
        (RUN_WITH_RETRY, "", "run_with_retry(step, model, 10)", False),  # handed to a catcher
        (PLAIN_RUNNER, "", "run(step, model, 10)", True),
        (PLAIN_RUNNER, "", "try:\n            run(step, model, 10)\n        except RuntimeError:\n            pass", False),
        ("", "", "torch.utils.checkpoint.checkpoint(step, model, 10)", True),
    ],
)
def test_handlers_reached_through_decorators_and_callbacks(before, decorator, call, fixed):
    src = STEP.format(before=before, decorator=decorator, call=call)
    assert _fixable(src, "SFX101") == [fixed]


def test_a_nested_check_handed_on_keeps_its_exception_where_a_caller_catches_it(tmp_path):
    src = '''
import torch


def with_config(func, config):
    def wrapped(**kwargs):
        return func(**kwargs, **config)
    return wrapped


def inverse_root(A, config):
    def higher_order(A, order):
        X = torch.linalg.matrix_power(A.cuda(), order)
        if not torch.isfinite(X).all():
            raise ArithmeticError("not finite")
        return X

    return with_config(func=higher_order, config=config)(A=A)


def update(factors, inverses, config):
    for i, A in enumerate(factors):
        try:
            inverses[i] = inverse_root(A, config)
        except Exception:
            pass


def train(loader, factors, inverses, config):
    for batch in loader:
        update(factors, inverses, config)
'''
    unguarded = src.replace(
        "        try:\n            inverses[i] = inverse_root(A, config)\n        except Exception:\n            pass",
        "        inverses[i] = inverse_root(A, config)",
    )
    (tmp_path / ".git").mkdir()  # a project, whose index makes the nested check repeat
    path = tmp_path / "train.py"
    for source, fixed in ((src, False), (unguarded, True)):
        path.write_text(source, encoding="utf-8")
        result = CliRunner().invoke(cli, ["check", str(path), "--select", "SFX203", "--unsafe-fixes", "--no-cache", "-o", "json"])
        assert [f["fix"] is not None for f in json.loads(result.stdout)] == [fixed]


AUDIO = (
    "import torch\n\n\ndef mel(audio):\n    window = torch.hann_window(400).to('cuda')\n"
    "    return torch.stft(audio, 400, 160, window=window, return_complex=True)\n"
)


def _fixed_with_and_without_the_handler(tmp_path, pyproject: str, files: dict[str, str], guarded: str) -> None:
    """Write a package ``pkg`` whose ``audio.py`` copies; ``guarded`` names the file whose
    ``except Exception`` is around the chain of calls: no fix with it, a fix with ``KeyError``."""
    (tmp_path / "pyproject.toml").write_text(pyproject)
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "audio.py").write_text(AUDIO)
    for name, text in files.items():
        (pkg / name).write_text(text)
    for source, fixed in ((files[guarded], False), (files[guarded].replace("except Exception", "except KeyError"), True)):
        (pkg / guarded).write_text(source)
        result = CliRunner().invoke(
            cli, ["check", str(pkg / "audio.py"), "--select", "SFX101", "--unsafe-fixes", "--no-cache", "-o", "json"]
        )
        assert [f["fix"] is not None for f in json.loads(result.stdout)] == [fixed]


CLI = "def cli(paths):\n    for p in paths:\n        try:\n            transcribe(p)\n        except Exception as e:\n            print('Skipping', p, e)\n"


@pytest.mark.parametrize("pyproject", ["", '[project]\nname = "x"\n'])
def test_a_try_around_a_caller_in_another_file_holds_the_fix_back_in_any_project(tmp_path, pyproject):
    # whisper's shape: cli() calls transcribe() inside `try: ... except Exception`, and
    # transcribe (another file) calls the function that copies. A project with a [project]
    # table (packaged: other code may import it too) lost sight of the importers' handlers.
    files = {
        "__init__.py": "",
        "decoding.py": "from .audio import mel\n\n\ndef transcribe(audio):\n    return mel(audio)\n",
        "main.py": "from .decoding import transcribe\n\n\n" + CLI,
    }
    _fixed_with_and_without_the_handler(tmp_path, pyproject, files, "main.py")


def test_a_try_in_a_script_around_a_module_beside_it_holds_the_fix_back_where_other_folders_hold_its_name(tmp_path):
    # sam-hq: `train/train.py` does `import utils.misc as misc` (its own `train/utils/misc.py`)
    # and calls it in a bare `try`, while `sam-hq2/sam2/utils/misc.py` ends in `utils.misc` too
    (tmp_path / ".git").mkdir()
    for folder in ("sub/utils", "other/utils"):
        (tmp_path / folder).mkdir(parents=True)
        (tmp_path / folder / "__init__.py").write_text("")
    (tmp_path / "other/utils/misc.py").write_text("def unrelated():\n    return 1\n")
    (tmp_path / "sub/utils/misc.py").write_text(
        "import torch\n\n\ndef sample_points(masks):\n    y = torch.arange(4.0)\n    y = y.to(masks)\n    return y * masks\n"
    )
    (tmp_path / "sub/train.py").write_text(
        "import utils.misc as misc\n\n\ndef main(loader):\n    for data in loader:\n"
        "        try:\n            misc.sample_points(data)\n        except:\n            pass\n"
    )
    result = CliRunner().invoke(
        cli, ["check", str(tmp_path / "sub/utils/misc.py"), "--select", "SFX101", "--unsafe-fixes", "--no-cache", "-o", "json"]
    )
    (found,) = json.loads(result.stdout)
    assert found["fix"] is None and "inside a try" in found["message"]


NET = (
    "import torch\n\n\nclass Net(torch.nn.Module):\n    def forward(self, x):\n"
    "        ones = torch.ones(x.size(0), 4)\n        return x + ones.cuda()\n"
)
TRAIN = (
    "from .net import Net\n\n\ndef main(batches):\n    net = Net()\n    try:\n"
    "        for x in batches:\n            net(x)\n    except Exception as e:\n        print(e)\n        raise\n"
)


@pytest.mark.parametrize("pyproject", ["", '[project]\nname = "x"\n'])
def test_a_try_around_calls_of_a_models_objects_holds_back_the_fixes_in_its_forward(tmp_path, pyproject):
    # generative-inpainting's training loop: `trainer(x, ...)` inside `try: ... except
    # Exception` runs every `forward` of the model, in other files; a method runs wherever its
    # objects are called, which syncfix does not follow by name
    (tmp_path / "pyproject.toml").write_text(pyproject)
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "net.py").write_text(NET)
    for source, fixed in ((TRAIN, False), (TRAIN.replace("except Exception", "except KeyError"), True)):
        (pkg / "train.py").write_text(source)
        result = CliRunner().invoke(
            cli, ["check", str(pkg / "net.py"), "--select", "SFX101", "--no-cache", "--include-cold", "-o", "json"]
        )
        assert [f["fix"] is not None for f in json.loads(result.stdout)] == [fixed], result.stdout


STEPPER = (
    "import torch\n\n\nclass Trainer:\n    def step(self, x):\n"
    "        ones = torch.ones(x.size(0), 4)\n        return x + ones.cuda()\n"
)
LOOP = (
    "import torch\nfrom .trainer import Trainer\n\n\ndef main(batches, path):\n    t = Trainer()\n"
    "    try:\n        state = torch.load(path)\n    except Exception:\n        state = None\n"
    "    for x in batches:\n        t.step(x)\n"
)
GUARDED = LOOP.replace("        t.step(x)\n", "        try:\n            t.step(x)\n        except Exception:\n            pass\n")


@pytest.mark.parametrize(
    ("loop", "fixed"),
    [(LOOP, True), (GUARDED, False)],  # MUNIT's `try` is around loading a checkpoint, not a step
)
def test_a_named_method_is_held_back_only_by_a_handler_around_a_call_of_it(tmp_path, loop, fixed):
    (tmp_path / "pyproject.toml").write_text("")
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "trainer.py").write_text(STEPPER)
    (pkg / "train.py").write_text(loop)
    result = CliRunner().invoke(
        cli, ["check", str(pkg / "trainer.py"), "--select", "SFX101", "--no-cache", "--include-cold", "-o", "json"]
    )
    assert [f["fix"] is not None for f in json.loads(result.stdout)] == [fixed], result.stdout


def test_a_file_whose_calls_cannot_be_read_holds_the_fix_back_if_it_has_a_handler(tmp_path):
    # whisper's layout: __init__.py does `from .transcribe import transcribe` (a function named
    # like its module: the index cannot tell it from the module, so transcribe.py's own calls
    # of the copying function are not read one by one); transcribe.py calls it under cli()'s try
    files = {
        "__init__.py": "from .transcribe import transcribe\n",
        "transcribe.py": "from .audio import mel\n\n\ndef transcribe(audio):\n    return mel(audio)\n\n\n" + CLI,
    }
    _fixed_with_and_without_the_handler(tmp_path, '[project]\nname = "x"\n', files, "transcribe.py")


def test_a_file_that_cannot_hold_a_handler_is_not_parsed_for_the_question(tmp_path, monkeypatch):
    # files that call the function with no handler that may catch a RuntimeError in their text
    # (no `except` but of errors torch's waits never raise, no `suppress`, `raises`, `retry`),
    # nor in a file that imports them (through others too), cannot see its errors: the fix
    # stands without parsing them
    from syncfix.analysis import imported

    loaded: list[str] = []
    real = imported.ProjectModules._load

    def counted(self, module, name, **kw):
        loaded.append(module.path)
        return real(self, module, name, **kw)

    monkeypatch.setattr(imported.ProjectModules, "_load", counted)
    scripts = {f"run{i}.py": f"from .audio import mel\n\n\ndef main{i}(xs):\n    for x in xs:\n        mel(x)\n" for i in range(3)}
    scripts["guarded.py"] = "from .audio import mel\n\n\ndef safe(x):\n    try:\n        mel(x)\n    except KeyError:\n        pass\n"
    # a handler that may catch, but not around the call: parsed, and the fix stands
    scripts["caught.py"] = (
        "from .audio import mel\n\n\ndef safe(x):\n    mel(x)\n\n\n"
        "def other():\n    try:\n        print('other')\n    except (ValueError, RuntimeError) as e:\n        print(e)\n"
    )
    # a handler around code that runs nothing: it catches nothing, not parsed either
    scripts["idle.py"] = (
        "from .audio import mel\n\n\ndef safe(x):\n    mel(x)\n\n\n"
        "def other(args):\n    try:\n        n = args.n\n    except Exception:\n        n = 0\n"
    )
    # a chain of importers none of which has a handler: not parsed, however deep
    scripts["lib.py"] = "from .audio import mel\n\n\ndef each(xs):\n    for x in xs:\n        mel(x)\n"
    scripts["app.py"] = "from .lib import each\n\n\ndef run(xs):\n    each(xs)\n"
    main = "from .run0 import main0\n\n\n" + CLI.replace("transcribe(p)", "main0([p])")
    _fixed_with_and_without_the_handler(tmp_path, '[project]\nname = "x"\n', {"__init__.py": "", **scripts, "main.py": main}, "main.py")
    parsed = {path.rsplit("/", 1)[-1] for path in loaded}
    assert parsed.isdisjoint({"run1.py", "run2.py", "guarded.py", "lib.py", "app.py", "idle.py"})
    assert {"run0.py", "caught.py"} <= parsed  # imported by main.py, which catches; holds a handler


@pytest.mark.parametrize(
    ("text", "catches"),
    [
        (b"try:\n    f()\nexcept ImportError:\n    pass\n", False),
        (b"try:\n    f()\nexcept (KeyError, IndexError) as e:\n    pass\n", False),
        (b"try:\n    f()\nexcept torch.cuda.OutOfMemoryError:\n    pass\n", False),
        (b"try:\n    f()\nexcept json.JSONDecodeError:\n    pass\n", False),
        (b"try:\n    f()\nexcept:\n    pass\n", True),
        (b"try:\n    f()\nexcept Exception:\n    pass\n", True),
        (b"try:\n    f()\nexcept (\n    KeyError,\n    MyError,\n):\n    pass\n", True),
        (b"try:\n    f()\nexcept* RuntimeError:\n    pass\n", True),
        (b"with contextlib.suppress(KeyError):\n    f()\n", True),  # the words alone count
        (b"@retry\ndef f():\n    pass\n", True),
        (b"def f():\n    return 1\n", False),
        (b"with pytest.raises(RuntimeError):\n    f()\n", True),
        (b"@tenacity.retry(stop=stop_after_attempt(3))\ndef f():\n    pass\n", True),
        (b"@backoff.on_exception(backoff.expo, Exception)\ndef f():\n    pass\n", True),
        (b"self.assertRaises(RuntimeError, f)\n", True),
        # words that name no handler: GradScaler's argument, a docstring's section (BiRefNet)
        (b"kwargs = GradScalerKwargs(backoff_factor=0.5)\n", False),
        (b'def f():\n    """Raises:\n        ValueError: if it raises"""\n', False),
    ],
)
def test_which_text_may_hold_a_handler_of_a_runtime_error(text, catches):
    from syncfix.analysis.handlers import may_catch_text

    assert may_catch_text(text) is catches


@pytest.mark.parametrize(
    ("defined", "fixed"),
    [
        ("class Exhausted(Exception):\n    pass\n", True),  # torch raises none of the project's classes
        ("class Exhausted(RuntimeError):\n    pass\n", True),  # not even one deriving from its error
        ("Exhausted = RuntimeError\n", False),  # an alias of an error torch raises
    ],
)
def test_a_handler_of_a_project_exception_class_keeps_the_fix(defined, fixed):
    src = defined + BRANCH.format(open="try:", close="except Exhausted:\n            pass")
    assert _fixable(src, "SFX201") == [fixed]


def test_a_handler_of_an_exception_class_from_another_project_file_keeps_the_fix(tmp_path):
    # torchtitan's shape: `except DataloaderExhaustedError` around the step, the class in its own
    # module; the step's copy keeps its fix (a module syncfix cannot resolve still holds it back)
    (tmp_path / ".git").mkdir()
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "errors.py").write_text("class DataloaderExhausted(Exception):\n    pass\n")
    trainer = (
        "import torch\n\nfrom pkg.errors import {name}\n\n\n"
        "def step(batch):\n    return batch.cuda()\n\n\n"
        "def train(loader):\n    for batch in loader:\n        try:\n            step(batch)\n"
        "        except {name}:\n            break\n"
    )
    for name, fixed in (("DataloaderExhausted", True), ("Unresolved", False)):
        (pkg / "trainer.py").write_text(trainer.format(name=name))
        result = CliRunner().invoke(
            cli, ["check", str(pkg / "trainer.py"), "--select", "SFX101", "--unsafe-fixes", "--no-cache", "-o", "json"]
        )
        assert [f["fix"] is not None for f in json.loads(result.stdout)] == [fixed], name


def test_the_message_says_where_the_handler_is():
    # convmixer's timm: copies in `validate`, which the out-of-memory retry at the bottom of the
    # file runs inside a `try`; and a `try` around the copy itself
    src = (
        "import torch\n\n\ndef validate(loader):\n    for x in loader:\n        x = x.cuda()\n"
        "        print(x.sum())\n\n\ndef main(loader):\n    try:\n        validate(loader)\n"
        "    except RuntimeError:\n        pass\n\n\ndef probe(loader):\n    for x in loader:\n"
        "        try:\n            x.cuda()\n        except Exception:\n            pass\n"
    )
    called, own = check_code(src, select=["SFX101"], unsafe_fixes=True)
    assert called.fix is None and "(the `try` at line 11, around a call of `validate`)" in called.message
    assert own.fix is None and "(the `try` at line 19)" in own.message


MASKED = '''
import torch
from torch import nn
from warnings import warn


class MaskedL1Loss(nn.Module):
    def __init__(self):
        super(MaskedL1Loss, self).__init__()

    def forward(self, x, y, lengths):
        ones = torch.ones(x.size(0), 4)
        return (x - y).abs().mean() + ones.cuda().sum()


def spec_loss(x, y, lengths):
    masked = MaskedL1Loss()
    return {call}


def train(batches, writer):
    for x, y, n in batches:
        loss = spec_loss(x, y, n)
        loss.backward()
    try:
        writer.add_image("tag", x, 0)
    except Exception as e:
        warn(str(e))
'''


@pytest.mark.parametrize(
    ("call", "fixed"),
    [
        ("masked(x, y, lengths)", [True]),
        ("MaskedL1Loss()(x, y, lengths)", [True]),
        # the class's objects are not only called: a handler anywhere in the file may see them
        ("masked.forward(x, y, lengths)", [False]),
        ("torch.utils.checkpoint.checkpoint(masked, x, y, lengths)", [False]),
    ],
)
def test_a_forward_is_held_back_by_a_handler_of_its_file_only_around_its_objects_calls(call, fixed):
    # deepvoice3's train.py: `try: writer.add_image(...) except Exception` runs no loss module;
    # every object of `MaskedL1Loss` is a name only called, in `spec_loss`, outside any try
    src = MASKED.format(call=call)
    assert _fixable(src, "SFX101") == fixed
    guarded = src.replace("        loss = spec_loss(x, y, n)\n", "        try:\n            loss = spec_loss(x, y, n)\n        except Exception:\n            continue\n")
    assert _fixable(guarded, "SFX101") == [False]


@pytest.mark.parametrize(
    ("text", "catches"),
    [
        # DINO's build_dino: `try: x = args.x except: x = False` runs no code that could raise it
        ("try:\n    x = args.x\nexcept:\n    x = False\n", False),
        ("try:\n    x = f(args)\nexcept:\n    x = False\n", True),
        ("try:\n    x = batch[0]\nexcept Exception:\n    x = None\n", True),
        ("try:\n    f()\nexcept (OSError, UnidentifiedImageError):\n    pass\n", False),  # recognize-anything's
        ("with pytest.raises(RuntimeError):\n    f()\n", True),
        ("@retry(stop=3)\ndef f():\n    pass\n", True),
        ("def f():\n    return 1\n", False),
        # ViTPose's h36m_to_coco: a bare `except` around opening an image file runs no GPU work
        ("import os.path as osp\nfrom PIL import Image\ntry:\n    im = Image.open(osp.join(r, n))\n    w, h = im.size\nexcept:\n    pass\n", False),
        ("from PIL import Image\ntry:\n    im = Image.open(load(n))\nexcept:\n    pass\n", True),
        ("import json\ntry:\n    d = json.loads(t)\n    x = d['x']\nexcept:\n    pass\n", True),
    ],
)
def test_which_parsed_module_may_hold_a_handler_of_a_runtime_error(text, catches):
    import ast

    from syncfix.analysis.ast_reading import may_catch_tree

    assert may_catch_tree(ast.parse(text)) is catches


REGISTERED = '''
import torch


class Net(torch.nn.Module):
    def forward(self, x):
        ones = torch.ones(x.size(0), 4)
        return x + ones.cuda()


MODELS = {"net": Net}
try:
    LR = {body}
except Exception:
    LR = 0.1
'''


@pytest.mark.parametrize(("body", "fixed"), [("CONFIG.lr", [True]), ("load_config().lr", [False])])
def test_a_try_that_runs_no_code_catches_nothing(body, fixed):
    # DINO's build_dino: `try: x = args.x except: x = False` around attribute reads only
    assert _fixable(REGISTERED.replace("{body}", body), "SFX101") == fixed
