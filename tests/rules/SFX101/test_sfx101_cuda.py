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
