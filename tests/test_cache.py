"""The results cache: hits on an unchanged tree, and never a stale result."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest
from click.testing import CliRunner

from syncfix import cache as results_cache
from syncfix.cli import cli
from syncfix.config import Settings
from syncfix.engine import Job, process_file
from syncfix.projects import contexts

SAFE = "import torch\nx = torch.rand(3).cuda()\n"
UNSAFE = "import torch\ndef f(x: torch.Tensor):\n    return x.cuda()\n"


@pytest.fixture
def project(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "m.py").write_text(SAFE + UNSAFE.split("\n", 1)[1], encoding="utf-8")
    return tmp_path


def _check(*args: str) -> tuple[int, list[dict]]:
    result = CliRunner().invoke(cli, ["check", "m.py", "-o", "json", *args])
    assert result.exit_code in (0, 1), result.output
    return result.exit_code, json.loads(result.stdout)


def _entries(root: Path) -> list[Path]:
    return sorted((root / ".syncfix_cache").rglob("*.json"))


def test_cache_folder_layout_and_clean(project):
    _check()
    folder = project / ".syncfix_cache"
    assert (folder / "CACHEDIR.TAG").read_text().startswith("Signature: 8a477f597d28d172789f06886806bc55")
    assert (folder / ".gitignore").read_text().splitlines()[-1] == "*"
    assert len(_entries(project)) == 1
    result = CliRunner().invoke(cli, ["clean"])
    assert result.exit_code == 0 and not folder.exists()


def test_clean_refuses_a_folder_without_the_tag(project):
    (project / "keep").mkdir()
    result = CliRunner().invoke(cli, ["clean", "--cache-dir", "keep"])
    assert result.exit_code == 2 and (project / "keep").exists()


def test_a_hit_returns_the_same_findings_without_parsing(project, monkeypatch):
    _, first = _check()
    import syncfix.engine as engine

    def boom(*a, **k):
        raise AssertionError("parsed although the cache had the result")

    monkeypatch.setattr(engine, "process_source", boom)
    _, second = _check()
    assert second == first
    assert [f["fix"]["applicability"] for f in second] == ["safe", "unsafe"]


def test_changing_the_file_drops_the_cached_finding(project):
    _, before = _check()
    assert len(before) == 2
    (project / "m.py").write_text(UNSAFE, encoding="utf-8")
    code, after = _check()
    assert [f["location"]["row"] for f in after] == [3]
    (project / "m.py").write_text("import torch\n", encoding="utf-8")
    code, after = _check()
    assert code == 0 and after == []


def test_changing_settings_changes_the_result(project):
    _, before = _check()
    assert before[1]["fix"]["applicability"] == "unsafe"
    (project / "pyproject.toml").write_text('[tool.syncfix]\nextend-safe-fixes = ["SFX101"]\n', encoding="utf-8")
    _, after = _check()
    assert after[1]["fix"]["applicability"] == "safe"
    _, ignored = _check("--ignore", "SFX101")
    assert ignored == []
    _, unfixable = _check("--unfixable", "SFX101")
    assert all(f["fix"] is None for f in unfixable)


def test_no_cache_writes_nothing_and_cache_dir_moves_it(project):
    _check("--no-cache")
    assert not (project / ".syncfix_cache").exists()
    _check("--cache-dir", "elsewhere")
    assert (project / "elsewhere" / "CACHEDIR.TAG").is_file()
    assert not (project / ".syncfix_cache").exists()


def test_cache_dir_from_the_config_file(project):
    (project / "pyproject.toml").write_text('[tool.syncfix]\ncache-dir = "build/sfx"\n', encoding="utf-8")
    _check()
    assert (project / "build" / "sfx" / "CACHEDIR.TAG").is_file()


def test_apply_ignores_entries_whose_fixes_it_would_apply(project):
    _check()  # caches a safe fix
    result = CliRunner().invoke(cli, ["apply", "m.py"])
    assert result.exit_code == 1  # the unsafe one remains
    assert 'to("cuda", non_blocking=True)' in (project / "m.py").read_text().splitlines()[1]


def test_apply_with_nothing_to_fix_can_use_the_cache(project, monkeypatch):
    (project / "m.py").write_text(UNSAFE, encoding="utf-8")
    _check()
    settings = Settings()
    cache = results_cache.Cache(project / ".syncfix_cache", settings)
    # the file's context as the command line builds it (its folder is its project)
    job = Job("m.py", fix=True, write=True, want_source=False, cache=cache, context=contexts(["m.py"]).get("m.py"))
    import syncfix.engine as engine

    monkeypatch.setattr(engine, "process_source", lambda *a, **k: pytest.fail("not from the cache"))
    result = process_file(job, settings)
    assert [f.line for f in result.findings] == [3] and not result.changed
    # with --unsafe-fixes the cached unsafe fix would apply: the file must really be processed
    with pytest.raises(pytest.fail.Exception):
        process_file(job, replace(settings, unsafe_fixes=True))


def test_round_trip_keeps_every_field(project):
    settings = Settings()
    cache = results_cache.Cache(project / "c", settings)
    result = process_file(Job("m.py", fix=False, write=False, want_source=False), settings)
    data = (project / "m.py").read_bytes()
    cache.put(data, "m.py", settings, result.findings)
    assert cache.get(data, "m.py", settings) == result.findings
    assert cache.get(data + b"\n", "m.py", settings) is None
    assert cache.get(data, "other.py", settings) is None


def test_a_corrupt_entry_is_a_miss(project):
    _, before = _check()
    for entry in _entries(project):
        entry.write_text("{not json", encoding="utf-8")
    _, after = _check()
    assert after == before


def test_parallel_warm_run_answers_hits_without_a_pool(project, monkeypatch):
    for i in range(40):
        (project / f"p{i:02}.py").write_text(SAFE if i % 2 else UNSAFE, encoding="utf-8")
    args = ["check", ".", "-j", "2", "-o", "json"]
    cold = CliRunner().invoke(cli, args)
    import syncfix.cli as cli_module
    import syncfix.engine as engine

    class NoPool:
        def __init__(self, *a, **k):
            raise AssertionError("started a process pool for a tree the cache covers")

    monkeypatch.setattr(cli_module, "ProcessPoolExecutor", NoPool)
    warm = CliRunner().invoke(cli, args)
    assert warm.exit_code == cold.exit_code == 1 and warm.stdout == cold.stdout
    # a few changed files are processed in this process, in their place in the output
    (project / "p03.py").write_text(UNSAFE, encoding="utf-8")
    seen = []
    real = engine.process_source
    monkeypatch.setattr(
        engine, "process_source", lambda data, path, *a, **k: seen.append(path) or real(data, path, *a, **k)
    )
    lookups = []
    real_get = results_cache.Cache.get
    monkeypatch.setattr(results_cache.Cache, "get", lambda self, d, path, st, *rest: lookups.append(path) or real_get(self, d, path, st, *rest))
    again = CliRunner().invoke(cli, args)
    assert seen == ["./p03.py"]
    assert len(lookups) == len(set(lookups)) == 41  # every file (m.py too) once: a miss is not looked up again
    after = json.loads(again.stdout)
    assert [f["filename"] for f in after] == [f["filename"] for f in json.loads(cold.stdout)]
    p03 = next(f for f in after if f["filename"].endswith("p03.py"))
    assert p03["location"]["row"] == 3 and p03["fix"]["applicability"] == "unsafe"  # its new text
