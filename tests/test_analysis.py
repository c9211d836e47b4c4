"""The shared analysis layer, pinned down on its own before rules rely on it."""

from __future__ import annotations

import textwrap

import libcst as cst
import pytest
from libcst.metadata import MetadataWrapper

from syncfix.analysis import Device, Kind, Memory, ModuleAnalysis


def analyse(src: str) -> tuple[ModuleAnalysis, cst.Module]:
    module = cst.parse_module(textwrap.dedent(src))
    wrapper = MetadataWrapper(module, unsafe_skip_copy=True)
    return ModuleAnalysis(wrapper), module


def find(module: cst.Module, code: str, kind=cst.CSTNode) -> cst.CSTNode:
    """The first node of ``kind`` whose source text is ``code``."""
    found: list[cst.CSTNode] = []

    class V(cst.CSTVisitor):
        def on_visit(self, node: cst.CSTNode) -> bool:
            if not found and isinstance(node, kind) and module.code_for_node(node).strip() == code:
                found.append(node)
            return not found

    module.visit(V())
    assert found, f"no node {code!r}"
    return found[0]


def last_name(module: cst.Module, name: str) -> cst.Name:
    """The last Name node ``name`` in the module (a use, after its bindings)."""
    names: list[cst.Name] = []

    class V(cst.CSTVisitor):
        def visit_Name(self, node: cst.Name) -> None:
            if node.value == name:
                names.append(node)

    module.visit(V())
    return names[-1]


PROVENANCE = [
    # (source, expression whose value we ask, kind, device)
    ("import torch\nx = torch.randn(3)\nuse(x)", "x", Kind.TENSOR, Device.CPU),
    ("import torch\nx = torch.randn(3, device='cuda')\nuse(x)", "x", Kind.TENSOR, Device.CUDA),
    ("import torch\nx = torch.randn(3).cuda()\nuse(x)", "x", Kind.TENSOR, Device.CUDA),
    ("import torch\nx = torch.randn(3).to('cuda:1')\nuse(x)", "x", Kind.TENSOR, Device.CUDA),
    ("import torch\nd = torch.device('cuda', 0)\nx = torch.ones(2).to(d)\nuse(x)", "x", Kind.TENSOR, Device.CUDA),
    ("import torch as T\nx = T.zeros(2, device='cuda') * 2 + 1\nuse(x)", "x", Kind.TENSOR, Device.CUDA),
    ("import torch.nn.functional as F\nimport torch\ny = F.relu(torch.ones(2).cuda())\nuse(y)", "y", Kind.TENSOR, Device.CUDA),
    ("from torch import cuda as c, ones\nx = ones(2).cuda()\nuse(x)", "x", Kind.TENSOR, Device.CUDA),
    ("import torch\nx = torch.ones(2).cuda()\ny = x[0]\nuse(y)", "y", Kind.TENSOR, Device.CUDA),
    ("import torch\nx = torch.ones(2).cuda()\ny = x.sum().item()\nuse(y)", "y", Kind.NUMBER, Device.UNKNOWN),
    ("import numpy as np\nx = np.ones(3)\nuse(x)", "x", Kind.NDARRAY, Device.UNKNOWN),
    # numpy's arithmetic and comparisons give arrays; an operand that may be a tensor does not
    ("import numpy as np\nx = np.ones(3) * 2 + 1\nuse(x)", "x", Kind.NDARRAY, Device.UNKNOWN),
    ("import numpy as np\nx = np.zeros(3) == 10\nuse(x)", "x", Kind.NDARRAY, Device.UNKNOWN),
    ("import numpy as np\ndef f(t):\n    x = np.ones(3) * t\n    use(x)", "x", Kind.UNKNOWN, Device.UNKNOWN),
    ("import numpy as np\ndef f(t):\n    x = np.ones(3) == t\n    use(x)", "x", Kind.UNKNOWN, Device.UNKNOWN),
    ("import numpy as np\nimport torch\nx = np.ones(3) + torch.ones(3)\nuse(x)", "x", Kind.TENSOR, Device.CPU),
    # libraries that never return tensors: their arrays, rows and unpacked items are not tensors
    ("import cv2\ndef f(m):\n    x = cv2.distanceTransform(m, 2, 0).reshape(-1)\n    use(x)", "x", Kind.NDARRAY, Device.UNKNOWN),
    ("from scipy.optimize import linear_sum_assignment as lsa\ndef f(c):\n    r, k = lsa(c)\n    use(r)", "r", Kind.NDARRAY, Device.UNKNOWN),
    ("import numpy as np\ndef f():\n    for row in np.ones((2, 2)):\n        use(row)", "row", Kind.NDARRAY, Device.UNKNOWN),
    ("from PIL import Image\ndef f(p):\n    x = Image.open(p)\n    use(x)", "x", Kind.OTHER, Device.UNKNOWN),
    ("import cv2s\ndef f(m):\n    x = cv2s.load(m)\n    use(x)", "x", Kind.UNKNOWN, Device.UNKNOWN),
    # ``.type(dtype)`` casts on the tensor's device; ``.type()`` is a string; a type name may move it
    ("import torch\nx = torch.ones(2).type(torch.float16)\nuse(x)", "x", Kind.TENSOR, Device.CPU),
    ("import torch\ndt = torch.half\nx = torch.ones(2).type(dt)\nuse(x)", "x", Kind.TENSOR, Device.CPU),
    # a parameter callers may set to a type name: a tensor, device unknown
    ("import torch\ndef f(dt=torch.half):\n    x = torch.ones(2).type(dt)\n    use(x)", "x", Kind.TENSOR, Device.UNKNOWN),
    ("import torch\nx = torch.ones(2).type('torch.cuda.FloatTensor')\nuse(x)", "x", Kind.TENSOR, Device.UNKNOWN),
    ("import torch\nx = torch.ones(2).type()\nuse(x)", "x", Kind.UNKNOWN, Device.UNKNOWN),
    ("x = 3.0\nuse(x)", "x", Kind.NUMBER, Device.UNKNOWN),
    # the builtins that give back what they are given: a number only of numbers
    ("def f(xs):\n    x = sum(len(t) for t in xs) + max([1, 2]) + sum(range(3))\n    use(x)", "x", Kind.NUMBER, Device.UNKNOWN),
    ("def f(d):\n    x = sum(v for v in d.values())\n    use(x)", "x", Kind.UNKNOWN, Device.UNKNOWN),
    ("def f(xs):\n    x = sum(xs)\n    use(x)", "x", Kind.UNKNOWN, Device.UNKNOWN),
    ("import torch\nx = round(torch.ones(()).cuda())\nuse(x)", "x", Kind.UNKNOWN, Device.UNKNOWN),
    ("import torch\ndef f(t: torch.Tensor):\n    use(t)", "t", Kind.TENSOR, Device.UNKNOWN),
    ("def f(t):\n    use(t)", "t", Kind.UNKNOWN, Device.UNKNOWN),
    # an op over tensors it cannot list is where those tensors are, not on the CPU
    ("import torch\ndef f(t: torch.Tensor):\n    x = torch.cat([t[i] for i in range(2)])\n    use(x)", "x", Kind.TENSOR, Device.UNKNOWN),
    ("import torch\ndef g(t: torch.Tensor):\n    return [t]\ndef f(t: torch.Tensor):\n    x = torch.stack(g(t))\n    use(x)", "x", Kind.TENSOR, Device.UNKNOWN),
    ("import torch\ndef f(mats):\n    x = torch.block_diag(*mats)\n    use(x)", "x", Kind.TENSOR, Device.UNKNOWN),
    ("import torch\nx = torch.cat([torch.ones(2), torch.zeros(2)])\nuse(x)", "x", Kind.TENSOR, Device.CPU),
    ("import torch\nx = torch.cat([torch.ones(2).cuda()] * 2)\nuse(x)", "x", Kind.TENSOR, Device.UNKNOWN),
    # the tensor passed by keyword as ``input=`` places the result (HRNet's flip test)
    ("import torch\nimport torch.nn.functional as F\nx = F.interpolate(input=torch.ones(1, 1, 2, 2).cuda(), size=(4, 4))\nuse(x)", "x", Kind.TENSOR, Device.CUDA),
    # a loader batch's tensors joined: where the batch is (FlowNet's image pair, ``torch.cat(input, 1)``)
    ("import torch\nfrom torch.utils.data import DataLoader\ndef f(ds):\n    for a, b in DataLoader(ds):\n        x = torch.cat(a, 1)\n        use(x)", "x", Kind.TENSOR, Device.CPU),
    # a list filled only with ``.cpu()`` copies stacks into a CPU tensor; one stored into, unknown
    ("import torch\ndef f(G, zs):\n    ims = []\n    for z in zs:\n        ims += [G(z).cpu()]\n    x = torch.stack(ims)\n    use(x)", "x", Kind.TENSOR, Device.CPU),
    ("import torch\ndef f(G, zs):\n    ims = []\n    for z in zs:\n        ims.append(G(z).cpu())\n    ims[0] = G(z)\n    x = torch.stack(ims)\n    use(x)", "x", Kind.TENSOR, Device.UNKNOWN),
]


@pytest.mark.parametrize("src,name,kind,device", PROVENANCE)
def test_tensor_provenance(src, name, kind, device):
    a, module = analyse(src)
    v = a.value(last_name(module, name))
    assert v.kind is kind
    if kind is Kind.TENSOR:
        assert v.device is device


def test_numpy_and_torch_fallback_import_is_not_proved():
    a, module = analyse(
        """
        try:
            import torch as T
        except ImportError:
            import numpy as T
        x = T.zeros(3)
        use(x)
        """
    )
    call = find(module, "T.zeros(3)", cst.Call)
    assert a.qualnames(call.func) == {"torch.zeros", "numpy.zeros"}
    assert a.qualname(call.func) is None  # candidates disagree: nothing proved
    assert not a.is_tensor(last_name(module, "x"))


DEVICES = [
    ('"cuda"', Device.CUDA),
    ('"cuda:3"', Device.CUDA),
    ('"cpu"', Device.CPU),
    ('"mps"', Device.UNKNOWN),
    ('f"cuda:{rank}"', Device.CUDA),
    ('torch.device(f"cuda:{rank:d}")', Device.CUDA),  # BigVGAN's train.py
    ('f"cpu:{rank}"', Device.UNKNOWN),
    ('torch.device("cuda", rank)', Device.CUDA),
    ('torch.device("cpu")', Device.CPU),
    ('"cuda" if torch.cuda.is_available() else "cpu"', Device.CUDA_OR_CPU),
    ('"cuda" if torch.cuda.is_available() else "mps"', Device.UNKNOWN),
    ("args.device", Device.UNKNOWN),
]


@pytest.mark.parametrize("expr,device", DEVICES)
def test_device_idioms(expr, device):
    a, module = analyse(f"import torch\nrank = 0\nd = {expr}\nuse(d)\n")
    assert a.device_of(last_name(module, "d")) is device


def test_loader_batches_are_fresh_cpu_tensors():
    a, module = analyse(
        """
        from torch.utils.data import DataLoader
        def f(ds):
            for i, (x, y) in enumerate(DataLoader(ds, batch_size=4, pin_memory=True)):
                use(x)
        """
    )
    v = a.value(last_name(module, "x"))
    assert v.is_tensor and v.device is Device.CPU and v.fresh and v.memory is Memory.PINNED


def test_custom_collate_is_not_fresh():
    a, module = analyse(
        """
        from torch.utils.data import DataLoader
        def f(ds, fn):
            for x in DataLoader(ds, collate_fn=fn):
                use(x)
        """
    )
    assert not a.value(last_name(module, "x")).fresh


def test_loop_carried_binding_is_joined():
    a, module = analyse(
        """
        import torch
        x = torch.zeros(3)
        for _ in range(3):
            use(x)
            x = x.cuda()
        """
    )
    use = find(module, "use(x)", cst.Call)
    v = a.value(use.args[0].value)
    assert v.is_tensor and v.device is Device.CUDA_OR_CPU  # cpu first, cuda after one iteration


def test_module_instances_and_their_outputs():
    a, module = analyse(
        """
        import torch
        class Net(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.fc = torch.nn.Linear(2, 2)
            def forward(self, x):
                h = self.fc(x)
                use(h)
        net = Net()
        out = net(torch.ones(2, device="cuda"))
        use(net, out)
        """
    )
    assert a.value(last_name(module, "net")).kind is Kind.MODULE
    assert a.value(last_name(module, "out")).device is Device.CUDA
    assert a.value(last_name(module, "h")).kind is Kind.TENSOR


def test_a_classmethods_cls_of_a_module_class_and_a_torchaudio_transform_make_modules():
    # llm-awq's `q_linear = cls(...)` in `from_float`; BigVGAN's `torchaudio.transforms.Resample`
    a, module = analyse(
        """
        import torch
        import torchaudio
        class QLinear(torch.nn.Module):
            @classmethod
            def from_float(cls, n):
                q = cls(n)
                use(q)
            @classmethod
            def other(cls, n):
                cls = make(n)
                p = cls(n)
                use(p)
        class Plain:
            @classmethod
            def make(cls, n):
                r = cls(n)
                use(r)
        resample = torchaudio.transforms.Resample(16000, 8000)
        use(resample)
        """
    )
    assert a.value(last_name(module, "q")).kind is Kind.MODULE
    assert a.value(last_name(module, "p")).kind is not Kind.MODULE  # `cls` rebound
    assert a.value(last_name(module, "r")).kind is not Kind.MODULE
    assert a.value(last_name(module, "resample")).kind is Kind.MODULE


def test_layers_held_by_module_containers_and_their_outputs():
    # nanoGPT: ``self.transformer = nn.ModuleDict(dict(wte=..., h=nn.ModuleList([...]), ln_f=...))``
    a, module = analyse(
        """
        import torch
        from torch import nn
        class GPT(nn.Module):
            def __init__(self, n, extra):
                super().__init__()
                self.transformer = nn.ModuleDict(dict(wte=nn.Embedding(9, n), h=nn.ModuleList([nn.Linear(n, n)]), ln_f=nn.LayerNorm(n)))
                self.heads = nn.ModuleDict({"a": nn.Linear(n, 1)})
                self.more = nn.ModuleDict(extra)
            def forward(self, idx):
                x = self.transformer.wte(idx)
                for block in self.transformer.h:
                    x = block(x)
                y = self.transformer.ln_f(x)
                for key in self.heads:
                    use(key)
                z = self.more.b(x)
                w = self.transformer.missing(x)
                use(self.heads.a(y), z, w)
        """
    )
    for name in ("x", "y"):
        assert a.value(last_name(module, name)).kind is Kind.TENSOR, name
    assert a.value(last_name(module, "block")).kind is Kind.MODULE
    assert a.value(last_name(module, "key")).kind is Kind.UNKNOWN  # a module dict's keys
    for name in ("z", "w"):  # a dict syncfix cannot read, a key it does not hold
        assert a.value(last_name(module, name)).kind is Kind.UNKNOWN, name


def test_items_of_module_containers_are_modules():
    # ESPnet: ``self.criterion = nn.ModuleDict()`` filled per language, then
    # ``self.criterion[language](pred, target)`` every forward: a module's output
    a, module = analyse(
        """
        import torch
        from torch import nn
        class Net(nn.Module):
            def __init__(self, langs, extra):
                super().__init__()
                self.criterion = nn.ModuleDict()
                for lang in langs:
                    self.criterion[lang] = nn.CrossEntropyLoss()
                self.heads = nn.ModuleList([nn.Linear(4, 4) for _ in langs])
                self.table = dict(extra)
            def forward(self, x, y, language, k):
                loss = self.criterion[language](x, y)
                head = self.heads[k]
                other = self.table[language]
                use(loss, head, other)
        """
    )
    assert a.value(last_name(module, "loss")).kind is Kind.TENSOR
    assert a.value(last_name(module, "head")).kind is Kind.MODULE
    assert a.value(last_name(module, "other")).kind is not Kind.MODULE  # a plain dict's item


def test_the_tensors_torch_returns_in_a_sequence_are_on_their_inputs_device():
    a, module = analyse(
        """
        import torch
        def f(h, w, z):
            y, x = torch.meshgrid(torch.arange(h), torch.arange(w), indexing="ij")
            first, second = torch.chunk(torch.ones(4, device="cuda"), 2)
            parts = torch.split(z, 2)
            use(y, x, first, second, parts)
        """
    )
    for name in ("y", "x"):
        v = a.value(last_name(module, name))
        assert v.kind is Kind.TENSOR and v.device is Device.CPU, name
    for name in ("first", "second"):
        v = a.value(last_name(module, name))
        assert v.kind is Kind.TENSOR and v.device is Device.CUDA, name
    assert a.value(last_name(module, "parts")).kind is not Kind.TENSORS  # of a value syncfix cannot name


def test_effects_of_statements():
    a, module = analyse(
        """
        import torch
        def f(x, opt, buf):
            y = x + 1
            buf.copy_(y)
            buf[0] = 3
            x += 1
            opt.step()
            torch.add(x, y, out=buf)
            if y.sum() > 0:
                break_here = 1
            for i in range(3):
                continue
        """
    )
    fn = module.body[1]
    stmts = fn.body.body
    fx = [a.effects(s) for s in stmts]
    assert fx[0].writes == {"y"} and {"x"} <= fx[0].reads and not fx[0].may_mutate_anything
    assert fx[1].inplace == {"buf"}
    assert fx[2].inplace == {"buf"}
    assert fx[3].inplace == {"x"}
    assert fx[4].may_mutate_anything  # an unknown method call
    assert fx[5].inplace == {"buf"}
    assert fx[6].exits == set() and fx[6].writes == {"break_here"}
    assert fx[7].exits == {"continue"}


def test_a_lambdas_parameter_and_a_comprehensions_variable_are_not_read_by_the_statement():
    # Towards-Realtime-MOT: `filter(lambda x: x.requires_grad, ...)` read no `x` of the loop's
    # `[len(x) for x in targets]`, yet made the batch's copy look written again (no fix)
    a, module = analyse(
        """
        def f(model, targets, x, d):
            opt = make(filter(lambda x, k=d: x.requires_grad, model.parameters()))
            n = sum([len(x) for x in targets])
            m = [x for _ in targets]
        """
    )
    stmts = module.body[0].body.body
    reads = [a.effects(s).reads for s in stmts]
    assert "x" not in reads[0] and {"d", "model", "make", "filter"} <= reads[0]
    assert "x" not in reads[1] and "targets" in reads[1]
    assert "x" in reads[2]  # a free name of the comprehension: the function's `x`


def test_effects_of_running_an_iterator():
    """Resuming a generator or a ``map`` runs code that may write anything; iterating a tensor,
    a display or ``range`` does not."""
    a, module = analyse(
        """
        import torch
        def f(x: torch.Tensor, g, it):
            names = ["a", "b"]
            next(g)
            for _ in g:
                pass
            total = sum(it)
            ys = [y for y in it]
            for n in names:
                pass
            for i, v in enumerate(x):
                pass
            for i in range(3):
                pass
        """
    )
    fn = module.body[1]
    fx = [a.effects(s) for s in fn.body.body]
    assert not fx[0].may_mutate_anything
    assert all(f.may_mutate_anything for f in fx[1:5])
    assert not any(f.may_mutate_anything for f in fx[5:])


def test_loops_and_hot_paths():
    a, module = analyse(
        """
        import torch
        def setup():
            x = torch.ones(2)
        def train(loader, model, opt):
            for b in loader:
                while True:
                    y = b + 1
        def forward(x):
            z = x * 2
        def step_fn(loss, opt):
            loss.backward()
            w = 1
        """
    )
    x_stmt = find(module, "x = torch.ones(2)", cst.SimpleStatementLine)
    y_stmt = find(module, "y = b + 1", cst.SimpleStatementLine)
    z_stmt = find(module, "z = x * 2", cst.SimpleStatementLine)
    w_stmt = find(module, "w = 1", cst.SimpleStatementLine)
    assert a.enclosing_loop(x_stmt) is None and not a.is_hot(x_stmt)
    loops = a.loops_around(y_stmt)
    assert [type(loop).__name__ for loop in loops] == ["While", "For"]
    assert a.is_hot(y_stmt) and a.is_hot(z_stmt) and a.is_hot(w_stmt)


def test_streams_are_detected():
    a, _ = analyse("import torch\ns = torch.cuda.Stream()\n")
    assert a.uses_streams
    b, _ = analyse("import torch\nx = torch.ones(2)\n")
    assert not b.uses_streams


def test_comparison_of_unknown_values_is_not_a_python_number():
    a, module = analyse("def f(logits, y):\n    acc = (logits == y)\n    n = 3 > 2\n    use(acc, n)\n")
    assert a.value(last_name(module, "acc")).kind is Kind.UNKNOWN
    assert a.value(last_name(module, "n")).kind is Kind.NUMBER


@pytest.mark.parametrize(
    "call",
    ["torch.nonzero(x)", "x.nonzero()", "nz(x)", "tnz(x)"],
)
def test_syntactic_precheck_keeps_aliased_callees(call):
    """``may_end_in`` lets the rules skip scope resolution for calls that cannot match; an
    ``import ... as`` alias must still reach the qualified-name check."""
    from syncfix.api import check_code

    src = (
        "import torch\nfrom torch import nonzero as nz\nimport torch as T\ntnz = T.nonzero\n"
        f"x = torch.ones(3, device='cuda')\nfor _ in range(3):\n    y = {call}\n"
    )
    codes = {f.code for f in check_code(src, select=["SFX205"])}
    assert codes == ({"SFX205"} if call != "tnz(x)" else set())


@pytest.mark.parametrize(
    "annotation, unpack, expected",
    [
        ("tuple[torch.nn.Module, torch.Tensor]", "a, b", Kind.TENSOR),
        ("typing.Tuple[int, torch.Tensor]", "a, b", Kind.TENSOR),
        ("tuple[torch.Tensor, torch.Tensor, int]", "a, b, c", Kind.TENSOR),
        ("tuple[torch.Tensor, int]", "a, b", Kind.UNKNOWN),  # b is the int
        # a sequence of tensors, any length: each item is a tensor
        ("tuple[torch.Tensor, ...]", "a, b", Kind.TENSOR),
        ("list[torch.Tensor]", "a, b", Kind.TENSOR),
        ("typing.Sequence[torch.Tensor]", "a, b", Kind.TENSOR),
        ("list[int]", "a, b", Kind.UNKNOWN),
        ('"tuple[int, torch.Tensor]"', "a, b", Kind.UNKNOWN),  # a string annotation is not read
    ],
)
def test_fixed_length_tuple_annotations_type_their_items(annotation, unpack, expected):
    src = f"import typing\nimport torch\ndef f(state: {annotation}):\n    {unpack} = state\n    return b\n"
    a, module = analyse(src)
    assert a.value(last_name(module, "b")).kind is expected


def test_a_binding_in_the_other_branch_reaches_only_a_name_that_outlives_the_call():
    # a local bound in the `if` never reaches its `else`; a global may, from an earlier call
    src = (
        "import torch\n"
        "cache = torch.ones(3)\n"
        "def step(first):\n"
        "    global cache\n"
        "    if first:\n"
        "        cache = torch.ones(3).pin_memory()\n"
        "    else:\n"
        "        return cache\n"
        "def local(first):\n"
        "    if first:\n"
        "        buf = torch.ones(3).pin_memory()\n"
        "    else:\n"
        "        buf = torch.ones(3)\n"
        "        return buf\n"
    )
    a, module = analyse(src)
    assert a.value(last_name(module, "buf")).memory is Memory.PAGEABLE
    assert a.value(last_name(module, "cache")).memory is not Memory.PAGEABLE


def test_a_sequence_of_tensors_is_no_tensor_but_its_items_are():
    src = (
        "import torch\n"
        "def f(xs: list[torch.Tensor], n):\n"
        "    for i in range(n):\n"
        "        if xs:\n"
        "            pass\n"
        "    return xs[0], xs[1:], [x for x in xs]\n"
    )
    a, module = analyse(src)
    first = find(module, "xs[0]", cst.Subscript)
    rest = find(module, "xs[1:]", cst.Subscript)
    comp = find(module, "[x for x in xs]", cst.ListComp)
    assert a.value(first).kind is Kind.TENSOR
    assert a.value(rest).kind is Kind.TENSORS and not a.value(rest).is_tensor
    assert a.value(comp.elt).kind is Kind.TENSOR
    from syncfix import check_code
    assert not [f for f in check_code(src) if f.line == 4]  # `if xs:` tests a list, not a tensor


GATHER = """
import torch
import torch.distributed as dist

def update(t, world, shape, other):
    sizes = [torch.zeros(1, dtype=torch.int32, device=t.device) for _ in range(world)]
    dist.all_gather(sizes, t)
    sizes = [x.item() for x in sizes]
    n = max(sizes)
    batches = [torch.zeros(n).to(t) for _ in sizes]
    dist.all_gather(batches, t)
    shaped = [torch.zeros(shape) for _ in range(world)]
    per_rank = [torch.zeros(r) for r in range(world)]
    grown = [torch.zeros(1) for _ in range(world)]
    grown.append(other)
    waited = [torch.zeros(1) for _ in range(world)]
    dist.all_gather(waited, t, async_op=True)
    k = max(sizes)
    growing = [torch.zeros(k) for _ in range(world) if (k := k + 1)]
    out = ([v for y in batches for v in y], [v for v in shaped], [v for v in per_rank], [v for v in grown], [v for v in waited], [v for v in growing])
"""


def test_lists_of_alike_tensors_built_here():
    a, m = analyse(GATHER)
    out = find(m, "out = ([v for y in batches for v in y], [v for v in shaped], [v for v in per_rank], [v for v in grown], [v for v in waited], [v for v in growing])", cst.Assign)
    reads = [el.value for el in out.value.elements]

    def element(read: cst.ListComp) -> str | None:
        e = a.uniform_list_element(read.for_in.iter, read)
        return None if e is None else m.code_for_node(e)

    # one expression of the same inputs, filled in place by a synchronous all_gather
    assert element(reads[0]) == "torch.zeros(n).to(t)"
    assert element(reads[1]) == "torch.zeros(shape)"  # alike, though of unknown rank
    assert element(reads[2]) is None  # the element uses the loop's variable
    assert element(reads[3]) is None  # another tensor was appended
    assert element(reads[4]) is None  # async_op: not known to be filled by the time of the read
    assert element(reads[5]) is None  # a walrus in the condition changes the size between elements
    # the sizes read back are Python scalars, so `torch.zeros(max(sizes))` is 1-D; not so a
    # size from the caller, which may be a tuple
    assert a.is_scalar_list(find(m, "[x.item() for x in sizes]", cst.ListComp))
    assert a.is_one_dim(find(m, "torch.zeros(n).to(t)", cst.Call))
    assert not a.is_one_dim(find(m, "torch.zeros(shape)", cst.Call))
    assert a.one_element_shape(find(m, "torch.zeros(1, dtype=torch.int32, device=t.device)", cst.Call)) == (1,)
    assert a.one_element_shape(find(m, "torch.zeros(n).to(t)", cst.Call)) is None


def test_in_a_for_body_only_that_loops_bindings_reach_its_target():
    # the second loop's target is bound before its body runs: the first loop's `value` (and
    # the parameter) never reach the use in it
    a, module = analyse(
        """
        def f(value, first: dict, second: dict, out: dict):
            for key, value in first.items():
                out[key] = value
            for key, value in second.items():
                out[key] = value + 1
        """
    )
    use = last_name(module, "value")
    loops = [n for n in a.structure.within(module, cst.For)]
    (binding,) = a.bindings(use)
    assert binding.node is loops[1].target.elements[1].value


def test_bindings_libcst_does_not_record_make_a_name_unknown():
    # a walrus in a comprehension and a match capture rebind the counter: it is no longer
    # provably an int, and python_number_type says so
    a, module = analyse(
        """
        def f(rows, x):
            for i in range(3):
                any((i := r) for r in rows)
                i
            for j in range(3):
                match x:
                    case [*_, j]:
                        pass
                j
            for k in range(3):
                k
        """
    )
    assert a.python_number_type(last_name(module, "i")) is None
    assert a.python_number_type(last_name(module, "j")) is None
    assert a.python_number_type(last_name(module, "k")) == "int"


def test_a_nonlocal_write_from_a_nested_function_still_reaches_a_for_target():
    # `g()` in the loop body rebinds `x` through `nonlocal`: the counter is not provably an int
    a, module = analyse(
        """
        def f():
            def g():
                nonlocal x
                x = 2**70
            for x in range(3):
                g()
                x
        """
    )
    use = last_name(module, "x")
    assert len(a.bindings(use)) == 2
    assert a.python_number_type(use) is None


def test_a_module_level_for_target_is_bound_by_that_loop_only():
    # a script's test loop reusing the training loop's names: the earlier loop's copies of
    # ``x`` do not reach the later loop's body, whose ``for`` binds ``x`` first
    a, module = analyse(
        """
        import torch
        for x in range(3):
            x = x + 2**70
        for x in range(3):
            x
        """
    )
    use = last_name(module, "x")
    assert len(a.bindings(use)) == 1
    assert a.python_number_type(use) == "int"


@pytest.mark.parametrize(
    "writer",
    [
        "def g():\n    global x\n    x = 2**70",  # a function run from the body through ``global``
        "def g():\n    globals()['x'] = 2**70",  # the namespace written by name
        "def g():\n    setattr(sys.modules[__name__], 'x', 2**70)",
    ],
)
def test_a_module_level_for_target_still_sees_writes_a_call_may_make(writer):
    a, module = analyse(f"import sys\n{writer}\nx = 2**70\nfor x in range(3):\n    g()\n    x\n")
    use = last_name(module, "x")
    assert len(a.bindings(use)) >= 2
    assert a.python_number_type(use) is None


@pytest.mark.parametrize(
    ("expr", "dtype"),
    [
        ("torch.zeros((), device=device)", "torch.float32"),  # the default float
        ("torch.zeros((), dtype=None)", "torch.float32"),
        ("torch.zeros((), dtype=torch.long)", "torch.int64"),
        ("torch.zeros((), dtype=dtype)", None),  # a dtype syncfix cannot name is not the default
        ("torch.tensor([1, 2], dtype=dtype)", None),
    ],
)
def test_a_factory_dtype_named_by_a_variable_is_unknown(expr, dtype):
    a, module = analyse(f"import torch\n\n\ndef f(device, dtype):\n    x = {expr}\n")
    call = find(module, expr, cst.Call)
    assert a.canonical_dtype(call) == dtype


def test_a_factory_given_keyword_arguments_by_dict_may_require_grad():
    # ``**kw`` may hold ``requires_grad=True``: not provably grad-free
    a, module = analyse("import torch\n\n\ndef f(kw):\n    x = torch.ones(3, **kw)\n    y = torch.ones(3)\n")
    assert not a.is_grad_free(find(module, "torch.ones(3, **kw)", cst.Call))
    assert a.is_grad_free(find(module, "torch.ones(3)", cst.Call))


@pytest.mark.parametrize(
    ("imports", "alias"),
    [
        ("import torch\n", "torch"),
        ("import torch.utils.data\n", "torch"),  # binds `torch` as well
        ("import torch as th\n", "th"),
        ("import torch.nn as nn\n", None),  # binds only `nn`
        ("from torch import nn\n", None),
        # in a top-level try: bound there, or the module stops
        ("try:\n    import torch\nexcept ImportError:\n    raise\n", "torch"),
    ],
)
def test_the_name_an_import_binds_torch_to(imports, alias):
    a, module = analyse(imports + "x = 1\n")
    assert a.torch_alias == alias
    assert a.torch_alias_at(module.body[-1]) == alias


def test_a_name_also_bound_to_something_else_is_not_where_fixes_find_torch():
    a, module = analyse("try:\n    import torch\nexcept ImportError:\n    torch = None\nx = 1\n")
    assert a.torch_alias_at(module.body[-1]) is None


def test_a_cast_of_an_unknown_value_has_the_cast_dtype_in_the_likely_view_only():
    import libcst as cst
    from libcst.metadata import MetadataWrapper

    from syncfix.analysis import ModuleAnalysis

    src = "import torch\ndef f(dr):\n    a = dr.float()\n    b = torch.mean(dr.float())\n    c = dr.argmax()\n"
    analysis = ModuleAnalysis(MetadataWrapper(cst.parse_module(src), unsafe_skip_copy=True), source=src)
    calls = {analysis.module.code_for_node(c): c for c in analysis.structure.of_type(cst.Call)}
    proof, likely = analysis, analysis.likely
    for code, dtype, kind in [("dr.float()", "torch.float32", "float"), ("torch.mean(dr.float())", "torch.float32", "float"),
                              ("dr.argmax()", "torch.int64", "int")]:
        assert proof.dtype_of(calls[code]) is None and proof.dtype_kind(calls[code]) is None
        assert likely.dtype_of(calls[code]) == dtype and likely.dtype_kind(calls[code]) == kind


def test_a_copy_to_a_value_named_as_a_device_keeps_its_dtype_in_the_likely_view_only():
    import libcst as cst
    from libcst.metadata import MetadataWrapper

    from syncfix.analysis import ModuleAnalysis

    src = (
        "import torch\ndef f(args, n, device, other):\n"
        "    m = torch.eye(n, dtype=torch.bool)\n"
        "    a = m.to(args.device)\n    b = m.to(device)\n    c = m.to(other)\n"
        "    d = m.to(args.model_dtype)\n"
    )
    analysis = ModuleAnalysis(MetadataWrapper(cst.parse_module(src), unsafe_skip_copy=True), source=src)
    calls = {analysis.module.code_for_node(c): c for c in analysis.structure.of_type(cst.Call)}
    for code in ("m.to(args.device)", "m.to(device)"):
        assert analysis.dtype_of(calls[code]) is None  # a proof needs the device's value
        assert analysis.likely.dtype_of(calls[code]) == "torch.bool"
    for code in ("m.to(other)", "m.to(args.model_dtype)"):  # a tensor's dtype, or a cast
        assert analysis.likely.dtype_of(calls[code]) is None


def test_float_constants_of_math_and_numpy_are_python_floats():
    # fairseq's ``torch.tensor(-math.inf)``: a CPU tensor built from a Python float; a local
    # ``inf`` of unknown origin is not one
    a, module = analyse(
        """
        import math
        import numpy as np
        import torch

        def f(inf):
            x = torch.tensor(-math.inf)
            y = torch.tensor(np.pi)
            z = torch.tensor(inf)
            x, y, z
        """
    )
    for name in ("x", "y"):
        v = a.value(last_name(module, name))
        assert v.kind is Kind.TENSOR and v.device is Device.CPU
    assert a.value(last_name(module, "z")).device is Device.UNKNOWN
    (neg,) = [n for n in a.structure.within(module, cst.UnaryOperation)]
    assert a.python_number_type(neg) == "float"


def test_a_legacy_constructor_of_a_list_comprehension_is_a_cpu_tensor():
    # mmengine's ``torch.Tensor([t.shape for t in tensors])``: a new CPU tensor from a list
    a, module = analyse(
        """
        import torch

        def f(tensors):
            sizes = torch.Tensor([t.shape for t in tensors])
            reads = torch.Tensor([t.item() for t in tensors])
            sizes, reads
        """
    )
    v = a.value(last_name(module, "sizes"))
    assert v.kind is Kind.TENSOR and v.device is Device.CPU and v.memory is Memory.PAGEABLE
    # elements that may be tensors: still a host tensor (or an error) in new memory, which no
    # list can share (FastSpeech2's ``torch.LongTensor(mel_len)`` of a list it appended to)
    reads = a.value(last_name(module, "reads"))
    assert reads.kind is Kind.TENSOR and reads.device is Device.CPU and reads.memory is Memory.PAGEABLE and reads.fresh


def test_a_plain_tensor_constructor_of_an_unknown_value_may_be_on_the_gpu():
    # measured on an H200: ``torch.Tensor(cuda_t)`` returns a CUDA tensor, where
    # ``torch.FloatTensor(cuda_t)`` raises (expected device=cpu)
    a, module = analyse(
        """
        import torch

        def f(x):
            plain = torch.Tensor(x)
            typed = torch.FloatTensor(x)
            plain, typed
        """
    )
    assert a.value(last_name(module, "plain")).device is not Device.CPU
    typed = a.value(last_name(module, "typed"))
    assert typed.kind is Kind.TENSOR and typed.device is Device.CPU and typed.memory is Memory.UNKNOWN


def test_a_parameter_annotated_as_a_numpy_array_is_one():
    # OLMo's ``find_periodic_sequences(arr: np.ndarray, ...)``: no tensor, whatever is passed
    a, module = analyse(
        """
        import numpy as np
        import numpy.typing as npt

        def f(arr: np.ndarray, ids: npt.NDArray[np.int64]):
            arr.sum(), ids
        """
    )
    assert a.value(last_name(module, "ids")).kind is Kind.NDARRAY
    (total,) = [c for c in a.structure.within(module, cst.Call)]
    assert a.value(total).kind is Kind.NDARRAY


def _assigned(src: str):
    """The analysis of ``src`` and, by the name each ``name = value`` line assigns, its value."""
    import libcst as cst
    from libcst.metadata import MetadataWrapper

    from syncfix.analysis import ModuleAnalysis

    analysis = ModuleAnalysis(MetadataWrapper(cst.parse_module(src), unsafe_skip_copy=True), source=src)
    values = {
        analysis.module.code_for_node(n.targets[0].target): n.value
        for n in analysis.structure.of_type(cst.Assign)
        if isinstance(n, cst.Assign)
    }
    return analysis, values


def test_a_copy_to_a_gpu_of_an_unknown_is_a_cuda_tensor_in_the_likely_view_only():
    # ``x = x.to("cuda")`` of a batch item: a CUDA tensor if it is a tensor at all, as
    # ``x.cuda()`` is; a ``.to`` to the CPU, of a dtype, or of a name also used as a module stays
    # unknown (modules and batch objects have ``.to`` too)
    from syncfix.analysis import Device, Kind

    src = (
        "import torch\ndef f(x, m, dev):\n"
        "    a = x.to('cuda', non_blocking=True)\n    b = x.to('cpu')\n    c = x.to(torch.float16)\n"
        "    d = m.to('cuda')\n    m.eval()\n    e = x.to(torch.device('cuda', 0))\n    g = x.to(dev)\n"
        "    h = '%s' % x\n"
    )
    analysis, values = _assigned(src)
    proof, likely = analysis, analysis.likely
    for name in ("a", "e"):  # to "cuda", to torch.device("cuda", 0)
        assert proof.value(values[name]).kind is Kind.UNKNOWN
        assert likely.value(values[name]).is_tensor and likely.value(values[name]).device is Device.CUDA
    for name in ("b", "c", "d", "g"):  # to the CPU, a dtype, a module's, an unknown device
        v = likely.value(values[name])
        assert not (v.is_tensor and v.device in (Device.CUDA, Device.CUDA_OR_CPU)), name
    assert likely.value(values["h"]).kind is Kind.OTHER


def test_a_class_apply_of_a_tensor_is_a_tensor_in_the_likely_view_only():
    # ijepa's ``loss = AllReduce.apply(F.smooth_l1_loss(z, h))``: an autograd Function's apply;
    # ``model.apply(init)`` of an instance, or a class's apply of no tensor, stays unknown
    from syncfix.analysis import Kind

    src = (
        "import torch\nimport torch.nn.functional as F\nfrom dist import AllReduce\n"
        "def f(z, h, model, init):\n    a = AllReduce.apply(F.mse_loss(z, h))\n    b = model.apply(init)\n"
        "    c = AllReduce.apply(z)\n"
    )
    analysis, values = _assigned(src)
    assert analysis.value(values["a"]).kind is not Kind.TENSOR
    assert analysis.likely.value(values["a"]).is_tensor
    assert not analysis.likely.value(values["b"]).is_tensor
    assert not analysis.likely.value(values["c"]).is_tensor


def test_a_tensor_added_to_in_place_in_a_loop_keeps_its_shape_and_dtype():
    # ``acc += v`` on a tensor is in place: the result has ``acc``'s shape and dtype (or the op
    # raises), whatever ``v`` is; asked first from the read after the loop, the loop-carried
    # cycle still settles on them (an unknown still being computed said "not a tensor")
    src = (
        "import torch\ndef f(model, xs):\n    acc = torch.full((), 0, dtype=torch.int64, device='cuda')\n"
        "    m = torch.zeros(3)\n    for x in xs:\n        acc += model(x).argmax()\n        m @= model(x)\n"
        "    a = acc\n    b = m\n"
    )
    for first in ("shape", "dtype"):
        analysis, values = _assigned(src)
        a = values["a"]
        if first == "dtype":
            assert analysis.dtype_of(a) == "torch.int64" and analysis.dtype_kind(a) == "int"
        assert analysis.shape_key(a) == "()" and analysis.is_one_element(a)
        assert analysis.dtype_of(a) == "torch.int64" and analysis.dtype_kind(a) == "int"
        assert analysis.shape_key(values["b"]) != "()"  # ``@=`` is no in-place op of a tensor


def test_a_module_made_and_called_at_once_returns_its_output_not_itself():
    # dino's ``loss = nn.CrossEntropyLoss()(output, target)`` in each validation step: LibCST names
    # the outer call by its callee, "torch.nn.CrossEntropyLoss", which read it as a new module
    from syncfix.analysis import Kind

    src = "import torch\nfrom torch import nn\ndef f(o, t):\n    a = nn.CrossEntropyLoss()(o, t)\n    b = nn.CrossEntropyLoss()\n"
    analysis, values = _assigned(src)
    assert analysis.value(values["a"]).kind is Kind.TENSOR and analysis.callee(values["a"]) is None
    assert analysis.loss_reduction(values["a"]) == "mean" and analysis.is_zero_dim(values["a"])
    assert analysis.value(values["b"]).kind is Kind.MODULE


def test_a_join_of_a_comprehension_is_where_its_items_are_made():
    # SimCLR's ``torch.cat([torch.arange(n) for i in range(k)], dim=0)``: a CPU tensor (so its
    # ``.to(args.device)`` copies from the CPU); items of unknown place leave it unknown
    from syncfix.analysis import Device

    src = (
        "import torch\ndef f(n, k, ts, dev):\n    a = torch.cat([torch.arange(n) for i in range(k)], dim=0)\n"
        "    b = torch.stack([t.cpu() for t in ts])\n    c = torch.cat([t for t in ts])\n"
        "    d = torch.cat([torch.zeros(n).to(dev) for i in range(k)])\n"
    )
    analysis, values = _assigned(src)
    assert analysis.value(values["a"]).device is Device.CPU and analysis.value(values["b"]).device is Device.CPU
    assert analysis.value(values["c"]).device is Device.UNKNOWN and analysis.value(values["d"]).device is Device.UNKNOWN


def test_a_parameter_its_function_uses_as_only_a_tensor_is_one_in_the_likely_view_only():
    # transformer-xl's adaptive softmax: ``forward(self, hidden, target)`` calls
    # ``target.index_select(...)``, so ``target >= l`` is a tensor there; a parameter bound again,
    # used only with methods other types share (``.sum()`` stays per call), or a method a class of
    # the module defines, says nothing of the parameter
    from syncfix.analysis import Kind

    src = (
        "import torch\n\ndef f(t, u, v, w, z):\n    t.index_select(0, z)\n    torch.zeros_like(u)\n"
        "    v.detach()\n    v = 3\n    w.sum()\n    a = t\n    b = u\n    c = v\n    d = w\n"
    )
    analysis, values = _assigned(src)
    for name in "ab":
        assert analysis.value(values[name]).kind is Kind.UNKNOWN
        assert analysis.likely.value(values[name]).kind is Kind.TENSOR
    for name in "cd":
        assert not analysis.likely.value(values[name]).is_tensor
    # annotated, optional or type-tested parameters say what they are themselves
    for variant in ("def f(t: object, u, v, w, z)", "def f(u, v, w, z, t=None)", "def f(t, u, v, w, z)"):
        tested = src.replace("def f(t, u, v, w, z)", variant)
        if variant == "def f(t, u, v, w, z)":
            tested = tested.replace("    a = t\n", "    a = t if isinstance(t, int) else 0\n    a = t\n")
        analysis, values = _assigned(tested)
        assert not analysis.likely.value(values["a"]).is_tensor
        assert analysis.likely.value(values["b"]).is_tensor
    own = src.replace("def f(", "class Rows:\n    def index_select(self, i, j):\n        return self\n\ndef f(")
    analysis, values = _assigned(own)
    assert not analysis.likely.value(values["a"]).is_tensor
    assert analysis.likely.value(values["b"]).is_tensor


def test_a_parameter_or_buffer_of_a_module_is_on_whatever_device_the_module_was_moved_to():
    # ``model.cuda()`` moves parameters and buffers, not plain tensor attributes: a parameter
    # made from a CPU tensor is no CPU tensor in ``forward``; a registered buffer is a tensor
    # there (likely: ``None`` may be registered)
    from syncfix.analysis import Device, Kind

    src = (
        "import torch\nfrom torch import nn\n\nclass M(nn.Module):\n    def __init__(self):\n"
        "        super().__init__()\n        self.w = nn.Parameter(torch.zeros(3))\n"
        "        self.t = torch.zeros(3)\n        self.register_buffer('initted', torch.zeros(()))\n\n"
        "    def forward(self, x):\n        a = self.w\n        b = self.t\n        c = self.initted\n        return x\n"
    )
    analysis, values = _assigned(src)
    w = analysis.value(values["a"])
    assert w.kind is Kind.TENSOR and w.device is Device.UNKNOWN
    assert analysis.value(values["b"]).device is Device.CPU
    assert analysis.value(values["c"]).kind is Kind.UNKNOWN
    assert analysis.likely.value(values["c"]).kind is Kind.TENSOR
    assert analysis.likely.value(values["c"]).device is Device.UNKNOWN


def test_a_buffer_stored_to_again_still_moves_with_its_module():
    # BLIP's ``self.image_queue = normalize(self.image_queue, dim=0)`` after ``register_buffer``:
    # ``Module.__setattr__`` keeps it a buffer, so ``model.cuda()`` moves it; and its value starts
    # from the registered one (not an empty join of itself)
    from syncfix.analysis import Device, Kind

    src = (
        "import torch\nfrom torch import nn\n\nclass M(nn.Module):\n    def __init__(self):\n"
        "        super().__init__()\n        self.register_buffer('queue', torch.randn(16, 100))\n"
        "        self.queue = nn.functional.normalize(self.queue, dim=0)\n        self.t = torch.zeros(3)\n\n"
        "    def forward(self, x):\n        a = self.queue\n        b = self.t\n        return x\n"
    )
    analysis, values = _assigned(src)
    queue = analysis.value(values["a"])
    assert queue.kind is Kind.TENSOR and queue.device is Device.UNKNOWN
    assert analysis.value(values["b"]).device is Device.CPU
    # generative-models' EMA: ``self.num_updates += 1`` on a registered counter keeps a tensor
    # (likely: what ``+=`` adds is read as a value stored, a number)
    counter = src.replace("        self.t = torch.zeros(3)\n", "        self.t = torch.zeros(3)\n        self.queue += 1\n")
    analysis, values = _assigned(counter)
    assert analysis.value(values["a"]).kind is Kind.UNKNOWN
    assert analysis.likely.value(values["a"]).kind is Kind.TENSOR


SPLIT = '''
from typing import Tuple

import torch


class Split(torch.nn.Module):
    def forward(self, x: torch.Tensor) -> Tuple[torch.Tensor, Tuple[int, int]]:
        return x, (x.shape[0], x.shape[1])


class Patches(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.splitter = Split()

    def forward(self, x):
        patches, grid = self.splitter(x)
        if grid == (1, 1):
            return patches
        return patches * 2
'''


def test_a_module_call_returns_what_its_forward_declares():
    """nanoVLM's ``GlobalAndSplitImages``: the splitter's ``forward`` returns a tensor and a tuple
    of ints, so ``grid == (1, 1)`` reads no GPU value; undeclared, a module's output is taken
    for a tensor."""
    from syncfix import check_code

    assert check_code(SPLIT, select=["SFX206"]) == []
    undeclared = SPLIT.replace(" -> Tuple[torch.Tensor, Tuple[int, int]]", "")
    assert [f.code for f in check_code(undeclared, select=["SFX206"])] == ["SFX206"]
    as_dict = SPLIT.replace("Tuple[torch.Tensor, Tuple[int, int]]", "dict").replace("return x, (", "return dict(a=x, b=(").replace("[1])", "[1]))")
    assert check_code(as_dict, select=["SFX206"]) == []


@pytest.mark.only_repeated
def test_a_method_its_class_wraps_in_a_cache_runs_once_per_key():
    # audiocraft's ``self.get_pattern = lru_cache(100)(self.get_pattern)`` in ``__init__``: a call
    # every step builds the pattern once per length, so its copy is one-time code
    from syncfix import check_code

    src = (
        "from functools import lru_cache\n\nimport torch\n\n\nclass Pattern:\n"
        "    def __init__(self, n):\n        self.get_pattern = lru_cache(100)(self.get_pattern)\n\n"
        "    def get_pattern(self, timesteps):\n        return torch.tensor(list(range(timesteps))).cuda()\n\n"
        "    def other(self, timesteps):\n        return torch.tensor(list(range(timesteps))).cuda()\n\n\n"
        "def train(loader, p):\n    for x in loader:\n        p.get_pattern(len(x))\n        p.other(len(x))\n"
    )
    assert [f.line for f in check_code(src, select=["SFX101"])] == [14]
    assert [f.line for f in check_code(src, select=["SFX101"], include_cold=True)] == [11, 14]


def test_a_join_of_a_tuple_bound_to_a_name_reads_its_items():
    # sd-scripts: ``ids_chunk = (ids[0].unsqueeze(0), ids[i:j], ids[-1].unsqueeze(0))`` then
    # ``ids_chunk = torch.cat(ids_chunk)``: a tuple cannot change, so its items decide the device;
    # a list (which may be appended to) or a name bound twice still hides them
    src = (
        "import torch\n\ndef f(gpu: torch.Tensor, flag: bool):\n"
        "    parts = (torch.zeros(2), torch.ones(3))\n    a = torch.cat(parts)\n"
        "    listed = [torch.zeros(2), torch.ones(3)]\n    b = torch.cat(listed)\n"
        "    either = (torch.zeros(2),) if flag else (gpu,)\n    c = torch.cat(either)\n"
        "    mixed = (torch.zeros(2), gpu)\n    d = torch.cat(mixed)\n"
    )
    analysis, values = _assigned(src)
    assert analysis.value(values["a"]).device is Device.CPU
    assert analysis.value(values["b"]).device is Device.UNKNOWN
    assert analysis.value(values["c"]).device is Device.UNKNOWN
    assert analysis.value(values["d"]).device is Device.UNKNOWN


def _names_in(module: cst.Module, holder: str, name: str) -> list[cst.Name]:
    node = find(module, holder)
    return [n for n in _all_nodes(node, cst.Name) if n.value == name]


def _all_nodes(node: cst.CSTNode, kind: type) -> list:
    out: list = []

    class V(cst.CSTVisitor):
        def on_visit(self, n: cst.CSTNode) -> bool:
            if isinstance(n, kind):
                out.append(n)
            return True

    node.visit(V())
    return out


def test_a_name_inside_a_list_comprehension_is_the_binding_that_holds_where_it_runs():
    # XLM's `[dico[sent[k].item()] for k in range(len(sent))]` after `sent = sent.cuda()`: the
    # comprehension runs at once, so `sent` inside it is what holds there
    a, module = analyse(
        """
        import torch
        def f(n):
            x = torch.zeros(3)
            x = x.cuda()
            a = [x[k] for k in range(n)]
            s = {k: x[k] for k in range(n)}
            g = (x[k] for k in range(n))
            x = torch.ones(2)
            return g
        """
    )
    for holder in ("[x[k] for k in range(n)]", "{k: x[k] for k in range(n)}"):
        (x,) = _names_in(module, holder, "x")
        assert a.value(x).device is Device.CUDA, holder
    # a generator runs when it is consumed, after `x` may be bound again: not known
    (x,) = _names_in(module, "(x[k] for k in range(n))", "x")
    assert a.value(x).device is not Device.CUDA
    # a walrus in the comprehension binds `x` as it runs: not the statement before's
    a, module = analyse(
        """
        import torch
        def f(n):
            x = torch.zeros(3)
            return [x[k] + (x := torch.ones(1).cuda()) for k in range(n)]
        """
    )
    (x, _) = _names_in(module, "[x[k] + (x := torch.ones(1).cuda()) for k in range(n)]", "x")
    assert a.value(x).device is not Device.CPU


def test_after_an_if_else_that_binds_a_name_in_each_branch_only_each_branchs_last_binding_reaches():
    # XLM's mask: a numpy array made into a CPU tensor in one branch, a CPU tensor viewed in
    # the other; the array bound first in the `if` never reaches the read after it
    src = (
        "import numpy as np\n"
        "import torch\n"
        "def mask_out(slen, bs, p):\n"
        "    if p:\n"
        "        m = np.random.rand(slen, bs) <= 0.5\n"
        "        m = torch.from_numpy(m.astype(np.uint8))\n"
        "    elif bs:\n"
        "        m = torch.ones(slen, bs)\n"
        "    else:\n"
        "        m = torch.zeros(slen * bs, dtype=torch.uint8)\n"
        "        m = m.view(slen, bs)\n"
        "    return m\n"
        "def partly(p):\n"
        "    m = torch.ones(3).cuda()\n"
        "    if p:\n"
        "        m = torch.zeros(3)\n"
        "    else:\n"
        "        print(m)\n"
        "    return m\n"
    )
    a, module = analyse(src)
    v = a.value(last_name(module.body[2], "m"))
    assert v.is_tensor and v.device is Device.CPU
    # a branch that does not bind it: the binding before the `if` reaches too
    assert a.value(last_name(module.body[3], "m")).device is Device.CUDA_OR_CPU


def test_an_attribute_read_in_init_after_its_binding_there_is_that_value():
    # CMC's alias table: `self.prob = torch.zeros(K)` read in `__init__`'s loop is a CPU tensor,
    # though the class's `cuda()` method moves it later (a false SFX206 there)
    src = textwrap.dedent(
        """
        import torch
        class Alias:
            def __init__(self, K, f, lst):
                self.prob = torch.zeros(K)
                for k in range(K):
                    if self.prob[k] < 1.0:
                        pass
                self.cuda()
                use(self.prob)
                self.alias = torch.zeros(K)
                f(self)
                use(self.alias)
                self.q = torch.zeros(K)
                g = lambda: self.q
                self.q = self.q.cuda()
                use(self.q)
            def cuda(self):
                self.prob = self.prob.cuda()
                self.alias = self.alias.cuda()
                self.q = self.q.cuda()
        """
    )
    a, module = analyse(src)
    init = module.body[1].body.body[0]
    reads = {
        (n.attr.value, a.positions[n].start.line): n
        for n in _all_nodes(init, cst.Attribute)
        if isinstance(n.value, cst.Name) and n.value.value == "self" and not isinstance(a.parent(n), cst.AssignTarget)
    }
    assert a.value(reads[("prob", 7)]).device is Device.CPU
    # after `self.cuda()`, a method call, or `f(self)`: any method may have moved it
    assert a.value(reads[("prob", 10)]).device is not Device.CPU
    assert a.value(reads[("alias", 13)]).device is not Device.CPU
    # a lambda's read runs later, when anything may have rebound it
    assert a.value(reads[("q", 15)]).device is not Device.CPU


@pytest.mark.parametrize(
    ("op", "dtype"),
    [("+", "torch.bool"), ("*", "torch.bool"), ("-", None), ("/", None)],  # `-` of two bools raises
)
def test_adding_two_bool_tensors_is_a_bool_tensor(op, dtype):
    # CLIP_prefix_caption's beam search: `is_stopped = is_stopped + next_tokens.eq(stop)`
    expr = f"stopped {op} ids.eq(3)"
    a, module = analyse(f"import torch\n\n\ndef f(ids: torch.Tensor):\n    stopped = ids > 2\n    x = {expr}\n")
    assert a.canonical_dtype(find(module, expr, cst.BinaryOperation)) == dtype


def test_a_loss_is_on_the_device_of_an_input_with_a_dimension_or_more():
    # Image_Segmentation's `BCELoss()(SR_flat, GT_flat)` of `GT_flat = GT.view(GT.size(0), -1)`;
    # an input that may be 0-d (a CPU scalar joins tensors of any device) decides nothing
    a, m = analyse("""
        import torch

        def step(pred: torch.Tensor, shape):
            criterion = torch.nn.BCELoss()
            dev = "cuda" if torch.cuda.is_available() else "cpu"
            GT = torch.rand(4, 1, 8, 8).to(dev)
            flat = GT.view(GT.size(0), -1)
            loss = criterion(pred, flat)
            loose = GT.view(shape)
            other = criterion(pred, loose)
            one = torch.ones(()).to(dev).reshape(-1)
            third = criterion(pred, one)
            return loss, other, third
    """)
    from syncfix.analysis.shapes import at_least_one_dim

    assert at_least_one_dim(a, find(m, "GT.view(GT.size(0), -1)", cst.Call))
    assert not at_least_one_dim(a, find(m, "GT.view(shape)", cst.Call))
    assert a.value(last_name(m, "loss")).device is Device.CUDA_OR_CPU
    assert a.value(last_name(m, "other")).device is Device.UNKNOWN
    assert a.value(last_name(m, "third")).device is Device.CUDA_OR_CPU  # `.reshape(-1)`: 1-d
