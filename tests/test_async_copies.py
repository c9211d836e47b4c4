"""Which code copies without waiting and may count on a later sync to finish the copy."""

from __future__ import annotations

import textwrap

import pytest

from syncfix.analysis.async_copies import counts_on_later_syncs


def _counts(code: str) -> bool:
    return counts_on_later_syncs(textwrap.dedent(code).encode())


@pytest.mark.parametrize(
    "code",
    [
        # an asynchronous copy to the host: its reader needs some sync first
        """
        def f(out):
            pred = out.argmax(1).to("cpu", non_blocking=True)
            return pred
        """,
        """
        import torch
        def f(out):
            return out.to(device=torch.device("cpu"), non_blocking=True)
        """,
        """
        def f(out, cpu_device):
            return out.to(cpu_device, non_blocking=True)
        """,
        # into a host buffer, or from one: copy_ with non_blocking
        """
        def f(host, out):
            host.copy_(out, non_blocking=True)
        """,
        # from a buffer written again in the same function
        """
        import torch
        def f(model, n, steps):
            buf = torch.empty(n).pin_memory()
            for _ in range(steps):
                buf.copy_(torch.randn(n))
                model(buf.to("cuda", non_blocking=True))
        """,
        """
        def f(buf, model, steps):
            for step in range(steps):
                buf[:] = step
                model(buf.cuda(non_blocking=True))
        """,
        "def f(:\n    x.to('cpu', non_blocking=True)\n",  # does not parse: counts
    ],
)
def test_counts_on_later_syncs(code):
    assert _counts(code)


@pytest.mark.parametrize(
    "code",
    [
        "def f(x):\n    return x.to('cpu')\n",
        "def f(x):\n    return x.to('cpu', non_blocking=False)\n",
        # a copy to the GPU of a tensor nothing writes again
        """
        import torch
        def f(loader, model):
            for x, y in loader:
                model(x.cuda(non_blocking=True), y.to("cuda", non_blocking=True))
        """,
        # the name is rebound to the copy: later writes are the copy's
        """
        def f(x, mean):
            x = x.to("cuda", non_blocking=True)
            x.sub_(mean)
        """,
        """
        def f(images, gpu):
            images[0] = images[0].cuda(gpu, non_blocking=True)
        """,
        # a module's in-place function writes its argument, not the module
        """
        import torch
        def f(w, n):
            torch.nn.init.normal_(w)
            return torch.zeros(n).cuda(non_blocking=True)
        """,
        # the copy and the write are in different functions
        """
        def fill(buf):
            buf.zero_()
        def copy(buf):
            return buf.cuda(non_blocking=True)
        """,
    ],
)
def test_does_not_count_on_later_syncs(code):
    assert not _counts(code)
