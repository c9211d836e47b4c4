"""Start a new rule: its module, fixtures, test file and generated doc page.

    python scripts/new_rule.py SFX207 scalar-loop-bound [--root DIR]

creates
- ``codemods/scalar_loop_bound.py``: the rule class with its doc sections, metadata and an empty
  visitor, registered by discovery (nothing to edit elsewhere);
- ``tests/rules/SFX207/fixtures/``: ``example.in.py`` / ``example.out.py`` (a case the fix
  rewrites) and ``example_untouched.in.py`` (a case it must leave alone);
- ``tests/rules/SFX207/test_sfx207.py``: a first test of the rule on its fixture;
- ``docs/rules/SFX207.md`` and README's table row, by running ``scripts/gen_docs.py``.

Every placeholder says TODO, and the new tests fail until the rule finds and rewrites its
example: a scaffold is a start, not a rule.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

MODULE = '''"""{code}: TODO one line: what it finds → what it writes instead."""

from __future__ import annotations

import libcst as cst

from syncfix.rules import Invalid, Rule


class {cls}(Rule):
    """
    ## What it finds
    TODO: the code this rule reports, precisely enough that a reader can predict each finding.

    ## Why it costs
    TODO: which synchronization the code makes and what it costs, citing the section of
    docs/semantics.md#host-reads (or another section) the claim rests on.

    ## Example
    ```python
    TODO
    ```

    ## Use instead
    ```python
    TODO
    ```

    ## Fix safety
    TODO: when the fix is safe (keeps values, types, shapes, dtypes, errors and side effects), when
    it is unsafe, and when there is none; cite docs/semantics.md for each exactness claim.
    """

    CODE = "{code}"
    NAME = "{name}"
    MESSAGE = "TODO: the finding's message"
    FIX = "sometimes"  # "always" | "sometimes" | "never"
    SAFETY = ("safe",)  # the applicabilities its fixes can have; () when FIX is "never"
    TRIGGERS = ()  # TODO: substrings a file must contain for the rule to have anything to do
    VALID: list[str] = []  # TODO: code that must not be reported
    INVALID: list[Invalid] = []  # TODO: code that must be reported, with its rewrite

    def visit_Call(self, node: cst.Call) -> None:
        """TODO: ask ``self.analysis`` (see docs/CONTRIBUTING.md), then ``self.report(...)``."""

'''

TEST = '''"""{code} ({name}): its own tests; the fixtures are checked by tests/rules/test_rules.py."""

from __future__ import annotations

from pathlib import Path

from syncfix import check_code, fix_code

FIXTURES = Path(__file__).parent / "fixtures"


def test_{slug}_reports_and_rewrites_its_example():
    source = (FIXTURES / "example.in.py").read_text(encoding="utf-8")
    assert [f.code for f in check_code(source, select=["{code}"])], "{code} finds nothing yet"
    assert fix_code(source, select=["{code}"]) == (FIXTURES / "example.out.py").read_text(encoding="utf-8")
'''

EXAMPLE_IN = "import torch\n\n# TODO: code that {code} reports and its safe fix rewrites\n"
EXAMPLE_OUT = "import torch\n\n# TODO: what {code}'s safe fix writes instead\n"
UNTOUCHED = "import torch\n\n# TODO: code {code} must leave as it is (and, if it reports it, why)\n"


class ScaffoldError(Exception):
    pass


def plan(root: Path, code: str, name: str) -> dict[Path, str]:
    """The files to create, with their text; refuses a code, name or path already taken."""
    if not re.fullmatch(r"SFX\d{3}", code):
        raise ScaffoldError(f"{code!r}: a rule code is SFX and three digits, e.g. SFX207")
    if not re.fullmatch(r"[a-z][a-z0-9]*(-[a-z0-9]+)*", name):
        raise ScaffoldError(f"{name!r}: a rule name is kebab-case, e.g. scalar-loop-bound")
    module = name.replace("-", "_")
    cls = "".join(part.capitalize() for part in name.split("-"))
    codemods = root / "codemods"
    for path in sorted(codemods.glob("*.py")):
        text = path.read_text(encoding="utf-8")
        if re.search(rf'^\s+CODE = "{code}"$', text, re.M):
            raise ScaffoldError(f"{code} is taken by {path.relative_to(root)}")
        if re.search(rf'^\s+NAME = "{name}"$', text, re.M):
            raise ScaffoldError(f"{name} is taken by {path.relative_to(root)}")
    folder = root / "tests" / "rules" / code
    files = {
        codemods / f"{module}.py": MODULE.format(code=code, name=name, cls=cls),
        folder / "__init__.py": "",
        folder / f"test_{code.lower()}.py": TEST.format(code=code, name=name, slug=code.lower()),
        folder / "fixtures" / "example.in.py": EXAMPLE_IN.format(code=code),
        folder / "fixtures" / "example.out.py": EXAMPLE_OUT.format(code=code),
        folder / "fixtures" / "example_untouched.in.py": UNTOUCHED.format(code=code),
    }
    taken = [str(p.relative_to(root)) for p in files if p.exists()]
    if taken:
        raise ScaffoldError(f"already there: {', '.join(taken)}")
    return files


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("code", help="e.g. SFX207")
    parser.add_argument("name", help="kebab-case, e.g. scalar-loop-bound")
    parser.add_argument("--root", type=Path, default=ROOT, help="repository root (default: this one)")
    args = parser.parse_args(argv)
    root = args.root.resolve()
    try:
        files = plan(root, args.code, args.name)
    except ScaffoldError as exc:
        print(f"new_rule: {exc}", file=sys.stderr)
        return 2
    for path, text in files.items():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        print(f"created {path.relative_to(root)}")
    # The doc page and README's row come from the class, like every other rule's.
    env = {**os.environ, "PYTHONPATH": str(root)}
    done = subprocess.run(
        [sys.executable, str(root / "scripts" / "gen_docs.py"), "--root", str(root)], env=env, cwd=root
    )
    if done.returncode:
        print("new_rule: scripts/gen_docs.py failed; the rule module does not load", file=sys.stderr)
        return 1
    print(f"next: fill in every TODO, then run: python -m pytest -q tests/rules/{args.code}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
