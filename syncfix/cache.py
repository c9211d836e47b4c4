"""The results cache: a re-run on an unchanged tree reads findings instead of parsing.

Layout (as ruff's): ``.syncfix_cache/`` holds ``CACHEDIR.TAG``, a ``.gitignore`` with ``*``, and
``<syncfix version>/<2 hex>/<key>.json``, one small JSON file per checked file. The key is the
sha256 of:

- the file's bytes and its path (as given on the command line);
- syncfix's version, libcst's version, and the contents of every module of ``syncfix`` and
  ``syncfix.codemods`` (so an editable install whose rules change never reads stale results; contents,
  not mtimes, so a fresh ``pip install`` of the same version in CI still hits);
- every setting that can change findings (all of them except discovery and output ones), and the
  rule codes enabled for this path.

Only check results are stored, for files that were not rewritten; an ``apply`` run uses an entry
only when none of its findings has a fix that would be applied. Entries are written atomically;
any cache problem just means a miss.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import tempfile
from dataclasses import asdict, fields
from pathlib import Path

from .config import Settings
from .model import Applicability, Edit, Finding, FixInfo
from .observed import Need
from .rules import all_rules
from .version import __version__

DEFAULT_DIR = ".syncfix_cache"
TAG_NAME = "CACHEDIR.TAG"
CACHEDIR_TAG = (
    "Signature: 8a477f597d28d172789f06886806bc55\n"
    "# This file is a cache directory tag created by syncfix.\n"
    "# For information about cache directory tags see https://bford.info/cachedir/\n"
)
# Settings that decide which files are read and how results are shown, never what is found.
_NOT_RESULTS = frozenset(
    {"output_format", "jobs", "exclude", "extend_exclude", "respect_gitignore", "force_exclude",
     "config_path", "root", "unsafe_fixes", "observations"}
)


def _code_fingerprint() -> str:
    import libcst

    from . import codemods

    h = hashlib.sha256(f"{__version__}\n{getattr(libcst, '__version__', '?')}\n".encode())
    # syncfix/ holds the rules when installed; a source checkout keeps them in codemods/ beside it
    names: dict[Path, str] = {}
    for package in (Path(__file__).parent, *map(Path, codemods.__path__)):
        for module in package.rglob("*.py"):  # ~50 small files: a millisecond or two
            names.setdefault(module.resolve(), module.relative_to(package.parent).as_posix())
    for module, name in sorted(names.items(), key=lambda item: item[1]):
        h.update(name.encode() + b"\0")
        h.update(module.read_bytes())
    return h.hexdigest()


def settings_fingerprint(settings: Settings) -> str:
    data = {
        f.name: getattr(settings, f.name) for f in fields(Settings) if f.name not in _NOT_RESULTS
    }
    text = json.dumps(data, sort_keys=True, default=lambda v: sorted(v.items()) if hasattr(v, "items") else str(v))
    return hashlib.sha256(f"{_code_fingerprint()}\n{text}".encode()).hexdigest()


class Cache:
    """A handle that pickles cheaply to worker processes (two strings)."""

    def __init__(self, directory: Path | str, settings: Settings) -> None:
        self.directory = str(directory)
        self.base = settings_fingerprint(settings)

    def key(self, data: bytes, path: str, settings: Settings, context: str = "") -> str:
        """``context``: what the findings took from other files (the project index's answer
        for this file), so that they are looked up afresh when it changes."""
        codes = ",".join(settings.enabled(all_rules(), path))  # per-file-ignores vary by path
        h = hashlib.sha256()
        parts = (self.base.encode(), codes.encode(), path.encode("utf-8", "surrogateescape"), data, context.encode())
        for part in parts:
            h.update(len(part).to_bytes(8, "little"))  # length-prefixed: no two inputs collide
            h.update(part)
        return h.hexdigest()

    def _entry(self, key: str) -> Path:
        return Path(self.directory) / __version__ / key[:2] / f"{key}.json"

    def get(self, data: bytes, path: str, settings: Settings, context: str = "") -> list[Finding] | None:
        try:
            raw = json.loads(self._entry(self.key(data, path, settings, context)).read_text(encoding="utf-8"))
            return [_finding(f, path) for f in raw["findings"]]
        except (OSError, ValueError, KeyError, TypeError):
            return None

    def put(self, data: bytes, path: str, settings: Settings, findings: list[Finding], context: str = "") -> None:
        entry = self._entry(self.key(data, path, settings, context))
        payload = json.dumps({"findings": [_jsonable(f) for f in findings]})
        tmp = None
        try:
            ensure_dir(Path(self.directory))
            entry.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(prefix=".tmp-", dir=entry.parent)
            with os.fdopen(fd, "w", encoding="utf-8") as fh:
                fh.write(payload)
            os.replace(tmp, entry)  # atomic: parallel workers never see half an entry
        except OSError:  # a read-only tree, a full disk: no cache, same results
            if tmp is not None:
                with contextlib.suppress(OSError):
                    os.unlink(tmp)


def ensure_dir(directory: Path) -> None:
    if (directory / TAG_NAME).is_file():
        return
    directory.mkdir(parents=True, exist_ok=True)
    (directory / TAG_NAME).write_text(CACHEDIR_TAG, encoding="utf-8")
    (directory / ".gitignore").write_text("# Created by syncfix automatically.\n*\n", encoding="utf-8")


def clean(directory: Path) -> bool:
    """Remove a cache folder; only one that syncfix made (it has the tag). True if removed."""
    if not (directory / TAG_NAME).is_file():
        return False
    shutil.rmtree(directory)
    return True


def would_fix(finding: Finding, settings: Settings) -> bool:
    """Whether ``apply`` would rewrite this finding (then a cached result cannot stand in)."""
    fix = finding.fix
    return fix is not None and (fix.applicability is not Applicability.UNSAFE or settings.unsafe_fixes)


def _jsonable(f: Finding) -> dict:
    d = asdict(f)
    del d["path"]  # restored from the lookup
    if f.fix is not None:
        d["fix"]["applicability"] = f.fix.applicability.value
    return d


def _finding(d: dict, path: str) -> Finding:
    fix = d.pop("fix")
    info = None
    if fix is not None:
        edit = Edit(**fix["edit"]) if fix["edit"] is not None else None
        needs = tuple(Need(**n) for n in fix.get("needs", ()))
        info = FixInfo(Applicability(fix["applicability"]), fix["description"], edit, needs)
    d["needs"] = tuple(Need(**n) for n in d.get("needs", ()))
    return Finding(path=path, fix=info, **d)
