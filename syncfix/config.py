"""Settings: ``[tool.syncfix]`` in the nearest ``pyproject.toml`` (or a ``syncfix.toml``), then CLI flags.

As in ruff: the closest config file wins (no merging), ``select`` replaces the rule set and
``extend-select`` adds to it, codes match by prefix and ``ALL`` selects everything.
"""

from __future__ import annotations

import fnmatch
import sys
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from .observed import Observations

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

DEFAULT_SELECT = ("SFX",)
DEFAULT_EXCLUDE = (
    ".bzr", ".direnv", ".eggs", ".git", ".git-rewrite", ".hg", ".ipynb_checkpoints", ".mypy_cache",
    ".nox", ".pants.d", ".pyenv", ".pytest_cache", ".pytype", ".ruff_cache", ".svn", ".tox",
    ".venv", ".vscode", "__pypackages__", "_build", "buck-out", "build", "dist", "node_modules",
    "site-packages", "venv", ".syncfix_cache",
)
# Functions whose bodies count as hot paths (``hot-functions``). Settings sit below the analysis
# (import-linter's layers in pyproject.toml), so the default lives here and the analysis imports it.
# Step hooks of the common loops: PyTorch modules and optimizers, Lightning (``*_step``),
# Hugging Face's Trainer (``compute_loss``, ``prediction_step``), meters and metrics (``update``),
# and a custom autograd function's (or module's) ``backward``.
DEFAULT_HOT_FUNCTIONS = (
    "forward", "training_step", "validation_step", "test_step", "predict_step", "train_step", "step",
    "update", "compute_loss", "prediction_step", "backward",
)
TARGET_VERSIONS = ("3.9", "3.10", "3.11", "3.12", "3.13", "3.14", "3.15")
PY_VERSIONS = tuple("py" + v.replace(".", "") for v in TARGET_VERSIONS)  # as the CLI takes them


def target_version(value: str) -> str | None:
    """``"py310"`` or ``"3.10"`` as the grammar version LibCST takes (``"3.10"``), or None when
    it names no version syncfix parses."""
    version = value.removeprefix("py")
    if "." not in version and len(version) >= 2:
        version = f"{version[0]}.{version[1:]}"
    return version if version in TARGET_VERSIONS else None


class ConfigError(Exception):
    """A bad setting: reported with exit code 2."""


@dataclass(frozen=True)
class Settings:
    select: tuple[str, ...] = DEFAULT_SELECT
    extend_select: tuple[str, ...] = ()
    ignore: tuple[str, ...] = ()
    fixable: tuple[str, ...] = ("ALL",)
    unfixable: tuple[str, ...] = ()
    unsafe_fixes: bool = False
    include_cold: bool = False  # report one-time code too (see syncfix/repetition.py)
    extend_safe_fixes: tuple[str, ...] = ()
    extend_unsafe_fixes: tuple[str, ...] = ()
    per_file_ignores: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    exclude: tuple[str, ...] = DEFAULT_EXCLUDE
    extend_exclude: tuple[str, ...] = ()
    respect_gitignore: bool = True
    force_exclude: bool = False
    output_format: str = "full"
    jobs: int | None = None
    target_version: str | None = None
    hot_functions: tuple[str, ...] = DEFAULT_HOT_FUNCTIONS
    # the device types the project runs on (``[tool.syncfix.torch] devices``); None: any
    devices: tuple[str, ...] | None = None
    # only the project's own files import its modules (``closed-project``); None: syncfix
    # decides (not when it can be installed or holds notebooks: syncfix/projects.py)
    closed_project: bool | None = None
    # a recorded run's observations (``--observed``): fixes whose facts they show apply as observed
    observations: Observations | None = None
    config_path: Path | None = None  # where these came from (for --show-settings)
    root: Path | None = None  # the folder paths are reported relative to

    # ---- rule selection --------------------------------------------------------------
    def enabled(self, codes: Iterable[str], path: str | None = None) -> list[str]:
        chosen = [c for c in codes if _selected(c, self.select + self.extend_select, self.ignore)]
        if path is not None and self.per_file_ignores:
            ignored: list[str] = []
            for pattern, rules in self.per_file_ignores.items():
                if _path_matches(path, pattern):
                    ignored.extend(rules)
            chosen = [c for c in chosen if not _matches_any(c, ignored)]
        return chosen

    def is_fixable(self, code: str) -> bool:
        return _selected(code, self.fixable, self.unfixable)

    def is_safe(self, code: str, safe_by_rule: bool) -> bool:
        """Fix applicability after ``extend-safe-fixes`` / ``extend-unsafe-fixes``."""
        if _matches_any(code, self.extend_unsafe_fixes):
            return False
        if _matches_any(code, self.extend_safe_fixes):
            return True
        return safe_by_rule


def _matches_any(code: str, selectors: Iterable[str]) -> bool:
    return any(s == "ALL" or code.startswith(s) for s in selectors)


def _selected(code: str, select: Iterable[str], ignore: Iterable[str]) -> bool:
    """The most specific selector wins (ruff's rule): ``select=SFX1, ignore=SFX`` keeps SFX1xx."""
    best_len, best = -1, False
    for s in select:
        if s == "ALL" or code.startswith(s):
            length = 0 if s == "ALL" else len(s)
            if length >= best_len:
                best_len, best = length, True
    for s in ignore:
        if s == "ALL" or code.startswith(s):
            length = 0 if s == "ALL" else len(s)
            if length >= best_len:
                best_len, best = length, False
    return best


def _path_matches(path: str, pattern: str) -> bool:
    p = path.replace("\\", "/")
    return fnmatch.fnmatch(p, pattern) or fnmatch.fnmatch(Path(p).name, pattern) or p.startswith(
        pattern.rstrip("/") + "/"
    )


# ---- loading -------------------------------------------------------------------------------

_LIST_KEYS = {
    "select", "extend-select", "ignore", "fixable", "unfixable", "extend-safe-fixes",
    "extend-unsafe-fixes", "exclude", "extend-exclude",
}
_BOOL_KEYS = {"unsafe-fixes", "include-cold", "respect-gitignore", "force-exclude", "closed-project"}
_KNOWN = _LIST_KEYS | _BOOL_KEYS | {
    "per-file-ignores", "output-format", "jobs", "target-version", "torch", "cache-dir", "extend",
}
_TORCH_KEYS = {"hot-functions", "extend-hot-functions", "devices"}
#: Device types ``devices`` may name (PyTorch's, as in ``torch.device("cuda")``).
DEVICE_TYPES = ("cuda", "cpu", "mps", "xpu", "xla", "hpu", "npu", "mtia", "meta", "privateuseone")


def find_config(start: Path) -> Path | None:
    """The nearest ``syncfix.toml``, or ``pyproject.toml`` with a ``[tool.syncfix]`` table."""
    start = start.resolve()
    if start.is_file():
        start = start.parent
    for folder in (start, *start.parents):
        for name in ("syncfix.toml", ".syncfix.toml"):
            candidate = folder / name
            if candidate.is_file():
                return candidate
        candidate = folder / "pyproject.toml"
        if candidate.is_file():
            try:
                data = tomllib.loads(candidate.read_text(encoding="utf-8"))
            except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
                raise ConfigError(f"{candidate}: {exc}") from exc
            if "syncfix" in data.get("tool", {}):
                return candidate
    return None


def load_table(path: Path, _seen: tuple[Path, ...] = ()) -> dict[str, Any]:
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise ConfigError(f"{path}: {exc}") from exc
    table = data.get("tool", {}).get("syncfix", {}) if path.name == "pyproject.toml" else data
    if not isinstance(table, dict):
        raise ConfigError(f"{path}: [tool.syncfix] must be a table")
    extend = table.get("extend")
    if extend is not None:
        base_path = (path.parent / str(extend)).resolve()
        if base_path in _seen:
            raise ConfigError(f"{path}: circular 'extend'")
        base = load_table(base_path, (*_seen, path))
        base.update({k: v for k, v in table.items() if k != "extend"})
        table = base
    return table


def settings_from_table(table: Mapping[str, Any], where: str, base: Settings | None = None) -> Settings:
    settings = base or Settings()
    updates: dict[str, Any] = {}
    for key, value in table.items():
        if key not in _KNOWN:
            raise ConfigError(f"{where}: unknown setting '{key}'")
        attr = key.replace("-", "_")
        if key in _LIST_KEYS:
            if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
                raise ConfigError(f"{where}: '{key}' must be a list of strings")
            updates[attr] = tuple(value)
        elif key in _BOOL_KEYS:
            if not isinstance(value, bool):
                raise ConfigError(f"{where}: '{key}' must be true or false")
            updates[attr] = value
        elif key == "per-file-ignores":
            if not isinstance(value, dict):
                raise ConfigError(f"{where}: 'per-file-ignores' must be a table")
            for pattern, codes in value.items():
                if not isinstance(codes, list) or not all(isinstance(c, str) for c in codes):
                    raise ConfigError(
                        f"{where}: 'per-file-ignores' value for '{pattern}' must be a list of strings"
                    )
            updates[attr] = {str(k): tuple(v) for k, v in value.items()}
        elif key == "output-format":
            updates[attr] = str(value)
        elif key == "jobs":
            if not isinstance(value, int) or value < 0:
                raise ConfigError(f"{where}: 'jobs' must be a non-negative integer")
            updates[attr] = value or None
        elif key == "target-version":
            if not isinstance(value, str):
                raise ConfigError(f"{where}: 'target-version' must be a string such as \"py310\"")
            version = target_version(value)
            if version is None:
                raise ConfigError(f"{where}: unsupported target-version '{value}'")
            updates[attr] = version
        elif key == "torch":
            if not isinstance(value, dict):
                raise ConfigError(f"{where}: [tool.syncfix.torch] must be a table")
            for tkey, tval in value.items():
                if tkey not in _TORCH_KEYS:
                    raise ConfigError(f"{where}: unknown setting 'torch.{tkey}'")
                if not isinstance(tval, list):
                    raise ConfigError(f"{where}: 'torch.{tkey}' must be a list")
            hot = tuple(value.get("hot-functions", settings.hot_functions))
            hot += tuple(value.get("extend-hot-functions", ()))
            updates["hot_functions"] = hot
            if "devices" in value:
                devices = value["devices"]
                unknown = [d for d in devices if d not in DEVICE_TYPES]
                if not devices or unknown:
                    raise ConfigError(
                        f"{where}: 'torch.devices' lists device types, some of {', '.join(DEVICE_TYPES)}"
                        + (f" (not {', '.join(map(str, unknown))})" if unknown else "")
                    )
                updates["devices"] = tuple(devices)
    return replace(settings, **updates)


def load_settings(start: Path, config_file: Path | None = None, isolated: bool = False) -> Settings:
    path = None if isolated else (config_file or find_config(start))
    if path is None:
        return Settings()  # no config: paths are matched relative to the working directory
    table = load_table(path)
    settings = settings_from_table(table, str(path))
    return replace(settings, config_path=path, root=path.parent)


def validate_codes(codes: Iterable[str], known: Iterable[str]) -> None:
    known = list(known)
    for code in codes:
        if code == "ALL":
            continue
        if not any(k.startswith(code) for k in known):
            raise ConfigError(f"unknown rule selector '{code}'")
