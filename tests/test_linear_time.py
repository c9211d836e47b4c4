"""The analysis answers in work linear in the file: long chains of loop-carried updates (running
offsets, ``x = x + ...``) once made the value inference re-walk shared definitions on every
path, exponential in the chain's length (a 16-line loop took minutes)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from syncfix.config import Settings
from syncfix.deepstack import call_deep
from syncfix.engine import analyze, parse
from syncfix.rules import all_rules

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from benchmarks.scaling import chained_loop, many_loops  # noqa: E402  (the benchmark's generators)


def work(source: str) -> int:
    """Facts the analysis computed while every rule visited ``source``."""
    settings = Settings()

    def run() -> int:
        analyzed = analyze(parse(source.encode(), settings), list(all_rules().values()), settings)
        return analyzed.analysis.solver.work

    return call_deep(run)


@pytest.mark.parametrize("make, n", [(chained_loop, 200), (many_loops, 20)])
def test_work_grows_linearly(make, n):
    small, large = work(make(n)), work(make(2 * n))
    assert small > n  # the facts were asked for at all
    assert large <= 2.2 * small, (small, large)


def test_long_chain_of_carried_updates_finishes():
    # 2,000 chained updates: recursion as deep as the chain, answered on a deep stack.
    source = chained_loop(2000)
    assert work(source) < 40 * source.count("\n")
