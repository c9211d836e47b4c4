"""SFX402's deferred log prints the same lines in the same order (run on CPU tensors)."""

from __future__ import annotations

import importlib.util as _importlib_util

import pytest

from syncfix import fix_code

NEEDS_TORCH = pytest.mark.skipif(
    _importlib_util.find_spec("torch") is None, reason="needs torch (pip install -e '.[verify]')"
)


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
