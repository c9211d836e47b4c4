"""syncfix verify demo: a copy that must stay blocking.

A pinned staging buffer is refilled every step. ``buf.cuda()`` copies it before the refill; the
tempting rewrite ``buf.to("cuda", non_blocking=True)`` lets the copy run *after* the host has
refilled the buffer (it is queued behind the GPU's work), so the device gets later data.
``syncfix verify --unsafe-fixes`` (or a hand-written fixer doing that rewrite) must report a
mismatch here.
"""

import torch

from syncfix.verify import record

buf = torch.empty(1 << 16).pin_memory()
outs = []
for step in range(4):
    buf.fill_(float(step))
    torch.cuda._sleep(20_000_000)  # keep the GPU busy so a non-blocking copy waits in the queue
    outs.append(buf.cuda())
record("firsts", torch.stack([o[0] for o in outs]))
print("firsts", [float(o[0]) for o in outs])
