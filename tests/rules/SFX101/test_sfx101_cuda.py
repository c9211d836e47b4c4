"""On a GPU: each fixable SFX1xx rule's rewrite (made by ``syncfix.fix_code``, never by hand) gives
bit-identical results with fewer host-device synchronizations.

Syncs are counted with ``torch.cuda.set_sync_debug_mode("warn")``: one ``UserWarning`` per
``memcpy_and_sync``/``stream_synchronize`` (sync-semantics §2a). SFX103 is the exception: pinning
removes a wait that this counter cannot see (a large *pageable* ``non_blocking`` copy waits for
queued kernels silently, §1.3), so its test counts how many copies returned only after a kernel
queued before them had finished. Run with ``-s`` to see the before/after counts.
"""

from __future__ import annotations

import textwrap
import warnings

import pytest

from syncfix import fix_code

torch = pytest.importorskip("torch")


def _rewrite(src: str, code: str) -> tuple[str, str]:
    src = textwrap.dedent(src)
    fixed = fix_code(src, select=[code])
    assert fixed != src, f"{code} did not rewrite the snippet"
    return src, fixed


def _load(src: str, name: str = "run"):
    ns: dict = {}
    exec(compile(src, f"<snippet {name}>", "exec"), ns)
    return ns[name]


def _count_syncs(fn, *args):
    """Call ``fn`` once to warm up, then again counting sync warnings; returns (result, count)."""
    fn(*args)
    torch.cuda.synchronize()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        torch.cuda.set_sync_debug_mode("warn")
        try:
            result = fn(*args)
        finally:
            torch.cuda.set_sync_debug_mode(0)
    torch.cuda.synchronize()
    syncs = sum(
        1
        for w in caught
        if issubclass(w.category, UserWarning) and "synchroniz" in str(w.message)
    )
    return result, syncs


def _assert_identical(a, b, path: str = "result") -> None:
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
            _assert_identical(x, y, f"{path}[{i}]")
    elif isinstance(a, dict):
        assert list(a) == list(b), f"{path}: keys differ"
        for k in a:
            _assert_identical(a[k], b[k], f"{path}[{k!r}]")
    else:
        assert a == b, f"{path}: {a!r} != {b!r}"


def _check(code: str, snippet: str, *args) -> None:
    before_src, after_src = _rewrite(snippet, code)
    before, n_before = _count_syncs(_load(before_src), *args)
    after, n_after = _count_syncs(_load(after_src), *args)
    print(f"\n{code}: syncs before={n_before} after={n_after}\n--- rewritten ---\n{after_src}")
    _assert_identical(before, after)
    assert n_after < n_before, f"{code}: {n_before} syncs before, {n_after} after"


@pytest.mark.cuda
def test_sfx101_non_blocking_copies():
    _check(
        "SFX101",
        """
        import torch
        from torch.utils.data import DataLoader

        def run(n=4):
            out = []
            for i in range(n):
                x = torch.arange(4096, dtype=torch.float32) * i
                out.append(x.cuda() * 2)
            dev = torch.device(f"cuda:{torch.cuda.current_device()}")
            samples = [{"a": torch.full((4,), float(i)), "b": torch.arange(3) + i} for i in range(8)]
            for batch in DataLoader(samples, batch_size=4):
                moved = {k: v.to(dev, torch.float64) for k, v in batch.items()}
                out.append(moved)
            return out
        """,
    )


@pytest.mark.cuda
def test_sfx102_creation_on_device():
    _check(
        "SFX102",
        """
        import numpy as np
        import torch

        def run(n=4):
            out = []
            for i in range(n):
                a = torch.tensor(0.1, device="cuda")
                b = torch.tensor(True, device="cuda")
                c = torch.tensor(-7, device="cuda", dtype=torch.int32)
                d = torch.tensor(float(i) / 3, device="cuda", requires_grad=True)
                e = torch.tensor([1.5, 2.5, 3.5], device="cuda", dtype=torch.float64)
                f = torch.as_tensor(np.arange(6, dtype=np.int16), device="cuda")
                g = torch.tensor(np.float32(2.5), device="cuda")
                out.append((a, b, c, d, e, f, g))
            return out
        """,
    )


@pytest.mark.cuda
def test_sfx103_pinned_loader_copies_do_not_wait():
    before_src, after_src = _rewrite(
        """
        import torch
        from torch.utils.data import DataLoader, TensorDataset

        def run(data, probe):
            out = []
            for (x,) in DataLoader(TensorDataset(data), batch_size=data.shape[0] // 2):
                probe.queue_kernel()
                y = x.to("cuda", non_blocking=True)
                probe.copy_returned()
                out.append(y.sum(dtype=torch.float64))
            return torch.stack(out)
        """,
        "SFX103",
    )

    class Probe:
        """Queue ~100 ms of GPU work before each copy; count copies that returned after it."""

        waited = 0

        def queue_kernel(self) -> None:
            torch.cuda._sleep(200_000_000)
            self.done = torch.cuda.Event()
            self.done.record()

        def copy_returned(self) -> None:
            self.waited += int(self.done.query())

    data = torch.arange(2 * 16 * 2**20, dtype=torch.float32).reshape(2, -1)  # 2 x 64 MiB
    counts = []
    results = []
    for src in (before_src, after_src):
        probe = Probe()
        result, syncs = _count_syncs(_load(src), data, probe)
        probe.waited = 0
        result = _load(src)(data, probe)
        torch.cuda.synchronize()
        counts.append((probe.waited, syncs))
        results.append(result)
    print(
        f"\nSFX103: copies that waited for queued work before={counts[0][0]} after={counts[1][0]}; "
        f"set_sync_debug_mode syncs before={counts[0][1]} after={counts[1][1]}\n{after_src}"
    )
    _assert_identical(results[0], results[1])
    assert counts[1][1] <= counts[0][1]
    assert counts[1][0] < counts[0][0], "pinning did not stop the copies from waiting"


@pytest.mark.cuda
def test_sfx104_index_on_device():
    _check(
        "SFX104",
        """
        import torch

        def run(n=4):
            torch.manual_seed(0)
            x = torch.randn(64, 32, device="cuda")
            keep = torch.arange(0, 32, 3)
            out = []
            for i in range(n):
                out.append(x[[3, 1, -4, 1, 5]] * i)
                out.append(x[:, keep].sum(0))
                x[[0, 2]] = float(i)
            out.append(x)
            return out
        """,
    )
