"""SFX301's merged reads keep every value and Python type: original and rewritten snippets
(rewritten by ``syncfix.fix_code``) run on CPU tensors and must return exactly the same."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from syncfix import fix_code

from ..support import FLOATS, HEADER, INTS, KIND, run_snippet, same, value_of

torch = pytest.importorskip("torch")


@st.composite
def _reads(draw):
    n = draw(st.integers(2, 5))
    items = []
    for _ in range(n):
        dtype = draw(st.sampled_from((*FLOATS, *INTS, "bool")))
        value = draw(value_of(dtype))
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
    before, after = run_snippet(source), run_snippet(fixed)
    assert before[0] == after[0] and same(before[1:], after[1:]), (source, fixed, before, after)


def test_sfx301_known_breakages_of_naive_stack_are_avoided():
    """docs/semantics.md#merging-reads: 16777217 as int64 next to float32, bool next to int64, 0-d with (1,)."""
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
    assert run_snippet(fixed) == run_snippet(source) == ("ok", [16777217, 0.5, True, 7, 2.5, [2.5]])
    assert [type(v) for v in run_snippet(fixed)[1]] == [int, float, bool, int, float, list]


def test_sfx301_int_of_nan_raises_the_same_error():
    source = HEADER + (
        "def f():\n"
        "    a = torch.tensor(1.0, device=dev)\n"
        "    b = torch.tensor(0.0, device=dev) / 0.0\n"
        "    return [a.item(), int(b)]\n"
    )
    fixed = fix_code(source, select=["SFX301"])
    assert ".stack([" in fixed
    assert run_snippet(fixed) == run_snippet(source)
    assert run_snippet(source)[:2] == ("raised", "ValueError")


def test_sfx301_float_of_int64_past_2_53_rounds_like_the_tensor():
    source = HEADER + (
        "def f():\n"
        f"    a = torch.tensor({2**53 + 1}, dtype=torch.int64, device=dev)\n"
        f"    b = torch.tensor({2**63 - 1}, dtype=torch.int64, device=dev)\n"
        "    return [float(a), a.item(), float(b), int(b), bool(a)]\n"
    )
    fixed = fix_code(source, select=["SFX301"])
    assert ".stack([" in fixed
    before, after = run_snippet(source), run_snippet(fixed)
    assert same(before, after) and before[1] == [9007199254740992.0, 2**53 + 1, 2.0**63, 2**63 - 1, True]
