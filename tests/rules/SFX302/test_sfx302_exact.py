"""SFX302's device totals keep every value and Python type: original and rewritten snippets
(rewritten by ``syncfix.fix_code``) run on CPU tensors and must return exactly the same."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from syncfix import fix_code

from ..support import FLOATS, HEADER, same

torch = pytest.importorskip("torch")


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


def _assert_same_result(source: str, fixed: str, values, device: str) -> None:
    """``f`` of the original and of the rewrite return exactly the same (values and types)."""
    namespace_a: dict = {}
    namespace_b: dict = {}
    exec(compile(source, "<a>", "exec"), namespace_a)
    exec(compile(fixed, "<b>", "exec"), namespace_b)
    args = (values, namespace_a["dev"]) if device == "param" else (values,)
    before, after = namespace_a["f"](*args), namespace_b["f"](*args)
    assert same(before, after), (source, fixed, values, before, after)


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
    _assert_same_result(source, fixed, values, device)


def test_sfx302_int64_total_is_only_an_unsafe_fix_but_a_count_is_safe():
    assert "_acc" not in fix_code(_loop_snippet("int64", "0", "+= {}.item()"), select=["SFX302"])
    assert "_acc" in fix_code(_loop_snippet("count", "0", "+= {}.item()"), select=["SFX302"])


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.sampled_from(FLOATS),
    st.lists(st.floats(width=16), max_size=5),
    st.sampled_from(("0", "3", "-7", str(2**53))),
    st.sampled_from(("t", "t.clone()")),
    st.sampled_from(("known", "param")),
)
def test_sfx302_int_start_with_float_summands_is_exact(dtype, values, start, summand, device):
    # an int start: the Python total is `int + float + ...`, and an empty loop leaves the int
    make = f"torch.full((), v, dtype=torch.{dtype}, device=dev)"
    source = HEADER + (
        ("def f(values, dev):\n" if device == "param" else "def f(values):\n")
        + f"    total = {start}\n"
        "    for v in values:\n"
        f"        t = {make}\n"
        f"        total += {summand}.item()\n"
        "    return total\n"
    )
    # a float total on a device that arrives as a parameter is unsafe (it may be MPS: no float64)
    fixed = fix_code(source, select=["SFX302"], unsafe_fixes=device == "param")
    assert "total_acc += " in fixed and "if total_acc is not None:" in fixed, fixed
    _assert_same_result(source, fixed, values, device)


def test_sfx302_int_start_past_2_53_with_float_summands_is_not_fixed():
    source = _loop_snippet("float32", str(2**53 + 1), "+= {}.item()")
    assert "_acc" not in fix_code(source, select=["SFX302"], unsafe_fixes=True)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.sampled_from((*FLOATS, "count")),
    st.lists(st.floats(width=16), max_size=9),
    st.integers(1, 4),
    st.sampled_from(("0.0", "0", "2.5")),
    st.sampled_from(("0.0", "0", None)),
    st.sampled_from(("known", "param")),
)
def test_sfx302_total_read_every_n_steps_is_exact(dtype, values, every, start, reset, device):
    # a running total logged (and maybe reset) every `every` steps: the host value is read back
    # under the `if`; every logged value, its type, and the final total must be what they were
    count = dtype == "count"
    if count:
        start = "0" if start != "0.0" else "0"
        reset = None if reset is None else "0"
    make = "torch.full((), v, dtype=torch.float32, device=dev)" if count else f"torch.full((), v, dtype=torch.{dtype}, device=dev)"
    summand = "(t > 0).sum()" if count else "t"
    bind = "        s = " + summand + "\n" if count else ""
    term = "s" if count else "t"
    source = HEADER + (
        ("def f(values, dev):\n" if device == "param" else "def f(values):\n")
        + f"    total = {start}\n"
        "    logged = []\n"
        "    for i, v in enumerate(values):\n"
        f"        t = {make}\n"
        f"{bind}"
        f"        total += {term}.item()\n"
        f"        if i % {every} == {every - 1}:\n"
        "            logged.append(total)\n"
        + (f"            total = {reset}\n" if reset is not None else "")
        + "    return total, logged\n"
    )
    # a float total on a device that arrives as a parameter is unsafe (it may be MPS: no float64)
    fixed = fix_code(source, select=["SFX302"], unsafe_fixes=device == "param")
    assert "total_acc += " in fixed and "total = total_acc.item()" in fixed, fixed
    _assert_same_result(source, fixed, values, device)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.sampled_from(FLOATS),
    st.lists(st.tuples(st.floats(width=32), st.integers(0, 4096)), max_size=6),
    st.sampled_from(("0.0", "0", "-2.5")),
    st.sampled_from(("w * t.item()", "t.item() * w")),
    st.sampled_from(("known", "param")),
)
def test_sfx302_total_weighted_by_a_size_is_exact(dtype, pairs, start, form, device):
    # ``total += loss.item() * x.size(0)``: Python multiplies in float64; so does the rewrite
    make = f"torch.full((), v, dtype=torch.{dtype}, device=dev)"
    summand = form.replace("w", "len(b)")
    source = HEADER + (
        ("def f(values, dev):\n" if device == "param" else "def f(values):\n")
        + f"    total = {start}\n"
        "    for v, n in values:\n"
        "        b = [0] * n\n"
        f"        t = {make}\n"
        f"        total += {summand}\n"
        "    return total\n"
    )
    # a float total on a device that arrives as a parameter is unsafe (it may be MPS: no float64)
    fixed = fix_code(source, select=["SFX302"], unsafe_fixes=device == "param")
    assert "total_acc += " in fixed and "torch.float64) * len(b)" in fixed, fixed
    _assert_same_result(source, fixed, pairs, device)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.sampled_from(FLOATS),
    st.lists(st.floats(width=16), max_size=5),
    st.sampled_from(("0", "0.0", "-3")),
    st.sampled_from(("(1, 1)", "(1,)")),
)
def test_sfx302_total_of_a_value_backward_ran_on_is_exact(dtype, values, start, shape):
    # nothing names the module output's dtype or shape: `loss.backward()` proves it a real
    # floating tensor of one element (it raises otherwise), which the device total needs
    source = HEADER + (
        "def f(values):\n"
        f"    model = torch.nn.Linear(1, 1, dtype=torch.{dtype}).to(dev)\n"
        "    with torch.no_grad():\n"
        "        model.weight.fill_(1.0)\n"
        "        model.bias.zero_()\n"
        f"    total = {start}\n"
        "    for v in values:\n"
        f"        loss = model(torch.full({shape}, v, dtype=torch.{dtype}, device=dev))\n"
        "        loss.backward()\n"
        "        total += loss.item()\n"
        "    return total\n"
    )
    fixed = fix_code(source, select=["SFX302"])
    assert "total_acc += " in fixed, fixed
    _assert_same_result(source, fixed, values, "known")


def test_sfx302_float_total_on_an_unplaced_device_is_unsafe():
    """The float64 accumulator is made on the summand's device: where that may be MPS (which has
    no float64), the safe tier leaves the loop alone; an int count stays safe."""
    source = _loop_snippet("float32", "0.0", "+= {}.item()", "param")
    assert "_acc" not in fix_code(source, select=["SFX302"])
    assert "_acc" in fix_code(source, select=["SFX302"], unsafe_fixes=True)
    assert "_acc" in fix_code(_loop_snippet("count", "0", "+= {}.item()", "param"), select=["SFX302"])
