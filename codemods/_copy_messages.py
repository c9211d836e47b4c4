"""What SFX101's findings and fixes say: the messages of ``blocking_host_to_device``, kept
apart so the rule reads as its logic."""

from __future__ import annotations

import libcst as cst

from syncfix.analysis import Device, ModuleAnalysis

from ._support import code

BUILT_THERE = (
    "Build it on the device (`device=` in the factory): no host tensor and no copy, the same "
    "values, dtype and device on every accelerator"
)
NAMED_DEVICE = (
    "`{}` is taken to hold a device, as its name says, not None, a tensor or a dtype, which `.to` "
    "also takes and `device=` does not"
)
SIZES_INTS = "the bounds are taken to be ints, as a tensor's or an array's sizes are"


TYPE_AS_HEAD = (
    "Possibly blocking host-to-device copy: `type_as` converts a CPU tensor to the other tensor's "
    "type, a GPU's if that is on one, and the CPU waits for all queued GPU work"
)
TYPE_AS = TYPE_AS_HEAD + (
    "; no fix: keep the tensor on the device (`self.register_buffer(...)`, moved with the "
    "module) or copy it once"
)
TYPE_AS_BUILT = (
    "Build it with the other tensor's dtype and device (`dtype=t.dtype, device=t.device`): no "
    "host tensor and no copy (unsafe: `type_as` puts it on the current CUDA device, this on the "
    "other tensor's: the same where that one is current)"
)
LIKE_OTHER = (
    "Possibly blocking host-to-device copy: `.to(other)` copies to the other tensor's device; "
    "if that is a GPU's, the CPU waits for all queued GPU work"
)
BUILT_LIKE = (
    "Build it with the other tensor's dtype and device (`dtype=t.dtype, device=t.device`): no "
    "host tensor and no copy; zeros and ones are the same in every dtype"
)
BUILT_LIKE_LIKELY = (
    "Build it with the other tensor's dtype and device (`dtype=t.dtype, device=t.device`; unsafe: "
    "`t` is likely a tensor, as its function uses it as one; a dtype or a device would make "
    "`.to(t)` a cast or a plain copy, which the rewrite does not keep)"
)


CONVERSION = (
    "the copy may also convert the dtype (to the one named, or to another tensor's), which a "
    "non-blocking copy does on the GPU and a blocking one on the CPU; syncfix proves no "
    "conversion alike on both (NaN, infinite and out-of-range floats measurably become other "
    "integers), so this rests on the values converting alike"
)


def and_device(description: str, target: Device) -> str:
    """An unsafe fix's text, naming the device fact too when the fix rests on it (a device
    syncfix cannot name; CUDA or the CPU are both exact)."""
    if target is not Device.UNKNOWN:
        return description
    return description[:-1] + (
        "; and the device is not provably CUDA: on another accelerator a non-blocking copy may "
        "read the host memory later, which syncfix does not prove safe)"
    )


ARRAY_FIX = (
    "Copy with non_blocking=True (unsafe: a tensor made from a numpy array syncfix cannot trace "
    "is likely in numpy's own, pageable memory, which the copy reads before it returns; a view "
    "of a pinned tensor, `t.numpy()`, refilled later would not be)"
)
ESCAPED_FIX = (
    "Copy with non_blocking=True (unsafe: other code can reach the pinned source without its name "
    "here, through a container, an object, a return or a closure, and might write it before the "
    "copy runs)"
)


MAYBE_GPU = (
    "Blocking host-to-device copy if the device is a GPU's (syncfix cannot name it): the CPU "
    "waits for all queued GPU work"
)
MAYBE_ON_HOST = (
    "Blocking host-to-device copy if the tensor is on the CPU (syncfix cannot tell; on the GPU "
    "it is no copy): the CPU waits for all queued GPU work"
)
MAYBE_EITHER_WAY = (
    "Possibly blocking copy: if the tensor is on the CPU and the device a GPU's (or the tensor on "
    "a GPU and the device the CPU), the CPU waits for all queued GPU work"
)
DEFAULT_DEVICE = (
    "; a tensor built without `device=` may be on CUDA here: this module, or a project file run "
    "with it, sets a default device or tensor type (`set_default_device`, "
    "`set_default_tensor_type`)"
)
UNKNOWN_DEVICE = (
    "Possibly blocking copy: syncfix can prove neither that the device is CUDA nor that the "
    "tensor is on the CPU (no fix: name the device, e.g. `torch.device(\"cuda\", rank)`, or "
    "pass non_blocking=True yourself if this copies a fresh CPU tensor to the GPU)"
)
UNKNOWN_DEVICE_JOINED = (
    "Possibly blocking copy: syncfix can prove neither that the device is CUDA nor that the "
    "tensor is on the CPU (no fix: name the device, e.g. `torch.device(\"cuda\", rank)`; a join "
    "of a loader's parts is new pageable memory, which a non-blocking copy of a few MiB still "
    "waits for: copy the parts with `non_blocking=True`, from a loader with `pin_memory=True`, "
    "and join them on the device)"
)


TOKENIZED = (
    "Blocking host-to-device copies of a tokenizer's output (likely new CPU tensors): its `.to` "
    "copies each tensor with a blocking copy; no fix: "
)
TOKENIZED_ADVICE = (
    "copy the tensors the model takes with `.to(device, non_blocking=True)` (exact on CUDA for "
    "tensors nothing writes afterwards)"
)
TOKENIZED_CAUGHT = (
    "it is inside a try whose handler catches its error ({}), and a non-blocking copy would raise "
    "later, outside the try"
)
STREAMS = (
    "the module, or a project module that imports it or that it imports, uses CUDA streams or "
    "graphs, whose copies need an ordering syncfix does not prove"
)
WRITTEN = (
    "the source may be written again before a non-blocking copy would read it; copy a tensor "
    "nothing writes afterwards"
)
PAGEABLE_BATCH_FIX = (
    "Copy with non_blocking=True (from the loader's pageable memory the copy stops waiting only "
    "while a batch is under a few MiB; pin the loader, SFX103, for it to pay at any size)"
)
LIKELY_BATCH_FIX = (
    "Copy with non_blocking=True (unsafe: an item of a batch from a loader syncfix cannot see is "
    "likely a fresh CPU tensor; `extend-safe-fixes = [\"SFX101\"]` in [tool.syncfix] if your "
    "loaders never refill pinned buffers)"
)
CAST_AFTER_FIX = (
    "Copy the item with non_blocking=True, then cast it on the device (unsafe: an item of a "
    "batch from a loader syncfix cannot see is likely a fresh CPU tensor; a cast's result is "
    "new pageable memory, whose non-blocking copy of a few MiB or more still waits, so the item "
    "is copied as the loader gave it, pinned where the loader pins; the device casts as the CPU "
    "does except NaN, infinite and out-of-range floats cast to an integer type)"
)
WHOLE_BATCH = (
    "the batch may be an object with its own `.to` (a tokenizer's `BatchEncoding`, a graph batch, "
    "a named tuple the copy is unpacked from, a class of this project whose `to` takes no "
    "`non_blocking`), which may not take `non_blocking`; pass "
    "non_blocking=True yourself where it "
    "does, or copy the tensors it holds (`batch[\"input_ids\"].to(device, non_blocking=True)`)"
)
MAY_SHARE = (
    "`{0}` of a value syncfix cannot name is new memory for a list, a tuple or sizes, but shares "
    "the memory of a CPU tensor of its type, which other code may write before a non-blocking "
    "copy reads it; if the value is a list of numbers (a config's), build and copy the tensor "
    "once, before the code that repeats"
)
NARROW_CLASS = (
    "the batch part may be an instance of {}, a class of this project whose `to` takes no "
    "`non_blocking`; pass non_blocking=True yourself where it is a tensor, or give that `to` a "
    "`non_blocking` parameter"
)
DRAINED = (
    " (the loop also reads a tensor's value on the host at line {}, every time round: if it is a "
    "GPU's, nothing is queued when this copy runs, and the fix saves only the copy's own wait "
    "until that read goes)"
)
UNKNOWN_TARGET_FIX = "Copy with non_blocking=True (unsafe: the source is a CPU tensor, exact on CUDA and the CPU; {})"
DECLARE_DEVICES = 'declare `devices = ["cuda", "cpu"]` in [tool.syncfix.torch] if the project runs on nothing else'


def name_the_device(a: ModuleAnalysis, device: cst.BaseExpression | None) -> str:
    """What would prove a device syncfix cannot name: the project's declaration of its devices,
    or, where it declares them already, a type for the expression (what it names is unknown:
    ``x.device`` of a value not provably a tensor may be anything)."""
    if not a.cuda_or_cpu_only or device is None:
        return "the device may be another accelerator, whose copies syncfix does not prove; " + DECLARE_DEVICES
    what = "the project declares CUDA and the CPU only, but syncfix cannot tell that `{}` names a device"
    if isinstance(device, cst.Attribute) and device.attr.value == "device" and isinstance(device.value, cst.Name):
        return what.format(code(a, device)) + f"; annotate `{device.value.value}: torch.Tensor` where it is bound"
    if isinstance(device, cst.Name):
        return what.format(device.value) + f"; annotate `{device.value}: torch.device` where it is bound"
    return what.format(code(a, device)) + "; bind it to a name annotated `torch.device` first"
