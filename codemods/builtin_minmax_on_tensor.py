"""SFX202: builtin ``max``/``min`` on CUDA tensors → ``torch.maximum``/``torch.minimum``."""

from __future__ import annotations

import libcst as cst

from syncfix.analysis import Device
from syncfix.rules import Invalid, Rule

from ._support import code, unplaced_tensor

_MAYBE_CUDA = (Device.CUDA, Device.CUDA_OR_CPU)


class BuiltinMinMaxOnTensor(Rule):
    """
    ## What it finds
    Python's builtin `max`/`min` applied to CUDA tensors: `max(a, b)` with tensor operands, `max(t, 0.0)`
    with a tensor and a number, and `max(t)` over a CUDA tensor. Where the code repeats,
    `min(t)` over a tensor whose device syncfix cannot name (`min(start_ids)` of a `nonzero` in a
    decoding loop) is reported too, without a fix: the message says the device is unknown.

    ## Why it costs
    The builtin compares with `>`, which needs a Python `bool`: one sync per comparison. `max(a, b)`
    costs one; `max(t)` iterates the tensor and costs N−1 for N elements (7 for 8;
    docs/semantics.md#host-reads).

    ## Example
    ```python
    m = max(loss_a, loss_b)
    r = max(x, 0.0)
    ```

    ## Use instead
    ```python
    m = torch.maximum(loss_a, loss_b)
    r = torch.clamp(x, min=0.0)
    ```
    For `max(t)` over a tensor: `t.max()` (a 0-d tensor) or `t.amax(0)`.

    ## Fix safety
    Always **unsafe**: the builtin returns one of its arguments (the same object, with its dtype), and
    with NaN its answer depends on the argument order (`max(nan, 1)` is nan, `max(1, nan)` is 1), while
    `torch.maximum` propagates NaN, returns a new tensor, promotes dtypes and broadcasts (the builtin
    raises for tensors of more than one element). `max(t)` over a tensor has no fix: `t.max()` gives a
    0-d tensor, not an element view, and differs on NaN.
    """

    CODE = "SFX202"
    NAME = "builtin-minmax-on-tensor"
    MESSAGE = "Builtin max/min on CUDA tensors compares on the host (a sync per comparison)"
    FIX = "sometimes"
    SAFETY = ("unsafe",)
    TRIGGERS = ("max(", "min(")
    VALID = [
        "import torch\na = 3\nb = max(a, 4)\n",
        "import torch\nx = torch.randn(3, device='cuda')\nm = torch.maximum(x, x.flip(0))\n",
        "import torch\nx = torch.randn(3)\nm = max(x[0], x[1])\n",
    ]
    INVALID = [
        Invalid(
            "import torch\na = torch.rand((), device='cuda')\nb = torch.rand((), device='cuda')\nm = max(a, b)\n",
            "import torch\na = torch.rand((), device='cuda')\nb = torch.rand((), device='cuda')\nm = torch.maximum(a, b)\n",
            unsafe=True,
        ),
        Invalid(
            "import torch\na = torch.rand((), device='cuda')\nm = min(a, 0.5)\n",
            "import torch\na = torch.rand((), device='cuda')\nm = torch.clamp(a, max=0.5)\n",
            unsafe=True,
        ),
        Invalid("import torch\nx = torch.randn(8, device='cuda')\nm = max(x)\n"),
    ]

    def visit_Call(self, node: cst.Call) -> None:
        a = self.analysis
        if not a.may_end_in(node.func, ("max", "min")):
            return
        name = a.callee(node)
        if name not in ("builtins.max", "builtins.min"):
            return
        if any(arg.keyword is not None or arg.star for arg in node.args):
            return  # key=/default= or *args: not a plain comparison
        fn = name.rsplit(".", 1)[-1]
        values = [a.value(arg.value) for arg in node.args]
        cuda = [v.is_tensor and v.device in _MAYBE_CUDA for v in values]
        if len(node.args) == 1 and not any(cuda) and unplaced_tensor(a, node.args[0].value):
            # ``min(start_ids)`` of a tensor whose device syncfix cannot name, where code repeats
            # (parler-tts's ``generate``): as many reads, if it is on a GPU
            self.report(
                node,
                f"Builtin {fn}() over a tensor iterates it and compares its elements on the host "
                f"(N-1 syncs if it is on a GPU; syncfix cannot tell which device it is on); use "
                f"`t.{fn}()` (a 0-d tensor; differs on NaN and is not an element view)",
            )
            return
        if not any(cuda):
            return
        if len(node.args) == 1:
            self.report(
                node,
                f"Builtin {fn}() over a CUDA tensor syncs once per element pair (N-1 syncs); "
                f"use `t.{fn}()` (a 0-d tensor; differs on NaN and is not an element view)",
            )
            return
        fix = None
        torch = a.torch_alias_at(node)
        if len(node.args) == 2 and torch is not None and all(a.is_effect_free(arg.value) for arg in node.args):
            x, y = (arg.value for arg in node.args)
            tx, ty = values[0].is_tensor, values[1].is_tensor
            if tx and ty:
                new = f"{torch}.{'maximum' if fn == 'max' else 'minimum'}({code(a, x)}, {code(a, y)})"
            elif tx != ty:
                t, n = (x, y) if tx else (y, x)
                if a.number_kind(n) is not None:
                    bound = "min" if fn == "max" else "max"
                    new = f"{torch}.clamp({code(a, t)}, {bound}={code(a, n)})"
                else:
                    new = None
            else:
                new = None
            if new is not None:
                fix = self.unsafe_fix(
                    {node: cst.parse_expression(new)},
                    f"Use the element-wise torch op (unsafe: NaN handling, identity, dtype and shape differ "
                    f"from builtin {fn})",
                )
        self.report(node, fix=fix)
