"""The least a Python linter does: parse every ``*.py`` file under a folder with Python's own
(C) parser and walk each tree once, on N processes. No rule, no output.

    python benchmarks/parse_floor.py [FOLDER] [-j N]

``benchmarks/throughput.py`` runs it beside ruff: any analysis written in Python costs at least
this, so it bounds how close to ruff such a tool can come at equal cores.
"""

from __future__ import annotations

import argparse
import ast
import os
import sys
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

SKIP = {".git", ".venv", "venv", "build", "dist", "node_modules", "site-packages", "__pycache__"}


def python_files(root: Path) -> list[Path]:
    out = []
    for folder, dirs, files in os.walk(root):
        dirs[:] = [d for d in dirs if d not in SKIP and not d.startswith(".")]
        out.extend(Path(folder) / f for f in files if f.endswith(".py"))
    return sorted(out)


def nodes(path: Path) -> int:
    """The nodes of ``path``'s tree (0 when it does not parse)."""
    try:
        tree = ast.parse(path.read_bytes())
    except (SyntaxError, ValueError, OSError):
        return 0
    return sum(1 for _ in ast.walk(tree))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("folder", nargs="?", type=Path, default=Path("."))
    ap.add_argument("-j", "--jobs", type=int, default=1)
    args = ap.parse_args(argv)
    files = python_files(args.folder)
    if args.jobs <= 1:
        total = sum(map(nodes, files))
    else:
        with ProcessPoolExecutor(args.jobs) as pool:
            total = sum(pool.map(nodes, files, chunksize=8))
    print(f"{len(files)} files, {total} nodes")
    return 0


if __name__ == "__main__":
    sys.exit(main())
