"""Running the original and the rewritten program in their own processes, in lockstep.

Each side is a child process (:mod:`syncfix.harness.child`) with the same seed, environment and
deterministic settings. The parent drives both through the same phases, one run at a time, so
they never compete for the GPU:

1. ``capture`` × min(warmup, 2), then ``warmup`` for the rest: untimed; the first capture is
   compared between the two sides, and a second capture of the original checks that the
   original agrees with itself;
2. ``time`` × repeats, interleaved A B, B A, A B ... so drift (clocks, caches, other load) hits
   both sides alike; each run's host wall time between two ``torch.cuda.synchronize()`` calls;
3. ``count`` × 1: the sync counter is activated (it cannot be switched off, and slows every
   allocation, so it comes after timing).

Every answer is awaited with a timeout; a child that crashes, exits or hangs is killed (its
process group) and reported with its traceback and the tail of its stderr.
"""

from __future__ import annotations

import json
import os
import pickle
import select
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from .target import Target


@dataclass
class RunFailure:
    side: str  # "original" | "rewritten"
    phase: str
    kind: str  # "crash" | "timeout" | "error" (an exception in the target) | "exit"
    message: str
    traceback: str = ""
    stderr_tail: str = ""
    stdout_tail: str = ""

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


@dataclass
class SideResult:
    side: str
    failure: RunFailure | None = None
    times: list[float] = field(default_factory=list)
    data: dict[str, Any] = field(default_factory=dict)  # what the child pickled at finish

    @property
    def ok(self) -> bool:
        return self.failure is None


class ChildProcess:
    """One child, its pipes, and its clock."""

    def __init__(
        self,
        side: str,
        config: dict[str, Any],
        workdir: str,
        *,
        timeout: float,
        python: str | None = None,
    ) -> None:
        self.side = side
        self.timeout = timeout
        self.result_path = os.path.join(workdir, f"{side}.pickle")
        self.stderr_path = os.path.join(workdir, f"{side}.stderr")
        self.stdout_path = os.path.join(workdir, f"{side}.stdout")
        config = dict(config, result_path=self.result_path)
        config_path = os.path.join(workdir, f"{side}.json")
        with open(config_path, "w", encoding="utf-8") as fh:
            json.dump(config, fh)
        to_child_r, to_child_w = os.pipe()
        from_child_r, from_child_w = os.pipe()
        env = dict(os.environ)
        env.update(
            SYNCFIX_HARNESS_FDS=f"{to_child_r},{from_child_w}",
            PYTHONHASHSEED=str(config.get("seed", 0)),
            PYTHONDONTWRITEBYTECODE="1",
            PYTHONUNBUFFERED="1",
        )
        if config.get("deterministic", True):
            env.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
        # The child must import syncfix from where this process did. An installed syncfix is on
        # the child's path anyway; a source checkout is appended last, so it shadows nothing.
        syncfix_parent = os.path.dirname(
            os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
        )
        if os.path.basename(syncfix_parent) not in ("site-packages", "dist-packages"):
            paths = [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p]
            if syncfix_parent not in paths:
                env["PYTHONPATH"] = os.pathsep.join([*paths, syncfix_parent])
        self._out = open(self.stdout_path, "wb")
        self._err = open(self.stderr_path, "wb")
        self.proc = subprocess.Popen(
            [python or sys.executable, "-m", "syncfix.harness.child", config_path],
            stdin=subprocess.DEVNULL,
            stdout=self._out,
            stderr=self._err,
            pass_fds=(to_child_r, from_child_w),
            env=env,
            cwd=config.get("cwd") or os.getcwd(),
            start_new_session=True,
        )
        os.close(to_child_r)
        os.close(from_child_w)
        self._w = to_child_w
        self._r = from_child_r
        self._buf = b""
        self.closed = False

    # -- messages
    def _send(self, msg: dict[str, Any]) -> None:
        data = (json.dumps(msg) + "\n").encode()
        try:
            while data:
                n = os.write(self._w, data)
                data = data[n:]
        except BrokenPipeError:
            pass  # the child died; the read below reports it

    def _recv(self, timeout: float) -> dict[str, Any] | None:
        """The next message, or None on timeout. Raises EOFError when the child is gone."""
        deadline = time.monotonic() + timeout
        while b"\n" not in self._buf:
            left = deadline - time.monotonic()
            if left <= 0:
                return None
            ready, _, _ = select.select([self._r], [], [], left)
            if not ready:
                return None
            chunk = os.read(self._r, 65536)
            if not chunk:
                raise EOFError
            self._buf += chunk
        line, _, self._buf = self._buf.partition(b"\n")
        return json.loads(line)

    def request(
        self, msg: dict[str, Any] | None, phase: str
    ) -> tuple[dict[str, Any] | None, RunFailure | None]:
        if msg is not None:
            self._send(msg)
        try:
            reply = self._recv(self.timeout)
        except EOFError:
            return None, self._died(phase)
        if reply is None:
            self.kill()
            return None, RunFailure(
                self.side,
                phase,
                "timeout",
                f"no answer within {self.timeout:g} s (the {phase} run hung or is too slow; see --timeout)",
                stderr_tail=self._tail(self.stderr_path),
            )
        if not reply.get("ok"):
            err = reply.get("error") or {}
            kind = "exit" if err.get("type") == "SystemExit" else "error"
            if reply.get("fatal"):
                kind = "crash"
            return reply, RunFailure(
                self.side,
                phase,
                kind,
                f"{err.get('type', 'Error')}: {err.get('message', '')}".strip(),
                traceback=err.get("traceback", ""),
                stderr_tail=self._tail(self.stderr_path),
                stdout_tail=reply.get("stdout_tail", ""),
            )
        return reply, None

    def _died(self, phase: str) -> RunFailure:
        try:
            code = self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self.kill()
            code = None
        how = f"exit status {code}"
        if code is not None and code < 0:
            try:
                how = f"killed by {signal.Signals(-code).name}"
            except ValueError:
                how = f"killed by signal {-code}"
        self.closed = True
        return RunFailure(
            self.side,
            phase,
            "crash",
            f"the process died during the {phase} run ({how})",
            stderr_tail=self._tail(self.stderr_path),
        )

    @staticmethod
    def _tail(path: str, limit: int = 4000) -> str:
        try:
            with open(path, "rb") as fh:
                fh.seek(0, os.SEEK_END)
                size = fh.tell()
                fh.seek(max(0, size - limit))
                return fh.read().decode("utf-8", "replace")
        except OSError:
            return ""

    def finish(self) -> tuple[dict[str, Any], RunFailure | None]:
        """Ask for the results, then reap the process."""
        data: dict[str, Any] = {}
        failure = None
        if not self.closed:
            _, failure = self.request({"op": "finish"}, "finish")
            if failure is None and os.path.exists(self.result_path):
                with open(self.result_path, "rb") as fh:
                    data = pickle.load(fh)
        self.close()
        return data, failure

    def kill(self) -> None:
        if self.proc.poll() is None:
            try:
                os.killpg(self.proc.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                self.proc.kill()
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            pass
        self.closed = True

    def close(self) -> None:
        try:
            self.proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            self.kill()
        for fd in (self._w, self._r):
            try:
                os.close(fd)
            except OSError:
                pass
        self._out.close()
        self._err.close()
        self.closed = True


@dataclass
class Plan:
    target: Target
    root: str
    fixer: dict[str, Any]  # select, ignore, unsafe_fixes, spec
    seed: int = 0
    deterministic: bool = True
    warmup: int = 2
    repeats: int = 5
    timeout: float = 300.0
    cross_check: bool = True
    measure_wait: bool = False
    observe: dict[str, list[dict[str, Any]]] | None = None  # trace --record: spans to watch

    def child_config(self, rewrite: bool) -> dict[str, Any]:
        return {
            "target": self.target.to_dict(),
            "root": self.root,
            "rewrite": rewrite,
            "fixer": self.fixer,
            "seed": self.seed,
            "deterministic": self.deterministic,
            "cross_check": self.cross_check,
            "measure_wait": self.measure_wait,
            "cwd": os.getcwd(),
            "observe": self.observe,
        }


def pair_steps(plan: Plan) -> int:
    """How many runs :func:`run_pair` makes: both sides' starts, warm-ups, timed and counted runs."""
    return 2 * (1 + max(plan.warmup, 1) + plan.repeats + 1)


def run_pair(plan: Plan, tick: Callable[..., None] | None = None) -> tuple[SideResult, SideResult]:
    """Run the original and the rewritten program through every phase, in lockstep.

    ``tick(done, total, what)`` is called before each run (and once at the end) for a progress bar.
    """
    total = pair_steps(plan)
    done = [0]

    def progress(what: str) -> None:
        if tick is not None:
            tick(done[0], total, what)
        done[0] += 1

    with tempfile.TemporaryDirectory(prefix="syncfix-verify-") as workdir:
        sides = {
            "original": SideResult("original"),
            "rewritten": SideResult("rewritten"),
        }
        procs = {
            name: ChildProcess(
                name, plan.child_config(name == "rewritten"), workdir, timeout=plan.timeout
            )
            for name in sides
        }
        try:
            for name, proc in procs.items():
                progress(f"start ({name})")
                _, failure = proc.request(None, "start")
                sides[name].failure = failure

            def step(name: str, phase: str) -> dict[str, Any] | None:
                side = sides[name]
                progress(f"{phase} run ({name})")
                if not side.ok:
                    return None
                reply, failure = procs[name].request({"op": "run", "phase": phase}, phase)
                if failure is not None:
                    side.failure = failure
                    return None
                return reply

            for i in range(max(plan.warmup, 1)):
                for name in ("original", "rewritten"):
                    # Run 0 is compared across the sides; run 1 of the original with its run 0.
                    capture = i == 0 or (i == 1 and name == "original")
                    step(name, "capture" if capture else "warmup")
            order = ("original", "rewritten")
            for r in range(plan.repeats):
                for name in order if r % 2 == 0 else order[::-1]:
                    reply = step(name, "time")
                    if reply is not None:
                        sides[name].times.append(float(reply["elapsed"]))
            for name in order:
                reply = step(name, "count")
                if reply is not None and reply.get("skipped"):
                    sides[name].data["count_skipped"] = reply["skipped"]
            for name, proc in procs.items():
                data, failure = proc.finish()
                sides[name].data = {
                    **data,
                    **{k: v for k, v in sides[name].data.items() if k not in data},
                }
                if failure is not None and sides[name].ok:
                    sides[name].failure = failure
            if tick is not None:
                tick(total, total, "done")
        finally:
            for proc in procs.values():
                if not proc.closed:
                    proc.kill()
                    proc.close()
        return sides["original"], sides["rewritten"]


def run_single(plan: Plan, count: bool = True) -> SideResult:
    """Run the original once (after ``plan.warmup`` warm-up runs) with the counter on (trace);
    without ``count``, just once (``trace --record``)."""
    with tempfile.TemporaryDirectory(prefix="syncfix-trace-") as workdir:
        side = SideResult("original")
        proc = ChildProcess("original", plan.child_config(False), workdir, timeout=plan.timeout)
        try:
            _, side.failure = proc.request(None, "start")
            phases = ["warmup"] * plan.warmup + ["count"] if count else ["warmup"]
            for phase in phases:
                if side.failure is not None:
                    break
                reply, side.failure = proc.request({"op": "run", "phase": phase}, phase)
                if reply is not None and reply.get("skipped"):
                    side.data["count_skipped"] = reply["skipped"]
                if reply is not None and phase == "count" and "elapsed" in reply:
                    side.times.append(float(reply["elapsed"]))
            # A crashed target still has results worth showing: the syncs up to the crash.
            if not proc.closed:
                data, failure = proc.finish()
                side.data = {**data, **{k: v for k, v in side.data.items() if k not in data}}
                if side.failure is None:
                    side.failure = failure
        finally:
            if not proc.closed:
                proc.kill()
                proc.close()
        return side
