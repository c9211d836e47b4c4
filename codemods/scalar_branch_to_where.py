"""SFX201: a Python ``if`` on a GPU scalar that only picks a tensor → ``torch.where``."""

from __future__ import annotations

import libcst as cst

from syncfix.analysis import DATA_SHAPED_OPS, SIZE_FACTORIES, Device, ModuleAnalysis
from syncfix.rules import Fix, Invalid, Replacement, Rule
from syncfix.walk import walk

from ._support import as_tensor_condition, assignments, code, is_new_tensor, may_raise, syncs_on_gpu


class ScalarBranchToWhere(Rule):
    """
    ## What it finds
    An `if`/`elif`/`else` (or a conditional expression `A if cond else B`) whose test reads a GPU
    value on the host (`t.item() > c`, `t > c`, `bool(t)`, `t.any()`, `t.all()`,
    `torch.isnan(t)`, combined with `and`/`or`/`not`) and whose branches only assign tensors to
    the same names.

    ## Why it costs
    Python needs a `bool`, so the test copies the value to the host and waits for every kernel
    queued before it (one sync per test). When the branches only choose between tensors, the
    choice can stay on the device.

    ## Example
    ```python
    with torch.no_grad():
        if m > 0.5:
            scale = scale * 0.9
        else:
            scale = scale * 1.1
    ```

    ## Use instead
    ```python
    with torch.no_grad():
        scale = torch.where(m > 0.5, scale * 0.9, scale * 1.1)
    ```
    `elif` chains become nested `torch.where`; `and`/`or`/`not` become `&`/`|`/`~`.

    ## Fix safety
    `torch.where` is not a Python `if` (docs/semantics.md#choosing-on-the-device-instead-of-branching): it evaluates both branches, its
    result has the promoted dtype and broadcast shape, lives on the condition's device, is a new
    tensor (not `A` or `B` itself), and autograd records both branches. The fix is **safe** only
    when syncfix proves all of this away:
    - the condition is exact: `t.item() > c` becomes `t > c`, which casts `c` to `t`'s dtype, so `c`
      must be a literal exactly representable in that dtype (`0.5` in float32 yes, `0.1` no: a
      float32 `0.1 > 0.1` is True in Python and False as tensors; a default dtype set anywhere
      in the project, `torch.set_default_dtype`, leaves the dtype unknown); tensor-valued tests
      are exact;
    - the condition and every branch are provably 0-d / of one shape, of one known dtype, and on
      one device: all on CUDA (where the module names no device index, so "CUDA" is one device),
      or all placed by one device expression that is CUDA or the CPU, such as a module-level
      `device = "cuda" if torch.cuda.is_available() else "cpu"`, also when the tensors reach the
      function as parameters (on the CPU `torch.where` gives the same values);
    - every branch value is a new tensor built by side-effect-free, non-raising element-wise ops (so
      evaluating the branch not taken changes nothing, and the old result could not alias a tensor
      that is mutated or identity-tested later): no index, no `@`, no reduction without an
      identity (`amax()` of an empty tensor raises);
    - autograd cannot differ: the code runs under `torch.no_grad()`/`inference_mode()`, or no
      operand can require grad (an unselected branch gets a zero gradient that can be NaN); a
      module that turns `requires_grad` on for anything (`p.requires_grad_()` in a loop over
      tensors) may do so for these;
    - the assigned name is not read on the host later (then the sync would only move).

    Otherwise the fix is **unsafe** (e.g. float comparisons against literals like `0.1`, unknown
    dtypes, a missing `else` that keeps the old tensor object), or there is no fix: branches with
    side effects, calls we cannot see, Python numbers, a name read on the host afterwards, or a
    branch whose shape depends on the data (`loss[loss > thresh]`, `x.nonzero()`: it syncs
    itself, and `torch.where` could not match it to the other branch's shape).
    Branches that do more than assign (`save()`, `break`, `return`) are SFX206's business, and
    `if cond: raise` is SFX203's.
    """

    CODE = "SFX201"
    NAME = "scalar-branch-to-where"
    MESSAGE = (
        "Python branch on a GPU value syncs to pick a tensor; `torch.where` picks on the device"
    )
    FIX = "sometimes"
    SAFETY = ("safe", "unsafe")
    TRIGGERS = ("if ",)
    VALID = [
        # a Python condition: nothing to sync
        "import torch\ndef f(x: torch.Tensor, n: int):\n    if n > 3:\n        y = x * 2\n"
        "    else:\n        y = x * 3\n    return y\n",
        # the branch does more than assign: SFX206's business
        "import torch\nx = torch.ones((), device='cuda')\nif x > 0:\n    print('positive')\n",
        # a CPU tensor: no sync
        "import torch\nx = torch.ones(())\nif x > 0:\n    y = x * 2\nelse:\n    y = x * 3\n",
    ]
    INVALID = [
        Invalid(
            "import torch\nwith torch.no_grad():\n    m = torch.rand((), device='cuda')\n"
            "    s = torch.ones((), device='cuda')\n    if m > 0.5:\n        s = s * 0.5\n"
            "    else:\n        s = s * 2.0\n",
            "import torch\nwith torch.no_grad():\n    m = torch.rand((), device='cuda')\n"
            "    s = torch.ones((), device='cuda')\n    s = torch.where(m > 0.5, s * 0.5, s * 2.0)\n",
        ),
        # float32 against 0.1: the tensor comparison decides differently → unsafe only
        Invalid(
            "import torch\nwith torch.no_grad():\n    m = torch.rand((), device='cuda')\n"
            "    s = torch.ones((), device='cuda')\n    if m.item() > 0.1:\n        s = s * 0.5\n"
            "    else:\n        s = s * 2.0\n",
            "import torch\nwith torch.no_grad():\n    m = torch.rand((), device='cuda')\n"
            "    s = torch.ones((), device='cuda')\n    s = torch.where(m > 0.1, s * 0.5, s * 2.0)\n",
            unsafe=True,
        ),
        # a Python number in a branch: finding, no fix
        Invalid(
            "import torch\nm = torch.rand((), device='cuda')\nif m > 0.5:\n    s = 1.0\n"
            "else:\n    s = 2.0\n",
        ),
    ]

    def visit_If(self, node: cst.If) -> None:
        a = self.analysis
        parent = a.parent(node)
        if isinstance(parent, cst.If) and parent.orelse is node:
            return  # an ``elif``: handled with its chain
        chain: list[tuple[cst.BaseExpression, cst.BaseSuite]] = []
        cur: cst.If | None = node
        final: cst.BaseSuite | None = None
        while cur is not None:
            chain.append((cur.test, cur.body))
            if isinstance(cur.orelse, cst.If):
                cur = cur.orelse
            else:
                final = cur.orelse.body if cur.orelse is not None else None
                cur = None
        if not any(syncs_on_gpu(a, test) for test, _ in chain):
            return
        branches = [assignments(body) for _, body in chain]
        else_branch = assignments(final) if final is not None else {}
        if any(b is None for b in branches) or else_branch is None:
            return  # not an assignment-only choice: SFX206 (or SFX203) reports it
        targets = list(branches[0])  # type: ignore[arg-type]
        if not targets or any(set(b) != set(targets) for b in branches):  # type: ignore[arg-type]
            self.report(node, self.MESSAGE + " (branches assign different names: no fix)")
            return
        if final is not None and set(else_branch) != set(targets):
            self.report(node, self.MESSAGE + " (branches assign different names: no fix)")
            return
        tests = [t for t, _ in chain]
        values = {
            t: ([b[t] for b in branches], else_branch.get(t))  # type: ignore[index]
            for t in targets
        }
        message, fix = self._plan(node, tests, values, node)
        self.report(node, message, fix=fix)

    def visit_IfExp(self, node: cst.IfExp) -> None:
        a = self.analysis
        if not syncs_on_gpu(a, node.test):
            return
        parent = a.parent(node)
        target = None
        if isinstance(parent, cst.Assign) and len(parent.targets) == 1:
            t = parent.targets[0].target
            target = t.value if isinstance(t, cst.Name) else None
        values = {target or "": ([node.body], node.orelse)}
        message, fix = self._plan(node, [node.test], values, a.statement_of(node) or node)
        self.report(node, message, fix=fix)

    # ------------------------------------------------------------------------------------------
    def _plan(self, node, tests, values, anchor) -> tuple[str, Fix | None]:
        """The message and fix for choosing ``values[target] = ([per test], else)``."""
        a = self.analysis
        msg = self.MESSAGE
        torch = a.torch_alias_at(anchor)
        conds = [as_tensor_condition(a, t) for t in tests]
        if torch is None or any(c is None for c in conds):
            return msg + " (condition not expressible as a tensor: no fix)", None
        multi = len(values) > 1
        names = set(values)
        why: list[str] = [w for c in conds for w in c.why_inexact]  # type: ignore[union-attr]
        exact = all(c.exact and c.zero_dim for c in conds)  # type: ignore[union-attr]
        if not all(c.zero_dim for c in conds):  # type: ignore[union-attr]
            why.append("the condition is not provably 0-d (it would broadcast)")
        devices: set[Device] = set().union(*(c.devices for c in conds))  # type: ignore[union-attr]
        origins: set[str | None] = set().union(*(c.origins for c in conds))  # type: ignore[union-attr]
        if multi and any(a.effects(t).reads & names for t in tests):
            return msg + " (the condition reads an assigned name: no fix)", None
        sized = next((s for taken, other in values.values() for e in (*taken, other) if e is not None
                      for s in _sizes_from_tensors(a, e)), None)
        if sized is not None:
            # detr's ``all_gather``: ``if local_size != max_size: padding = torch.empty(size=(max_size
            # - local_size,))``: a shape only the host can give the allocator
            return (
                "Python branch on a GPU value syncs to pick a tensor; a branch builds a tensor "
                f"whose size comes from a GPU value (`{code(a, sized)}`), which no device form can "
                "choose: no fix; where the host knows that number (a `numel()`, a length), test "
                "it instead",
                None,
            )
        new_code: dict[str, str] = {}
        for target, (taken, other) in values.items():
            exprs = list(taken) + ([other] if other is not None else [])
            implicit = other is None
            if implicit:
                old = _read_of(a, target, taken)
                if old is None:
                    return msg + f" (no `else`, and the branch does not use `{target}`'s value from before the `if`: no fix)", None
                exprs.append(old)
                why.append("without `else` the old tensor object is kept in one case")
            for e in exprs:
                v = a.value(e)
                if not v.is_tensor:
                    return msg + " (a branch is not a tensor: no fix)", None
                if not a.is_effect_free(e):
                    return msg + " (a branch has side effects or draws random numbers: no fix)", None
                if a.host_read_syncs(e):
                    return msg + " (a branch itself reads a GPU value on the host: no fix)", None
                if _data_dependent_shape(a, e):
                    return msg + " (a branch's shape depends on the data, so it syncs itself and `torch.where` could not match it to the other: no fix)", None
                if multi and a.effects(e).reads & (names - {target}):
                    return msg + " (a branch reads another assigned name: no fix)", None
                devices.add(v.device)
                origins.add(v.origin)
            dtypes = {a.dtype_of(e) for e in exprs}
            if None in dtypes or len(dtypes) != 1:
                why.append("the branches' dtypes are not provably one dtype")
            shapes = {a.shape_key(e) for e in exprs}
            if None in shapes or len(shapes) != 1:
                why.append("the branches' shapes are not provably one shape")
            if not all(is_new_tensor(a, e) for e in exprs if not (implicit and e is exprs[-1])):
                why.append("a branch may alias an existing tensor (in-place writes and `is` differ)")
            if any(may_raise(a, e) for e in exprs):
                why.append("a branch may raise where the `if` did not run it (an index, `@`, `max` of an empty tensor)")
            if not (a.in_no_grad(anchor) or all(a.is_grad_free(e) for e in exprs)):
                why.append("autograd records both branches (an unselected branch's gradient is 0 or NaN)")
            if target and a.flows_to_host(target, anchor):
                return (
                    msg + f" (`{target}` is read on the host later, so the sync would only move:"
                    " no fix)",
                    None,
                )
            result = code(a, exprs[-1]) if not implicit else target
            for cond, e in reversed(list(zip(conds, taken, strict=True))):
                result = f"{torch}.where({cond.code}, {code(a, e)}, {result})"
            new_code[target] = result
        if not _one_device(a, devices, origins):
            why.append("not every operand is provably on one device, the GPU's (or, for code that runs on CUDA or the CPU, one device expression's)")
        if isinstance(node, cst.If) and "#" in code(a, node.with_changes(leading_lines=())):
            why.append("comments inside the `if` would be dropped")
        exact = exact and not why
        changes: dict[cst.CSTNode, Replacement]
        if isinstance(node, cst.IfExp):
            new = cst.parse_expression(new_code[next(iter(new_code))])
            if node.lpar:
                new = new.with_changes(lpar=node.lpar, rpar=node.rpar)
            changes = {node: new}
        else:
            stmts = [cst.parse_statement(f"{t} = {e}\n") for t, e in new_code.items()]
            stmts[0] = stmts[0].with_changes(leading_lines=node.leading_lines)
            changes = {node: cst.FlattenSentinel(stmts)}
        if exact:
            return msg, self.safe_fix(changes, "Choose with torch.where on the device")
        return msg, self.unsafe_fix(
            changes, "Choose with torch.where (unsafe: " + "; ".join(dict.fromkeys(why)) + ")"
        )


def _one_device(a: ModuleAnalysis, devices: set[Device], origins: set[str | None]) -> bool:
    """Are the condition and every branch on one device? All on CUDA (one device where the module
    names no index), or all placed by one device expression that is CUDA or the CPU: on the CPU
    `torch.where` gives the same values, and on CUDA it saves the sync."""
    if a.may_use_several_devices:
        return False
    if devices == {Device.CUDA}:
        return True
    return len(origins) == 1 and None not in origins and devices <= {Device.CUDA, Device.CUDA_OR_CPU}


def _sizes_from_tensors(a: ModuleAnalysis, expr: cst.BaseExpression) -> list[cst.BaseExpression]:
    """The size arguments of ``torch.empty/zeros/ones/...`` calls in ``expr`` that compute
    with a tensor (``size=(max_size - local_size,)`` of a 0-d ``local_size``)."""
    found = []
    for call in a.nodes_within(expr, cst.Call):
        name = a.callee(call) or ""  # type: ignore[arg-type]
        if not (name.startswith("torch.") and name[len("torch."):] in SIZE_FACTORIES):
            continue
        for arg in call.args:  # type: ignore[attr-defined]
            if arg.keyword is not None and arg.keyword.value != "size":
                continue
            if any(a.value(n).is_tensor for n in a.nodes_within(arg.value, cst.Name)):
                found.append(arg.value)
    return found


def _data_dependent_shape(a: ModuleAnalysis, expr: cst.BaseExpression) -> bool:
    """Does ``expr`` select by a boolean mask (``loss[loss > t]``) or call ``nonzero``,
    ``masked_select``, ``unique``...? Its shape is a count only the GPU knows."""
    for sub in a.nodes_within(expr, cst.Subscript):
        for element in sub.slice:  # type: ignore[attr-defined]
            index = element.slice
            if isinstance(index, cst.Index) and a.dtype_of(index.value) == "torch.bool":
                return True
    for call in a.nodes_within(expr, cst.Call):
        func = call.func  # type: ignore[attr-defined]
        name = func.attr.value if isinstance(func, cst.Attribute) else func.value if isinstance(func, cst.Name) else ""
        if name in DATA_SHAPED_OPS:
            return True
    return False


def _read_of(a: ModuleAnalysis, target: str, exprs) -> cst.Name | None:
    """A read of ``target`` in the branches (stands for its value before the ``if``)."""
    found: list[cst.Name] = []

    class V(cst.CSTVisitor):
        def visit_Name(self, node: cst.Name) -> None:
            if node.value == target:
                found.append(node)

    for e in exprs:
        walk(e, V())
    return found[0] if found else None
