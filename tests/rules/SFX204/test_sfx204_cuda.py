"""On a GPU: SFX204's safe rewrite (made by ``syncfix.fix_code``, never by hand) gives the same
values (bitwise) with fewer syncs, counted with ``torch.cuda.set_sync_debug_mode("warn")``."""

from __future__ import annotations

import pytest

from ..support import check_rewrite_keeps_values_with_fewer_syncs
from .snippets import MASKED_FILL_FLOAT, MASKED_FILL_INT, MASKED_UPDATE, SAME_MASK_VALUES

torch = pytest.importorskip("torch")


CASES = [
    # (code, snippet, unsafe, args, bitwise)
    ("SFX204", MASKED_FILL_FLOAT, False, (1000, 0.0), True),
    ("SFX204", MASKED_FILL_INT, False, (1000, 2), True),
    ("SFX204", SAME_MASK_VALUES, False, (1000, 0.5), True),
    ("SFX204", MASKED_UPDATE, False, (1000, 5e-5), True),
]


@pytest.mark.cuda
@pytest.mark.parametrize(
    "code,src,unsafe,args,bitwise",
    CASES,
    ids=[f"{c[0]}-{i}" for i, c in enumerate(CASES)],
)
def test_rewrite_keeps_values_with_fewer_syncs(code, src, unsafe, args, bitwise):
    check_rewrite_keeps_values_with_fewer_syncs(code, src, unsafe, args, bitwise)
