"""SFX107: ``torch.cuda.empty_cache()`` where code repeats (reported, never rewritten)."""

from __future__ import annotations

import libcst as cst

from syncfix.rules import Invalid, Rule

from ._support import how_often

_EMPTY_CACHE = {
    "torch.cuda.empty_cache", "torch.cuda.memory.empty_cache", "torch.accelerator.empty_cache",
    "torch.accelerator.memory.empty_cache",
}


class EmptyCacheInLoop(Rule):
    """
    ## What it finds
    `torch.cuda.empty_cache()` (or `torch.accelerator.empty_cache()`) in a loop, in a step
    function (`forward`, `training_step`...) or in a function called from a loop. Not once an
    epoch (in a loop over `epoch`), where it costs one wait next to an epoch's work; not in an
    `except` handler: emptying the cache there, after an out-of-memory error, before a retry,
    runs only when an error was raised.

    ## Why it costs
    `empty_cache()` hands the caching allocator's unused blocks back to the driver. Freeing
    device memory (`cudaFree`) waits for all work queued on the GPU, so the call is a full
    synchronization whenever the cache holds a block, which in a training step it does: the
    step's activations were freed into it. Then the next iteration allocates the same blocks
    again from the driver (`cudaMalloc`), which is slow. It does not give
    PyTorch more memory: the allocator reuses its cache by itself; what it frees becomes
    visible to other processes and libraries (and in `nvidia-smi`). The synchronization is
    one the sync debug mode (`torch.cuda.set_sync_debug_mode`) does not report
    (docs/semantics.md#freeing-memory: 50 ms of queued work, 50.7 ms in the call on an H200).

    ## Example
    ```python
    for images, targets in loader:
        loss = model(images.cuda(), targets.cuda())
        loss.backward()
        opt.step()
        torch.cuda.empty_cache()
    ```

    ## Use instead
    ```python
    for images, targets in loader:
        loss = model(images.cuda(), targets.cuda())
        loss.backward()
        opt.step()
    torch.cuda.empty_cache()  # once, if another program needs the memory now
    ```
    If memory runs out only at some steps (fragmentation), the allocator's
    `PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True` usually helps without emptying the cache.

    ## Fix safety
    No fix: the call changes what memory the process holds, which other programs on the GPU
    see, and some code relies on it (several models taking turns on one GPU, a step that
    would otherwise run out of memory because of fragmentation). syncfix cannot tell, so it
    only reports.
    """

    CODE = "SFX107"
    NAME = "empty-cache-in-loop"
    MESSAGE = "Cache emptied where code repeats: `empty_cache()` waits for the GPU each time"
    FIX = "never"
    SAFETY = ()
    TRIGGERS = ("empty_cache",)
    VALID = [
        # once, after the loop
        "import torch\nfor _ in range(3):\n    pass\ntorch.cuda.empty_cache()\n",
        # after an out-of-memory error only
        "import torch\nfor x in xs:\n    try:\n        f(x)\n    except RuntimeError:\n"
        "        torch.cuda.empty_cache()\n",
        # not torch's
        "import torch\nfor _ in range(3):\n    cache.empty_cache()\n",
        # once an epoch
        "import torch\nfor epoch in range(3):\n    train(epoch)\n    torch.cuda.empty_cache()\n",
    ]
    INVALID = [
        Invalid("import torch\nfor x in xs:\n    f(x)\n    torch.cuda.empty_cache()\n"),
        Invalid("from torch.cuda import empty_cache\nwhile True:\n    empty_cache()\n"),
    ]

    def visit_Call(self, node: cst.Call) -> None:
        a = self.analysis
        if not a.qualnames(node.func) & _EMPTY_CACHE:
            return
        loop = a.enclosing_loop(node)
        if not (loop is not None or a.is_hot(node)):
            return
        if isinstance(loop, cst.For) and _over_epochs(loop):
            return  # once an epoch (BLIP's after its evaluation): next to an epoch, nothing
        if any(isinstance(anc, cst.ExceptHandler) for anc in _within_function(a, node)):
            return  # an out-of-memory error's recovery: runs on an error only
        self.report(
            node,
            f"Cache emptied where code repeats, {how_often(a, node)}: `empty_cache()` frees the "
            "allocator's unused blocks (`cudaFree` waits for all queued GPU work) and the next "
            "iteration allocates them again; it gives PyTorch no memory it could not reuse; "
            "no fix: call it once outside the loop, or not at all",
        )


def _over_epochs(loop: cst.For) -> bool:
    """``for epoch in range(...)``, ``for epoch, ... in ...``: a loop over epochs."""
    target = loop.target
    names = [e.value for e in target.elements] if isinstance(target, cst.Tuple) else [target]
    return any(isinstance(n, cst.Name) and "epoch" in n.value.lower() for n in names)


def _within_function(a, node: cst.CSTNode) -> list[cst.CSTNode]:
    """``node``'s ancestors up to its function (or the module)."""
    out = []
    for anc in a.ancestors(node):
        if isinstance(anc, (cst.FunctionDef, cst.Lambda)):
            break
        out.append(anc)
    return out
