"""Edge cases of SFX301 that must not be rewritten."""

from __future__ import annotations

from syncfix import check_code

from ..support import fix_body


def test_sfx301_does_not_hoist_above_a_binding_on_the_same_line():
    code = (
        "def f(x: torch.Tensor):\n"
        "    x = x.to(dev).float()\n"
        "    acc = x.std()\n"
        "    loss = x.mean(); print(loss.item(), acc.item())\n"
    )
    assert fix_body(code, "SFX301") == code


def test_sfx301_does_not_merge_across_a_walrus():
    code = (
        "def f(x: torch.Tensor):\n"
        "    x = x.to(dev).float()\n"
        "    a = x.mean()\n"
        "    b = x.std()\n"
        "    print(a.item(), (b := a * 2).item(), b.item())\n"
    )
    assert fix_body(code, "SFX301") == code


def test_sfx301_does_not_merge_reads_in_a_conditional_expression():
    code = (
        "def f(x: torch.Tensor, c):\n"
        "    x = x.to(dev).float()\n"
        "    a = x.mean()\n"
        "    b = x.std()\n"
        "    return a.item() if c else b.item()\n"
    )
    assert fix_body(code, "SFX301") == code


def test_sfx301_reads_in_an_assignment_target_are_not_merged():
    # ``g`` runs between the read of ``b`` (the value) and that of ``a`` (the target)
    code = (
        "def f(x: torch.Tensor, d, g):\n"
        "    x = x.to(dev).float()\n"
        "    a = x.mean()\n"
        "    b = x.std()\n"
        "    d[a.item()] = g(b.item())\n"
    )
    assert fix_body(code, "SFX301") == code


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
    assert fix_body(code, "SFX301") == code


def test_a_run_of_reads_without_a_fix_is_said_once():
    # stargan's four ``loss[...] = d_loss_x.item()`` lines: one SFX301 finding for the run, not
    # an SFX105 "the CPU waits for all queued GPU work" on each later read as well
    from syncfix import check_code

    src = (
        "import torch\n\n\ndef train(D, loader):\n    for x in loader:\n        out = D(x)\n"
        "        a = torch.mean(out)\n        b = torch.mean(out * 2)\n"
        "        loss = {}\n        loss['a'] = a.item()\n        loss['b'] = b.item()\n        print(loss)\n"
    )
    found = [(f.code, f.line) for f in check_code(src, path="train.py")]
    assert found == [("SFX301", 10)]


def test_sfx301_reads_of_elements_indexed_by_the_loop_say_read_the_tensor_once():
    # mamba's varlen chunk mapping: merged, the two reads would still sync every iteration
    code = (
        "import torch\n\n"
        "def mapping(cu_seqlens: torch.Tensor, chunks: torch.Tensor, n: int):\n"
        "    cu_seqlens = cu_seqlens.cuda()\n"
        "    for i in range(n):\n"
        "        start = int(cu_seqlens[i].item())\n"
        "        count = int(chunks[i].item())\n"
        "        print(start, count)\n"
        "    print(int((cu_seqlens * 2).sum().item()), int((cu_seqlens * 3).sum().item()))\n"
    )
    found = [f for f in check_code(code, select=["SFX301"], include_cold=True)]
    assert [f.line for f in found] == [6, 9]
    assert "read the values once, before (e.g. `vals = cu_seqlens.tolist()`" in found[0].message
    assert "bind it to a name first" in found[1].message
