"""On a GPU: SFX101's non-blocking copies give bit-identical results with fewer syncs.

Syncs are counted with ``torch.cuda.set_sync_debug_mode("warn")`` (one warning per
``memcpy_and_sync``/``stream_synchronize``: docs/semantics.md#counting-syncs). The rewrite is made
by ``syncfix.fix_code``, never by hand. Run with ``-s`` to see the before/after counts.
"""

from __future__ import annotations

import pytest

from ..support import check_fewer_syncs

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
