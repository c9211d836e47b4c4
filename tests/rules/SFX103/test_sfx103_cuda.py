"""On a GPU: SFX103's pinned loader gives the same results and its copies stop waiting.

Pinning removes a wait that ``set_sync_debug_mode`` cannot see (a large *pageable*
``non_blocking`` copy waits for queued kernels silently: docs/semantics.md#copies-between-host-and-device),
so this test counts how many copies returned only after a kernel queued before them had finished.
The rewrite is made by ``syncfix.fix_code``, never by hand. Run with ``-s`` to see the counts.
"""

from __future__ import annotations

import textwrap

import pytest

from syncfix.api import fix_code

from ..support import assert_same_result, count_syncs, load, rewrite

torch = pytest.importorskip("torch")


@pytest.mark.cuda
def test_sfx103_pinned_loader_copies_do_not_wait():
    before_src, after_src = rewrite(
        """
        import torch
        from torch.utils.data import DataLoader, TensorDataset

        def run(data: torch.Tensor, probe):
            out = []
            # a dataset of CPU tensors (`.cpu()` makes that provable): pinning is safe
            for (x,) in DataLoader(TensorDataset(data.cpu()), batch_size=data.shape[0] // 2):
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
        result, syncs = count_syncs(load(src, "run"), data, probe)
        probe.waited = 0
        result = load(src, "run")(data, probe)
        torch.cuda.synchronize()
        counts.append((probe.waited, syncs))
        results.append(result)
    print(
        f"\nSFX103: copies that waited for queued work before={counts[0][0]} after={counts[1][0]}; "
        f"set_sync_debug_mode syncs before={counts[0][1]} after={counts[1][1]}\n{after_src}"
    )
    assert_same_result(results[0], results[1])
    assert counts[1][1] <= counts[0][1]
    assert counts[1][0] < counts[0][0], "pinning did not stop the copies from waiting"


@pytest.mark.cuda
def test_sfx103_pinned_views_rebound_to_their_copies_keep_the_values():
    # lightly's DINO loop: ``views = [view.to(device) for view in views]`` rebinds the list to
    # the copies, and a later comprehension's ``view`` is another variable; SFX101 makes the
    # copies non-blocking and SFX103 pins the loader, both as safe fixes
    src = textwrap.dedent(
        """
        import torch
        from torch.utils.data import DataLoader, TensorDataset

        def run(data: torch.Tensor):
            out = []
            for (views,) in DataLoader(TensorDataset(data.cpu()), batch_size=2):
                views = [view.to("cuda") for view in views]
                doubled = [view * 2 for view in views[:1]]
                for view in views:
                    view.mul_(3)
                out.append(torch.stack([*views, *doubled]).sum(0))
            return torch.stack(out)
        """
    )
    fixed = fix_code(src, select=["SFX101", "SFX103"])
    assert "pin_memory=True" in fixed and "non_blocking=True" in fixed, fixed
    data = torch.randn(8, 3, 1024, 1024)
    assert_same_result(load(src, "run")(data), load(fixed, "run")(data))


@pytest.mark.cuda
def test_sfx103_pinned_loader_with_file_names_keeps_the_values_and_the_names():
    # MIRNet's test scripts: each batch holds images and their file names, made into new strings
    # for saving; pinning keeps the strings as they are and the copies' values bitwise
    src = textwrap.dedent(
        """
        import torch
        from torch.utils.data import DataLoader, Dataset

        class Frames(Dataset):
            def __init__(self, data):
                self.data = data

            def __len__(self):
                return len(self.data)

            def __getitem__(self, i):
                return self.data[i], f"img{i}.png"

        def run(data: torch.Tensor):
            out, saved = [], []
            for batch in DataLoader(Frames(data.cpu()), batch_size=2):
                x = batch[0].cuda()
                names = batch[1]
                y = (x * 2).sum(dim=(1, 2, 3))
                for i in range(len(names)):
                    saved.append("out/" + names[i][:-4] + ".png")
                out.append(y)
            return torch.cat(out), saved
        """
    )
    fixed = fix_code(src, select=["SFX103"])
    assert "pin_memory=True" in fixed, fixed
    data = torch.randn(6, 3, 256, 256)
    before, after = load(src, "run")(data), load(fixed, "run")(data)
    assert_same_result(before[0], after[0])
    assert before[1] == after[1] == [f"out/img{i}.png" for i in range(6)]
