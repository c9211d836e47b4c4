"""What the SFX1xx report-only rules say (their fixtures check where they report)."""

from __future__ import annotations

from syncfix import check_code, fix_code

LOOP = "import time\nimport torch\nx = torch.ones(3, device='cuda')\nout = []\nfor _ in range(3):\n"


def _messages(body: str, code: str) -> list[str]:
    return [f.message for f in check_code(LOOP + body, select=[code])]


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


def test_synchronize_before_clock_is_called_timing():
    (msg,) = _messages("    torch.cuda.synchronize()\n    t = time.time()\n", "SFX106")
    assert "timing code" in msg


def test_synchronize_without_clock_is_not_called_timing():
    (msg,) = _messages("    torch.cuda.synchronize()\n    y = x + 1\n    t = time.time()\n", "SFX106")
    assert "timing" not in msg


def test_event_synchronize_then_elapsed_time_is_timing():
    body = (
        "    e = torch.cuda.Event(enable_timing=True)\n    e.synchronize()\n"
        "    out.append(s.elapsed_time(e))\n"
    )
    (msg,) = _messages(body, "SFX106")
    assert msg.startswith("Event.synchronize()") and "timing code" in msg


def test_rules_compose_pin_then_non_blocking():
    """SFX103 pins the loader, SFX101 then makes the (fresh, pinned) batch copy non-blocking."""
    src = (
        "from torch.utils.data import DataLoader\ndef f(ds, model):\n"
        "    for x in DataLoader(ds, batch_size=8):\n        model(x.cuda())\n"
    )
    out = fix_code(src, select=["SFX101", "SFX103"])
    assert "DataLoader(ds, batch_size=8, pin_memory=True)" in out
    assert 'model(x.to("cuda", non_blocking=True))' in out
