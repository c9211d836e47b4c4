"""What syncfix knows about the torch API, as data: which functions and methods return tensors
(and of which kind), their result dtypes, shape classes, devices, purity and randomness.

Look a name up here first: "what does ``torch.X`` return" is answered by the namespace tables
(``TENSOR_NAMESPACES``, ``NON_TENSOR_NAMESPACES``, ``TORCH_NON_TENSOR``, ``TORCH_VIEWS``);
"what does ``t.m()`` return" by ``METHOD_NON_TENSOR``/``METHOD_MAYBE_SELF``; its dtype by the
dtype tables, its shape by the shape classes. Names are short (``"sum"``) unless a table says
qualified (``"torch.cuda.Stream"``). The facts that read these tables live in the other modules
of this package; a table here never runs code.
"""

from __future__ import annotations

from .values import NUMBER, OTHER, UNKNOWN, Kind, Value

# --------------------------------------------------------------------------------------------
# Namespaces: which torch.* functions return tensors

# Namespaces whose public functions return tensors (unless listed in TORCH_NON_TENSOR).
TENSOR_NAMESPACES = (
    "torch.",
    "torch.nn.functional.",
    "torch.linalg.",
    "torch.fft.",
    "torch.special.",
)
# Namespaces whose functions are not modelled as returning tensors.
NON_TENSOR_NAMESPACES = (
    "torch.cuda.", "torch.backends.", "torch.distributed.", "torch.utils.", "torch.jit.",
    "torch.optim.", "torch.nn.init.", "torch.testing.", "torch.autograd.", "torch.amp.",
    "torch.profiler.", "torch.onnx.", "torch.compiler.", "torch.multiprocessing.", "torch.hub.",
    "torch.distributions.", "torch.mps.", "torch.xpu.", "torch.library.", "torch.fx.",
    "torch.nn.utils.", "torch.nn.parallel.", "torch.export.", "torch._dynamo.", "torch.random.",
)
# Libraries whose functions never return a torch tensor, and what their results are read as, so
# that the likely view does not take their arrays for tensors (``cv2.distanceTransform(m)
# .reshape(-1)``). cv2's and scipy's results are arrays, numpy scalars, numbers or tuples of
# them, and an array may be an argument's own memory (``cv2.rectangle`` draws into its image and
# returns it): memory unknown. PIL's are images.
HOST_LIBRARY_RESULTS = {"cv2.": Value(Kind.NDARRAY), "scipy.": Value(Kind.NDARRAY), "PIL.": OTHER}
# torch.* callables that do not return a tensor (or return something we do not model).
TORCH_NON_TENSOR = {
    "is_tensor", "is_storage", "is_floating_point", "is_complex", "is_nonzero", "numel",
    "manual_seed", "seed", "initial_seed", "save", "load", "no_grad", "enable_grad",
    "inference_mode", "set_grad_enabled", "is_grad_enabled", "device", "dtype", "Size",
    "get_default_dtype", "set_default_dtype", "set_default_device", "set_default_tensor_type",
    "set_printoptions", "compile", "equal", "allclose", "typename", "use_deterministic_algorithms",
    "are_deterministic_algorithms_enabled", "set_num_threads", "get_num_threads", "set_float32_matmul_precision",
    "autocast", "Generator", "finfo", "iinfo", "promote_types", "result_type", "can_cast",
    "chunk", "split", "unbind", "tensor_split", "hsplit", "vsplit", "dsplit", "meshgrid",
    "broadcast_tensors", "sym_int", "sym_float", "get_device", "is_inference_mode_enabled",
}
# torch.* functions returning a sequence of tensors on their tensor arguments' device.
TENSOR_SEQUENCES = {"meshgrid", "broadcast_tensors", "split", "chunk", "unbind", "tensor_split"}
# torch.* callables returning a view of (or possibly the same object as) their first argument.
TORCH_VIEWS = {
    "narrow", "select", "squeeze", "unsqueeze", "reshape", "flatten", "t", "transpose",
    "permute", "as_strided", "view_as_real", "view_as_complex", "movedim", "swapaxes",
    "diagonal", "detach", "expand_copy", "atleast_1d", "atleast_2d", "atleast_3d", "as_tensor",
    "from_numpy", "asarray", "real", "imag", "unflatten", "ravel", "squeeze_copy",
    # these return their input's memory too (a view, or the input itself)
    "moveaxis", "swapdims", "broadcast_to", "conj", "adjoint", "positive", "resolve_conj",
    "resolve_neg", "split", "unbind", "chunk", "tensor_split", "hsplit", "vsplit", "dsplit",
    "from_dlpack", "frombuffer", "dropout", "alpha_dropout", "feature_alpha_dropout",
    "dropout1d", "dropout2d", "dropout3d", "conj_physical", "einsum", "meshgrid",
    "broadcast_tensors",
    # ``torch.nn.Parameter(x)``, ``torch.nn.Buffer(x)``, the legacy
    # ``torch.autograd.Variable(x)``: the same memory as ``x``
    "Parameter", "Buffer", "Variable",
}
# The keyword a factory takes its device from.
CREATION_DEVICE_ARG = "device"
# Factories whose result is on the default device (the CPU unless ``set_default_device``) whatever
# their arguments when no ``device=`` is given: a CUDA tensor passed as a size, bound or fill is
# read as a number (measured on an H100: ``torch.arange(cuda_n)`` is a CPU tensor). The same holds
# for ``torch.tensor([...])`` of a list or tuple display, even of CUDA tensors.
DEFAULT_DEVICE_FACTORIES = {
    "arange", "linspace", "logspace", "zeros", "ones", "empty", "full", "rand", "randn",
    "randint", "randperm", "eye",
}
# Factories that copy host data: given a value syncfix cannot name and no ``device=``, the likely
# view reads it as host data (a list, an array), so the result is on the CPU. ``torch.tensor`` of a
# CUDA tensor is copied to CUDA, with a warning to call ``clone()``; not ``as_tensor``/``asarray``,
# made to take tensors as they are (sentence-transformers' ``torch.as_tensor(loss_value)``).
HOST_DATA = frozenset({"tensor"})
# Legacy constructors, ``torch.<name>(list)``: a new CPU tensor copied from the list, of this
# dtype (None: the default dtype, which ``set_default_dtype`` may change).
LEGACY_CONSTRUCTORS = {
    "Tensor": None, "FloatTensor": "torch.float32", "DoubleTensor": "torch.float64",
    "HalfTensor": "torch.float16", "BFloat16Tensor": "torch.bfloat16", "LongTensor": "torch.int64",
    "IntTensor": "torch.int32", "ShortTensor": "torch.int16", "ByteTensor": "torch.uint8",
    "CharTensor": "torch.int8", "BoolTensor": "torch.bool",
}
# Calls that build a tensor from sizes or host data (on the default device without ``device=``).
HOST_FACTORIES = frozenset(
    {f"torch.{name}" for name in DEFAULT_DEVICE_FACTORIES | set(LEGACY_CONSTRUCTORS)}
    | {"torch.tensor", "torch.as_tensor", "torch.asarray", "torch.from_numpy"}
)
# What a tokenizer's output (``return_tensors="pt"``) holds as tensors (analysis/tokenizers.py).
TOKENIZER_TENSOR_KEYS = frozenset({
    "input_ids", "attention_mask", "token_type_ids", "position_ids", "pixel_values",
    "special_tokens_mask", "offset_mapping", "overflowing_tokens", "labels",
})
# torch.* factories whose result is int64 when no dtype is given.
INT64_FACTORIES = {"torch.randint", "torch.randperm", "torch.argsort", "torch.argmax",
                    "torch.argmin", "torch.nonzero", "torch.searchsorted", "torch.bucketize"}
# Factories whose result has the default float dtype when no dtype is given.
FLOAT_FACTORIES = {
    "zeros", "ones", "empty", "rand", "randn", "eye", "linspace", "logspace", "empty_strided",
}
# Qualified names of the DataLoader class (its items are batches).
DATALOADER = {"torch.utils.data.DataLoader", "torch.utils.data.dataloader.DataLoader"}
# Qualified names of nn.Module (a subclass's instances are modules).
MODULE_BASES = {"torch.nn.Module", "torch.nn.modules.module.Module"}
# Annotations that promise a tensor.
TENSOR_TYPES = ("torch.Tensor", "torch.FloatTensor", "torch.LongTensor")

# --------------------------------------------------------------------------------------------
# Tensor methods and attributes: what they return

# Tensor methods that return something other than a tensor.
# Tensor methods and torch functions whose result's shape depends on the values (a count only
# the GPU knows: each syncs).
DATA_SHAPED_OPS = frozenset({"nonzero", "argwhere", "masked_select", "unique", "unique_consecutive"})
METHOD_NON_TENSOR = {
    "item": NUMBER, "tolist": OTHER, "numpy": Value(Kind.NDARRAY), "size": OTHER, "dim": NUMBER,
    "ndimension": NUMBER, "numel": NUMBER, "nelement": NUMBER, "element_size": NUMBER,
    "is_contiguous": NUMBER, "is_floating_point": NUMBER, "is_complex": NUMBER,
    "data_ptr": NUMBER, "stride": OTHER, "storage_offset": NUMBER, "get_device": NUMBER,
    "backward": OTHER, "register_hook": OTHER, "equal": NUMBER, "allclose": NUMBER,
    "is_pinned": NUMBER, "untyped_storage": OTHER, "storage": OTHER, "is_shared": NUMBER,
    "is_set_to": NUMBER, "__len__": NUMBER, "__bool__": NUMBER, "__float__": NUMBER,
    "__int__": NUMBER, "__index__": NUMBER, "type": UNKNOWN, "unbind": OTHER, "split": OTHER,
    "chunk": OTHER, "tensor_split": OTHER, "data_ptr_": NUMBER, "apply_": OTHER,
    "cpu_": OTHER, "record_stream": OTHER, "is_inference": NUMBER, "is_signed": NUMBER,
    "is_same_size": NUMBER, "is_conj": NUMBER, "is_neg": NUMBER, "is_coalesced": NUMBER,
}
# Tensor attributes that are not tensors.
TENSOR_ATTR_NON_TENSOR = {
    "shape", "dtype", "device", "requires_grad", "ndim", "is_cuda", "is_leaf", "layout",
    "is_sparse", "is_quantized", "is_meta", "names", "itemsize", "nbytes", "grad_fn",
}
# Tensor attributes that are tensors on the same device.
# Read only by the *likely* view of the analysis (``ModuleAnalysis.likely``): a receiver syncfix
# cannot name, called with one of these methods (or read through one of these attributes) in a
# module that imports torch, is taken to be a tensor. Not a proof: numpy arrays share some names.
LIKELY_TENSOR_METHODS = {
    "eq", "ne", "lt", "gt", "le", "ge", "argmax", "argmin", "sum", "mean", "max", "min", "amax",
    "amin", "abs", "float", "double", "half", "bfloat16", "long", "int", "bool", "detach", "cuda",
    "view", "view_as", "reshape", "squeeze", "unsqueeze", "flatten", "clone", "exp", "log",
    "sqrt", "pow", "norm", "softmax", "log_softmax", "sigmoid", "masked_fill", "nonzero", "any",
    "all", "isnan", "isfinite", "logical_not", "logical_and", "std", "var", "prod", "cumsum",
    "numel", "contiguous", "type_as", "topk", "sort", "gather", "masked_select",
    "numpy",  # then an array: ``x.numpy().astype(bool).sum()`` is no tensor's
}
LIKELY_TENSOR_ATTRS = {"grad", "weight", "bias"}
# Methods ``nn.Module`` has and tensors do not.
MODULE_ONLY_METHODS = frozenset({
    "eval", "train", "parameters", "named_parameters", "modules", "named_modules", "children",
    "state_dict", "load_state_dict", "buffers", "named_buffers", "zero_grad", "register_buffer",
})
# ``nn.Module`` methods that walk a model's layers or tensors: a loop over one runs once per
# layer, so it repeats only where the code around it does (a conversion or an init is one-time).
MODEL_WALKS = frozenset({
    "modules", "named_modules", "children", "named_children", "parameters", "named_parameters",
    "buffers", "named_buffers",
})
# Calls a walk over a model goes through (``enumerate(model.parameters())``).
WALK_WRAPPERS = frozenset({"enumerate", "list", "sorted"})
# Methods of both that return the object itself, placed or cast (``model.cpu().parameters()``).
PLACING_METHODS = frozenset({"cpu", "cuda", "to", "half", "float", "double", "bfloat16", "requires_grad_"})

TENSOR_ATTR_TENSOR = {"T", "mT", "H", "mH", "data", "grad", "real", "imag"}
# Tensor methods whose result may be the receiver itself (so it keeps the receiver's memory).
METHOD_MAYBE_SELF = {
    "float", "double", "half", "bfloat16", "int", "long", "short", "bool", "byte", "char",
    "type", "type_as", "contiguous", "detach", "to", "requires_grad_", "view", "view_as",
    "reshape", "reshape_as", "flatten", "squeeze", "unsqueeze", "transpose", "permute", "t",
    "expand", "expand_as", "narrow", "select", "unfold", "as_strided", "movedim", "swapaxes",
    "diagonal", "unflatten", "ravel", "real", "imag", "align_to", "refine_names", "rename",
    "coalesce", "share_memory_", "resolve_conj", "resolve_neg",
    "moveaxis", "swapdims", "broadcast_to", "conj", "conj_physical", "adjoint", "positive",
    "split", "unbind", "chunk", "tensor_split", "hsplit", "vsplit", "dsplit", "to_dense",
    "sum_to_size", "as_subclass", "new", "values", "indices", "split_with_sizes",
    "unsafe_split", "unsafe_chunk", "unsafe_split_with_sizes", "dequantize",
}
# Tensor methods whose result, given arguments, is another tensor's memory: ``t.set_(buf)``
# takes ``buf``'s storage, ``t.new(buf)`` returns ``buf`` itself.
METHODS_TAKING_MEMORY = {"set_", "new"}
# In-place methods besides the ``name_`` convention (see is_inplace_method).
IN_PLACE_EXTRA = {"set_", "resize_", "resize_as_", "copy_", "zero_", "fill_", "share_memory_"}

# --------------------------------------------------------------------------------------------
# dtypes: names, casts, and functions by the dtype of their result

# Names of torch dtypes (``torch.<name>``), aliases included.
DTYPES = {
    "float32", "float", "float64", "double", "float16", "half", "bfloat16", "int64", "long",
    "int32", "int", "int16", "short", "int8", "uint8", "bool", "complex64", "complex128",
    "cfloat", "cdouble", "float8_e4m3fn", "float8_e5m2", "uint16", "uint32", "uint64",
}
# Alias -> canonical dtype name.
DTYPE_ALIASES = {
    "float": "float32", "double": "float64", "half": "float16", "long": "int64", "int": "int32",
    "short": "int16", "cfloat": "complex64", "cdouble": "complex128",
}
# Floating dtypes no wider than float64.
FLOATS = {"torch.float32", "torch.float64", "torch.float16", "torch.bfloat16"}
# bool and integer dtypes.
BOOL_INT = {
    "torch.bool", "torch.uint8", "torch.int8", "torch.int16", "torch.int32", "torch.int64",
}
# Integer dtypes, aliases included (not bool).
INT_DTYPES = {"torch.int64", "torch.long", "torch.int32", "torch.int", "torch.int16",
              "torch.short", "torch.int8", "torch.uint8"}
# Cast methods -> the dtype they give.
CAST_METHODS = {
    "float": "torch.float32", "double": "torch.float64", "half": "torch.float16",
    "bfloat16": "torch.bfloat16", "long": "torch.int64", "int": "torch.int32",
    "short": "torch.int16", "bool": "torch.bool", "byte": "torch.uint8", "char": "torch.int8",
}
# Cast methods -> the dtype kind they give.
CAST_KIND = {
    "float": "float", "double": "float", "half": "float", "bfloat16": "float",
    "long": "int", "int": "int", "short": "int", "char": "int", "byte": "int", "bool": "bool",
}
# dtype name -> its kind ("float", "int", "bool").
DTYPE_KIND = {
    **{d: "float" for d in ("float32", "float", "float64", "double", "float16", "half", "bfloat16")},
    **{d: "int" for d in ("int64", "long", "int32", "int", "int16", "short", "int8", "uint8")},
    "bool": "bool",
}
# Functions and methods whose result is a bool tensor.
BOOL_FNS = {
    "isnan", "isinf", "isfinite", "isposinf", "isneginf", "isreal", "signbit", "logical_and",
    "logical_or", "logical_not", "logical_xor", "eq", "ne", "gt", "ge", "lt", "le", "greater",
    "greater_equal", "less", "less_equal", "not_equal", "any", "all", "isclose", "isin",
}
# The element-wise ones among them (same shape as the broadcast inputs).
BOOL_ELEMENTWISE = BOOL_FNS - {"any", "all", "isin"}
# Keep the input's dtype (for any dtype they accept).
PROMOTING_FNS = {"clamp", "clip", "maximum", "minimum", "fmax", "fmin"}
# Functions that keep the input's dtype (for any dtype they accept).
SAME_DTYPE_FNS = {
    "abs", "neg", "negative", "clone", "detach", "relu",
    "flatten", "reshape", "squeeze", "unsqueeze", "transpose", "permute", "flip", "roll",
    "amax", "amin", "sign", "masked_fill", "contiguous", "triu", "tril",
}
# Keep a floating input's dtype (integer inputs would promote or raise).
FLOAT_ONLY_FNS = {
    "exp", "log", "log1p", "expm1", "sqrt", "rsqrt", "tanh", "sigmoid", "sin", "cos", "tan",
    "floor", "ceil", "round", "trunc", "frac", "reciprocal", "mean", "square", "erf", "exp2",
    "log2", "log10", "atan", "asin", "acos", "sinh", "cosh", "softplus", "gelu", "silu",
    "norm", "std", "var", "nan_to_num", "logsumexp",
}
# Methods that keep the receiver's dtype.
SAME_DTYPE_METHODS = SAME_DTYPE_FNS | {
    "cuda", "cpu", "pin_memory", "view", "view_as", "expand", "expand_as", "narrow", "select",
    "t", "max", "min", "abs_", "neg_", "clamp_", "mul_", "add_", "sub_", "fill_", "zero_",
}
# Tensor methods that keep the receiver's dtype (and device, unless they move it).
KIND_KEEPING = {
    "detach", "clone", "cpu", "cuda", "contiguous", "squeeze", "unsqueeze", "reshape", "view",
    "flatten", "ravel", "max", "min", "amax", "amin", "pin_memory", "detach_", "requires_grad_",
    # views and reorderings of the same elements
    "narrow", "select", "transpose", "permute", "t", "expand", "expand_as", "view_as", "flip",
    "roll", "reshape_as", "movedim", "unflatten", "index_select", "gather",
}
# Methods whose result is floating for any real input (or that raise for integers).
FLOATING_RESULT = {"softmax", "log_softmax", "sigmoid", "tanh", "exp", "log", "sqrt", "rsqrt"}
# Elementwise methods that keep a floating dtype floating (integers may stay integers).
FLOAT_KEEPING = {
    "pow", "abs", "neg", "square", "clamp", "clip", "add", "sub", "mul", "div", "relu",
    "sin", "cos", "reciprocal", "lerp", "nan_to_num",
}
# Loss functions that only accept floating inputs (whatever the reduction), so return floats.
FLOAT_LOSSES = {
    "cross_entropy", "nll_loss", "binary_cross_entropy", "binary_cross_entropy_with_logits",
    "mse_loss", "smooth_l1_loss", "huber_loss", "l1_loss", "soft_margin_loss", "kl_div",
}
# Norms: a floating result.
# Where torch defines a function that it exports under a shorter public name: a name imported
# from the defining module is the public one (``from torch.nn.utils.clip_grad import
# clip_grad_norm_``, ESPnet's recipes).
REEXPORTED = {
    "torch.nn.utils.clip_grad.clip_grad_norm_": "torch.nn.utils.clip_grad_norm_",
    "torch.nn.utils.clip_grad.clip_grad_norm": "torch.nn.utils.clip_grad_norm_",
    "torch.nn.utils.clip_grad_norm": "torch.nn.utils.clip_grad_norm_",
}
NORMS = {"torch.nn.utils.clip_grad_norm_", "torch.linalg.vector_norm", "torch.norm"}
# Methods and torch.* functions whose result is int64 whatever the input's dtype.
INT64_RESULTS = {"argmax", "argmin", "argsort", "count_nonzero", "nonzero"}

# --------------------------------------------------------------------------------------------
# Shape classes: reductions, element-wise and shape-keeping ops

# Reductions that, called with no dim, give a 0-d tensor (shape keys).
REDUCTIONS = {
    "sum", "mean", "prod", "amax", "amin", "max", "min", "any", "all", "norm", "std", "var",
    "logsumexp", "count_nonzero",
}
# Reductions that, called with no dim, give a 0-d tensor.
FULL_REDUCTIONS = {
    "sum", "mean", "nansum", "nanmean", "max", "min", "amax", "amin", "prod", "std", "var",
    "norm", "all", "any", "argmax", "argmin", "count_nonzero", "median", "nanmedian",
}
# Reductions that raise for a tensor with no elements (no identity): ``max``, ``amax``...
RAISING_ON_EMPTY = {
    "max", "min", "amax", "amin", "aminmax", "argmax", "argmin", "median", "nanmedian",
    "kthvalue", "mode", "topk",
}
# Element-wise functions: the result has the input's shape.
ELEMENTWISE_FNS = (SAME_DTYPE_FNS | FLOAT_ONLY_FNS) - {
    "flatten", "reshape", "squeeze", "unsqueeze", "transpose", "permute", "amax", "amin",
    "mean", "norm", "std", "var", "logsumexp", "clamp", "clip", "masked_fill", "maximum",
    "minimum", "roll", "flip",
} | {"maximum", "minimum"}
# Element-wise methods: the result has the receiver's shape.
ELEMENTWISE_METHODS = (ELEMENTWISE_FNS - {"maximum", "minimum"}) | BOOL_ELEMENTWISE | {
    "cuda", "contiguous", "clone", "detach", "float", "double", "half", "bool", "long", "int",
}
# Tensor methods that keep the receiver's shape (called with no argument, or only a dtype/device).
SHAPE_KEEPING = {
    "detach", "clone", "float", "double", "half", "bfloat16", "long", "int", "short", "bool",
    "cpu", "cuda", "to", "contiguous", "abs", "neg", "sqrt", "exp", "log", "sigmoid", "relu",
    "type", "type_as", "requires_grad_", "detach_", "pin_memory",
}
# Losses whose default reduction gives a 0-d tensor.
SCALAR_LOSSES = FLOAT_LOSSES | {"l1_loss", "kl_div"}

# --------------------------------------------------------------------------------------------
# Loss modules: what calling one returns

# ``torch.nn`` loss classes (``nn.CrossEntropyLoss()``...). Called on tensors, each returns a
# floating tensor (integer inputs raise), 0-d with ``reduction="mean"`` (the default) or
# ``"sum"``; ``reduction="none"`` gives the unreduced shape. Their legacy ``size_average``/
# ``reduce`` arguments (the first positional ones of several) can change that, so a module
# built with positional arguments or with those keywords gets no shape claim.
LOSS_MODULES = {
    "CrossEntropyLoss", "NLLLoss", "MSELoss", "L1Loss", "SmoothL1Loss", "HuberLoss", "BCELoss",
    "BCEWithLogitsLoss", "SoftMarginLoss", "KLDivLoss", "PoissonNLLLoss", "GaussianNLLLoss",
    "MultiLabelSoftMarginLoss", "MultiMarginLoss", "HingeEmbeddingLoss",
    "CosineEmbeddingLoss", "MarginRankingLoss", "TripletMarginLoss",
}
# Keywords of a loss function or module that may make its result unreduced.
LOSS_LEGACY_KEYWORDS = ("size_average", "reduce")  # in this order (legacy_get_string's)
# Reductions that give a 0-d result.
SCALAR_REDUCTIONS = {"mean", "sum"}
# Module methods that return the module itself (so ``nn.MSELoss().to(dev)`` is still the loss).
MODULE_SELF_METHODS = {"to", "cuda", "cpu", "train", "eval", "half", "float", "double", "requires_grad_"}

# --------------------------------------------------------------------------------------------
# Autograd modes

# Context managers and decorators that turn grad off.
NO_GRAD = {
    "torch.no_grad", "torch.inference_mode", "torch.autograd.no_grad",
    "torch.autograd.grad_mode.no_grad", "torch.autograd.grad_mode.inference_mode",
}
# Context managers and decorators that may turn grad back on.
GRAD_ON = {
    "torch.enable_grad", "torch.set_grad_enabled", "torch.autograd.enable_grad",
    "torch.autograd.set_grad_enabled", "torch.autograd.grad_mode.enable_grad",
    "torch.autograd.grad_mode.set_grad_enabled",
}

# Context managers that never swallow an exception raised in their body: after ``with`` one
# of these, every binding its body made has run (so the last one holds).
NON_SUPPRESSING_CONTEXTS = NO_GRAD | GRAD_ON | {
    "torch.autocast", "torch.amp.autocast", "torch.cuda.amp.autocast", "torch.cpu.amp.autocast",
    "torch.cuda.device", "contextlib.nullcontext",
    # a progress bar closes itself on exit and lets the error through (``tqdm.__exit__`` returns
    # None), as a training loop's ``with tqdm(total=steps) as pbar:`` needs
    "tqdm.tqdm", "tqdm.std.tqdm", "tqdm.auto.tqdm", "tqdm.autonotebook.tqdm", "tqdm.notebook.tqdm",
}

# --------------------------------------------------------------------------------------------
# Devices, streams and graphs

# CUDA streams and graphs: a module using them orders copies itself.
# (Not ``current_stream``/``default_stream``: they name the stream every op runs on already, so
# recording an event on one or passing its handle along adds no stream: stylegan2's timing
# ``Event.record(torch.cuda.current_stream(device))``. What would, waiting or switching, is here.)
STREAM_APIS = (
    "torch.cuda.Stream", "torch.cuda.stream", "torch.cuda.set_stream",
    "torch.cuda.StreamContext", "torch.Stream", "torch.cuda.ExternalStream", "torch.cuda.graph",
    "torch.cuda.CUDAGraph", "torch.cuda.make_graphed_callables",
)
# Stream methods called on tensors or streams.
STREAM_METHODS = {"wait_stream", "record_stream", "wait_event"}
# Last parts of the names above (a cheap pre-filter).
STREAM_WORDS = {api.rsplit(".", 1)[-1] for api in STREAM_APIS} | STREAM_METHODS
# A ``.to(x)`` argument named so is a dtype (``dtype``, ``self.dtype``, ``x.dtype``,
# ``compute_dtype``, ``self._orig_dtype``): a cast, not a copy, unless its value says otherwise.
DTYPE_NAME = "dtype"
DTYPE_NAME_SUFFIX = "_dtype"
# ``src_type``/``dst_type`` (mmcv's ``cast_tensor_type``) name dtypes too; ``device_type``
# ("cuda") names a device, and so may any ``*_type`` that mentions one.
TYPE_NAME_SUFFIX = "_type"
DEVICE_WORDS = ("device", "accel", "backend")
# Words in a name that say it holds a device or a device index (``args.device``, ``gpu_id``,
# ``local_rank``), not a tensor or a dtype: a hint for likely facts and messages, never a proof.
DEVICE_NAME_WORDS = ("device", "gpu", "rank", "cuda", "dev")
# Functions returning a Python int that code passes as a device index (``.to(local_rank)``):
# an int names a device of the current accelerator (CUDA on the machines syncfix fixes for).
DEVICE_INDEX_FUNCTIONS = {
    "torch.cuda.current_device": "int", "torch.cuda.device_count": "int",
    "torch.distributed.get_rank": "int", "torch.distributed.get_world_size": "int",
    "torch.distributed.get_node_local_rank": "int",
}
# Tests whose true branch means "on CUDA" (so their ``else`` copies to something else): the call,
# and what is compared with ``"cuda"`` (``device_type == "cuda"``, ``device.type == "cuda"``).
CUDA_AVAILABLE = {"torch.cuda.is_available"}
DEVICE_TYPE_NAME = "device_type"
DEVICE_TYPE_ATTR = "type"
# Tensor methods whose result, for a CPU receiver, is the receiver or a new CPU tensor (so an
# item of a batch stays a CPU tensor through them: ``x.float().cuda()``).
CPU_KEEPING_METHODS = {
    "float", "double", "half", "bfloat16", "long", "int", "short", "bool", "byte", "char",
    "contiguous", "view", "view_as", "reshape", "squeeze", "unsqueeze", "permute", "transpose",
    "flatten", "detach", "clone", "pin_memory", "narrow", "select", "t",
}
# Tensor attributes that are the receiver's own memory (an item of a batch stays one through
# them: ``data.data.view(-1, 784).to(DEVICE)``).
CPU_KEEPING_ATTRS = {"data"}
# torch.* factories whose positional arguments are sizes (and ints): without ``device=`` they
# build on the default device (the CPU unless the module sets one), whatever those values are.
SIZE_FACTORIES = {"zeros", "ones", "empty", "rand", "randn", "randint", "randperm", "eye"}
# Dict views of a batch: iterating ``batch.items()`` gives (key, item), ``batch.values()`` items.
BATCH_DICT_VIEWS = ("items", "values")
# Methods a hand-written loader hands out its next batch with (llm.c's
# ``train_loader.next_batch()``): on an object named as a loader, likely a batch.
BATCH_GETTERS = frozenset({"next_batch", "get_batch", "get_next_batch", "sample_batch", "next_sample"})

# --------------------------------------------------------------------------------------------
# Purity and randomness

# Builtins that neither mutate their arguments nor run user code worth worrying about. Not
# ``next``: it resumes a generator (or a loader's workers), whose code may write anything.
PURE_BUILTINS = {
    "len", "range", "enumerate", "zip", "isinstance", "float", "int", "bool", "str", "abs",
    "min", "max", "sum", "round", "tuple", "list", "dict", "set", "sorted", "repr", "format",
    "getattr", "hasattr", "type", "id", "any", "all", "map", "filter", "reversed", "divmod",
    "pow", "hash", "iter",
}
# Ops that draw random numbers: running one twice changes later draws.
RANDOM_OPS = {
    "rand", "randn", "randint", "randperm", "rand_like", "randn_like", "randint_like", "bernoulli",
    "multinomial", "normal", "poisson", "dropout", "dropout1d", "dropout2d", "dropout3d",
    "alpha_dropout", "feature_alpha_dropout", "rrelu", "gumbel_softmax", "uniform_", "normal_",
    "random_", "exponential_", "geometric_", "log_normal_", "cauchy_", "bernoulli_",
}

# --------------------------------------------------------------------------------------------
# Host reads, logging and clocks

# Host reads of a tensor's value: ``t.item()``/``t.tolist()`` and the builtins.
READ_METHODS = ("item", "tolist")
# Builtins that read a tensor's value on the host.
READ_BUILTINS = ("builtins.float", "builtins.int", "builtins.bool")
# Their short names (a pre-filter before resolving names).
READ_BUILTIN_NAMES = frozenset(n.rsplit(".", 1)[-1] for n in READ_BUILTINS)
# Methods that use a tensor's value on the host.
HOST_METHODS = {"item", "tolist", "cpu", "numpy", "__bool__", "__float__", "__int__"}
# Builtins that use a value on the host (printing and formatting included).
HOST_BUILTINS = {
    "builtins.bool", "builtins.int", "builtins.float", "builtins.print", "builtins.str",
    "builtins.repr", "builtins.format", "builtins.list", "builtins.len", "builtins.max",
    "builtins.min", "builtins.sum", "builtins.round", "builtins.abs",
}
# Logger methods.
LOG_LEVELS = {"debug", "info", "warning", "warn", "error", "exception", "critical", "log"}
# Wall-clock reads.
CLOCKS = {"time.time", "time.perf_counter", "time.monotonic", "time.time_ns",
           "time.perf_counter_ns", "time.monotonic_ns", "time.process_time", "timeit.default_timer"}

# --------------------------------------------------------------------------------------------
# Python and numpy

# Facts the SFX1xx rules ask for (see the methods at the end of ModuleAnalysis).
PY_NUMBER_BUILTINS = {"builtins.float": "float", "builtins.int": "int", "builtins.bool": "bool",
                       "builtins.len": "int"}
# Module constants that are Python floats (``np.inf`` is ``float("inf")``).
FLOAT_CONSTANTS = frozenset(
    f"{module}.{name}" for module in ("math", "numpy") for name in ("inf", "nan", "pi", "e", "tau")
)
# Wrappers whose iteration yields the wrapped iterable's items.
PASS_THROUGH_ITER = {"tqdm.tqdm", "tqdm.auto.tqdm", "tqdm.notebook.tqdm", "iter", "list", "tuple", "itertools.islice"}
# Step hooks of a framework's class (a Hugging Face ``Trainer``'s ``compute_loss``/
# ``prediction_step``, Lightning's ``test_step``/``predict_step``, a ``torch.autograd.Function``'s
# ``backward``) or handed to an engine from
# the function that builds it (ignite's ``Engine(test_step)``): a module's top-level function of
# that name (a debug script's ``def test_step(model)``) is one-time code.
METHOD_HOOKS = frozenset({"compute_loss", "prediction_step", "test_step", "predict_step", "backward"})
# Methods that yield each item of their first argument while logging progress (a likely fact,
# by name: ``MetricLogger.log_every`` of torchvision's references and the repositories that
# copied it).
LOGGING_ITERATORS = {"log_every"}
# numpy callables that always build a new ndarray or numpy scalar (never return their argument's
# own type, as ``np.round(t)``/``np.reshape(t)`` do for a tensor).
NUMPY_CONSTRUCTORS = {
    "array", "asarray", "ascontiguousarray", "arange", "zeros", "ones", "full", "empty",
    "linspace", "logspace", "eye", "identity", "frombuffer", "fromiter", "fromfile", "load",
    "loadtxt", "genfromtxt", "zeros_like", "ones_like", "full_like", "empty_like",
    "float16", "float32", "float64", "int8", "int16", "int32", "int64", "uint8", "uint16",
    "uint32", "uint64", "bool_", "complex64", "complex128", "double", "single", "longlong",
}

# numpy callables whose array is new memory numpy allocated (never a view of their argument,
# which may be a tensor's pinned memory: ``np.asarray(t)``, ``t.numpy()`` share it); ``array``
# unless ``copy=`` is given. Any ``numpy.random.*`` result is new too.
NUMPY_ALLOCATING = {
    "array", "arange", "zeros", "ones", "full", "empty", "linspace", "logspace", "eye", "identity",
    "fromiter", "fromfile", "load", "loadtxt", "genfromtxt", "zeros_like", "ones_like",
    "full_like", "empty_like", "concatenate", "stack", "hstack", "vstack", "copy",
    # math and reductions write a new result (their ``out=`` form does not count)
    "sqrt", "exp", "log", "log2", "log10", "log1p", "expm1", "abs", "absolute", "square",
    "power", "sin", "cos", "tanh", "floor", "ceil", "sign", "clip", "maximum", "minimum",
    "where", "mean", "sum", "prod", "cumsum", "cumprod", "std", "var", "argmax", "argmin",
    "argsort", "sort", "unique", "bincount", "dot", "matmul", "outer", "isnan", "isfinite",
}
# ndarray methods that return new memory (``astype`` copies unless ``copy=False``)
NDARRAY_COPYING_METHODS = {"copy", "astype"}


def shares_first_argument(short: str, inplace_keyword: bool) -> bool:
    """Is ``torch.<short>(x, ...)`` ``x``'s memory: a view, ``x`` itself, or an in-place op
    (``torch.relu_``, or ``inplace=`` given and not ``False``)?"""
    return short in TORCH_VIEWS or is_inplace_method(short) or inplace_keyword


def is_inplace_method(name: str) -> bool:
    """``add_``, ``copy_``... (but not dunders like ``__init__``)."""
    return (name.endswith("_") and not name.endswith("__") and not name.startswith("_")) or (
        name in IN_PLACE_EXTRA
    )

#: ``torch.<op>(tensors, ...)``: ops whose first argument is a sequence of tensors; when it is not
#: a list or tuple display syncfix can read item by item, the result is where those tensors are.
SEQUENCE_OPS = frozenset(
    {"cat", "concat", "concatenate", "stack", "hstack", "vstack", "dstack", "column_stack", "row_stack"}
)

# Calls that make an ``nn.Module`` outside ``torch.nn`` (torchvision's builders are matched by
# module: attributes.made_module).
MODULE_FACTORIES = frozenset({"timm.create_model", "timm.models.create_model", "torchvision.models.get_model"})
# torchvision.models functions that build no model.
TORCHVISION_NON_BUILDERS = frozenset({"get_weight", "get_model_weights", "list_models", "get_model_builder", "WeightsEnum"})
