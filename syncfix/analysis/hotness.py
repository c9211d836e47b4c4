"""Which functions run repeatedly because code in *another* project file calls them from a loop.

Within a file the analysis sees loops and step-like functions (``forward``, ``training_step``...)
and what they call by name. Across files, a helper such as ``timestep_embedding`` in ``nn.py``,
called from ``forward`` in ``unet.py``, runs every step too. The project index reads each file
once with the standard library's parser (a C parser: far cheaper than the analysis) and keeps
per function the calls it makes, and whether each sits in a loop. A fixpoint over the project
then marks a function hot when a hot function, or any loop, calls it (not a loop that calls
``input()`` each time round: it waits for a person): by a name imported from
its module (``from .nn import timestep_embedding``), through its module (``nn.f(...)``), in
its own file by name, or as ``self.method(...)``: this file's method (or, where ``self.method``
holds ``C(...)`` of a project class, its module's ``__call__``), and, called from a step
function itself, the methods of that name in files whose classes derive from this file's
classes by name, or it from theirs (an override: detectron2's ``DenseDetector.forward`` calls
``self.forward_training``, which ``RetinaNet`` defines in another file; a set-up loop over a
model's layers reaches no override). A call through another object
(``self.sampler.sample(...)``) is resolved by the method's name alone, when at most
``_MAX_DEFINERS`` project files define a method of that name (in a class body: ``x.view(...)``
never runs a module-level ``def view``), or a few more whose classes derive from one another
(a base class and its overrides), and the name is not one that
builtins, tensors or modules also have (``update``, ``sum``, ``step``...): hotness decides what
is worth reporting, never what a fix may assume. A function registered as a hook
(``layer.register_forward_hook(self.save_activation)``, ``t.register_hook(fn)``) runs on every
forward or backward pass, as if called in a loop. A function a factory defines and returns
(``step_fn = losses.get_step_fn(...)``, then ``step_fn(...)`` in the loop) runs where the
factory's result is called, a method of a class built where it is called
(``MCTS(config).run(...)``) where that call runs, and a function handed to a call that applies
it (``map(f, xs)``, ``partial(f, ...)``, mmdetection-style ``multi_apply(self.loss_single, ...)``)
where that call runs, as does one handed to a parameter (or a parameter's default) that the
callee calls: few-shot-style ``fit(model, loader, fit_function=episode)``, whose loop over
batches calls ``fit_function``. Calling an object of a project class runs its module's
``__call__``: one a loop builds and calls (``m = Wrapped(...); m(x)``), or one handed to such a
parameter (glide's ``p_mean_variance(self._wrap_model(model), ...)``, timm's ``mixup_fn =
Mixup(...)`` handed to ``train_one_epoch``: the ``__call__`` of the module that defines the class,
through the packages that re-export it). A method handed the batch of a loop over batches through
an object (BasicSR's ``while train_data is not None: model.feed_data(train_data)``) runs each step
in every class that defines it, and its parameter holds a batch (:func:`batch_param`: a likely
fact). Test files make nothing hot.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from .ast_reading import (
    batch_names,
    batch_parts,
    holder_key,
    last_name,
    once_per_pass,
    over_batches,
    partial_of,
    returned_closure,
    runs_once,
    statements,
    takes_no_non_blocking,
    walks_model,
)
from .import_names import Callee, imports
from .torch_api import METHOD_HOOKS

ANY = "?"
# ``C`` + CALLED: calling an object of the project class ``C`` (its defining module's ``__call__``,
# found through the packages that re-export ``C``: timm's ``from timm.data import Mixup``)
CALLED = ".__call__"
# ``self.method(...)``: this file's method, or an override or base method in a file whose
# classes derive from this file's (or this file's from theirs).
SELF = "@self"
# ``step = make_step(...)`` then ``step(...)``: the function ``make_step`` returns (a ``def`` nested
# in it), looked up in the fixpoint; the callee is (CLOSURE + factory's module, factory's name)
CLOSURE = "@closure:"
# Methods that register a hook: ``module.register_forward_hook(self.save_activation)``,
# ``tensor.register_hook(fn)``; the hook runs on every forward or backward pass.
_HOOK_REGISTRARS = frozenset({
    "register_forward_hook", "register_forward_pre_hook", "register_full_backward_hook",
    "register_full_backward_pre_hook", "register_backward_hook", "register_hook",
})
# A method name defined in more project files than this is too common to resolve by name,
# unless those files' classes derive from one another (a base and its overrides), up to the second.
_MAX_DEFINERS = 2
_MAX_FAMILY = 6
# A larger family (a model zoo's overrides of its base's ``loss_function``: PyTorch-VAE's 23)
# resolves too where step code calls it (a step-like function, a loop over batches), for a name
# no torch object has (a distribution's ``q.sample()`` in a loop is no model's ``sample``).
_MAX_ZOO = 32
_TORCH_OBJECT_METHODS = frozenset({
    "sample", "rsample", "sample_n", "log_prob", "entropy", "cdf", "icdf", "expand", "perplexity",
    "enumerate_support", "extra_repr", "register_buffer", "named_children", "share_memory",
})
# Names too common to resolve by name: those of builtin containers, tensors and nn.Modules.
_COMMON = frozenset(
    {n for t in (list, dict, set, str, bytes, int, float) for n in dir(t)}
    | {
        "update", "step", "forward", "run", "get", "set", "add", "close", "reset", "save", "load",
        "to", "cuda", "cpu", "eval", "train", "sum", "mean", "max", "min", "item", "backward",
        "zero_grad", "state_dict", "load_state_dict", "parameters", "apply", "detach", "numpy",
        "log", "info", "debug", "warning", "error", "write", "read", "flush", "join", "format",
    }
)
# Of those, names a project's own logger or meter often defines, called with a key and a value
# (``logger.log("train/loss", loss, step)``) where a tensor's method takes no argument
# (``p.log()``): resolved by name when called with two arguments or more.
_COMMON_UNLESS_ARGUMENTS = frozenset({"log"})


@dataclass
class FileCalls:
    """What the fixpoint needs of one file."""

    module: str
    hot_names: set[str] = field(default_factory=set)  # its functions named as step functions
    parsed: bool = False  # Python's parser read it (an unparsable file is not known to be one-time)
    loops: bool = False  # it holds a ``for`` or ``while`` loop (whose body repeats)
    # per function name (``""``: module level), its calls: (callee, made in a loop)
    calls: dict[str, list[tuple[Callee, bool]]] = field(default_factory=dict)
    classes: set[str] = field(default_factory=set)  # the classes it defines
    # the functions its class bodies define, each with the classes that define it
    methods: dict[str, set[str]] = field(default_factory=dict)
    bases: set[str] = field(default_factory=set)  # the names they derive from (last part)
    # methods called through ``self`` in a loop over batches (``for idx, batch in
    # enumerate(loader): self.run_step(...)``): a subclass's override in another file runs there
    batch_calls: set[str] = field(default_factory=set)
    # methods called through another object in step code (a step-like function, a loop over
    # batches): PyTorch-VAE's ``self.model.loss_function(...)`` in ``training_step``
    step_calls: set[str] = field(default_factory=set)
    # it names an accelerator other than CUDA (accelerators.py): for the copy rules' device fact
    other_accelerator: bool = False
    # it imports modules by a computed name (``importlib.import_module(path)``): any project
    # module may be part of its programs
    dynamic_imports: bool = False
    # the project modules it imports with ``from m import *``, in order
    stars: list[str] = field(default_factory=list)
    # ``self.<attr> = C(...)`` of a class ``C`` (module "" for the file itself): a call of
    # ``self.<attr>(...)`` runs ``C.__call__`` (faster-rcnn's ``self.proposal_layer(...)``)
    instances: dict[str, Callee] = field(default_factory=dict)
    # names it binds by importing them from project modules (``from .data import
    # broadcast_data`` in a package's ``__init__``): a call of ``pkg.broadcast_data`` runs that
    imported: dict[str, Callee] = field(default_factory=dict)
    # its module-level functions that return an instance of a class (``return C(...)``, or a
    # name bound to one): ``self.<attr> = make_loss(...)`` then holds a ``C`` (maskrcnn-benchmark's
    # ``self.loss_evaluator = make_rpn_loss_evaluator(cfg, coder)``)
    factories: dict[str, Callee] = field(default_factory=dict)
    # its module-level functions that return a function they define (score_sde's
    # ``get_step_fn``, BigGAN's ``GAN_training_function``): the nested function's name
    closures: dict[str, str] = field(default_factory=dict)
    # a class of it defines a ``to`` that takes no ``non_blocking`` (maskrcnn-benchmark's
    # ``BoxList.to(self, device)``): an object syncfix cannot name may be one of its instances
    narrow_to: str = ""  # the first of its classes whose ``to`` takes no ``non_blocking``
    # per function, the parameters it calls (few-shot's ``fit_function(model, x, y)`` in its
    # loop over batches), by position (after ``self``) and by name: whether a loop makes the call
    applied: dict[str, dict[int | str, bool]] = field(default_factory=dict)
    # project functions handed to a call as an argument (``fit(model, fit_function=step)``), or
    # a parameter's default (``fit_function=gradient_step``): (callee, position or name, handed)
    handed_args: list[tuple[Callee, int | str, Callee]] = field(default_factory=list)
    # methods called through another object in a loop over batches with the loop's batch as an
    # argument (BasicSR's ``model.feed_data(train_data)``): (method, position or name)
    batch_args: set[tuple[str, int | str]] = field(default_factory=set)
    # methods called through another object in a loop over batches with the batch, or a copy of
    # it, as an argument: each step runs them, whichever class's
    batch_calls_through: set[str] = field(default_factory=set)
    # a handler of it may catch a RuntimeError from code it runs (``ast_reading.may_catch_tree``)
    catches: bool = True


def batch_param(method: str, key: int | str) -> str:
    """The entry of a module's hot names that says another project file hands ``method`` (a
    method of one of its classes, called through an object) a loader's batch as argument ``key``
    (a position after ``self``, or a keyword) in a loop over batches: a likely fact."""
    return f"{method}({key})"


def file_calls(
    module: str,
    source: bytes | ast.Module,
    hot_functions: Iterable[str],
    resolve: Mapping[str, str],
    package: str | None = None,
) -> FileCalls:
    """The calls of one file (its source, or Python's parse of it). ``resolve`` maps a dotted
    import target to a project module; ``package``: what its relative imports start from (the
    module itself for a package's ``__init__``; by default the module's parent)."""
    out = FileCalls(module)
    try:
        tree = source if isinstance(source, ast.Module) else ast.parse(source)
    except (SyntaxError, ValueError):
        return out
    out.parsed = True
    hot = set(hot_functions)
    if package is None:
        package = module.rpartition(".")[0]
    names, modules, foreign, out.stars = imports(tree, package, resolve, module)
    out.imported = {local: callee for local, callee in names.items() if local != "*"}
    collector = _Collector(out, hot, names, modules, foreign)
    collector.collect(tree)
    for fn in tree.body:
        if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
            made = collector.returned_instance(fn)
            if made is not None:
                out.factories[fn.name] = made
            closure = returned_closure(fn)
            if closure is not None:
                out.closures[fn.name] = closure
    return out


# Calls that call the function handed to them, by the callee's last name.
_APPLIERS = frozenset({"map", "filter", "partial", "starmap", "multi_apply", "apply", "retry_call"})


def _applies(func: ast.expr) -> bool:
    return last_name(func) in _APPLIERS


_LOOPS = (ast.For, ast.AsyncFor, ast.While)
_DEFS = (ast.FunctionDef, ast.AsyncFunctionDef)
# Per node type, the fields that may not run each time the node does (navigation.py's
# ``_runs_with`` says the same of LibCST's nodes).
_SOMETIMES: dict[type, tuple[str, ...]] = {
    ast.If: ("body", "orelse"),
    ast.IfExp: ("body", "orelse"),
    ast.Try: ("handlers", "orelse"),
    ast.Match: ("cases",),
    **{loop: ("orelse",) for loop in _LOOPS},
    **({ast.TryStar: ("handlers", "orelse")} if hasattr(ast, "TryStar") else {}),  # Python 3.11+
}


class _Collector:
    def __init__(
        self,
        out: FileCalls,
        hot: set[str],
        names: dict[str, Callee],
        modules: dict[str, str],
        foreign: frozenset[str] = frozenset(),
    ) -> None:
        self.out = out
        self.hot = hot
        self.names = names
        self.modules = modules
        self.foreign = foreign  # names imports bind to what is not the project's (``math``, ``F``)
        self.made: dict[str, Callee] = {}  # ``name = f(...)``: the last such call of each name
        self.made_items: dict[str, Callee] = {}  # ``name[k] = f(...)``: the same, of its items
        self.classes: set[str] = set()  # the file's top-level classes (``prepare`` fills it)
        self.functions: set[str] = set()  # its top-level functions
        self.method_names: set[str] = set()  # the methods of its top-level classes
        # ``step = make_step(...)``: a call of ``step`` runs what ``make_step`` returns
        self.closure_calls: dict[str, Callee] = {}
        # ``loss_map = {"labels": self.loss_labels, ...}`` (or ``self.loss_map = ...``): a call
        # ``loss_map[k](...)`` runs one of them (DETR's ``SetCriterion.get_loss``)
        self.dispatch: dict[str, list[Callee]] = {}
        # per function, its parameters: name -> position (after ``self``; None: keyword-only)
        self.params: dict[str, dict[str, int | None]] = {}
        self.callable_classes: set[str] = set()  # its top-level classes that define ``__call__``
        # its functions and methods that return an instance of a project class: calling that
        # object runs its module's ``__call__`` (glide's ``self._wrap_model(model)``)
        self.instances_of: dict[str, Callee] = {}
        # per loop over batches: the names holding its batch, fresh and any (``_batch_args``)
        self.loop_batches: dict[int, tuple[set[str], set[str]]] = {}

    def _batch_args(self, method: str, call: ast.Call, loop: ast.AST) -> None:
        """A call through an object in a loop over batches: the arguments that are the loop's
        batch (``model.feed_data(train_data)``), and, where one is the batch or a copy of it
        (``model.loss(scores, labels)`` after ``labels = labels.to(device)``), the method runs
        each step."""
        args = [*enumerate(call.args), *((k.arg, k.value) for k in call.keywords)]
        known = self.loop_batches.get(id(loop))
        if known is None:  # once per loop: it may hold many calls
            fresh = batch_names(loop)
            parts = batch_parts(loop, fresh) if isinstance(loop, _LOOPS) else set()
            known = self.loop_batches[id(loop)] = (fresh | parts, batch_names(loop, fresh=False) | parts)
        fresh, any_batch = known
        for key, arg in args:
            # a dict of the batch's parts (Restormer's ``model.feed_train_data({"lq": lq, "gt": gt})``)
            values = arg.values if type(arg) is ast.Dict and None not in arg.keys else [arg]
            names = [v.id for v in values if type(v) is ast.Name]
            if key is None or not names or len(names) < len(values):
                continue
            if all(n in fresh for n in names):
                self.out.batch_args.add((method, key))
            if any(n in any_batch for n in names):
                self.out.batch_calls_through.add(method)

    def collect(self, tree: ast.Module) -> None:
        """Each call, under the function it is in and whether a loop of that function that
        repeats holds it; a def's body only (not its decorators or defaults). A loop that
        calls ``input(...)`` on every time round waits for a person each time, and a call whose
        innermost loop it is does not repeat (as ``navigation.repeating_loop`` says of LibCST's
        tree). One explicit stack, not a visitor method per node: the index reads every file of
        the project."""
        out = self.out
        made: list[tuple[str, Callee, ast.AST | None]] = []  # function, callee, innermost loop
        # function, a parameter it calls (and its position), innermost loop
        applied: list[tuple[str, str, int | None, ast.AST | None]] = []
        interactive: set[ast.AST] = set()
        top_level = {id(s) for s in tree.body if type(s) in _DEFS}  # not a method, nor nested
        self.prepare(tree)
        # node, function, innermost loop, and whether the node runs each time round that loop
        stack: list[tuple[ast.AST, str, ast.AST | None, bool]] = [(tree, "", None, False)]
        outer: dict[int, ast.AST | None] = {}  # each loop's enclosing loop in its function
        while stack:
            node, function, loop, every_time = stack.pop()
            kind = type(node)
            if kind in _DEFS:
                name = node.name  # type: ignore[attr-defined]
                if name in self.hot and (name not in METHOD_HOOKS or id(node) not in top_level):
                    out.hot_names.add(name)
                out.calls.setdefault(name, [])
                self._parameters(node)  # type: ignore[arg-type]
                stack.extend((stmt, name, None, False) for stmt in reversed(node.body))  # type: ignore[attr-defined]
                continue
            if kind is ast.ClassDef:
                out.classes.add(node.name)  # type: ignore[attr-defined]
                for stmt in node.body:  # type: ignore[attr-defined]
                    if type(stmt) in _DEFS:
                        out.methods.setdefault(stmt.name, set()).add(node.name)  # type: ignore[attr-defined]
                        if not out.narrow_to and stmt.name == "to" and takes_no_non_blocking(stmt):
                            out.narrow_to = node.name  # type: ignore[attr-defined]
                out.bases.update(last_name(b) for b in node.bases)  # type: ignore[attr-defined]
            elif kind is ast.Assign:
                self._instance(node)  # type: ignore[arg-type]
            if kind in _LOOPS and not runs_once(node):
                out.loops = True
                if not walks_model(node):  # a walk over a model's layers: the code around decides
                    outer[id(node)] = loop
                    loop, every_time = node, True
            elif kind is ast.Call:
                func = node.func  # type: ignore[attr-defined]
                if type(func) is ast.Name and func.id == "input" and every_time:
                    interactive.add(loop)  # type: ignore[arg-type]
                for chosen in self._dispatched(func):
                    out.calls.setdefault(function, [])
                    made.append((function, chosen, loop))
                callee = self._callee(func, len(node.args) + len(node.keywords))  # type: ignore[attr-defined]
                if type(func) is ast.Name and func.id in self.params.get(function, ()):
                    applied.append((function, func.id, self.params[function][func.id], loop))
                if callee is not None:
                    self._handing(callee, node)  # type: ignore[arg-type]
                    out.calls.setdefault(function, [])
                    made.append((function, callee, loop))
                    if callee[0] == SELF and loop is not None and every_time and over_batches(loop):
                        out.batch_calls.add(callee[1])
                    if callee[0].startswith(ANY) and (function in self.hot or loop is not None and over_batches(loop)):
                        out.step_calls.add(callee[1])
                        if loop is not None:
                            self._batch_args(callee[1], node, loop)  # type: ignore[arg-type]
                if type(func) is ast.Attribute and func.attr in _HOOK_REGISTRARS and node.args:  # type: ignore[attr-defined]
                    # a hook runs on every forward or backward pass: as if called in a loop
                    hook = self._callee(partial_of(node.args[0]))  # type: ignore[attr-defined]
                    if hook is not None:
                        out.calls.setdefault(function, [])
                        made.append((function, hook, node))
                elif _applies(func):
                    # a function handed to a call that applies it (nanodet's
                    # ``multi_apply(self.loss_single, ...)``, ``map(f, xs)``, ``partial(f, ...)``)
                    # runs where that call does (not one handed as data: litgpt's
                    # ``save_hyperparameters(setup, path)`` records its arguments)
                    for arg in node.args:  # type: ignore[attr-defined]
                        handed = self.handed(arg)
                        if handed is not None:
                            out.calls.setdefault(function, [])
                            made.append((function, handed, loop))
            sometimes = _SOMETIMES.get(kind, ())
            # ``if epoch == args.start_epoch:`` of the loop's counter: once per pass of the
            # loop around it (``navigation.repeating_loop`` says so of LibCST's tree)
            once = kind is ast.If and loop is not None and once_per_pass(node, loop)  # type: ignore[arg-type]
            children: list[tuple[ast.AST, str, ast.AST | None, bool]] = []
            for attr in kind._fields:
                value = getattr(node, attr, None)
                always = every_time and attr not in sometimes
                if type(value) is list:
                    around = outer.get(id(loop)) if once and attr == "body" else loop
                    children.extend([(v, function, around, always) for v in value if isinstance(v, ast.AST)])
                    if kind is ast.BoolOp:  # ``a or input()``: only the first operand surely runs
                        children[1:] = [(v, f, lp, False) for v, f, lp, _ in children[1:]]
                elif isinstance(value, ast.AST):
                    children.append((value, function, loop, always))
            children.reverse()
            stack.extend(children)
        for function, callee, loop in made:
            out.calls[function].append((callee, loop is not None and loop not in interactive))
        for function, param, position, loop in applied:
            keys: tuple[int | str, ...] = (param,) if position is None else (param, position)
            for key in keys:
                in_loop = out.applied.setdefault(function, {}).get(key, False)
                out.applied[function][key] = in_loop or loop is not None and loop not in interactive

    def _parameters(self, fn: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        """Keep ``fn``'s parameters, and the project functions its defaults name."""
        args = fn.args
        positional = [*args.posonlyargs, *args.args]
        defaults = list(zip(positional[len(positional) - len(args.defaults):], args.defaults, strict=True))
        defaults += [(a, d) for a, d in zip(args.kwonlyargs, args.kw_defaults, strict=True) if d is not None]
        method = bool(positional) and positional[0].arg in ("self", "cls")
        if method:
            positional = positional[1:]
        params: dict[str, int | None] = {a.arg: i for i, a in enumerate(positional)}
        params.update((a.arg, None) for a in args.kwonlyargs)
        self.params[fn.name] = params
        for arg, default in defaults:
            handed = self.handed(default)
            if handed is not None:
                callee: Callee = (SELF, fn.name) if method else ("", fn.name)
                self.out.handed_args.append((callee, arg.arg, handed))

    def _handing(self, callee: Callee, call: ast.Call) -> None:
        """The project functions ``call`` hands to ``callee`` as arguments."""
        for i, arg in enumerate(call.args):
            if type(arg) is ast.Starred:
                break
            handed = self.handed(arg)
            if handed is not None:
                self.out.handed_args.append((callee, i, handed))
        for kw in call.keywords:
            handed = self.handed(kw.value) if kw.arg is not None else None
            if handed is not None:
                self.out.handed_args.append((callee, kw.arg, handed))  # type: ignore[arg-type]

    def _instance(self, node: ast.Assign) -> None:
        """``self.<attr> = C(...)`` with ``C`` a class name (capitalised) this file defines or
        imports from the project, or a function of the project that may return one."""
        if len(node.targets) != 1:
            return
        value, target = node.value, node.targets[0]
        self.bind_call(target, value)
        if isinstance(value, ast.Dict):
            key = holder_key(target)
            handed = [self.handed(v) for v in value.values if v is not None]
            if key is not None and handed and all(h is not None for h in handed):
                self.dispatch[key] = [h for h in handed if h is not None]
        if isinstance(value, ast.Name) and (key := holder_key(target)) is not None and key.startswith("self."):
            handed_one = self.handed(value)  # ``self.neg_loss = _neg_loss``: ``self.neg_loss(...)`` runs it
            if handed_one is not None:
                self.dispatch[key] = [handed_one]
        if isinstance(value, ast.Call) and isinstance(value.func, ast.Name):
            made: Callee | None = self.names.get(value.func.id, ("", value.func.id))
        else:  # ``loss_evaluator = make_loss(...)``, then ``self.loss_evaluator = loss_evaluator``
            made = self.made.get(value.id) if isinstance(value, ast.Name) else None
        if made is None:
            return
        if isinstance(target, ast.Name):
            self.made[target.id] = made
        elif isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name) and target.value.id == "self":
            self.out.instances[target.attr] = made
        elif isinstance(target, ast.Subscript) and isinstance(target.value, ast.Name):
            self.made_items[target.value.id] = made  # ``gptq[name] = GPTQ(layer)``: its items

    def _dispatched(self, func: ast.expr) -> list[Callee]:
        """The functions ``table[k](...)`` may run, where ``table`` holds only functions, or
        ``self.f(...)`` where ``self.f`` is bound to a function (FairMOT's ``self.neg_loss``)."""
        if type(func) is ast.Attribute and type(func.value) is ast.Name and func.value.id == "self":
            return self.dispatch.get("self." + func.attr, [])
        if type(func) is not ast.Subscript:
            return []
        key = holder_key(func.value)
        return self.dispatch.get(key, []) if key is not None else []

    def prepare(self, tree: ast.Module) -> None:
        """What the file defines at its top level, before its calls are read: its classes, its
        functions and its classes' methods (what a function handed to a call may be)."""
        self.classes = {s.name for s in tree.body if isinstance(s, ast.ClassDef)}
        self.functions = {s.name for s in tree.body if isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef))}
        self.method_names = {
            m.name
            for c in tree.body if isinstance(c, ast.ClassDef)
            for m in c.body if isinstance(m, (ast.FunctionDef, ast.AsyncFunctionDef))
        }
        self.callable_classes = {
            c.name for c in tree.body if isinstance(c, ast.ClassDef)
            and any(isinstance(m, (ast.FunctionDef, ast.AsyncFunctionDef)) and m.name == "__call__" for m in c.body)
        }
        defs = [s for s in tree.body if isinstance(s, _DEFS)]
        defs += [m for c in tree.body if isinstance(c, ast.ClassDef) for m in c.body if isinstance(m, _DEFS)]
        for fn in defs:
            made = self._returned_class(fn)
            if made is not None:
                self.instances_of[fn.name] = (made[0], made[1] + CALLED)

    def handed(self, arg: ast.expr) -> Callee | None:
        """The function ``arg`` names, where it is one of the project's: a function of this file
        or imported from the project (``f``), a method of this file (``self.f``), a method of an
        object the file builds from a class (``obj.f`` of ``obj = C(...)``), or such an object
        itself (``obj``, or ``C(...)``: its ``__call__``)."""
        if type(arg) is ast.Call:
            return self._instance_call(arg.func)
        if type(arg) is ast.Name:
            if arg.id in self.functions:
                return ("", arg.id)
            instance = self.made.get(arg.id)
            if instance is not None and instance[1].lstrip("_")[:1].isupper():
                return (instance[0], instance[1] + CALLED)  # timm's ``mixup_fn = Mixup(...)`` handed on
            imported = self.names.get(arg.id)
            return imported if imported is not None and imported[0] and not arg.id[:1].isupper() else None
        if type(arg) is not ast.Attribute or type(arg.value) is not ast.Name:
            return None
        if arg.value.id == "self":
            return (SELF, arg.attr) if arg.attr in self.method_names else None
        made = self.made.get(arg.value.id)
        if made is not None and made[1][:1].isupper() and not arg.attr.startswith("__"):
            # ``retry_call(model.train, ...)`` of ``model = Trainer(...)`` (lightweight-gan's
            # step): a method of that class, found by the class's name
            return (ANY + made[1], arg.attr)
        return None

    def bind_call(self, target: ast.expr, value: ast.expr) -> None:
        """``name = f(...)`` (or ``mod.f(...)``) of a function of the project: a later call of
        ``name`` runs the function ``f`` returns, if it returns one it defines."""
        if not isinstance(target, ast.Name):
            return
        self.closure_calls.pop(target.id, None)
        if isinstance(value, ast.Call) and isinstance(value.func, (ast.Name, ast.Attribute)):
            factory = self._callee(value.func)
            if factory is not None and not factory[0].startswith((ANY, SELF, CLOSURE)):
                self.closure_calls[target.id] = (CLOSURE + factory[0], factory[1])

    def _instance_call(self, func: ast.expr) -> Callee | None:
        """What calling the object that ``func(...)`` builds runs: ``C(...)`` of a project class,
        or a function or method of this file that returns one (``C`` + :data:`CALLED`: the
        ``__call__`` of the module that defines ``C``)."""
        if type(func) is ast.Name:
            if func.id in self.callable_classes:
                return ("", func.id + CALLED)
            imported = self.names.get(func.id)
            if imported is not None and imported[0] and func.id[:1].isupper():
                return (imported[0], imported[1] + CALLED)
            return self.instances_of.get(func.id) if func.id in self.functions else None
        if type(func) is ast.Attribute and type(func.value) is ast.Name and func.value.id == "self":
            return self.instances_of.get(func.attr) if func.attr in self.method_names else None
        return None

    def _returned_class(self, fn: ast.FunctionDef | ast.AsyncFunctionDef) -> Callee | None:
        """A project class whose instances ``fn`` returns (``return C(...)``; other returns, such
        as its argument unchanged, aside), as (module, class) with module "" for this file, where
        the classes it returns are all named from one module; else None."""
        made: dict[str, Callee] = {}
        for node in statements(fn):
            if isinstance(node, ast.Return) and isinstance(node.value, ast.Call) and isinstance(node.value.func, ast.Name):
                name = node.value.func.id
                if name in self.classes:
                    made.setdefault("", ("", name))
                elif name[:1].isupper() and (imported := self.names.get(name)) is not None and imported[0]:
                    made.setdefault(imported[0], imported)
        return next(iter(made.values())) if len(made) == 1 else None

    def returned_instance(self, fn: ast.FunctionDef | ast.AsyncFunctionDef) -> Callee | None:
        """The class (capitalised) whose instance ``fn`` returns: ``return C(...)``, or a name
        the function binds to ``C(...)`` once."""
        made: dict[str, str] = {}
        returned: list[ast.expr] = []
        for node in statements(fn):
            if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
                value = node.value
                name = value.func.id if isinstance(value, ast.Call) and isinstance(value.func, ast.Name) else ""
                made[node.targets[0].id] = name if node.targets[0].id not in made else ""
            elif isinstance(node, ast.Return) and node.value is not None:
                returned.append(node.value)
        classes = {
            e.func.id if isinstance(e, ast.Call) and isinstance(e.func, ast.Name) else made.get(e.id, "") if isinstance(e, ast.Name) else ""
            for e in returned
        }
        if len(classes) != 1 or not next(iter(classes))[:1].isupper():
            return None
        cls = classes.pop()
        return self.names.get(cls, ("", cls))

    def _callee(self, func: ast.expr, arguments: int = 0) -> Callee | None:
        if isinstance(func, ast.Name):
            instance = self.made.get(func.id)
            if instance is not None and instance[1].lstrip("_")[:1].isupper():  # ``m = C(...)``, then ``m(x)``
                return (instance[0], instance[1] + CALLED)
            return self.closure_calls.get(func.id) or self.names.get(func.id, ("", func.id))
        if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name):
            owner = func.value.id
            if owner in ("self", "cls"):
                return (SELF, func.attr)
            if owner in self.modules:
                return (self.modules[owner], func.attr)
            if owner in self.foreign:  # ``math.log(x, 2)``, ``F.mse_loss(...)``: not the project's
                return None
        if not isinstance(func, ast.Attribute) or func.attr.startswith("__"):
            return None
        made = func.value
        if isinstance(made, ast.Call) and isinstance(made.func, ast.Name):
            # ``MCTS(config).run(...)`` (muzero's self-play loop): a method of the class it builds
            if made.func.id in self.classes:
                return (SELF, func.attr)
            imported = self.names.get(made.func.id)
            if imported is not None and imported[0] and made.func.id[:1].isupper():
                return (imported[0], func.attr)
        if func.attr not in _COMMON or (func.attr in _COMMON_UNLESS_ARGUMENTS and arguments >= 2):
            # ``self.sampler.update_with_local_losses(...)``; the receiver's name goes along
            receiver = func.value
            hint = receiver.id if isinstance(receiver, ast.Name) else receiver.attr if isinstance(receiver, ast.Attribute) else ""
            # an object the file builds from a class (``m = GPTQ(...)``, ``gptq[name] = GPTQ(...)``):
            # that class's name (gptq's ``gptq[name].fasterquant()``, three classes defining it)
            built = (
                self.made.get(receiver.id) if isinstance(receiver, ast.Name)
                else self.made_items.get(receiver.value.id)
                if isinstance(receiver, ast.Subscript) and isinstance(receiver.value, ast.Name) else None
            )
            if built is not None and built[1].lstrip("_")[:1].isupper():
                hint = built[1]
            return (ANY + hint, func.attr)
        return None


def one_time(f: FileCalls, hot: frozenset[str]) -> bool:
    """Is all of the file one-time code: read by Python's parser, with no loop, and none of its
    functions (``hot``: those :func:`hot_functions` found for its module) step-like or called
    from repeating code? Then nothing in it repeats (syncfix/repetition.py), and the rules that
    report only where syncs repeat need not read it at all."""
    return f.parsed and not f.loops and not f.hot_names and not hot


def hot_in_file(source: str | bytes, hot_functions_named: Iterable[str]) -> frozenset[str]:
    """For a source analysed alone (the library API, with no project around it): its functions
    that its own loops and step functions call, as the project index would find them."""
    data = source.encode("utf-8") if isinstance(source, str) else source
    return hot_functions([file_calls("", data, hot_functions_named, {})]).get("", frozenset())


_MAX_REEXPORTS = 4  # packages re-exporting from packages: a few levels, never a cycle


def hot_functions(files: Iterable[FileCalls]) -> dict[str, frozenset[str]]:
    """Per module, the names of its functions that run repeatedly (a fixpoint over the calls),
    and a :func:`batch_param` entry for each argument of its methods that is handed a batch."""
    by_module = {f.module: f for f in files}
    definers: dict[str, list[str]] = {}
    method_definers: dict[str, list[str]] = {}  # a call through another object reaches a method
    for f in by_module.values():
        for name in f.calls:
            if name:
                definers.setdefault(name, []).append(f.module)
        for name in f.methods:
            method_definers.setdefault(name, []).append(f.module)

    def targets(callee: Callee, caller: str, across: bool = False) -> list[tuple[str, str]]:
        if callee[0].startswith(ANY):  # ``x.view(...)`` reaches no module-level ``def view`` (2DGS's viewer)
            methods = method_definers.get(callee[1], [])
            step = callee[1] in by_module[caller].step_calls and callee[1] not in _TORCH_OBJECT_METHODS
            zoo = _MAX_ZOO if step else _MAX_FAMILY
            if len(methods) <= _MAX_DEFINERS or (len(methods) <= zoo and family(methods)):
                return [(m, callee[1]) for m in methods]
            # too common a name: the classes named like the receiver (``logger.log(...)``
            # reaches ``Logger.log``, not an actor's ``log`` in another file)
            named = [m for m in methods if named_like(callee[0][len(ANY):], by_module[m].methods[callee[1]])]
            return [(m, callee[1]) for m in named] if len(named) <= _MAX_DEFINERS else []
        if callee[1].endswith(CALLED):  # an object of a project class called: its ``__call__``
            found = defined(callee[0] or caller, callee[1][: -len(CALLED)], _MAX_REEXPORTS)
            return [(found[0], "__call__")] if found is not None and "__call__" in by_module[found[0]].calls else []
        if callee[0].startswith(CLOSURE):  # ``step = make_step(...); step(...)``
            factory = defined(callee[0][len(CLOSURE):] or caller, callee[1], _MAX_REEXPORTS)
            closure = by_module[factory[0]].closures.get(factory[1]) if factory is not None else None
            return [(factory[0], closure)] if factory is not None and closure is not None else []
        if callee[0] == SELF:  # detectron2's ``self.forward_training(...)``, overridden elsewhere
            own = by_module[caller]
            # ``self.<attr> = C(...)``: the object's ``__call__`` (it shadows a method of that name)
            called: list[tuple[str, str]] = []
            made = own.instances.get(callee[1])
            if made is not None and not made[1][:1].isupper():  # a factory's result: its class
                factory = defined(made[0] or caller, made[1], _MAX_REEXPORTS)
                built = by_module[factory[0]].factories.get(factory[1]) if factory is not None else None
                made = (built[0] or factory[0], built[1]) if built is not None and factory is not None else None
            if made is not None:
                module = made[0] or caller
                if module in by_module and made[1] in by_module[module].classes:
                    called.append((module, "__call__"))
            related = [
                m for m in definers.get(callee[1], [])
                if across and m != caller and (own.classes & by_module[m].bases or own.bases & by_module[m].classes)
            ]
            return [(caller, callee[1]), *((m, callee[1]) for m in related), *called]
        if not callee[0] and callee[1] not in by_module[caller].calls and not callee[1].startswith("_"):
            # a name a star import binds (``from utils import *``): the last such module to bind it
            for m in reversed(by_module[caller].stars):
                found = defined(m, callee[1], _MAX_REEXPORTS)
                if found is not None:
                    return runs(found)
        target = (callee[0] or caller, callee[1])
        found = defined(*target, _MAX_REEXPORTS)
        return runs(found) if found is not None else [target] if target[0] in by_module else []

    def runs(found: tuple[str, str]) -> list[tuple[str, str]]:
        """What calling the function or class ``found`` runs. A class: its ``__init__``
        (Autoformer's ``TriangularCausalMask(...)`` in each forward), that class's only, named so,
        and none where it defines no ``__init__`` (a dataclass of outputs runs nothing of its
        file). Only from a hot function, not from any loop (the seeding below skips it:
        ``nn.ModuleList([Block() for _ in range(depth)])`` is set-up)."""
        module, name = found
        if name in by_module[module].calls:
            return [found]
        return [(module, f"{name}.__init__")] if name in by_module[module].methods.get("__init__", ()) else []

    def named_like(receiver: str, classes: set[str]) -> bool:
        """Is one of these classes named as the receiver is (``logger``, ``self.logger``:
        ``Logger``; ``train_logger`` is not: it may be any logger)?"""
        word = receiver.replace("_", "").lower()
        return any(c.lower() == word for c in classes)

    def family(modules: list[str]) -> bool:
        """Do these files' classes derive from one another's, all linked (a base and its
        overrides: OpenNMT's ``DecodeStrategy.advance`` and ``BeamSearch.advance``)?"""
        files = [by_module[m] for m in modules]
        linked = {0}
        grown = True
        while grown:
            grown = False
            for i, f in enumerate(files):
                if i not in linked and any(f.bases & files[j].classes or f.classes & files[j].bases for j in linked):
                    linked.add(i)
                    grown = True
        return len(linked) == len(files)

    def defined(module: str, name: str, hops: int) -> tuple[str, str] | None:
        """Where ``module.name`` is defined: in the module, or, a few packages deep, where the
        module imports it from (``mpu.broadcast_data``; fast-reid's ``from .losses import *``
        of a package whose ``__init__`` imports ``cross_entropy_loss`` from a submodule)."""
        owner = by_module.get(module)
        if owner is None:
            return None
        if name in owner.calls or name in owner.classes:
            return (module, name)
        if hops == 0:
            return None
        if name in owner.imported:
            return defined(*owner.imported[name], hops - 1)
        if not name.startswith("_"):
            for m in reversed(owner.stars):
                found = defined(m, name, hops - 1)
                if found is not None:
                    return found
        return None

    hot: set[tuple[str, str]] = {(f.module, n) for f in by_module.values() for n in f.hot_names}
    work = list(hot)
    # calls made in a loop make their callee hot wherever the caller is
    for f in by_module.values():
        for calls in f.calls.values():
            for callee, in_loop in calls:
                # a step loop's ``self.run_step(...)``: the overrides in other files too
                across = callee[0] == SELF and callee[1] in f.batch_calls
                for target in targets(callee, f.module, across) if in_loop else ():
                    if target[1].endswith(".__init__"):
                        continue  # objects made in a loop of set-up code (a model's layers)
                    if target not in hot:
                        hot.add(target)
                        work.append(target)
    # a function handed to a parameter its callee calls: hot where that call is (few-shot's
    # ``fit(..., fit_function=proto_net_episode)``, whose ``fit`` calls it for each batch)
    when_hot: dict[tuple[str, str], list[tuple[str, str]]] = {}
    for f in by_module.values():
        for callee, key, handed in f.handed_args:
            for target in targets(callee, f.module):
                applied = by_module[target[0]].applied.get(target[1], {}) if target[0] in by_module else {}
                if key not in applied:
                    continue
                for fn in targets(handed, f.module):
                    if not applied[key]:
                        when_hot.setdefault(target, []).append(fn)
                    elif fn not in hot:
                        hot.add(fn)
                        work.append(fn)
    # a method handed a loop's batch through another object (BasicSR's ``model.feed_data(
    # train_data)``) runs each step, whichever class's: every definer's, however many
    stepped = {m for f in by_module.values() for m in f.batch_calls_through if m not in _TORCH_OBJECT_METHODS}
    for method in stepped:
        for module in method_definers.get(method, ()):
            if (module, method) not in hot:
                hot.add((module, method))
                work.append((module, method))
    while work:
        module, name = work.pop()
        for fn in when_hot.get((module, name), ()):
            if fn not in hot:
                hot.add(fn)
                work.append(fn)
        owner = by_module.get(module)
        if owner is None:
            continue
        # overrides in other files only from a step function itself: a set-up loop over
        # modules (peft's ``self._create_and_replace`` per layer) is not a step
        across = name in owner.hot_names
        for callee, _ in owner.calls.get(name, ()):
            for target in targets(callee, module, across):
                if target not in hot:
                    hot.add(target)
                    work.append(target)
    out: dict[str, set[str]] = {}
    for module, name in hot:
        out.setdefault(module, set()).add(name)
    fed = {arg for f in by_module.values() for arg in f.batch_args if arg[0] not in _TORCH_OBJECT_METHODS}
    for f in by_module.values():
        for method, key in fed:
            if method in f.methods:
                out.setdefault(f.module, set()).add(batch_param(method, key))
    return {m: frozenset(n) for m, n in out.items()}
