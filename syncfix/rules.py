"""The base every rule in ``codemods/`` builds on, and the rule registry.

A rule is a LibCST ``BatchableCSTVisitor``: the engine parses a file once, resolves metadata once,
and runs every enabled rule in one batched visit. A rule calls :meth:`Rule.report` with the node,
a message and, where it has one, a :class:`Fix` that maps original nodes to replacements.

Everything about a rule lives in its module: the finder, the fixer, its metadata (``CODE``,
``NAME``, ``MESSAGE``, ``FIX``, ``SAFETY``), the doc (the class docstring, in markdown, with the
sections *What it finds*, *Why it costs*, *Example*, *Use instead*, *Fix safety*), and its
examples (``VALID`` must stay untouched, ``INVALID`` must be found and, where ``expected`` is
given, rewritten to it). :meth:`Rule.doc` renders all of it as one page: ``syncfix rule`` prints
it, and ``scripts/gen_docs.py`` writes it to ``docs/rules/<CODE>.md`` and the README's table.
"""

from __future__ import annotations

import builtins
import importlib
import inspect
import pkgutil
import re
import textwrap
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar, TypeVar, cast

import libcst as cst
from libcst.metadata import ProviderT

from .analysis import handler_site
from .model import Applicability
from .observed import FACTS

if TYPE_CHECKING:
    from .analysis import ModuleAnalysis

Replacement = cst.CSTNode | cst.RemovalSentinel | cst.FlattenSentinel[cst.CSTNode]
_Node = TypeVar("_Node", bound=cst.CSTNode)


CAUGHT_BY_HANDLER = (
    " (inside a try whose handler catches its error ({}): without the wait the error would be "
    "raised later, outside the try; no fix)"
)
SHADOWED_BUILTIN = (
    " (no fix: the rewrite would call the builtin `{}`, but that name may be bound to something"
    " else here: a parameter, a local, a global, or an import)"
)
SELF_DOCUMENTING = (
    " (no fix: it is in a self-documenting f-string, `{expr=}`, which prints the expression's"
    " text; a rewrite would change the printed text)"
)


@dataclass(frozen=True)
class Fix:
    """Replace each key node (by identity) with its value; all or nothing."""

    changes: Mapping[cst.CSTNode, Replacement]
    applicability: Applicability
    description: str
    # Facts no analysis proved that a run can show: (a key of syncfix.observed.FACTS, the
    # expression it is about). With them observed on every execution of a recorded run the fix
    # applies as OBSERVED; without, an OBSERVED fix does not apply at all and an UNSAFE one
    # stays unsafe. ``unobserved`` is the finding's message when an OBSERVED fix cannot apply.
    needs: tuple[tuple[str, cst.CSTNode], ...] = ()
    unobserved: str | None = None


@dataclass(frozen=True)
class Invalid:
    """An example a rule must flag; ``expected`` is the rewrite (None: no fix may apply).

    ``unsafe`` says the expected rewrite needs ``--unsafe-fixes``.
    """

    code: str
    expected: str | None = None
    unsafe: bool = False


@dataclass
class RawFinding:
    """A finding still tied to its CST node (lives only inside the engine)."""

    rule: type[Rule]
    node: cst.CSTNode
    message: str
    fix: Fix | None
    covers: tuple[cst.CSTNode, ...] = ()  # other nodes whose sync this finding says (a run's reads)


# Why a fix that would be safe is not, where code copies without waiting (see Rule.safe_fix).
LATER_SYNCS = (
    " (unsafe here: this module, or one that imports it, copies with non_blocking=True to the "
    "host or from a buffer it writes again, and may count on this sync to wait for that copy)"
)


class Rule(cst.BatchableCSTVisitor):
    CODE: ClassVar[str]
    NAME: ClassVar[str]  # kebab-case, e.g. "blocking-host-to-device"
    MESSAGE: ClassVar[str]  # default message
    FIX: ClassVar[str] = "never"  # "always" | "sometimes" | "never" (as in ruff's docs)
    # The applicabilities its fixes can have: () for a rule with no fix, ("safe",), ("unsafe",)
    # or ("safe", "unsafe"); tests/rules/test_rules.py checks it against the examples' fixes.
    SAFETY: ClassVar[tuple[str, ...]] = ()
    # Substrings of which at least one must occur in a file for the rule to have anything to do.
    TRIGGERS: ClassVar[tuple[str, ...]] = ()
    # Whether the rule can only fire in a file that imports torch (the engine then skips the
    # others unparsed); tests/test_engine.py checks it on every example with the imports removed.
    NEEDS_TORCH: ClassVar[bool] = True
    # Whether the rule reports only where its sync repeats (loops, step functions and what they
    # call; see syncfix/repetition.py): one-time set-up pays once, so a fix there is churn.
    ONLY_WHERE_REPEATED: ClassVar[bool] = True
    # Facts (keys of syncfix.observed.FACTS) a recorded run can supply to this rule's fixes
    # (``syncfix trace --record``, then ``--observed``); the rule's page lists them.
    OBSERVABLE: ClassVar[tuple[str, ...]] = ()
    VALID: ClassVar[list[str]] = []
    INVALID: ClassVar[list[Invalid]] = []
    # Parents, scopes and qualified names come from the analysis (``self.analysis.parent(node)``,
    # ``self.analysis.qualname(node)``), resolved lazily and shared by every rule. A rule that
    # needs another LibCST provider declares it here and the engine resolves it for that rule
    # alone (``self.get_metadata(Provider, node)``); a rule that declares none costs nothing.
    METADATA_DEPENDENCIES: ClassVar[tuple[ProviderT, ...]] = ()
    # Whether the rule's fixes remove or move syncs: then none is safe in code that copies
    # without waiting and may count on one of them to finish the copy (analysis/async_copies.py).
    MOVES_SYNCS: ClassVar[bool] = True
    # Whether the finding's node is where the code waits, so that a fix stops or moves that wait:
    # then no fix where a ``try`` around it would see the error the wait surfaces.
    WAITS_AT_FINDING: ClassVar[bool] = True
    # Codes of rules that report the same sync more precisely: where one of them reports this
    # rule's node, this rule's finding without a fix is dropped (one finding per sync; a fix is
    # never dropped). ``--ignore`` of those codes brings it back.
    DEFERS_TO: ClassVar[tuple[str, ...]] = ()

    def __init__(self, analysis: ModuleAnalysis) -> None:
        super().__init__()
        self.analysis = analysis
        self.findings: list[RawFinding] = []

    def report(
        self,
        node: cst.CSTNode,
        message: str | None = None,
        *,
        fix: Fix | None = None,
        wait_stays: bool = False,
        covers: tuple[cst.CSTNode, ...] = (),
    ) -> None:
        """``wait_stays``: the fix still waits at ``node``, once, for all the work the reads
        there waited for (N reads of one comprehension merged into one), so a ``try`` around it
        sees the same errors at the same place. ``covers``: other nodes whose syncs the finding
        speaks for (a rule that defers to this one says nothing there)."""
        if fix is not None and _changes_self_documenting_text(self.analysis, fix):
            # ``f"{loss.item()=}"`` prints its expression's text: a rewrite would change it
            fix = None
            message = (message or self.MESSAGE) + SELF_DOCUMENTING
        if fix is not None and self.WAITS_AT_FINDING and not wait_stays and self.analysis.caught_by_handler(node):
            # the sync it removes is where a handler around it sees an error from queued work
            fix = None
            message = (message or self.MESSAGE) + CAUGHT_BY_HANDLER.format(handler_site(self.analysis, node))
        shadowed = _shadowed_builtin(self.analysis, fix) if fix is not None else None
        if shadowed is not None:
            fix = None  # the new code would call whatever ``zip``/``len`` is bound there
            message = (message or self.MESSAGE) + SHADOWED_BUILTIN.format(shadowed)
        self.findings.append(RawFinding(type(self), node, message or self.MESSAGE, fix, covers))


    # Helpers every rule wants.
    def safe_fix(self, changes: Mapping[_Node, Replacement], description: str) -> Fix:
        if self.MOVES_SYNCS and self.analysis.counts_on_later_syncs:
            return Fix(_nodes(changes), Applicability.UNSAFE, description + LATER_SYNCS)
        return Fix(_nodes(changes), Applicability.SAFE, description)

    def unsafe_fix(
        self,
        changes: Mapping[_Node, Replacement],
        description: str,
        needs: Sequence[tuple[str, cst.CSTNode]] = (),
    ) -> Fix:
        """A fix resting on a likely fact; ``needs`` are the facts a recorded run can confirm."""
        return Fix(_nodes(changes), Applicability.UNSAFE, description, tuple(needs))

    def observed_fix(
        self,
        changes: Mapping[_Node, Replacement],
        description: str,
        needs: Sequence[tuple[str, cst.CSTNode]],
        unobserved: str,
    ) -> Fix:
        """A fix that applies only where a recorded run saw every one of ``needs`` hold;
        ``unobserved`` is the finding's message otherwise (it says what is missing)."""
        return Fix(_nodes(changes), Applicability.OBSERVED, description, tuple(needs), unobserved)

    @classmethod
    def doc(cls) -> str:
        """The rule's markdown documentation, as ``syncfix rule`` prints it (and, with its links
        made relative, as ``docs/rules/<CODE>.md`` holds it)."""
        body = textwrap.dedent(inspect.getdoc(cls) or "").strip()
        where = (
            " Reported only where the sync repeats (loop bodies, step-like functions and what they"
            " call); one-time code (set-up, an attribute made on first use under"
            " `if not hasattr(self, ...)`, a value made once per key of a cache, a method under `@lru_cache` or wrapped in one) and test files"
            " are quiet unless `--include-cold`."
            if cls.ONLY_WHERE_REPEATED
            else ""
        )
        observed = ""
        if cls.OBSERVABLE:
            facts = "; ".join(f"`{f}`: the value {FACTS[f]}" for f in cls.OBSERVABLE)
            observed = (
                "\n\n## Facts a recorded run can supply\n"
                "Where a fix waits only for facts no analysis proves, `syncfix trace TARGET --record` "
                "watches the values on a real run and `--observed` applies the fix (labelled "
                "*observed*) when each fact held on every execution of that line: "
                f"{facts}. A line the run never reached, or a file changed since, gets no fix."
            )
        return f"# {cls.NAME} ({cls.CODE})\n\n{cls.fix_summary()}{where}\n\n{body}{observed}\n"

    @classmethod
    def fix_summary(cls) -> str:
        """One sentence: whether a fix is available, and how safe."""
        availability = {
            "always": "Fix is always available",
            "sometimes": "Fix is sometimes available",
            "never": "Fix is not available.",
        }[cls.FIX]
        if not cls.SAFETY:
            return availability
        kinds = {
            ("safe",): "it is safe",
            ("unsafe",): "it is unsafe (applied only with `--unsafe-fixes`)",
            ("safe", "unsafe"): "safe where syncfix proves it exact, otherwise unsafe "
            "(applied only with `--unsafe-fixes`)",
        }[cls.SAFETY]
        return f"{availability}; {kinds}."


def _shadowed_builtin(a: ModuleAnalysis, fix: Fix) -> str | None:
    """A builtin's name the fix's new code uses (and the code it replaces does not) that does not
    call the builtin where the fix puts it: ``zip`` or ``len`` bound by a parameter, a global, a
    star import... The first such name, or None."""
    for node, new in fix.changes.items():
        news = new.nodes if isinstance(new, cst.FlattenSentinel) else [] if isinstance(new, cst.RemovalSentinel) else [new]
        added = set().union(*(_called_names(n) for n in news)) - _called_names(node) if news else set()
        for name in sorted(added & _BUILTIN_NAMES):
            if not a.is_builtin_at(node, name):
                return name
    return None


# ``True``, ``False`` and ``None`` are keywords (no import or assignment can rebind them), though
# LibCST parses them as names.
_BUILTIN_NAMES = frozenset(dir(builtins)) - {"True", "False", "None"}


def _called_names(node: cst.CSTNode) -> set[str]:
    """The names ``node`` reads as variables (not attribute names, keywords or parameters)."""
    found: set[str] = set()

    class V(cst.CSTVisitor):
        def visit_Name(self, n: cst.Name) -> None:
            found.add(n.value)

        def visit_Attribute(self, n: cst.Attribute) -> bool:
            n.value.visit(self)
            return False

        def visit_Arg(self, n: cst.Arg) -> bool:
            n.value.visit(self)
            return False

        def visit_Param(self, n: cst.Param) -> bool:
            return False

    node.visit(V())
    return found


def _changes_self_documenting_text(a: ModuleAnalysis, fix: Fix) -> bool:
    """Does the fix change what a self-documenting f-string (``f"{loss.item()=}"``) prints: the
    text of its expression? It may move one whole, not rewrite inside one."""
    if not _SELF_DOCUMENTING_TEXT.search(a.code):
        return False
    for node in fix.changes:
        for anc in a.ancestors(node):
            if isinstance(anc, cst.BaseStatement):
                break
            if isinstance(anc, cst.FormattedStringExpression) and anc.equal is not None:
                return True
    before: list[str] = []
    after: list[str] = []
    for node, new in fix.changes.items():
        before += _self_documenting(node)
        news = new.nodes if isinstance(new, cst.FlattenSentinel) else [] if isinstance(new, cst.RemovalSentinel) else [new]
        for n in news:
            after += _self_documenting(n)
    return sorted(before) != sorted(after)


_CODEGEN = cst.Module(body=[])
_SELF_DOCUMENTING_TEXT = re.compile(r"=\s*[}!:]")  # in the source of a module that may have one


def _self_documenting(node: cst.CSTNode) -> list[str]:
    found: list[str] = []

    class V(cst.CSTVisitor):
        def visit_FormattedStringExpression(self, n: cst.FormattedStringExpression) -> None:
            if n.equal is not None:
                found.append(_CODEGEN.code_for_node(n))

    node.visit(V())
    return found


def _nodes(changes: Mapping[_Node, Replacement]) -> Mapping[cst.CSTNode, Replacement]:
    # ``{call: new_call}`` is a Mapping[Call, ...]: Mapping's key type is invariant, yet the engine
    # only reads the keys, so any node type will do.
    return cast("Mapping[cst.CSTNode, Replacement]", changes)


def _discover() -> dict[str, type[Rule]]:
    from . import codemods

    found: dict[str, type[Rule]] = {}
    for info in sorted(pkgutil.iter_modules(codemods.__path__), key=lambda i: i.name):
        if info.name.startswith("_"):
            continue
        module = importlib.import_module(f"{codemods.__name__}.{info.name}")
        for obj in vars(module).values():
            if (
                inspect.isclass(obj)
                and issubclass(obj, Rule)
                and obj is not Rule
                and obj.__module__ == module.__name__
                and getattr(obj, "CODE", None)
            ):
                if obj.CODE in found:
                    raise RuntimeError(f"rule code {obj.CODE} defined twice")
                found[obj.CODE] = obj
    return dict(sorted(found.items()))


_REGISTRY: dict[str, type[Rule]] | None = None


def all_rules() -> dict[str, type[Rule]]:
    """Every rule, keyed by code, in code order (discovered from ``codemods/``)."""
    global _REGISTRY
    if _REGISTRY is None:
        _REGISTRY = _discover()
    return _REGISTRY
