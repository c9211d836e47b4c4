"""On a GPU: SFX101's non-blocking copies give bit-identical results with fewer syncs.

Syncs are counted with ``torch.cuda.set_sync_debug_mode("warn")`` (one warning per
``memcpy_and_sync``/``stream_synchronize``: docs/semantics.md#counting-syncs). The rewrite is made
by ``syncfix.fix_code``, never by hand. Run with ``-s`` to see the before/after counts.
"""

from __future__ import annotations

import pytest

from ..support import check_fewer_syncs, check_rewrite_keeps_values_with_fewer_syncs

torch = pytest.importorskip("torch")


@pytest.mark.cuda
def test_sfx101_non_blocking_copies():
    check_fewer_syncs(
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
def test_sfx101_pinned_batches_of_a_loader_kept_by_a_trainer_class():
    # the loader reaches the loop through __init__'s parameter and self.train_data (fixture
    # pinned_loader_in_attribute); the rewrite must be the safe one, with the same outputs
    check_fewer_syncs(
        "SFX101",
        """
        import torch
        from torch.utils.data import DataLoader, TensorDataset

        class _Trainer:
            def __init__(self, train_data, rank):
                self.device = torch.device("cuda", rank)
                self.train_data = train_data
                self.out = []

            def _run_batch(self, source, targets):
                self.out.append((source * 2).sum(1) + targets)

            def _run_epoch(self):
                for source, targets in self.train_data:
                    source = source.to(self.device)
                    targets = targets.to(self.device)
                    self._run_batch(source, targets)

        def run():
            g = torch.Generator().manual_seed(0)
            data = TensorDataset(torch.randn(64, 1024, generator=g), torch.arange(64.0))
            loader = DataLoader(data, batch_size=8, pin_memory=True)
            t = _Trainer(loader, torch.cuda.current_device())
            for _ in range(2):
                t._run_epoch()
            return t.out
        """,
    )


@pytest.mark.cuda
def test_sfx101_numpy_buffer_written_again_is_staged_at_the_call():
    # numpy's own (pageable) memory is staged by the driver when `.to` returns, so refilling
    # it next step cannot reach the copy (fixture numpy_memory): same values, fewer syncs
    check_fewer_syncs(
        "SFX101",
        """
        import numpy as np
        import torch

        def run(steps=6):
            device = torch.device("cuda", torch.cuda.current_device())
            a = torch.randn(2048, 2048, device=device)
            buf = np.zeros(1 << 16, dtype=np.float32)
            out = []
            for step in range(steps):
                buf[:] = step
                for _ in range(4):
                    a = (a @ a).tanh()  # queued work the copy would wait for
                x = torch.from_numpy(buf).to(device)
                buf[:] = -1.0
                out.append(x.sum())
            return out
        """,
    )


@pytest.mark.cuda
def test_sfx101_numpy_view_of_a_pinned_buffer_stays_blocking():
    # why `staging.numpy()` is no numpy-owned memory: a non-blocking copy of the pinned view
    # runs after the host has written the next values into it (measured below), so syncfix
    # leaves the copy as it is
    from syncfix import fix_code

    src = (
        "import torch\n"
        "def run(steps, device):\n"
        "    staging = torch.empty(1 << 20, pin_memory=True)\n"
        "    view = staging.numpy()\n"
        "    for step in range(steps):\n"
        "        view[:] = step\n"
        "        x = torch.from_numpy(view).to(device)\n"
        "        view[:] = -1.0\n"
        "        print(x.sum())\n"
    )
    assert fix_code(src, select=["SFX101"], unsafe_fixes=True) == src
    device = torch.device("cuda", torch.cuda.current_device())
    a = torch.randn(4096, 4096, device=device)
    staging = torch.empty(1 << 20, pin_memory=True)
    view = staging.numpy()
    wrong = 0
    for step in range(5):
        view[:] = step
        for _ in range(20):
            a = (a @ a).tanh()
        x = torch.from_numpy(view).to(device, non_blocking=True)
        view[:] = -1.0
        wrong += int(x.sum().item() != step * (1 << 20))
    print(f"non-blocking copies of the refilled pinned view with other values: {wrong} of 5")
    assert wrong > 0


@pytest.mark.cuda
def test_sfx101_blocking_copy_that_waits_for_an_async_read_back_stays_safe_only_as_is():
    # why code that copies to the host without waiting gets no safe fix: the blocking copy of
    # the labels is what waits for `pred` to land; made non-blocking (as the unsafe fix would),
    # the host reads `pred` before the copy ran (measured below)
    from syncfix import fix_code

    src = (
        "import torch\n"
        "def evaluate(model, loader):\n"
        "    correct = 0\n"
        "    for x, y in loader:\n"
        "        pred = model(x).argmax(1).to('cpu', non_blocking=True)\n"
        "        labels = torch.zeros(4, dtype=torch.long).cuda()\n"
        "        correct += int((pred.numpy() == 0).sum())\n"
        "        model.other(labels)\n"
        "    return correct\n"
    )
    assert fix_code(src, select=["SFX101"]) == src
    assert fix_code(src, select=["SFX101"], unsafe_fixes=True) != src
    device = torch.device("cuda", torch.cuda.current_device())
    a = torch.randn(4096, 4096, device=device)
    results = {}
    for blocking in (True, False):
        wrong = 0
        for step in range(5):
            for _ in range(20):
                a = (a @ a).tanh()
            out = (a[0, :1].abs() * 0 + step).expand(1 << 20).contiguous()
            pred = out.to("cpu", non_blocking=True)
            labels = torch.zeros(4).to(device, non_blocking=not blocking)
            wrong += int(not bool((pred == step).all()))
            del labels
        results[blocking] = wrong
    print(f"host reads of an unfinished read-back: blocking {results[True]} of 5, non-blocking {results[False]} of 5")
    assert results[True] == 0 and results[False] > 0


@pytest.mark.cuda
def test_copies_of_no_elements_do_not_sync():
    # why `torch.empty(0).cuda()` and `torch.tensor([], device=...)` are not reported
    import warnings

    from syncfix import check_code

    src = (
        "import torch\n"
        "def step(model, steps, dev):\n"
        "    for _ in range(steps):\n"
        "        model(torch.empty(0).to(dev), torch.zeros((0, 3)).cuda(), torch.tensor([], device=dev))\n"
    )
    assert check_code(src, select=["SFX101", "SFX102"]) == []
    device = torch.device("cuda", torch.cuda.current_device())
    torch.cuda.synchronize()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        torch.cuda.set_sync_debug_mode("warn")
        try:
            for _ in range(3):
                torch.empty(0).to(device)
                torch.zeros((0, 3)).cuda()
                torch.tensor([], device=device)
        finally:
            torch.cuda.set_sync_debug_mode(0)
    syncs = [w for w in caught if "synchroniz" in str(w.message).lower()]
    print(f"syncs of copies with no elements: {len(syncs)}")
    assert not syncs


@pytest.mark.cuda
def test_sfx101_view_of_a_tensor_built_from_a_list_that_grows():
    # `torch.tensor(tokens)` copies the list; its view copied non-blocking cannot see the list
    # grow (fixture fresh_temporary_views): same values, fewer syncs
    check_fewer_syncs(
        "SFX101",
        """
        import torch

        def run(steps=8):
            w = torch.linspace(-1, 1, 64 * 64, device="cuda").reshape(64, 64)
            tokens = [1, 2, 3]
            out = []
            for _ in range(steps):
                for _ in range(4):
                    w = (w @ w).tanh()  # queued work the copy would wait for
                ids = torch.tensor(tokens).reshape(1, -1)[:, -3:].cuda()
                tokens += [len(tokens) % 64]
                out.append(w[ids].sum(-1))
            return out
        """,
    )


@pytest.mark.cuda
def test_sfx101_legacy_constructor_of_a_list():
    # `torch.Tensor([...])` copies the list into a new pageable CPU tensor (fixture
    # legacy_constructors): same values, fewer syncs
    check_fewer_syncs(
        "SFX101",
        """
        import torch

        def run(steps=6):
            w = torch.linspace(-1, 1, 256 * 256, device="cuda").reshape(256, 256)
            out = []
            for i in range(steps):
                for _ in range(4):
                    w = (w @ w).tanh()  # queued work the copy would wait for
                t = torch.Tensor([0, i]).cuda()
                out.append(w[0, :2] * t)
            return out
        """,
    )


@pytest.mark.cuda
def test_sfx101_legacy_constructor_of_a_built_list_and_a_repeated_display():
    # `torch.LongTensor(lengths)` of a list the loop appends to, and `torch.tensor([t] * n)` of a
    # CUDA 0-d tensor (read on the host, then a new CPU tensor): copied to cuda|cpu, safely
    # non-blocking (fixtures legacy_constructors, repeated_display)
    check_fewer_syncs(
        "SFX101",
        """
        import torch

        DEVICE = torch.device("cuda" if torch.cuda.is_available() else "cpu")

        def run(steps=6):
            w = torch.linspace(-1, 1, 256 * 256, device="cuda").reshape(256, 256)
            out = []
            for i in range(steps):
                for _ in range(4):
                    w = (w @ w).tanh()  # queued work the copies would wait for
                lengths = list()
                for k in range(3):
                    lengths.append(i + k)
                n = torch.LongTensor(lengths).to(DEVICE)
                t = torch.tensor([w[0, 0]] * 3).to(DEVICE)
                out.append((w[0, :3] * n, t))
            return out
        """,
    )


@pytest.mark.cuda
def test_sfx101_legacy_constructors_by_size_filled_then_copied():
    # ssd.pytorch's targets: `torch.Tensor(n, k, 4)` / `torch.LongTensor(n, k)` filled in place
    # on the host (here by a helper), then copied every step: made non-blocking, same values
    check_fewer_syncs(
        "SFX101",
        """
        import torch

        def fill(loc, conf, i):
            loc.copy_(torch.arange(loc.numel(), dtype=torch.float32).reshape(loc.shape) * i)
            conf.fill_(i)

        def run(n=6):
            out = []
            weight = torch.ones(256, 256, device="cuda")
            for i in range(n):
                weight = weight @ weight / 256
                loc_t = torch.Tensor(8, 16, 4)
                conf_t = torch.LongTensor(8, 16)
                fill(loc_t, conf_t, i)
                loc_t = loc_t.cuda()
                conf_t = conf_t.cuda()
                out.append((loc_t * 2, conf_t + 1, weight.sum()))
            return out
        """,
    )


@pytest.mark.cuda
def test_sfx101_a_cast_batch_item_is_copied_before_its_cast():
    # HRNet's ``labels.long().cuda()`` of a pinned int32 batch: the unsafe fix copies the item
    # itself (pinned) and casts on the device, with the same int64 and float16 values
    check_rewrite_keeps_values_with_fewer_syncs(
        "SFX101",
        """
import torch
from torch.utils.data import TensorDataset


def f(seed):
    g = torch.Generator().manual_seed(seed)
    data = TensorDataset(torch.randint(-5, 255, (16, 64, 64), dtype=torch.int32, generator=g), torch.randn(16, 8, generator=g))
    out = []
    loader = getattr(torch.utils.data, "DataLoader")(data, batch_size=4, pin_memory=True)  # unseen
    for labels, feats in loader:
        labels = labels.long().cuda()
        out.append((labels * 3, feats.half().cuda() + 1))
    return tuple(out)
""",
        True,
        (0,),
        True,
    )


@pytest.mark.cuda
def test_sfx101_copy_after_an_is_cuda_guard_and_of_spread_loader_options():
    # fixtures is_cuda_guard and loader_kwargs_read: x.device is CUDA after `if x.is_cuda: ...
    # else: raise`; a loader's options spread from a dict syncfix reads make fresh batches
    check_fewer_syncs(
        "SFX101",
        """
        import torch
        from torch.utils.data import DataLoader, TensorDataset

        def scaled(x):
            if x.is_cuda:
                ex = x.mean()
            else:
                raise NotImplementedError
            count = torch.tensor([3.0]).to(x.device)
            return ex / count

        def run(n=4):
            x = torch.arange(4096, dtype=torch.float32, device="cuda")
            out = []
            for i in range(n):
                out.append(scaled(x * i))
            kw = {"batch_size": 8, "pin_memory": True}
            for (b,) in DataLoader(TensorDataset(torch.arange(32.0).reshape(16, 2)), **kw):
                out.append(b.cuda() * 2)
            return out
        """,
    )


@pytest.mark.cuda
def test_sfx101_copies_into_a_list_the_batch_name_is_rebound_to_keep_the_values():
    # YOLOP's validation: each target copied into a list, the batch's name rebound to it, and
    # the write after it goes to the copies (an unsafe fix: the device is a parameter's)
    import torch

    src = """
import torch


def f(batches, device):
    out = []
    for img, target in batches:
        img = img.to(device, non_blocking=True)
        assign_target = []
        for tgt in target:
            assign_target.append(tgt.to(device))
        target = assign_target
        target[0][:, 2:] *= 2.0
        labels = target[0][target[0][:, 0] == 1, 1:]
        labels[:, 1:3] = 0.0
        out.append((img.sum(), target[0].sum(), target[1].sum(), labels.sum()))
    return out
"""
    g = torch.Generator().manual_seed(0)

    def batches():
        return [
            (torch.randn(4, 3, 64, 64, generator=g), [torch.randint(0, 3, (16, 6), generator=g).float(), torch.randn(8, 4, generator=g)])
            for _ in range(6)
        ]

    data = batches()
    check_rewrite_keeps_values_with_fewer_syncs("SFX101", src, True, (data, torch.device("cuda")), bitwise=True)
