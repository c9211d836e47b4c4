"""The ``syncfix`` command line (click).

Exit codes (one contract for every command, as in ruff): 0 clean or everything fixed; 1 findings
remain, a ``--diff`` is non-empty, or a file could not be processed; 2 usage, configuration or
internal error, or a given path that does not exist.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Iterable, Mapping, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import replace
from functools import partial
from itertools import repeat
from pathlib import Path

import click

from . import cache as results_cache
from . import collector, config, formats
from .config import ConfigError, Settings, load_settings, load_table, validate_codes
from .discovery import discover
from .engine import InternalError, Job, cached_result, finish_write, process_file, process_source
from .fileio import FileError, decode, read_source, write_atomic
from .model import Applicability, FileResult, Finding, Problem
from .noqa import add_noqa
from .observed import DEFAULT_FILE as DEFAULT_OBSERVED
from .observed import ObservationError, Observations
from .progress import Tick, no_tick, progress_bar
from .projects import Item, Summarize, Summary, file_summary, summarize_here
from .projects import contexts as project_contexts
from .reporting import (
    FORMATS,
    ReportContext,
    diff_text,
    edit_hunks,
    make_console,
    rel,
    summary,
    unified_diff,
)
from .rules import all_rules
from .version import __version__

PARALLEL_THRESHOLD = 16  # below this many files a process pool costs more than it saves
INDEX_PARALLEL_THRESHOLD = 64  # the same for the project index's reading of a project's files


class Failure(click.ClickException):
    """An error that ends the run with exit code 2."""

    exit_code = 2

    def show(self, file=None) -> None:
        click.echo(f"syncfix: error: {self.format_message()}", err=True)


def _split(values: Iterable[str]) -> tuple[str, ...]:
    out: list[str] = []
    for v in values:
        out.extend(p.strip().upper() if p.strip().upper() == "ALL" else p.strip() for p in v.split(","))
    return tuple(p for p in out if p)


def _load(paths: Sequence[str], opts: dict) -> Settings:
    start = Path(paths[0]) if paths and paths[0] != "-" else Path.cwd()
    if not start.exists():
        start = Path.cwd()
    try:
        settings = load_settings(
            start,
            Path(opts["config"]) if opts.get("config") else None,
            isolated=opts.get("isolated", False),
        )
    except ConfigError as exc:
        raise Failure(str(exc)) from exc
    updates: dict = {}
    for key in ("select", "ignore", "extend_select", "fixable", "unfixable"):
        if opts.get(key):
            updates[key] = _split(opts[key])
    if opts.get("unsafe_fixes") is not None:
        updates["unsafe_fixes"] = opts["unsafe_fixes"]
    if opts.get("include_cold") is not None:
        updates["include_cold"] = opts["include_cold"]
    if opts.get("exclude"):
        updates["exclude"] = _split_paths(opts["exclude"])
    if opts.get("extend_exclude"):
        updates["extend_exclude"] = settings.extend_exclude + _split_paths(opts["extend_exclude"])
    if opts.get("respect_gitignore") is not None:
        updates["respect_gitignore"] = opts["respect_gitignore"]
    if opts.get("force_exclude"):
        updates["force_exclude"] = True
    if opts.get("jobs") is not None:
        updates["jobs"] = opts["jobs"] or None
    if opts.get("output_format"):
        updates["output_format"] = opts["output_format"]
    if opts.get("target_version"):
        updates["target_version"] = config.target_version(opts["target_version"])  # a click.Choice of them
    settings = replace(settings, **updates)
    if opts.get("observed") is not None:
        settings = replace(settings, observations=_observations(opts["observed"], paths))
    known = list(all_rules())
    try:
        for group in (settings.select, settings.extend_select, settings.ignore, *settings.per_file_ignores.values()):
            validate_codes(group, known)
    except ConfigError as exc:
        raise Failure(str(exc)) from exc
    if settings.output_format not in FORMATS:
        raise Failure(f"unknown output format '{settings.output_format}' (choose from {', '.join(sorted(FORMATS))})")
    return settings


def _observed_file(value: str, paths: Sequence[str]) -> str:
    """The observation file ``--observed`` names, or the nearest ``.syncfix/observed.json`` above
    the first path (or here)."""
    if value:
        return value
    start = Path(paths[0] if paths and paths[0] != "-" else ".").resolve()
    for folder in (start, *start.parents) if start.is_dir() else start.parents:
        candidate = folder / DEFAULT_OBSERVED
        if candidate.is_file():
            return str(candidate)
    raise Failure(
        f"--observed: no {DEFAULT_OBSERVED} here or above {paths[0] if paths else '.'}; record one "
        "with `syncfix trace TARGET --record`, or name the file (--observed FILE.json)"
    )


def _observations(value: str, paths: Sequence[str]) -> Observations:
    try:
        return Observations.load(_observed_file(value, paths))
    except ObservationError as exc:
        raise Failure(str(exc)) from exc


def _split_paths(values: Iterable[str]) -> tuple[str, ...]:
    return tuple(p.strip() for v in values for p in v.split(",") if p.strip())


def _shared_options(fn):
    options = [
        click.argument("paths", nargs=-1, type=click.Path()),
        click.option("--select", multiple=True, help="Rule codes or prefixes to enable (ALL for every rule)."),
        click.option("--extend-select", multiple=True, help="Codes to enable on top of the selection."),
        click.option("--ignore", multiple=True, help="Codes or prefixes to disable."),
        click.option("--fixable", multiple=True, hidden=True),
        click.option("--unfixable", multiple=True, help="Codes whose fixes are never applied."),
        click.option(
            "--unsafe-fixes/--no-unsafe-fixes",
            default=None,
            help="Also consider fixes that may change behaviour.",
        ),
        click.option(
            "--include-cold/--no-include-cold",
            default=None,
            help="Also report one-time code (set-up, __main__ blocks outside loops, tests), not only code that "
            "runs every step.",
        ),
        click.option(
            "--observed",
            is_flag=False,
            flag_value="",
            default=None,
            metavar="[FILE.json]",
            help="Also apply fixes whose facts a recorded run showed (`syncfix trace TARGET "
            "--record`; default file: the nearest .syncfix/observed.json).",
        ),
        click.option(
            "--output-format",
            "-o",
            "output_format",
            envvar="SYNCFIX_OUTPUT_FORMAT",
            help="full (default), concise, grouped, json, json-lines, github, sarif, rdjson, rdjsonl, "
            "gitlab, junit (see docs/ci.md).",
        ),
        click.option("--output-file", type=click.Path(dir_okay=False), help="Write the report here."),
        click.option("-j", "--jobs", type=click.IntRange(min=0), default=None, help="Worker processes (0 = cores)."),
        click.option("--exit-zero", is_flag=True, help="Exit 0 even when findings remain (2 still wins)."),
        click.option("--force-exclude", is_flag=True, help="Apply excludes to files named explicitly too."),
        click.option("--exclude", multiple=True, help="Patterns to exclude (replaces the defaults)."),
        click.option("--extend-exclude", multiple=True, help="Patterns to exclude on top of the defaults."),
        click.option("--respect-gitignore/--no-respect-gitignore", default=None),
        click.option("--config", type=click.Path(exists=True, dir_okay=False), help="Use this config file."),
        click.option("--isolated", is_flag=True, help="Ignore every config file."),
        click.option("--target-version", type=click.Choice(config.PY_VERSIONS), help="Python grammar to parse with."),
        click.option("--stdin-filename", help="The name of the file read from stdin (for `-`)."),
        click.option(
            "--color",
            type=click.Choice(["auto", "always", "never"]),
            default="auto",
            show_default=True,
        ),
        click.option("-q", "--quiet", is_flag=True, help="Print findings only, no summary."),
        click.option("--show-files", is_flag=True, help="List the files that would be checked and exit."),
        click.option("--show-settings", is_flag=True, help="Print the resolved settings and exit."),
        click.option("--no-cache", is_flag=True, help="Neither read nor write the results cache."),
        click.option(
            "--cache-dir",
            type=click.Path(file_okay=False),
            envvar="SYNCFIX_CACHE_DIR",
            help="Where to cache results (default: .syncfix_cache next to the config, or here).",
        ),
        click.option(
            "--statistics",
            is_flag=True,
            help="Print a count per rule instead of the findings (json with --output-format json).",
        ),
    ]
    for option in reversed(options):
        fn = option(fn)
    return fn


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="syncfix")
def cli() -> None:
    """Find and rewrite needless CPU-GPU synchronizations in PyTorch code."""


def _apply_options_hidden(fn):
    return _apply_options(fn, hidden=True)


def _apply_options(fn, hidden: bool = False):
    """The options that make a run write fixes (``apply``; hidden on ``check``, for ``--fix``)."""
    options = [
        click.option("--diff", is_flag=True, hidden=hidden, help="Write nothing; print a unified diff of the fixes."),
        click.option("--fix-only", is_flag=True, hidden=hidden, help="Apply fixes without reporting what is left."),
        click.option(
            "--exit-non-zero-on-fix",
            is_flag=True,
            hidden=hidden,
            help="Exit 1 when any file was changed, even if no finding is left.",
        ),
    ]
    for option in reversed(options):
        fn = option(fn)
    return fn


@cli.command(short_help="Report findings; change nothing.")
@_shared_options
@click.option(
    "--add-noqa",
    is_flag=True,
    help="Add '# noqa: SFXnnn' comments that suppress every finding (merging with existing ones).",
)
# ruff's habit: `check --fix` (and --diff, --fix-only) is `apply`.
@click.option("--fix", is_flag=True, hidden=True, help="Same as `syncfix apply`.")
@_apply_options_hidden
def check(**opts) -> None:
    """Report findings; change nothing (except comments, with --add-noqa)."""
    fixing = opts.pop("fix") or opts["diff"] or opts["fix_only"]
    if fixing and opts.get("add_noqa"):
        raise click.UsageError("--add-noqa cannot be combined with --fix")
    opts.setdefault("interactive", False)
    sys.exit(_run(opts, mode="apply" if fixing else "check"))


class _ApplyCommand(click.Command):
    """``apply PATHS --verify TARGET -- ARGS``: what follows ``--`` is TARGET's arguments."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        verify = [i for i, a in enumerate(args) if a == "--verify" or a.startswith("--verify=")]
        if verify and "--" in args[verify[0]:]:
            cut = args.index("--", verify[0])
            ctx.meta["verify_args"] = args[cut + 1 :]
            args = args[:cut]
        return super().parse_args(ctx, args)


@cli.command(cls=_ApplyCommand, short_help="Write safe fixes in place; report what is left.")
@_shared_options
@_apply_options
@click.option("-i", "--interactive", is_flag=True, help="Review each fix before it is written.")
@click.option(
    "--verify",
    "verify_target",
    metavar="TARGET",
    help="Run TARGET (a script, its arguments after --, or module:function) with the fixes, in "
    "memory, beside the original; write only those that keep its numbers equal and its syncs "
    "down (needs torch; counts syncs on CUDA).",
)
@click.pass_context
def apply(ctx: click.Context, **opts) -> None:
    """Write safe fixes in place (and unsafe ones with --unsafe-fixes); report what is left."""
    if opts["diff"] and opts["interactive"]:
        raise click.UsageError("--diff and --interactive cannot be combined")
    target = opts.pop("verify_target")
    if target:
        if opts["interactive"]:
            raise click.UsageError("--verify and --interactive cannot be combined")
        sys.exit(_apply_verified(opts, target, ctx.meta.get("verify_args", [])))
    sys.exit(_run(opts, mode="apply"))


def _apply_verified(opts: dict, target: str, args: list[str]) -> int:
    """``apply --verify``: see syncfix/harness/apply_verify.py."""
    from .harness.commands import TORCH_MISSING, torch_missing

    if torch_missing():
        click.echo("syncfix apply --verify: " + TORCH_MISSING.format(python=sys.executable), err=True)
        return 2
    from .harness import apply_verify
    from .harness.target import TargetError, parse_target

    paths = list(opts["paths"]) or ["."]
    settings = _load(paths, opts)
    try:
        tgt = parse_target(target, tuple(args))
    except TargetError as exc:
        raise click.UsageError(str(exc)) from exc
    cwd = os.getcwd()
    folder = os.path.dirname(tgt.path) if tgt.path else cwd
    root = cwd if folder == cwd or folder.startswith(cwd.rstrip(os.sep) + os.sep) else folder
    quiet = opts["quiet"] or settings.output_format == "json"

    def tick(what: str) -> None:
        if not quiet:
            click.echo(f"syncfix apply --verify: {what}", err=True)

    options = {
        "select": list(settings.select + settings.extend_select),
        "ignore": list(settings.ignore) or None,
        "unsafe_fixes": settings.unsafe_fixes,
        "include_cold": settings.include_cold,
    }
    try:
        outcome = apply_verify.run(paths, target, args, options, root=root, write=not opts["diff"], tick=tick)
    except apply_verify.OriginalFailed as exc:
        click.echo(f"syncfix apply --verify: the program fails as it is, so nothing can be verified "
                   f"and nothing was written: {exc}", err=True)
        return 2
    if settings.output_format == "json":
        click.echo(json.dumps(apply_verify.to_json(outcome, root), indent=2))
    else:
        if opts["diff"]:
            click.echo(apply_verify.diff_text(outcome, root), nl=False)
        for line in apply_verify.report_lines(outcome, root) + [f"  note: {n}" for n in outcome.notes]:
            click.echo(line, err=True)
        click.echo(apply_verify.summary_line(outcome) + ("" if not opts["diff"] else " (nothing written: --diff)"), err=True)
    return 1 if outcome.dropped else 0


@cli.command(short_help="Explain a rule: what it finds, why it costs, how to fix it.")
@click.argument("code", required=False)
@click.option("--all", "show_all", is_flag=True, help="Every rule.")
@click.option("--output-format", type=click.Choice(["text", "json"]), default="text")
def rule(code: str | None, show_all: bool, output_format: str) -> None:
    """Explain a rule: what it finds, why it costs, before/after, and its fix safety."""
    rules = all_rules()
    if show_all:
        chosen = list(rules.values())
    elif code:
        matches = [r for c, r in rules.items() if c == code.upper() or r.NAME == code]
        if not matches:
            raise Failure(f"unknown rule '{code}' (see `syncfix rule --all`)")
        chosen = matches
    else:
        raise click.UsageError("give a rule code, or --all")
    if output_format == "json":
        data = [
            {
                "code": r.CODE,
                "name": r.NAME,
                "summary": r.MESSAGE,
                "fix": r.FIX,
                "observable": list(r.OBSERVABLE),
                "explanation": r.doc(),
            }
            for r in chosen
        ]
        click.echo(json.dumps(data if show_all else data[0], indent=2))
    else:
        click.echo("\n".join(r.doc() for r in chosen), nl=False)


@cli.command(short_help="Remove the results cache.")
@click.option("--cache-dir", type=click.Path(file_okay=False), envvar="SYNCFIX_CACHE_DIR")
@click.option("--config", type=click.Path(exists=True, dir_okay=False))
@click.option("--isolated", is_flag=True)
def clean(**opts) -> None:
    """Remove the results cache."""
    folder = _cache_dir(_load([], opts), opts)
    if results_cache.clean(folder):
        click.echo(f"Removed cache at {folder}", err=True)
    elif folder.exists():
        raise Failure(f"{folder} has no {results_cache.TAG_NAME}; not removing a folder syncfix did not make")


def _cache_dir(settings: Settings, opts: dict) -> Path:
    """--cache-dir, else ``cache-dir`` from the config file, else .syncfix_cache beside the config."""
    if opts.get("cache_dir"):
        return Path(opts["cache_dir"])
    base = settings.root if settings.config_path is not None and settings.root else Path.cwd()
    if settings.config_path is not None:
        try:
            configured = load_table(settings.config_path).get("cache-dir")
        except ConfigError as exc:
            raise Failure(str(exc)) from exc
        if configured:
            return base / str(configured)
    return base / results_cache.DEFAULT_DIR


def _register_optional_commands() -> None:
    try:
        from .harness.commands import trace_command, verify_command
    except ImportError:  # the harness is optional: the static tool works without it
        return
    cli.add_command(verify_command, "verify")
    cli.add_command(trace_command, "trace")


_register_optional_commands()


# ---- running -----------------------------------------------------------------------------------


def _run(opts: dict, mode: str) -> int:
    observed = opts.get("observed")
    if observed and not observed.endswith(".json"):
        # `--observed` takes an optional value: a path that is no observation file is a PATH
        opts = {**opts, "observed": "", "paths": (observed, *opts["paths"])}
    paths = list(opts["paths"]) or ["."]
    settings = _load(paths, opts)
    root = os.getcwd()  # paths are shown relative to where syncfix runs (as ruff and git do)
    if opts["show_settings"]:
        for key, value in sorted(vars(settings).items()):
            click.echo(f"{key} = {value!r}")
        return 0
    if paths == ["-"]:
        if opts.get("add_noqa"):
            raise click.UsageError("--add-noqa writes files; it cannot work on stdin")
        return _run_stdin(opts, settings, mode, root)
    missing = [p for p in paths if p != "-" and not os.path.lexists(p)]
    found = discover(paths, settings, force_exclude=opts["force_exclude"] or None)
    if opts["show_files"]:
        for f in found.files:
            click.echo(rel(f, root))
        return 0
    fix = mode == "apply"
    diff = bool(opts.get("diff"))
    interactive = bool(opts.get("interactive"))
    write = fix and not diff
    fmt = settings.output_format
    want_source = diff or interactive or fmt == "full"
    # observed fixes depend on the observation file too: never cached
    use_cache = not opts.get("no_cache") and not interactive and settings.observations is None
    cache = results_cache.Cache(_cache_dir(settings, opts), settings) if use_cache else None
    places = project_contexts(  # the project index: one pass over each project's files
        found.files, settings.hot_functions, _index_summarizer(settings), settings.closed_project,
        given=[p for p in paths if p != "-"],
    )
    job = partial(Job, fix=fix, write=write, want_source=want_source, cache=cache, defer_write=write)
    jobs = [job(f, context=places.get(f)) for f in found.files]
    if not found.files and not found.errors:
        click.echo("syncfix: warning: No Python files found under the given path(s)", err=True)
    if interactive:
        results = _interactive(jobs, settings, opts["color"])
    else:
        show = diff or (fmt in HUMAN_FORMATS and not opts.get("statistics"))
        with progress_bar("Checking" if mode == "check" else "Fixing", enabled=show) as tick:
            results = _execute(jobs, settings, tick)

    for path, reason in found.notes:
        if reason != "excluded":
            click.echo(f"syncfix: warning: {rel(path, root)}: {reason}", err=True)
    errors = [Problem(p, r) for p, r in found.errors] + [
        Problem(r.path, r.error, *(r.error_at or (None, None))) for r in results if r.error
    ]
    internal = any(r.error and r.error.startswith("internal error") for r in results)
    for e in errors:
        click.echo(f"syncfix: error: {rel(e.path, root)}: {e.message}", err=True)

    findings = sorted((f for r in results for f in r.findings), key=Finding.sort_key)
    fixed = sum(len(r.fixed) for r in results if r.error is None)
    if opts.get("add_noqa"):
        return _add_noqa(findings) or (1 if errors else 0)
    out = sys.stdout
    if diff:
        console = make_console(out, opts["color"])
        diffs = [r for r in results if r.changed and r.source is not None]
        for r in diffs:
            assert r.source is not None and r.new_source is not None  # as chosen above
            text = unified_diff(r.path, r.source, r.new_source, root)
            observed = sorted({f.line for f in r.fixed if f.fix and f.fix.applicability is Applicability.OBSERVED})
            if observed:
                # before the header: patch and git apply skip text there
                text = (
                    f"# syncfix: observed fixes (facts a recorded run showed) at line"
                    f"{'s' if len(observed) > 1 else ''} {', '.join(map(str, observed))}\n" + text
                )
            if console.is_terminal or opts["color"] == "always":
                console.print(diff_text(text), end="")
            else:
                out.write(text)
        n = sum(len(r.fixed) for r in diffs)
        if not opts["quiet"]:
            click.echo(
                f"Would fix {n} finding{'s' if n != 1 else ''} in {len(diffs)} file{'s' if len(diffs) != 1 else ''}."
                if n
                else "No fixes available.",
                err=True,
            )
        code = 1 if diffs else 0
    else:
        shown = [] if opts.get("fix_only") else findings
        sources = {r.path: r.new_source if r.changed and r.new_source else r.source for r in results if r.source is not None}
        if fmt in NEEDS_SOURCE:
            _add_sources(sources, shown)
        ctx = ReportContext(
            root=root,
            sources=sources,
            unsafe_fixes=settings.unsafe_fixes,
            fixed=fixed,
            mode=mode,
            repo_root=repo_root(root, settings),
            color=_colour(opts),
            step_summary=bool(os.environ.get("GITHUB_STEP_SUMMARY")),
            problems=errors,
            fixed_text=_fixed_text(settings),
        )
        _report(shown, ctx, fmt, opts)
        code = 1 if shown else 0
    if opts.get("exit_non_zero_on_fix") and any(r.changed for r in results if r.error is None):
        code = max(code, 1)
    if errors and code == 0:
        code = 1
    if opts["exit_zero"] and code == 1:
        code = 0
    if internal or missing:  # as ruff: a path that does not exist is a usage error
        code = 2
    return code


def _colour(opts: dict) -> bool:
    """Colour the findings: --color always, or auto on a terminal (not into --output-file)."""
    if opts["color"] == "always":
        return True
    if opts["color"] == "never" or opts.get("output_file"):
        return False
    return make_console(sys.stdout, "auto").color_system is not None


def _fixed_text(settings: Settings):
    """(path, unsafe) -> the file's text after ``apply`` (for rdjson's merged suggestions)."""

    def fixed(path: str, unsafe: bool) -> str | None:
        try:
            snap = read_source(path)
            new, _, _ = process_source(snap.data, path, replace(settings, unsafe_fixes=unsafe), fix=True)
        except (FileError, InternalError, RecursionError):
            return None
        return decode(new, snap.encoding)

    return fixed


def _execute(jobs: list[Job], settings: Settings, tick: Tick = no_tick) -> list[FileResult]:
    """Process every job (in a pool when there are many; ``tick(done, total)`` after each), then
    write what was fixed: every file analysed from the project as it was read."""
    with collector.long_lived_frozen():  # the index and everything loaded live for the whole run
        results = _execute_all(jobs, settings, tick)
    return [finish_write(r, job, settings) for r, job in zip(results, jobs, strict=True)]


def _execute_all(jobs: list[Job], settings: Settings, tick: Tick) -> list[FileResult]:
    total = len(jobs)
    workers = settings.jobs or os.cpu_count() or 1
    if total < PARALLEL_THRESHOLD or workers == 1:
        out = []
        for job in jobs:
            out.append(_process(job, settings))
            tick(len(out), total)
        return out
    # Cache hits are answered here: an unchanged tree starts no pool and pickles nothing.
    results: list[FileResult | None] = []
    for job in jobs:
        results.append(cached_result(job, settings))
    misses = [i for i, r in enumerate(results) if r is None]
    done_so_far = total - len(misses)
    if done_so_far:
        tick(done_so_far, total)
    todo = [replace(jobs[i], looked_up=True) for i in misses]  # a miss is not looked up again
    done: list[FileResult] = []
    if len(todo) < PARALLEL_THRESHOLD:
        for job in todo:
            done.append(_process(job, settings))
            tick(done_so_far + len(done), total)
    else:
        chunk = max(1, min(32, len(todo) // (workers * 8)))
        with ProcessPoolExecutor(max_workers=workers, initializer=_start_worker) as pool:
            for result in pool.map(_process, todo, [settings] * len(todo), chunksize=chunk):
                done.append(result)
                tick(done_so_far + len(done), total)
    for i, result in zip(misses, done, strict=True):
        results[i] = result
    return results  # type: ignore[return-value]  # every slot is filled


def _index_summarizer(settings: Settings) -> Summarize | None:
    """Read a big project's files for the index in worker processes (None: here)."""
    workers = settings.jobs or os.cpu_count() or 1
    if workers == 1:
        return None

    def summarize(items: Sequence[Item], hot: tuple[str, ...], resolve: Mapping[str, str]) -> list[Summary]:
        if len(items) < INDEX_PARALLEL_THRESHOLD:
            return summarize_here(items, hot, resolve)
        chunk = max(1, len(items) // (workers * 4))
        with ProcessPoolExecutor(max_workers=workers, initializer=_start_worker) as pool:
            return list(pool.map(file_summary, items, repeat(hot), repeat(resolve), chunksize=chunk))

    return summarize


def _process(job: Job, settings: Settings) -> FileResult:
    with collector.one_file(job.path):
        return process_file(job, settings)


def _start_worker() -> None:
    collector.freeze_for_worker()
    _die_with_parent()


def _die_with_parent() -> None:
    """Workers end when the main process does, even if it is SIGKILLed (Linux; elsewhere a no-op)."""
    if not sys.platform.startswith("linux"):
        return
    import ctypes
    import signal

    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass


def _run_stdin(opts: dict, settings: Settings, mode: str, root: str) -> int:
    name = opts.get("stdin_filename") or "-"
    data = sys.stdin.buffer.read()
    try:
        new, findings, applied = process_source(data, name, settings, fix=mode == "apply")
    except (FileError, InternalError) as exc:
        click.echo(f"syncfix: error: {name}: {exc}", err=True)
        if mode == "apply" and not opts.get("diff"):  # an editor replaces its buffer with this
            sys.stdout.buffer.write(data)
            sys.stdout.flush()
        elif mode == "check" and isinstance(exc, FileError):
            problem = Problem(name, str(exc), *(exc.at or (None, None)))
            _report([], ReportContext(root=root, sources={}, problems=[problem]), settings.output_format, opts)
        return 2 if isinstance(exc, InternalError) else 1
    if mode == "apply" and opts.get("diff"):
        text = unified_diff(name, decode(data, "utf-8"), decode(new, "utf-8"), root)
        sys.stdout.write(text)
        return 1 if text else 0
    if mode == "apply":
        sys.stdout.buffer.write(new)
        sys.stdout.flush()
        for f in findings:
            click.echo(f"{name}:{f.line}:{f.column}: {f.code} {f.message}", err=True)
        return 1 if findings and not opts["exit_zero"] else 0
    ctx = ReportContext(
        root=root,
        sources={name: decode(data, "utf-8")},
        unsafe_fixes=settings.unsafe_fixes,
        repo_root=repo_root(root, settings),
    )
    _report(findings, ctx, settings.output_format, opts)
    return 1 if findings and not opts["exit_zero"] else 0


# Formats that quote source lines or measure columns in bytes.
NEEDS_SOURCE = frozenset({"full", "rdjson", "rdjsonl", "gitlab"})
HUMAN_FORMATS = frozenset({"full", "concise", "grouped"})


def _report(findings: list[Finding], ctx: ReportContext, fmt: str, opts: dict) -> None:
    """Write the report (or the statistics), the summary, and GitHub's job summary."""
    report: str | Iterable[str]
    if opts.get("statistics"):
        report = formats.statistics(findings, ctx, as_json=fmt == "json")
    else:
        report = FORMATS[fmt](findings, ctx)  # the per-finding formats stream their pieces
    pieces = [report] if isinstance(report, str) else report
    if opts.get("output_file"):
        with open(opts["output_file"], "w", encoding="utf-8") as fh:
            fh.writelines(pieces)
    else:
        sys.stdout.writelines(pieces)
    if not opts.get("quiet") and fmt in HUMAN_FORMATS and not opts.get("statistics"):
        click.echo(summary(findings, ctx), nl=False, err=bool(opts.get("output_file")))
    step_summary = os.environ.get("GITHUB_STEP_SUMMARY")
    if fmt == "github" and step_summary:
        try:
            with open(step_summary, "a", encoding="utf-8") as fh:
                fh.write(formats.github_summary(findings, ctx))
        except OSError as exc:  # a summary is a nicety: say so, never fail the check over it
            click.echo(f"syncfix: warning: cannot write $GITHUB_STEP_SUMMARY: {exc}", err=True)


def _add_noqa(findings: Sequence[Finding]) -> int:
    """Write noqa comments for ``findings`` (SFX9xx are about comments: never suppressed so)."""
    by_path: dict[str, list[Finding]] = {}
    for f in findings:
        if not f.code.startswith("SFX9"):
            by_path.setdefault(f.path, []).append(f)
    added = 0
    failed = False
    for path, group in by_path.items():
        try:
            snap = read_source(path)
            text = decode(snap.data, snap.encoding)
            new, n = add_noqa(text, group)
            if n:
                write_atomic(path, new.encode(snap.encoding), snap)  # utf-8-sig keeps a BOM
                added += n
        except (FileError, UnicodeEncodeError) as exc:
            click.echo(f"syncfix: error: {rel(path, os.getcwd())}: {exc}", err=True)
            failed = True
    click.echo(f"Added {added} noqa directive{'s' if added != 1 else ''}.", err=True)
    return 1 if failed else 0


def _add_sources(sources: dict[str, str], findings: Sequence[Finding]) -> None:
    """Read the files that have findings (the engine keeps texts only for changed files)."""
    for path in {f.path for f in findings} - sources.keys():
        try:
            snap = read_source(path)
        except FileError:
            continue
        sources[path] = decode(snap.data, snap.encoding)


def repo_root(cwd: str, settings: Settings) -> str:
    """The git work tree holding ``cwd``, else the config file's folder, else ``cwd``."""
    here = Path(cwd).resolve()
    for folder in (here, *here.parents):
        if (folder / ".git").exists():  # a folder, or a file in worktrees and submodules
            return str(folder)
    if settings.config_path is not None and settings.root is not None:
        return str(settings.root)
    return cwd


def _interactive(jobs: list[Job], settings: Settings, color: str) -> list[FileResult]:
    """Ask about each fix: accept, skip, accept the rest of this rule, or quit."""
    console = make_console(sys.stdout, color)
    accept_all: set[str] = set()
    state = {"quit": False}

    def ask(finding: Finding) -> bool:
        if state["quit"]:
            return False
        if finding.code in accept_all:
            return True
        edit = finding.fix.edit if finding.fix else None
        safety = finding.fix.applicability.value if finding.fix else "?"
        click.echo(f"\n{rel(finding.path, os.getcwd())}:{finding.line}:{finding.column}: {finding.code} [{safety}] {finding.message}")
        if edit is not None:
            console.print(diff_text(edit_hunks(edit)), end="")
        choice = click.prompt(
            "Apply this fix? [y]es, [n]o, [a]ll of this rule, [q]uit",
            type=click.Choice(["y", "n", "a", "q"]),
            default="n",
            show_choices=False,
        )
        if choice == "a":
            accept_all.add(finding.code)
            return True
        if choice == "q":
            state["quit"] = True
            return False
        return choice == "y"

    return [finish_write(process_file(job, settings, accept=ask), job, settings) for job in jobs]


def main() -> None:
    try:
        cli.main(prog_name="syncfix")
    except KeyboardInterrupt:  # pragma: no cover
        click.echo("syncfix: interrupted", err=True)
        sys.exit(130)
    except (Failure, click.ClickException):
        raise
    except Exception as exc:  # pragma: no cover - a bug; say so and exit 2
        click.echo(f"syncfix: internal error: {type(exc).__name__}: {exc}", err=True)
        sys.exit(2)


if __name__ == "__main__":  # pragma: no cover
    main()
