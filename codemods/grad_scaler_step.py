"""SFX108: ``scaler.step(optimizer)`` of a GradScaler where code repeats, with an optimizer that is
not fused (reported, never rewritten)."""

from __future__ import annotations

import libcst as cst

from syncfix.analysis import ModuleAnalysis, dotted_name, keyword
from syncfix.rules import Invalid, Rule

from ._support import how_often

_SCALERS = {
    "torch.cuda.amp.GradScaler", "torch.cuda.amp.grad_scaler.GradScaler", "torch.amp.GradScaler",
    "torch.amp.grad_scaler.GradScaler",
}
# The optimizers that take the overflow flag on the device when built with ``fused=True``.
_FUSABLE = {"torch.optim.Adam", "torch.optim.AdamW", "torch.optim.SGD", "torch.optim.Adagrad"}


class GradScalerStep(Rule):
    """
    ## What it finds
    `scaler.step(optimizer)` of a `torch.amp.GradScaler` (`torch.cuda.amp.GradScaler`) in a loop,
    a step function or a function called from a loop, unless the optimizer is seen built with
    `fused=True`. The scaler is one syncfix sees built (`scaler = GradScaler()`), or a name
    ending in `scaler` in a file that names `GradScaler`. Not a scaler built with
    `enabled=False` or for the CPU.

    ## Why it costs
    Before it calls `optimizer.step()`, `GradScaler.step` must know whether any gradient held an
    inf or a NaN, to skip the update if one did: it reads that flag on the host (`.item()`, once
    per device), so the CPU waits for the backward pass to finish, every step. An optimizer
    built with `fused=True` (Adam, AdamW, SGD, Adagrad, on CUDA) takes the flag as a tensor and
    skips the update on the device, so the step does not wait
    (docs/semantics.md#training-utilities).

    ## Example
    ```python
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    scaler = torch.amp.GradScaler("cuda")
    for x, y in loader:
        with torch.autocast("cuda"):
            loss = loss_fn(model(x), y)
        scaler.scale(loss).backward()
        scaler.step(opt)
        scaler.update()
    ```

    ## Use instead
    ```python
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3, fused=True)
    ```

    ## Fix safety
    No fix: the fused optimizer runs other kernels, whose results can differ from the default
    implementation's in the last bits, and it needs every parameter on CUDA; whether to switch
    is the user's choice.
    """

    CODE = "SFX108"
    NAME = "grad-scaler-step"
    MESSAGE = "GradScaler step where code repeats: it reads on the host whether gradients overflowed"
    FIX = "never"
    SAFETY = ()
    TRIGGERS = ("GradScaler",)
    VALID = [
        # a fused optimizer takes the flag on the device
        "import torch\nopt = torch.optim.AdamW(ps, fused=True)\nscaler = torch.amp.GradScaler()\n"
        "for x in xs:\n    scaler.step(opt)\n",
        # a disabled scaler steps the optimizer directly
        "import torch\nscaler = torch.amp.GradScaler(enabled=False)\nfor x in xs:\n    scaler.step(opt)\n",
        # once
        "import torch\nscaler = torch.amp.GradScaler()\nscaler.step(opt)\n",
    ]
    INVALID = [
        Invalid("import torch\nscaler = torch.amp.GradScaler()\nfor x in xs:\n    scaler.step(opt)\n"),
        Invalid(
            "from torch.cuda.amp import GradScaler\n\nclass T:\n    def fit(self):\n"
            "        for x in self.loader:\n            self.scaler.step(self.opt)\n"
        ),
    ]

    def visit_Module(self, node: cst.Module) -> None:
        self._names_scaler: bool | None = None

    def visit_Call(self, node: cst.Call) -> None:
        a = self.analysis
        func = node.func
        if not (isinstance(func, cst.Attribute) and func.attr.value == "step" and node.args):
            return
        if not (a.enclosing_loop(node) is not None or a.is_hot(node)):
            return
        made = self._scaler(func.value)
        if made is None:
            return
        optimizer = node.args[0].value
        fused = _fused(a, optimizer)
        if fused is True:
            return
        hedges = []
        if isinstance(made, cst.Call) and keyword(made, "enabled") is not None:
            hedges.append("when the scaler is enabled")
        if fused is None:
            hedges.append(f"unless `{_code(optimizer)}` was built with `fused=True`")
        hedge = f" ({'; '.join(hedges)})" if hedges else ""
        self.report(
            node,
            f"GradScaler step where code repeats, {how_often(a, node)}: `{_code(func.value)}.step` reads on "
            f"the host whether any gradient overflowed before it steps the optimizer, so the CPU "
            f"waits for the backward pass{hedge}; no fix: an optimizer built with `fused=True` "
            "(Adam, AdamW, SGD, Adagrad on CUDA) skips the update on the device instead; its "
            "kernels may round differently, so switching is your call",
        )

    def _scaler(self, receiver: cst.BaseExpression) -> cst.CSTNode | bool | None:
        """The GradScaler(...) call that built ``receiver`` (True: a scaler by its name, in a file
        that names GradScaler); None when it is not one, or one built disabled or for the CPU."""
        a = self.analysis
        if isinstance(receiver, cst.Name):
            made = a.reaching_values(receiver) or []
            calls = [m for m in made if isinstance(m, cst.Call) and a.callee(m) in _SCALERS]
            if calls and len(calls) == len(made):
                live = [c for c in calls if not _disabled(c)]
                return live[0] if live else None
        name = dotted_name(receiver) or ""
        if not name.lower().rsplit(".", 1)[-1].endswith("scaler"):
            return None
        if self._names_scaler is None:  # once per file
            self._names_scaler = _names_grad_scaler(a)
        return True if self._names_scaler else None


def _disabled(call: cst.Call) -> bool:
    """``GradScaler(enabled=False)``, ``GradScaler("cpu")``: no read on a GPU."""
    enabled = keyword(call, "enabled")
    device = keyword(call, "device")
    first = call.args[0] if call.args and call.args[0].keyword is None else None
    where = device.value if device is not None else first.value if first is not None else None
    return (
        enabled is not None and isinstance(enabled.value, cst.Name) and enabled.value.value == "False"
        or isinstance(where, cst.SimpleString) and where.evaluated_value == "cpu"
    )


def _fused(a: ModuleAnalysis, optimizer: cst.BaseExpression) -> bool | None:
    """Was ``optimizer`` built with ``fused=True`` (True), by a torch optimizer without it
    (False), or does syncfix not see (None)?"""
    if not isinstance(optimizer, cst.Name):
        return None
    made = a.reaching_values(optimizer) or []
    if not made or not all(isinstance(m, cst.Call) and a.callee(m) in _FUSABLE for m in made):
        return None
    flags = {_fused_flag(m) for m in made if isinstance(m, cst.Call)}
    return flags.pop() if len(flags) == 1 else None


def _fused_flag(call: cst.Call) -> bool | None:
    fused = keyword(call, "fused")
    if fused is None:
        return False
    value = fused.value
    return value.value == "True" if isinstance(value, cst.Name) and value.value in ("True", "False", "None") else None


def _names_grad_scaler(a: ModuleAnalysis) -> bool:
    """Does the module name torch's GradScaler: import it, or use it (a call, an annotation)?"""
    for imp in a.structure.of_type(cst.ImportFrom):
        module = dotted_name(imp.module) if imp.module is not None else None  # type: ignore[attr-defined]
        names = imp.names  # type: ignore[attr-defined]
        if module and not isinstance(names, cst.ImportStar) and any(
            f"{module}.{dotted_name(alias.name)}" in _SCALERS for alias in names
        ):
            return True
    return any(
        (a.qualname(n) or "") in _SCALERS
        for kind in (cst.Name, cst.Attribute)
        for n in a.structure.of_type(kind)
        if (n.value if isinstance(n, cst.Name) else n.attr.value) == "GradScaler"  # type: ignore[attr-defined]
    )


def _code(node: cst.CSTNode) -> str:
    return " ".join(cst.Module(body=[]).code_for_node(node).split())  # on one line
