"""What SFX105 says (its fixtures check where it reports)."""

from __future__ import annotations

from syncfix import check_code

from ..support import messages_in_loop as _messages


def test_d2h_collected_value_suggests_event_wait():
    (msg,) = _messages("    out.append(x.cpu())\n", "SFX105")
    assert "only collected" in msg and "non_blocking=True" in msg


def test_d2h_value_read_now_says_it_must_wait():
    for body in ("    print(x.cpu())\n", "    out.append(x.cpu().tolist())\n", "    y = x.tolist()\n"):
        (msg,) = _messages(body, "SFX105")
        assert "reads the value here" in msg, body


def test_d2h_maybe_cpu_device_is_hedged():
    src = (
        "import torch\nd = 'cuda' if torch.cuda.is_available() else 'cpu'\n"
        "x = torch.ones(3, device=d)\nfor _ in range(3):\n    print(x.cpu())\n"
    )
    (finding,) = check_code(src, select=["SFX105"])
    assert "when the tensor is on CUDA" in finding.message
