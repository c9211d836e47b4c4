"""Helpers the per-rule tests share (``tests/rules/<CODE>/test_*.py``).

Nothing here imports torch at import time: the CPU-only tests import this module too, and a
test module that needs torch skips itself with ``pytest.importorskip("torch")``.

The comparisons differ on purpose; each keeps the strictness its tests were written with:
``assert_same_result`` (GPU tests of the SFX1xx rewrites: values, dtype, shape, device,
``requires_grad``, ``is_leaf``; lists, tuples, dicts), ``compare`` (GPU tests of the SFX2xx
rewrites: bitwise or ``assert_close``), ``assert_bitwise_identical`` (CPU value tests of the
SFX2xx rewrites: bit patterns, so NaN payloads and -0.0 count) and ``same`` (CPU property tests
of the SFX3xx rewrites, on Python values: types all the way down, floats bit for bit).
"""

from __future__ import annotations

import itertools
import math
import textwrap
import warnings
from typing import Any

import hypothesis.strategies as st

from syncfix import fix_code

# ---- running snippets ------------------------------------------------------------------------


def load(src: str, name: str):
    """Execute ``src`` and return its top-level ``name``."""
    namespace: dict = {}
    exec(compile(src, f"<snippet {name}>", "exec"), namespace)
    return namespace[name]


def rewrite(src: str, code: str) -> tuple[str, str]:
    """(dedented source, ``code``'s safe rewrite of it); the rewrite must change something."""
    src = textwrap.dedent(src)
    fixed = fix_code(src, select=[code])
    assert fixed != src, f"{code} did not rewrite the snippet"
    return src, fixed


def run_snippet(code: str):
    """``("ok", f())`` or ``("raised", exception type name, message)`` for the snippet's ``f``."""
    f = load(code, "f")
    try:
        return ("ok", f())
    except Exception as exc:  # the same error must come out of both versions
        return ("raised", type(exc).__name__, str(exc))


LOOP = "import time\nimport torch\nx = torch.ones(3, device='cuda')\nout = []\nfor _ in range(3):\n"


def messages_in_loop(body: str, code: str) -> list[str]:
    """``code``'s messages for ``body`` placed in a loop over a CUDA tensor ``x``."""
    from syncfix import check_code

    return [f.message for f in check_code(LOOP + body, select=[code])]


# ---- counting syncs on a GPU -----------------------------------------------------------------


def count_syncs(fn, *args, warm_up: bool = True, seed: int | None = None):
    """(result, number of synchronizing CUDA calls while running ``fn(*args)``).

    Counted with ``torch.cuda.set_sync_debug_mode("warn")``: one warning per ``.item()``,
    ``.tolist()``, blocking copy or data-dependent size (docs/semantics.md#counting-syncs).
    ``warm_up`` runs ``fn`` once first (first calls allocate and create handles); ``seed`` seeds
    torch right before the counted call.
    """
    import torch

    if warm_up:
        fn(*args)
    torch.cuda.synchronize()
    previous = torch.cuda.get_sync_debug_mode()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        torch.cuda.set_sync_debug_mode("warn")
        try:
            if seed is not None:
                torch.manual_seed(seed)
            result = fn(*args)
        finally:
            torch.cuda.set_sync_debug_mode(previous)
    torch.cuda.synchronize()
    syncs = sum(
        1 for w in caught if issubclass(w.category, UserWarning) and "synchroniz" in str(w.message)
    )
    return result, syncs


def check_fewer_syncs(code: str, snippet: str, *args) -> None:
    """``code``'s safe rewrite of ``snippet``'s ``run`` returns the same, with fewer syncs."""
    before_src, after_src = rewrite(snippet, code)
    before, n_before = count_syncs(load(before_src, "run"), *args)
    after, n_after = count_syncs(load(after_src, "run"), *args)
    print(f"\n{code}: syncs before={n_before} after={n_after}\n--- rewritten ---\n{after_src}")
    assert_same_result(before, after)
    assert n_after < n_before, f"{code}: {n_before} syncs before, {n_after} after"


def check_rewrite_keeps_values_with_fewer_syncs(code, src, unsafe, args, bitwise) -> None:
    """The SFX2xx GPU check: the rewrite of ``f`` (unsafe fixes if ``unsafe``) gives the same
    values (bitwise, or close where summation order changes) with fewer syncs."""
    new = fix_code(src, select=[code], unsafe_fixes=unsafe)
    assert new != src, "no fix applied"
    if not unsafe:
        assert fix_code(src, select=[code]) == new, "expected a safe fix"
    before, syncs_before = count_syncs(load(src, "f"), *args, seed=0)
    after, syncs_after = count_syncs(load(new, "f"), *args, seed=0)
    print(f"{code}: syncs before={syncs_before} after={syncs_after}")
    compare(before, after, bitwise=bitwise)
    assert syncs_after < syncs_before


# ---- comparing results -----------------------------------------------------------------------


def bits(t):
    """A tensor's exact bit pattern (so NaN payloads and -0.0 count)."""
    import torch

    if t.is_floating_point():
        return t.contiguous().view({2: torch.int16, 4: torch.int32, 8: torch.int64}[t.element_size()])
    return t


def assert_same_result(a, b, path: str = "result") -> None:
    import torch

    assert type(a) is type(b), f"{path}: {type(a)} != {type(b)}"
    if isinstance(a, torch.Tensor):
        assert a.dtype == b.dtype, f"{path}: dtype {a.dtype} != {b.dtype}"
        assert a.shape == b.shape, f"{path}: shape {a.shape} != {b.shape}"
        assert a.device == b.device, f"{path}: device {a.device} != {b.device}"
        assert a.requires_grad == b.requires_grad, f"{path}: requires_grad differs"
        assert a.is_leaf == b.is_leaf, f"{path}: is_leaf differs"
        assert torch.equal(a.detach().cpu(), b.detach().cpu()), f"{path}: values differ"
    elif isinstance(a, (list, tuple)):
        assert len(a) == len(b), f"{path}: length differs"
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            assert_same_result(x, y, f"{path}[{i}]")
    elif isinstance(a, dict):
        assert list(a) == list(b), f"{path}: keys differ"
        for k in a:
            assert_same_result(a[k], b[k], f"{path}[{k!r}]")
    else:
        assert a == b, f"{path}: {a!r} != {b!r}"


def compare(a, b, *, bitwise: bool) -> None:
    import torch

    assert type(a) is type(b)
    if isinstance(a, tuple):
        for x, y in zip(a, b, strict=True):
            compare(x, y, bitwise=bitwise)
    elif isinstance(a, torch.Tensor):
        assert a.dtype == b.dtype and a.shape == b.shape and a.device == b.device
        if bitwise:
            assert torch.equal(bits(a), bits(b))
        else:
            torch.testing.assert_close(a, b)
    else:
        assert a == b


def assert_bitwise_identical(a, b) -> None:
    import torch

    assert type(a) is type(b)
    if isinstance(a, tuple):
        assert len(a) == len(b)
        for x, y in zip(a, b, strict=True):
            assert_bitwise_identical(x, y)
    elif isinstance(a, torch.Tensor):
        assert a.dtype == b.dtype and a.shape == b.shape and a.device == b.device
        assert torch.equal(bits(a), bits(b))
        assert a.requires_grad == b.requires_grad
    else:
        assert a == b or (a != a and b != b)


def same(a, b) -> bool:
    """Exactly equal: same types all the way down, floats bit for bit (``-0.0``, NaN)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, (list, tuple)):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, float):
        return math.copysign(1, a) == math.copysign(1, b) and (a == b or (a != a and b != b))
    return a == b


# ---- SFX2xx value tests on the CPU -----------------------------------------------------------

FLOAT_INPUTS = [
    0.0, -0.0, 0.1, 0.25, 0.5, 0.2500001, 0.4999999, 1.0, -1.0, 3.5, 1e-30, -1e30, 16777217.0,
    math.inf, -math.inf, math.nan,
]
INT_INPUTS = [0, 1, 3, 4, 9, 10, 11, -1, -(2**40), 2**40, 2**62, -(2**62), 16777217]


def on_cpu(src: str) -> dict:
    """Run a snippet with its CUDA device strings pointed at the CPU (both versions alike)."""
    ns: dict = {}
    exec(compile(src.replace('"cuda"', '"cpu"'), "<snippet>", "exec"), ns)
    return ns


def inputs_for(src: str) -> list[tuple]:
    """The inputs a value-test snippet's ``f`` is called with, chosen by its signature."""
    inf = float("inf")
    if "m0: float, s0: float" in src:
        return list(itertools.product(FLOAT_INPUTS, FLOAT_INPUTS[::3]))
    if "v: int, w: int" in src:
        return list(itertools.product(INT_INPUTS, [0, 3, 4, 100]))
    if "(v: float)" in src:
        return [(v,) for v in FLOAT_INPUTS]
    if "p: bool, q: bool" in src:
        return list(itertools.product([False, True], [False, True]))
    if "n: int, shift: float" in src:
        return [(n, s) for n in (1, 5, 64) for s in (-3.0, -0.01, 0.0, 0.01, 3.0)]
    if "n: int, thr: float" in src:
        return [(n, t) for n in (1, 7, 64) for t in (-inf, -0.5, 0.0, 0.5, inf)]
    if "n: int, thr: int" in src:
        return [(n, t) for n in (1, 7, 64) for t in (-100, -3, 0, 2, 100)]
    raise AssertionError("no inputs for snippet")


def check_safe_rewrite_is_exact_on_cpu(code: str, src: str) -> None:
    import torch

    new = fix_code(src, select=[code])
    assert new != src, "the safe fix did not apply"
    assert "where" in new
    old_f, new_f = on_cpu(src)["f"], on_cpu(new)["f"]
    for args in inputs_for(src):
        torch.manual_seed(0)
        before = old_f(*args)
        torch.manual_seed(0)
        after = new_f(*args)
        assert_bitwise_identical(before, after), args


# ---- SFX3xx property tests on the CPU --------------------------------------------------------

FLOATS = ("float16", "bfloat16", "float32", "float64")
INTS = ("int64", "int32", "uint8")
KIND = {**{d: "float" for d in FLOATS}, **{d: "int" for d in INTS}, "bool": "bool"}
HEADER = 'import torch\n\ndev = "cuda" if torch.cuda.is_available() else "cpu"\n\n\n'


def value_of(dtype: str) -> st.SearchStrategy[Any]:
    """Python values a tensor of ``dtype`` holds, with its edges (2**53, 2**24, widths)."""
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


# ---- SFX3xx edge cases -----------------------------------------------------------------------

HEAD = "import torch\n\ndev = 'cuda'\n\n\n"


def fix_body(code: str, rule: str) -> str:
    """``rule``'s safe fix of ``HEAD + code``, without ``HEAD``."""
    return fix_code(HEAD + code, select=[rule])[len(HEAD):]
