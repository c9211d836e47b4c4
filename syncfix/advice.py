"""Why a finding comes without a fix, in words a user can act on.

The rules say what they could not prove ("receiver not provably a tensor: no fix"); this module
adds, where findings are reported, what the user can do about it. It reads only the finding, the
other findings of its file and whether unsafe fixes are on: no rule's analysis is repeated here.
"""

from __future__ import annotations

from collections.abc import Sequence

from .model import Applicability, Finding

# (a phrase a rule uses for what it could not prove, what the user can do about it)
_ACTIONS: tuple[tuple[str, str], ...] = (
    ("receiver not provably a tensor", "annotate it as `torch.Tensor` (parameter or variable)"),
    ("not provably a one-element", "make the value provably 0-d (e.g. a reduction like `.sum()`)"),
    ("not provably one-element", "make the value provably 0-d (e.g. a reduction like `.sum()`)"),
    ("not provably 1-D", "annotate or build the tensor so it is provably 1-D"),
    ("not imported by name", "add `import torch` to the module"),
    ("device may be the CPU", "name a CUDA device (`\"cuda\"`), or add `non_blocking=True` "
     "yourself if this is a host-to-device copy of a fresh tensor"),
    ("dtype is not provably", "give the tensor a known dtype (e.g. `.float()`)"),
    ("not provably on one device", "place its tensors with one device expression the loop does not "
     "change (e.g. all derived from one `.to(device)`)"),
)

# Rules that never fix: what to do instead (each rule's "Use instead" section says more).
_NEVER: dict[str, str] = {
    "SFX105": "the copy's value is read on the host in the loop; keep results on the device and "
    "copy once after the loop, or copy with non_blocking=True and synchronize once before reading",
    "SFX106": "syncfix cannot tell what the synchronize protects; move it after the loop, or time "
    "with CUDA events",
    "SFX206": "Python needs the value to decide; decide less often, or on the device",
}


def _rule_pointer(code: str) -> str:
    return f"see `syncfix rule {code}`"


class Explainer:
    """Messages with the reason a finding has no fix; built once per report (indexes the fixes)."""

    def __init__(self, findings: Sequence[Finding], unsafe_fixes: bool) -> None:
        self.unsafe_fixes = unsafe_fixes
        self._fixes: dict[tuple[str, str], list[Finding]] = {}
        for f in findings:
            if f.fix is not None and f.fix.edit is not None:
                self._fixes.setdefault((f.path, f.code), []).append(f)

    def covering(self, f: Finding) -> Finding | None:
        """Another finding of the same rule and file whose fix rewrites ``f``'s line too. Not
        for a finding whose rule said it has no fix: an edit of the same line (fixes replace
        whole lines) does not remove what that finding reports."""
        if "no fix" in f.message:
            return None
        for other in self._fixes.get((f.path, f.code), ()):
            edit = other.fix.edit if other.fix is not None else None
            if other is not f and edit is not None and edit.start_line <= f.line <= edit.end_line:
                return other
        return None

    def why_no_fix(self, f: Finding) -> str | None:
        """What keeps ``apply`` from fixing ``f`` and what to do about it; None when it would."""
        if f.fix is not None:
            if f.fix.applicability is not Applicability.UNSAFE or self.unsafe_fixes:
                return None
            return "the fix is unsafe: review it and pass --unsafe-fixes, or prove it with `syncfix verify`"
        other = self.covering(f)
        if other is not None:
            return f"fixed together with the finding at line {other.line}"
        text = f.message
        if "deliberate (timing)" in text:
            return None  # the message already says it is left as is, and why
        if "no fix" in text:
            actions = [action for phrase, action in _ACTIONS if phrase in text]
            if actions:  # every missing fact the rule named
                return "to get a fix, " + "; and ".join(dict.fromkeys(actions))
            return _rule_pointer(f.code) + " (Fix safety) for what a fix needs"
        if f.code in _NEVER:
            return f"no fix: {_NEVER[f.code]}"
        for phrase, action in _ACTIONS:
            if phrase in text:
                return f"no fix: {action}"
        return (
            "no fix: syncfix could not prove a rewrite exact here; "
            + _rule_pointer(f.code)
            + " (Fix safety) for what a fix needs"
        )

    def __call__(self, f: Finding) -> str:
        """The message, followed by why the finding has no fix when ``apply`` would not fix it."""
        why = self.why_no_fix(f)
        return f.message if why is None else f"{f.message}; {why}"
