"""Before/after fixture pairs under ``tests/fixtures/<CODE>/``.

- ``NAME.in.py``: the input.
- ``NAME.out.py``: what ``syncfix apply --select CODE`` (safe fixes) must produce; when it is
  missing, the input must come out untouched (a must-not-touch case).
- ``NAME.unsafe.py``: optional, what ``--unsafe-fixes`` must produce.
- A line of ``NAME.in.py`` ending ``# expect: CODE`` must get that finding; when a file has such
  markers, no unmarked line may get one (``test_marked_fixture_lines_are_exactly_the_findings``).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).parent / "fixtures"


@dataclass(frozen=True)
class Case:
    code: str
    name: str
    source: str
    expected: str  # safe fixes only
    expected_unsafe: str | None

    @property
    def id(self) -> str:
        return f"{self.code}/{self.name}"


def cases() -> list[Case]:
    out = []
    for folder in sorted(p for p in ROOT.iterdir() if p.is_dir()):
        for src in sorted(folder.glob("*.in.py")):
            name = src.name[: -len(".in.py")]
            text = src.read_text(encoding="utf-8")
            out_file = folder / f"{name}.out.py"
            unsafe_file = folder / f"{name}.unsafe.py"
            out.append(
                Case(
                    folder.name,
                    name,
                    text,
                    out_file.read_text(encoding="utf-8") if out_file.exists() else text,
                    unsafe_file.read_text(encoding="utf-8") if unsafe_file.exists() else None,
                )
            )
    return out
