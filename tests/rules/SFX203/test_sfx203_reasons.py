"""SFX203 says why a check stays on the host, in words a user can act on."""

from __future__ import annotations

import pytest

from syncfix.api import check_code

HEAD = "import torch\n\ndef step(x: torch.Tensor, name: str):\n    for i in range(3):\n        y = x.cuda()\n"


@pytest.mark.parametrize(
    ("check", "reason"),
    [
        ('assert (y >= 0).all(), f"bad {name}"', "the message is computed"),
        ('if torch.isnan(y).any():\n            raise ValueError(f"nan in {name}")', "is not `raise Error("),
        ('if y.sum() > 0 and i > 1:\n            raise ValueError("big")', "no exact tensor form"),
        ('if 0 < y.sum() < 1:\n            raise ValueError("chained")', "no exact tensor form"),
        ('assert y > 0, "not 0-d"', "not provably one-element"),
        # audiocraft's metrics: the moved check would still read `y[0]` on the host
        ('assert torch.all(y == y[0].item()), "differ"', "reads a value on the host itself (`y[0].item()`)"),
    ],
)
def test_a_check_without_a_fix_says_why(check, reason):
    found = [f for f in check_code(HEAD + "        " + check + "\n", path="train.py", unsafe_fixes=True) if f.code == "SFX203"]
    assert len(found) == 1 and found[0].fix is None
    assert reason in found[0].message.split("; no fix: ")[1]


def test_a_fixed_check_states_no_reason():
    source = HEAD + '        assert y.sum() > 0, "negative"\n'
    (found,) = [f for f in check_code(source, path="train.py", unsafe_fixes=True) if f.code == "SFX203"]
    assert found.fix is not None and "no fix" not in found.message


def test_an_assert_fix_says_it_now_runs_under_python_O():
    source = HEAD + '        assert y.sum() > 0, "negative"\n'
    (found,) = [f for f in check_code(source, path="train.py", unsafe_fixes=True) if f.code == "SFX203"]
    assert "runs under `python -O`" in found.fix.description
    raised = HEAD + '        if y.sum() > 0:\n            raise ValueError("big")\n'
    (found,) = [f for f in check_code(raised, path="train.py", unsafe_fixes=True) if f.code == "SFX203"]
    assert found.fix is not None and "python -O" not in found.fix.description
