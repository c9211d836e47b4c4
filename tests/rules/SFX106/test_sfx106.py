"""What SFX106 says (its fixtures check where it reports)."""

from __future__ import annotations

from ..support import messages_in_loop as _messages


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
