"""Accelerators other than CUDA that a project's code names (Apple's MPS, XLA, Intel's XPU...).

The unsafe copy fixes rest on the likely fact that a device syncfix cannot name is CUDA or the
CPU, where a non-blocking copy from pageable memory is exact. A project whose code can pick
another accelerator (``elif torch.backends.mps.is_available(): device_type = "mps"``) says
otherwise: those fixes are held back there (the project index reads every file with this).
"""

from __future__ import annotations

import ast
import re

# Device types of other accelerators, as ``torch.device`` strings start (``"mps"``, ``"xla:0"``).
OTHER_DEVICE_TYPES = ("mps", "xpu", "xla", "hpu", "npu", "mtia", "privateuseone")
_DEVICE_STRING = re.compile(rf"^(?:{'|'.join(OTHER_DEVICE_TYPES)})(?::\d+)?$")
# One named as a word of a longer string: a ``--device`` option's help, ``"cpu|cuda|mps"``
# (makemore), which the user may pass on.
_DEVICE_WORD = re.compile(rf"(?<![\w.])(?:{'|'.join(OTHER_DEVICE_TYPES)})(?::\d+)?(?!\w)")
# ``torch.backends.mps``, ``torch.mps``, ``torch.xpu``...: the accelerator's own torch API.
_TORCH_MODULES = frozenset({"mps", "xpu", "npu", "hpu", "mtia"})
# Packages that add an accelerator to torch.
_PACKAGES = frozenset({"torch_xla", "torch_npu", "habana_frameworks", "intel_extension_for_pytorch"})
# What the text must hold for the code to name one (checked on the parse after): a device
# type as a word, torch's API for one, or an import of a package.
_MENTION = re.compile(
    rb"(?<![\w.])(?:" + "|".join(OTHER_DEVICE_TYPES).encode() + rb")(?::\d+)?(?!\w)"
    rb"|\.(?:" + "|".join(sorted(_TORCH_MODULES)).encode() + rb")\b"
    rb"|\b(?:" + "|".join(sorted(_PACKAGES)).encode() + rb")\b"
)


def names_other_accelerator(data: bytes, tree: ast.Module | None = None) -> bool:
    """Does the code (not its comments) name an accelerator other than CUDA: a string that is
    such a device (``"mps"``, ``"xla:0"``) or names one as a word (``help="cpu|cuda|mps"``), torch's API for one (``torch.backends.mps``,
    ``torch.xpu``), or a package that adds one (``import torch_xla``)? ``tree``: Python's parse of
    ``data``, where the caller has it. Text that does not parse is read as text."""
    if not _MENTION.search(data):
        return False
    if tree is None:
        try:
            tree = ast.parse(data)
        except (SyntaxError, ValueError):
            return True
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            if _DEVICE_STRING.match(node.value) or _DEVICE_WORD.search(node.value):
                return True
        elif isinstance(node, ast.Attribute):
            if node.attr in _TORCH_MODULES and _torch_or_backends(node.value):
                return True
        elif isinstance(node, ast.Import):
            if any(alias.name.split(".")[0] in _PACKAGES for alias in node.names):
                return True
        elif isinstance(node, ast.ImportFrom):
            if node.level == 0 and (node.module or "").split(".")[0] in _PACKAGES:
                return True
    return False


def _torch_or_backends(expr: ast.expr) -> bool:
    """``torch`` or ``torch.backends`` (the owner of ``.mps``/``.xpu``)."""
    if isinstance(expr, ast.Name):
        return expr.id == "torch"
    return isinstance(expr, ast.Attribute) and expr.attr == "backends" and isinstance(expr.value, ast.Name) and expr.value.id == "torch"
