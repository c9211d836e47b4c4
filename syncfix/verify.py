"""Hand values to ``syncfix verify`` for comparison between the original and rewritten runs.

    from syncfix.verify import record

    for step in range(steps):
        loss = train_step(batch)
        record("loss", loss)          # compared bitwise (or within --rtol/--atol)

Outside the harness ``record`` does nothing and returns its value, so it can stay in the code.
Under ``syncfix verify`` it snapshots the value (a CPU copy of a tensor) in the runs whose outputs
are compared, and does nothing in the timed and counted runs; the copy's own sync is never
counted. Importing this module is cheap: it does not import torch.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

__all__ = ["record", "is_active"]

T = TypeVar("T")

# Set by the harness's child process (syncfix.harness.child); None outside the harness.
_recorder: Callable[[str, Any], None] | None = None


def record(name: str, value: T) -> T:
    """Record ``value`` under ``name`` for ``syncfix verify`` to compare; returns ``value``.

    A name may be recorded many times (a loss per step); the runs are compared in order.
    """
    if not isinstance(name, str):
        raise TypeError(f"record() name must be a str, not {type(name).__name__}")
    rec = _recorder
    if rec is not None:
        rec(name, value)
    return value


def is_active() -> bool:
    """True while running under ``syncfix verify`` (in any of its runs)."""
    return _recorder is not None
