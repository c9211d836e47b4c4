"""The analysis facts the SFX1xx rules added (and the analysis bugs they fixed)."""

from __future__ import annotations

import libcst as cst
import pytest
from libcst.metadata import MetadataWrapper

from syncfix.analysis import Device, Kind, Memory, ModuleAnalysis

PRELUDE = (
    "import numpy as np\nimport time\nimport torch\nfrom torch.utils.data import DataLoader\n"
    "def f(p: float, t: torch.Tensor, xs: list, ds):\n    n = 3\n    a = np.arange(4)\n"
)


def _last_expr(body: str) -> tuple[ModuleAnalysis, cst.BaseExpression]:
    """Analyse PRELUDE + body; return the expression of the last line (``_ = <expr>``)."""
    wrapper = MetadataWrapper(cst.parse_module(PRELUDE + body))
    a = ModuleAnalysis(wrapper)
    found: list[cst.BaseExpression] = []

    class V(cst.CSTVisitor):
        def visit_Assign(self, node: cst.Assign) -> None:
            target = node.targets[0].target
            if isinstance(target, cst.Name) and target.value == "_":
                found.append(node.value)

    wrapper.module.visit(V())
    return a, found[-1]


@pytest.mark.parametrize(
    "expr,expected",
    [
        ("1", "int"), ("-2.5", "float"), ("True", "bool"), ("n", "int"), ("n / 2", "float"),
        ("n * 2 + 1", "int"), ("float(p)", "float"), ("len(xs)", "int"), ("not t", "bool"),
        ("n < 2", "bool"), ("p", None), ("a.sum()", None), ("t.item()", None), ("n ** 2", None),
        ("max(n, 2)", None), ("np.float32(1)", None), ("[i for i in range(3)][0] + 0", None),
    ],
)
def test_python_number_type(expr, expected):
    a, e = _last_expr(f"    _ = {expr}\n")
    assert a.python_number_type(e) == expected


@pytest.mark.parametrize(
    "expr,expected",
    [
        ("[1, 2.5, n]", True), ("a", True), ("a.sum()", True), ("a[1:] * 2", True),
        ("np.float32(2)", True), ("[[1, 2], [3, 4]]", True), ("t", False), ("[t, 1]", False),
        ("np.round(t)", False), ("xs", False), ("p", False), ("a * t", False),
    ],
)
def test_is_host_data(expr, expected):
    a, e = _last_expr(f"    _ = {expr}\n")
    assert a.is_host_data(e) is expected


@pytest.mark.parametrize(
    "setup,expected",
    [
        ("i = torch.arange(4)", True), ("i = torch.randint(0, 4, (3,))", True),
        ("i = torch.tensor([1, 2])", True), ("i = t.long()", True),
        ("i = torch.zeros(3, dtype=torch.int32)", True), ("i = torch.tensor([True])", False),
        ("i = torch.arange(4.0)", False), ("i = t", False), ("i = t > 0", False),
    ],
)
def test_is_integer_tensor(setup, expected):
    a, e = _last_expr(f"    {setup}\n    _ = i\n")
    assert a.is_integer_tensor(e) is expected


def test_for_target_kills_loop_carried_rebinding():
    body = (
        "    for b in DataLoader(ds):\n        _ = b\n"
        "        b = {k: v.cuda() for k, v in b.items()}\n"
    )
    a, e = _last_expr(body)
    assert a.value(e).kind is Kind.BATCH


def test_rebinding_in_while_loop_still_carried():
    a, e = _last_expr("    x = torch.ones(3)\n    while True:\n        _ = x\n        x = x.cuda()\n")
    assert a.value(e).device is Device.CUDA_OR_CPU


def test_a_binding_at_the_top_of_a_while_body_kills_the_carried_one():
    # ``batch = next(it)`` is redone before the copy every iteration: last copy never reaches
    body = "    it = iter(DataLoader(ds))\n    while True:\n        x, y = next(it)\n        _ = x\n        x = x.cuda()\n"
    a, e = _last_expr(body)
    v = a.value(e)
    assert (v.kind, v.device) == (Kind.BATCH, Device.CPU)
    # not when the rebinding may be skipped (inside an ``if``)
    body = "    x = torch.ones(3)\n    while True:\n        if c:\n            x = torch.ones(3)\n        _ = x\n        x = x.cuda()\n"
    a, e = _last_expr(body)
    assert a.value(e).device is Device.CUDA_OR_CPU


def test_a_running_total_reset_each_epoch_keeps_its_sum():
    # ``total += ...`` has no LibCST access: its bindings come from the loops around it, the outer
    # one included, whatever the reset above the inner loop (else it read as a number)
    body = (
        "    for epoch in range(n):\n        total = 0\n        for step, batch in enumerate(loader):\n"
        "            with acc.accumulate(model):\n                loss = model(batch)\n"
        "                total += acc.reduce(loss.detach().float(), reduction='sum')\n"
        "        if n:\n            _ = total\n"
    )
    a, e = _last_expr(body)
    assert a.value(e).kind is not Kind.NUMBER


def test_items_of_a_batch_keep_its_memory():
    body = "    for b in DataLoader(ds, pin_memory=True):\n        for k, v in b.items():\n            _ = v\n"
    a, e = _last_expr(body)
    v = a.value(e)
    assert (v.kind, v.memory, v.fresh) == (Kind.BATCH, Memory.PINNED, True)


def test_method_of_a_call_result_is_not_a_torch_function():
    a, e = _last_expr("    _ = torch.ones(3).cuda()\n")
    assert a.value(e).on_cuda


def test_torch_nn_layer_is_a_module_and_its_output_follows_the_input():
    a, e = _last_expr("    m = torch.nn.Linear(3, 3).cuda()\n    _ = m(torch.ones(3).cuda())\n")
    assert a.value(e).on_cuda


def test_numpy_method_is_not_a_tensor():
    a, e = _last_expr("    _ = a.sum()\n")
    assert a.value(e).kind is Kind.NDARRAY


def test_clock_read():
    a, e = _last_expr("    _ = time.perf_counter() - 1\n")
    assert a.is_clock_read(e)
    a, e = _last_expr("    _ = time.sleep(1)\n")
    assert not a.is_clock_read(e)


def test_parameter_is_a_tensor_not_a_layer():
    a, e = _last_expr("    _ = torch.nn.Parameter(torch.randn(3, device='cuda'))\n")
    assert a.value(e).on_cuda


def test_range_counter_is_an_int():
    a, e = _last_expr("    for i in range(n):\n        _ = i * 0.5\n")
    assert a.python_number_type(e) == "float"
    a, e = _last_expr("    for i in xs:\n        _ = i\n")
    assert a.python_number_type(e) is None


@pytest.mark.parametrize(
    "body,device",
    [
        # a plain rebinding before the use is the only binding that reaches it
        ("    x = torch.ones(3)\n    x = x.cuda()\n    _ = x\n", Device.CUDA),
        ("    x = b[0]\n    x = torch.ones(3)\n    _ = x\n", Device.CPU),
        # in a loop body, before an inner loop (detr's `m_id = torch.from_numpy(...)`)
        (
            "    for b in DataLoader(ds):\n        m = b.cuda()\n        m = torch.ones(2)\n"
            "        for i in range(3):\n            _ = m\n",
            Device.CPU,
        ),
        # the rebinding may be skipped: joined
        ("    x = torch.ones(3)\n    if c:\n        x = x.cuda()\n    _ = x\n", Device.CUDA_OR_CPU),
        ("    x = torch.ones(3)\n    try:\n        x = x.cuda()\n    except RuntimeError:\n        pass\n    _ = x\n", Device.CUDA_OR_CPU),
        # a try that binds it in its body and in every handler (stargan's refilled iterator)
        ("    x = torch.ones(3).cuda()\n    try:\n        x = torch.ones(3)\n    except RuntimeError:\n        x = torch.zeros(3)\n    _ = x\n", Device.CPU),
        ("    x = torch.ones(3).cuda()\n    try:\n        x = torch.ones(3)\n    except RuntimeError: x = torch.zeros(3)\n    _ = x\n", Device.CPU),
        ("    x = torch.ones(3).cuda()\n    try:\n        x = torch.ones(3)\n    except KeyError:\n        raise\n    except RuntimeError:\n        x = torch.zeros(3)\n    _ = x\n", Device.CPU),
        # a handler that neither binds it nor leaves, or binds it only under an ``if``: joined
        ("    x = torch.ones(3).cuda()\n    try:\n        x = torch.ones(3)\n    except RuntimeError:\n        print(1)\n    _ = x\n", Device.CUDA_OR_CPU),
        ("    x = torch.ones(3).cuda()\n    try:\n        x = torch.ones(3)\n    except RuntimeError:\n        if c:\n            x = torch.zeros(3)\n    _ = x\n", Device.CUDA_OR_CPU),
        ("    x = torch.ones(3).cuda()\n    try:\n        if c:\n            x = torch.ones(3)\n    except RuntimeError:\n        x = torch.zeros(3)\n    _ = x\n", Device.CUDA_OR_CPU),
        ("    x = torch.ones(3)\n    for _i in range(2):\n        x = x.cuda()\n    _ = x\n", Device.CUDA_OR_CPU),
        # a nested function may rebind it through ``nonlocal`` when it is called in between
        (
            "    x = torch.ones(3).cuda()\n    def g():\n        nonlocal x\n        x = torch.ones(3)\n"
            "    x = torch.zeros(3).cuda()\n    g()\n    _ = x\n",
            Device.CUDA_OR_CPU,
        ),
    ],
)
def test_a_plain_rebinding_before_a_use_kills_the_earlier_bindings(body, device):
    a, e = _last_expr(body)
    assert a.value(e).device is device


def test_a_lambda_reads_the_binding_at_its_call_not_its_definition():
    a, module = _analyse_body("    x = torch.ones(3)\n    g = lambda: x\n    x = x.cuda()\n    return g\n")
    use = next(n for n in a.nodes_within(module, cst.Lambda))
    assert a.value(use.body).device is Device.CUDA_OR_CPU


def test_a_while_test_runs_again_after_the_bodys_bindings():
    a, module = _analyse_body("    x = torch.ones(3)\n    while x.sum() > 0:\n        x = x.cuda()\n")
    loop = next(n for n in a.nodes_within(module, cst.While))
    assert a.value(loop.test.left.func.value).device is Device.CUDA_OR_CPU


def test_the_first_iterable_of_a_comprehension_sees_the_last_binding_before_it():
    # flownet2's ``losses = model(...)``, ``losses = [torch.mean(l) for l in losses]``, then
    # ``[v.item() for v in losses]``: the first ``for``'s iterable is evaluated at once, where
    # the comprehension stands; so is an inner one's of a list comprehension (it runs to the
    # end right there), not a generator's (or a lambda's), which runs later
    a, module = _analyse_body(
        "    for b in range(3):\n        xs = f(b)\n        xs = [torch.ones(2).cuda() for _ in xs]\n"
        "        ys = [v.sum() for v in xs]\n        zs = [w for u in xs for w in xs]\n"
        "        gs = (w for u in xs for w in xs)\n"
    )
    _, ys, zs = a.nodes_within(module, cst.ListComp)
    (gs,) = a.nodes_within(module, cst.GeneratorExp)
    assert [type(v) for v in a.reaching_values(ys.for_in.iter)] == [cst.ListComp]
    assert [type(v) for v in a.reaching_values(zs.for_in.iter)] == [cst.ListComp]
    assert [type(v) for v in a.reaching_values(zs.for_in.inner_for_in.iter)] == [cst.ListComp]
    inner = a.reaching_values(gs.for_in.inner_for_in.iter)
    assert inner is None or len(inner) == 2  # not narrowed to the last binding


def _analyse_body(body: str) -> tuple[ModuleAnalysis, cst.Module]:
    wrapper = MetadataWrapper(cst.parse_module(PRELUDE + body))
    return ModuleAnalysis(wrapper), wrapper.module


def test_an_augmented_assignment_keeps_the_tensor_it_changes_in_place():
    # ``buf += 1`` is the pinned buffer itself, not a fresh pageable tensor
    a, e = _last_expr("    buf = torch.empty(4, pin_memory=True)\n    buf += 1\n    _ = buf\n")
    v = a.value(e)
    assert (v.kind, v.memory, v.fresh) == (Kind.TENSOR, Memory.PINNED, True)
    a, e = _last_expr("    buf = torch.empty(4, pin_memory=True)\n    for _i in range(2):\n        buf += 1\n        _ = buf\n")
    assert a.value(e).memory is Memory.PINNED
    # a number plus a tensor is a new tensor
    a, e = _last_expr("    s = 0.0\n    s += torch.ones(()).cuda()\n    _ = s\n")
    assert a.value(e).device is Device.CUDA
    # what may be either (a loop-carried total): a tensor, nothing else claimed
    a, e = _last_expr("    s = 0.0\n    for _i in range(2):\n        s += torch.ones(())\n        _ = s\n")
    v = a.value(e)
    assert (v.kind, v.device, v.fresh) == (Kind.TENSOR, Device.UNKNOWN, False)


def test_views_and_reorderings_keep_the_dtype_kind():
    # dino's ``correct.narrow(1, 0, 1).sum()`` of a comparison: an integer count
    a, e = _last_expr("    c = t.eq(t)\n    _ = c.narrow(1, 0, 1).sum()\n")
    assert a.dtype_kind(e) == "int"
    a, e = _last_expr("    _ = t.float().transpose(0, 1).flip(0).sum()\n")
    assert a.dtype_kind(e) == "float"


@pytest.mark.parametrize(
    ("body", "kind", "device"),
    [
        # decision-transformer's rollout: ``actions += [a]`` extends a list; torch.tensor of it is on the CPU
        ("    acts = []\n    for a in xs:\n        acts += [a]\n        _ = torch.tensor(acts)\n", Kind.TENSOR, Device.CPU),
        ("    acts = []\n    acts += [a for a in xs]\n    _ = torch.tensor(acts)\n", Kind.TENSOR, Device.CPU),
        # anything else added to it is not known to keep it a list
        ("    acts = []\n    acts += xs\n    _ = acts\n", Kind.UNKNOWN, Device.UNKNOWN),
    ],
)
def test_a_list_extended_in_place_stays_a_list(body, kind, device):
    a, e = _last_expr(body)
    v = a.value(e)
    assert (v.kind, v.device) == (kind, device)
