"""A read of the element of a loop over a tensor is SFX303's: the generic rules (SFX105's
read in a loop, SFX404's read into a list) do not report it again."""

from __future__ import annotations

import textwrap

from syncfix.api import check_code

LOOP = """\
import torch


class Nonzero:
    def step(self, x):
        idx = torch.where(x > 0)[0]
        out = []
        for v in idx:
            out.append(v.item())
        n = 0
        for v in idx:
            k = v.item()
            n += k
        return out, n
"""


def test_an_element_read_gets_one_finding():
    found = [(f.line, f.code) for f in check_code(textwrap.dedent(LOOP), path="train.py")]
    assert sorted(found) == [(9, "SFX303"), (12, "SFX303")]
