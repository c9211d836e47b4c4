"""Counting host-device synchronizations, by kind and by the user's source line.

Which counter, and why
======================
docs/semantics.md#counting-syncs compares what each way of counting syncs sees. This module
uses **PyTorch's GPU-trace sync callbacks as the primary counter** and
``torch.cuda.set_sync_debug_mode("warn")`` as an optional **cross-check** in the same run:

* GPU-trace callbacks (``torch._C._activate_gpu_trace`` plus
  ``torch.cuda._gpu_trace.register_callback_for_{stream,event,device}_synchronization``) fire from
  every wrapper PyTorch syncs through: ``memcpy_and_sync`` (``.item()``, ``.tolist()``, blocking
  copies in both directions, ``nonzero`` and mask indexing, everything that calls those
  internally), ``stream_synchronize``, ``device_synchronize`` (``torch.cuda.synchronize()``) and
  ``CUDAEvent::synchronize``. They run in Python under the GIL *before* the sync happens, so the
  Python stack is live: walking out of ``torch/`` gives the exact line of the user's code, and
  the host's wait can be timed by waiting ourselves, through the CUDA runtime, before PyTorch does.
* The sync debug mode only warns from ``memcpy_and_sync`` and ``stream_synchronize``: it misses
  ``torch.cuda.synchronize()`` and ``Event.synchronize()``, and it cannot count past the first
  sync in "error" mode. Where both can see, the two must agree line by line; a difference is
  reported (expected: trace = debug-mode + device + event syncs).
* A CUPTI callback counter also sees third-party syncs and ``cudaFree``, but CUPTI allows one
  subscriber per process (it would blind ``torch.profiler``), has no Python stack, and must link
  the exact ``libcupti`` PyTorch loads. It is not used here.

Kinds
-----
``copy``   a sync inside ``memcpy_and_sync``: a host read (``.item()``, ``.tolist()``, ``if t:``,
           ``print(t)``), a blocking copy either way (``.cpu()``, ``.cuda()``), a data-dependent
           output size (``nonzero``, ``x[mask]``, ``unique`` ...). The callback cannot tell these
           apart; the line can.
``stream`` an explicit ``Stream.synchronize()``.
``event``  an explicit ``Event.synchronize()``.
``device`` ``torch.cuda.synchronize()`` (``cudaDeviceSynchronize``).

Blind spots (what no in-process PyTorch hook can see)
-----------------------------------------------------
* implicit syncs inside the CUDA driver: ``cudaFree`` (``torch.cuda.empty_cache()``, allocator
  growth after an OOM retry), and ``non_blocking=True`` copies from *pageable* memory large enough
  that the driver waits for queued work;
* syncs made by code that calls CUDA directly: CuPy, custom C++/CUDA extensions, NCCL and
  ``torch.distributed`` internals, cuDNN/cuBLAS handle set-up;
* syncs in other processes (DataLoader workers, subprocesses);
* when no frame outside PyTorch, the standard library, site-packages and syncfix is on the stack
  (a sync from a library thread, or a program installed into site-packages), the sync is
  attributed to the innermost Python frame instead.

Costs: once activated the trace cannot be switched off (through PyTorch 2.13), and every CUDA
allocation, free and event then calls into Python (measured 8.5 → 13-17 µs for ``y = x + 1``).
Timings are therefore never taken in a process with the trace active; ``syncfix verify`` times
first and counts afterwards. The debug mode is process-global, and callbacks' exceptions are
swallowed by PyTorch (``CallbackRegistry.fire_callbacks``), so nothing here may rely on raising
from a callback.

Nothing in this module imports torch at import time.
"""

from __future__ import annotations

import contextlib
import ctypes
import linecache
import os
import sys
import sysconfig
import threading
import time
import warnings
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from types import FrameType
from typing import Any

KINDS: tuple[str, ...] = ("copy", "stream", "event", "device")
KIND_HELP = {
    "copy": "host read or blocking copy (.item(), .tolist(), .cpu(), .cuda(), nonzero, x[mask], print)",
    "stream": "Stream.synchronize()",
    "event": "Event.synchronize()",
    "device": "torch.cuda.synchronize()",
}
# The debug mode's warning text (c10/cuda/CUDAFunctions.cpp, warn_or_error_on_sync).
_DEBUG_MODE_MESSAGE = r".*synchronizing CUDA operation"


class CounterUnavailable(RuntimeError):
    """The GPU-trace hooks cannot be used here (no CUDA, or a PyTorch without them)."""


# --------------------------------------------------------------------------- which code is the user's

_SYNCFIX_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_SYNCFIX_PREFIX = _SYNCFIX_DIR + os.sep


def _library_roots(torch_loaded: bool) -> tuple[str, ...]:
    cached = _ROOTS_CACHE.get(torch_loaded)
    if cached is not None:
        return cached
    roots = {_SYNCFIX_DIR}
    for key in ("stdlib", "platstdlib", "purelib", "platlib"):
        p = sysconfig.get_paths().get(key)
        if p:
            roots.add(os.path.abspath(p))
    torch_file = getattr(sys.modules.get("torch"), "__file__", None)
    if torch_file:
        roots.add(os.path.dirname(os.path.abspath(torch_file)))
    result = _ROOTS_CACHE[torch_loaded] = tuple(sorted(roots))
    return result


_ROOTS_CACHE: dict[bool, tuple[str, ...]] = {}
_FILE_VERDICT: dict[str, bool] = {}


def is_library_file(filename: str) -> bool:
    """True for frames that are not the user's: torch, the standard library, site-packages,
    syncfix itself, and ``<frozen ...>`` modules. Rewritten user files (``<syncfix:...>``) and code
    handed to ``exec`` (``<string>``) are user code."""
    verdict = _FILE_VERDICT.get(filename)
    if verdict is not None:
        return verdict
    if filename.startswith("<syncfix:"):
        verdict = False
    elif filename.startswith(("<frozen", "<built-in")):
        verdict = True
    elif filename.startswith("<"):
        verdict = False
    else:
        roots = _library_roots("torch" in sys.modules)
        path = os.path.abspath(filename)
        parts = path.split(os.sep)
        verdict = (
            any(path == r or path.startswith(r + os.sep) for r in roots)
            or "site-packages" in parts
            or "dist-packages" in parts
        )
        if "torch" not in sys.modules:
            return verdict  # torch's own location is known only once it is imported
    _FILE_VERDICT[filename] = verdict
    return verdict


def _is_fire_callbacks(frame: FrameType) -> bool:
    code = frame.f_code
    return code.co_name == "fire_callbacks" and code.co_filename.endswith(
        os.path.join("torch", "_utils.py")
    )


def _qualname(frame: FrameType) -> str:
    code = frame.f_code
    return getattr(code, "co_qualname", code.co_name)


@dataclass(frozen=True)
class Origin:
    """Where a sync came from: the user's frame, and the innermost Python frame (``via``) that
    entered PyTorch's C++ code, when that is a different frame."""

    file: str
    line: int
    function: str
    via: str | None


def locate(frame: FrameType | None, user_code: Callable[[str], bool] | None = None) -> Origin:
    """Walk outward from ``frame`` (the callback's caller) to the first frame of user code.

    Frames of syncfix itself and PyTorch's ``fire_callbacks`` are skipped; the first frame after
    them is the one that called into C++ (``via``).
    """
    is_user = user_code or (lambda f: not is_library_file(f))
    innermost: FrameType | None = None
    f = frame
    while f is not None:
        fn = f.f_code.co_filename
        if not (fn.startswith(_SYNCFIX_PREFIX) or _is_fire_callbacks(f)):
            if innermost is None:
                innermost = f
            if is_user(fn):
                via = None
                if f is not innermost:
                    via = f"{_short(innermost.f_code.co_filename)}:{innermost.f_lineno} ({_qualname(innermost)})"
                return Origin(fn, f.f_lineno or 0, _qualname(f), via)
        f = f.f_back
    if innermost is not None:
        return Origin(
            innermost.f_code.co_filename, innermost.f_lineno or 0, _qualname(innermost), None
        )
    return Origin("<unknown>", 0, "<unknown>", None)


def _short(path: str) -> str:
    """``.../site-packages/torch/x.py`` → ``torch/x.py``; other paths unchanged."""
    parts = path.split(os.sep)
    for marker in ("site-packages", "dist-packages"):
        if marker in parts:
            return "/".join(parts[len(parts) - parts[::-1].index(marker) :])
    if "torch" in parts:
        return "/".join(parts[len(parts) - 1 - parts[::-1].index("torch") :])
    return path


def classify(hook: str, frame: FrameType | None) -> str:
    """The kind of a sync from the hook that fired and the innermost caller's frame.

    The stream hook fires both from ``memcpy_and_sync`` (copies, host reads) and from
    ``Stream.synchronize``; only the latter is entered from ``torch/cuda/streams.py``.
    """
    if hook != "stream":
        return hook
    f = frame
    while f is not None and (
        f.f_code.co_filename.startswith(_SYNCFIX_PREFIX) or _is_fire_callbacks(f)
    ):
        f = f.f_back
    if (
        f is not None
        and f.f_code.co_name == "synchronize"
        and f.f_code.co_filename.endswith(os.path.join("cuda", "streams.py"))
    ):
        return "stream"
    return "copy"


# --------------------------------------------------------------------------- records


@dataclass
class Site:
    file: str
    line: int
    function: str
    kind: str
    count: int = 0
    wait_s: float = 0.0
    via: str | None = None
    # The line in the rewritten text, for a rewritten file: a line the rewrite inserted has no
    # original line of its own (``line`` is then its neighbour), so the report needs this one.
    new_line: int | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "file": self.file,
            "line": self.line,
            "new_line": self.new_line,
            "function": self.function,
            "kind": self.kind,
            "count": self.count,
            "wait_s": self.wait_s,
            "via": self.via,
        }


Resolver = Callable[[str, int], tuple[str, int]]


@dataclass
class SyncRecorder:
    """Collects syncs while entered (``with SyncRecorder() as rec: ...``).

    ``resolve`` maps a (code filename, line) to the user's original file and line (the on-the-fly
    rewriter compiles rewritten files under pseudo names). ``measure_wait`` times each sync's host
    wait by waiting first, through the CUDA runtime, for what the sync waits for. ``cross_check``
    also arms ``set_sync_debug_mode("warn")`` and counts its warnings per line.
    """

    user_code: Callable[[str], bool] | None = None
    resolve: Resolver | None = None
    measure_wait: bool = False
    cross_check: bool = False
    sites: dict[tuple[str, int, str, str, int | None], Site] = field(default_factory=dict)
    debug_mode: Counter[tuple[str, int]] = field(default_factory=Counter)
    debug_mode_armed: bool = False
    wait_unavailable: bool = False
    _warn_ctx: Any = None
    _prev_mode: Any = None

    # -- recording
    def add(self, hook: str, frame: FrameType | None, wait_s: float) -> None:
        origin = locate(frame, self.user_code)
        file, line = origin.file, origin.line
        new_line = None
        if self.resolve is not None:
            file, line = self.resolve(file, line)
            if file != origin.file:  # a rewritten file, compiled under a pseudo name
                new_line = origin.line
        kind = classify(hook, frame)
        key = (file, line, origin.function, kind, new_line)
        site = self.sites.get(key)
        if site is None:
            site = self.sites[key] = Site(
                file, line, origin.function, kind, via=origin.via, new_line=new_line
            )
        site.count += 1
        site.wait_s += wait_s

    def add_debug_warning(self, frame: FrameType | None) -> None:
        origin = locate(frame, self.user_code)
        file, line = origin.file, origin.line
        if self.resolve is not None:
            file, line = self.resolve(file, line)
        self.debug_mode[(file, line)] += 1

    # -- summaries
    def total(self, kind: str | None = None) -> int:
        return sum(s.count for s in self.sites.values() if kind is None or s.kind == kind)

    def by_kind(self) -> dict[str, int]:
        return {k: self.total(k) for k in KINDS}

    def site_list(self) -> list[Site]:
        return sorted(self.sites.values(), key=lambda s: (-s.wait_s, -s.count, s.file, s.line))

    def cross_check_report(self) -> dict[str, Any]:
        """Trace vs debug mode, line by line, for the kinds both can see (copy + stream)."""
        if not self.debug_mode_armed:
            return {"armed": False}
        trace_seen: Counter[tuple[str, int]] = Counter()
        only_trace: Counter[tuple[str, int]] = Counter()
        for s in self.sites.values():
            if s.kind in ("copy", "stream"):
                trace_seen[(s.file, s.line)] += s.count
            else:
                only_trace[(s.file, s.line)] += s.count
        lines = sorted(set(trace_seen) | set(self.debug_mode))
        disagreements = [
            {
                "file": f,
                "line": ln,
                "trace": trace_seen[(f, ln)],
                "debug_mode": self.debug_mode[(f, ln)],
            }
            for f, ln in lines
            if trace_seen[(f, ln)] != self.debug_mode[(f, ln)]
        ]
        return {
            "armed": True,
            "trace_copy_stream": sum(trace_seen.values()),
            "debug_mode": sum(self.debug_mode.values()),
            "trace_only_device_event": sum(only_trace.values()),
            "agree": not disagreements,
            "disagreements": disagreements,
        }

    # -- context management
    def __enter__(self) -> SyncRecorder:
        if self.cross_check:
            self._arm_debug_mode()
        with _LOCK:
            _ACTIVE.append(self)
        return self

    def __exit__(self, *exc: object) -> None:
        with _LOCK:
            if self in _ACTIVE:
                _ACTIVE.remove(self)
        if self.debug_mode_armed:
            self._disarm_debug_mode()

    def _arm_debug_mode(self) -> None:
        torch = sys.modules.get("torch")
        if torch is None:
            return
        self._prev_mode = torch.cuda.get_sync_debug_mode()
        ctx = warnings.catch_warnings()
        ctx.__enter__()
        self._warn_ctx = ctx
        previous_show = warnings.showwarning
        warnings.filterwarnings("always", message=_DEBUG_MODE_MESSAGE)
        recorder = self

        def showwarning(message, category, filename, lineno, file=None, line=None):
            if _SUSPENDED.depth == 0 and "synchronizing CUDA operation" in str(message):
                recorder.add_debug_warning(sys._getframe(1))
                return
            if "synchronizing CUDA operation" in str(message):
                return
            previous_show(message, category, filename, lineno, file, line)

        warnings.showwarning = showwarning
        torch.cuda.set_sync_debug_mode("warn")
        self.debug_mode_armed = True

    def _disarm_debug_mode(self) -> None:
        torch = sys.modules["torch"]
        torch.cuda.set_sync_debug_mode(self._prev_mode)
        if self._warn_ctx is not None:
            self._warn_ctx.__exit__(None, None, None)
            self._warn_ctx = None


_ACTIVE: list[SyncRecorder] = []
_LOCK = threading.Lock()


class _Suspension:
    depth = 0


_SUSPENDED = _Suspension()


@contextlib.contextmanager
def allow_sync() -> Iterator[None]:
    """Syncs inside this block are not counted (deliberate syncs, the harness's own reads)."""
    _SUSPENDED.depth += 1
    try:
        yield
    finally:
        _SUSPENDED.depth -= 1


# --------------------------------------------------------------------------- waiting through cudart

_CUDART: list[Any] = []


def _cudart() -> Any | None:
    """The CUDA runtime library PyTorch already loaded (found in /proc/self/maps), or None."""
    if _CUDART:
        return _CUDART[0]
    lib = None
    try:
        with open("/proc/self/maps") as fh:
            paths = {ln.split()[-1] for ln in fh if "libcudart" in ln}
        for p in sorted(paths):
            if os.path.exists(p):
                lib = ctypes.CDLL(p)
                for name in ("cudaStreamSynchronize", "cudaEventSynchronize"):
                    getattr(lib, name).argtypes = [ctypes.c_void_p]
                break
    except OSError:
        lib = None
    _CUDART.append(lib)
    return lib


def _wait(hook: str, handle: int | None) -> float | None:
    """Wait for what the coming sync waits for, without PyTorch's hooks; the seconds it took."""
    lib = _cudart()
    t0 = time.perf_counter()
    if lib is not None:
        if hook == "device":
            lib.cudaDeviceSynchronize()
        elif hook == "event":
            lib.cudaEventSynchronize(ctypes.c_void_p(handle or 0))
        else:
            lib.cudaStreamSynchronize(ctypes.c_void_p(handle or 0))
        return time.perf_counter() - t0
    torch = sys.modules.get("torch")
    if torch is None or hook == "event":
        return None
    with allow_sync():
        if hook == "device":
            torch.cuda.synchronize()
        else:
            torch.cuda.ExternalStream(handle or 0).synchronize()
    return time.perf_counter() - t0


# --------------------------------------------------------------------------- the hooks


def _dispatch(hook: str, handle: int | None = None) -> None:
    """Called for every sync PyTorch makes (from the GPU-trace callbacks)."""
    if not _ACTIVE or _SUSPENDED.depth:
        return
    frame = sys._getframe(1)
    recorders = list(_ACTIVE)
    wait_s = 0.0
    if any(r.measure_wait for r in recorders):
        measured = _wait(hook, handle)
        if measured is None:
            for r in recorders:
                r.wait_unavailable = True
        else:
            wait_s = measured
    for r in recorders:
        r.add(hook, frame, wait_s)


def _on_stream(stream: int) -> None:
    _dispatch("stream", stream)


def _on_event(event: int) -> None:
    _dispatch("event", event)


def _on_device() -> None:
    _dispatch("device")


_INSTALLED: list[str] = []


def cuda_available() -> bool:
    """``torch.cuda.is_available()``, importing torch only if it is installed."""
    try:
        import torch
    except ImportError:
        return False
    return bool(torch.cuda.is_available())


def install() -> str:
    """Activate the GPU trace and register the sync callbacks (once per process).

    Returns the name of the API used. Raises :class:`CounterUnavailable` without CUDA or hooks.
    """
    if _INSTALLED:
        return _INSTALLED[0]
    try:
        import torch
    except ImportError as exc:
        raise CounterUnavailable("PyTorch is not installed") from exc
    if not torch.cuda.is_available():
        raise CounterUnavailable("CUDA is not available: sync counts need a CUDA device")
    activate = getattr(torch._C, "_activate_gpu_trace", None)
    try:
        import torch.cuda._gpu_trace as trace  # 2.3+

        api = "torch.cuda._gpu_trace"
    except ImportError:
        try:
            import torch.utils._cuda_trace as trace  # type: ignore[no-redef]  # before 2.3

            api = "torch.utils._cuda_trace"
            activate = getattr(torch._C, "_activate_cuda_trace", None)
        except ImportError as exc:
            raise CounterUnavailable(f"PyTorch {torch.__version__} has no GPU-trace hooks") from exc
    if activate is None:
        raise CounterUnavailable(f"PyTorch {torch.__version__} cannot activate the GPU trace")
    trace.register_callback_for_stream_synchronization(_on_stream)
    trace.register_callback_for_event_synchronization(_on_event)
    trace.register_callback_for_device_synchronization(_on_device)
    activate()
    _INSTALLED.append(api)
    return api


def source_line(file: str, line: int) -> str:
    return linecache.getline(file, line).strip()


def format_sites(sites: list[Site], *, limit: int = 20) -> str:
    """Plain text, one line per site, for failure messages."""
    out = []
    for s in sites[:limit]:
        code = source_line(s.file, s.line)
        via = f" via {s.via}" if s.via else ""
        out.append(f"  {_rel(s.file)}:{s.line} in {s.function}: {code}  [{s.kind}] x{s.count}{via}")
    if len(sites) > limit:
        out.append(f"  ... and {len(sites) - limit} more sites")
    return "\n".join(out)


def _rel(path: str) -> str:
    try:
        rel = os.path.relpath(path)
    except ValueError:
        return path
    return path if rel.startswith("..") else rel
