"""On a GPU: the wait SFX107 reports. ``empty_cache()`` returns only after the work queued before
it has finished whenever the cache holds a block (freeing device memory waits for the device);
the sync debug mode does not see that wait, so this test asks an event instead. Run with ``-s``
to see the times."""

from __future__ import annotations

import time

import pytest

torch = pytest.importorskip("torch")


def _queue_work() -> torch.cuda.Event:
    torch.cuda._sleep(100_000_000)  # some tens of milliseconds of GPU time
    done = torch.cuda.Event()
    done.record()
    return done


@pytest.mark.cuda
def test_sfx107_empty_cache_waits_for_queued_work_when_the_cache_holds_a_block():
    torch.cuda.synchronize()
    waited = {}
    for cached in (False, True, False, True):  # interleaved: the machine is shared
        torch.cuda.empty_cache()
        if cached:
            torch.empty(64 * 2**20, dtype=torch.uint8, device="cuda")  # freed into the cache at once
        done = _queue_work()
        start = time.perf_counter()
        torch.cuda.empty_cache()
        waited.setdefault(cached, []).append((done.query(), time.perf_counter() - start))
        torch.cuda.synchronize()
    print(f"\nSFX107: (work finished when empty_cache returned, seconds in it): {waited}")
    assert all(finished for finished, _ in waited[True]), "empty_cache returned before queued work finished"
    assert not any(finished for finished, _ in waited[False]), "with nothing cached it waited too"
