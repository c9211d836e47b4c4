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


def call_chain(n: int) -> str:
    """A script whose ``main`` builds a loader and a device and hands them down ``n`` functions,
    each of which copies the batches and calls the next one: parameter facts come from call sites."""
    parts = ["import torch", "from torch.utils.data import DataLoader", ""]
    for i in range(n):
        parts += [
            f"def f{i}(loader, device, model):",
            "    for x, y in loader:",
            "        x = x.to(device)",
            "        y = y.cuda()",
            "        print(model(x).sum().item())",
            *([f"    f{i + 1}(loader, device, model)"] if i + 1 < n else []),
            "",
        ]
    parts += [
        "def main():",
        "    loader = DataLoader(range(10), batch_size=2)",
        "    f0(loader, torch.device('cuda'), torch.nn.Linear(2, 2).cuda())",
        "",
        'if __name__ == "__main__":',
        "    main()",
    ]
    return "\n".join(parts) + "\n"


def work(source: str) -> int:
    """Facts the analysis computed while every rule visited ``source``."""
    settings = Settings()

    def run() -> int:
        analyzed = analyze(parse(source.encode(), settings), list(all_rules().values()), settings)
        return analyzed.analysis.solver.work

    return call_deep(run)


@pytest.mark.parametrize("make, n", [(chained_loop, 200), (many_loops, 20), (call_chain, 40)])
def test_work_grows_linearly(make, n):
    small, large = work(make(n)), work(make(2 * n))
    assert small > n  # the facts were asked for at all
    assert large <= 2.2 * small, (small, large)


def test_long_chain_of_carried_updates_finishes():
    # 2,000 chained updates: recursion as deep as the chain, answered on a deep stack.
    source = chained_loop(2000)
    assert work(source) < 40 * source.count("\n")


def test_call_chain_facts_reach_the_last_function():
    """The chain above is only a measure of the call-site facts if they reach its end."""
    settings = Settings()
    source = call_chain(30)

    def run() -> list[str]:
        analyzed = analyze(parse(source.encode(), settings), list(all_rules().values()), settings)
        return [f"{r.rule.CODE} {r.fix.applicability.value if r.fix else None}" for r in analyzed.findings]

    found = call_deep(run)
    assert found.count("SFX101 safe") == 2 * 30, found
