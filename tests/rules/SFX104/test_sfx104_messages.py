"""What SFX104 says where it gives no fix."""

from __future__ import annotations

from syncfix import check_code

POOL = """\
import torch


def pool(x, text):
    for _ in range(3):
{guard}        y = x[torch.arange(x.shape[0]), text.argmax(dim=-1)]
{handler}    return y
"""


def test_an_index_built_on_the_host_inside_a_catching_try_says_why_it_gets_no_fix():
    # MeZO's forward, called in a try elsewhere: the fix (no copy) would move where queued GPU
    # errors surface, out of the try; the message says so instead of advising a copy
    guarded = POOL.format(guard="        try:\n    ", handler="        except Exception:\n            pass\n")
    (found,) = [f for f in check_code(guarded, path="m.py") if f.code == "SFX104"]
    assert found.fix is None and "inside a try whose handler may catch its error (the `try` at line" in found.message
    assert "non_blocking" not in found.message
    (free,) = [f for f in check_code(POOL.format(guard="", handler=""), path="m.py") if f.code == "SFX104"]
    assert free.fix is not None
