"""The process that runs one side (original or rewritten) of ``syncfix verify`` / ``trace``.

Started by :mod:`syncfix.harness.runner` as ``python -m syncfix.harness.child CONFIG.json``. It
talks to the parent over two pipes (JSON lines): the parent says ``run`` with a phase, the child
runs the target once and answers; ``finish`` makes it pickle what it collected to the result
path and exit. Phases:

``capture``  seeds, runs, keeps what the target printed, returned and ``record``-ed;
``warmup``   seeds and runs (nothing kept);
``time``     seeds, synchronizes, runs, synchronizes: the host wall time of one run;
``count``    seeds and runs with the sync counter on (activated on first use: it cannot be
             switched off, so no timing follows it).

Before every run the RNGs (``random``, NumPy, torch and CUDA) are reseeded; torch's
deterministic settings are applied as soon as torch is imported (an import watcher), so a target
that never imports torch does not pay for it.
"""

from __future__ import annotations

import contextlib
import importlib.abc
import importlib.machinery
import importlib.util
import io
import json
import os
import pickle
import platform
import random
import sys
import time
import traceback
import types
from collections.abc import Callable, Sequence
from typing import Any

from . import counter
from .equivalence import snapshot
from .record import Observer
from .rewrite import Rewriter, make_fixer
from .target import Target, load_object

_SYNCFIX_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


class _Channel:
    def __init__(self, rfd: int, wfd: int) -> None:
        self._r = os.fdopen(rfd, "r", encoding="utf-8")
        self._wfd = wfd

    def recv(self) -> dict[str, Any] | None:
        line = self._r.readline()
        return json.loads(line) if line else None

    def send(self, msg: dict[str, Any]) -> None:
        data = (json.dumps(msg, default=str) + "\n").encode("utf-8")
        while data:
            n = os.write(self._wfd, data)
            data = data[n:]


class _ImportWatcher(importlib.abc.MetaPathFinder):
    """Calls ``callback(module)`` right after ``name`` is first imported."""

    def __init__(self, name: str, callback: Callable[[types.ModuleType], None]) -> None:
        self.name = name
        self.callback = callback
        self.fired = False

    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: types.ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        if fullname != self.name or self.fired:
            return None
        self.fired = True
        spec = None
        for finder in sys.meta_path:
            if finder is self or not hasattr(finder, "find_spec"):
                continue
            spec = finder.find_spec(fullname, path, target)
            if spec is not None:
                break
        if spec is None or spec.loader is None or not hasattr(spec.loader, "exec_module"):
            return spec
        loader = spec.loader
        original_exec = loader.exec_module
        callback = self.callback

        def exec_module(module: types.ModuleType) -> None:
            original_exec(module)
            callback(module)

        loader.exec_module = exec_module  # type: ignore[method-assign]
        return spec


class TargetFailed(Exception):
    pass


class Child:
    def __init__(self, config: dict[str, Any]) -> None:
        self.config = config
        self.target = Target.from_dict(config["target"])
        self.seed = int(config.get("seed", 0))
        self.deterministic = bool(config.get("deterministic", True))
        fixer = None
        if config.get("rewrite"):
            fx = config.get("fixer") or {}
            fixer = make_fixer(
                select=fx.get("select"),
                ignore=fx.get("ignore"),
                unsafe_fixes=bool(fx.get("unsafe_fixes")),
                spec=fx.get("spec"),
                texts=fx.get("texts"),
                observations=fx.get("observations"),
            )
        self.rewriter = Rewriter(fixer, config["root"])
        self.observer: Observer | None = None
        if config.get("observe"):
            self.observer = Observer(config["observe"])
            self.observer.install()
            self.rewriter.instrument = self.observer.instrument
        self.rewriter.install()
        self.captures: list[dict[str, Any]] = []
        self._capture: dict[str, Any] | None = None
        self._code: types.CodeType | None = None
        self._function: Callable[[], Any] | None = None
        self.recorder: counter.SyncRecorder | None = None
        self.counter_api: str | None = None
        self.count_skipped: str | None = None
        self.count_runs = 0
        self.runs_done = 0
        self.notes: list[str] = []
        self._watchers: list[_ImportWatcher] = []
        for name, cb in (("torch", self._setup_torch), ("numpy", self._seed_numpy)):
            if name not in sys.modules:
                self._watch(name, cb)
        import syncfix.verify as verify_api

        verify_api._recorder = self._record
        if self.target.kind == "script":
            assert self.target.path is not None
            sys.path[0] = os.path.dirname(self.target.path)

    def _watch(self, name: str, callback: Callable[[types.ModuleType], None]) -> None:
        watcher = _ImportWatcher(name, callback)
        self._watchers.append(watcher)
        sys.meta_path.insert(0, watcher)

    def close(self) -> None:
        """Undo what ``__init__`` hooked into this process (for running a Child in-process)."""
        import syncfix.verify as verify_api

        self.rewriter.uninstall()
        for w in self._watchers:
            if w in sys.meta_path:
                sys.meta_path.remove(w)
        if verify_api._recorder == self._record:
            verify_api._recorder = None

    # ------------------------------------------------------------------ determinism
    def _setup_torch(self, torch: types.ModuleType) -> None:
        if self.deterministic:
            try:
                self._deterministic(torch)
            except Exception as exc:  # an odd torch build; say so rather than die
                self.notes.append(f"could not enable deterministic algorithms: {exc}")
        torch.manual_seed(self.seed)

    def _deterministic(self, torch: types.ModuleType) -> None:
        """``torch.use_deterministic_algorithms(True, warn_only=True)`` and cuDNN's flags.

        The public function imports ``torch._inductor.config`` (and with it dynamo: seconds of
        start-up for every program); the same two settings are made here, inductor's only when
        inductor is imported.
        """
        setter = getattr(torch._C, "_set_deterministic_algorithms", None)
        if setter is None:
            torch.use_deterministic_algorithms(True, warn_only=True)
        else:
            setter(True, warn_only=True)

            def inductor(config: types.ModuleType) -> None:
                with contextlib.suppress(Exception):
                    config.deterministic = True  # type: ignore[attr-defined]

            if "torch._inductor.config" in sys.modules:
                inductor(sys.modules["torch._inductor.config"])
            else:
                self._watch("torch._inductor.config", inductor)
        torch.backends.cudnn.deterministic = True
        torch.backends.cudnn.benchmark = False

    def _seed_numpy(self, numpy: types.ModuleType) -> None:
        numpy.random.seed(self.seed)

    def _seed_all(self) -> None:
        random.seed(self.seed)
        if "numpy" in sys.modules:
            self._seed_numpy(sys.modules["numpy"])
        torch = sys.modules.get("torch")
        if torch is not None and hasattr(torch, "manual_seed"):
            torch.manual_seed(self.seed)  # seeds every CUDA device too

    # ------------------------------------------------------------------ record()
    def _record(self, name: str, value: Any) -> None:
        if self._capture is None:
            return
        with counter.allow_sync():
            self._capture["records"].append((name, snapshot(value)))

    # ------------------------------------------------------------------ running the target
    def _call_target(self) -> Any:
        t = self.target
        if t.kind == "script":
            assert t.path is not None
            if self._code is None:
                self._code = self.rewriter.compile_file(t.path)
            main = types.ModuleType("__main__")
            main.__file__ = t.path
            main.__builtins__ = __builtins__  # type: ignore[attr-defined]
            saved_main, saved_argv = sys.modules.get("__main__"), sys.argv
            sys.modules["__main__"] = main
            sys.argv = [t.path, *t.args]
            try:
                exec(self._code, main.__dict__)
            except SystemExit as exc:
                if exc.code not in (None, 0):
                    raise TargetFailed(f"the script exited with status {exc.code!r}") from exc
            finally:
                sys.argv = saved_argv
                if saved_main is not None:
                    sys.modules["__main__"] = saved_main
            return None
        if self._function is None:
            spec = f"{t.path}:{t.attr}" if t.path else f"{t.module}:{t.attr}"
            fn = load_object(spec)
            if not callable(fn):
                raise TargetFailed(f"{t.spec} is not callable")
            self._function = fn
        return self._function()

    def _cuda_sync(self) -> None:
        torch = sys.modules.get("torch")
        if torch is not None and torch.cuda.is_initialized():
            torch.cuda.synchronize()

    def run(self, phase: str) -> dict[str, Any]:
        if phase == "count":
            reason = self._prepare_count()
            if reason:
                return {"ok": True, "skipped": reason}
        self.runs_done += 1
        capture: dict[str, Any] | None = (
            {"stdout": "", "records": [], "return": None} if phase == "capture" else None
        )
        sink = io.StringIO()
        self._seed_all()
        self._cuda_sync()
        self._capture = capture
        t0 = time.perf_counter()
        try:
            with contextlib.redirect_stdout(sink):
                if phase == "count":
                    assert self.recorder is not None
                    with self.recorder:
                        value = self._call_target()
                    self.count_runs += 1
                else:
                    value = self._call_target()
                self._cuda_sync()
            elapsed = time.perf_counter() - t0
        except BaseException as exc:  # the target's failure is data, not our crash
            self._capture = None
            if capture is not None:
                capture["stdout"] = sink.getvalue()
                capture["error"] = _describe(exc)
                self.captures.append(capture)
            return {"ok": False, "error": _describe(exc), "stdout_tail": sink.getvalue()[-2000:]}
        self._capture = None
        if capture is not None:
            capture["stdout"] = sink.getvalue()
            if self.target.kind == "function":
                with counter.allow_sync():
                    capture["return"] = snapshot(value)
            self.captures.append(capture)
        return {"ok": True, "elapsed": elapsed}

    def _prepare_count(self) -> str | None:
        if self.count_skipped:
            return self.count_skipped
        if self.recorder is not None:
            return None
        if "torch" not in sys.modules and self.runs_done:
            self.count_skipped = "the target did not import torch"
        elif "torch" not in sys.modules and importlib.util.find_spec("torch") is None:
            self.count_skipped = "PyTorch is not installed"
        else:
            # Counting from the first run (trace without warm-up): torch must be imported, and
            # the hooks installed, before the target starts.
            import torch  # noqa: F401

            try:
                self.counter_api = counter.install()
            except counter.CounterUnavailable as exc:
                self.count_skipped = str(exc)
        if self.count_skipped:
            return self.count_skipped
        self.recorder = counter.SyncRecorder(
            resolve=self.rewriter.resolve,
            measure_wait=bool(self.config.get("measure_wait")),
            cross_check=bool(self.config.get("cross_check", True)),
        )
        return None

    # ------------------------------------------------------------------ results
    def environment(self) -> dict[str, Any]:
        env: dict[str, Any] = {"python": platform.python_version(), "torch": None, "cuda": False}
        torch = sys.modules.get("torch")
        if torch is not None:
            env["torch"] = torch.__version__
            env["cuda"] = bool(torch.cuda.is_available())
            if torch.cuda.is_initialized():
                env["device"] = torch.cuda.get_device_name()
        return env

    def finish(self) -> dict[str, Any]:
        rec = self.recorder
        result = {
            "captures": self.captures,
            "sites": [s.to_dict() for s in rec.site_list()] if rec else [],
            "cross_check": rec.cross_check_report() if rec else {"armed": False},
            "wait_measured": bool(rec and rec.measure_wait and not rec.wait_unavailable),
            "counter": self.counter_api,
            "count_skipped": self.count_skipped,
            "count_runs": self.count_runs,
            "rewrites": [rf.to_dict() for rf in self.rewriter.changed_files()],
            "environment": self.environment(),
            "notes": self.notes,
        }
        if self.observer is not None:
            result["observations"] = self.observer.results()
            result["instrumented"] = self.observer.instrumented
            result["not_instrumented"] = self.observer.missing
        with open(self.config["result_path"], "wb") as fh:
            pickle.dump(result, fh, protocol=pickle.HIGHEST_PROTOCOL)
        return {"ok": True}


def _describe(exc: BaseException) -> dict[str, Any]:
    if (
        isinstance(exc, TargetFailed)
        and exc.__cause__ is not None
        and isinstance(exc.__cause__, SystemExit)
    ):
        return {"type": "SystemExit", "message": str(exc), "traceback": ""}
    te = traceback.TracebackException.from_exception(exc)
    te.stack = traceback.StackSummary.from_list(
        [f for f in te.stack if not f.filename.startswith(_SYNCFIX_DIR + os.sep)]
    )
    return {
        "type": type(exc).__name__,
        "message": str(exc),
        "traceback": "".join(te.format()),
    }


def main(argv: list[str]) -> int:
    with open(argv[1], encoding="utf-8") as fh:
        config = json.load(fh)
    rfd, wfd = (int(x) for x in os.environ["SYNCFIX_HARNESS_FDS"].split(","))
    chan = _Channel(rfd, wfd)
    try:
        child = Child(config)
    except BaseException as exc:
        chan.send({"ok": False, "error": _describe(exc), "fatal": True})
        return 2
    chan.send({"ok": True, "ready": True, "pid": os.getpid()})
    while True:
        msg = chan.recv()
        if msg is None:  # the parent went away
            return 3
        if msg.get("op") == "run":
            chan.send(child.run(str(msg.get("phase"))))
        elif msg.get("op") == "finish":
            try:
                reply = child.finish()
            except BaseException as exc:
                reply = {"ok": False, "error": _describe(exc), "fatal": True}
            chan.send(reply)
            return 0
        else:
            chan.send({"ok": False, "error": {"type": "ProtocolError", "message": repr(msg)}})


if __name__ == "__main__":
    code = main(sys.argv)
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)  # user threads left running must not keep this process alive
