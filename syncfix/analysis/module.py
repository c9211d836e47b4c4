"""The front object rules talk to: :class:`ModuleAnalysis`, built once per file by the engine.

It holds the module's metadata (parents, scopes, qualified names, positions) and the memo tables
of every fact, and answers each question by delegating to the topic module that computes it
(see the package docstring for which module answers what). Topic modules are plain functions
taking the analysis as their first argument; they reach facts of other topics through the
methods here, so no topic module imports another's internals.

**Names.** :meth:`ModuleAnalysis.qualnames` resolves import aliases (``from torch import cuda as
c``; ``c.synchronize`` is ``torch.cuda.synchronize``). A name bound by a try/except import
fallback has several candidates; :meth:`~ModuleAnalysis.qualname` answers only when all
candidates agree, so a rule that needs a proof gets one, and ``qualnames`` gives every candidate
for findings. Scopes are resolved lazily, on the first question that needs them.
"""

from __future__ import annotations

import builtins as builtins_module
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property

import libcst as cst
from libcst.metadata import (
    CodeRange,
    ExpressionContextProvider,
    MetadataWrapper,
    PositionProvider,
    Scope,
    ScopeProvider,
)
from libcst.metadata.scope_provider import Access, BaseAssignment, BuiltinAssignment

from ..config import DEFAULT_HOT_FUNCTIONS
from ..walk import Structure, may_call_typing, replaying
from . import (
    async_copies,
    attributes,
    autograd,
    bindings,
    callgraph,
    containers,
    device_tests,
    devices,
    dtypes,
    effects,
    handlers,
    host_reads,
    legacy_constructors,
    lightning,
    losses,
    narrowing,
    navigation,
    no_copy,
    provenance,
    pynumbers,
    shapes,
    sizes,
    star_imports,
    tokenizers,
)
from .callgraph import CallSites
from .effects import Effects
from .expr_context import expression_contexts
from .fixpoint import FactSolver
from .host_reads import HostRead
from .imported import ProjectModules
from .project import ALL
from .syntax import dotted_name, literal_number, through_call
from .torch_api import REEXPORTED
from .values import Device, Kind, Value


@dataclass
class Caches:
    """Memo tables the topic modules fill (one per analysis, so one per file)."""

    effects: dict[cst.CSTNode, Effects] = field(default_factory=dict)
    loop_bindings: dict[tuple[Scope, str, cst.CSTNode], frozenset[BaseAssignment]] = field(default_factory=dict)
    accesses: dict[cst.CSTNode, list[Access]] | None = None
    self_assignments: dict[cst.ClassDef, dict[str, list[cst.BaseExpression | None]]] = field(
        default_factory=dict
    )
    classes: dict[str, cst.ClassDef] | None = None
    subclasses: dict[cst.ClassDef, list[cst.ClassDef]] = field(default_factory=dict)
    import_aliases: frozenset[str] | None = None
    imported_names: frozenset[str] | None = None  # bound by this module's imports
    all_names: frozenset[str] | None = None
    qualnames: dict[cst.CSTNode, frozenset[str]] = field(default_factory=dict)
    call_sites: dict[cst.FunctionDef, CallSites] = field(default_factory=dict)
    returns: dict[cst.FunctionDef, list[cst.Return] | None] = field(default_factory=dict)
    attribute_refs: dict[str, list[cst.Attribute]] | None = None
    method_definitions: dict[str, int] | None = None
    method_defs: dict[str, cst.FunctionDef] | None = None
    dynamic_attributes: bool | None = None
    steps: dict[cst.FunctionDef, bool] = field(default_factory=dict)  # calls .backward()/.step()
    interactive_loops: frozenset[cst.CSTNode] | None = None  # navigation.interactive_loops
    attributes_set: dict[str, bool] = field(default_factory=dict)  # attributes.attribute_set
    requires_grad_set: bool | None = None  # autograd._turns_grad_on
    unseen: frozenset[str] | None = None  # bindings.unseen_names
    holders: dict[str, frozenset[str] | None] = field(default_factory=dict)  # imported.holders
    star_bound: tuple[frozenset[str] | None] | None = None  # ModuleAnalysis._star_binds
    star_aliases: dict[str, str] | None = None  # ModuleAnalysis._star_qualnames
    unseen_bindings: dict[tuple[Scope, str], BaseAssignment] = field(default_factory=dict)
    main_blocks: tuple[tuple[int, int], ...] | None = None  # navigation.in_main_block
    registered: dict[cst.ClassDef, dict[str, tuple[cst.BaseExpression, ...]]] = field(default_factory=dict)  # attributes._registrations
    memo_wrapped: dict[cst.ClassDef, frozenset[str]] = field(default_factory=dict)  # navigation.is_memoized
    # bindings.bindings per use: syntax only, so the likely view shares its analysis's table
    bindings: dict[cst.Name, frozenset[BaseAssignment]] = field(default_factory=dict)
    module_names: dict[cst.CSTNode, frozenset[str]] = field(default_factory=dict)  # used_as_module
    objects_caught: bool | None = None  # handlers._objects_may_be_called_in_a_try


class ModuleAnalysis:
    """Answers for one parsed module. Built by the engine; rules receive it."""

    def __init__(
        self,
        wrapper: MetadataWrapper,
        *,
        hot_functions: Sequence[str] = DEFAULT_HOT_FUNCTIONS,
        module_name: str | None = None,
        imported: frozenset[str] | None = None,
        called_from_loops: frozenset[str] = frozenset(),
        devices: Sequence[str] | None = None,
        project: ProjectModules | None = None,
        package: str | None = None,
        streams_around: str = "",
        later_syncs_around: bool = False,
        defaults_changed: frozenset[str] = frozenset(),
        datasets_placed: bool = False,
        other_accelerator: str = "",
        torch_elsewhere: bool = False,
        narrow_to: str = "",
        source: str | None = None,
        trivia: bool = False,
    ) -> None:
        self.wrapper = wrapper
        #: record whitespace and comment nodes too (walk.TRIVIA): only for a rule that visits them
        self.trivia = trivia
        self._source = source  # the text ``wrapper.module`` was parsed from, when the caller has it
        #: A project module that imports this one, or that it imports, uses CUDA streams: its
        #: name, or "" (``ModuleContext.streams_around``).
        self.streams_around = streams_around
        #: Code that imports this module counts on later syncs (``ModuleContext.later_syncs_around``).
        self.later_syncs_around = later_syncs_around
        #: Another project file changes torch's default dtype or device (``ModuleContext``).
        self.defaults_changed = defaults_changed
        #: A dataset in another project file may place its items on a device (``ModuleContext``).
        self.datasets_placed = datasets_placed
        #: A project module names an accelerator other than CUDA: its name, or "" (``ModuleContext``).
        self.other_accelerator = other_accelerator
        #: Torch code without a torch import of its own: it star-imports a project module that
        #: imports torch, or derives a class from one such a module defines (``ModuleContext``).
        self.torch_elsewhere = torch_elsewhere
        #: A class of the project defines a ``to`` without ``non_blocking`` (``ModuleContext``).
        self.narrow_to = narrow_to
        #: The dotted module name of this file in its project (None: a source without a path).
        self.module_name = module_name
        #: The names other files of the project import from this module (``"*"``: any); None
        #: when the project is unknown (a source given as text): then nothing is imported.
        self.imported = imported
        self.module = wrapper.module
        #: The other project modules this one imports, whose functions' results calls here may
        #: use (analysis/imported.py); None when the project is unknown.
        self.project = project
        #: What this module's relative imports start from (None: its parent package).
        self.package = package if package is not None else (module_name or "").rpartition(".")[0]
        #: Step-like function names (settings), and the functions other project files call from
        #: repeating code (by name, projects.py): both are hot (:meth:`is_hot`).
        self.hot_functions = set(hot_functions)
        self.called_from_loops = called_from_loops
        #: The project declares it runs on CUDA and the CPU only (``[tool.syncfix.torch]
        #: devices``): a device object syncfix cannot name is then one of the two.
        self.cuda_or_cpu_only = devices is not None and set(devices) <= {"cuda", "cpu"}
        #: Memoised facts with loop-carried cycles solved by rounds; ``solver.work`` counts them.
        self.solver = FactSolver()
        self.cache = Caches()
        #: True in :attr:`likely`'s view only: read unknown receivers of tensor methods as tensors.
        self.assume_tensors = False
        #: The analysis whose syntax (structure, scopes, positions) a view shares, lazily.
        self._syntax_of: ModuleAnalysis | None = None

    @cached_property
    def likely(self) -> ModuleAnalysis:
        """The same module read with one *likely* fact added, for findings and unsafe fixes only:
        a value syncfix cannot name whose method or attribute is one tensors have
        (``x.eq(y)``, ``x.mean()``, ``p.grad``; ``torch_api.LIKELY_TENSOR_METHODS``), or that is
        read with ``.item()``/``.tolist()``, is a tensor (device, dtype and shape unknown), and so
        is a parameter its function uses as only a tensor is (annotations.py ``used_as_tensor``); and
        ``self.<attr>`` holds what its class's own methods assign, where another file may set it
        too (attributes.py ``likely_attribute_values``); and a tokenizer's output
        (``tokenizer(texts, return_tensors="pt").input_ids``) is a new CPU tensor (tokenizers.py);
        and ``.to(v)`` with ``v`` a value named as a device (``args.device``) keeps the dtype;
        and ``torch.tensor(x)`` without ``device=`` of a value syncfix cannot name copies host
        data (a list, an array), so it is a CPU tensor.
        Its facts are memoised apart, so the proofs of this analysis never see the assumption."""
        if self.assume_tensors:
            return self
        view = ModuleAnalysis(
            self.wrapper,
            hot_functions=tuple(self.hot_functions),
            called_from_loops=self.called_from_loops,
            module_name=self.module_name,
            imported=self.imported,
            project=self.project,
            package=self.package,
            streams_around=self.streams_around,
            later_syncs_around=self.later_syncs_around,
            defaults_changed=self.defaults_changed,
            datasets_placed=self.datasets_placed,
            other_accelerator=self.other_accelerator,
            torch_elsewhere=self.torch_elsewhere,
            narrow_to=self.narrow_to,
        )
        view.cuda_or_cpu_only = self.cuda_or_cpu_only
        view.assume_tensors = True
        view._syntax_of = self  # the syntax is shared (resolved once, when first needed)
        return view

    # ---- metadata: parents, scopes, qualified names, positions ----------------------------
    @cached_property
    def structure(self) -> Structure:
        if self._syntax_of is not None:
            return self._syntax_of.structure
        return Structure(self.module, trivia=self.trivia)

    def walk(self, node: cst.CSTNode, visitor: cst.CSTVisitor) -> None:
        """``node.visit(visitor)`` for a read-only visitor, without rebuilding the tree."""
        self.structure.walk(node, visitor)

    @cached_property
    def scopes(self) -> Mapping[cst.CSTNode, Scope | None]:
        if self._syntax_of is not None:
            return self._syntax_of.scopes
        structure = self.structure  # recorded first, so that the scope visitors replay it
        known = getattr(self.wrapper, "_metadata", None)  # what the wrapper has resolved
        if isinstance(known, dict) and ExpressionContextProvider not in known:
            known[ExpressionContextProvider] = expression_contexts(structure)  # its answer, cheaper
        with replaying(no_typing_calls=self._source is not None and not may_call_typing(self._source)):
            return self.wrapper.resolve(ScopeProvider)

    @cached_property
    def positions(self) -> Mapping[cst.CSTNode, CodeRange]:
        if self._syntax_of is not None:
            return self._syntax_of.positions
        return self.wrapper.resolve(PositionProvider)

    def nodes_within(self, node: cst.CSTNode, kind: type) -> Sequence[cst.CSTNode]:
        """The nodes of exact type ``kind`` under ``node`` (and ``node`` itself), in source
        order, without a walk (from the index of the module's nodes by type)."""
        return self.structure.within(node, kind)

    def parent(self, node: cst.CSTNode) -> cst.CSTNode | None:
        return self.structure.parent.get(node)

    def ancestors(self, node: cst.CSTNode) -> Iterator[cst.CSTNode]:
        p = self.parent(node)
        while p is not None:
            yield p
            p = self.parent(p)

    def scope(self, node: cst.CSTNode) -> Scope | None:
        return self.scopes.get(node)

    def qualnames(self, node: cst.CSTNode) -> frozenset[str]:
        """Every qualified name ``node`` may refer to (all candidates of an import fallback)."""
        if isinstance(node, cst.Attribute) and dotted_name(node) is None or isinstance(node, cst.Call):
            # LibCST names ``torch.randn(3).cuda`` "torch.randn.cuda", and a call by its callee
            # (``nn.CrossEntropyLoss()`` as "torch.nn.CrossEntropyLoss"): not names
            return frozenset()
        cached = self.cache.qualnames.get(node)
        if cached is None:
            # Asked of the scope lazily, node by node: resolving LibCST's QualifiedNameProvider
            # for the whole module costs more than every other provider together.
            scope = self.scope(node)
            names = navigation.reaching_qualified_names(self, node, scope)
            found = frozenset(REEXPORTED.get(q.name, q.name) for q in names)
            if found and all(n.startswith("builtins.") for n in found) and not self._builtins_hold(found):
                found = frozenset()  # ``from lib import *`` may bind ``len``, ``range``...
            if not found and scope is not None:
                found = self._star_qualnames(node, scope)
            cached = self.cache.qualnames[node] = navigation.without_identity_fallbacks(self, node, found)
        return cached

    @property
    def star_aliases(self) -> dict[str, str]:
        """What star imports of project modules bind: local name -> qualified name."""
        if self.cache.star_aliases is None:
            self.cache.star_aliases = star_imports.star_aliases(self)
        return self.cache.star_aliases

    def _star_qualnames(self, node: cst.CSTNode, scope: Scope) -> frozenset[str]:
        """``torch.zeros`` where only ``from utils import *`` binds ``torch`` (star_imports.py)."""
        dotted = dotted_name(node) if isinstance(node, (cst.Name, cst.Attribute)) else None
        if dotted is None:
            return frozenset()
        root, _, rest = dotted.partition(".")
        target = self.star_aliases.get(root)
        if target is None or any(not isinstance(asg, BuiltinAssignment) for asg in scope[root]):
            return frozenset()
        return frozenset({f"{target}.{rest}" if rest else target})

    def _builtins_hold(self, builtins: frozenset[str]) -> bool:
        """Are these builtins' names bound by nothing LibCST's scopes miss: no star import (one of
        a library: see NEVER_STAR_BOUND), walrus in a comprehension or ``match`` capture?"""
        if self.cache.star_bound is None:
            self.cache.star_bound = (star_imports.star_bound(self),)
        (bound,) = self.cache.star_bound
        names = {n.removeprefix("builtins.") for n in builtins}
        return star_imports.leaves_builtins(bound, names) and not names & bindings.unseen_names(self)

    def caught_by_handler(self, node: cst.CSTNode) -> bool:
        """Would a ``try`` (or ``suppress``/``pytest.raises``) see a RuntimeError raised at
        ``node``: around it, around a call of its function here, or in a project file that
        imports that function (analysis/handlers.py)?"""
        return handlers.caught_by_handler(self, node)

    def bound_unseen(self, name: str) -> bool:
        """Is ``name`` bound where LibCST's scopes record nothing (a comprehension's walrus...)?"""
        return name in bindings.unseen_names(self)

    def canonical_dtype(self, expr: cst.CSTNode) -> str | None:
        """:meth:`dtype_of` with aliases resolved (``torch.long`` -> ``torch.int64``)."""
        return dtypes.canon_dtype(self.dtype_of(expr))

    def is_builtin_at(self, node: cst.CSTNode, name: str) -> bool:
        """Does ``name``, written where ``node`` is (fix code), call Python's builtin? No local,
        parameter, global or import binds it there, nor anything syncfix cannot list."""
        scope = None
        for here in (node, *self.ancestors(node)):
            scope = self.scope(here)
            if scope is not None:
                break
        if scope is None or not hasattr(builtins_module, name):
            return False
        if any(not isinstance(asg, BuiltinAssignment) for asg in scope[name]):
            return False
        return self._builtins_hold(frozenset({f"builtins.{name}"})) and not self.calls_named("globals")

    def qualname(self, node: cst.CSTNode) -> str | None:
        """The qualified name of ``node`` when every candidate agrees, else None."""
        names = self.qualnames(node)
        return next(iter(names)) if len(names) == 1 else None

    def callee(self, call: cst.Call) -> str | None:
        return self.qualname(call.func)

    def direct_callee(self, call: cst.Call) -> str | None:
        """:meth:`callee`, but None for a method of a call's result (``torch.ones(3).sum``)."""
        if isinstance(call.func, cst.Attribute) and through_call(call.func.value):
            return None
        return self.callee(call)

    def may_end_in(self, node: cst.CSTNode, last_parts: Iterable[str]) -> bool:
        """Could a qualified name of ``node`` end in one of ``last_parts``? (No scopes needed.)"""
        return navigation.may_end_in(self, node, last_parts)

    # ---- navigation (navigation.py) -------------------------------------------------------
    def statement_of(self, node: cst.CSTNode) -> cst.BaseStatement | None:
        """The statement (simple line or compound) that directly contains ``node``."""
        return navigation.statement_of(self, node)

    def block_of(self, stmt: cst.CSTNode) -> tuple[cst.CSTNode, Sequence[cst.BaseStatement]] | None:
        """The block holding ``stmt`` and its statements (so a rule can look before/after)."""
        return navigation.block_of(self, stmt)

    def statements_before(self, stmt: cst.CSTNode | None) -> list[cst.BaseStatement] | None:
        """The statements before ``stmt`` in its block, nearest first (None: not in a block)."""
        return navigation.statements_before(self, stmt)

    def statements_after(self, stmt: cst.CSTNode | None) -> list[cst.BaseStatement] | None:
        """The statements after ``stmt`` in its block, nearest first (None: not in a block)."""
        return navigation.statements_after(self, stmt)

    def enclosing_function(self, node: cst.CSTNode) -> cst.FunctionDef | None:
        return navigation.enclosing_function(self, node)

    def enclosing_loop(self, node: cst.CSTNode) -> cst.For | cst.While | None:
        """The innermost ``for``/``while`` whose *body* holds ``node`` (not crossing a def)."""
        return navigation.enclosing_loop(self, node)

    def repeating_loop(self, node: cst.CSTNode) -> cst.For | cst.While | None:
        """:meth:`enclosing_loop`, unless that loop waits on ``input()`` each time round."""
        return navigation.repeating_loop(self, node)

    def walks_model(self, loop: cst.CSTNode) -> bool:
        """Is ``loop`` a ``for`` over a model's layers or tensors (``model.named_modules()``)?"""
        return navigation.walks_model(loop)

    def loops_around(self, node: cst.CSTNode) -> list[cst.For | cst.While]:
        return navigation.loops_around(self, node)

    def is_hot(self, node: cst.CSTNode) -> bool:
        """In a loop body, or in a function that looks like a training/inference step, or that
        other project files call from repeating code."""
        return navigation.is_hot(self, node)

    def repeats_here(self, node: cst.CSTNode) -> bool:
        """:meth:`is_hot` by this file alone: a loop body or a step-like function, not a helper
        that other files call from a loop (found by name, so a one-time call of a same-named
        function may count there)."""
        return navigation.is_hot(self, node, project=False)

    @cached_property
    def is_script(self) -> bool:
        """Is the module run as a program (an ``if __name__ == "__main__":`` block, or
        ``__main__.py``), so that its functions are called from it alone (callgraph.py)?"""
        return navigation.is_script(self)

    def calls_named(self, name: str) -> list[cst.Call]:
        """Calls in this module of a function or method named ``name`` (``name(...)``,
        ``obj.name(...)``): what may run a function defined here, found by name."""
        return self._calls_by_name.get(name, [])

    @cached_property
    def _calls_by_name(self) -> dict[str, list[cst.Call]]:
        calls: dict[str, list[cst.Call]] = {}
        for node in self.structure.of_type(cst.Call):
            if not isinstance(node, cst.Call):
                continue
            func = node.func
            if isinstance(func, cst.Name):
                calls.setdefault(func.value, []).append(node)
            elif isinstance(func, cst.Attribute):
                calls.setdefault(func.attr.value, []).append(node)
        return calls

    @cached_property
    def code(self) -> str:
        """The module's source text, generated once (text searches and source-level checks
        read it; LibCST builds it anew on every ``module.code``): the parsed text itself where
        the caller passed it (what the tree prints back, but for rare layouts LibCST does not
        reproduce, which no text search here depends on)."""
        if self._syntax_of is not None:
            return self._syntax_of.code
        return self._source if self._source is not None else self.module.code

    @cached_property
    def counts_on_later_syncs(self) -> bool:
        """Does the module, or code that imports it, copy without waiting and count on some
        later sync to finish the copy (analysis/async_copies.py)? Then no fix that removes a
        sync is safe here."""
        if self._syntax_of is not None:
            return self._syntax_of.counts_on_later_syncs
        return self.later_syncs_around or async_copies.counts_on_later_syncs(self.code.encode())

    @cached_property
    def uses_streams(self) -> bool:
        """Does the module, code that imports it, or code it imports touch CUDA streams or graphs
        (then copy ordering is not ours to prove)?"""
        if self._syntax_of is not None:
            return self._syntax_of.uses_streams
        return (
            bool(self.streams_around)
            or navigation.uses_streams(self)
            or async_copies.uses_streams(self.code.encode())  # a stream API under another name
        )

    @cached_property
    def class_method_names(self) -> frozenset[str]:
        """Names of the methods the module's classes define (a call of one of them on an object
        syncfix cannot read may be that class's method, not a tensor's)."""
        if self._syntax_of is not None:
            return self._syntax_of.class_method_names
        return frozenset(
            stmt.name.value
            for cls in self.structure.of_type(cst.ClassDef)
            if isinstance(cls, cst.ClassDef) and isinstance(cls.body, cst.IndentedBlock)
            for stmt in cls.body.body
            if isinstance(stmt, cst.FunctionDef)
        )

    @cached_property
    def sets_default_device(self) -> bool:
        return navigation.sets_default_device(self)

    @cached_property
    def may_use_several_devices(self) -> bool:
        """Does the module name a CUDA device by index (then "on CUDA" need not mean one device)?"""
        return navigation.may_use_several_devices(self)

    @cached_property
    def torch_alias(self) -> str | None:
        """The name the module binds ``torch`` to with a top-level ``import torch [as t]``."""
        return navigation.torch_alias(self)

    @cached_property
    def torch_code(self) -> bool:
        """Does the module import torch or a module named for it (``torchreid``), or is it torch
        code by its project (:attr:`torch_elsewhere`: a star import, a base class elsewhere)?"""
        return self.torch_elsewhere or navigation.torch_code(self)

    def is_step_function(self, fn: cst.FunctionDef) -> bool:
        """Is ``fn`` a step hook by its name (``hot-functions``; ``compute_loss``,
        ``test_step``... not as a module's top-level function)?"""
        return navigation.is_step_function(self, fn)

    def is_memoized(self, fn: cst.FunctionDef) -> bool:
        """Does ``fn``'s body run once per distinct arguments (``@lru_cache``), however often called?"""
        return navigation.is_memoized(fn, self)

    def torch_alias_at(self, node: cst.CSTNode) -> str | None:
        """The name new code at ``node`` can call ``torch`` by: a top-level import of it that no
        nearer binding shadows there (None if there is none)."""
        return navigation.torch_alias_at(self, node)

    def all_names(self) -> frozenset[str]:
        """Every identifier in the module (to pick new names that clash with nothing)."""
        return navigation.all_names(self)

    def fresh_name(self, base: str, taken: set[str] | None = None) -> str:
        """``base``, or ``base_2``, ``base_3``... whichever clashes with no name in the module."""
        return navigation.fresh_name(self, base, taken)

    def in_no_grad(self, node: cst.CSTNode) -> bool:
        """Inside ``with torch.no_grad()``/``inference_mode()`` or a function decorated so."""
        return autograd.in_no_grad(self, node)

    # ---- effects (effects.py) -------------------------------------------------------------
    def effects(self, stmt: cst.CSTNode) -> Effects:
        """Names a statement reads, writes and mutates in place, and the exits it contains."""
        return effects.effects(self, stmt)

    def is_pure_call(self, call: cst.Call) -> bool:
        """A call that mutates none of its arguments nor anything else we can see."""
        return effects.is_pure_call(self, call)

    def is_effect_free(self, expr: cst.CSTNode) -> bool:
        """Evaluating ``expr`` mutates nothing and runs no code we cannot see."""
        return effects.is_effect_free(self, expr)

    def is_logging_call(self, call: cst.Call) -> bool:
        """Does ``call`` write a log line or a metric (``print``, loggers, trackers)?"""
        return effects.is_logging_call(self, call)

    def is_clock_read(self, node: cst.CSTNode) -> bool:
        """Does ``node`` read a wall clock (``time.perf_counter()``...)?"""
        return effects.is_clock_read(self, node)

    # ---- bindings (bindings.py) -----------------------------------------------------------
    def bindings(self, name: cst.Name) -> frozenset[BaseAssignment]:
        """The scope bindings that may reach this use of ``name`` (loop-carried included)."""
        memo = (self._syntax_of or self).cache.bindings
        found = memo.get(name)
        if found is None:
            found = memo[name] = bindings.bindings(self, name)
        return found

    def target_path(self, target: cst.Name) -> tuple[list[int], cst.CSTNode | None]:
        """Where a binding target sits in the destructuring around it: its positions, outermost
        first (``(i, (x, y))`` gives ``[1, 0]`` for ``x``), and the node that binds them."""
        return navigation.target_path(self, target)

    def reaching_values(self, name: cst.Name) -> list[cst.CSTNode] | None:
        """The expressions of every binding that may reach ``name`` (see bindings.py)."""
        return bindings.reaching_values(self, name)

    def binding_values(self, name: cst.Name) -> list[cst.BaseExpression] | None:
        """The right-hand sides of the nearest bindings in straight-line code (see bindings.py)."""
        return bindings.binding_values(self, name)

    def straight_line_binding(self, name: cst.Name, *, reevaluable: bool = True) -> cst.BaseExpression | None:
        """The ``expr`` of ``name = expr`` that provably still holds here (see bindings.py)."""
        return bindings.straight_line_binding(self, name, reevaluable=reevaluable)

    def carrying_loops(self, name: cst.Name) -> list[cst.For | cst.While]:
        """The loops through which a later binding of ``name`` can reach this use."""
        return bindings.carrying_loops(self, name)

    def bound_once(self, name: cst.Name) -> bool:
        """Is ``name`` bound exactly once where it is used (so every use sees one value)?"""
        return bindings.bound_once(self, name)

    # ---- values (provenance.py) and devices (devices.py) -----------------------------------------------
    def value(self, expr: cst.CSTNode) -> Value:
        """The abstract value of ``expr``: kind, device, memory, freshness, dtype."""
        return provenance.value(self, expr)

    def returned(self, fn: cst.FunctionDef) -> Value:
        """What calling ``fn`` (a function of this module) gives: the join of its returns."""
        return callgraph.returned(self, fn)

    def is_tensor(self, expr: cst.CSTNode) -> bool:
        return self.value(expr).is_tensor

    def is_cuda_tensor(self, expr: cst.CSTNode) -> bool:
        return self.value(expr).on_cuda

    def device_of(self, expr: cst.CSTNode) -> Device:
        """The device a device-like expression (string, int, ``torch.device``, name) denotes."""
        return devices.device_of(self, expr)

    def imported_elsewhere(self, name: str) -> bool:
        """Does another project file import ``name`` from this module (or all its names)?"""
        return self.imported is not None and (ALL in self.imported or name in self.imported)

    def attribute_set(self, name: str) -> bool:
        """Is ``.name`` stored or deleted on some object in this module (or ``setattr`` with it
        or a computed name), or, in a closed project, in another of its files?"""
        return attributes.attribute_set(self, name)

    def used_as_module(self, expr: cst.BaseExpression) -> bool:
        """Is ``expr`` a name its function also calls a method of that only an ``nn.Module``
        has (``model.eval()``, ``m.cpu().parameters()``)?"""
        return attributes.used_as_module(self, expr)

    def passed_arguments(self, param: cst.Param) -> list[cst.BaseExpression] | None:
        """What this module's calls of ``param``'s function bind to it (each argument, or the
        default), or None where the function escapes or other files call it too."""
        return callgraph.param_arguments(self, param)

    def local_function(self, func: cst.BaseExpression) -> cst.FunctionDef | None:
        """The function of this module a callee names (``f`` for ``f(...)``; ``self.m`` when
        only ``self.m(...)`` calls reach that method), or None."""
        return callgraph.local_function(self, func)

    def result_base(self, call: cst.Call) -> cst.BaseExpression | None:
        """For a ``torch.*`` function call, the argument whose memory the result is (``out=``,
        a view's base, an in-place op's input); None where it is new memory."""
        return effects.torch_result_base(self, call)

    def to_target(self, call: cst.Call) -> Device | None:
        """The device a ``.to(...)`` call moves to, or None when it names no device we know."""
        return devices.to_target(self, call)

    def device_origin(self, expr: cst.BaseExpression) -> str | None:
        """The code of the one device expression a tensor was placed with, or None."""
        return devices.device_origin(self, expr)

    def already_on_target(self, call: cst.Call) -> bool:
        """Was the receiver of ``x.to(d)`` placed with the device expression ``d`` names, one that
        means one device wherever it is read? ``.to`` then returns ``x`` itself: no copy."""
        return no_copy.already_on_target(self, call)

    def names_device_only(self, call: cst.Call) -> bool:
        """Does ``.to(...)`` provably name a device and no dtype (so it keeps the dtype)?"""
        return devices.names_device_only(self, call)

    def is_cast_argument(self, expr: cst.BaseExpression) -> bool:
        """Does the first argument of ``.to(expr)`` name a dtype by every sign (a cast, no copy)?"""
        return devices.is_cast_argument(self, expr)

    def tested_on_cuda(self, x: cst.BaseExpression) -> bool:
        """Does an ``is_cuda`` test around ``x`` put it on a GPU (see device_tests.py)?"""
        return device_tests.tested_on_cuda(self, x)

    def cuda_branch(self, call: cst.Call) -> bool | None:
        """In a branch where ``call``'s (a ``.to(...)``) device is CUDA (True), is not (False)?"""
        return devices.cuda_branch(self, call)

    def is_tokenizer_output(self, expr: cst.BaseExpression) -> bool:
        """Is ``expr`` a tokenizer's output, ``tokenizer(text, return_tensors="pt")`` or a name
        bound only to one (likely new CPU tensors: a *likely* fact, for findings only)?"""
        return tokenizers.tokenizer_output(self, expr)

    def is_likely_batch_item(self, expr: cst.BaseExpression) -> bool:
        """Is ``expr`` an item of a batch from a loader the code does not construct (likely a
        fresh CPU tensor; a *likely* fact, for unsafe fixes only)?"""
        return devices.is_likely_batch_item(self, expr)

    def batch_sources(self, expr: cst.BaseExpression) -> list[tuple[cst.BaseExpression, bool]] | None:
        """The loaders a likely batch item comes from, each with whether it is the loader's whole
        item (not a part of one); None where one comes in through a parameter."""
        return devices.batch_sources(self, expr)

    def placed_by_accelerate(self, loader: cst.BaseExpression) -> bool:
        """Does ``loader`` come from ``accelerator.prepare(...)``, whose batches are already on
        the accelerator's device (``device_placement`` left on)?"""
        return devices.placed_by_accelerate(self, loader)

    def placed_by_lightning(self, expr: cst.BaseExpression) -> bool:
        """Is ``expr`` (a part of) the batch a Lightning step received, already on the module's
        device (see lightning.py)?"""
        return lightning.placed_by_lightning(self, expr)

    # ---- dtypes (dtypes.py) ---------------------------------------------------------------
    @cached_property
    def default_float(self) -> str | None:
        """``torch.float32`` unless the module changes the default dtype (then unknown)."""
        return dtypes.default_float(self)

    def dtype_of(self, expr: cst.CSTNode) -> str | None:
        """The exact dtype of a tensor expression (``"torch.float32"``...) when provable."""
        return dtypes.dtype_of(self, expr)

    def dtype_kind(self, expr: cst.BaseExpression) -> str | None:
        """``"float"``, ``"int"`` or ``"bool"``: the kind of a tensor's dtype, when provable."""
        return dtypes.dtype_kind(self, expr)

    def is_integer_tensor(self, expr: cst.BaseExpression) -> bool:
        """Is ``expr`` provably a tensor of an integer dtype (not bool)?"""
        return dtypes.is_integer_tensor(self, expr)

    def is_dtype(self, expr: cst.BaseExpression) -> bool:
        """Does ``expr`` name a torch dtype (``torch.float16``)?"""
        return dtypes.is_dtype(self, expr)

    # ---- Python numbers and host data (pynumbers.py) --------------------------------------
    def python_number_type(self, expr: cst.BaseExpression) -> str | None:
        """``"bool"``/``"int"``/``"float"`` when ``expr`` is provably a Python number of that type."""
        return pynumbers.python_number_type(self, expr)

    def likely_size(self, expr: cst.BaseExpression, *, follow: bool = False) -> bool:
        """An int, or a size (``x.shape[i]``, ``x.size(i)``) taken for an int (see sizes.py)."""
        return sizes.likely_size(self, expr, follow=follow)

    def narrowed_kind(self, name: cst.Name) -> Kind | None:
        """What an ``if isinstance(name, ...):`` around this use proves: a tensor, a Python
        number, or a list/tuple/dict (``Kind.OTHER``); None where nothing does."""
        return narrowing.narrowed_kind(self, name)

    def int64_by_construction(self, expr: cst.BaseExpression) -> bool:
        """Is ``expr`` an int within int64 in any run that ends (``len(x)``, a ``range`` counter)?"""
        return pynumbers.int64_by_construction(self, expr)

    def number_kind(self, expr: cst.CSTNode) -> str | None:
        """A literal's kind, ``"number"`` for another Python number, or an annotated parameter's."""
        return pynumbers.number_kind(self, expr)

    def literal_number(self, expr: cst.BaseExpression) -> bool | int | float | None:
        """The value of a number literal (``3``, ``-2.5``, ``True``), else None."""
        return literal_number(expr)

    def is_host_data(self, expr: cst.BaseExpression) -> bool:
        """Is ``expr`` provably host data (Python numbers, numpy values) and never a tensor?"""
        return pynumbers.is_host_data(self, expr)

    def legacy_type(self, expr: cst.BaseExpression) -> tuple[str, Device] | None:
        """The legacy tensor type ``expr`` names (``torch.cuda.FloatTensor``, or a name bound to
        ``torch.cuda.FloatTensor if cuda else torch.FloatTensor``) and where its tensors are."""
        return legacy_constructors.legacy_type(self, expr)

    # ---- shapes (shapes.py) and autograd (autograd.py) ------------------------------------
    def shape_key(self, expr: cst.CSTNode) -> str | None:
        """A key equal for two expressions of provably one shape (``"()"``: 0-d), or None."""
        return shapes.shape_key(self, expr)

    def is_zero_dim(self, expr: cst.CSTNode) -> bool:
        return shapes.is_zero_dim(self, expr)

    def one_element_shape(self, expr: cst.BaseExpression) -> tuple[int, ...] | None:
        """The shape of a tensor that provably holds exactly one element, or None."""
        return shapes.one_element_shape(self, expr)

    def is_element_count(self, expr: cst.BaseExpression) -> bool:
        """A count of elements (``len(x)``, ``t.size(0)``, ``t.shape[0]``, ``t.numel()``, an int
        literal): a Python int under 2**53, evaluated without side effects."""
        return shapes.is_element_count(self, expr)

    def is_one_element(self, expr: cst.BaseExpression) -> bool:
        """Does the tensor provably hold exactly one element (its shape known or not)?"""
        return shapes.one_element_shape(self, expr) is not None or autograd.backward_checked(self, expr)

    def is_one_dim(self, expr: cst.BaseExpression) -> bool:
        """Is ``expr`` provably a 1-D tensor?"""
        return shapes.is_one_dim(self, expr)

    def uniform_list_element(self, name: cst.Name, read: cst.CSTNode) -> cst.BaseExpression | None:
        """The element expression of a list built here whose tensors are provably alike in dtype,
        device and shape, as ``name`` holds it inside ``read`` (see containers.py)."""
        return containers.uniform_list_element(self, name, read)

    def filled_items(self, name: cst.Name) -> list[cst.BaseExpression]:
        """What the list ``name`` (bound to ``[]``) was filled with by ``.append``/``+= [...]``
        where it is read; empty where syncfix cannot list them (containers.py)."""
        return containers.filled_items(self, name)

    def is_scalar_list(self, expr: cst.BaseExpression) -> bool:
        """Is ``expr`` provably a list of Python scalars, never of sequences (containers.py)?"""
        return containers.is_scalar_list(self, expr)

    def is_grad_free(self, expr: cst.CSTNode) -> bool:
        """Provably carries no autograd history and does not require grad."""
        return autograd.is_grad_free(self, expr)

    # ---- host reads (host_reads.py) -------------------------------------------------------
    def loss_reduction(self, call: cst.Call) -> str | None:
        """``"mean"``/``"sum"``/``"none"``... when ``call`` is a torch loss (losses.py), else None."""
        return losses.loss_reduction(self, call)

    def may_be_host_read(self, call: cst.Call) -> bool:
        """Could ``call`` be a host read, on its syntax alone (a filter before :meth:`host_read`)?"""
        return host_reads.may_be_host_read(self, call)

    def host_read(self, call: cst.Call) -> HostRead | None:
        """``call`` as a host read of a tensor's value (``t.item()``, ``float(t)``...), or None."""
        return host_reads.host_read(self, call)

    def host_read_syncs(
        self, expr: cst.CSTNode, *, truth: bool = False, any_device: bool = False
    ) -> list[cst.CSTNode]:
        """The nodes of ``expr`` that read a (possibly) CUDA tensor's value on the host (with
        ``any_device``, also a tensor whose device syncfix cannot name)."""
        return host_reads.host_read_syncs(self, expr, truth=truth, any_device=any_device)

    def flows_to_host(self, name: str, after: cst.CSTNode) -> bool:
        """Might the tensor bound to ``name`` be read on the host after ``after``?"""
        return host_reads.flows_to_host(self, name, after)
