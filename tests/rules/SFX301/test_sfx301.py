"""SFX301/SFX302 rewrites keep every value and Python type: original and rewritten snippets
(rewritten by ``syncfix.fix_code``) run on CPU tensors and must return exactly the same."""

from __future__ import annotations

import math

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from syncfix import fix_code

torch = pytest.importorskip("torch")

FLOATS = ("float16", "bfloat16", "float32", "float64")
INTS = ("int64", "int32", "uint8")
KIND = {**{d: "float" for d in FLOATS}, **{d: "int" for d in INTS}, "bool": "bool"}
HEADER = 'import torch\n\ndev = "cuda" if torch.cuda.is_available() else "cpu"\n\n\n'


def _value(dtype: str) -> st.SearchStrategy:
    if dtype == "bool":
        return st.booleans()
    if dtype == "int64":
        near = st.integers(2**53 - 3, 2**53 + 3) | st.integers(2**24 - 2, 2**24 + 2)
        return near | st.integers(-(2**63), 2**63 - 1) | st.integers(-3, 3)
    if dtype == "int32":
        return st.integers(-(2**31), 2**31 - 1)
    if dtype == "uint8":
        return st.integers(0, 255)
    width = 16 if dtype in ("float16", "bfloat16") else 32 if dtype == "float32" else 64
    return st.floats(allow_nan=False, allow_infinity=False, width=width)


@st.composite
def _reads(draw):
    n = draw(st.integers(2, 5))
    items = []
    for _ in range(n):
        dtype = draw(st.sampled_from((*FLOATS, *INTS, "bool")))
        value = draw(_value(dtype))
        shape = draw(st.sampled_from(("()", "(1,)")))
        form = draw(st.sampled_from(("item", "tolist", "float", "int", "bool")))
        items.append((dtype, value, shape, form))
    layout = draw(st.sampled_from(("one statement", "statements")))
    return items, layout


def _snippet(items, layout: str) -> str:
    lines = ["def f():"]
    reads = []
    for i, (dtype, value, shape, form) in enumerate(items):
        literal = repr(float(value)) if KIND[dtype] == "float" else repr(value)
        data = literal if shape == "()" else f"[{literal}]"
        lines.append(f"    t{i} = torch.tensor({data}, dtype=torch.{dtype}, device=dev)")
        reads.append(f"t{i}.{form}()" if form in ("item", "tolist") else f"{form}(t{i})")
    if layout == "one statement":
        lines.append(f"    return [{', '.join(reads)}]")
    else:
        lines += [f"    r{i} = {read}" for i, read in enumerate(reads)]
        lines.append(f"    return [{', '.join(f'r{i}' for i in range(len(reads)))}]")
    return HEADER + "\n".join(lines) + "\n"


def _run(code: str):
    namespace: dict = {}
    exec(compile(code, "<snippet>", "exec"), namespace)
    try:
        return ("ok", namespace["f"]())
    except Exception as exc:  # the same error must come out of both versions
        return ("raised", type(exc).__name__, str(exc))


def _same(a, b) -> bool:
    """Exactly equal: same types all the way down, floats bit for bit (``-0.0``, NaN)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, (list, tuple)):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, float):
        return math.copysign(1, a) == math.copysign(1, b) and (a == b or (a != a and b != b))
    return a == b


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_reads())
def test_sfx301_merged_reads_are_exact(case):
    items, layout = case
    source = _snippet(items, layout)
    fixed = fix_code(source, select=["SFX301"])
    kinds = [KIND[d] for d, *_ in items]
    if any(kinds.count(k) >= 2 for k in set(kinds)):
        assert ".stack([" in fixed, source  # the property must exercise the rewrite
    else:
        assert fixed == source
    before, after = _run(source), _run(fixed)
    assert before[0] == after[0] and _same(before[1:], after[1:]), (source, fixed, before, after)


def test_sfx301_known_breakages_of_naive_stack_are_avoided():
    """sync-semantics §3b: 16777217 as int64 next to float32, bool next to int64, 0-d with (1,)."""
    source = HEADER + (
        "def f():\n"
        "    a = torch.tensor(16777217, dtype=torch.int64, device=dev)\n"
        "    b = torch.tensor(0.5, dtype=torch.float32, device=dev)\n"
        "    c = torch.tensor(True, device=dev)\n"
        "    d = torch.tensor(7, dtype=torch.int64, device=dev)\n"
        "    e = torch.tensor([2.5], dtype=torch.float64, device=dev)\n"
        "    return [a.item(), b.item(), c.item(), d.item(), e.item(), e.tolist()]\n"
    )
    fixed = fix_code(source, select=["SFX301"])
    assert fixed.count(".stack([") == 2  # floats together, ints together; the bool alone
    assert _run(fixed) == _run(source) == ("ok", [16777217, 0.5, True, 7, 2.5, [2.5]])
    assert [type(v) for v in _run(fixed)[1]] == [int, float, bool, int, float, list]


def test_sfx301_int_of_nan_raises_the_same_error():
    source = HEADER + (
        "def f():\n"
        "    a = torch.tensor(1.0, device=dev)\n"
        "    b = torch.tensor(0.0, device=dev) / 0.0\n"
        "    return [a.item(), int(b)]\n"
    )
    fixed = fix_code(source, select=["SFX301"])
    assert ".stack([" in fixed
    assert _run(fixed) == _run(source)
    assert _run(source)[:2] == ("raised", "ValueError")


@st.composite
def _loops(draw):
    dtype = draw(st.sampled_from((*FLOATS, "count", "int64")))
    if dtype == "count":
        values = draw(st.lists(st.floats(width=32), max_size=6))
    elif dtype == "int64":
        values = draw(st.lists(st.integers(-(2**53) - 5, 2**53 + 5), max_size=6))
    else:
        width = 16 if dtype in ("float16", "bfloat16") else 32 if dtype == "float32" else 64
        values = draw(st.lists(st.floats(width=width), max_size=6))
    start = draw(st.sampled_from(("0.0", "-0.0", "1.5", "1e16")) if dtype in FLOATS else st.sampled_from(("0", "7", str(2**53))))
    form = draw(st.sampled_from(("+= {}.item()", "+= float({})", "= TOTAL + {}.item()")) if dtype in FLOATS else st.sampled_from(("+= {}.item()", "+= int({})")))
    # "param": the device arrives as a parameter, so the accumulator follows the summand's device
    device = draw(st.sampled_from(("known", "param")))
    return dtype, values, start, form, device


def _loop_snippet(dtype: str, start: str, form: str, device: str = "known") -> str:
    if dtype == "count":
        make, summand = "torch.full((), v, dtype=torch.float32, device=dev)", "(t > 0).sum()"
    else:
        make, summand = f"torch.full((), v, dtype=torch.{dtype}, device=dev)", "t"
    bind = ""
    if device == "param" and summand != "t":
        bind, summand = f"        s = {summand}\n", "s"  # a plain name: its device places the total
    update = form.format(summand).replace("TOTAL", "total")
    return HEADER + (
        ("def f(values, dev):\n" if device == "param" else "def f(values):\n")
        + f"    total = {start}\n"
        "    for v in values:\n"
        f"        t = {make}\n"
        f"{bind}"
        f"        total {update}\n"
        "    return total\n"
    )


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_loops())
def test_sfx302_device_total_is_exact(case):
    dtype, values, start, form, device = case
    source = _loop_snippet(dtype, start, form, device)
    fixed = fix_code(source, select=["SFX302"], unsafe_fixes=True)
    assert "_acc += " in fixed, source  # the property must exercise the rewrite
    assert (".to(total_acc.device)" in fixed) is (device == "param"), fixed
    namespace_a: dict = {}
    namespace_b: dict = {}
    exec(compile(source, "<a>", "exec"), namespace_a)
    exec(compile(fixed, "<b>", "exec"), namespace_b)
    args = (values, namespace_a["dev"]) if device == "param" else (values,)
    before, after = namespace_a["f"](*args), namespace_b["f"](*args)
    assert _same(before, after), (source, fixed, values, before, after)


def test_sfx302_int64_total_is_only_an_unsafe_fix_but_a_count_is_safe():
    assert "_acc" not in fix_code(_loop_snippet("int64", "0", "+= {}.item()"), select=["SFX302"])
    assert "_acc" in fix_code(_loop_snippet("count", "0", "+= {}.item()"), select=["SFX302"])


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.sampled_from((*FLOATS, *INTS, "bool")).flatmap(
        lambda d: st.tuples(st.just(d), st.lists(_value(d), max_size=5))
    ),
    st.sampled_from(("{v}.item()", "{v}.tolist()", "float({v})", "int({v})", "bool({v})")),
)
def test_sfx303_tolist_is_exact(data, form):
    dtype, values = data
    literals = [repr(float(v)) if KIND[dtype] == "float" else repr(v) for v in values]
    source = HEADER + (
        "def f():\n"
        f"    x = torch.tensor([{', '.join(literals)}], dtype=torch.{dtype}, device=dev).flatten()\n"
        f"    return [{form.format(v='v')} for v in x]\n"
    )
    fixed = fix_code(source, select=["SFX303"])
    assert ".tolist()" in fixed and " for v in x]" not in fixed, source
    before, after = _run(source), _run(fixed)
    assert before[0] == after[0] and _same(before[1:], after[1:]), (source, fixed, before, after)


@pytest.mark.parametrize("dtype", ["float32", "float16", "int64", "bool"])
def test_sfx403_lazy_arguments_render_the_same_text(dtype):
    import logging

    source = (
        "import logging\nimport torch\n"
        'dev = "cuda" if torch.cuda.is_available() else "cpu"\n'
        "log = logging.getLogger('sfx403')\n\n\n"
        "def f():\n"
        f"    t = torch.tensor([1, 0, 3], device=dev).to(torch.{dtype}).flatten()\n"
        "    log.warning(f'values {t} at 50% and {t}')\n"
    )
    fixed = fix_code(source, select=["SFX403"])
    assert "'values %s at 50%% and %s', t, t" in fixed
    messages = []

    class Keep(logging.Handler):
        def emit(self, record):
            messages.append(record.getMessage())

    logger = logging.getLogger("sfx403")
    handler = Keep()
    logger.addHandler(handler)
    try:
        for code in (source, fixed):
            namespace: dict = {}
            exec(compile(code, "<sfx403>", "exec"), namespace)
            namespace["f"]()
    finally:
        logger.removeHandler(handler)
    assert len(messages) == 2 and messages[0] == messages[1]


def test_sfx301_float_of_int64_past_2_53_rounds_like_the_tensor():
    source = HEADER + (
        "def f():\n"
        f"    a = torch.tensor({2**53 + 1}, dtype=torch.int64, device=dev)\n"
        f"    b = torch.tensor({2**63 - 1}, dtype=torch.int64, device=dev)\n"
        "    return [float(a), a.item(), float(b), int(b), bool(a)]\n"
    )
    fixed = fix_code(source, select=["SFX301"])
    assert ".stack([" in fixed
    before, after = _run(source), _run(fixed)
    assert _same(before, after) and before[1] == [9007199254740992.0, 2**53 + 1, 2.0**63, 2**63 - 1, True]
