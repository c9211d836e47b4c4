"""On a GPU: SFX104's on-device index gives bit-identical results with fewer syncs.

Syncs are counted with ``torch.cuda.set_sync_debug_mode("warn")`` (one warning per
``memcpy_and_sync``/``stream_synchronize``: docs/semantics.md#counting-syncs). The rewrite is made
by ``syncfix.fix_code``, never by hand. Run with ``-s`` to see the before/after counts.
"""

from __future__ import annotations

import pytest

from ..support import check_fewer_syncs

torch = pytest.importorskip("torch")


@pytest.mark.cuda
def test_sfx104_index_on_device():
    check_fewer_syncs(
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


TOP_K_CUT = '''
import torch


def f(steps: int, k: int):
    torch.manual_seed(0)
    logits = torch.randn(16, 100, device="cuda")
    for _ in range(steps):
        v, _ = torch.topk(logits, k)
        logits[logits < v[:, [-1]]] = -float("Inf")
        logits = logits + torch.randn_like(logits)
    return logits
'''


@pytest.mark.cuda
def test_sfx104_unsafe_slice_of_an_operand():
    from ..support import check_rewrite_keeps_values_with_fewer_syncs

    check_rewrite_keeps_values_with_fewer_syncs("SFX104", TOP_K_CUT, True, (4, 5), True)


ARANGE_POOL = '''
import torch


def pool(x: torch.Tensor, text: torch.Tensor):
    return x[torch.arange(x.shape[0]), text.argmax(dim=-1)]


def f(steps: int, n: int):
    torch.manual_seed(0)
    x = torch.randn(n, 77, 64, device="cuda")
    text = torch.randint(0, 1000, (n, 77), device="cuda")
    out = []
    for _ in range(steps):
        out.append(pool(x, text))
        x = x * 0.5
    return tuple(out)
'''


@pytest.mark.cuda
def test_sfx104_arange_index_built_on_the_device():
    # CLIP's text pooling: the index built with `device=x.device`, no copy at all
    from ..support import check_rewrite_keeps_values_with_fewer_syncs

    assert "torch.arange(x.shape[0], device=x.device)" in __import__("syncfix").fix_code(ARANGE_POOL, select=["SFX104"])
    check_rewrite_keeps_values_with_fewer_syncs("SFX104", ARANGE_POOL, False, (6, 8), True)
