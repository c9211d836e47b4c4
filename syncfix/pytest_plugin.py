"""pytest plugin: fail a test whose body makes the host wait for a CUDA device.

    import pytest

    @pytest.mark.syncfree
    def test_step_is_sync_free(model, batch):
        model.train_step(batch)              # fails, naming the line, if this synchronizes

    def test_region(no_sync):
        warm_up()                            # may sync
        with no_sync():
            model.train_step(batch)          # must not
            with no_sync.allow_sync():       # a deliberate sync: not counted
                print(loss.item())

* ``@pytest.mark.syncfree`` watches the test's **call phase only** (fixtures' set-up and
  tear-down may sync); the ``no_sync`` fixture is a context manager for one region.
  ``allow_sync()`` (also ``syncfix.harness.counter.allow_sync``) exempts a block.
* Both skip the test cleanly when CUDA is not available; torch is imported only by tests that
  use them (the plugin loads in every pytest run, so its import stays cheap).
* Counting uses PyTorch's GPU-trace sync hooks (see ``syncfix.harness.counter``), so unlike
  ``torch.cuda.set_sync_debug_mode`` it also catches ``torch.cuda.synchronize()`` and
  ``Event.synchronize()``, and the failure lists every sync with its file, line and kind.

What it cannot see: syncs inside the CUDA driver (``cudaFree`` from ``torch.cuda.empty_cache()``
or allocator growth, large ``non_blocking`` copies from pageable memory), syncs made by code that
calls CUDA itself (CuPy, custom extensions, NCCL / ``torch.distributed``), and syncs in other
processes. The hooks, once on, stay on for the rest of the pytest process and add a few
microseconds to every CUDA allocation. The hooks are process-global: syncs made by other threads
during the test are counted too.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from typing import Any

import pytest

MARKER = "syncfree"


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        f"{MARKER}: fail the test if its body (call phase) synchronizes the host with a CUDA "
        "device (counted with PyTorch's GPU-trace hooks; skipped without CUDA). "
        "Use syncfix.pytest_plugin.allow_sync() for deliberate syncs.",
    )


def allow_sync() -> contextlib.AbstractContextManager[None]:
    """Syncs inside this block are not counted (for deliberate syncs in a sync-free test)."""
    from syncfix.harness import counter

    return counter.allow_sync()


def _require_cuda() -> None:
    from syncfix.harness import counter

    if not counter.cuda_available():
        pytest.skip("needs CUDA (syncfix sync-free check)")
    try:
        counter.install()
    except counter.CounterUnavailable as exc:
        pytest.skip(f"syncfix cannot count syncs here: {exc}")


def _failure(recorder: Any, what: str) -> str:
    from syncfix.harness import counter

    sites = sorted(recorder.sites.values(), key=lambda s: (s.file, s.line))
    n = recorder.total()
    return (
        f"{what} synchronized with the GPU {n} time{'s' if n != 1 else ''}:\n"
        + counter.format_sites(sites)
    )


@contextlib.contextmanager
def _watch(what: str) -> Iterator[Any]:
    from syncfix.harness import counter

    recorder = counter.SyncRecorder()
    with recorder:
        yield recorder
    if recorder.total():
        pytest.fail(_failure(recorder, what), pytrace=False)


def pytest_runtest_setup(item: pytest.Item) -> None:
    if item.get_closest_marker(MARKER) is not None:
        _require_cuda()


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Any:
    if item.get_closest_marker(MARKER) is None:
        return (yield)
    from syncfix.harness import counter

    recorder = counter.SyncRecorder()
    with recorder:
        result = yield
    if recorder.total():
        pytest.fail(_failure(recorder, f"{item.name} (marked {MARKER})"), pytrace=False)
    return result


class NoSync:
    """The ``no_sync`` fixture: ``with no_sync(): ...`` fails on any sync inside the block."""

    allow_sync: Callable[[], contextlib.AbstractContextManager[None]] = staticmethod(allow_sync)

    def __call__(self, what: str = "the no_sync() block") -> contextlib.AbstractContextManager[Any]:
        return _watch(what)


@pytest.fixture
def no_sync() -> NoSync:
    """A context manager that fails the test if the code inside synchronizes (skips without CUDA)."""
    _require_cuda()
    return NoSync()
