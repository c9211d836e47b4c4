"""SFX900: a ``# noqa: SFXnnn`` / ``# syncfix: ignore[SFXnnn]`` that suppresses nothing → removed."""

from __future__ import annotations

from collections.abc import Sequence

import libcst as cst

from syncfix import suppression
from syncfix.rules import Invalid, Replacement, Rule


class UnusedSuppression(Rule):
    """
    ## What it finds
    A suppression comment naming a syncfix code that suppresses nothing: `# noqa: SFX101`,
    `# syncfix: ignore[SFX101]` or a file-level `# syncfix: noqa: SFX101` where no SFX101 finding
    is left to hide, or where no rule has that code.

    Only explicit `SFX` codes are judged. A bare `# noqa` and other tools' codes (`# noqa: E501`)
    are never reported: they may be meant for flake8, ruff or another linter. A code whose rule is
    disabled for the file (`ignore`, `per-file-ignores`, a narrower `--select`) is left alone too,
    since syncfix cannot tell whether it would fire.

    ## Why it costs
    Nothing at run time; a stale suppression hides the next real finding on that line, after the
    code around it changes, and tells readers about a problem that is gone.

    ## Example
    ```python
    x = torch.ones(3).to("cuda", non_blocking=True)  # noqa: SFX101
    ```

    ## Use instead
    ```python
    x = torch.ones(3).to("cuda", non_blocking=True)
    ```

    ## Fix safety
    The fix is **safe**: it edits only the comment, removing the unused codes (and the whole
    directive when none is left, and the comment when nothing else is in it). Other codes and any
    other text in the comment stay.
    """

    CODE = "SFX900"
    NAME = "unused-suppression"
    MESSAGE = "Unused suppression comment"
    FIX = "always"
    SAFETY = ("safe",)
    TRIGGERS = ("SFX", "sfx")
    NEEDS_TORCH = False  # a stale "noqa: SFX101" can sit in any file
    ONLY_WHERE_REPEATED = False
    MOVES_SYNCS = False  # it edits comments
    WAITS_AT_FINDING = False
    VALID = [
        # foreign and blanket suppressions are not ours to judge
        "import torch\nx = 1  # noqa: E501\ny = 2  # noqa\n",
        # SFX101 is not enabled here (the examples run with select=[SFX900]): not judged
        "import torch\nx = torch.ones(3).cuda()  # noqa: SFX101\n",
        # a code in a string is not a comment
        'import torch\ns = "# noqa: SFX999"\n',
    ]
    INVALID = [
        Invalid("import torch\nx = 1  # noqa: SFX999\n", "import torch\nx = 1\n"),
        Invalid("import torch\nx = 1  # noqa: E501, SFX999\n", "import torch\nx = 1  # noqa: E501\n"),
        Invalid("import torch\n# syncfix: ignore[SFX998]\nx = 1\n", "import torch\nx = 1\n"),
        Invalid("# syncfix: noqa: SFX999\nx = 1\n", "x = 1\n"),
    ]

    def __init__(self, analysis) -> None:
        super().__init__(analysis)
        self.comments: dict[int, cst.Comment] = {}

    def visit_Comment(self, node: cst.Comment) -> None:
        self.comments[self.analysis.positions[node].start.line] = node

    def report_unused(self, unused: Sequence[suppression.Unused]) -> None:
        """Called by the engine once suppressions are applied (see ``engine.apply_suppressions``)."""
        known = set(_known_codes())
        for u in unused:
            node = self.comments.get(u.line)
            if node is None:
                continue
            unknown = [c for c in u.codes if c not in known]
            reasons = []
            if len(unknown) < len(u.codes):
                reasons.append(f"nothing to suppress: {', '.join(c for c in u.codes if c in known)}")
            if unknown:
                reasons.append(f"no such rule: {', '.join(unknown)}")
            change = self._removal(node, u.codes)
            fix = self.safe_fix(change, "Remove the unused suppression") if change else None
            self.report(node, f"Unused suppression ({'; '.join(reasons)})", fix=fix)

    def _removal(self, node: cst.Comment, codes: Sequence[str]) -> dict[cst.CSTNode, Replacement] | None:
        text = suppression.remove_codes(node.value, codes)
        if text:
            return {node: node.with_changes(value=text)}
        parent = self.analysis.parent(node)
        if isinstance(parent, cst.TrailingWhitespace):
            return {parent: parent.with_changes(whitespace=cst.SimpleWhitespace(""), comment=None)}
        if isinstance(parent, cst.EmptyLine):  # a comment on its own line: the line goes
            return {parent: cst.RemovalSentinel.REMOVE}
        return None


def _known_codes() -> list[str]:
    from syncfix.rules import all_rules

    return list(all_rules())
