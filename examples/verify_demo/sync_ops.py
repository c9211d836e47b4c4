"""One sync per marked line (``# expect: KIND``), for testing the counter and ``syncfix trace``.

Each marked line makes exactly one sync of that kind per call of ``exercise`` on PyTorch 2.x
(docs/semantics.md#host-reads and the sections after it). The tests read the markers from this file, so moving
lines around keeps them right.
"""

import re

import torch


def exercise(x: torch.Tensor) -> list[object]:
    keep: list[object] = []
    keep.append(x.sum().item())  # expect: copy
    keep.append(x[:4].tolist())  # expect: copy
    keep.append(x.cpu())  # expect: copy
    keep.append(torch.ones(8).cuda())  # expect: copy
    keep.append(torch.nonzero(x > 0))  # expect: copy
    if x.mean() > 0:  # expect: copy
        keep.append(1)
    torch.cuda.synchronize()  # expect: device
    ev = torch.cuda.Event()
    ev.record()
    ev.synchronize()  # expect: event
    torch.cuda.current_stream().synchronize()  # expect: stream
    torch.cuda._sleep(30_000_000)
    keep.append(float(x.max()))  # expect: copy
    return keep


def expectations(path: str = __file__) -> dict[int, str]:
    """{line: kind} from the ``# expect:`` markers that end lines of this file."""
    marker = re.compile(r"#\s*expect:\s*(\w+)\s*$")
    out = {}
    with open(path, encoding="utf-8") as fh:
        for number, text in enumerate(fh, start=1):
            m = marker.search(text)
            if m:
                out[number] = m.group(1)
    return out


if __name__ == "__main__":
    x = torch.linspace(-1, 1, 1000, device="cuda")
    for _ in range(3):
        exercise(x)
