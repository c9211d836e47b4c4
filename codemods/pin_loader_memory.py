"""SFX103: a ``DataLoader`` whose batches go to the GPU, without ``pin_memory=True``."""

from __future__ import annotations

import libcst as cst

from syncfix.analysis import Device, Kind, Memory, dotted_name, keyword, positional, root_name
from syncfix.rules import Fix, Invalid, Rule
from syncfix.walk import walk

from ._memory import copies_without_waiting, source_may_change
from ._support import append_kwarg, code

_DATALOADER = {"torch.utils.data.DataLoader", "torch.utils.data.dataloader.DataLoader"}
_WRAPPERS = {"builtins.enumerate", "builtins.zip", "builtins.iter", "tqdm.tqdm", "tqdm.auto.tqdm",
             "tqdm.notebook.tqdm"}
def _places_on_device(a, fn: cst.FunctionDef) -> bool:
    calls = [c for c in a.nodes_within(fn, cst.Call) if isinstance(c, cst.Call)]
    return any(
        isinstance(c.func, cst.Attribute) and c.func.attr.value in ("cuda", "to")
        or keyword(c, "device") is not None
        for c in calls
    )


# DataLoader(dataset, batch_size, shuffle, sampler, batch_sampler, num_workers, collate_fn,
#            pin_memory, ...)
_COLLATE_POSITION = 6
_PIN_POSITION = 7


class PinLoaderMemory(Rule):
    """
    ## What it finds
    A `torch.utils.data.DataLoader(...)` created without `pin_memory` whose batches are copied to
    a CUDA device in a loop over it (`x.cuda()`, `x.to("cuda")`, `{k: v.cuda() for k, v in
    batch.items()}`), here or in a function this module passes the loader to
    (`train(model, train_loader, optimizer)` whose `for x, y in loader:` copies the batches).
    Also where the copy names a device syncfix cannot (`x.to(args.device)` of a command-line
    string, `x.to(device=cfg.DEVICE)`): a GPU's, if it is one, with an unsafe fix.

    ## Why it costs
    A copy from pageable memory cannot be a true DMA: the driver stages it through a pinned bounce
    buffer. Blocking copies wait for all queued GPU work either way, but `non_blocking=True` only
    helps from pinned memory: a large pageable "non-blocking" copy still waited for the queued
    work (64 MiB behind 50 ms of queued work: 58.9 ms pageable, 0.10 ms pinned, measured on an H100:
    docs/semantics.md#copies-between-host-and-device), and neither `set_sync_debug_mode` nor
    PyTorch's GPU-trace hooks see that wait. With `pin_memory=True` the loader's pin thread pins
    each batch ahead of use, so SFX101's `non_blocking=True` copies become truly asynchronous.

    ## Example
    ```python
    loader = DataLoader(ds, batch_size=256, num_workers=4)
    for x, y in loader:
        x, y = x.to("cuda", non_blocking=True), y.to("cuda", non_blocking=True)
    ```

    ## Use instead
    ```python
    loader = DataLoader(ds, batch_size=256, num_workers=4, pin_memory=True)
    for x, y in loader:
        x, y = x.to("cuda", non_blocking=True), y.to("cuda", non_blocking=True)
    ```

    ## Fix safety
    The batches hold the same values, dtypes, shapes and (with the default `collate_fn`) the same
    container types; only their host memory becomes page-locked. The fix is **safe** when:
    - the batches go to a device that is provably CUDA (with a `cuda`-or-`cpu` device, a machine
      without CUDA would now warn "pin_memory ... no accelerator is found": **unsafe**), by
      copies that run on every pass of the loop (a copy under `if use_cuda:` leaves a run
      without CUDA, which would now warn too: **unsafe**);
    - there is no `collate_fn`, by keyword or as the seventh argument (pinning rebuilds custom `Mapping`/`Sequence` batch types through
      their constructor and falls back to `dict`/`list` when it fails: **unsafe**);
    - the dataset provably hands out CPU tensors: a `TensorDataset` of CPU tensors, a
      `torchvision.datasets` dataset, or an instance of a class of this module (deriving only
      from `Dataset`) that places nothing on a device (`.cuda()`, `.to(...)`, `device=`). A GPU
      tensor cannot be pinned, and the loader would raise; a dataset syncfix cannot see (a
      parameter, another file's class) gets an **unsafe** fix (`extend-safe-fixes = ["SFX103"]`
      if your datasets never hand out GPU tensors);
    - no existing non-blocking copy of a batch (the flag by keyword or by position, in the loop
      or in a function of this module it calls) is followed by a write to that batch, and no
      blocking copy that SFX101 may make non-blocking in the same run is followed by one (here
      or in code the batch is passed to) (from pageable memory the driver staged the bytes at call time; from pinned memory the
      copy would read the new bytes: docs/semantics.md#copies-between-host-and-device). Such a loop gets a finding and no fix.
    A loader passed to a function counts as used only by that function's loops when the
    parameter it binds is used nowhere else there (but `len(loader)`); otherwise the fix is
    **unsafe**, as for any loader used outside the loops syncfix checked.
    `pin_memory` passed positionally or through `**kwargs` is left alone.

    **Host memory cost:** every batch in flight (`num_workers * prefetch_factor`, 2 per worker by
    default, plus the one being used) is copied once more into page-locked memory by the pin
    thread. Page-locked memory cannot be swapped; pinning gigabytes can starve the rest of the
    system, so keep batches and prefetching moderate.
    """

    WAITS_AT_FINDING = False  # the fix changes how a loader allocates, not a wait here
    CODE = "SFX103"
    NAME = "pin-loader-memory"
    MESSAGE = "DataLoader batches are copied to the GPU from pageable memory: set pin_memory=True"
    FIX = "sometimes"
    SAFETY = ("safe", "unsafe")
    TRIGGERS = ("DataLoader",)
    ONLY_WHERE_REPEATED = False  # a loader is built once; its batches are what repeat
    VALID = [
        # already pinned (or explicitly not)
        "import torch\nfrom torch.utils.data import DataLoader\ndef f(ds):\n"
        "    for x in DataLoader(ds, pin_memory=False):\n        x.cuda()\n",
        # batches stay on the CPU
        "from torch.utils.data import DataLoader\ndef f(ds):\n"
        "    for x in DataLoader(ds):\n        print(x.sum())\n",
    ]
    INVALID = [
        Invalid(
            "import torch\nfrom torch.utils.data import DataLoader, TensorDataset\ndef f():\n"
            "    ds = TensorDataset(torch.randn(64, 3), torch.randn(64))\n"
            "    for x, y in DataLoader(ds, batch_size=8):\n        x = x.cuda()\n",
            "import torch\nfrom torch.utils.data import DataLoader, TensorDataset\ndef f():\n"
            "    ds = TensorDataset(torch.randn(64, 3), torch.randn(64))\n"
            "    for x, y in DataLoader(ds, batch_size=8, pin_memory=True):\n        x = x.cuda()\n",
        ),
        # a dataset syncfix cannot see may hand out GPU tensors, which pinning rejects: unsafe
        Invalid(
            "from torch.utils.data import DataLoader\ndef f(ds):\n"
            "    for x, y in DataLoader(ds, batch_size=8):\n        x = x.cuda()\n",
            "from torch.utils.data import DataLoader\ndef f(ds):\n"
            "    for x, y in DataLoader(ds, batch_size=8, pin_memory=True):\n        x = x.cuda()\n",
            unsafe=True,
        ),
        # a custom collate_fn: unsafe
        Invalid(
            "from torch.utils.data import DataLoader\ndef f(ds, c):\n"
            "    for b in DataLoader(ds, collate_fn=c):\n        b.cuda()\n",
            "from torch.utils.data import DataLoader\ndef f(ds, c):\n"
            "    for b in DataLoader(ds, collate_fn=c, pin_memory=True):\n        b.cuda()\n",
            unsafe=True,
        ),
        # a non-blocking copy whose source is written afterwards: pinning would race
        Invalid(
            "from torch.utils.data import DataLoader\ndef f(ds):\n"
            "    for x in DataLoader(ds):\n        y = x.to('cuda', non_blocking=True)\n"
            "        x.mul_(2)\n",
            None,
        ),
    ]

    def visit_Module(self, node: cst.Module) -> None:
        self._loops: dict[cst.Call, list[cst.For]] = {}

    def visit_For(self, node: cst.For) -> None:
        for loader in self._loaders(node.iter):
            if self._unpinned(loader):
                self._loops.setdefault(loader, []).append(node)

    def leave_Module(self, original_node: cst.Module) -> None:
        # Decided per loader over *every* loop over it: pinning changes all of its batches.
        for loader, loops in self._loops.items():
            copies = [c for loop in loops for c in self._copies_of_batches(loop)]
            if copies:
                fix = self._fix(loader, loops, copies)
                message = self.MESSAGE.replace(": set", f" ({_where(self.analysis, copies)}): set")
                if all(d is Device.UNKNOWN for _, d in copies):
                    message = message.replace("to the GPU", "to a device syncfix cannot name (a GPU's, if it is one)")
                if fix is None:
                    message += (
                        " (no fix: a non-blocking copy in its loops is followed by a write to its "
                        "source, or CUDA streams are used; pinned memory would be read late)"
                    )
                self.report(loader, message, fix=fix)

    def _fix(
        self, loader: cst.Call, loops: list[cst.For], copies: list[tuple[cst.Call, Device]]
    ) -> Fix | None:
        a = self.analysis
        # An existing non-blocking copy stays correct only if nothing writes its source later; so
        # does a blocking one that SFX101 may make non-blocking in the same run (it judges the
        # batches pageable before this fix pins them), written again afterwards (here, or by
        # code it is passed to).
        nb_copies = [c for loop in loops for c in _non_blocking_copies(a, loop)]
        if (
            a.uses_streams
            or any(source_may_change(a, c, on_cuda=True) for c in nb_copies)
            or any(source_may_change(a, c, on_cuda=True) for c, _ in copies if _judged_pageable(a, c))
        ):
            return None
        new = append_kwarg(loader, "pin_memory", cst.Name("True"))
        guard = next((g for c, _ in copies if (g := _guard(a, c, loops)) is not None), None)
        reasons = [
            text
            for holds, text in (
                (self._escapes(loader, loops), "the loader is used outside the loops syncfix checked"),
                (
                    keyword(loader, "collate_fn") is not None or len(positional(loader)) > _COLLATE_POSITION,
                    "a custom collate_fn's batch type may not survive pinning",
                ),
                (
                    any(d is Device.CUDA_OR_CPU for _, d in copies),
                    "the device may be the CPU (pinning then warns that no accelerator is found)",
                ),
                (
                    any(d is Device.UNKNOWN for _, d in copies),
                    "syncfix cannot name the device, which may be the CPU or another accelerator "
                    "(the batches keep their values; pinning only helps a GPU's copies)",
                ),
                (
                    # mixup-cifar10's ``if use_cuda: inputs = inputs.cuda()``: a run that skips
                    # the copy (no CUDA) still pins, and warns
                    guard is not None,
                    f"a copy runs only under a condition (`{code(a, guard or loader)}`, line "
                    f"{a.positions[guard or loader].start.line}); where it does not, as on a machine "
                    "without CUDA, pinning warns that no accelerator is found",
                ),
                (
                    not self._dataset_on_cpu(loader),
                    "the dataset may hand out GPU tensors, which cannot be pinned",
                ),
            )
            if holds
        ]
        if reasons:
            return self.unsafe_fix(
                {loader: new},
                f"Set pin_memory=True (unsafe: {'; '.join(reasons)}; "
                '`extend-safe-fixes = ["SFX103"]` in [tool.syncfix] if that never happens)',
            )
        return self.safe_fix({loader: new}, "Set pin_memory=True")

    def _dataset_on_cpu(self, loader: cst.Call) -> bool:
        """Does the dataset provably hand out CPU tensors (a GPU tensor cannot be pinned: the
        loader would raise)? A ``TensorDataset`` of CPU tensors, a ``torchvision.datasets``
        dataset, or an instance of a class of this module, deriving only from ``Dataset``, that
        places nothing on a device (``.cuda()``, ``.to(...)``, ``device=``)."""
        args = positional(loader)
        dataset = args[0].value if args else getattr(keyword(loader, "dataset"), "value", None)
        if isinstance(dataset, cst.Name):  # ``ds = TensorDataset(...)`` before the loader
            values = self.analysis.reaching_values(dataset) or []
            return bool(values) and all(isinstance(v, cst.Call) and self._made_on_cpu(v) for v in values)
        return isinstance(dataset, cst.Call) and self._made_on_cpu(dataset)

    def _made_on_cpu(self, dataset: cst.Call) -> bool:
        a = self.analysis
        name = a.callee(dataset) or ""
        if name.startswith("torchvision.datasets."):
            return True
        if name in ("torch.utils.data.TensorDataset", "torch.utils.data.dataset.TensorDataset"):
            parts = [arg.value for arg in dataset.args]
            return bool(parts) and not any(arg.star for arg in dataset.args) and all(
                a.value(p).is_tensor and a.value(p).device is Device.CPU for p in parts
            )
        if not isinstance(dataset.func, cst.Name):
            return False
        for stmt in a.module.body:
            if isinstance(stmt, cst.ClassDef) and stmt.name.value == dataset.func.value:
                bases = [dotted_name(b.value) or "" for b in stmt.bases]
                if not all(b.rsplit(".", 1)[-1] in ("Dataset", "IterableDataset", "object") for b in bases):
                    return False  # inherited methods syncfix does not read here
                methods = [m for m in stmt.body.body if isinstance(m, cst.FunctionDef)]
                return not any(_places_on_device(a, m) for m in methods)
        return False

    def _escapes(self, loader: cst.Call, loops: list[cst.For]) -> bool:
        """Is the loader (through its name) used anywhere but as the iterable of ``loops``?"""
        a = self.analysis
        parent = a.parent(loader)
        if any(loader is loop.iter or _within(a, loader, loop.iter) for loop in loops):
            return False  # ``for x in DataLoader(...)``: nothing else can see it
        if not isinstance(parent, cst.Assign) or len(parent.targets) != 1:
            return True
        target = parent.targets[0].target
        if not isinstance(target, cst.Name):
            return True
        scope = a.scope(target)
        if scope is None:
            return True
        for asg in scope.assignments[target.value]:
            for access in asg.references:
                if _only_iterated(a, access.node, loops) or self._passed_to_loops(access.node, loops):
                    continue
                return True
        return False

    def _passed_to_loops(self, node: cst.CSTNode, loops: list[cst.For]) -> bool:
        """Is ``node`` the argument a call binds to a parameter that its function uses only as
        the iterable of ``loops`` (``train(net, train_loader)`` with ``for x, y in trainloader``)?"""
        a = self.analysis
        for loop in loops:
            name = _iterated_name(loop.iter)
            if name is None:
                continue
            param = _only_parameter(a, name)
            if param is None or not any(arg is node for arg in a.passed_arguments(param) or ()):
                continue
            scope = a.scope(name)
            if scope is not None and all(
                _only_iterated(a, ref.node, loops)
                for asg in scope.assignments[name.value] for ref in asg.references
            ):
                return True
        return False

    def _loaders(self, expr: cst.BaseExpression, hops: int = 2) -> list[cst.Call]:
        """The DataLoader(...) calls a ``for`` iterates over (through enumerate/zip/tqdm/iter),
        or, where it iterates a parameter, those this module's calls of its function pass
        (``train(net, train_loader, ...)`` with the loop in ``train``), a few calls deep."""
        a = self.analysis
        if isinstance(expr, cst.IfExp):  # ``tqdm(loader) if verbose else loader``: either
            return [call for side in (expr.body, expr.orelse) for call in self._loaders(side, hops)]
        if isinstance(expr, cst.Name):
            param = _only_parameter(a, expr)
            if param is not None:
                passed = a.passed_arguments(param) if hops > 0 else None
                return [call for arg in passed or () for call in self._loaders(arg, hops - 1)]
            values = a.reaching_values(expr)
            if values is None or len(values) != 1 or not isinstance(values[0], cst.BaseExpression):
                return []
            expr = values[0]
        if not isinstance(expr, cst.Call):
            return []
        name = a.callee(expr)
        if name in _DATALOADER:
            return [expr]
        if name in _WRAPPERS:
            return [call for arg in positional(expr) for call in self._loaders(arg.value, hops)]
        return []

    def _unpinned(self, loader: cst.Call) -> bool:
        return (
            keyword(loader, "pin_memory") is None
            and not any(arg.star for arg in loader.args)
            and len(positional(loader)) <= _PIN_POSITION
        )

    def _copies_of_batches(self, loop: cst.For) -> list[tuple[cst.Call, Device]]:
        """Host-to-CUDA copies of this loop's batches, with the device each targets."""
        a = self.analysis
        targets = {n.value for n in _names(loop.target)}
        found: list[tuple[cst.Call, Device]] = []

        class V(cst.CSTVisitor):
            def visit_FunctionDef(self, n: cst.FunctionDef) -> bool:
                return False

            def visit_For(self, n: cst.For) -> bool:
                # a loop over another loader's batches (semseg's validation inside its training
                # loop) copies those, not this loader's; a loop over a part of this batch does,
                # and its names are parts of the batch (Cutie's ``for k, v in data.items():
                # data[k] = v.cuda(non_blocking=True)``)
                over_batch = any(isinstance(x, cst.Name) and x.value in targets for x in a.structure.within(n.iter, cst.Name))
                if over_batch:
                    targets.update(x.value for x in _names(n.target))
                return over_batch

            def visit_Call(self, call: cst.Call) -> None:
                func = call.func
                if not isinstance(func, cst.Attribute) or func.attr.value not in ("cuda", "to"):
                    return
                receiver = func.value
                value = a.value(receiver)
                if value.kind is not Kind.BATCH and root_name(receiver) not in targets:
                    return
                if value.is_tensor and value.device is Device.CUDA:
                    return  # the batch's copy, copied again (melgan's ``netD(x_t.cuda())``): no host copy
                device = Device.CUDA if func.attr.value == "cuda" else a.to_target(call)
                if device in (Device.CUDA, Device.CUDA_OR_CPU) or device is Device.UNKNOWN and _names_a_device(call):
                    found.append((call, device))

        walk(loop.body, V())
        return found


def _names_a_device(call: cst.Call) -> bool:
    """``x.to(device)``, ``x.to(args.device)``, ``x.to(device=cfg.DEVICE)``: a ``.to`` whose
    device argument is named as one (not a dtype, not another tensor)."""
    dev = keyword(call, "device") or next(iter(positional(call)), None)
    if dev is None:
        return False
    name = dev.value.value if isinstance(dev.value, cst.Name) else dev.value.attr.value if isinstance(dev.value, cst.Attribute) else ""
    return "device" in name.lower()


def _only_iterated(a, node: cst.CSTNode, loops: list[cst.For]) -> bool:
    """Is this use of a loader the iterable of one of ``loops``, or ``len(loader)`` (which reads
    no batch)?"""
    if any(_within(a, node, loop.iter) for loop in loops):
        return True
    arg = a.parent(node)
    call = a.parent(arg) if isinstance(arg, cst.Arg) else None
    return isinstance(call, cst.Call) and a.callee(call) == "builtins.len"


def _iterated_name(expr: cst.BaseExpression) -> cst.Name | None:
    """The name a loop iterates, through ``enumerate(...)``, ``tqdm(...)`` and the like."""
    while isinstance(expr, cst.Call) and expr.args and expr.args[0].keyword is None:
        expr = expr.args[0].value
    return expr if isinstance(expr, cst.Name) else None


def _only_parameter(a, name: cst.Name) -> cst.Param | None:
    """The parameter ``name`` reads, where its function binds the name nowhere else."""
    scope = a.scope(name)
    if scope is None or name.value not in scope:
        return None
    bound = list(scope.assignments[name.value])
    node = getattr(bound[0], "node", None) if len(bound) == 1 else None
    return node if isinstance(node, cst.Param) else None


def _guard(a, call: cst.Call, loops: list[cst.For]) -> cst.BaseExpression | None:
    """The condition under which ``call`` runs inside its loop (of an ``if`` whose body or
    ``else`` holds it, of ``a if c else b``, the left of ``and``/``or``), or None."""
    child: cst.CSTNode = call
    for anc in a.ancestors(call):
        if any(anc is loop for loop in loops) or isinstance(anc, cst.FunctionDef):
            return None
        if isinstance(anc, (cst.If, cst.IfExp)) and child is not anc.test:
            return anc.test
        if isinstance(anc, cst.BooleanOperation) and child is anc.right:
            return anc.left
        child = anc
    return None


def _where(a, copies: list[tuple[cst.Call, Device]]) -> str:
    """Where the batches are copied, for the message: the fix pays there, every batch."""
    lines = sorted({a.positions[call].start.line for call, _ in copies})
    shown = ", ".join(str(n) for n in lines[:3]) + (", ..." if len(lines) > 3 else "")
    return f"line {shown}" if len(lines) == 1 else f"lines {shown}"


def _names(target: cst.BaseExpression):
    if isinstance(target, cst.Name):
        yield target
    elif isinstance(target, (cst.Tuple, cst.List)):
        for el in target.elements:
            yield from _names(el.value)


def _within(a, node: cst.CSTNode, container: cst.CSTNode) -> bool:
    return node is container or any(anc is container for anc in a.ancestors(node))


def _judged_pageable(a, copy: cst.Call) -> bool:
    """May SFX101 make this blocking copy non-blocking as a copy of pageable or fresh memory
    (whatever is written to it later, from pageable memory)?"""
    assert isinstance(copy.func, cst.Attribute)
    source = a.value(copy.func.value)
    return source.fresh or source.memory is Memory.PAGEABLE


def _non_blocking_copies(a, loop: cst.For) -> list[cst.Call]:
    """Every ``.to(..., non_blocking=True)`` / ``.cuda(non_blocking=True)`` (the flag by keyword
    or by position) in the loop body, and in this module's functions it calls (and they call)."""
    found: list[cst.Call] = []
    todo: list[cst.CSTNode] = [loop.body]
    seen: set[cst.CSTNode] = set()
    while todo:
        node = todo.pop()
        if node in seen:
            continue
        seen.add(node)
        for call in a.nodes_within(node, cst.Call):
            func = call.func
            if isinstance(func, cst.Attribute) and func.attr.value in ("to", "cuda"):
                if copies_without_waiting(a, call):
                    found.append(call)
            callee = a.local_function(func)
            if callee is not None:
                todo.append(callee)
    return found


