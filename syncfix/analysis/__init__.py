"""The shared analysis layer: what every rule asks about a module, answered once.

Rules never re-derive these facts; they ask a :class:`ModuleAnalysis`, built once per file by the
engine from LibCST metadata, and treat "unknown" as "cannot prove". Where each answer lives:

==========================================================  ====================================
Question                                                    Module
==========================================================  ====================================
What kinds of value are there; how do two values join?      ``values`` (Kind, Device, Memory,
                                                            Value)
What does ``torch.X`` / ``t.m()`` return, which dtype,      ``torch_api`` (data only)
shape class, device, purity?
Root name, dotted name, arguments, names a statement        ``syntax``
binds, is it a number literal?
Parents, qualified names, scopes; the front object          ``module`` (ModuleAnalysis)
Enclosing statement/block/function/loop, hot paths,         ``navigation``
streams, ``torch`` alias, fresh names
What a statement reads/writes/mutates; pure, effect-free,   ``effects``
logging and clock calls
Which bindings reach this use?                              ``bindings``
What value (tensor? device? pinned? fresh?) is this?        ``provenance``
What does a ``torch.*`` call give (device, memory, new)?    ``torch_calls``
What does an annotation promise (``torch.Tensor``,          ``annotations``
``tuple[...]``, ``Optional[T]``)?
Are a DataLoader's batches new memory each step, and stay   ``loaders``
so (no other ``collate_fn``, no ``batch_size=None``)?
What does an attribute hold (``t.grad``, ``self.fc``);      ``attributes``
is a callee an ``nn.Module`` class?
Does ``if isinstance(x, torch.Tensor | int...):`` narrow?   ``narrowing``
Is this a tokenizer's tensor (``return_tensors="pt"``)?     ``tokenizers``
What do the callers pass; what does a call return; which    ``callgraph``
functions escape (callers out of sight)?
What do other project files import from this module?        ``project``
What does a function of another project file return; what   ``imported``
do other files pass it; is its class an ``nn.Module``?
Which names may ``from module import *`` bind (so which     ``star_imports``
names are still builtins)?
Which functions do other files call from repeating code?    ``hotness``
What do a file's imports bind, read with Python's parser?   ``import_names``
A module's statements, a loop's shape, read with ``ast``    ``ast_reading``
Which device expression placed this tensor?                 ``devices``
Is ``x.to(d)`` no copy (``x`` already on ``d``)?             ``no_copy``
Does an ``if x.is_cuda:`` around code put ``x`` on a GPU?   ``device_tests``
Does a file name an accelerator other than CUDA (``"mps"``,  ``accelerators``
``torch_xla``)?
Is a batch Lightning's, already on the module's device?     ``lightning``
Does a name read as a loader's or a batch's?                ``loader_names``
Which dtype (exact, or its kind)?                           ``dtypes``
Which shape: one shape, 0-d, one element, 1-D?            ``shapes``
Is a list built here of alike tensors, or of scalars?       ``containers``
Is this call a torch loss; with which reduction?            ``losses``
What does ``torch.Tensor(...)``/``torch.LongTensor(n, k)``   ``legacy_constructors``
make?
Python number or host data, never a tensor?                 ``pynumbers``
A size (``x.shape[i]``), an int in the likely view?         ``sizes``
Can autograd matter here?                                   ``autograd``
Where is a tensor read on the host?                         ``host_reads``
Would a ``try`` around here (or around a caller) see an     ``handlers``
error raised here?
Memoised facts with loop-carried cycles                     ``fixpoint``
==========================================================  ====================================

Import what rules need from here: ``from syncfix.analysis import ModuleAnalysis, Value, Kind,
Device, ...``.
"""

from .attributes import cpu_state_in_a_branch, module_state, moved_once
from .devices import narrowed_to_tensor
from .effects import SHARING_CALLS, Effects
from .handlers import handler_site
from .host_reads import HostRead, math_read
from .lightning import lightning_log
from .module import ModuleAnalysis
from .syntax import (
    dotted_name,
    element_at,
    int_args,
    keyword,
    last_name,
    literal_kind,
    literal_number,
    named_as_device,
    positional,
    root_name,
    shape_item_of,
    stored_names,
    target_names,
)
from .torch_api import (
    CAST_METHODS,
    DATA_SHAPED_OPS,
    FULL_REDUCTIONS,
    HOST_FACTORIES,
    IN_PLACE_EXTRA,
    LEGACY_CONSTRUCTORS,
    LOG_LEVELS,
    METHOD_MAYBE_SELF,
    METHODS_TAKING_MEMORY,
    NON_SUPPRESSING_CONTEXTS,
    RAISING_ON_EMPTY,
    READ_BUILTINS,
    READ_METHODS,
    SIZE_FACTORIES,
    STREAM_APIS,
    TORCH_VIEWS,
    is_inplace_method,
)
from .values import BOTTOM, NUMBER, OTHER, UNKNOWN, Device, Kind, Memory, Value, join_all

__all__ = [
    "BOTTOM",
    "FULL_REDUCTIONS",
    "HOST_FACTORIES",
    "IN_PLACE_EXTRA",
    "CAST_METHODS",
    "DATA_SHAPED_OPS",
    "LEGACY_CONSTRUCTORS",
    "LOG_LEVELS",
    "METHOD_MAYBE_SELF",
    "METHODS_TAKING_MEMORY",
    "NON_SUPPRESSING_CONTEXTS",
    "NUMBER",
    "SHARING_CALLS",
    "OTHER",
    "RAISING_ON_EMPTY",
    "READ_BUILTINS",
    "READ_METHODS",
    "SIZE_FACTORIES",
    "STREAM_APIS",
    "TORCH_VIEWS",
    "UNKNOWN",
    "Device",
    "Effects",
    "HostRead",
    "math_read",
    "module_state",
    "moved_once",
    "cpu_state_in_a_branch",
    "Kind",
    "Memory",
    "ModuleAnalysis",
    "Value",
    "dotted_name",
    "element_at",
    "handler_site",
    "int_args",
    "is_inplace_method",
    "join_all",
    "keyword",
    "last_name",
    "lightning_log",
    "literal_kind",
    "literal_number",
    "named_as_device",
    "narrowed_to_tensor",
    "positional",
    "root_name",
    "shape_item_of",
    "stored_names",
    "target_names",
]
