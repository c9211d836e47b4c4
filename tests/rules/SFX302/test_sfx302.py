"""Edge cases of SFX302 that must not be rewritten (or only as shown)."""

from __future__ import annotations

from syncfix import check_code, fix_code

from ..support import HEAD, fix_body


def test_sfx302_while_loop_and_break():
    code = (
        "def f(vals, stop):\n"
        "    total = 0.0\n"
        "    i = 0\n"
        "    while i < len(vals):\n"
        "        t = torch.full((), vals[i], dtype=torch.float32, device=dev)\n"
        "        if stop(i):\n"
        "            break\n"
        "        total += t.item()\n"
        "        i += 1\n"
        "    return total\n"
    )
    out = fix_body(code, "SFX302")
    assert "total_acc += t.detach()" in out
    assert out.rstrip().endswith("total = total_acc.item()\n    return total")


def test_sfx302_total_in_for_else_is_not_rewritten():
    code = (
        "def f(ds):\n"
        "    total = 0.0\n"
        "    for x in torch.utils.data.DataLoader(ds):\n"
        "        total += x.to(dev).float().sum().item()\n"
        "    else:\n"
        "        print(total)\n"
        "    return total\n"
    )
    assert fix_body(code, "SFX302") == code
    # the loop needs its host value: reported, with why there is no fix
    (finding,) = check_code(HEAD + code, select=["SFX302"])
    assert finding.fix is None and "`total` is read elsewhere in the loop" in finding.message


def test_read_backs_are_written_once_per_block_and_not_reported_again():
    # SFX302's read-back before the first statement of a logging block serves the next one too
    # (nothing adds to the total in between), and SFX105 does not report the read the fix keeps
    from pathlib import Path

    import pytest

    torch = pytest.importorskip("torch")
    from ..support import load

    src = (Path(__file__).parent / "fixtures/shown_twice.in.py").read_text()
    fixed = fix_code(src, select=["SFX302"], unsafe_fixes=True)
    assert fixed.count("tr_loss = tr_loss_acc.item()") == 2, fixed  # in the block, after the loop
    again = check_code(fixed, select=["SFX105", "SFX302"], unsafe_fixes=True)
    assert not [f for f in again if "tr_loss_acc.item()" in fixed.splitlines()[f.line - 1]], again

    class Writer:
        def __init__(self):
            self.calls = []

        def add_scalar(self, *args):
            self.calls.append(args)

    torch.manual_seed(0)
    model = torch.nn.Linear(4, 3)
    data = [(torch.randn(8, 4), torch.randint(0, 3, (8,))) for _ in range(7)]
    results = []
    for code in (src, fixed):
        m = torch.nn.Linear(4, 3)
        m.load_state_dict(model.state_dict())
        opt = torch.optim.SGD(m.parameters(), lr=0.1)
        writer = Writer()
        results.append((load(code, "train")(m, data, opt, writer, 3), writer.calls))
    assert results[0] == results[1] and type(results[1][0]) is float
