"""Edge cases of SFX302 that must not be rewritten (or only as shown)."""

from __future__ import annotations

from syncfix import check_code

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
