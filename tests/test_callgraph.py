"""Facts across functions of one module (callgraph.py) and the project's imports (project.py)."""

from __future__ import annotations

import textwrap

import libcst as cst
import pytest
from libcst.metadata import MetadataWrapper

from syncfix.analysis import Device, Kind, Memory, ModuleAnalysis
from syncfix.analysis.callgraph import call_sites
from syncfix.analysis.project import ProjectIndex

SCRIPT_END = '\nif __name__ == "__main__":\n    main()\n'


def analyse(src: str, module_name: str | None = None, project: ProjectIndex | None = None):
    module = cst.parse_module(textwrap.dedent(src))
    wrapper = MetadataWrapper(module, unsafe_skip_copy=True)
    imported = project.imported_from(module_name) if project is not None and module_name else None
    return ModuleAnalysis(wrapper, module_name=module_name, imported=imported), module


def value_of_use(src: str, name: str, **kw):
    """The value of ``name`` as an argument of the last ``use(...)`` call of ``src``."""
    a, module = analyse(src, **kw)
    uses: list[cst.Call] = []

    class V(cst.CSTVisitor):
        def visit_Call(self, node: cst.Call) -> None:
            if isinstance(node.func, cst.Name) and node.func.value == "use":
                uses.append(node)

    module.visit(V())
    arg = next(arg for arg in uses[-1].args if module.code_for_node(arg.value) == name)
    return a.value(arg.value)


CALLS = """
import torch
from torch.utils.data import DataLoader

def f(x, dev="cuda", *, pinned=None):
    use(x, dev, pinned)

def main():
    f(torch.ones(3))
    f(dev=torch.device("cuda:1"), x=torch.zeros(2))
"""


def test_parameter_is_the_join_of_its_call_sites():
    v = value_of_use(CALLS + SCRIPT_END, "x")
    assert (v.kind, v.device, v.memory, v.fresh) == (Kind.TENSOR, Device.CPU, Memory.PAGEABLE, True)


def test_default_joins_with_the_arguments():
    v = value_of_use(CALLS + SCRIPT_END, "dev")
    assert (v.kind, v.device) == (Kind.DEVICE, Device.CUDA)


def test_omitted_keyword_only_parameter_takes_its_default():
    assert value_of_use(CALLS + SCRIPT_END, "pinned").kind is Kind.OTHER


@pytest.mark.parametrize(
    "src, why",
    [
        (CALLS, "public function of an importable module"),  # no __main__ block: may be imported
        (CALLS + SCRIPT_END + "g = f\n", "used other than as a callee"),
        (CALLS + SCRIPT_END + "def f2(a):\n    f(*a)\n", "called with *args or **kwargs"),
        (CALLS.replace("def f(", "@cache\ndef f(") + SCRIPT_END, "decorated"),
        (CALLS + SCRIPT_END + "def f(x):\n    pass\n", "name bound more than once"),
    ],
)
def test_escaping_function_keeps_parameters_unknown(src, why):
    assert value_of_use(src, "x").kind is Kind.UNKNOWN
    a, module = analyse(src)
    fn = next(s for s in module.body if isinstance(s, cst.FunctionDef) and s.name.value == "f")
    assert call_sites(a, fn).escapes == why


def test_grad_mode_decorator_keeps_the_call_sites():
    src = CALLS.replace("def f(", "@torch.no_grad()\ndef f(") + SCRIPT_END
    assert value_of_use(src, "x").kind is Kind.TENSOR


def test_private_function_of_a_library_module_uses_its_call_sites():
    src = CALLS.replace("def f(", "def _f(").replace("    f(", "    _f(")
    assert value_of_use(src, "x").kind is Kind.TENSOR


def test_script_imported_by_another_project_file_escapes():
    project = ProjectIndex.build({"tools.train": CALLS.encode(), "tests.test_train": b"from tools.train import f\n"})
    v = value_of_use(CALLS + SCRIPT_END, "x", module_name="tools.train", project=project)
    assert v.kind is Kind.UNKNOWN
    # importing another name of the module leaves f's callers in sight
    project = ProjectIndex.build({"tests.test_train": b"from tools.train import main\n"})
    v = value_of_use(CALLS + SCRIPT_END, "x", module_name="tools.train", project=project)
    assert v.kind is Kind.TENSOR


def test_pinned_tensor_loses_freshness_across_a_call():
    src = CALLS.replace("f(torch.ones(3))", "f(torch.ones(3, pin_memory=True))").replace(
        "x=torch.zeros(2)", "x=torch.zeros(2, pin_memory=True)"
    )
    v = value_of_use(src + SCRIPT_END, "x")
    assert (v.kind, v.memory, v.fresh) == (Kind.TENSOR, Memory.PINNED, False)


RETURNS = """
import torch
from torch.utils.data import DataLoader

def make_loader(ds):
    return DataLoader(ds, batch_size=8)

def maybe(ds, flag):
    if flag:
        return DataLoader(ds)

def both(ds, flag):
    if flag:
        return torch.ones(2)
    else:
        raise ValueError(flag)

def pair():
    return torch.ones(2), "cuda"

def gen():
    yield torch.ones(2)

loader = make_loader(None)
partial = maybe(None, True)
exact = both(None, True)
t, d = pair()
g = gen()
use(loader, partial, exact, t, d, g)
"""


@pytest.mark.parametrize(
    "name, kind",
    [
        ("loader", Kind.LOADER),
        ("partial", Kind.UNKNOWN),  # may fall off its end: None
        ("exact", Kind.TENSOR),
        ("t", Kind.TENSOR),
        ("d", Kind.DEVICE),
        ("g", Kind.OTHER),  # a generator object
    ],
)
def test_call_is_the_join_of_its_returns(name, kind):
    assert value_of_use(RETURNS, name).kind is kind


def test_recursive_function_settles():
    src = """
    import torch
    def _f(x, n):
        if n:
            return _f(x + 1, n - 1)
        return x
    y = _f(torch.ones(2), 3)
    use(y)
    """
    v = value_of_use(src, "y")
    assert (v.kind, v.device) == (Kind.TENSOR, Device.CPU)


def test_module_level_binding_and_self_attribute_inside_functions():
    src = """
    import torch
    device = "cuda"
    class M:
        def __init__(self):
            self.device = torch.device("cuda")
        def step(self):
            use(self.device, device)
    """
    assert value_of_use(src, "device").device is Device.CUDA
    a, module = analyse(src)
    attr = next(n for n in module.body[-1].body.body[-1].body.body[0].body[0].value.args)  # type: ignore[attr-defined]
    assert a.value(attr.value).device is Device.CUDA


def test_project_index_reads_relative_and_package_imports():
    index = ProjectIndex.build(
        {
            "pkg.train": b"from .data import make_loader\nfrom . import (utils,\n  other as o)  # x\n",
            "pkg.data": b"def make_loader(): pass\n",
            "broken": b"def (:\nimport scripts.evaluate as ev, json\n",
        }
    )
    assert index.imported_from("pkg.data") == {"make_loader"}
    assert "*" in index.imported_from("pkg.utils")  # imported whole
    assert "*" in index.imported_from("pkg.other")
    assert index.imported_from("pkg.train") == frozenset()
    assert "*" in index.imported_from("evaluate")  # a script folder on sys.path
    assert "*" in index.imported_from("tools.scripts.evaluate")  # a longer name of that file


METHODS = """
import torch

class Loop:
    def __init__(self):
        self.device = torch.device("cuda")

    def run(self):
        self.step(torch.ones(2), scale=2.0)

    def step(self, x, scale):
        use(x, scale, self.device)
        return x

    def twice(self):
        return self.step(torch.zeros(3), 1.0)
"""


def test_method_reached_only_through_self_calls():
    v = value_of_use(METHODS + SCRIPT_END, "x")
    assert (v.kind, v.device) == (Kind.TENSOR, Device.CPU)
    assert value_of_use(METHODS + SCRIPT_END, "scale").kind is Kind.NUMBER


@pytest.mark.parametrize(
    "extra, why",
    [
        ("def other(loop):\n    return loop.step\n", "used other than as a callee"),
        ("def other(loop):\n    Loop.step(loop, 1, 2)\n", "called on a class (``Cls.m(obj, ...)``)"),
        ("class Sub(Loop):\n    def step(self, x, scale):\n        pass\n", "several classes define the method"),
        ("def other(loop):\n    return getattr(loop, 'step')\n", "the module uses getattr"),
    ],
)
def test_method_with_callers_out_of_sight_escapes(extra, why):
    src = METHODS + extra + SCRIPT_END
    assert value_of_use(src, "x").kind is Kind.UNKNOWN
    a, module = analyse(src)
    loop = next(s for s in module.body if isinstance(s, cst.ClassDef))
    step = next(s for s in loop.body.body if isinstance(s, cst.FunctionDef) and s.name.value == "step")
    assert call_sites(a, step).escapes == why


def test_a_call_through_any_object_joins_in():
    # ``loop.step(1, 2)``: whatever ``loop`` is, it may be a Loop: its arguments join in
    src = METHODS + "def other(loop):\n    loop.step(1, 2)\n" + SCRIPT_END
    assert value_of_use(src, "x").kind is Kind.UNKNOWN  # a tensor joined with 1
    a, module = analyse(src)
    loop = next(s for s in module.body if isinstance(s, cst.ClassDef))
    step = next(s for s in loop.body.body if isinstance(s, cst.FunctionDef) and s.name.value == "step")
    assert call_sites(a, step).escapes is None and len(call_sites(a, step).calls) == 3
    # a tensor on the same device from the other caller keeps the fact
    src = METHODS + "def other(loop):\n    loop.step(torch.zeros(1), 2)\n" + SCRIPT_END
    v = value_of_use(src, "x")
    assert (v.kind, v.device) == (Kind.TENSOR, Device.CPU)


def test_method_of_a_class_with_a_base_escapes():
    src = METHODS.replace("class Loop:", "class Loop(torch.nn.Module):") + SCRIPT_END
    assert value_of_use(src, "x").kind is Kind.UNKNOWN


def test_attribute_assigned_through_the_instance_is_unknown():
    assert value_of_use(METHODS + SCRIPT_END, "self.device").device is Device.CUDA
    src = METHODS + "def other(loop):\n    loop.device = 'mps'\n" + SCRIPT_END
    assert value_of_use(src, "self.device").kind is Kind.UNKNOWN
    src = METHODS + "def other(loop):\n    a, loop.device = 1, 'mps'\n" + SCRIPT_END
    assert value_of_use(src, "self.device").kind is Kind.UNKNOWN


def test_self_attribute_of_an_unrelated_class_is_not_set_elsewhere():
    # ``self.device`` in another class of the module is that class's, not Loop's...
    src = METHODS + "class Other:\n    def __init__(self):\n        self.device = 'mps'\n" + SCRIPT_END
    assert value_of_use(src, "self.device").device is Device.CUDA
    # ...but a base class's method sets it on Loop's instances too
    src = (
        METHODS.replace("class Loop:", "class Base:\n    def reset(self):\n        self.device = 'mps'\n\n\nclass Loop(Base):")
        + SCRIPT_END
    )
    assert value_of_use(src, "self.device").kind is Kind.UNKNOWN


def test_python_number_type_of_parameters_and_self_attributes():
    src = textwrap.dedent(
        """
        import os

        class _Loop:
            def __init__(self, rank):
                self.rank = int(os.environ["RANK"])
                self.other = rank

            def step(self):
                use(self.rank, self.other)

        def _make(n):
            return n

        def main():
            _Loop(3).step()
            _make(2)
            _make(2.5)
        """
    )
    a, module = analyse(src + SCRIPT_END)
    step_call = next(n for n in a.structure.of_type(cst.Call) if isinstance(n.func, cst.Name) and n.func.value == "use")
    rank, other = (arg.value for arg in step_call.args)
    assert a.python_number_type(rank) == "int"
    assert a.python_number_type(other) == "int"  # the one call passes 3
    make = next(s for s in module.body if isinstance(s, cst.FunctionDef) and s.name.value == "_make")
    ret = make.body.body[0].body[0].value
    assert a.python_number_type(ret) is None  # an int from one call, a float from the other


def test_classes_deriving_from_each_other_do_not_loop():
    # a cycle of bases (an error at run time) must not send the base walks round forever
    src = METHODS.replace("class Loop:", "class A(Loop):\n    pass\n\n\nclass Loop(A):") + SCRIPT_END
    assert value_of_use(src, "self.device").kind in (Kind.UNKNOWN, Kind.DEVICE)
