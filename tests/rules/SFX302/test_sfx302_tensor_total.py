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
        w = torch.full((), v, dtype=torch.SUMMAND, device=device)
        total += w.item()
        counts["n"] += w.item()
    return total, counts["n"]
'''

_TOTALS = ("int64", "float32", "float64")
_SUMMANDS = ("bool", "uint8", "int32", "int64", "uint16", "uint32", "float16", "bfloat16", "float32", "float64")
_INTEGERS = {"bool", "uint8", "int32", "int64"}
# what each total adds as it adds the summand's `.item()` (anything else keeps its `.item()`)
_ADDED = {
    "int64": _INTEGERS,
    "float32": _INTEGERS | {"float16", "bfloat16", "float32"},
    "float64": _INTEGERS | {"float16", "bfloat16", "float32", "float64"},
}


def _run(fn, values):
    try:
        return fn(values, "cpu")
    except RuntimeError as exc:
        return type(exc)


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.sampled_from(_TOTALS),
    st.sampled_from(_SUMMANDS),
    st.lists(st.integers(0, 100) | st.floats(-1e6, 1e6, allow_nan=False), min_size=0, max_size=4),
)
def test_adding_the_tensor_into_a_tensor_total_is_exact(total, summand, numbers):
    source = SOURCE.replace("TOTAL", total).replace("SUMMAND", summand)
    fixed = fix_code(source, select=["SFX302", "SFX105"], unsafe_fixes=True)
    if summand not in _ADDED[total]:
        # an int64 total refuses uint16/32/64 tensors and names a float's own dtype when it
        # refuses it; a 0-d float32 total adds a 0-d float64 tensor in float64, a Python float
        # in float32
        assert fixed == source
        return
    assert fixed.count(".item()") == 0, fixed
    if summand in _INTEGERS:
        numbers = [int(abs(x)) % 100 for x in numbers]  # within every integer dtype here
    before, after = _run(load(source, "f"), numbers), _run(load(fixed, "f"), numbers)
    if isinstance(before, tuple):
        assert isinstance(after, tuple)
        for x, y in zip(before, after, strict=True):
            assert x.dtype == y.dtype and x.shape == y.shape and not y.requires_grad
            torch.testing.assert_close(x, y, rtol=0, atol=0, equal_nan=True)  # bit for bit
    else:
        assert before == after  # the same error


def test_a_module_that_switches_the_current_device_gets_no_safe_fix():
    # `"cuda"` names the current device, which `with torch.cuda.device(i):` changes: the total
    # and the summand may be on two devices, so the fix is only unsafe there
    source = (
        "import torch\n\n\n"
        "def f(loader):\n"
        "    total = torch.zeros((), dtype=torch.float64, device='cuda')\n"
        "    for i in loader:\n"
        "        with torch.cuda.device(i):\n"
        "            total += torch.ones(3, device='cuda').sum().item()\n"
        "    return total\n"
    )
    assert fix_code(source, select=["SFX302"]) == source
    assert ".sum().item()" not in fix_code(source, select=["SFX302"], unsafe_fixes=True)
    plain = source.replace("        with torch.cuda.device(i):\n    ", "")
    assert ".sum().item()" not in fix_code(plain, select=["SFX302"])  # safe where nothing switches
