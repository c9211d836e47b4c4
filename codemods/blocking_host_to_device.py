"""SFX101: a blocking host-to-device copy (``.cuda()``, ``.to("cuda")``) → ``non_blocking=True``."""

from __future__ import annotations

import enum
from dataclasses import replace

import libcst as cst

from syncfix.analysis import (
    CAST_METHODS,
    LEGACY_CONSTRUCTORS,
    Device,
    Kind,
    Memory,
    Value,
    cpu_state_in_a_branch,
    handler_site,
    keyword,
    moved_once,
    narrowed_to_tensor,
    positional,
)
from syncfix.model import Applicability
from syncfix.rules import Fix, Invalid, Rule

from ._copy_calls import (
    APPENDED_ON_HOST,
    KEPT_ON_HOST,
    after_type_as,
    appended_on_host,
    converts_dtype,
    device_argument,
    expanded,
    from_array,
    is_false,
    joined_batch,
    kept_on_host,
    likely_other_tensor,
    no_elements,
    non_blocking_call,
    onto_accumulator,
    places_a_module,
    project_narrow_to,
    result_dropped,
    state_to_its_outputs,
    to_names_device,
    unpacked,
)
from ._copy_messages import (
    ARRAY_FIX,
    BUILT_LIKE,
    BUILT_LIKE_LIKELY,
    BUILT_THERE,
    CAST_AFTER_FIX,
    CONVERSION,
    DEFAULT_DEVICE,
    DRAINED,
    ESCAPED_FIX,
    LIKE_OTHER,
    LIKELY_BATCH_FIX,
    MAY_SHARE,
    MAYBE_EITHER_WAY,
    MAYBE_GPU,
    MAYBE_ON_HOST,
    NAMED_DEVICE,
    NARROW_CLASS,
    PAGEABLE_BATCH_FIX,
    SIZES_INTS,
    STREAMS,
    TOKENIZED,
    TOKENIZED_ADVICE,
    TOKENIZED_CAUGHT,
    TYPE_AS,
    TYPE_AS_BUILT,
    TYPE_AS_HEAD,
    UNKNOWN_DEVICE,
    UNKNOWN_DEVICE_JOINED,
    UNKNOWN_TARGET_FIX,
    WHOLE_BATCH,
    WRITTEN,
    and_device,
    name_the_device,
)
from ._factories import built_like, built_on_device
from ._iterations import drained_each_iteration
from ._memory import PASSED_ON, non_blocking_flag, source_may_change
from ._support import code, other_accelerator


def _typed_of_unknown(a, expr: cst.BaseExpression) -> str | None:
    """``torch.FloatTensor(x)`` (a legacy constructor) of one value syncfix cannot name: the
    constructor's name, else None."""
    if not isinstance(expr, cst.Call) or len(expr.args) != 1 or expr.args[0].keyword or expr.args[0].star:
        return None
    name = a.callee(expr) or ""
    short = name.removeprefix("torch.")
    if short not in LEGACY_CONSTRUCTORS or a.value(expr.args[0].value).kind is not Kind.UNKNOWN:
        return None
    return f"torch.{short}"


class Source(enum.Enum):
    """What syncfix knows of the tensor a copy reads."""

    CPU = "a tensor provably on the CPU"
    TENSOR = "a tensor on a device syncfix cannot name"
    LIKELY_BATCH = "an item of a batch from a loader the code does not construct"


class BlockingHostToDevice(Rule):
    """
    ## What it finds
    A copy of a tensor to the GPU that blocks the CPU: `x.cuda()`, `x.cuda(i)`, `x.to("cuda")`,
    `x.to("cuda:1")`, `x.to(torch.device("cuda"))`, and `x.to(device)` where `device` is provably a
    CUDA device (or provably CUDA-or-CPU while `x` is provably on the CPU). Devices come from
    `"cuda"`, `"cuda:1"`, `f"cuda:{rank}"`, `torch.device("cuda", local_rank)`,
    `torch.device(f"cuda:{rank}")`, `"cuda:" + str(gpu)`, `"cuda" if
    torch.cuda.is_available() else "cpu"` (`cuda|cpu`), a Python int (`.to(local_rank)` with `local_rank = int(os.environ[...])`,
    `dist.get_rank() % torch.cuda.device_count()`, also kept on `self` or passed as a parameter
    that every call passes an int: an index of the current accelerator, which syncfix reads as
    CUDA), and the body of `if device.type == "cuda":`. So is `args.device` of a parsed command
    line (`args = parser.parse_args()`) where `main` stores a device to it (`args.device =
    device`) before every call that hands `args` on, and nothing else may write `.device` (no
    store on another object, in any file, no `setattr` or `vars(args)` in the module). Any other
    attribute, such as `cfg.device` of a config object, is not provable (it may be `"cpu"` or
    `"mps"`).
    A `.to(z)` of a factory's tensor built without `device=` (`torch.zeros(b, 1).to(z)`), where
    `z` is one too, built in the same function (`z = torch.zeros(b, d)`) outside any `with`
    block, copies nothing (both are on the default device, whatever it is) and is not reported.
    Nor is a module's own parameter or buffer moved to the device of a tensor its method
    computed (Swin's `self.relative_position_bias_table[idx].to(dtype=q.dtype, device=q.device)`):
    it moves with the module, so it is there already (likely; a model split across devices by
    hand aside).
    `.to(device, dtype)` / `.to(device, dtype=...)` are copies too, and so are the items of a
    batch moved in a comprehension (`{k: v.cuda() for k, v in batch.items()}`,
    `[t.to(device) for t in batch]`). So is `p.type_as(x)` of a CPU tensor `p` in code that
    repeats (it converts to `x`'s tensor type, CUDA's where `x` is on a GPU), and a
    `.to(x.device)` right after it then copies nothing and is not reported. Its fix, for zeros or
    ones a factory builds (`1 - torch.eye(n).type_as(x)`), builds them with `dtype=x.dtype,
    device=x.device`: **unsafe**, since `type_as` picks the *current* CUDA device and this `x`'s
    (the same where `x` is on the current device, as in a process per GPU); no fix otherwise.
    So is `x.type(torch.cuda.FloatTensor)` of a tensor or batch item not on CUDA, also through a
    name bound to the type or to `torch.cuda.FloatTensor if cuda else torch.FloatTensor`
    (`imgs.type(Tensor)` in a GAN's step, where the condition picks CUDA): a copy to the current
    CUDA device, cast on the host first; no fix (copy the item non-blocking, then cast).
    Where code repeats, a tokenizer's output moved whole (`tokenizer(text,
    return_tensors="pt").to(device)`: likely new CPU tensors, each copied blocking) is reported
    with no fix: copying the tensors the model takes with `non_blocking=True` is the user's edit.
    So is `self.t.to(device)` where code repeats and every method of the class that sets `self.t`
    sets it to a CPU tensor (DPM-Solver's `self.t_array.to(t.device)`, several times a step;
    vit-pytorch's sin-cos `self.pos_embedding.to(device, dtype=x.dtype)` every forward): the
    same host tensor copied again each time, which moving it once (or a buffer) would spare.
    So is `xs[-1].to("cuda")` in a loop where every `xs.append(...)` of the function appends a
    CPU tensor (ddim's sampler keeps each step's result as a CPU copy, `xs.append(x.to("cpu"))`,
    and copies it back to the GPU the next step): keeping the device tensor is the fix.

    Not copies, so never reported: casts (`.to(dtype)` where the argument is a dtype by every
    sign syncfix can read: `torch.float16`, a name or attribute called `dtype` or `*_dtype`
    such as `self.dtype`, `x.dtype` or `compute_dtype`, a `*_type` name with no device in it
    such as `dst_type` (not `device_type`), or `dtype=` alone; `.half()`,
    `.float()`, `.bfloat16()`), `.to(other_tensor)` unless the other tensor is provably on CUDA
    (then it is a copy there) or the copy is of zeros or ones a factory builds (below), a
    computed tensor's `.to(v)` to a name syncfix cannot read that says nothing of a device
    (`F.dropout(w, p).to(v)`: likely another tensor of the same forward, so a dtype match; a
    factory's `torch.rand(n).to(v)` is still reported), placing an `nn.Module`, and a `.to(...)` in
    a branch the code has taken off CUDA: the `else` of `if torch.cuda.is_available():`, of `if
    device_type == "cuda":` and of `if device.type == "cuda":`, and the body of a test for
    another device type (`if device.type == "mps":`).

    ## Why it costs
    A blocking copy (`non_blocking=False`, the default) runs `cudaMemcpyAsync` and then
    `cudaStreamSynchronize`: the CPU waits until *all* work queued on the stream has finished, not
    just the copy. In a training loop that means the CPU cannot queue the next step's kernels while
    the GPU is busy with this one (measured: docs/semantics.md#copies-between-host-and-device).

    ## Example
    ```python
    for x, y in DataLoader(ds, batch_size=64):
        x = x.cuda()
        y = y.to("cuda")
    ```

    ## Use instead
    ```python
    for x, y in DataLoader(ds, batch_size=64):
        x = x.to("cuda", non_blocking=True)
        y = y.to("cuda", non_blocking=True)
    ```

    ## Fix safety
    The fix is **safe** only when syncfix proves it exact:
    - the receiver is a tensor (not an `nn.Module`, whose `.cuda()` has no `non_blocking`);
    - the copy does not also convert the dtype (`.to("cuda", torch.int64)`, `dtype=`), unless
      the source provably has that dtype already: a blocking copy converts on the CPU, a
      non-blocking one on the GPU, and the two give different integers for NaN, infinite and
      out-of-range floats (measured on an H200: `[inf]` to int64 gives INT64_MIN blocking and
      INT64_MAX non-blocking; NaN to int32 gives -2147483648 and 0). Such a copy gets an
      **unsafe** fix that says so, and so does `.to(x)` of an `x` syncfix cannot name, which
      may be another tensor (its device *and* dtype: fairseq's `.to(src_tokens)`) unless its
      name says it holds a device or its index (`args.device`, `self.gpu_id`, `local_rank`);
    - the target is provably CUDA, or provably CUDA-or-CPU while the tensor is provably on the
      CPU: then the fix is exact for both targets, because a CPU-to-CPU `.to` returns the tensor
      itself (no copy is made, `non_blocking` changes nothing) and a CPU-to-CUDA copy is the
      case below. `x.device` is CUDA where an `is_cuda` test puts `x` on a GPU: inside `if
      x.is_cuda:`, or after an `if` that leaves (`raise`, `return`) unless it is, with `x` not
      bound again since (`if not x.is_cuda: raise ...`). A module-level name or class attribute that another file of the project sets
      (`engine.DEVICE = "mps"`, `Trainer.device = "cpu"`), or any global where the module uses
      `globals()`, names no provable device;
    - the copy is not in the body of a `try` whose handler may catch a `RuntimeError` (bare
      `except:`, `Exception`, `RuntimeError`, a torch error...; not one of a class the project
      defines, `class Exhausted(Exception)`, which torch never raises): there a blocking copy raises a
      CUDA error inside the `try`, as written; a non-blocking one would raise at a later sync,
      outside it. The same holds for a `try` around a call of the copy's function (or of a
      function that calls it: `try: validate(args) except RuntimeError: retry`), in this file or
      in another project file that imports the function; for a method, around a call of it
      (`x.step(...)`) in a closed project's files, and for `forward`, which `model(x)` runs,
      around anything in its file or in a project file that imports it; for a call the function is handed to
      (`run_with_retry(step, ...)` where `run_with_retry` catches, or a call inside such a
      `try`); and for a decorator whose wrapper catches (a decorator of this file with such a
      `try`, or a retrying library's: `tenacity.retry`, `backoff.on_exception`). Such a copy gets a finding and no
      fix, safe or unsafe. So does a copy in the body of `with contextlib.suppress(...)`,
      `pytest.raises(...)` or `self.assertRaises(...)` of such an error;
    - the module uses one stream (no `torch.cuda.stream`/`Stream`/graphs: copies on a side stream
      need `wait_stream`/`record_stream`, which is not ours to prove), and no project module
      that imports it, directly or through others, uses them (it may call this code under a
      side stream and use the copy on another without waiting), nor any project module it
      imports, directly or through others (a function there may read the copy on a side
      stream before it lands). Not seen: a caller outside the project, or one that reaches this
      code without importing it (a callback);
    - the source memory cannot change before the copy runs. A pageable source is staged by the
      driver when the call returns, so later writes cannot reach the copy; a pinned source is read
      when the copy *executes*, so a pinned buffer written again later (in place in the loop,
      `copy_` into it, a loader refilling a staging buffer) would be copied with the new data.
      syncfix therefore needs the source to be pageable, or *fresh* (created by this code: a
      `torch.*` factory without `out=` (whose result is `out` itself), `.pin_memory()`, a batch of a `DataLoader` with the default collate (on the CPU unless a dataset of the project places its items: `return seq.cuda()` in a `__getitem__` of any of its files), which
      `batch_size=None` turns off: written so or through a name bound to it; a size syncfix
      cannot read, such as `args.batch_size`, is taken to be a number, but not a parameter whose
      default is `None`; `**kwargs` may pass `batch_size=None` or a `collate_fn`, unless they are
      a dict the code writes out and only spreads (`kw = {"batch_size": 16, "pin_memory": True}`,
      or `{...} if cuda else {}`), whose keys syncfix reads; a loader whose `collate_fn` may
      be set after it is made is not: any `.collate_fn` store or `setattr` in the module, or the
      loader handed to code syncfix does not read; also the item of a dict or list of such
      loaders, `dataloaders[phase]`, that nothing else is stored in, and a loop over a name bound
      once to a wrapper of one, `tbar = tqdm(loader)`) and never mutated or passed on to code that might mutate it, also
      through another name for its memory (`y = x.cpu()`, `x.to(torch.float32)`, `x.numpy()`,
      `memoryview(...)`, `y = x if c else z`); its sizes and kinds passed on (`meter.update(v,
      x.size(0))`, `x.shape[0]`, `x.dtype`) are none of its memory. A tensor made from a numpy
      array (`torch.from_numpy`, `torch.as_tensor`, `torch.asarray`, a legacy constructor:
      `torch.FloatTensor(buf[idx])`) shares the array's memory (a legacy constructor copies it
      where the dtypes differ), which
      is pageable only where numpy allocated it (`np.zeros`, `np.random.*`, `np.array`,
      arithmetic, `.copy()`, `.astype()`, slices of those; `torch.from_numpy(im.astype(t))`
      of any `im`, as `torch.from_numpy` takes nothing but an array); an array from elsewhere, or
      `t.numpy()` of a tensor, may be a view of a pinned buffer. A pinned source that other
      code can reach without its name gets no fix: one kept in a container or on an object
      (`keep = [x]`, `h.x = x`), written through a call's view (`np.asarray(x)[:] = v`),
      returned or yielded, named by a nested function or lambda, or a global (declared, or a
      module-level tensor the function reads: any function it calls may refill it), or a tensor
      kept on `self` (another method may refill it). "It" includes everything that
      may share its memory: views of it, and what it is a view or an item of (`rows =
      staging[:n]`, `torch.narrow(staging, ...)`, `staging.moveaxis(...)`, `+staging`,
      `torch.relu_(staging)`, `F.relu(staging, inplace=True)`, `for t in batch`, `x, y =
      batch`), so writing `staging` or `batch` after the copy also keeps it blocking. The loader may be built elsewhere and reach the loop through
      what syncfix follows: a parameter (every call of the function passes it), an attribute
      (`self.train_data`, set from `__init__`'s parameter, which every call of the class
      passes), a method's parameter (every `obj.method(...)` call passes it), or a generator
      that passes on its batches (`while True: yield from loader`, or `for data in loader:
      yield data` with nothing else in that loop); in a project nothing
      outside can import (no packaging, no notebooks), through its other files too. A loader
      keeps no reference to a batch it hands on, so code that only reaches the loader (a method
      of `self`) cannot write the batch.

    The fix is **unsafe** (applied with `--unsafe-fixes`) where it rests on one of these
    *likely* facts:
    - **An item of a batch from a loader the code does not construct is a fresh CPU tensor.**
      A loop over a loader passed in as a parameter, an attribute (`self.loader`) or another
      function's result (also through `enumerate`, `zip`, `tqdm`, `iter`, `itertools.islice` and a metric logger's
      `log_every(loader, ...)`, which yields the loader's batches), named as a loader, a dataset or a progress bar over one
      (`train_loader`, `self.data`, `dl`, `pbar`: a list of model outputs, features or call
      arguments passed in is no loader, and its items may be on a GPU already), its parts (`x, y = batch`, `batch["input_ids"]`, `batch[0]`), the
      items in `{k: v.to(device) for k, v in batch.items()}` or `[t.to(device) for t in
      batch]`, `batch = next(it)` (or the old `it.next()`), what a method of an object named as a loader hands out as its
      next batch (llm.c's `x, y = train_loader.next_batch()`; also `get_batch`, `sample_batch`),
      and a parameter that every call in its module passes such an item (`batch =
      next(self.data); self.run_step(batch)`) or a batch of a loader the code builds (monodepth2's
      `self.process_batch(inputs)`, a method others may call too), or, for a method its module
      never calls, that another project file hands the batch of its loop over batches through
      an object (BasicSR's `while train_data is not None: model.feed_data(train_data)`, whatever
      the model's class): syncfix cannot see the loader,
      so the batch may be a pinned buffer its loader refills, or not a tensor at all (and other
      callers of that parameter's function may pass something else): an object whose own `.to`
      takes no `non_blocking` (flex attention's `BlockMask` in a packed batch dict) then raises
      a `TypeError` at the fixed line. Copied non-blocking, a fresh CPU
      tensor gives the same values on every target, so this fix is offered whatever the
      device. It is reported only where it repeats (loop bodies, step-like functions); a batch
      written in place later in the same function keeps its copy blocking. `.to` of the
      loader's *whole* item (`for batch in loader: batch.to(device)`, not a part of it) gets no fix:
      such a `.to` is as often an object's own (a tokenizer's `BatchEncoding`, a graph batch),
      which may not take `non_blocking` (transformers' did not before 4.48); nor does `.to` of a
      part whose result is unpacked (`edge_index, _, size = adj.to(device)`: PyG's sampler
      yields a named tuple there, as a tensor rarely is unpacked); nor does `.to` of
      a part of one where a class of the project, in any of its files, defines a `to` without `non_blocking` or
      `**kwargs` (DETR's `NestedTensor.to(self, device)`: the part may be one of its instances;
      so may an item of a loader syncfix sees with its own `collate_fn`: YOLOS's). A loader passed
      through accelerate's `accelerator.prepare(...)` (an `Accelerator` built in the same
      function without `device_placement=False`) yields batches already on the accelerator's
      device, so `.to(accelerator.device)` of them copies nothing and is not reported.
    - **A tensor of unknown origin is not a pinned buffer that other code refills** (a function
      parameter annotated `torch.Tensor`).
    - **A device syncfix cannot name is CUDA or the CPU** (`args.device`,
      `torch.accelerator.current_accelerator()`), for a source provably on the CPU: exact on
      both; other accelerators (MPS, XLA...) have their own copy rules, which syncfix does not
      prove. Where a module of the project (not a test) names one (`"mps"`, `"xla:0"`, a
      device option's help `"cpu|cuda|mps"`, `torch.backends.mps`, `import torch_xla`), the fact is not assumed: such copies get a
      finding that names the module, and no fix.

    To make these fixes safe: declare that your loaders never refill pinned buffers with
    `extend-safe-fixes = ["SFX101"]` in `[tool.syncfix]`; declare that the project runs on CUDA
    and the CPU only with `devices = ["cuda", "cpu"]` in `[tool.syncfix.torch]` (then a device
    syncfix cannot name, a `torch.device` of unknown type, is one of the two); or let syncfix see what it needs
    (build the loader where the loop is, name the device where the copy can see it, e.g.
    `device = torch.device("cuda", local_rank)`); or prove a rewrite on your program with
    `syncfix verify`. A `.cuda()` whose receiver is neither provably a tensor nor a batch item
    gets a finding and no fix (annotate it `torch.Tensor`); a `.to(...)` of such a receiver is
    not reported, since it is as often a module's (`model.to(device)`) as a tensor's.
    Device-to-host copies (`.cpu()`, `.to("cpu")`) are never rewritten: reading the result on the
    host before an event wait would read garbage (see SFX105).

    **A cast batch item is copied before its cast** (unsafe, on the likely batch fact above):
    `labels.long().cuda()` becomes `labels.to("cuda", non_blocking=True).long()`. The cast's
    result is new pageable memory, and a non-blocking copy from pageable memory of a few MiB or
    more still waits for the GPU (measured on an H100 and an H200 from 4 MiB), so the item is
    copied as the loader gave it (pinned where the loader pins) and cast on the device: the
    same dtype, device and values, except that the GPU and the CPU cast NaN, infinite and
    out-of-range floats to an integer type differently.

    **A factory's tensor built on the device.** Where the device is one syncfix cannot name, a
    tensor that a factory builds on the host only to copy it (`torch.ones(n, k).to(x.device)`,
    `torch.full(size, -100).to(labels.device)`) is built on the device instead
    (`torch.ones(n, k, device=x.device)`): no host tensor and no copy, the same values, dtype and
    device on every accelerator, MPS and XLA included, so no device fact is needed. Only
    `torch.zeros`, `torch.ones`, `torch.eye`, `torch.full` of a Python number and
    `torch.arange` of Python ints (to an integer dtype, if one is named), with no keyword but
    their sizes and `dtype`
    (random factories draw other numbers on another device, float steps are summed differently
    there, `requires_grad=True` would make a leaf of what was a copy). The fix is **safe** where
    the argument is provably a device (`x.device` of a tensor), **unsafe** where only its name
    says so (`args.device`, `labels.device` of an object syncfix cannot see): `.to` also takes
    `None` (no move, where `device=None` is the default device), another tensor (its dtype too)
    or a dtype. It is unsafe too where `torch.arange`'s bounds are sizes of a value syncfix
    cannot name (`torch.arange(B).to(device)` with `B = points.shape[0]`): ints, as a tensor's or
    an array's sizes are, by a likely fact. Not in a module that uses streams: a blocking copy has landed when the next
    line runs, a fill queued on a side stream has not. The same fix is given where the device
    is CUDA or the CPU but the project sets a default device or tensor type
    (`set_default_tensor_type(torch.cuda.HalfTensor)` in a script that imports the module): the
    factory's tensor may then already be on the GPU and the copy's direction is unknown, but
    built with `device=` it is the same tensor either way (a tensor of data gets a finding that
    names the default, and no fix). Where the device is provably CUDA, or CUDA or the CPU, such
    a factory's tensor is built there too, where that is proven exact (**safe**): no copy beats a
    non-blocking one, which from pageable memory still waits for the GPU at a few MiB
    (`torch.ones(classification.shape).cuda()` of a detection loss); other copies are made
    non-blocking as above. Methods between the factory and the copy that give the same result on
    every device stay after it: casts without arguments (`torch.zeros(n).long().cuda()` →
    `torch.zeros(n, device="cuda").long()`; not of `torch.full`, whose fill a cast might take out
    of a dtype's range), shape changes with int arguments (`view`, `reshape`, `unsqueeze`...; not
    `expand`, whose zero strides would survive where the copy is dense and writable),
    and `fill_` with a Python number or `zero_`. A legacy constructor of sizes filled so
    (`torch.LongTensor(nB, nA).fill_(-1).cuda()`, 10 MiB of detection targets each step) is the
    same tensor made by `torch.zeros`/`torch.ones`/`torch.full` with its dtype: safe where the
    sizes are provably ints, unsafe where they are a value's sizes (a likely fact). Likewise `torch.zeros(...).to(t)` of a `t` provably a
    tensor, in code that repeats (fastMRI's `torch.zeros(1, 1, 1, 1, 1).to(current_kspace)` in
    each cascade of a forward), is a copy to `t`'s device, whichever it is, converted to `t`'s
    dtype: it is built with `dtype=t.dtype, device=t.device` (**safe**) where the factory is
    `torch.zeros`, `torch.ones` or `torch.eye` without a dtype of its own (0 and 1 are exact in
    every dtype; a fill such as 0.1 converted from float32 to float64 is not 0.1 made in
    float64). Where `t` is a tensor in the likely view only (a parameter its function uses as a
    tensor: CodeFormer's quantizer, `torch.zeros(n, k).to(z)` each forward), the same rewrite is
    **unsafe**: were `t` a dtype or a device, `.to(t)` would be a cast or a plain copy.
    """

    CODE = "SFX101"
    NAME = "blocking-host-to-device"
    MESSAGE = "Blocking host-to-device copy: the CPU waits for all queued GPU work"
    FIX = "sometimes"
    SAFETY = ("safe", "unsafe")
    OBSERVABLE = ("cpu_tensor", "unshared_source", "cuda_device")
    TRIGGERS = (".cuda(", ".to(", ".type_as(", ".type(")
    NEEDS_TORCH = False  # ``x.cuda()`` in a loop is reported even when nothing proves x a tensor
    VALID = [
        # already non-blocking
        "import torch\nx = torch.ones(3).to('cuda', non_blocking=True)\n",
        # device-to-host: never rewritten here
        "import torch\ndef f(x: torch.Tensor):\n    return x.cpu()\n",
        # an nn.Module outside a loop is not a finding
        "import torch\nmodel = torch.nn.Linear(3, 3).cuda()\n",
        # .to(other_tensor) and dtype-only .to() are not host-to-device copies we can prove
        "import torch\ndef f(x: torch.Tensor, y: torch.Tensor):\n    return x.to(y), x.to(torch.float16)\n",
        # a dtype by its name: a cast
        "import torch\ndef f(x: torch.Tensor, dtype):\n    for _ in range(3):\n        y = x.to(dtype)\n",
        # a device that may be "mps"
        "import torch\ndevice = 'cuda' if torch.cuda.is_available() else 'mps'\nx = torch.ones(3).to(device)\n",
        # not torch at all
        "import numpy as np\nx = np.ones(3)\ny = x.cuda()\n",
    ]
    INVALID = [
        Invalid(
            "import torch\nx = torch.randn(3).cuda()\n",
            "import torch\nx = torch.randn(3).to(\"cuda\", non_blocking=True)\n",
        ),
        # a factory's zeros or ones: built on the device, no copy at all
        Invalid(
            "import torch\nx = torch.ones(3).cuda()\n",
            "import torch\nx = torch.ones(3, device=\"cuda\")\n",
        ),
        Invalid(
            "import torch\nx = torch.ones(3)\ny = x.to('cuda:1')\n",
            "import torch\nx = torch.ones(3)\ny = x.to('cuda:1', non_blocking=True)\n",
        ),
        Invalid(
            "import torch\nx = torch.ones(3)\ny = x.cuda(0)\n",
            "import torch\nx = torch.ones(3)\ny = x.cuda(0, non_blocking=True)\n",
        ),
        # a pinned staging buffer refilled in place: finding, but no safe fix
        Invalid(
            "import torch\nbuf = torch.empty(4, pin_memory=True)\nfor i in range(3):\n"
            "    buf.fill_(i)\n    y = buf.cuda()\n",
            None,
        ),
        # unknown origin: only an unsafe fix
        Invalid(
            "import torch\ndef f(x: torch.Tensor):\n    return x.cuda()\n",
            "import torch\ndef f(x: torch.Tensor):\n    return x.to(\"cuda\", non_blocking=True)\n",
            unsafe=True,
        ),
    ]

    def visit_Call(self, node: cst.Call) -> None:
        func = node.func
        if isinstance(func, cst.Attribute) and func.attr.value == "type_as":
            self._type_as(node)
            return
        if isinstance(func, cst.Attribute) and func.attr.value == "type":
            self._legacy_type(node)
            return
        if not isinstance(func, cst.Attribute) or func.attr.value not in ("cuda", "to"):
            return
        if after_type_as(node):
            return  # ``p.type_as(x).to(x.device)``: ``type_as`` already moved it (reported there)
        a = self.analysis
        flag = non_blocking_flag(a, node)
        if flag is PASSED_ON or (flag is not None and not is_false(flag.value)):
            return  # already non_blocking=True (or a value we cannot judge)
        receiver = a.value(func.value)
        if receiver.kind is Kind.MODULE:
            return
        if not receiver.is_tensor and result_dropped(a, node) and not a.is_likely_batch_item(func.value):
            # ``block.to(device)`` as a statement places a module in place (a batch object's own
            # ``.to``, PyG's ``Data`` or a tokenizer's ``BatchEncoding``, moves its tensors in place)
            return
        if receiver.is_tensor and receiver.device is Device.CUDA or func.attr.value == "cuda" and a.tested_on_cuda(func.value):
            return  # a copy between GPUs: the host does not wait for it
        if no_elements(a, func.value):
            return  # ``torch.empty(0).cuda()``: nothing to copy, nothing waits
        if receiver.is_tensor and func.attr.value == "to" and a.already_on_target(node):
            return  # ``torch.zeros_like(rewards).to(device)``, ``rewards`` placed with ``device``
        if onto_accumulator(a, node):
            return  # ``total += x.to(total.device)``: kept on the total's device on purpose
        method = func.attr.value
        target: Device | None
        if method == "cuda":
            target = Device.CUDA  # .cuda(i) targets a CUDA device whatever i is
        else:
            target = a.to_target(node)
            if target is None or target is Device.CPU:
                return  # a cast, or a device-to-host copy (SFX105's business)
            if target is not Device.CUDA and not to_names_device(a, node):
                # ``.to(other_tensor)``: not a copy we can tell, but zeros built like the other
                # tensor are the same whatever its device (fastMRI's ``torch.zeros(...).to(kspace)``)
                self._build_like(node)
                return
            if target is Device.UNKNOWN and self._build_like(node, likely=True):
                return  # CodeFormer's ``torch.zeros(n, k).to(z)`` of a ``z`` used as a tensor
            branch = a.cuda_branch(node)
            if branch is False:
                return  # the ``else`` of ``if device.type == "cuda":``: not a copy to CUDA
            if branch is True:
                target = Device.CUDA  # the body of ``if device.type == "cuda":``
        if moved_once(a, node):
            return  # ``self.freqs = self.freqs.to(h.device)``: there after the first call
        whole_batch = False
        narrow_class = ""
        narrowed = narrowed_to_tensor(a, func.value) and a.is_likely_batch_item(func.value)
        if receiver.is_tensor and not narrowed:
            source = Source.CPU if receiver.device is Device.CPU else Source.TENSOR
            if receiver.kind is Kind.BATCH and method == "to" and not receiver.fresh and receiver.memory is Memory.UNKNOWN and project_narrow_to(a):
                # an item of a loader with its own collate_fn (the default one makes tensors, or
                # raises), not proven a tensor: one of the project's objects whose `to` takes no
                # `non_blocking` (YOLOS's `NestedTensor`)
                whole_batch, narrow_class = True, a.narrow_to
        elif narrowed:
            source = Source.LIKELY_BATCH  # a batch's item tested to be a tensor: a tensor's `.to`
        elif receiver.kind is Kind.UNKNOWN and a.is_likely_batch_item(func.value):
            source = Source.LIKELY_BATCH
            loaders = a.batch_sources(func.value)
            if loaders and all(a.placed_by_accelerate(loader) for loader, _ in loaders):
                return  # accelerate put the batch on its device already: the copy returns it
            if a.placed_by_lightning(func.value):
                return  # so did Lightning, before its step got the batch
            # ``.to`` of a whole item may be an object's own (``.cuda`` all but never is), and
            # so may a part's where a project class defines a ``to`` without ``non_blocking``
            # (DETR's ``NestedTensor``), or whose copy is unpacked (PyG's sampler: ``edge_index,
            # _, size = adj.to(device)``, a named tuple of tensors)
            whole = bool(loaders) and any(whole for _, whole in loaders or ()) or unpacked(a, node)
            whole_batch = method == "to" and (whole or project_narrow_to(a))
            narrow_class = "" if whole else a.narrow_to
        elif receiver.kind is Kind.UNKNOWN and method == "to" and a.is_hot(node) and a.is_tokenizer_output(func.value):
            # BLIP's ``self.tokenizer(caption, ...).to(image.device)``
            caught = a.caught_by_handler(node)
            self.report(node, TOKENIZED + (TOKENIZED_CAUGHT.format(handler_site(a, node)) if caught else TOKENIZED_ADVICE))
            return
        else:
            # ``.cuda()`` is all but always a tensor's; ``.to(...)`` is as often a module's
            if receiver.kind is Kind.UNKNOWN and method == "cuda" and a.is_hot(node) and not places_a_module(a, node):
                why = (
                    "Possibly blocking host-to-device copy: if the receiver is a CPU tensor, the CPU "
                    "waits for all queued GPU work (a GPU tensor's `.cuda()` copies nothing; "
                    "receiver not provably a tensor: no fix)"
                )
                fix = None
                if self._may_observe(node):
                    fix = self.observed_fix(
                        {node: non_blocking_call(a, node)},
                        "Copy with non_blocking=True (observed: a CPU tensor nothing refills)",
                        [("cpu_tensor", func.value), ("unshared_source", func.value)],
                        why,
                    )
                self.report(node, why if fix is None else self.MESSAGE, fix=fix)
            elif receiver.kind is Kind.UNKNOWN and method == "to" and a.is_hot(node) and kept_on_host(a, func.value):
                self.report(node, MAYBE_GPU + KEPT_ON_HOST.format(code(a, func.value)))
            elif receiver.kind is Kind.UNKNOWN and a.is_hot(node) and target is Device.CUDA:
                appended = appended_on_host(a, func.value)
                if appended is not None:
                    self.report(node, self.MESSAGE + APPENDED_ON_HOST.format(code(a, func.value), appended))
            return
        if source is not Source.CPU and target is not Device.CUDA and source is not Source.LIKELY_BATCH:
            # the source may be on CUDA and the target the CPU: a device-to-host copy made
            # non-blocking would be read before it lands
            if target is Device.UNKNOWN and not a.is_hot(node):
                return
            if target is Device.UNKNOWN and receiver.is_tensor and likely_other_tensor(a, node):
                return  # ``self.q_norm(q).to(v)``: a computed tensor cast like another, likely
            if target is Device.UNKNOWN and state_to_its_outputs(a, node):
                return  # Swin's ``self.bias_table[idx].to(device=q.device)``: moved with the module
            if method == "to" and receiver.device is Device.UNKNOWN and kept_on_host(a, func.value):
                # ``self.pos_embedding.to(device, dtype=x.dtype)``: a tensor of a device syncfix
                # cannot prove, that every method of its class sets to a CPU tensor (likely)
                self.report(node, MAYBE_GPU + KEPT_ON_HOST.format(code(a, func.value)))
                return
            built = None if a.uses_streams or a.caught_by_handler(node) else built_on_device(a, node)
            if built is not None:
                # a factory's tensor (perhaps on a default device another file set): built
                # on the device instead, exact wherever it was built and whatever the device
                self.report(node, MAYBE_EITHER_WAY, fix=self._built_there_fix(node, built))
                return
            why = (
                (UNKNOWN_DEVICE_JOINED if joined_batch(a, func.value) else UNKNOWN_DEVICE)
                if target is Device.UNKNOWN
                else "Possibly blocking host-to-device copy: if the tensor is on the CPU and the device "
                "a GPU's, the CPU waits for all queued GPU work (the device may be the CPU and the "
                "tensor on CUDA: then it is a device-to-host copy, whose result the CPU must wait "
                f"for{DEFAULT_DEVICE if a.sets_default_device else ''}; no fix)"
            )
            device = device_argument(node)
            fix = None
            if device is not None and self._may_observe(node) and not converts_dtype(a, node):
                fix = self.observed_fix(
                    {node: non_blocking_call(a, node)},
                    "Copy with non_blocking=True (observed: the device is CUDA)",
                    [("cuda_device", device), ("unshared_source", func.value)],
                    why,
                )
            self.report(node, why if fix is None else self.MESSAGE, fix=fix)
            return
        if source is Source.LIKELY_BATCH and not a.is_hot(node):
            return  # a likely fact is worth a finding only where it repeats
        if target is Device.UNKNOWN and not a.is_hot(node):
            return
        if a.caught_by_handler(node):
            self.report(
                node,
                self.MESSAGE + f" (inside a try whose handler catches its error ({handler_site(a, node)}): "
                "a non-blocking copy would raise later, outside the try; no fix)",
            )
            return
        # to a device syncfix cannot name, the copy waits only if it is a GPU's
        headline = MAYBE_GPU if target is Device.UNKNOWN else self.MESSAGE
        if target is Device.CUDA and source is Source.TENSOR:
            headline = MAYBE_ON_HOST  # ``torch.unique(labels).cuda()``: labels may be on the GPU
        built = built_on_device(a, node) if not a.uses_streams else None
        if built is not None and (target is Device.UNKNOWN or not built[1]):
            # exact on every device, where a non-blocking copy is proven on CUDA and the CPU only;
            # to CUDA no copy at all beats a non-blocking one, which from pageable memory still
            # waits for the GPU at a few MiB (retinanet's ``torch.ones(classification.shape).cuda()``)
            self.report(node, headline, fix=self._built_there_fix(node, built))
            return
        if target is Device.UNKNOWN and a.other_accelerator and not a.cuda_or_cpu_only:
            self.report(node, f"{headline} ({other_accelerator(a.other_accelerator)}: no fix)")
            return
        if whole_batch:
            why = (
                WRITTEN if source_may_change(a, node, passed_on=False)
                else NARROW_CLASS.format(narrow_class) if narrow_class
                else WHOLE_BATCH
            )
            self.report(node, f"{headline} ({why}: no fix)")
            return
        fix = self._fix(node, receiver, source, target)
        if fix is None:
            why = WRITTEN
            shared = _typed_of_unknown(a, func.value)
            if shared is not None:
                why = MAY_SHARE.format(shared)
            if a.uses_streams:
                why = STREAMS + (f" (in module `{a.streams_around}`)" if a.streams_around else " (in this module)")
            self.report(node, f"{headline} ({why}: no fix)")
        else:
            drained = drained_each_iteration(a, node)
            if drained is not None:
                headline += DRAINED.format(drained)
            self.report(node, headline, fix=fix)

    def _built_there_fix(self, node: cst.Call, built: tuple[cst.Call, list[str]]) -> Fix:
        """The factory with ``device=``: safe where proven exact, else unsafe, saying why."""
        new, likely = built
        if not likely:
            return self.safe_fix({node: new}, BUILT_THERE)
        device = device_argument(node)
        facts = {"device": NAMED_DEVICE.format(code(self.analysis, device or node)), "sizes": SIZES_INTS}
        return self.unsafe_fix({node: new}, f"{BUILT_THERE} (unsafe: {'; '.join(facts[f] for f in likely)})")

    def _type_as(self, node: cst.Call) -> None:
        """``p.type_as(x)`` converts ``p`` to ``x``'s tensor type, CUDA's where ``x`` is on a GPU:
        a blocking copy of a CPU ``p`` (VideoMAE's ``self.pos_embed.type_as(x)`` in forward)."""
        a = self.analysis
        args = positional(node)
        source = node.func.value  # type: ignore[attr-defined]
        receiver = a.value(source)
        if len(args) != 1 or not a.is_hot(node) or not receiver.is_tensor:
            return
        # a parameter in one branch of its class, a CPU tensor (by default) in another
        branch = cpu_state_in_a_branch(a, source) if receiver.device is not Device.CPU else None
        if receiver.device is not Device.CPU and branch is None:
            return
        other = a.value(args[0].value)
        if other.device is Device.CPU or not (other.is_tensor or other.kind is Kind.UNKNOWN):
            return  # on the host, or no tensor (``type_as`` raises): an unknown one may be a GPU's
        built = None if branch is not None or a.uses_streams or a.caught_by_handler(node) else built_like(a, node)
        fix = self.unsafe_fix({node: built}, TYPE_AS_BUILT) if built is not None else None
        message = TYPE_AS_HEAD
        if branch is not None:
            line = a.positions[branch].start.line
            message += f" (where the class holds the CPU tensor of line {line}, not an `nn.Parameter`)"
        if fix is None:
            message += TYPE_AS.removeprefix(TYPE_AS_HEAD)
        if expanded(source):
            message += "; convert it before `.expand(...)` or `.repeat(...)`, which multiply the bytes copied"
        self.report(node, message, fix=fix)

    def _legacy_type(self, node: cst.Call) -> None:
        """``x.type(torch.cuda.FloatTensor)``, or through a name bound to it or to
        ``torch.cuda.FloatTensor if cuda else torch.FloatTensor`` (PyTorch-GAN's ``imgs.type(Tensor)``
        of each batch): a CPU tensor copied to the current CUDA device and cast, blocking. No fix:
        the cast happens before the copy (on the CPU), where the rewrite would cast after it."""
        a = self.analysis
        args = positional(node)
        func = node.func
        assert isinstance(func, cst.Attribute)
        typed = a.legacy_type(args[0].value) if len(args) == 1 and len(node.args) == 1 else None
        if typed is None or typed[1] is Device.CPU:
            return
        receiver = a.value(func.value)
        if receiver.kind is Kind.MODULE or a.used_as_module(func.value) or receiver.device is Device.CUDA:
            return  # ``model.type(...)`` casts a module's parameters; a CUDA tensor is not copied
        if not (receiver.is_tensor or a.is_likely_batch_item(func.value) or a.likely.value(func.value).is_tensor):
            return
        short, device = typed
        which = "" if device is Device.CUDA else f" where `{code(a, args[0].value)}` is CUDA's"
        self.report(
            node,
            f"{self.MESSAGE} (`.type(...)` to CUDA's `{short}`{which} copies a CPU tensor to the current "
            "CUDA device and casts it; no fix: copy it with `.to(device, non_blocking=True)` from pinned "
            "memory (`pin_memory=True` on its loader), then cast it on the device)",
        )

    def _build_like(self, node: cst.Call, *, likely: bool = False) -> bool:
        """Report ``torch.zeros(...).to(t)`` with the fix that builds it like ``t`` (safe where
        ``t`` is provably a tensor; with ``likely``, unsafe where only the likely view says so)."""
        a = self.analysis
        built = built_like(a, node, likely=likely)  # first: most `.to(...)` are of no factory
        if built is None or not a.is_hot(node) or a.uses_streams or a.caught_by_handler(node):
            return False
        device = keyword(built, "device")  # ``device=t.device``: ``t``, however `.to` named it
        assert device is not None and isinstance(device.value, cst.Attribute)
        if likely and not a.value(device.value.value).is_tensor:
            self.report(node, LIKE_OTHER, fix=self.unsafe_fix({node: built}, BUILT_LIKE_LIKELY))
        else:
            self.report(node, LIKE_OTHER, fix=self.safe_fix({node: built}, BUILT_LIKE))
        return True

    def _may_observe(self, node: cst.Call) -> bool:
        """Could facts seen on a run make this copy non-blocking? Not where no run can tell:
        streams, a ``try`` that should see the copy's error, a source written after the copy."""
        a = self.analysis
        return not (
            a.uses_streams
            or a.caught_by_handler(node)
            or source_may_change(a, node, passed_on=False)
        )

    def _fix(self, node: cst.Call, receiver: Value, source: Source, target: Device) -> Fix | None:
        fix = self._copy_fix(node, receiver, source, target)
        if fix is None or not converts_dtype(self.analysis, node):
            return fix
        # ``.to("cuda", torch.int64)``: a blocking copy converts on the CPU, a non-blocking one on
        # the GPU, and the two disagree on some values (measured: NaN and inf to an integer)
        text = fix.description
        if fix.applicability is Applicability.SAFE:
            text = text + " (unsafe: " + CONVERSION + ")"
        else:
            text = text[:-1] + "; " + CONVERSION + ")"
        return replace(fix, applicability=Applicability.UNSAFE, description=text)

    def _copy_fix(self, node: cst.Call, receiver: Value, source: Source, target: Device) -> Fix | None:
        a = self.analysis
        changes = {node: non_blocking_call(a, node)}
        if a.uses_streams:
            return None
        func = node.func
        assert isinstance(func, cst.Attribute)
        device = device_argument(node)
        # what a recorded run can confirm of an unsafe fix's likely facts
        where = [("cuda_device", device)] if target is not Device.CUDA and device is not None else []
        # a CPU source: a CUDA one copies without the host waiting anyway (nothing to fix)
        source_need = [("unshared_source", func.value)]
        if source is Source.LIKELY_BATCH:
            # the likely fact covers code the batch is passed to; a write here it cannot cover
            if source_may_change(a, node, passed_on=False):
                return None  # the batch is written after the copy: keep it blocking
            cast = func.value
            if (
                isinstance(cast, cst.Call)
                and not cast.args
                and isinstance(cast.func, cst.Attribute)
                and cast.func.attr.value in CAST_METHODS
                and a.is_likely_batch_item(cast.func.value)
            ):
                # ``labels.long().cuda()``: the cast's result is new pageable memory, which a
                # non-blocking copy of some MiB still waits for (HRNet's 48 MiB labels); copy the
                # item itself, as the loader gave it, and cast on the device
                copy = changes[node]
                moved = cast.with_changes(func=cast.func.with_changes(value=copy.with_changes(func=copy.func.with_changes(value=cast.func.value))))
                return self.unsafe_fix({node: moved}, and_device(CAST_AFTER_FIX, target), [*source_need, *where])
            return self.unsafe_fix(changes, and_device(LIKELY_BATCH_FIX, target), [*source_need, *where])
        if receiver.memory is Memory.UNKNOWN and not receiver.fresh and from_array(a, func.value):
            # ``torch.from_numpy(im)`` of an array syncfix cannot see: likely numpy's own memory
            if source_may_change(a, node, passed_on=False):
                return None  # written here after the copy
            return self.unsafe_fix(changes, and_device(ARRAY_FIX, target), [*source_need, *where])
        unknown_origin = (
            "Copy with non_blocking=True (unsafe: the source's origin is unknown; it may be a "
            "pinned buffer that other code writes again before the copy runs)"
        )
        if target is not Device.UNKNOWN:
            # to CUDA (or cuda|cpu from the CPU): a CUDA source is a no-op or a device-to-device
            # copy; a pageable one is staged at the call; a fresh one is written by nobody else
            if receiver.device is Device.CUDA or receiver.memory is Memory.PAGEABLE:
                batch = receiver.kind is Kind.BATCH and receiver.device is not Device.CUDA
                return self.safe_fix(changes, PAGEABLE_BATCH_FIX if batch else "Copy with non_blocking=True")
            if source_may_change(a, node, escapes=False):
                return None  # a pinned source written again would be copied with the new data
            if receiver.fresh and not source_may_change(a, node, strict=True):
                return self.safe_fix(changes, "Copy with non_blocking=True")
            return self.unsafe_fix(changes, ESCAPED_FIX if receiver.fresh else unknown_origin, source_need)
        # A CPU source to a device syncfix cannot name: exact on CUDA and the CPU only.
        if receiver.memory is not Memory.PAGEABLE and source_may_change(a, node, escapes=False):
            return None
        if receiver.memory is Memory.PAGEABLE or receiver.fresh:
            return self.unsafe_fix(changes, UNKNOWN_TARGET_FIX.format(name_the_device(a, _device_argument(node))), where)
        return self.unsafe_fix(changes, and_device(unknown_origin, target), [*source_need, *where])


def _device_argument(call: cst.Call) -> cst.BaseExpression | None:
    """The expression a ``.to(...)`` call names its device with (``device=`` or the first argument)."""
    dev = keyword(call, "device")
    if dev is not None:
        return dev.value
    args = positional(call)
    return args[0].value if args else None
