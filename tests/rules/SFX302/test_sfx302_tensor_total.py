"""SFX302 (and SFX105 for a dict of totals): ``t += x.item()`` into a tensor total becomes
``t += x`` (``x.detach()``): the same total, dtype and errors, for every exact total dtype and
summand dtype."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from syncfix import fix_code

from ..support import load

torch = pytest.importorskip("torch")

SOURCE = '''
import torch


def f(values, device):
    total = torch.zeros((), dtype=torch.TOTAL, device=device)
    counts = {"n": torch.zeros((), dtype=torch.TOTAL, device=device)}
    for v in values:
        w = torch.as_tensor(v, dtype=torch.SUMMAND)
        total += w.sum().item()
        counts["n"] += w.sum().item()
    return total, counts["n"]
'''

_TOTALS = ("int64", "float32", "float64")
_SUMMANDS = ("bool", "int32", "int64", "float16", "bfloat16", "float32", "float64")


def _run(fn, values):
    try:
        return fn(values, "cpu")
    except RuntimeError as exc:
        return type(exc)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.sampled_from(_TOTALS),
    st.sampled_from(_SUMMANDS),
    st.lists(st.floats(-1e6, 1e6, allow_nan=False), min_size=0, max_size=4),
)
def test_adding_the_tensor_into_a_tensor_total_is_exact(total, summand, numbers):
    source = SOURCE.replace("TOTAL", total).replace("SUMMAND", summand)
    fixed = fix_code(source, select=["SFX302", "SFX105"], unsafe_fixes=True)
    if total == "float32" and summand == "float64":
        # a 0-d float32 total adds a 0-d float64 tensor in float64, a Python float in float32
        assert fixed == source
        return
    assert fixed.count(".item()") == 0, fixed
    values = [torch.tensor([x, -x / 3], dtype=torch.float64) for x in numbers]
    before, after = _run(load(source, "f"), values), _run(load(fixed, "f"), values)
    if isinstance(before, tuple):
        assert isinstance(after, tuple)
        for x, y in zip(before, after, strict=True):
            assert x.dtype == y.dtype and x.shape == y.shape and not y.requires_grad
            torch.testing.assert_close(x, y, rtol=0, atol=0, equal_nan=True)  # bit for bit
    else:
        assert before == after  # an int total refuses a float summand either way
