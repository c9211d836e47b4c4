"""The engine: prefilter → parse once → metadata once → all rules in one batched visit → fixes →
re-parse → repeat to a fixpoint → (write atomically) → results.

Each arrow is one function below. Everything returned is plain data (:mod:`syncfix.model`).
"""

from __future__ import annotations

import ast
import difflib
import re
from collections.abc import Callable, Mapping, Sequence
from contextlib import nullcontext
from dataclasses import dataclass, replace
from functools import cached_property

import libcst as cst
from libcst.metadata import CodeRange, MetadataWrapper, PositionProvider

from . import suppression
from .analysis import ModuleAnalysis
from .analysis.hotness import hot_in_file
from .analysis.imported import ProjectModules
from .analysis.project import ModuleContext, imports_torch
from .cache import Cache, would_fix
from .config import Settings
from .deepstack import call_deep
from .fileio import FileError, Snapshot, decode, read_source, write_atomic
from .model import Applicability, Edit, FileResult, Finding, FixInfo
from .observed import FileObservations, Need
from .parsing import legacy_hint, parse_module, rejected_by_checks, without_validation
from .positions import body_lines, positions_in, split_lines, top_lines_of_source
from .repetition import Repetition, is_test_path
from .rules import Fix, RawFinding, Rule, all_rules
from .walk import Structure, replaying, visits_trivia

MAX_ROUNDS = 8  # fix rounds per file before giving up on a fixpoint


# Said of a finding whose fix was dropped because the file holds a node LibCST's checks reject.
UNCHECKED = (
    " (no fix: LibCST rejects a statement of this file that Python accepts, such as "
    "`assert(x if c else y)` with no space after the keyword; put one there for fixes)"
)


class InternalError(Exception):
    """A fix produced code that does not parse, or a rule crashed: a bug in syncfix."""


@dataclass
class Analyzed:
    module: cst.Module
    findings: list[RawFinding]
    wrapper: MetadataWrapper
    visitors: Sequence[Rule] = ()
    analysis: ModuleAnalysis | None = None
    repetition: Repetition | None = None  # made for skipping one-time code; the filter reuses it
    source: str | None = None  # the module's text, when known to be what it was parsed from

    @cached_property
    def parents(self) -> dict:
        if self.analysis is not None:
            return self.analysis.structure.parent
        return Structure(self.module).parent

    @cached_property
    def top_lines(self) -> dict[cst.CSTNode, tuple[int, str]]:
        """Each top-level statement's first line (leading comments included) and exact text."""
        module = self.module
        if self.source is not None:
            found = top_lines_of_source(module, self.source, self._top_asts)
            if found is not None:
                return found
        line = 1 + sum(len(split_lines(module.code_for_node(h))) for h in module.header)
        out: dict[cst.CSTNode, tuple[int, str]] = {}
        for i, stmt in enumerate(module.body):
            text = module.code_for_node(stmt)
            if i == len(module.body) - 1 and not module.has_trailing_newline:
                break  # the module strips this statement's newline; leave it to the slow path
            out[stmt] = (line, text)
            line += len(split_lines(text))
        return out

    def position(self, node: cst.CSTNode) -> CodeRange:
        """``node``'s position, as LibCST's PositionProvider gives it. Resolved on first use, and
        only for the top-level statement that holds ``node``: a file with a few findings does
        not pay for the positions of every node."""
        top, parents = node, self.parents
        while (up := parents.get(top)) is not None and up is not self.module:
            top = up
        where = self.top_lines.get(top) if up is self.module else None
        if where is None:  # the module itself, its header or a node outside the record
            return self.wrapper.resolve(PositionProvider)[node]
        held = self._statement_in_body(top, node)
        if held is not None:  # a statement of a top-level class's or def's body
            stmt, line = held
            positions = self._positions.get(stmt)
            if positions is None:
                indent = [top.body.indent or self.module.default_indent]  # type: ignore[attr-defined]
                positions = self._positions[stmt] = positions_in(stmt, line, self.module, indent)
            return positions[node]
        positions = self._positions.get(top)
        if positions is None:
            positions = self._positions[top] = positions_in(top, where[0], self.module)
        return positions[node]

    def _statement_in_body(self, top: cst.CSTNode, node: cst.CSTNode) -> tuple[cst.CSTNode, int] | None:
        """The statement of ``top``'s indented body that holds ``node``, and its first line."""
        tree = self._top_asts.get(top)
        if tree is None or self.source is None:
            return None
        lines = self._body_lines.get(top)
        if lines is None:
            lines = self._body_lines[top] = body_lines(top, tree, self._source_lines)
        parents, stmt = self.parents, node
        while (up := parents.get(stmt)) is not None and up is not top:
            if stmt in lines:
                return stmt, lines[stmt]
            stmt = up
        return None

    @cached_property
    def _positions(self) -> dict[cst.CSTNode, Mapping[cst.CSTNode, CodeRange]]:
        return {}

    @cached_property
    def _top_asts(self) -> dict[cst.CSTNode, ast.stmt]:
        return {}  # filled with the top-level lines (top_lines_of_source)

    @cached_property
    def _source_lines(self) -> list[str]:
        return split_lines(self.source or "")

    @cached_property
    def _body_lines(self) -> dict[cst.CSTNode, dict[cst.CSTNode, int]]:
        return {}


# ---- one step at a time ----------------------------------------------------------------------


def enabled_rules(settings: Settings, path: str | None) -> list[type[Rule]]:
    rules = all_rules()
    return [rules[c] for c in settings.enabled(rules, path)]


# What a recorded run saw in this file and the analysed tree its spans refer to: None when no run
# was given, or when the text was already rewritten (observations describe the recorded text).
Seen = tuple[FileObservations, Analyzed] | None


def prefilter(data: bytes, rules: Sequence[type[Rule]], torch_by_star: bool = False) -> list[type[Rule]]:
    """The rules that could possibly fire on ``data``, judged without LibCST (substrings, and
    for rules that need torch, the imports: its own, or, with ``torch_by_star``, a star import
    of a project module that imports torch)."""
    torch = torch_by_star or imports_torch(data)
    return [
        r
        for r in rules
        if (torch or not r.NEEDS_TORCH)
        and (not r.TRIGGERS or any(t.encode() in data for t in r.TRIGGERS))
    ]


def parse(data: bytes, settings: Settings) -> cst.Module:
    config = (
        cst.PartialParserConfig(python_version=settings.target_version)
        if settings.target_version
        else cst.PartialParserConfig()
    )
    try:
        return parse_module(data, config)
    except cst.ParserSyntaxError as exc:
        raise _syntax_error(data, exc) from exc
    except (RecursionError, MemoryError) as exc:
        raise FileError(f"too deeply nested to parse ({type(exc).__name__})") from exc
    except Exception as exc:  # the parser rejects some inputs with other errors
        raise FileError(f"cannot parse: {exc}") from exc


def _syntax_error(data: bytes, exc: cst.ParserSyntaxError) -> FileError:
    """A one-line reason and its place; CPython places syntax errors better than LibCST, so ask it first."""
    try:
        compile(data, "<file>", "exec", dont_inherit=True)
    except SyntaxError as py:
        at = (py.lineno, py.offset) if py.lineno and py.offset else None
        return FileError(f"syntax error at {py.lineno}:{py.offset}: {py.msg}{legacy_hint(py.text)}", at)
    except (ValueError, RecursionError, MemoryError):
        pass
    return FileError(f"syntax error: {exc.message.removeprefix('parser error: ')}", (exc.raw_line, exc.raw_column + 1))


def analyze(
    module: cst.Module,
    rules: Sequence[type[Rule]],
    settings: Settings,
    context: ModuleContext | None = None,
    skip_cold_of: str | None = None,
    source: str | None = None,
) -> Analyzed:
    """Run ``rules`` over ``module``. With ``skip_cold_of`` (the file's path), rules reported
    only where syncs repeat do not visit one-time code, whose findings
    :func:`only_where_repeated` would drop (see :func:`skips_one_time_code`)."""
    wrapper = MetadataWrapper(module, unsafe_skip_copy=True)
    analysis = ModuleAnalysis(
        wrapper,
        hot_functions=settings.hot_functions,
        devices=settings.devices,
        called_from_loops=frozenset(context.hot) if context else hot_in_file(source or module.code, settings.hot_functions),
        module_name=context.module_name if context else None,
        imported=context.imported if context else None,
        project=(
            ProjectModules(context.modules, settings.devices, closed=context.closed, beside=context.beside)
            if context and context.modules
            else None
        ),
        package=context.package if context else None,
        streams_around=context.streams_around if context else "",
        later_syncs_around=context.later_syncs_around if context else False,
        defaults_changed=context.defaults_changed if context else frozenset(),
        datasets_placed=context.datasets_placed if context else False,
        other_accelerator=context.other_accelerator if context else "",
        torch_elsewhere=context.torch_by_star if context else False,
        narrow_to=context.narrow_to if context else "",
        source=source,
        trivia=any(visits_trivia(rule) for rule in rules),
    )
    visitors = [rule(analysis) for rule in rules]
    try:
        for visitor in visitors:
            wanted = visitor.get_inherited_dependencies()
            if wanted:
                analysis.structure  # noqa: B018 (recorded first, so that the providers replay it)
                with replaying():
                    visitor.metadata = wrapper.resolve_many(wanted)
        repetition = Repetition(analysis, skip_cold_of) if skip_cold_of is not None else None
        if repetition is None:
            analysis.structure.visit_batched(visitors)
        else:
            analysis.structure.visit_batched(
                visitors,
                skip=repetition.cold_subtree,
                skippable=lambda v: isinstance(v, Rule) and v.ONLY_WHERE_REPEATED,
            )
    except Exception as exc:
        raise InternalError(f"rule crashed: {type(exc).__name__}: {exc}") from exc
    findings = [f for v in visitors for f in v.findings]
    return Analyzed(module, findings, wrapper, visitors, analysis, repetition, source)


def fix_allowed(raw: RawFinding, settings: Settings, seen: Seen = None) -> bool:
    if raw.fix is None or not settings.is_fixable(raw.rule.CODE):
        return False
    kind = applicability(raw, settings, seen)
    if kind is None:
        return False
    return kind is not Applicability.UNSAFE or settings.unsafe_fixes


def observed_needs(raw: RawFinding, analyzed: Analyzed) -> tuple[Need, ...]:
    """The fix's needs with the positions of their expressions (as findings give positions)."""
    assert raw.fix is not None
    out = []
    for fact, node in raw.fix.needs:
        pos = analyzed.position(node)
        out.append(Need(fact, pos.start.line, pos.start.column + 1, pos.end.line, pos.end.column + 1))
    return tuple(out)


def observation_verdict(raw: RawFinding, seen: Seen) -> tuple[bool, str]:
    """Whether the fix's needs held on every recorded execution, and if not, why."""
    assert raw.fix is not None and raw.fix.needs
    if seen is None:
        return False, "record a run with `syncfix trace TARGET --record`, then pass --observed"
    observations, analyzed = seen
    return observations.check(observed_needs(raw, analyzed))


def applicability(raw: RawFinding, settings: Settings, seen: Seen = None) -> Applicability | None:
    """The fix's tier here: None for an observed fix whose facts a run did not show."""
    assert raw.fix is not None
    if raw.fix.needs and observation_verdict(raw, seen)[0]:
        return Applicability.OBSERVED
    if raw.fix.applicability is Applicability.OBSERVED:
        return None
    safe = settings.is_safe(raw.rule.CODE, raw.fix.applicability is Applicability.SAFE)
    return Applicability.SAFE if safe else Applicability.UNSAFE


def span(fix: Fix, analyzed: Analyzed) -> tuple[tuple[int, int], tuple[int, int]]:
    ranges = [analyzed.position(n) for n in fix.changes]
    start = min((r.start.line, r.start.column) for r in ranges)
    end = max((r.end.line, r.end.column) for r in ranges)
    return start, end


def choose_fixes(
    candidates: Sequence[RawFinding], analyzed: Analyzed, first: Sequence[RawFinding] = ()
) -> list[RawFinding]:
    """Non-overlapping fixes in source order; the rest wait for the next round. ``first`` go
    before the others (observed fixes: the observations describe this round's text only)."""
    chosen: list[RawFinding] = []
    taken: list[tuple[tuple[int, int], tuple[int, int]]] = []
    seen_nodes: set[int] = set()
    early = {id(r) for r in first}
    fixes = [
        (id(r) not in early, span(r.fix, analyzed), r.rule.CODE, r, r.fix) for r in candidates if r.fix is not None
    ]
    for _late, (s, e), _code, raw, fix in sorted(fixes, key=lambda c: c[:3]):
        if any(s < te and ts < e for ts, te in taken):
            continue
        if any(id(n) in seen_nodes for n in fix.changes):
            continue
        chosen.append(raw)
        taken.append((s, e))
        seen_nodes.update(id(n) for n in fix.changes)
    return chosen


class _Apply(cst.CSTTransformer):
    """Put each fix's replacements in place. Given the parent map, it descends only along the
    paths to the changed nodes, so the rest of the tree is reused instead of rebuilt."""

    def __init__(self, changes: dict[cst.CSTNode, object], parents: dict | None = None) -> None:
        super().__init__()
        self.changes = changes
        self.path: set[cst.CSTNode] | None = None
        if parents is not None and all(n in parents for n in changes):
            path: set[cst.CSTNode] = set()
            for node in changes:
                up = parents.get(node)
                while up is not None and up not in path:
                    path.add(up)
                    up = parents.get(up)
            self.path = path

    def on_visit(self, node) -> bool:
        return self.path is None or node in self.path

    def on_leave(self, original_node, updated_node):
        replacement = self.changes.get(original_node)
        if replacement is not None:
            return replacement
        return updated_node


def apply_fixes(module: cst.Module, fixes: Sequence[Fix], parents: dict | None = None) -> cst.Module:
    changes: dict = {}
    for fix in fixes:
        changes.update(fix.changes)
    return module.visit(_Apply(changes, parents))


def fix_edit(analyzed: Analyzed, fix: Fix) -> Edit:
    """The fix as a whole-line text edit (what rdjson/SARIF suggestions and previews need).

    Fast path: when every node the fix changes sits inside one top-level statement (not the
    statement itself), only that statement is transformed and regenerated: ``code_for_node`` of a
    module-level statement is exactly its slice of the file. Otherwise the whole module is.
    """
    module = analyzed.module
    top = _single_top_statement(analyzed, fix)
    if top is not None:
        new_top = top.visit(_Apply(dict(fix.changes), analyzed.parents))
        if isinstance(new_top, cst.CSTNode):  # always: the statement itself is not replaced
            start, old_text = analyzed.top_lines[top]
            new_text = module.code_for_node(new_top)
            return _line_edit(split_lines(old_text), split_lines(new_text), start)
    return fix_edit_slow(module, fix)


def fix_edit_slow(module: cst.Module, fix: Fix) -> Edit:
    """The reference the fast path is tested against: transform and diff the whole module."""
    old = split_lines(module.code)
    new = split_lines(apply_fixes(module, [fix]).code)
    return _line_edit(old, new, 1)




def _line_edit(old: list[str], new: list[str], first_line: int) -> Edit:
    matcher = difflib.SequenceMatcher(a=old, b=new, autojunk=False)
    ops = [op for op in matcher.get_opcodes() if op[0] != "equal"]
    if not ops:
        return Edit(first_line, first_line - 1, "", "")
    i1, j1 = ops[0][1], ops[0][3]
    i2, j2 = ops[-1][2], ops[-1][4]
    return Edit(first_line + i1, first_line + i2 - 1, "".join(new[j1:j2]), "".join(old[i1:i2]))


def _single_top_statement(analyzed: Analyzed, fix: Fix) -> cst.CSTNode | None:
    module = analyzed.module
    tops = set()
    for node in fix.changes:
        child, parent = node, analyzed.parents.get(node)
        while parent is not None and parent is not module:
            child, parent = parent, analyzed.parents.get(parent)
        if parent is None or child is node:
            return None  # the module itself, or a whole top-level statement, changes
        tops.add(child)
    if len(tops) != 1:
        return None
    top = tops.pop()
    if top not in analyzed.top_lines:
        return None  # the last statement of a file without a final newline: regenerate all
    return top


def to_finding(
    raw: RawFinding, analyzed: Analyzed, path: str, settings: Settings, with_edits: bool, seen: Seen = None
) -> Finding:
    pos = analyzed.position(raw.node)
    fix = None
    message = raw.message
    needs: tuple[Need, ...] = ()
    if raw.fix is not None and settings.is_fixable(raw.rule.CODE):
        kind = applicability(raw, settings, seen)
        if raw.fix.needs and kind is not Applicability.OBSERVED:
            needs = observed_needs(raw, analyzed)
        if kind is None:
            # an observed fix the recorded run (if any) does not back: say what is missing
            why = observation_verdict(raw, seen)[1]
            message = f"{raw.fix.unobserved or raw.message}; for an observed fix, {why}"
        else:
            description = raw.fix.description
            if kind is Applicability.OBSERVED and raw.fix.applicability is Applicability.UNSAFE:
                # the likely fact the unsafe fix rested on was seen to hold: say that instead
                description = description.split(" (unsafe:")[0] + " (observed: its facts held on every recorded execution)"
            fix = FixInfo(
                kind,
                description,
                fix_edit(analyzed, raw.fix) if with_edits else None,
                observed_needs(raw, analyzed) if kind is Applicability.OBSERVED else (),
            )
            if raw.fix.needs and kind is Applicability.UNSAFE and seen is not None:
                message = f"{message}; not observed: {observation_verdict(raw, seen)[1]}"
    return Finding(
        code=raw.rule.CODE,
        name=raw.rule.NAME,
        message=message,
        needs=needs,
        path=path,
        line=pos.start.line,
        column=pos.start.column + 1,
        end_line=pos.end.line,
        end_column=pos.end.column + 1,
        fix=fix,
    )


# ---- a whole source ----------------------------------------------------------------------------

Accept = Callable[[Finding], bool]


def process_source(
    data: bytes,
    path: str,
    settings: Settings,
    *,
    fix: bool,
    with_edits: bool = True,
    accept: Accept | None = None,
    context: ModuleContext | None = None,
) -> tuple[bytes, list[Finding], list[Finding]]:
    """Check (and with ``fix`` rewrite) one source. Returns (new bytes, remaining, applied).

    ``accept`` (interactive mode) is asked about each fix before it is applied. ``context``:
    the file's place in its project (what other files import from it), when known.
    """
    rules = rules_for(data, path, settings, context)
    if not rules:
        return data, [], []  # no rule can fire: no parse, and no deep-stack thread either
    return call_deep(
        _process_source, data, path, settings, rules, fix=fix, with_edits=with_edits,
        accept=accept, context=context,
    )


def rules_for(
    data: bytes, path: str, settings: Settings, context: ModuleContext | None = None
) -> list[type[Rule]]:
    """The enabled rules that may fire on ``data`` at ``path`` (judged without parsing it): in
    a test file, or one the project index found to be one-time code throughout, not those
    reported only where syncs repeat."""
    rules = prefilter(data, enabled_rules(settings, path), context is not None and context.torch_by_star)
    one_time = is_test_path(path, data) or (context is not None and context.one_time)
    if one_time and skips_one_time_code(settings, rules):
        rules = [r for r in rules if not r.ONLY_WHERE_REPEATED]
    return rules


def _process_source(
    data: bytes,
    path: str,
    settings: Settings,
    rules: Sequence[type[Rule]],
    *,
    fix: bool,
    with_edits: bool,
    accept: Accept | None,
    context: ModuleContext | None = None,
) -> tuple[bytes, list[Finding], list[Finding]]:
    """:func:`process_source` for ``rules`` (:func:`rules_for`, not empty), on a deep stack."""
    enabled = enabled_rules(settings, path)
    skip_cold = skips_one_time_code(settings, rules)
    module = parse(data, settings)
    applied: list[Finding] = []
    declined: set[tuple] = set()
    text = decode(data, module.encoding)  # the source as it stands in each round
    recorded = settings.observations.for_file(path, data) if settings.observations is not None else None
    seen: Seen = None
    # LibCST's node checks reject what its parser and Python accept (wanda's ``assert(x if c
    # else y)``: no space after the keyword), and fire when a walk or a fix rebuilds such a node:
    # such a file is analysed with them off, and gets no fix, which would need them
    unchecked = rejected_by_checks(text)
    for _round in range(MAX_ROUNDS):
        try:
            with without_validation() if unchecked else nullcontext():
                analyzed = analyze(module, rules, settings, context, path if skip_cold else None, source=text)
        except InternalError as exc:
            if unchecked or not isinstance(exc.__cause__, cst.CSTValidationError) or _round:
                raise
            with without_validation():  # another node the checks reject
                analyzed = analyze(module, rules, settings, context, path if skip_cold else None, source=text)
            unchecked = True
        if unchecked:
            analyzed.findings[:] = [
                replace(f, fix=None, message=f.message + UNCHECKED) if f.fix is not None else f for f in analyzed.findings
            ]
        # observations describe the file as it was recorded: the first round only
        seen = (recorded, analyzed) if recorded is not None and _round == 0 else None
        sup = suppression.parse(text)
        raws = drop_deferred(apply_suppressions(analyzed, sup, {r.CODE for r in enabled}))
        if not settings.include_cold:
            raws = only_where_repeated(raws, analyzed, path)
        else:
            raws = said_of_one_time_code(raws, analyzed, path)
        if not fix or unchecked:
            break
        candidates = [r for r in raws if fix_allowed(r, settings, seen)]
        if accept is not None:
            wanted = []
            for r in candidates:
                finding = to_finding(r, analyzed, path, settings, True, seen)
                assert finding.fix is not None  # a candidate's fix is allowed, so fixable
                key = (finding.code, finding.message, finding.fix.edit)
                if key in declined:
                    continue
                if accept(finding):
                    wanted.append(r)
                else:
                    declined.add(key)
            candidates = wanted
        observed = [r for r in candidates if seen is not None and applicability(r, settings, seen) is Applicability.OBSERVED]
        chosen = choose_fixes(candidates, analyzed, first=observed)
        if not chosen:
            break
        if _round == 0 and module.bytes != data:
            # LibCST does not reproduce every file exactly (e.g. a last line that is an indented
            # comment without a newline): rewriting such a file would change bytes outside the fix.
            raise FileError("LibCST does not reproduce this file byte for byte; left untouched")
        applied.extend(to_finding(r, analyzed, path, settings, False, seen) for r in chosen)
        new_module = apply_fixes(module, [r.fix for r in chosen if r.fix], analyzed.parents)
        new_bytes = new_module.bytes
        text = new_bytes.decode(new_module.encoding).removeprefix("\ufeff")
        try:
            module = parse_module(new_bytes, _config(settings))
        except Exception as exc:
            raise InternalError(
                f"a fix by {', '.join(sorted({r.rule.CODE for r in chosen}))} produced code that does not parse ({exc})"
            ) from exc
    else:
        raise InternalError(f"no fixpoint after {MAX_ROUNDS} rounds of fixes")
    remaining = sorted(
        (to_finding(r, analyzed, path, settings, with_edits, seen) for r in raws),
        key=Finding.sort_key,
    )
    return (module.bytes if applied else data), remaining, applied


def skips_one_time_code(settings: Settings, rules: Sequence[type[Rule]]) -> bool:
    """May rules reported only where syncs repeat skip one-time code? Their findings there are
    dropped (:func:`only_where_repeated`), so not computing them changes no output, unless
    ``--include-cold`` keeps them, or a rule audits suppressions (SFX900: a ``noqa`` in one-time
    code is used by the finding it silences)."""
    return not settings.include_cold and not any(hasattr(r, "report_unused") for r in rules)


def only_where_repeated(raws: list[RawFinding], analyzed: Analyzed, path: str) -> list[RawFinding]:
    """Drop the findings of rules that matter only where their sync repeats, in one-time code."""
    if analyzed.analysis is None:
        return raws
    repetition = analyzed.repetition or Repetition(analyzed.analysis, path)
    return [r for r in raws if not r.rule.ONLY_WHERE_REPEATED or repetition.repeats(r.node)]


# What a rule says of a sync on a tensor of unknown device in code it takes to repeat, and what
# is true of it in code that runs once (shown with --include-cold).
_REPEATS = re.compile(r"; that is, (?:every iteration of its loop|each time `\w+` runs)(?=[,;]|$)")
_ONCE = "; that is, once where it runs (one-time code)"


_WHERE_REPEATS = " where code repeats:"


def said_of_one_time_code(raws: list[RawFinding], analyzed: Analyzed, path: str) -> list[RawFinding]:
    """With ``--include-cold``: a finding in one-time code does not say its sync repeats (nor
    that it is where code repeats: ``GPU value read on the host where code repeats:``)."""
    said = [r for r in raws if _REPEATS.search(r.message) or _WHERE_REPEATS in r.message]
    if analyzed.analysis is None or not said:
        return raws
    repetition = analyzed.repetition or Repetition(analyzed.analysis, path)
    once = {id(r) for r in said if not repetition.repeats(r.node)}
    return [
        replace(r, message=_REPEATS.sub(_ONCE, r.message.replace(_WHERE_REPEATS, ":", 1), count=1)) if id(r) in once else r
        for r in raws
    ]


def _config(settings: Settings) -> cst.PartialParserConfig:
    if settings.target_version:
        return cst.PartialParserConfig(python_version=settings.target_version)
    return cst.PartialParserConfig()


def _covering(raw: RawFinding, analyzed: Analyzed, sup: suppression.Suppressions) -> list[int]:
    if not sup.directives:
        return []  # no position needed
    pos = analyzed.position(raw.node)
    return sup.covering(raw.rule.CODE, pos.start.line, pos.end.line)


def apply_suppressions(
    analyzed: Analyzed, sup: suppression.Suppressions, enabled: set[str]
) -> list[RawFinding]:
    """Drop suppressed findings, then let rules that audit suppressions (those with a
    ``report_unused`` method: SFX900) report the codes that suppressed nothing.

    A code counts as unused only when its rule is enabled for this file (so it would have been
    found) or no such rule exists; a disabled rule's code is left alone.
    """
    kept: list[RawFinding] = []
    used: set[tuple[int, str]] = set()
    for raw in analyzed.findings:
        hits = _covering(raw, analyzed, sup)
        used.update((i, raw.rule.CODE) for i in hits)
        if not hits:
            kept.append(raw)
    auditors = [v for v in analyzed.visitors if hasattr(v, "report_unused")]
    if auditors and sup.directives:
        known = all_rules()
        auditing = {v.CODE for v in auditors}  # "noqa: SFX900" is judged by nothing
        unused = sup.unused(
            used, lambda code: code not in auditing and (code in enabled or code not in known)
        )
        for visitor in auditors:
            start = len(visitor.findings)
            visitor.report_unused(unused)
            kept.extend(r for r in visitor.findings[start:] if not _covering(r, analyzed, sup))
    return kept


def drop_deferred(raws: list[RawFinding]) -> list[RawFinding]:
    """Drop the findings whose node a rule they defer to (``Rule.DEFERS_TO``) also reports, or
    covers (SFX301's run of reads): the same sync, said twice. A finding with a fix stays unless
    the other's fix is as trusted (faster-rcnn's two reads of ``num_examples``: SFX301's safe
    merge, not SFX105's unsafe read-once as well). After suppressions, so a silenced finding
    does not silence another rule's."""
    if not any(r.rule.DEFERS_TO for r in raws):
        return raws
    # per node: each rule reporting it, with the rank of its best fix (lower: more trusted)
    ranks_at: dict[int, dict[str, int]] = {}
    for r in raws:
        for node in (r.node, *r.covers):
            codes = ranks_at.setdefault(id(node), {})
            codes[r.rule.CODE] = min(codes.get(r.rule.CODE, _NO_FIX), _rank(r))
    kept = []
    for r in raws:
        others = [rank for code, rank in ranks_at[id(r.node)].items() if code in r.rule.DEFERS_TO]
        if not others or (r.fix is not None and min(others) > _rank(r)):
            kept.append(r)
    return kept


_TRUST = {Applicability.SAFE: 0, Applicability.OBSERVED: 1, Applicability.UNSAFE: 2}
_NO_FIX = len(_TRUST)


def _rank(raw: RawFinding) -> int:
    return _NO_FIX if raw.fix is None else _TRUST[raw.fix.applicability]


# ---- a whole file ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Job:
    path: str  # as shown to the user
    fix: bool
    write: bool
    want_source: bool  # keep the texts for a diff
    with_edits: bool = True
    cache: Cache | None = None  # check results of unchanged files (see syncfix/cache.py)
    looked_up: bool = False  # the main process already missed in the cache: only store
    context: ModuleContext | None = None  # its place in the project (syncfix/projects.py)
    # leave the write to ``finish_write``, once every file is analysed: an importer written
    # first would read as changed to the files that take facts from it (fewer fixes than check)
    defer_write: bool = False


def _uses_cache(job: Job) -> bool:
    return job.cache is not None and job.with_edits


def _cache_hit(job: Job, data: bytes, settings: Settings) -> list[Finding] | None:
    if job.cache is None or not _uses_cache(job) or job.looked_up:
        return None
    hit = job.cache.get(data, job.path, settings, _context_key(job))
    if hit is None or (job.fix and any(would_fix(f, settings) for f in hit)):
        return None
    return hit


def _context_key(job: Job) -> str:
    return job.context.fingerprint() if job.context is not None else ""


def cached_result(job: Job, settings: Settings) -> FileResult | None:
    """The file's result from the cache, or None (a miss, or a read error: ``process_file`` reports it)."""
    if not _uses_cache(job):
        return None  # nothing to look up: don't read the file here too
    try:
        hit = _cache_hit(job, read_source(job.path).data, settings)
    except FileError:
        return None
    return None if hit is None else FileResult(job.path, findings=hit)


def finish_write(result: FileResult, job: Job, settings: Settings) -> FileResult:
    """Write ``result``'s pending bytes over the file, unless it changed since it was read; if
    it cannot be written, report what the file on disk holds, at its own positions."""
    if result.pending is None:
        return result
    new, snap = result.pending
    assert isinstance(snap, Snapshot)
    result.pending = None
    try:
        write_atomic(job.path, new, snap)
    except FileError as exc:
        _, result.findings, _ = process_source(
            snap.data, job.path, settings, fix=False, with_edits=job.with_edits, context=job.context
        )
        result.fixed, result.new_source, result.source = [], None, None
        result.error = str(exc)
        return result
    result.written = True
    return result


def process_file(job: Job, settings: Settings, accept: Accept | None = None) -> FileResult:
    """Check (and fix, and write) one file; any failure becomes the result's ``error``.

    ``accept`` (interactive mode) is asked about each fix before it is applied.
    """
    result = FileResult(job.path)
    cache = job.cache if job.with_edits else None
    try:
        snap = read_source(job.path)
        hit = _cache_hit(job, snap.data, settings)
        if hit is not None:
            result.findings = hit
            return result
        new, remaining, applied = process_source(
            snap.data, job.path, settings, fix=job.fix, with_edits=job.with_edits, accept=accept,
            context=job.context,
        )
        result.findings, result.fixed = remaining, applied
        if cache is not None and new == snap.data:
            cache.put(snap.data, job.path, settings, remaining, _context_key(job))
        if job.want_source and (remaining or new != snap.data):
            result.source = decode(snap.data, snap.encoding)
        if new != snap.data:
            result.new_source = decode(new, snap.encoding) if job.want_source else ""
            if job.write:
                result.pending = (new, snap)
                if not job.defer_write:
                    return finish_write(result, job, settings)
    except FileError as exc:
        result.error, result.error_at = str(exc), exc.at
    except InternalError as exc:
        result.error = f"internal error: {exc}"
    except RecursionError:
        result.error = "too deeply nested to analyse"
    if result.error is not None:  # nothing was written: what was to be fixed is still there
        result.findings = sorted(result.findings + result.fixed, key=Finding.sort_key)
        result.fixed, result.new_source, result.source = [], None, None
    return result
