"""``syncfix verify`` and ``syncfix trace`` (click commands; the main CLI registers them).

Exit codes: 0 numbers match (within the tolerance) and syncs did not rise; 1 a value differs,
syncs rose, or the rewritten program failed; 2 a usage error, the original program failed or
hung, or the harness could not run.
"""

from __future__ import annotations

import importlib.util
import json
import os
import sys
from typing import Any

import click

from .report import EXIT_ERROR
from .target import TargetError, check_object_spec, parse_target

TORCH_MISSING = (
    "torch is not installed in this Python ({python}); the harness needs it. Install the "
    "`verify` extra: `pip install -e \".[verify]\"` from a clone of syncfix (on a machine without "
    "a GPU, install a CPU build of torch first: "
    "`pip install torch --index-url https://download.pytorch.org/whl/cpu`)."
)


def torch_missing() -> bool:
    """Whether ``import torch`` would fail here (checked without importing it: that is slow)."""
    if "torch" in sys.modules:
        return sys.modules["torch"] is None
    try:
        return importlib.util.find_spec("torch") is None
    except (ImportError, ValueError):
        return True


def _require_torch(ctx: click.Context, command: str, schema: str, json_mode: bool) -> None:
    if not torch_missing():
        return
    msg = TORCH_MISSING.format(python=sys.executable)
    if json_mode:
        verdict = {"ok": False, "exit_code": EXIT_ERROR, "reasons": [msg]}
        click.echo(json.dumps({"schema": schema, "available": False, "reason": msg, "verdict": verdict}))
    else:
        click.echo(f"syncfix {command}: {msg}", err=True)
    ctx.exit(EXIT_ERROR)


def _codes(values: tuple[str, ...]) -> list[str] | None:
    out = [c.strip() for v in values for c in v.split(",") if c.strip()]
    return out or None


def _console(json_mode: bool) -> Any:
    from rich.console import Console

    # With --json the report goes to stdout alone; human text goes to stderr.
    return Console(stderr=json_mode, highlight=False, soft_wrap=False)


def _root(target_path: str | None, root: str | None) -> str:
    if root:
        return os.path.abspath(root)
    cwd = os.getcwd()
    if target_path is None:
        return cwd
    folder = os.path.dirname(target_path)
    inside = folder == cwd or folder.startswith(cwd.rstrip(os.sep) + os.sep)
    return cwd if inside else folder


def _parse(target: str, args: tuple[str, ...]) -> Any:
    try:
        return parse_target(target, args)
    except TargetError as exc:
        raise click.UsageError(str(exc)) from exc


def _emit(report: dict[str, Any], json_mode: bool, render: Any, **kw: Any) -> None:
    if json_mode:
        click.echo(json.dumps(report, indent=2, default=str))
    else:
        render(report, _console(False), **kw)


_common = [
    click.option(
        "--timeout",
        type=click.FloatRange(min=1),
        default=300.0,
        show_default=True,
        help="Seconds one run of the target may take before it is killed and reported as hung.",
    ),
    click.option(
        "--seed",
        type=int,
        default=0,
        show_default=True,
        help="Seed for random, NumPy, torch and CUDA.",
    ),
    click.option(
        "--deterministic/--no-deterministic",
        default=True,
        show_default=True,
        help="torch.use_deterministic_algorithms (warn-only), cuDNN deterministic, CUBLAS_WORKSPACE_CONFIG.",
    ),
    click.option("--json", "json_mode", is_flag=True, help="Print the report as JSON on stdout."),
]


def _apply(options: list[Any]) -> Any:
    def deco(f: Any) -> Any:
        for opt in reversed(options):
            f = opt(f)
        return f

    return deco


@click.command(
    "verify",
    context_settings={"help_option_names": ["-h", "--help"]},
    short_help="Prove a rewrite: same numbers, fewer syncs, time saved.",
)
@click.argument("target")
@click.argument("args", nargs=-1, type=click.UNPROCESSED)
@click.option(
    "--select",
    multiple=True,
    help="Rules whose fixes to apply (codes or prefixes, comma-separated).",
)
@click.option("--ignore", multiple=True, help="Rules whose fixes to leave out.")
@click.option(
    "--observed",
    "observed",
    type=click.Path(exists=True, dir_okay=False),
    default=None,
    help="Also apply the observed fixes this observation file (from `syncfix trace --record`) "
    "justifies.",
)
@click.option(
    "--unsafe-fixes", is_flag=True, help="Also apply unsafe fixes (then consider --rtol/--atol)."
)
@click.option(
    "--rtol",
    type=click.FloatRange(min=0),
    default=0.0,
    show_default=True,
    help="Relative tolerance for numbers (0 with --atol 0 = bitwise).",
)
@click.option(
    "--atol",
    type=click.FloatRange(min=0),
    default=0.0,
    show_default=True,
    help="Absolute tolerance.",
)
@click.option(
    "--warmup",
    type=click.IntRange(min=1),
    default=2,
    show_default=True,
    help="Untimed runs first; the first is compared, the second checks the original agrees with itself.",
)
@click.option(
    "--repeats",
    type=click.IntRange(min=0),
    default=5,
    show_default=True,
    help="Timed runs of each side, interleaved.",
)
@click.option(
    "--no-cross-check",
    is_flag=True,
    help="Do not arm set_sync_debug_mode('warn') beside the counter (e.g. if the program turns warnings into errors).",
)
@click.option(
    "--root",
    type=click.Path(exists=True, file_okay=False),
    help="Rewrite modules under this folder [default: the current folder if the script "
    "is inside it, else the script's folder].",
)
@click.option(
    "--fixer",
    metavar="MODULE:FUNC",
    hidden=True,
    help="Rewrite with FUNC(source, path) -> str instead of syncfix's rules.",
)
@_apply(_common)
@click.pass_context
def verify_command(
    ctx: click.Context,
    target: str,
    args: tuple[str, ...],
    select: tuple[str, ...],
    ignore: tuple[str, ...],
    observed: str | None,
    unsafe_fixes: bool,
    rtol: float,
    atol: float,
    warmup: int,
    repeats: int,
    no_cross_check: bool,
    root: str | None,
    fixer: str | None,
    timeout: float,
    seed: int,
    deterministic: bool,
    json_mode: bool,
) -> None:
    """Prove a rewrite on your program: same numbers, fewer syncs, and the time it saves.

    TARGET is a script (its arguments after --) or module:function / file.py:function (called
    with no arguments; its return value is compared). The original and the rewritten program
    (rewritten in memory, your files are never written) run in two processes with the same seed,
    then syncs are counted per line and timed. Values handed to syncfix.verify.record(name, value)
    are compared too. Sync counts need CUDA; without it the numbers are still compared.
    """
    tgt = _parse(target, args)
    _require_torch(ctx, "verify", "syncfix.verify/1", json_mode)

    from syncfix.progress import progress_bar

    from .equivalence import Tolerance
    from .report import render_verify, verify_report
    from .runner import Plan, run_pair

    if fixer:
        try:
            check_object_spec(fixer)
        except TargetError as exc:
            raise click.BadParameter(str(exc), param_hint="--fixer") from exc
    plan = Plan(
        target=tgt,
        root=_root(tgt.path, root),
        fixer={
            "select": _codes(select),
            "ignore": _codes(ignore),
            "unsafe_fixes": unsafe_fixes,
            "spec": fixer,
            "observations": os.path.abspath(observed) if observed else None,
        },
        seed=seed,
        deterministic=deterministic,
        warmup=warmup,
        repeats=repeats,
        timeout=timeout,
        cross_check=not no_cross_check,
    )
    try:
        with progress_bar("Verifying") as tick:
            orig, new = run_pair(plan, tick)
        report = verify_report(plan, orig, new, Tolerance(rtol, atol))
    except Exception as exc:  # the harness itself broke: say so, exit 2
        click.echo(f"syncfix verify: internal error: {type(exc).__name__}: {exc}", err=True)
        ctx.exit(EXIT_ERROR)
    _emit(report, json_mode, render_verify)
    ctx.exit(report["verdict"]["exit_code"])


@click.command(
    "trace",
    context_settings={"help_option_names": ["-h", "--help"]},
    short_help="List a program's sync sites, costliest first.",
)
@click.argument("target")
@click.argument("args", nargs=-1, type=click.UNPROCESSED)
@click.option(
    "--warmup",
    type=click.IntRange(min=0),
    default=0,
    show_default=True,
    help="Uncounted runs before the counted one (excludes one-off start-up syncs).",
)
@click.option(
    "--select", multiple=True, help="Rules to match against sync sites (default: all enabled)."
)
@click.option(
    "--limit", type=click.IntRange(min=1), default=None, help="Show at most this many sites."
)
@click.option(
    "--no-cross-check",
    is_flag=True,
    help="Do not arm set_sync_debug_mode('warn') beside the counter.",
)
@click.option(
    "--record",
    "record_to",
    is_flag=False,
    flag_value="",
    default=None,
    metavar="[FILE.json]",
    help="Instead of counting syncs, record the facts syncfix's fixes wait for (types, devices, "
    "dtypes, pinned buffers) on one run, for `apply --observed` (default file: "
    ".syncfix/observed.json under the project root). Works without CUDA.",
)
@_apply(_common)
@click.pass_context
def trace_command(
    ctx: click.Context,
    target: str,
    args: tuple[str, ...],
    warmup: int,
    select: tuple[str, ...],
    limit: int | None,
    no_cross_check: bool,
    record_to: str | None,
    timeout: float,
    seed: int,
    deterministic: bool,
    json_mode: bool,
) -> None:
    """List the program's sync sites: line, function, kind, count and host wait, costliest first.

    Runs TARGET once (after --warmup uncounted runs) with PyTorch's GPU-trace sync hooks on, and
    marks each line a syncfix rule matches, with whether a fix exists. Needs CUDA.
    """
    tgt = _parse(target, args)
    if record_to is not None:
        ctx.exit(_record(tgt, target, args, record_to, timeout, seed, deterministic, json_mode))
    _require_torch(ctx, "trace", "syncfix.trace/1", json_mode)

    from .counter import cuda_available
    from .report import render_trace, trace_report
    from .runner import Plan, run_single

    if not cuda_available():
        msg = "syncfix trace needs a CUDA device (torch.cuda.is_available() is false here)"
        if json_mode:
            click.echo(
                json.dumps(
                    {
                        "schema": "syncfix.trace/1",
                        "available": False,
                        "reason": msg,
                        "verdict": {"ok": False, "exit_code": EXIT_ERROR, "reasons": [msg]},
                    }
                )
            )
        else:
            click.echo(f"syncfix trace: {msg}", err=True)
        ctx.exit(EXIT_ERROR)
    plan = Plan(
        target=tgt,
        root=_root(tgt.path, None),
        fixer={},
        seed=seed,
        deterministic=deterministic,
        warmup=warmup,
        repeats=0,
        timeout=timeout,
        cross_check=not no_cross_check,
        measure_wait=True,
    )
    try:
        side = run_single(plan)
        report = trace_report(plan, side, select=_codes(select))
    except Exception as exc:
        click.echo(f"syncfix trace: internal error: {type(exc).__name__}: {exc}", err=True)
        ctx.exit(EXIT_ERROR)
    _emit(report, json_mode, render_trace, limit=limit)
    ctx.exit(report["verdict"]["exit_code"])


def _record(
    tgt: Any,
    target: str,
    args: tuple[str, ...],
    out: str,
    timeout: float,
    seed: int,
    deterministic: bool,
    json_mode: bool,
) -> int:
    """``trace --record``: run once with the needed spans watched; write the observation file."""
    import syncfix

    from ..observed import DEFAULT_FILE
    from .record import RecordError, cuda_facts, project_files, record

    root = _root(tgt.path, None)
    needs = syncfix.observable_needs(project_files(root))
    spans = sum(len(v) for v in needs.values())
    if not needs:
        click.echo("syncfix trace --record: no finding under this project waits for a fact a run "
                   "could show; nothing to record", err=True)
        return 0
    path = out or os.path.join(root, DEFAULT_FILE)
    try:
        obs = record(target, args, needs, root=root, out=path, timeout=timeout, seed=seed, deterministic=deterministic)
    except RecordError as exc:
        click.echo(f"syncfix trace --record: {exc}\nNothing was written.", err=True)
        return EXIT_ERROR
    ran = sum(len(f["spans"]) for f in obs.files.values())
    runs = sum(r.get("count", 0) for f in obs.files.values() for r in f["spans"].values())
    summary = {
        "schema": "syncfix.record/1",
        "file": path,
        "files": len(needs),
        "spans": spans,
        "spans_run": ran,
        "executions": runs,
        "cuda": obs.meta.get("cuda"),
        "needs_cuda": [] if obs.meta.get("cuda") else cuda_facts(needs),
    }
    if json_mode:
        click.echo(json.dumps(summary, indent=2))
        return 0
    click.echo(
        f"Recorded {ran} of {spans} watched expressions in {len(needs)} file"
        f"{'s' if len(needs) != 1 else ''} ({runs} evaluations) to {path}.",
        err=True,
    )
    if summary["needs_cuda"]:
        click.echo(
            "This run had no CUDA: facts it could not show ("
            + ", ".join(summary["needs_cuda"])
            + ") count as not held; record on a GPU machine for those fixes.",
            err=True,
        )
    click.echo("Next: `syncfix apply --observed --diff` to review the fixes they justify.", err=True)
    return 0


def main() -> (
    None
):  # pragma: no cover - for ``python -m syncfix.harness.commands`` before the CLI lands
    group = click.Group("syncfix", commands={"verify": verify_command, "trace": trace_command})
    group(prog_name="syncfix")


if __name__ == "__main__":  # pragma: no cover
    main()
