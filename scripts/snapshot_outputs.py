"""Dump syncfix's findings and fixes for every fixture and example into one text file.

    python scripts/snapshot_outputs.py OUT.txt

Used to show that a refactoring changed no output: run it before and after, then diff the two
files. Each file gets its findings (code, line, column, message, fix safety) and its rewritten
text, safe fixes and then with unsafe fixes (one-time code included: the rules, not the
repetition filter, are what it pins down).
"""

from __future__ import annotations

import sys
from pathlib import Path

from syncfix.api import check_code, fix_code

ROOT = Path(__file__).resolve().parent.parent


def sources() -> list[Path]:
    files = sorted((ROOT / "tests").rglob("*.in.py")) + sorted((ROOT / "examples").rglob("*.py"))
    return [f for f in files if "expected" not in f.parts]


def describe(path: Path) -> str:
    text = path.read_text(encoding="utf-8")
    name = path.relative_to(ROOT).as_posix()
    out = [f"=== {name}"]
    for unsafe in (False, True):
        for f in check_code(text, path=name, unsafe_fixes=unsafe, include_cold=True):
            fix = "none" if f.fix is None else f.fix.applicability.value
            out.append(f"{'U' if unsafe else 'S'} {f.code} {f.line}:{f.column} [{fix}] {f.message}")
        new = fix_code(text, path=name, unsafe_fixes=unsafe, include_cold=True)
        if new != text:
            out.append(f"--- fixed ({'unsafe' if unsafe else 'safe'})")
            out.append(new)
    return "\n".join(out)


def main() -> None:
    target = Path(sys.argv[1])
    target.write_text("\n".join(describe(p) for p in sources()) + "\n", encoding="utf-8")
    print(f"{len(sources())} files -> {target}")


if __name__ == "__main__":
    main()
