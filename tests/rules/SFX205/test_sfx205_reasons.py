"""SFX205 says why a data-dependent shape keeps its sync, in words a user can act on."""

from __future__ import annotations

import pytest

from syncfix.api import check_code

HEAD = "import torch\n\ndef step(x: torch.Tensor, m):\n    for i in range(3):\n        y = x.cuda()\n"


@pytest.mark.parametrize(
    ("line", "reason"),
    [
        ("a = y[y > 0]", "depends on how the selected values are used"),
        ("g = m.grad[m.grad > 0]", "depends on how the selected values are used"),
        ("b = torch.unique(y)", "moving it out of the loop"),
        ("c = torch.bincount(y.long())", "a number only the author knows"),
        ("d = y.nonzero()", "a number only the author knows"),
        ("e = torch.repeat_interleave(y, y.long())", "`output_size` must equal `repeats.sum()`"),
        # a count of selected bools needs no number (attention-is-all-you-need's n_correct)
        ("n = y.eq(1).masked_select(y > 0).sum()", "`(x & mask).sum()` (the same int64)"),
    ],
)
def test_a_finding_without_a_fix_says_why(line, reason):
    found = [f for f in check_code(HEAD + "        " + line + "\n", path="train.py", unsafe_fixes=True) if f.code == "SFX205"]
    assert len(found) == 1 and found[0].fix is None
    assert reason in found[0].message.split("; no fix: ")[1]


def test_the_masked_sum_fix_states_no_reason():
    (found,) = [f for f in check_code(HEAD + "        f = y[y > 0].sum()\n", path="train.py", unsafe_fixes=True) if f.code == "SFX205"]
    assert found.fix is not None and "no fix" not in found.message
