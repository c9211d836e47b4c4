"""Equivalence: snapshots and the comparison that names what differs."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from syncfix.harness.equivalence import (
    BITWISE,
    Tolerance,
    compare,
    compare_records,
    compare_text,
    snapshot,
    split_numbers,
)

np = pytest.importorskip("numpy")
torch = pytest.importorskip("torch")


def diff(a, b, tol=BITWISE, path="return"):
    return compare(snapshot(a), snapshot(b), tol, path)


def test_identical_nested_values_match():
    v = {
        "loss": torch.tensor([1.0, float("nan")]),
        "n": 3,
        "xs": [1.5, (2, "a")],
        "arr": np.arange(3.0),
    }
    result = diff(v, {**v})
    assert result.equal
    assert result.compared == 6  # tensor, int, 1.5, 2, "a", array


def test_float_bitwise_by_default():
    assert not diff(0.1 + 0.2, 0.3).equal
    assert not diff(0.0, -0.0).equal  # bitwise: the sign of zero counts
    assert diff(float("nan"), float("nan")).equal  # NaN-aware
    assert diff(0.1 + 0.2, 0.3, Tolerance(rtol=1e-12)).equal


def test_python_types_must_match():
    result = diff(True, 1)
    assert not result.equal
    assert "type differs" in result.mismatches[0].reason
    assert not diff(1, 1.0).equal
    assert not diff([1, 2], (1, 2)).equal


def test_mismatch_names_the_nested_value_and_shows_both():
    a = {"loss": [1.0, 2.0, 3.0]}
    b = {"loss": [1.0, 2.5, 3.0]}
    (m,) = diff(a, b).mismatches
    assert m.path == "return['loss'][1]"
    assert m.original == "2.0" and m.rewritten == "2.5"


def test_dict_keys_missing_or_extra():
    result = diff({"a": 1, "b": 2}, {"a": 1, "c": 2})
    reasons = sorted(m.reason for m in result.mismatches)
    assert reasons == ["key missing from the rewritten run", "key only in the rewritten run"]


def test_tensor_dtype_shape_and_values():
    x = torch.arange(6, dtype=torch.float32).reshape(2, 3)
    assert diff(x, x.clone()).equal
    assert "dtype differs" in diff(x, x.double()).mismatches[0].reason
    assert "shape differs" in diff(x, x.reshape(3, 2)).mismatches[0].reason
    y = x.clone()
    y[1, 2] += 1e-3
    (m,) = diff(x, y).mismatches
    assert "1 of 6 elements differ" in m.reason and "[1, 2]" in m.reason
    assert diff(x, y, Tolerance(atol=1e-2)).equal


def test_tensor_nan_aware_and_signed_zero():
    x = torch.tensor([float("nan"), 0.0, 1.0])
    assert diff(x, x.clone()).equal
    assert not diff(x, torch.tensor([float("nan"), -0.0, 1.0])).equal
    assert diff(x, torch.tensor([float("nan"), -0.0, 1.0]), Tolerance(atol=1e-9)).equal
    assert not diff(x, torch.tensor([1.0, 0.0, 1.0]), Tolerance(atol=10.0)).equal


@pytest.mark.parametrize(
    "dtype",
    [torch.bfloat16, torch.float16, torch.float64, torch.complex64, torch.int64, torch.bool],
)
def test_tensor_dtypes(dtype):
    x = (torch.arange(4) % 2).to(dtype)
    assert diff(x, x.clone()).equal
    y = x.clone()
    y[0] = 1 if dtype != torch.bool else True
    assert not diff(x, y).equal


def test_parameter_is_not_a_tensor():
    p = torch.nn.Parameter(torch.ones(2))
    assert "type differs" in diff(p, torch.ones(2)).mismatches[0].reason


def test_numpy_arrays():
    a = np.array([1.0, np.nan, 3.0])
    assert diff(a, a.copy()).equal
    assert not diff(a, a + 1e-9).equal
    assert diff(a, a + 1e-9, Tolerance(atol=1e-6)).equal
    c = np.array([1 + 2j, np.nan])
    assert diff(c, c.copy()).equal
    assert not diff(np.arange(3), np.arange(3.0)).equal


def test_opaque_objects_compare_by_repr_without_addresses():
    class Thing:
        pass

    assert diff(Thing(), Thing()).equal  # "<...Thing object at 0x…>" both
    assert not diff(object(), Thing()).equal


def test_text_numbers_compared_as_numbers():
    assert compare_text("loss 1.0 at step 3\n", "loss 1.00 at step 3\n").equal
    result = compare_text("loss 0.25\nok\n", "loss 0.26\nok\n")
    (m,) = result.mismatches
    assert m.path == "stdout line 1" and "0.25 vs 0.26" in m.reason
    assert compare_text("loss 0.25\n", "loss 0.2500001\n", Tolerance(rtol=1e-5)).equal
    assert not compare_text("loss nan\n", "loss 1\n").equal
    assert compare_text("x nan\n", "x nan\n").equal


def test_text_structure_differences():
    assert compare_text("a 1\n", "b 1\n").mismatches[0].reason == "text differs"
    m = compare_text("a\nb\n", "a\n").mismatches[0]
    assert m.path == "stdout line 2" and "2 lines vs 1 lines" in m.reason


def test_split_numbers_leaves_identifiers_alone():
    template, numbers = split_numbers("fp16 x1 cuda:0 loss=-1.5e-3 v2.11.0 nan")
    assert numbers == ["0", "-1.5e-3", "nan"]
    assert "fp16" in template and "x1" in template and "v2.11.0" in template


def test_records_matched_by_name_and_order():
    a = [("loss", snapshot(1.0)), ("loss", snapshot(2.0)), ("acc", snapshot(0.5))]
    assert compare_records(a, list(a)).equal
    b = [("loss", snapshot(1.0)), ("loss", snapshot(2.1)), ("acc", snapshot(0.5))]
    (m,) = compare_records(a, b).mismatches
    assert m.path == "record('loss')[1]"
    c = a[:2]
    (m,) = compare_records(a, c).mismatches
    assert "recorded 1 times vs 0 times" in m.reason


nested = st.recursive(
    st.floats(allow_nan=True, allow_infinity=True)
    | st.integers()
    | st.booleans()
    | st.text(max_size=5),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=3), children, max_size=4)
    ),
    max_leaves=20,
)


@given(nested)
def test_any_value_equals_itself(value):
    assert diff(value, value).equal


@given(
    st.lists(st.floats(allow_nan=False, allow_infinity=False, width=32), min_size=1, max_size=20),
    st.data(),
)
def test_any_changed_element_is_found(values, data):
    x = torch.tensor(values, dtype=torch.float32)
    i = data.draw(st.integers(0, len(values) - 1))
    y = x.clone()
    y[i] = torch.nextafter(y[i], torch.tensor(math.inf))
    (m,) = diff(x, y).mismatches
    assert f"first at index [{i}]" in m.reason
