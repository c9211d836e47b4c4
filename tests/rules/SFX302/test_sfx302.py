"""Edge cases of SFX301/302/401 that must not be rewritten (or only as shown)."""

from __future__ import annotations

import importlib.util as _importlib_util

import pytest

from syncfix import check_code, fix_code

NEEDS_TORCH = pytest.mark.skipif(
    _importlib_util.find_spec("torch") is None, reason="needs torch (pip install -e '.[verify]')"
)

HEAD = "import torch\n\ndev = 'cuda'\n\n\n"


def _fix(code: str, rule: str) -> str:
    return fix_code(HEAD + code, select=[rule])[len(HEAD):]


def test_sfx301_does_not_hoist_above_a_binding_on_the_same_line():
    code = (
        "def f(x: torch.Tensor):\n"
        "    x = x.to(dev).float()\n"
        "    acc = x.std()\n"
        "    loss = x.mean(); print(loss.item(), acc.item())\n"
    )
    assert _fix(code, "SFX301") == code


def test_sfx301_does_not_merge_across_a_walrus():
    code = (
        "def f(x: torch.Tensor):\n"
        "    x = x.to(dev).float()\n"
        "    a = x.mean()\n"
        "    b = x.std()\n"
        "    print(a.item(), (b := a * 2).item(), b.item())\n"
    )
    assert _fix(code, "SFX301") == code


def test_sfx301_does_not_merge_reads_in_a_conditional_expression():
    code = (
        "def f(x: torch.Tensor, c):\n"
        "    x = x.to(dev).float()\n"
        "    a = x.mean()\n"
        "    b = x.std()\n"
        "    return a.item() if c else b.item()\n"
    )
    assert _fix(code, "SFX301") == code


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
    out = _fix(code, "SFX302")
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
    assert _fix(code, "SFX302") == code
    assert check_code(HEAD + code, select=["SFX302"]) == []  # the loop needs its host value


def test_sfx401_log_followed_by_break_does_not_move():
    code = (
        "def f(ds, opt, stop):\n"
        "    model = torch.nn.Linear(4, 1).to(dev)\n"
        "    for x in torch.utils.data.DataLoader(ds):\n"
        "        loss = torch.nn.functional.mse_loss(model(x.to(dev)), x.to(dev)[:, :1])\n"
        "        print(loss.item())\n"
        "        if stop():\n"
        "            break\n"
        "        loss.backward()\n"
        "        opt.step()\n"
    )
    assert _fix(code, "SFX401") == code
    assert [f.code for f in check_code(HEAD + code, select=["SFX401"])] == ["SFX401"]


def test_sfx301_reads_in_an_assignment_target_are_not_merged():
    # ``g`` runs between the read of ``b`` (the value) and that of ``a`` (the target)
    code = (
        "def f(x: torch.Tensor, d, g):\n"
        "    x = x.to(dev).float()\n"
        "    a = x.mean()\n"
        "    b = x.std()\n"
        "    d[a.item()] = g(b.item())\n"
    )
    assert _fix(code, "SFX301") == code


@NEEDS_TORCH
def test_sfx402_deferred_lines_are_the_same_lines_in_the_same_order():
    import contextlib
    import io

    import torch

    source = (
        "import torch\n\n"
        'dev = "cuda" if torch.cuda.is_available() else "cpu"\n\n\n'
        "def train(steps, stop_at):\n"
        "    w = torch.ones((), device=dev, requires_grad=True)\n"
        "    opt = torch.optim.SGD([w], lr=0.1)\n"
        "    for step in range(steps):\n"
        "        if step == stop_at:\n"
        "            break\n"
        "        loss = (w * (step + 1)).pow(2).float().mean()\n"
        "        acc = (w * 0.5).float().mean()\n"
        "        opt.zero_grad()\n"
        "        loss.backward()\n"
        "        opt.step()\n"
        "        if step % 3 == 0:\n"
        '            print(f"step {step} loss {loss.item():.6f} acc {acc.item()!r}")\n'
    )
    fixed = fix_code(source, select=["SFX402"], unsafe_fixes=True)
    assert fix_code(source, select=["SFX402"]) == source  # unsafe only
    assert "pending_log" in fixed
    outputs = []
    for code in (source, fixed):
        for steps, stop_at in ((10, -1), (10, 5), (0, -1), (1, -1)):
            namespace: dict = {}
            exec(compile(code, "<sfx402>", "exec"), namespace)
            out = io.StringIO()
            with contextlib.redirect_stdout(out):
                namespace["train"](steps, stop_at)
            outputs.append(out.getvalue())
    assert outputs[:4] == outputs[4:]
    assert torch is not None


def test_bindings_in_a_try_body_reach_its_handler():
    # in the handler, ``x`` may be the try body's int64 sum, not the float mean before the try
    code = (
        "def f(a: torch.Tensor):\n"
        "    x = a.to(dev).float().mean()\n"
        "    y = a.to(dev).float().std()\n"
        "    try:\n"
        "        x = a.to(dev).long().sum()\n"
        "        a.foo()\n"
        "    except ValueError:\n"
        "        print(x.item(), y.item())\n"
    )
    assert _fix(code, "SFX301") == code
