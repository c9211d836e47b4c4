"""What a call of a function imported from another file of the project gives.

``from .dist_util import dev`` then ``x.to(dev())``: the value of ``dev()`` is what ``dev``
returns, computed by the analysis of the module that defines it, the same way a call of a
function of the file itself is (callgraph.return_value). That module's parameters are what its
own analysis says they are: a function another file imports escapes, so its parameters keep
what their annotations promise, and the returned value holds for every caller.

The other module is parsed and analysed on demand, once per process and function (the value
is kept in :data:`_VALUES`), reduced to that function (:func:`reduced_source`), from the file the
project index read (:class:`~syncfix.analysis.project.ModuleFile`; a file whose
bytes changed since gives nothing). The results cache keys on the digests of every module a file
imports, directly or through others (``ModuleContext.fingerprint``), so a change there drops the
file's cached findings. Chains of files are followed (``dev()`` may return ``other.device()``);
a cycle gives unknown.

What crosses the file boundary: kind, device, memory, freshness and dtype. A tensor's *origin*
crosses only when it is a literal (``"cuda"``): a module-level name of the other file means
nothing here. A function redefined, bound twice, or bound by something other than ``def`` at
the other module's top level gives nothing; so does a name the other module itself imports.
Not seen: code that replaces a module's function at run time (``dist_util.dev = ...``).
"""

from __future__ import annotations

import ast
import os
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any, TypeVar

import libcst as cst
from libcst.metadata import GlobalScope, MetadataWrapper

from ..fileio import read_source
from ..parsing import parse_module
from ..walk import keep_active
from .members import Members
from .project import ALL, ModuleFile, digest, resolve_relative
from .syntax import dotted_name
from .values import Kind, TupleValue, Value

if TYPE_CHECKING:
    from .module import ModuleAnalysis

# (path, digest, devices, function) -> what calling it gives (None: not known). Only values are
# kept, not the analyses: kept analyses made each garbage collection of the process slower than
# analysing each function again would be.
_Key = tuple[str, str, "tuple[str, ...] | None", str]
_VALUES: dict[_Key, Value | None] = {}
_KEEP = 4096
MODULE = Value(Kind.MODULE)
_BUSY: set[_Key] = set()  # being computed: a cycle through other files gives unknown
# what one call passes: its positional arguments' values, its keyword arguments' values
_Passed = tuple[tuple[Value, ...], dict[str, Value]]
# (importer path, digest, devices, "module.function") -> what each of its calls there passes
_ARGUMENTS: dict[_Key, list[_Passed] | None] = {}


class ProjectModules:
    """The other modules of a file's project it imports (``ModuleContext.modules``), by the
    names an import may reach each by (``ModuleFile.aliases``: unique in the whole project)."""

    def __init__(
        self,
        modules: Sequence[ModuleFile],
        devices: Sequence[str] | None,
        *,
        closed: bool = False,
        beside: Sequence[tuple[str, str]] = (),
    ) -> None:
        self.devices = tuple(devices) if devices is not None else None
        #: only the project's files import its modules (``ModuleContext.closed``)
        self.closed = closed
        self._by_name = {alias: m for m in modules for alias in m.aliases}
        self._files = {m.name: m for m in modules}
        # a name this file's imports reach beside it (``ModuleContext.beside``)
        self._by_name.update({target: self._files[name] for target, name in beside if name in self._files})
        # Whole modules loaded to read their calls of this project's functions, the last few
        # kept while this file is analysed: a module that calls several functions of another
        # is parsed once, not once per function. Each is a live tree, so only up to a budget of
        # source (_WHOLE_KEPT_BYTES), and only for this file. Kept only while every value in
        # it is complete: one a cut cycle touched is dropped, and one in use is not shared (its
        # half-computed facts would read as final).
        self._whole: OrderedDict[str, ModuleAnalysis | None] = OrderedDict()
        self._whole_bytes: dict[str, int] = {}
        self._in_use: set[str] = set()
        #: (module, function) -> does a handler in another file see its errors (handlers.py)
        self.handler_answers: dict[tuple[str, str], bool] = {}
        # Answers a cut cycle made weaker, kept for this file only (see _memoised).
        self._weak: dict[_Key, Any] = {}
        self._members: Members | None = None

    @property
    def members(self) -> Members | None:
        """What the project's files do with attribute names (members.py); None unless the
        project is closed (only then are all of its files in sight)."""
        if not self.closed:
            return None
        if self._members is None:
            self._members = Members({m.name: m.members for m in self._files.values()})
        return self._members

    def own_file(self, module: str) -> ModuleFile | None:
        """The analysed file's own entry, where the project lists it (a closed project does)."""
        return self._files.get(module)

    def module_file(self, name: str) -> ModuleFile | None:
        """The project module an import of ``name`` reaches (None: not one of the project's)."""
        return self._by_name.get(name)

    def find(self, qualname: str, package: str | None) -> tuple[ModuleFile, str] | None:
        """The project module and top-level name a qualified name refers to (``.util.dev``
        relative to ``package``), or None."""
        if qualname.startswith("."):
            dots = len(qualname) - len(qualname.lstrip("."))
            rest = qualname[dots:]
            base = resolve_relative(package or "", "." * dots)
            if base is None:
                return None
            qualname = f"{base}.{rest}" if base else rest
        module, _, name = qualname.rpartition(".")
        found = self._by_name.get(module) if module else None
        return (found, name) if found is not None and name.isidentifier() else None

    def return_value(self, qualname: str, package: str | None, hops: int = 0) -> Value | None:
        """What calling the imported function ``qualname`` gives, or None when syncfix cannot
        tell (not a project function, or not one plain ``def``). A package's ``__init__`` that
        only imports the function (``from .loaders import make_loader``) hands on its value."""
        found = self.find(qualname, package)
        if found is None:
            return None
        module, name = found
        key = (module.path, module.digest, self.devices, name)

        def compute() -> Value | None:
            analysis = self._load(module, name)
            fn = top_level_function(analysis, name) if analysis is not None else None
            if analysis is not None and fn is not None:
                return portable(analysis.returned(fn))
            if hops >= _REEXPORT_HOPS or not module.path.endswith("__init__.py"):
                return None
            package_init = self._load(module, None)  # small, and what it imports is all it holds
            origin = reexported(package_init, name) if package_init is not None else None
            return self.return_value(origin, module.package, hops + 1) if origin is not None else None

        return _memoised(_VALUES, key, compute, self._weak)

    def is_module_class(self, qualname: str, package: str | None) -> bool:
        """Is the imported class ``qualname`` an ``nn.Module`` subclass (through its bases, in
        its own module or others of the project)? False when syncfix cannot tell."""
        from .attributes import class_is_module  # it asks this module about imported bases

        return self._class_holds(qualname, package, "class", class_is_module)

    def is_class(self, qualname: str, package: str | None) -> bool:
        """Is ``qualname`` a class some project module defines at its top level? False when
        syncfix cannot tell."""
        return self._class_holds(qualname, package, "is-class", lambda analysis, cls: True)

    def _class_holds(
        self, qualname: str, package: str | None, tag: str, test: Callable[[ModuleAnalysis, cst.ClassDef], bool]
    ) -> bool:
        """Does ``test`` hold of the project class ``qualname`` (read from its module's reduced
        source, memoised under ``tag``)?"""
        found = self.find(qualname, package)
        if found is None:
            return False
        module, name = found
        key = (module.path, module.digest, (tag,), name)

        def compute() -> Value | None:
            analysis = self._load(module, name, kind="class")
            cls = top_level(analysis, name, cst.ClassDef) if analysis is not None else None
            return MODULE if cls is not None and analysis is not None and test(analysis, cls) else None

        return _memoised(_VALUES, key, compute, self._weak) is not None

    def arguments(
        self, module: str, function: str, index: int | None, param: str, keyword_ok: bool
    ) -> list[Value | None] | None:
        """What the calls of ``module.function`` in the project's other files pass for one
        parameter (None in the list: the call leaves it to the default), or None when some
        file may call it where syncfix cannot see (passed as a value, a star import, a
        re-export, ``*args``). Only in a closed project."""
        if not self.closed:
            return None
        found: list[Value | None] = []
        for importer in self._importers_of(module):
            if importer is None:
                return None
            calls = self._calls_in(importer, module, function)
            if calls is None:
                return None
            found.extend(_bound(calls, index, param, keyword_ok))
        return found

    def any_call(
        self,
        module: str,
        function: str,
        test: Callable[[ModuleAnalysis, cst.Call], bool],
        unread: Callable[[ModuleAnalysis], bool] | None = None,
        cannot_hold: Callable[[ModuleFile], bool] | None = None,
    ) -> bool:
        """Does ``test`` hold of some call of ``module.function`` that the project's other files
        make where syncfix sees it (a direct call in a file that imports it)? ``unread`` answers
        for a file that imports the function but whose calls syncfix cannot read (it uses or
        re-exports it otherwise); a file ``cannot_hold`` says no call of it could pass is not
        parsed at all."""
        target = self._files.get(module)
        if target is None:
            return False

        def read(analysis: ModuleAnalysis | None) -> bool:
            if analysis is None or target is None:
                return False
            calls = calls_of(analysis, target, function)
            if any(test(analysis, call) for call in calls or ()):
                return True
            return calls is None and unread is not None and unread(analysis)

        for importer in self._importers_of(module):
            if importer is None or not _may_reach(importer, target, function):
                continue  # not known, or it imports other names of the module only
            if cannot_hold is not None and cannot_hold(importer):
                continue
            if self._reading(importer, read):
                return True
        return False

    def any_method_call(
        self,
        module: str,
        method: str,
        test: Callable[[ModuleAnalysis, cst.Call], bool],
        cannot_hold: Callable[[ModuleFile], bool] | None = None,
    ) -> bool | None:
        """Does ``test`` hold of some ``x.method(...)`` call in the project's files other than
        ``module`` (whatever ``x`` is: members.py)? None where syncfix cannot tell: an open
        project, or a file whose uses of ``.method`` are not all plain calls."""
        members = self.members
        if members is None:
            return None

        def read(analysis: ModuleAnalysis | None) -> bool | None:
            calls = method_calls_of(analysis, method) if analysis is not None else None
            return None if calls is None else any(test(analysis, call) for call in calls)  # type: ignore[arg-type]

        for name in members.callers(method):
            caller = self._files.get(name)
            if name == module:
                continue  # its own calls are the asking analysis's
            if caller is None:
                return None
            if cannot_hold is not None and cannot_hold(caller):
                continue
            found = self._reading(caller, read)
            if found is None or found:
                return found
        return False

    def _reading(self, file: ModuleFile, read: Callable[[ModuleAnalysis | None], T]) -> T:
        """``read`` of ``file``'s whole analysis (a fresh copy where it is being read already),
        with the asking file's record kept active and ``file`` marked in use meanwhile."""
        with keep_active():  # the asking file's record stays the one its walks use
            busy = file.path in self._in_use  # asked again while being read: a fresh copy
            analysis = self._load(file, None) if busy else self._whole_module(file)
            self._in_use.add(file.path)
            try:
                return read(analysis)
            finally:
                if not busy:
                    self._in_use.discard(file.path)

    def method_arguments(
        self, module: str, method: str, index: int | None, param: str, keyword_ok: bool
    ) -> list[Value | None] | None:
        """What the ``x.method(...)`` calls of the project's files other than ``module`` pass for
        one parameter (None in the list: the default), whatever ``x`` is (members.py); None
        when some call cannot be read. Only in a closed project."""
        members = self.members
        if members is None:
            return None
        found: list[Value | None] = []
        for name in members.callers(method):
            caller = self._files.get(name)
            if name == module:
                continue  # its own calls are the asking analysis's
            if caller is None:
                return None
            calls = self._method_calls_in(caller, method)
            if calls is None:
                return None
            found.extend(_bound(calls, index, param, keyword_ok))
        return found

    def _method_calls_in(self, caller: ModuleFile, method: str) -> list[_Passed] | None:
        """What each ``x.method(...)`` call in ``caller`` passes (memoised per process)."""
        key = (caller.path, caller.digest, self.devices, f".{method}")
        return _memoised(
            _ARGUMENTS, key, lambda: self._passed_in(caller, lambda a: method_calls_of(a, method)), self._weak
        )

    def _calls_in(self, importer: ModuleFile, module: str, function: str) -> list[_Passed] | None:
        """What each call of ``module.function`` in ``importer`` passes (memoised per process)."""
        key = (importer.path, importer.digest, self.devices, f"{module}.{function}")
        target = self._files.get(module)
        if target is not None and not _may_reach(importer, target, function):
            return []  # it imports other names of the module only: no call (and no parse)

        def find(analysis: ModuleAnalysis) -> list[cst.Call] | None:
            return calls_of(analysis, target, function) if target is not None else None

        return _memoised(_ARGUMENTS, key, lambda: self._passed_in(importer, find), self._weak)

    def _importers_of(self, module: str) -> list[ModuleFile | None]:
        """The project modules that import ``module`` (a None among them: not all are known)."""
        target = self._files.get(module)
        if target is None or target.ambiguous:
            return [None]
        return [self._files.get(name) for name in target.importers]

    def _passed_in(self, importer: ModuleFile, find: Callable[[ModuleAnalysis], list[cst.Call] | None]) -> list[_Passed] | None:
        """What each call ``find`` finds in ``importer`` passes."""
        path = importer.path
        if path in self._in_use:  # asked again while its calls are being read: a fresh copy
            return self._read_calls(self._load(importer, None), find)
        whole = self._whole_module(importer)
        before = _cuts
        self._in_use.add(path)
        try:
            return self._read_calls(whole, find)
        finally:
            self._in_use.discard(path)
            if _cuts != before:  # a cut cycle may have left weaker values in it: not reused
                self._whole.pop(path, None)
                self._whole_bytes.pop(path, None)

    def _whole_module(self, importer: ModuleFile) -> ModuleAnalysis | None:
        """The analysis of a whole project module, kept while this file is analysed (up to a
        budget of source): each importer is parsed once, however many questions ask it."""
        path = importer.path
        if path in self._whole:
            self._whole.move_to_end(path)
        else:
            self._whole[path] = self._load(importer, None)
            self._whole_bytes[path] = _size(path)
            while len(self._whole) > 1 and sum(self._whole_bytes.values()) > _WHOLE_KEPT_BYTES:
                old, _ = self._whole.popitem(last=False)
                self._whole_bytes.pop(old, None)
        return self._whole[path]

    @staticmethod
    def _read_calls(analysis: ModuleAnalysis | None, find: Callable[[ModuleAnalysis], list[cst.Call] | None]) -> list[_Passed] | None:
        if analysis is None:
            return None
        calls = find(analysis)
        if calls is None:
            return None
        return [
            (
                tuple(portable(analysis.value(arg.value)) for arg in call.args if arg.keyword is None),
                {arg.keyword.value: portable(analysis.value(arg.value)) for arg in call.args if arg.keyword is not None},
            )
            for call in calls
        ]

    def _load(self, module: ModuleFile, name: str | None, *, kind: str = "def") -> ModuleAnalysis | None:
        from .module import ModuleAnalysis  # the front object: it imports this module

        try:
            data = read_source(module.path).data
            if digest(data) != module.digest:
                return None  # changed since the index read it: its facts are not the keyed ones
            source = reduced_source(data, name, kind=kind) if name is not None else data
            if source is None:
                return None
            tree = parse_module(source)
        except Exception:  # unreadable, unparsable: nothing known, as for a library
            return None
        return ModuleAnalysis(
            MetadataWrapper(tree, unsafe_skip_copy=True),
            module_name=module.name,
            imported=module.imported,
            devices=self.devices,
            project=self,
            package=module.package,
        )


#: How much source the whole modules one file's analysis keeps loaded for their calls may hold
#: (ProjectModules._whole; the last one loaded stays, whatever its size). A module's analysis
#: takes about 9 KiB per line (LibCST's tree, the record, scopes): ~8,000 lines, ~70 MiB. Every
#: importer of a widely used module stays loaded in most projects, so each is parsed once per
#: file asked about, not once per question (dino's utils.py: 83 loads with 4 kept, 5 now).
_WHOLE_KEPT_BYTES = 320 * 1024


def _size(path: str) -> int:
    try:
        return os.path.getsize(path)
    except OSError:
        return 0

#: What a function or class of the other module left out of its reduced source is bound to: a
#: name bound to nothing syncfix knows (so a call of it is unknown, never a builtin's value).
UNKNOWN_BINDING = "__syncfix_not_analysed__"


def reduced_source(data: bytes, name: str, *, kind: str = "def") -> bytes | None:
    """The module's source with only ``def name`` kept whole: every other top-level function
    and class becomes ``other = <unknown>`` (so the name stays bound, to something unknown),
    every other top-level statement (imports, assignments, ``if``/``try`` blocks) stays. Parsing
    and resolving scopes for this costs a fraction of the whole file's; a call of another
    function of that module is then unknown, which is what a function not analysed gives.
    With ``kind="class"``: every top-level class keeps its header (decorators, bases) over an
    empty body, every function becomes unknown (what ``class name`` derives from is all that is
    asked). None when the module has no top-level ``def`` (``class``) ``name``."""
    tree, lines = _parsed(data)
    out: list[bytes] = [line for line in lines[:2] if line.lstrip().startswith(b"#")]  # coding cookie
    last = 0  # the last line (1-based) already copied
    found = False
    classes = kind == "class"
    used = _names_used_by(tree, name) if not classes else _names_in_class_headers(tree)
    for stmt in tree.body:
        first = min([stmt.lineno, *(d.lineno for d in getattr(stmt, "decorator_list", ()))])
        end = stmt.end_lineno or stmt.lineno
        if classes and isinstance(stmt, ast.ClassDef):
            found = found or stmt.name == name
            header_end = stmt.body[0].lineno - 1
            if header_end < stmt.lineno:  # ``class A(B): pass`` on one line
                out.extend(lines[first - 1 : end])
            else:
                out.extend(lines[first - 1 : header_end])
                out.append(b"    pass\n")
        elif (
            isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
            and (classes or stmt.name != name)
            and not _rebinds_globals(stmt, used)
        ):
            out.append(f"{stmt.name} = {UNKNOWN_BINDING}\n".encode())
        elif isinstance(stmt, ast.Expr) and not any(isinstance(n, ast.NamedExpr) for n in ast.walk(stmt)):
            pass  # binds nothing (a docstring, a call)
        elif _plain_assignment(stmt) and not _stored(stmt) & used:
            # a binding the function does not read (a big table of configurations): kept bound
            out.extend(f"{target} = {UNKNOWN_BINDING}\n".encode() for target in sorted(_stored(stmt)))
        elif first > last:
            found = found or not classes and isinstance(stmt, ast.FunctionDef) and stmt.name == name
            out.extend(lines[first - 1 : end])
        if out and not out[-1].endswith((b"\n", b"\r")):
            out[-1] += b"\n"
        last = max(last, end)
    return b"".join(out) if found else None


def _rebinds_globals(stmt: ast.stmt, used: set[str]) -> bool:
    """Does ``stmt`` (a function or class) declare ``global`` a name the kept code reads? Then it
    is kept whole: its rebinding is one of the name's bindings (``def set_device(d): global
    DEVICE; DEVICE = d``), without which the name would look bound once."""
    return any(isinstance(n, ast.Global) and used.intersection(n.names) for n in ast.walk(stmt))


def _names_in_class_headers(tree: ast.Module) -> set[str]:
    return {
        n.id
        for stmt in tree.body
        if isinstance(stmt, ast.ClassDef)
        for part in (*stmt.bases, *stmt.keywords, *stmt.decorator_list)
        for n in ast.walk(part)
        if isinstance(n, ast.Name)
    }


def _names_used_by(tree: ast.Module, name: str) -> set[str]:
    """Every name the top-level ``def name`` mentions (or None's worth: empty)."""
    return {
        n.id
        for stmt in tree.body
        if isinstance(stmt, ast.FunctionDef) and stmt.name == name
        for n in ast.walk(stmt)
        if isinstance(n, ast.Name)
    }


def _plain_assignment(stmt: ast.stmt) -> bool:
    """``a = ...``, ``a, b = ...``, ``a: T = ...``, ``a += ...``: names only (no ``x.attr =``)."""
    if isinstance(stmt, ast.Assign):
        targets = stmt.targets
    elif isinstance(stmt, (ast.AnnAssign, ast.AugAssign)):
        targets = [stmt.target]
    else:
        return False
    return all(
        isinstance(t, ast.Name) or isinstance(t, (ast.Tuple, ast.List)) and all(isinstance(e, ast.Name) for e in t.elts)
        for t in targets
    )


def _stored(stmt: ast.stmt) -> set[str]:
    """The names an assignment binds (its targets' names, unpacking and walrus included)."""
    return {n.id for n in ast.walk(stmt) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)} | {
        n.target.id for n in ast.walk(stmt) if isinstance(n, ast.NamedExpr)
    }


_PARSED: OrderedDict[str, tuple[ast.Module, list[bytes]]] = OrderedDict()


#: How much source those parses may hold (about 1 KiB of tree per line: ~25,000 lines, ~25 MiB;
#: the last one stays whatever its size): every importer of a widely used module, in most
#: projects (dino's utils.py asked 267 times for 12 files' parses: 256 parses with 4 kept, 8 now).
_PARSED_BYTES = 1024 * 1024


def _parsed(data: bytes) -> tuple[ast.Module, list[bytes]]:
    """Python's own parse of a module and its lines, kept for the module's other functions."""
    key = digest(data)
    if key in _PARSED:
        _PARSED.move_to_end(key)
    else:
        _PARSED[key] = (ast.parse(data), data.splitlines(keepends=True))
        while len(_PARSED) > 1 and sum(len(b) for _, lines in _PARSED.values() for b in lines) > _PARSED_BYTES:
            _PARSED.popitem(last=False)
    return _PARSED[key]


T = TypeVar("T")
_cuts = 0  # how many times a cycle was cut so far (answers computed across a cut are not kept)


def _memoised(memo: dict[_Key, T | None], key: _Key, compute: Callable[[], T | None], weak: dict[_Key, Any]) -> T | None:
    """``compute()``, kept in ``memo`` under ``key``; None inside a cycle of questions through
    files. An answer that a cut cycle made weaker is kept only in ``weak``, the asking file's
    own memo: kept for the process, it would depend on which file asked first, and the same
    file would get other findings in another run's order. (Weaker is still sound: a cut
    answers "unknown".)"""
    global _cuts
    if key in memo:
        return memo[key]
    if key in weak:
        _cuts += 1  # what reads a weaker answer is weaker too: kept for this file only
        return weak[key]  # type: ignore[no-any-return]
    if key in _BUSY:
        _cuts += 1
        return None
    before = _cuts
    _BUSY.add(key)
    try:
        with keep_active():  # the asking file's record stays the one its walks use afterwards
            answer = compute()
    finally:
        _BUSY.discard(key)
    if _cuts == before:
        if len(memo) >= _KEEP:
            memo.clear()
        memo[key] = answer
    else:
        weak[key] = answer
    return answer


def forget() -> None:
    """Drop every kept answer: a new run may see other file contents (the keys name only the
    file asked about, not the files its facts came through)."""
    _VALUES.clear()
    _ARGUMENTS.clear()
    _PARSED.clear()


def top_level(a: ModuleAnalysis, name: str, kind: type[cst.FunctionDef] | type[cst.ClassDef]) -> Any:
    """The module's one top-level ``def name`` (``class name``), when nothing else at its top
    level binds the name (a second ``def``, an assignment, an import)."""
    scope = a.scope(a.module)
    if scope is None or name not in scope:
        return None
    bound = list(scope[name])
    if len(bound) != 1:
        return None
    node = getattr(bound[0], "node", None)
    if isinstance(node, kind) and a.parent(node) is a.module:
        return node
    return None


_REEXPORT_HOPS = 3  # how many modules that only import a function a value is followed through


def reexported(a: ModuleAnalysis, name: str) -> str | None:
    """The qualified name (relative ones keep their dots) the module's top-level ``name`` is
    bound to where one import binds it and nothing else does (a package's ``from .x import f``)."""
    scope = a.scope(a.module)
    if scope is None or name not in scope:
        return None
    bound = list(scope[name])
    if len(bound) != 1 or not isinstance(getattr(bound[0], "node", None), cst.ImportFrom):
        return None
    names = scope.get_qualified_names_for(name)
    return next(iter(names)).name if len(names) == 1 else None


def top_level_function(a: ModuleAnalysis, name: str) -> cst.FunctionDef | None:
    return top_level(a, name, cst.FunctionDef)  # type: ignore[no-any-return]


def calls_of(a: ModuleAnalysis, target: ModuleFile, function: str) -> list[cst.Call] | None:
    """Every call of ``target.function`` in this module, or None when it may reach the
    function other than by a direct call syncfix sees: the function or its module used as a
    value, a star import of the module, a dotted ``import pkg.mod`` without ``as``, a call
    with ``*args``/``**kwargs``, or a name that other files may import from here."""
    functions: list[tuple[cst.CSTNode, str]] = []  # (import statement, local name)
    modules: list[tuple[cst.CSTNode, str]] = []
    package = a.package
    for node in a.structure.of_type(cst.ImportFrom):
        assert isinstance(node, cst.ImportFrom)
        base = _from_base(package, len(node.relative), dotted_name(node.module) if node.module is not None else None)
        if base is None:
            continue
        if isinstance(node.names, cst.ImportStar):
            if base in target.aliases:
                return None
            continue
        for alias in node.names:
            imported_name = dotted_name(alias.name) or ""
            local = alias.asname.name.value if alias.asname and isinstance(alias.asname.name, cst.Name) else imported_name
            if base in target.aliases and imported_name == function:
                functions.append((node, local))
            elif f"{base}.{imported_name}" in target.aliases:
                modules.append((node, local))
    for node in a.structure.of_type(cst.Import):
        assert isinstance(node, cst.Import)
        for alias in node.names:
            full = dotted_name(alias.name) or ""
            if full not in target.aliases:
                continue
            if alias.asname is not None and isinstance(alias.asname.name, cst.Name):
                modules.append((node, alias.asname.name.value))
            elif "." not in full:
                modules.append((node, full))
            else:
                return None  # ``import pkg.mod``: reached as ``pkg.mod.f``, not followed here
    exported = a.imported or frozenset()
    calls: list[cst.Call] = []
    for node, local in [*functions, *modules]:
        scope = a.scope(node)
        if scope is None:
            return None
        if isinstance(scope, GlobalScope) and (ALL in exported or local in exported):
            return None  # other files may reach it through this module
        for asg in scope.assignments[local]:
            if getattr(asg, "node", None) is not node:
                continue
            for access in asg.references:
                ref = access.node
                if (node, local) in functions:
                    site = ref
                else:
                    up = a.parent(ref)
                    if not isinstance(up, cst.Attribute) or up.value is not ref:
                        return None  # the module used as a value (``getattr(mod, name)``)
                    if up.attr.value != function:
                        continue
                    site = up
                call = a.parent(site)
                if not isinstance(call, cst.Call) or call.func is not site or any(arg.star for arg in call.args):
                    return None
                calls.append(call)
    return calls


def _bound(calls: list[_Passed], index: int | None, param: str, keyword_ok: bool) -> list[Value | None]:
    """What each call passes for one parameter (None: it leaves it to the default)."""
    return [
        positional[index] if index is not None and index < len(positional) else keywords.get(param) if keyword_ok else None
        for positional, keywords in calls
    ]


def method_calls_of(a: ModuleAnalysis, method: str) -> list[cst.Call] | None:
    """Every ``x.method(...)`` call in this module, or None when some ``.method`` is not the
    callee of a plain call (the summary of members.py says so too, unless the two parsers
    disagree: then nothing is assumed)."""
    from .callgraph import attribute_refs

    calls: list[cst.Call] = []
    for ref in attribute_refs(a).get(method, ()):
        call = a.parent(ref)
        if not isinstance(call, cst.Call) or call.func is not ref or any(arg.star for arg in call.args):
            return None
        calls.append(call)
    return calls


def _from_base(package: str, level: int, module: str | None) -> str | None:
    """The absolute module a ``from`` import reads (``from ..util import x`` in ``package``),
    or None when its dots climb out of the project."""
    rest = module or ""
    if not level:
        return rest
    head = resolve_relative(package, "." * level)
    if head is None:
        return None
    return f"{head}.{rest}" if head and rest else head or rest


def _may_reach(importer: ModuleFile, target: ModuleFile, function: str) -> bool:
    """Could :func:`calls_of` find anything but "no calls" in ``importer``? Only where it
    imports ``function`` from ``target``, or ``target`` itself, or all of it (``*``): the
    import statements of :func:`calls_of`, read off Python's own parse instead of LibCST's. True
    when the file cannot be read as the index saw it (the full path then says why)."""
    imports = _imports_of(importer)
    if imports is None:
        return True
    for base, names in imports:
        if base is None:  # ``import a, b``
            if any(name in target.aliases for name in names):
                return True
            continue
        for name in names:
            if name == "*" and base in target.aliases:
                return True
            if base in target.aliases and name == function:
                return True
            if f"{base}.{name}" in target.aliases:
                return True
    return False


# Per importer (path and digest), its import statements: (absolute base, names) of each
# ``from`` import, (None, modules) of each ``import``; None where it cannot be read as the
# index saw it. Read once: every question about one of its imports asks them all.
_IMPORTS: dict[tuple[str, str], list[tuple[str | None, list[str]]] | None] = {}


def _imports_of(importer: ModuleFile) -> list[tuple[str | None, list[str]]] | None:
    key = (importer.path, importer.digest)
    if key in _IMPORTS:
        return _IMPORTS[key]
    found: list[tuple[str | None, list[str]]] | None = None
    try:
        data = read_source(importer.path).data
        if digest(data) == importer.digest:
            imports: list[tuple[str | None, list[str]]] = []
            for node in ast.walk(_parsed(data)[0]):
                if isinstance(node, ast.ImportFrom):
                    base = _from_base(importer.package, node.level, node.module)
                    if base is not None:
                        imports.append((base, [alias.name for alias in node.names]))
                elif isinstance(node, ast.Import):
                    imports.append((None, [alias.name for alias in node.names]))
            found = imports
    except Exception:  # unreadable, unparsable: the full path gives up on it
        found = None
    if len(_IMPORTS) >= _KEEP:
        _IMPORTS.clear()
    _IMPORTS[key] = found
    return found


def portable(v: Value) -> Value:
    """``v`` as another file sees it: an origin that is not a literal names nothing there."""
    if isinstance(v, TupleValue):
        return TupleValue(tuple(portable(item) for item in v.items))
    if v.origin is not None and not v.origin.startswith(("'", '"')):
        return replace(v, origin=None)
    return v


def holders(a: ModuleAnalysis) -> frozenset[str] | None:
    """The project modules that import this one, directly or through each other (``import pkg``
    of a package whose ``__init__`` imports it); None where that is not known. Once per file."""
    project = a.project
    if project is None or a.module_name is None:
        return None
    if a.module_name not in a.cache.holders:
        a.cache.holders[a.module_name] = _importers_around(project, a.module_name)
    return a.cache.holders[a.module_name]


def _importers_around(project: ProjectModules, name: str) -> frozenset[str] | None:
    todo, seen = [name], set[str]()
    while todo:
        file = project.module_file(todo.pop())
        if file is None or file.ambiguous:
            return None
        for m in file.importers:
            if m not in seen:
                seen.add(m)
                todo.append(m)
    return frozenset(seen)
