"""SFX303: ``[v.item() for v in x]`` → ``x.tolist()``: one transfer instead of one per element."""

from __future__ import annotations

import libcst as cst

from syncfix.analysis import Device, HostRead, Kind, target_names
from syncfix.rules import Invalid, Rule
from syncfix.walk import walk

from ._stacked_reads import dict_values, host_dict, items_loop
from ._support import INDEXED_ELEMENTS, code, indexed_base, unplaced_message, unplaced_tensor


class PerElementReads(Rule):
    """
    ## What it finds
    A host read per element of a GPU tensor or of a collection of GPU tensors: a list
    comprehension `[v.item() for v in x]`, `[float(t) for t in (loss, acc)]`, or a `for` loop
    whose body reads its loop variable with `.item()`/`float()`/`int()`/`bool()`/`.tolist()`.
    Where the code repeats, a comprehension that reads each element of values syncfix cannot name
    with `.item()` (`[x.item() for x in gathered]`, or a dict comprehension's keys: `{t["id"].item():
    out for t, out in zip(targets, results)}`) is reported too, without a fix, and so is
    one that indexes each element out of one tensor and reads it alone (`[passk[k - 1].item()
    for k in ks]`, `[float(t[i, :2].sum()) for i in idx]`): which single read replaces them
    depends on the indices, so the message says to read the tensor once (`passk.tolist()`) and
    index the list, or to gather the elements with one index tensor. So is
    `all(t)`/`any(t)` of a tensor, which iterates it and reads each element with `bool()` until
    the answer is known (`bool(t.all())` reads a 1-D tensor once). So is, where the code
    repeats, `map(lambda t: t.item(), (a, b, c))`, a read per element as in a comprehension
    (a diffusion sampler's `sigma, sigma_next, gamma = map(lambda t: t.item(), ...)` every
    step), without a fix.

    ## Why it costs
    Each read is a device-to-host copy plus a full stream sync: a comprehension over N elements
    syncs N times. One `x.tolist()` (or `torch.stack([...]).tolist()`) costs one (`tolist()`
    is one sync at any size: docs/semantics.md#host-reads).

    ## Example
    ```python
    scores = [s.item() for s in logits.softmax(-1).max(-1).values.flatten()]
    ```

    ## Use instead
    ```python
    scores = logits.softmax(-1).max(-1).values.flatten().tolist()
    ```

    ## Fix safety
    The fix is **safe** only for a list comprehension with one `for` and no `if`, whose element is
    a read of the loop variable itself, over a tensor that is provably **1-D** (`flatten()`,
    `view(-1)`, `reshape(-1)`, `torch.arange`...): iterating a 1-D tensor yields 0-d tensors, and
    `x.tolist()` gives, element for element, the Python scalar `item()` gives (same type for every
    dtype, an empty list for an empty tensor). `float(v)`/`int(v)`/`bool(v)` reads become
    `[float(v) for v in x.tolist()]` unless the dtype kind already gives that type; the conversion
    of the Python scalar equals the tensor conversion for real dtypes, so the dtype kind must be
    provably floating, integer or bool (complex tensors convert differently). A tensor of
    unknown rank gets no safe fix: iterating a 2-D tensor gives rows, whose `item()` raises while
    `tolist()` would return nested lists. For `[v.item() for v in x]` over a named tensor of
    unknown rank the fix is **unsafe**: `x.reshape(len(x)).tolist()` gives the same values and types
    when each row holds one element (`tokens` of shape `[B, 1]`) and raises a `RuntimeError`
    where a row holds more, as `item()` does, but with another message.
    A `for` loop over a provably 1-D tensor whose variable is used only as `v.item()` (in the
    loop and anywhere else in its scope), with no `else` and nothing in the loop that may write
    the tensor (iterating a tensor yields views of it, read as the loop goes; `tolist()` reads it
    once, up front), is fixed **safely**: `for v in x.tolist():` with each `v.item()` read as `v`
    (`x.nonzero(as_tuple=True)[0]` and `torch.where(mask)[0]` are 1-D).
    Comprehensions over a list of separate tensors, and other `for` loops, get a safe fix only
    where the elements provably share dtype, shape and device: `xs` is bound once, to
    `[e for _ in it]` where `e` is a fresh tensor made without effects and without the loop's
    variable (so every element comes from the same inputs: `torch.zeros(1, dtype=torch.int32,
    device=t.device)`, `torch.zeros(n).to(t)`), and the list is used nowhere else but as the output
    list of `torch.distributed.all_gather` (without `async_op`), which writes into its tensors in
    place. Then the stack below is **safe** when `e` provably holds one element, and the cat below
    when `e` is provably 1-D (a size that is an int, a count, or the `max` of such a list read
    back) and each part is the tensor or a slice of it. In code that repeats, `[x.item() for x in
    xs]` over a name bound only to any other list built in the function (a display or a
    comprehension) gets an **unsafe** fix,
    `torch.stack(xs).reshape(len(xs)).tolist() if xs else []`: it rests on the likely fact that
    such a list holds tensors of one element, one dtype and one device (what `all_gather` fills);
    an empty list keeps giving `[]`. Likewise `v = [x.item() for y, n in zip(ys, ns) for x in y[:n]]`
    over such a list `ys` gets an **unsafe** fix that reads every part with one `torch.cat`:
    `v_parts = [y[:n].reshape(-1) for y, n in zip(ys, ns)]` then
    `v = torch.cat(v_parts).tolist() if v_parts else []`. Same values, types and order when the
    tensors share a dtype and a device and each element read is one value; where an element holds
    more, the original raises and the rewrite reads them all.
    In code that repeats, a dict comprehension over `d.items()` (`d` a plain name: an attribute
    may be a property, and the fix reads `d` three times) whose value reads its value variable
    once, with `.item()` after methods that keep the values
    (`detach()`, `float()`, `cpu()`...; `sum()`/`mean()` only before any `cpu()`), gets an
    **unsafe** fix: `{k: v / n for k, v in zip(d.keys(), torch.stack([v.detach().reshape(())
    for v in d.values()]).tolist() if d else [])}`. `cpu()` is dropped from the stacked values
    (the stack goes to the host once; the copy is exact). It rests on the likely fact that the
    values are one-element tensors of one dtype on one device, as a dict of losses or metrics is,
    and that `d` is a dict (its `keys()` and `values()` in the order of `items()`; a mapping made
    by a `TensorDict` class, or a method of one, gets no fix: its truth value raises): mixed dtypes
    would promote (an int count would come back a float), tensors on several devices cannot be
    stacked (OLMo's optimizer metrics hold a `clipping_rate` made on the CPU among GPU norms:
    there the stack raises where the reads did not; read the dict's producer before applying), and
    the rest of each item's expression now runs after every value is read. Each
    value may have its own one-element shape (`[]` or `[1]`). A read inside a lambda or a nested
    comprehension is not moved (it runs later, or not at all). A dict display whose values are
    provably on the CPU is not reported; one with any value on the host, or with tensors of
    provably different dtype kinds, gets no fix. A `for k, v in d.items():` loop (no `else`)
    whose body reads `v` the same way, once, gets the same **unsafe** fix: the loop iterates the
    stack's values and the read becomes `v`, when `v` is bound by that loop only and used nowhere
    else (after the loop it would hold a number, not a tensor); the body then runs after every
    value is read. Where later statements of the body (or code after the loop) use `v` too, the
    loop keeps it and names the read: `for (k, v), v_mean in zip(d.items(), torch.stack([...])
    .tolist() if d else [])`. In both loop forms nothing that could write the values may run
    before the read in the body, since the read now runs first: no use of `v` or of `d`, and no
    call, in or before the read's statement (`dist.all_reduce(d[k])`, `v.mul_(2)`), and no
    `yield` or `await` in the body (the caller runs between reads). The statements after the
    read run before the next value's read too: there, no use of `d` (`for t in d.values():
    t.zero_()`) and no in-place write through any name; that a function they call writes none
    of the values is the fix's likely fact, which its text states. Inside a `try` whose handler
    would catch an error a read surfaces, a comprehension keeps its fix: the merged read still
    waits there, in the same expression, for all the work its reads waited for. A loop there
    gets none: read once before the loop, its values no longer make the loop wait between steps,
    so an error from a step's work would surface later. SFX301 merges reads of named tensors
    written out one by one.
    """

    CODE = "SFX303"
    NAME = "per-element-reads"
    MESSAGE = "One host read per element: one sync each"
    FIX = "sometimes"
    SAFETY = ("safe", "unsafe")
    TRIGGERS = (".item(", ".tolist(", "float(", "int(", "bool(", "all(", "any(")
    VALID = [
        # one read of a whole tensor
        "import torch\nx = torch.arange(5, device='cuda')\nvals = x.tolist()\n",
        # CPU tensor
        "import torch\nx = torch.arange(5)\nvals = [v.item() for v in x]\n",
    ]
    INVALID = [
        Invalid(
            "import torch\nx = torch.randn(4, 3, device='cuda')\nvals = [v.item() for v in x.flatten()]\n",
            "import torch\nx = torch.randn(4, 3, device='cuda')\nvals = x.flatten().tolist()\n",
        ),
        # rank unknown: rows would be read, and tolist() would nest
        Invalid(
            "import torch\ndef f(x: torch.Tensor):\n    return [v.item() for v in x.cuda()]\n",
            None,
        ),
    ]

    def visit_Call(self, node: cst.Call) -> None:
        """``all(t)``/``any(t)`` of a tensor: Python iterates it, one ``bool()`` read (a sync)
        per element until the answer is known (llm.c's ``if all(eos_reached):`` every token)."""
        func = node.func
        if isinstance(func, cst.Name) and func.value == "map" and len(node.args) == 2:
            self._mapped_reads(node)
            return
        if not (isinstance(func, cst.Name) and func.value in ("all", "any") and len(node.args) == 1):
            return
        arg = node.args[0]
        a = self.analysis
        if arg.star or arg.keyword is not None or a.callee(node) not in ("builtins.all", "builtins.any"):
            return
        v = a.value(arg.value)
        if v.is_tensor and v.device in (Device.CUDA, Device.CUDA_OR_CPU):
            where = ""
        elif unplaced_tensor(a, arg.value):
            where = unplaced_message(a, node)
        else:
            return
        name = func.value
        self.report(
            node,
            f"{self.MESSAGE}: `{name}(t)` reads a tensor's elements one by one; `bool(t.{name}())` "
            f"(for a 1-D tensor) reads once{where}; no fix: syncfix rewrites only comprehensions "
            "and loops",
        )

    def _mapped_reads(self, node: cst.Call) -> None:
        """``map(lambda t: t.item(), (a, b, c))`` where code repeats: a read per element, as in
        a comprehension (imagen's sampler reads ``sigma, sigma_next, gamma`` so every step)."""
        a = self.analysis
        fn, items = node.args[0].value, node.args[1].value
        if (
            a.callee(node) != "builtins.map"
            or not isinstance(fn, cst.Lambda)
            or len(fn.params.params) != 1
            or not isinstance(fn.body, cst.Call)
            or not a.is_hot(node)
        ):
            return
        read = a.host_read(fn.body) or a.likely.host_read(fn.body)
        param = fn.params.params[0].name.value
        if read is None or not (isinstance(read.receiver, cst.Name) and read.receiver.value == param):
            return
        elements = items.elements if isinstance(items, (cst.Tuple, cst.List)) else None
        if elements is not None and any(
            isinstance(el, cst.StarredElement) or a.likely.value(el.value).device is Device.CPU for el in elements
        ):
            return
        if elements is None and (a.likely.value(items).device is Device.CPU or _host_rows(a, items)):
            return
        self.report(node, f"{self.MESSAGE}{_MAYBE_GPU}; no fix: {_MAPPED}")

    def visit_ListComp(self, node: cst.ListComp) -> None:
        self._comprehension(node)

    def visit_GeneratorExp(self, node: cst.GeneratorExp) -> None:
        self._comprehension(node, fixable=False)

    def visit_SetComp(self, node: cst.SetComp) -> None:
        self._comprehension(node, fixable=False)

    def visit_DictComp(self, node: cst.DictComp) -> None:
        self._comprehension(node, fixable=False)

    def visit_For(self, node: cst.For) -> None:
        a = self.analysis
        if isinstance(node.target, cst.Tuple):
            loop = items_loop(a, node)
            if loop is not None:
                value_read, stacked = loop
                message = f"{self.MESSAGE}: each value of the mapping is read in turn"
                self.report(value_read, message, fix=self.unsafe_fix(stacked, _DICT_FIX))
                return
        if not isinstance(node.target, cst.Name) or a.value(node.iter).kind is not Kind.TENSOR:
            return  # per-element reads of a tensor's rows; a loader's batches are SFX302's
        var = node.target.value
        found: list[HostRead] = []

        class V(cst.CSTVisitor):
            def visit_Call(self, call: cst.Call) -> None:
                read = a.host_read(call)
                if read is not None and _reads_var(read, var) and a.enclosing_loop(call) is node:
                    found.append(read)

            def visit_FunctionDef(self, n: cst.FunctionDef) -> bool:
                return False

        walk(node.body, V())
        found = [r for r in found if a.value(r.receiver).device is not Device.CPU]
        if not found:
            return
        message = (
            f"{self.MESSAGE}: `{var}` is read on every iteration; read the whole tensor "
            "once before the loop (`.tolist()`, or `torch.stack([...]).tolist()`)"
        )
        changes = self._loop_fix(node, var, found)
        if changes is None:
            for read in found:
                self.report(read.node, message)
            return
        fix = self.safe_fix(changes, "Read the whole tensor with one .tolist() before the loop")
        self.report(found[0].node, message, fix=fix)
        for read in found[1:]:
            self.report(read.node, f"{message}; fixed together with the first read")

    def _loop_fix(self, node: cst.For, var: str, reads: list[HostRead]) -> dict | None:
        """``for v in x: ... v.item() ...`` -> ``for v in x.tolist(): ... v ...`` when that is
        exact: ``x`` provably a 1-D tensor, ``v`` used only as ``v.item()`` (in this body and
        anywhere else in its scope), and nothing in the loop may write ``x`` while it runs
        (iterating a tensor yields views of it; ``tolist()`` reads it once, up front)."""
        a = self.analysis
        if node.orelse is not None or node.asynchronous is not None or not a.is_one_dim(node.iter):
            return None
        receivers = {id(r.receiver) for r in reads}
        if not all(r.form == "item" and isinstance(r.receiver, cst.Name) for r in reads):
            return None
        scope = a.scope(node.target)
        if scope is None:
            return None
        bindings = list(scope.assignments[var])
        if len(bindings) != 1 or getattr(bindings[0], "node", None) is not node.target:
            return None
        # every read of the binding, nested scopes included (a closure sees ``v`` later)
        if any(id(acc.node) not in receivers for acc in bindings[0].references):
            return None  # used other than as ``v.item()``, or after the loop
        for stmt in _statements(node.body):
            fx = a.effects(stmt)
            if fx.inplace or fx.may_mutate_anything:
                return None
        changes: dict = {node.iter: cst.Call(cst.Attribute(_paren(node.iter), cst.Name("tolist")))}
        for r in reads:
            changes[r.node] = cst.Name(var)
        return changes

    def _comprehension(self, node, fixable: bool = True) -> None:
        a = self.analysis
        if isinstance(node, cst.DictComp) and a.is_hot(node):
            items = node.for_in.iter
            if isinstance(items, cst.Call) and isinstance(items.func, cst.Attribute) and host_dict(a, items.func.value):
                return  # the values of a dict of CPU tensors: nothing waits
            values = dict_values(a, node)
            if values is not None:
                self.report(node, fix=self.unsafe_fix({node: values[1]}, _DICT_FIX), wait_stays=True)
                return
        elt = node.value if isinstance(node, cst.DictComp) else node.elt
        key = node.key if isinstance(node, cst.DictComp) else None
        if not isinstance(elt, cst.Call) and isinstance(key, cst.Call) and (a.host_read(key) or a.likely.host_read(key)):
            elt = key  # DETR's ``{target["image_id"].item(): output for ...}``: read per key
        comp = node.for_in
        if not isinstance(elt, cst.Call):
            self._read_inside(node, elt)
            return
        read = a.host_read(elt)
        if read is None and a.is_hot(node):
            # the likely view: what is read with ``.item()`` per element, every step, is a tensor
            read = a.likely.host_read(elt)
            if read is not None and _var_of(node, read) is None:
                self._indexed(node, read)
                return
            if read is not None and (comp_for := _var_of(node, read)) is not None:
                if a.likely.value(read.receiver).device is not Device.CPU and not _host_rows(a, comp_for.iter):
                    stacked = self._stacked_list(node, read) if fixable else None
                    catted = self._catted_parts(node, read) if fixable and stacked is None else None
                    if stacked is not None:
                        stack, proven = stacked
                        fix = self.safe_fix if proven else self.unsafe_fix
                        self.report(node, fix=fix({node: stack}, _STACK_SAFE if proven else _STACK_FIX), wait_stays=True)
                    elif catted is not None:
                        changes, proven = catted
                        fix = self.safe_fix if proven else self.unsafe_fix
                        self.report(node, fix=fix(changes, _CAT_SAFE if proven else _CAT_FIX), wait_stays=True)
                    elif a.torch_alias_at(node) is None:
                        self.report(node, f"{self.MESSAGE}; no fix: {_NO_TORCH_NAME}")
                    else:
                        self.report(node, f"{self.MESSAGE}{_MAYBE_GPU}; no fix: {_UNKNOWN_ELEMENTS}")
                return
        if read is not None and _var_of(node, read) is None and self._indexed(node, read):
            return
        if read is None:
            return
        if not isinstance(comp.target, cst.Name):
            # ``{k: v.item() for k, v in d.items()}`` of a dict of GPU tensors syncfix places
            if _var_of(node, read) is not None and a.value(read.receiver).device is not Device.CPU:
                mixed = a.dtype_kind(read.receiver) is None
                self.report(node, f"{self.MESSAGE}; no fix: {_MIXED_DTYPES}" if mixed else self.MESSAGE)
            return
        if not _reads_var(read, comp.target.value):
            if _var_of(node, read) is not None and a.value(read.receiver).device is not Device.CPU:
                self.report(node, self.MESSAGE)  # the element of an inner ``for``
            return
        if a.value(read.receiver).device is Device.CPU:
            return
        plain = read.receiver is not None and isinstance(read.receiver, cst.Name)
        source = comp.iter
        if not (fixable and plain and comp.inner_for_in is None and not comp.ifs and not comp.asynchronous):
            self.report(node, self.MESSAGE)
            return
        if not a.is_tensor(source) or a.value(source).device is Device.CPU or not a.is_one_dim(source):
            likely = a.likely
            if (
                read.form == "item"
                and isinstance(source, cst.Name)
                and likely.is_tensor(source)
                and likely.value(source).device is not Device.CPU
            ):
                # rows of one element each (``tokens`` of shape [B, 1]): ``reshape(len(x))``
                # keeps every value and type, and still raises where a row holds more
                rows = cst.parse_expression(f"{source.value}.reshape(len({source.value})).tolist()")
                self.report(node, fix=self.unsafe_fix({node: rows}, _ROWS_FIX), wait_stays=True)
                return
            self.report(node, f"{self.MESSAGE}; no fix: the iterated tensor is not provably 1-D")
            return
        kind = a.dtype_kind(source)
        if read.form in ("float", "int", "bool") and kind is None:
            self.report(node, f"{self.MESSAGE}; no fix: the dtype is not provably real")
            return
        tolist = cst.Call(cst.Attribute(_paren(source), cst.Name("tolist")))
        new: cst.BaseExpression = tolist
        if read.form in ("float", "int", "bool") and kind != read.form:
            var = comp.target
            new = node.with_changes(for_in=comp.with_changes(iter=tolist), elt=elt.with_changes(args=[cst.Arg(var)]))
        self.report(node, fix=self.safe_fix({node: new}, "Read the whole tensor with one .tolist()"), wait_stays=True)


    def _stacked_list(self, node: cst.ListComp, read: HostRead) -> tuple[cst.BaseExpression, bool] | None:
        """``[x.item() for x in xs]`` where ``xs`` is a name bound only to a list built here (a
        display or a comprehension): ``torch.stack(xs).reshape(len(xs)).tolist() if xs else []``,
        and whether it is proven exact (a list of alike one-element tensors)."""
        a = self.analysis
        comp, source, torch = node.for_in, node.for_in.iter, a.torch_alias_at(node)
        if (
            torch is None
            or read.form != "item"
            or not isinstance(source, cst.Name)
            or not isinstance(comp.target, cst.Name)
            or not isinstance(read.receiver, cst.Name)
            or read.receiver.value != comp.target.value
            or comp.inner_for_in is not None
            or comp.ifs
            or comp.asynchronous
        ):
            return None
        bound = a.reaching_values(source)
        if not bound or not all(isinstance(v, (cst.List, cst.ListComp)) for v in bound):
            return None
        kinds = {
            a.dtype_kind(el.value) for v in bound if isinstance(v, cst.List) for el in v.elements
            if isinstance(el, cst.Element)
        }
        if len(kinds - {None}) > 1:
            return None  # provably mixed dtypes (a float loss and an int count): stacking promotes
        xs = source.value
        new = cst.parse_expression(f"{torch}.stack({xs}).reshape(len({xs})).tolist() if {xs} else []")
        if not isinstance(a.parent(node), (cst.Assign, cst.AnnAssign, cst.Return, cst.Arg, cst.Element)):
            new = _paren(new)  # ``[...] + other`` must not become ``... else [] + other``
        elt = a.uniform_list_element(source, node)
        return new, elt is not None and a.one_element_shape(elt) is not None

    def _catted_parts(self, node, read: HostRead) -> tuple[dict, bool] | None:
        """``v = [x.item() for y, n in zip(ys, ns) for x in y[:n]]``, where ``ys`` is a name bound
        only to lists of tensors built here: one ``torch.cat`` of the parts, one ``.tolist()``::

            v_parts = [y[:n].reshape(-1) for y, n in zip(ys, ns)]
            v = torch.cat(v_parts).tolist() if v_parts else []

        Proven exact when ``ys`` is a list of alike 1-D tensors and each part is ``y`` or a slice
        of it: every element read is then one value, and the parts share a dtype."""
        a = self.analysis
        outer, torch = node.for_in, a.torch_alias_at(node)
        inner = outer.inner_for_in if isinstance(node, cst.ListComp) else None
        stmt = a.statement_of(node)
        assign = a.parent(node)
        if (
            torch is None
            or inner is None
            or inner.inner_for_in is not None
            or outer.ifs
            or inner.ifs
            or outer.asynchronous
            or inner.asynchronous
            or read.form != "item"
            or not isinstance(inner.target, cst.Name)
            or not isinstance(read.receiver, cst.Name)
            or read.receiver.value != inner.target.value
            or not isinstance(assign, cst.Assign)
            or len(assign.targets) != 1
            or not isinstance(assign.targets[0].target, cst.Name)
            or not isinstance(stmt, cst.SimpleStatementLine)
            or len(stmt.body) != 1
        ):
            return None
        part = inner.iter
        base = part.value if isinstance(part, cst.Subscript) else part
        if not isinstance(base, cst.Name) or inner.target.value in a.effects(part).reads:
            return None
        lists = _zipped_source(outer, base.value)
        if lists is None:
            return None
        bound = a.reaching_values(lists)
        if not bound or not all(
            isinstance(v, cst.ListComp) and a.likely.is_tensor(v.elt)
            or isinstance(v, cst.List) and all(a.likely.is_tensor(e.value) for e in v.elements)
            for v in bound
        ):
            return None  # the iterated values are tensors only where the lists are built here
        name = assign.targets[0].target.value
        parts = a.fresh_name(f"{name}_parts")
        target, source = a.module.code_for_node(outer.target), a.module.code_for_node(outer.iter)
        first = cst.parse_statement(
            f"{parts} = [{a.module.code_for_node(_paren(part))}.reshape(-1) for {target} in {source}]\n"
        ).with_changes(leading_lines=stmt.leading_lines)
        second = cst.parse_statement(f"{name} = {torch}.cat({parts}).tolist() if {parts} else []\n")
        second = second.with_changes(trailing_whitespace=stmt.trailing_whitespace)  # its comment
        elt = a.uniform_list_element(lists, node)
        sliced = part is base or (
            isinstance(part, cst.Subscript)
            and len(part.slice) == 1
            and isinstance(part.slice[0].slice, cst.Slice)
        )
        return {stmt: cst.FlattenSentinel([first, second])}, elt is not None and sliced and a.is_one_dim(elt)

    def _read_inside(self, node, elt: cst.BaseExpression) -> None:
        """A read of each element inside a larger expression (``{k: v.item() / n for k, v in
        d.items()}``), where code repeats: reported, no fix."""
        a = self.analysis
        if not a.is_hot(node):
            return
        found: list[HostRead] = []
        indexed: list[HostRead] = []  # reads of elements indexed out of one tensor

        class V(cst.CSTVisitor):
            def visit_Call(self, call: cst.Call) -> None:
                read = a.host_read(call) or a.likely.host_read(call)
                if read is not None and _var_of(node, read) is not None:
                    found.append(read)
                elif read is not None:
                    indexed.append(read)

            def visit_Lambda(self, n: cst.Lambda) -> bool:
                return False

        walk(elt, V())
        found = [r for r in found if not _host_rows(a, _var_of(node, r).iter)]  # type: ignore[union-attr]
        if any(a.likely.value(r.receiver).device is not Device.CPU for r in found):
            proven = all(a.is_tensor(r.receiver) for r in found)
            self.report(node, self.MESSAGE if proven else f"{self.MESSAGE}{_MAYBE_GPU}; no fix: {_UNKNOWN_ELEMENTS}")
            return
        for read in indexed:
            if self._indexed(node, read):
                return

    def _indexed(self, node, read: HostRead) -> bool:
        """``[t[k - 1].item() for k in ks]``, ``[out[i, :3].mean().item() for i in range(n)]``:
        each element indexed out of one tensor by the comprehension's variable and read alone.
        Reported (no fix: which indices, and so which one read replaces them, is the author's)
        where the tensor may be on the GPU; True when the read is of that form."""
        a = self.analysis
        base = _indexed_base(a, node, read)
        if base is None:
            return False
        value = a.value(read.receiver)
        proven = value.is_tensor and value.device in (Device.CUDA, Device.CUDA_OR_CPU)
        if not (a.is_tensor(base) or a.is_hot(node) and a.likely.is_tensor(base)):
            return True  # a list or a dict of tensors: no one read of it
        if not proven and (value.device is Device.CPU or a.likely.value(read.receiver).device is Device.CPU):
            return True
        name = code(a, base) if len(code(a, base)) <= 40 else "the tensor"
        where = "" if proven else _MAYBE_GPU
        self.report(node, f"{self.MESSAGE}{where}; no fix: {INDEXED_ELEMENTS.format(name)}")
        return True


_STACK_FIX = (
    "Read the list's tensors with one stack (unsafe: it rests on the likely fact that they share "
    "a device, a dtype and a shape, with one element each; mixed dtypes would promote, mixed "
    "shapes (`[1]` and `[]`) raise where `item()` does not, and a tensor of more elements raises "
    "a RuntimeError with another message, as `item()` does)"
)

_CAT_FIX = (
    "Read every part with one torch.cat (unsafe: it rests on the likely fact that the tensors of "
    "the lists share a device and a dtype, and that each element read is one value; mixed dtypes "
    "would promote, and where an element holds more values the original raises, the rewrite not)"
)

_STACK_SAFE = (
    "Read the list's tensors with one stack: one expression built them here, so they share a "
    "dtype, a device and a one-element shape, and only all_gather writes them (in place)"
)

_CAT_SAFE = (
    "Read every part with one torch.cat: one expression built the lists' tensors here, 1-D and "
    "of one dtype and device, and only all_gather writes them (in place)"
)

_NO_TORCH_NAME = (
    "no name here refers to torch (a parameter or local shadows it, or the module does not "
    "`import torch` at its top level), and the fix would call torch.stack"
)

# Elements syncfix cannot name may be CPU tensors (a tokenizer's output), which do not sync.
_MAYBE_GPU = " (if the tensors are on a GPU: syncfix cannot tell which device they are on)"
_MAPPED = (
    "`map` reads each element on the host; where they are tensors of one shape, dtype kind and "
    "device, `torch.stack([...]).tolist()` reads them with one transfer (or read them once, "
    "before the loop that repeats this)"
)
_MIXED_DTYPES = (
    "the values are not provably of one dtype kind, which one `torch.stack(...).tolist()` needs to "
    "read each back as it was (a bool beside floats would come back as 1.0)"
)
_UNKNOWN_ELEMENTS = (
    "syncfix cannot tell what the iterated values are; where they are tensors of one shape, dtype "
    "kind and device, `torch.stack([...]).tolist()` (or `torch.cat`) reads them with one transfer"
)


_DICT_FIX = (
    "Read the mapping's values with one stack (unsafe: it rests on the likely fact that the values "
    "read with `.item()` are one-element tensors of one dtype on one device, as a dict of losses "
    "is, in a plain dict; mixed dtypes would promote (an int count would come back a float), "
    "tensors on several devices cannot be stacked, the rest of each item's expression now "
    "runs after every value is read, and nothing the loop body calls after the read writes "
    "the other values)"
)

def _host_rows(a, iterable: cst.BaseExpression, *, follow: bool = True) -> bool:
    """``ids.cpu()``, ``zip(ids.cpu(), mask.cpu())``, ``enumerate(t.numpy())``, or a name bound
    only to one of these: what a loop takes from them is on the host, whatever ``ids`` was (the
    copy itself is SFX105's)."""
    callee = a.callee(iterable) if isinstance(iterable, cst.Call) else None
    if isinstance(iterable, cst.Call) and callee in ("builtins.zip", "builtins.enumerate"):
        parts = [arg.value for arg in iterable.args if arg.keyword is None and not arg.star]
        if callee == "builtins.enumerate":
            parts = parts[:1]  # ``start`` is a number
        return bool(parts) and all(_host_rows(a, p, follow=follow) for p in parts)
    if isinstance(iterable, cst.Name) and follow:
        values = a.reaching_values(iterable)
        return bool(values) and all(_host_rows(a, v, follow=False) for v in values)
    if not (isinstance(iterable, cst.Call) and isinstance(iterable.func, cst.Attribute)):
        return False
    method = iterable.func.attr.value
    return method in ("cpu", "numpy", "tolist") and not iterable.args or method == "to" and a.to_target(iterable) is Device.CPU


def _var_of(node, read: HostRead) -> cst.CompFor | None:
    """The ``for`` of the comprehension whose (plain name) target the read starts from."""
    comp = node.for_in
    while comp is not None:
        target = comp.target
        names = [e.value for e in target.elements] if isinstance(target, cst.Tuple) else [target]
        if any(isinstance(n, cst.Name) and _reads_var(read, n.value) for n in names):
            return comp
        comp = comp.inner_for_in
    return None


_ROWS_FIX = (
    "Read the whole tensor with one .tolist() (unsafe: the tensor's rank is unknown; where a row "
    "holds more than one element both versions raise a RuntimeError, with different messages)"
)


def _zipped_source(comp: cst.CompFor, name: str) -> cst.Name | None:
    """The list ``comp`` takes ``name`` from: ``for name in xs`` or ``for name, n in zip(xs, ns)``."""
    target, source = comp.target, comp.iter
    if isinstance(target, cst.Name):
        return source if target.value == name and isinstance(source, cst.Name) else None
    if not (
        isinstance(target, cst.Tuple)
        and isinstance(source, cst.Call)
        and isinstance(source.func, cst.Name)
        and source.func.value == "zip"
        and len(source.args) == len(target.elements)
        and not any(arg.keyword or arg.star for arg in source.args)
    ):
        return None
    for element, arg in zip(target.elements, source.args, strict=True):
        if isinstance(element.value, cst.Name) and element.value.value == name:
            return arg.value if isinstance(arg.value, cst.Name) else None
    return None


def _indexed_base(a, node, read: HostRead) -> cst.BaseExpression | None:
    """``t`` where the read's receiver indexes ``t`` with a comprehension variable."""
    names: set[str] = set()
    comp = node.for_in
    while comp is not None:
        names |= {n.value for n in target_names(comp.target)}
        comp = comp.inner_for_in
    return indexed_base(a, read.receiver, names)


def _statements(block: cst.BaseSuite) -> list[cst.CSTNode]:
    """The statements of a block (a compound one's effects cover its nested blocks)."""
    return list(block.body) if isinstance(block, cst.IndentedBlock) else [block]


def _reads_var(read: HostRead, var: str) -> bool:
    """Does the read's receiver start from the loop variable (``v``, ``v.grad.norm()``...)?"""
    expr = read.receiver
    while isinstance(expr, (cst.Attribute, cst.Subscript, cst.Call)):
        expr = expr.func if isinstance(expr, cst.Call) else expr.value
    return isinstance(expr, cst.Name) and expr.value == var


def _paren(expr: cst.BaseExpression) -> cst.BaseExpression:
    if isinstance(expr, (cst.BinaryOperation, cst.UnaryOperation, cst.Comparison, cst.IfExp, cst.BooleanOperation)):
        return expr.with_changes(lpar=[cst.LeftParen()], rpar=[cst.RightParen()])
    return expr
