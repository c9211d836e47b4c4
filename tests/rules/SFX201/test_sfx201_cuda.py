"""SFX2xx on a GPU: each fixable rule's rewrite (made by ``syncfix.fix_code``, never by hand) gives
the same values — bitwise for safe fixes — with fewer syncs, counted with
``torch.cuda.set_sync_debug_mode("warn")``."""

from __future__ import annotations

import warnings

import pytest

from syncfix import fix_code

from . import sfx2xx_snippets as S

torch = pytest.importorskip("torch")


def _load(src: str):
    ns: dict = {}
    exec(compile(src, "<snippet>", "exec"), ns)
    return ns["f"]


def _count_syncs(fn, *args):
    """(result, number of synchronizing CUDA calls while running ``fn(*args)``)."""
    fn(*args)  # warm up: first calls allocate and create handles
    torch.cuda.synchronize()
    previous = torch.cuda.get_sync_debug_mode()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        torch.cuda.set_sync_debug_mode("warn")
        try:
            torch.manual_seed(0)
            out = fn(*args)
        finally:
            torch.cuda.set_sync_debug_mode(previous)
    syncs = sum(
        1 for w in caught if issubclass(w.category, UserWarning) and "synchroniz" in str(w.message)
    )
    return out, syncs


def _bits(t):
    if t.is_floating_point():
        return t.contiguous().view({2: torch.int16, 4: torch.int32, 8: torch.int64}[t.element_size()])
    return t


def _compare(a, b, *, bitwise: bool) -> None:
    assert type(a) is type(b)
    if isinstance(a, tuple):
        for x, y in zip(a, b, strict=True):
            _compare(x, y, bitwise=bitwise)
    elif isinstance(a, torch.Tensor):
        assert a.dtype == b.dtype and a.shape == b.shape and a.device == b.device
        if bitwise:
            assert torch.equal(_bits(a), _bits(b))
        else:
            torch.testing.assert_close(a, b)
    else:
        assert a == b


CASES = [
    # (code, snippet, unsafe, args, bitwise)
    ("SFX201", S.ELIF_FLOAT32, False, (0.3, 1.5), True),
    ("SFX201", S.AND_NOT_INT64, False, (12, 1), True),
    ("SFX201", S.IFEXP_ISNAN, False, (float("nan"),), True),
    ("SFX201", S.VECTOR_BRANCH, False, (1000, 0.5), True),
    ("SFX204", S.MASKED_FILL_FLOAT, False, (1000, 0.0), True),
    ("SFX204", S.MASKED_FILL_INT, False, (1000, 2), True),
    ("SFX202", S.BUILTIN_MAX, True, (0.25, 0.75), True),
    ("SFX203", S.ASSERT_ASYNC, True, (1000,), True),
    ("SFX205", S.MASKED_SUM, True, (1000,), False),  # summation order changes
    ("SFX205", S.REPEAT_OUTPUT_SIZE, True, (100,), True),
]


@pytest.mark.cuda
@pytest.mark.parametrize(
    "code,src,unsafe,args,bitwise",
    CASES,
    ids=[f"{c[0]}-{i}" for i, c in enumerate(CASES)],
)
def test_rewrite_keeps_values_with_fewer_syncs(code, src, unsafe, args, bitwise):
    new = fix_code(src, select=[code], unsafe_fixes=unsafe)
    assert new != src, "no fix applied"
    if not unsafe:
        assert fix_code(src, select=[code]) == new, "expected a safe fix"
    before, syncs_before = _count_syncs(_load(src), *args)
    after, syncs_after = _count_syncs(_load(new), *args)
    print(f"{code}: syncs before={syncs_before} after={syncs_after}")
    _compare(before, after, bitwise=bitwise)
    assert syncs_after < syncs_before


@pytest.mark.cuda
def test_float32_point_one_differs_on_gpu_too():
    unsafe = fix_code(S.POINT_ONE, select=["SFX201"], unsafe_fixes=True)
    assert fix_code(S.POINT_ONE, select=["SFX201"]) == S.POINT_ONE
    assert _load(S.POINT_ONE)(0.1).item() == 0.5
    assert _load(unsafe)(0.1).item() == 2.0
