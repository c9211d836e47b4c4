"""Is syncfix's cost linear in the file? Generated files of growing size, parse time beside check
time, and the number of facts the analysis computed (the work count tests/test_linear_time.py
bounds).

    python benchmarks/scaling.py [--chain 500,1000,2000,4000] [--loops-mb 0.5,1,2,5]

Two shapes: one function whose loop body is N chained, loop-carried updates (``seek += ...``,
``x = x + seek``: the shape that once took exponential time), and a file of many small functions,
each a training-style loop with carried updates and a host read, grown to a size in MB.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import libcst as cst

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from syncfix.config import Settings  # noqa: E402
from syncfix.deepstack import call_deep  # noqa: E402
from syncfix.engine import analyze, parse  # noqa: E402
from syncfix.rules import all_rules  # noqa: E402


def chained_loop(n: int) -> str:
    """A function whose loop body is ``n`` chained, loop-carried updates of four names."""
    steps = ("seek += {i}", "x = x + seek * {i}", "y = y * 0.9 + x", "total = total + y.sum() + seek")
    body = [f"        {steps[i % 4].format(i=i)}" for i in range(n)]
    return "\n".join(
        [
            "import torch",
            "",
            "def f(x, data):",
            "    seek = 0",
            "    total = 0",
            "    y = torch.zeros(3, device='cuda')",
            "    for step in range(10):",
            *body,
            "        print(total.item())",
            "    return y",
        ]
    ) + "\n"


def many_loops(n: int) -> str:
    """``n`` small functions, each with a loop of carried updates and a host read."""
    parts = ["import torch", ""]
    for i in range(n):
        parts += [
            f"def f{i}(loader, model):",
            "    total = torch.zeros((), device='cuda')",
            "    seen = 0",
            "    for x, y in loader:",
            "        x = x.cuda()",
            "        loss = model(x).sum()",
            "        total = total + loss",
            "        seen += 1",
            "        if seen % 10 == 0:",
            "            print(total.item() / seen)",
            "    return total",
            "",
        ]
    return "\n".join(parts)


def measure(source: str) -> tuple[float, float, int, int]:
    """(parse seconds, check seconds, facts computed, findings) for one source."""
    settings = Settings(include_cold=True)
    rules = list(all_rules().values())

    def run() -> tuple[float, float, int, int]:
        t0 = time.perf_counter()
        cst.parse_module(source)
        t1 = time.perf_counter()
        analyzed = analyze(parse(source.encode(), settings), rules, settings)
        t2 = time.perf_counter()
        assert analyzed.analysis is not None
        return t1 - t0, t2 - t1, analyzed.analysis.solver.work, len(analyzed.findings)

    return call_deep(run)


def row(label: str, source: str) -> None:
    lines = source.count("\n")
    p, c, work, found = measure(source)
    print(
        f"{label:<22} {lines:>8,} {len(source) / 1e6:>7.2f} {p:>8.2f} {c:>9.2f} {c / p:>6.1f}"
        f" {1000 * c / lines * 100:>9.1f} {work:>10,} {work / lines:>6.1f} {found:>6}",
        flush=True,
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--chain", default="500,1000,2000,4000")
    ap.add_argument("--loops-mb", default="0.5,1,2,5")
    args = ap.parse_args()
    print(
        f"{'file':<22} {'lines':>8} {'MB':>7} {'parse s':>8} {'check s':>9} {'ratio':>6}"
        f" {'ms/100l':>9} {'facts':>10} {'/line':>6} {'finds':>6}"
    )
    for n in (int(v) for v in args.chain.split(",") if v):
        row(f"chain of {n}", chained_loop(n))
    per_function = len(many_loops(1)) - len("import torch\n\n")
    for mb in (float(v) for v in args.loops_mb.split(",") if v):
        row(f"loops, {mb} MB", many_loops(max(1, int(mb * 1e6 / per_function))))


if __name__ == "__main__":
    main()
