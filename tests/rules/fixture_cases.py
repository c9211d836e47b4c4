"""Before/after fixture files under ``tests/rules/<CODE>/fixtures/``.

- ``NAME.in.py``: the input.
- ``NAME.out.py``: what ``syncfix apply --select CODE`` (safe fixes) must produce.
- ``NAME.unsafe.py``: what ``--unsafe-fixes`` must produce.
- An input with neither must come out untouched, by unsafe fixes too, and must say so: its
  name ends in ``untouched`` (``NAME_untouched.in.py``), or its rule has no fix at all
  (report-only). A must-not-touch case that unsafe fixes do rewrite has a ``NAME.unsafe.py``.
- A line of ``NAME.in.py`` ending ``# expect: CODE`` must get that finding; when a file has such
  markers, no unmarked line may get one (``test_marked_fixture_lines_are_exactly_the_findings``).
  An untouched input of a report-only rule without markers must get no finding.

Collecting is strict: a fixture file that cannot be attributed to a rule (a folder that is not a
rule code, a name with none of the three suffixes, an expected side without its input, a file in
the old ``tests/fixtures/`` folder) or an input with no expected side is an error, not a file
quietly skipped.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

RULES_DIR = Path(__file__).parent
OLD_ROOT = RULES_DIR.parent / "fixtures"
SUFFIXES = (".in.py", ".out.py", ".unsafe.py")


class FixtureError(Exception):
    """A fixture file the collector cannot turn into a test case."""


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

    @property
    def untouched(self) -> bool:
        return self.expected == self.source and self.expected_unsafe is None


def _split(path: Path) -> tuple[str, str]:
    for suffix in SUFFIXES:
        if path.name.endswith(suffix) and len(path.name) > len(suffix):
            return path.name[: -len(suffix)], suffix
    raise FixtureError(f"{path}: not NAME.in.py, NAME.out.py or NAME.unsafe.py")


def collect(rules_dir: Path, codes: dict[str, str], old_root: Path | None = None) -> list[Case]:
    """Every fixture case under ``rules_dir/<CODE>/fixtures/``; ``codes`` maps each known rule
    code to its fix availability (``"always"``, ``"sometimes"``, ``"never"``)."""
    if old_root is not None and old_root.exists() and any(p.is_file() for p in old_root.rglob("*")):
        stray = sorted(str(p) for p in old_root.rglob("*") if p.is_file())
        raise FixtureError(
            f"fixtures outside any rule's folder (move them to tests/rules/<CODE>/fixtures/): {stray}"
        )
    out: list[Case] = []
    for folder in sorted(p for p in rules_dir.iterdir() if p.is_dir()):
        fixtures = folder / "fixtures"
        if folder.name not in codes:
            if fixtures.exists() or folder.name.upper().startswith("SFX"):
                raise FixtureError(f"{folder}: not the code of any rule ({', '.join(codes)})")
            continue
        if not fixtures.is_dir():
            continue
        sides: dict[str, dict[str, Path]] = {}
        for path in sorted(fixtures.iterdir()):
            if path.name == "__pycache__":
                continue
            if not path.is_file():
                raise FixtureError(f"{path}: a folder inside a fixtures folder")
            name, suffix = _split(path)
            sides.setdefault(name, {})[suffix] = path
        for name, files in sorted(sides.items()):
            if ".in.py" not in files:
                raise FixtureError(f"{fixtures}: {', '.join(p.name for p in files.values())} has no {name}.in.py")
            has_expected = ".out.py" in files or ".unsafe.py" in files
            if not has_expected and not name.endswith("untouched") and codes[folder.name] != "never":
                raise FixtureError(
                    f"{files['.in.py']}: no expected side. Add {name}.out.py (safe fixes) or "
                    f"{name}.unsafe.py (--unsafe-fixes), or name it {name}_untouched.in.py if it "
                    "must come out as it went in"
                )
            source = files[".in.py"].read_text(encoding="utf-8")
            out.append(
                Case(
                    folder.name,
                    name,
                    source,
                    files[".out.py"].read_text(encoding="utf-8") if ".out.py" in files else source,
                    files[".unsafe.py"].read_text(encoding="utf-8") if ".unsafe.py" in files else None,
                )
            )
    return out


def cases() -> list[Case]:
    from syncfix.rules import all_rules

    codes = {code: rule.FIX for code, rule in all_rules().items()}
    return collect(RULES_DIR, codes, OLD_ROOT)
