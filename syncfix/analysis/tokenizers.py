"""Tokenizer outputs, in the likely view: ``tokenizer(texts, return_tensors="pt")`` (the Hugging
Face convention) hands out new CPU tensors under ``input_ids``, ``attention_mask``... whatever
the tokenizer object is; reading them waits for no GPU. A likely fact, for findings only: a
project's own function may take ``return_tensors`` and place its results elsewhere."""

from __future__ import annotations

from typing import TYPE_CHECKING

import libcst as cst

from .syntax import keyword
from .torch_api import TOKENIZER_TENSOR_KEYS
from .values import Device, Kind, Memory, Value

if TYPE_CHECKING:
    from .module import ModuleAnalysis

TOKENIZED = Value(Kind.TENSOR, Device.CPU, Memory.PAGEABLE, True)


def tokenized_item(a: ModuleAnalysis, base: cst.BaseExpression, key: str) -> Value | None:
    """``TOKENIZED`` for the ``key`` (an attribute or string subscript) of a tokenizer's output
    ``base``, in the likely view; None elsewhere."""
    if not a.assume_tensors or key not in TOKENIZER_TENSOR_KEYS:
        return None
    return TOKENIZED if tokenizer_output(a, base) else None


def tokenizer_output(a: ModuleAnalysis, expr: cst.BaseExpression, follow: bool = True) -> bool:
    """``tokenizer(text, return_tensors="pt")``, or a name each binding of which is one."""
    if isinstance(expr, cst.Call):
        wanted = keyword(expr, "return_tensors")
        return wanted is not None and isinstance(wanted.value, cst.SimpleString) and wanted.value.evaluated_value == "pt"
    if isinstance(expr, cst.Name) and follow:  # ``enc = tokenizer(...)``, each binding one
        values = a.reaching_values(expr) or []
        return bool(values) and all(isinstance(v, cst.BaseExpression) and tokenizer_output(a, v, False) for v in values)
    return False
