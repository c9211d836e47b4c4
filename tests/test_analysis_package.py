"""The analysis package's public surface: the one literal classifier's two documented readings,
and rules that use only public names of the analysis (no ``_private`` imports or calls)."""

from __future__ import annotations

import ast
from pathlib import Path

import libcst as cst
import pytest

from syncfix.analysis import literal_kind, literal_number

ROOT = Path(__file__).resolve().parent.parent


def _expr(code: str) -> cst.BaseExpression:
    return cst.parse_expression(code)


@pytest.mark.parametrize(
    ("code", "default", "one_minus"),
    [
        ("3", "int", "int"),
        ("2.5", "float", "float"),
        ("True", "bool", "bool"),
        ("-3", "int", "int"),
        ("+3", "int", None),  # one_minus reads only a leading minus
        ("--3", "int", None),
        ("-True", None, "bool"),  # a signed bool is an int in Python: unknown by default
        ("x", None, None),
        ("-x", None, None),
        ("1j", None, None),
    ],
)
def test_literal_kind_readings(code, default, one_minus):
    assert literal_kind(_expr(code)) == default
    assert literal_kind(_expr(code), one_minus=True) == one_minus


@pytest.mark.parametrize(
    ("code", "nested", "single"),
    [
        ("3", 3, 3),
        ("-2.5", -2.5, -2.5),
        ("+4", 4, 4),
        ("--3", 3, None),  # ast.literal_eval's reading: one sign at most
        ("-(-3)", 3, None),
        ("True", True, True),
        ("-True", None, None),
        ("0x10", 16, 16),
        ("n", None, None),
    ],
)
def test_literal_number_readings(code, nested, single):
    assert literal_number(_expr(code)) == nested
    assert type(literal_number(_expr(code))) is type(nested)
    assert literal_number(_expr(code), nested_signs=False) == single


def _private_uses(path: Path) -> list[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("syncfix.analysis"):
            if node.module != "syncfix.analysis":
                found.append(f"{path.name}:{node.lineno} imports {node.module} (use syncfix.analysis)")
            found += [
                f"{path.name}:{node.lineno} imports {alias.name}"
                for alias in node.names
                if alias.name.startswith("_")
            ]
        if isinstance(node, ast.Attribute) and node.attr.startswith("_") and not node.attr.startswith("__"):
            owner = node.value
            analysis = isinstance(owner, ast.Name) and owner.id in ("a", "analysis") or (
                isinstance(owner, ast.Attribute) and owner.attr == "analysis"
            )
            if analysis:
                found.append(f"{path.name}:{node.lineno} uses {ast.unparse(node)}")
    return found


def test_rules_use_only_public_names_of_the_analysis():
    rules = sorted((ROOT / "codemods").glob("*.py"))
    assert len(rules) > 10
    assert [use for path in rules for use in _private_uses(path)] == []


def test_the_private_name_check_catches_a_private_use(tmp_path):
    bad = tmp_path / "bad.py"
    bad.write_text(
        "from syncfix.analysis import _stores\n"
        "from syncfix.analysis.syntax import keyword\n"
        "def f(a):\n    return a._direct_callee(None)\n",
        encoding="utf-8",
    )
    assert len(_private_uses(bad)) == 3


def test_max_along_a_dim_is_a_values_indices_pair():
    import libcst as cst
    from libcst.metadata import MetadataWrapper

    from syncfix.analysis import Device, ModuleAnalysis

    src = (
        "import torch\n"
        "out = torch.randn(4, 3, device='cuda')\n"
        "_, predicted = out.max(1)\n"
        "a = out.max(dim=-1).indices\n"
        "b = out.min(1)[0]\n"
        "c = out.max(out)\n"
        "d = out.max(1)\n"
        "print(predicted, a, b, c, d)\n"
    )
    wrapper = MetadataWrapper(cst.parse_module(src))
    analysis = ModuleAnalysis(wrapper)
    seen = {}

    class V(cst.CSTVisitor):
        def visit_Name(self, node: cst.Name) -> None:
            seen[node.value] = analysis.value(node)  # the last one: the read in print()

    wrapper.module.visit(V())
    for name in ("predicted", "a", "b", "c"):
        assert seen[name].is_tensor and seen[name].device is Device.CUDA, name
    assert not seen["d"].is_tensor  # the pair itself is no tensor


def test_an_isinstance_test_narrows_a_name_to_a_tensor_in_its_body_only():
    import libcst as cst
    from libcst.metadata import MetadataWrapper

    from syncfix.analysis import Kind, ModuleAnalysis

    src = (
        "import torch\n"
        "def f(items, other):\n"
        "    for k, v in items:\n"
        "        if v is None:\n"
        "            use(v)  # none\n"
        "        elif isinstance(v, torch.Tensor) and v.dim() > 0:\n"
        "            use(v)  # narrowed\n"
        "        elif isinstance(v, (torch.Tensor, list)):\n"
        "            use(v)  # a list passes too\n"
        "        if isinstance(v, torch.Tensor):\n"
        "            v = other\n"
        "            use(v)  # rebound in the body\n"
        "        if not isinstance(v, torch.Tensor):\n"
        "            use(v)  # the negation\n"
        "        else:\n"
        "            use(v)  # an else is not narrowed (a test of its own would be)\n"
        "        if isinstance(v, torch.Tensor):\n"
        "            g = lambda: use(v)  # a later call: not narrowed\n"
    )
    wrapper = MetadataWrapper(cst.parse_module(src))
    analysis = ModuleAnalysis(wrapper)
    kinds = []

    class V(cst.CSTVisitor):
        def visit_Call(self, node: cst.Call) -> None:
            if isinstance(node.func, cst.Name) and node.func.value == "use":
                kinds.append(analysis.value(node.args[0].value).kind)

    wrapper.module.visit(V())
    assert kinds == [Kind.UNKNOWN, Kind.TENSOR] + [Kind.UNKNOWN] * 5


def test_an_isinstance_test_of_number_types_narrows_a_name_to_host_data():
    import libcst as cst
    from libcst.metadata import MetadataWrapper

    from syncfix.analysis import Kind, ModuleAnalysis

    src = (
        "import torch\n"
        "def f(layer):\n"
        "    scale = layer.embed_scale\n"
        "    use(scale)  # unknown\n"
        "    if isinstance(scale, (int, float)):\n"
        "        use(scale)  # a Python number (or a numpy float64): host data\n"
        "    if isinstance(scale, (int, torch.Tensor)):\n"
        "        use(scale)  # either\n"
        "    if isinstance(scale, float):\n"
        "        scale = layer.other\n"
        "        use(scale)  # rebound in the body\n"
    )
    wrapper = MetadataWrapper(cst.parse_module(src))
    analysis = ModuleAnalysis(wrapper)
    seen = []

    class V(cst.CSTVisitor):
        def visit_Call(self, node: cst.Call) -> None:
            if isinstance(node.func, cst.Name) and node.func.value == "use":
                arg = node.args[0].value
                seen.append((analysis.value(arg).kind, analysis.is_host_data(arg)))

    wrapper.module.visit(V())
    assert seen == [(Kind.UNKNOWN, False), (Kind.NUMBER, True), (Kind.UNKNOWN, False), (Kind.UNKNOWN, False)]


def _values_at_use(src: str):
    import libcst as cst
    from libcst.metadata import MetadataWrapper

    from syncfix.analysis import ModuleAnalysis

    wrapper = MetadataWrapper(cst.parse_module(src))
    analysis = ModuleAnalysis(wrapper)
    seen = []

    class V(cst.CSTVisitor):
        def visit_Call(self, node: cst.Call) -> None:
            if isinstance(node.func, cst.Name) and node.func.value == "use":
                arg = node.args[0].value
                seen.append((analysis.value(arg), analysis.device_origin(arg)))

    wrapper.module.visit(V())
    return seen


def test_device_origins_cross_calls_and_tuples():
    # the state's tensors were placed by the module-level `device` in setup(): the parameter's
    # items carry that origin into run(), and ops keep it; a CPU tensor has the origin "cpu"
    seen = _values_at_use(
        "import torch\n"
        "device = 'cuda' if torch.cuda.is_available() else 'cpu'\n"
        "def setup(n):\n"
        "    return torch.randn(n, n, device=device), torch.randn(n, device=device)\n"
        "def run(state):\n"
        "    w, x = state\n"
        "    use(x @ w)\n"
        "    use(torch.ones(()))\n"
        "    use(x @ w + torch.ones(()))  # two origins: none\n"
        "if __name__ == '__main__':\n"
        "    run(setup(4))\n"
    )
    assert [(v.origin, o) for v, o in seen] == [("device", "device"), ('"cpu"', '"cpu"'), (None, None)]


def test_a_device_bound_in_each_branch_of_an_if_is_one_origin():
    # `device` gets one value per run (one binding per branch, none in a loop): one origin; a
    # name rebound in a loop is not one
    seen = _values_at_use(
        "import torch\n"
        "if torch.cuda.is_available():\n"
        "    device = torch.accelerator.current_accelerator()\n"
        "else:\n"
        "    device = torch.device('cpu')\n"
        "def f(xs):\n"
        "    use(device)\n"
        "    use(torch.zeros(3, device=device))\n"
        "    for x in xs:\n"
        "        dev = x.device\n"
        "        use(torch.zeros(3, device=dev))\n"
        "        dev = torch.device('cpu')\n"
    )
    from syncfix.analysis import Kind

    assert seen[0][0].kind is Kind.DEVICE  # current_accelerator() gives a torch.device
    assert [o for _, o in seen[1:]] == ["device", None]
