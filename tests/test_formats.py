"""CI output formats: SARIF against the 2.1.0 schema, rdjson's suggestion/line-span rule and byte
columns, GitHub annotation escaping and caps, and the smaller formats."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from dataclasses import replace
from pathlib import Path

import jsonschema
import pytest
from click.testing import CliRunner

from syncfix import check_code
from syncfix.cli import cli
from syncfix.formats import (
    ANNOTATIONS_PER_LEVEL,
    SARIF_SCHEMA,
    annotation,
    escape_data,
    escape_property,
    github_summary,
    line_edit,
)
from syncfix.formats import sarif_schema as sarif_schema_in_package
from syncfix.model import Applicability, Edit, Finding, FixInfo
from syncfix.reporting import FORMATS, ReportContext

SAFE = "import torch\nx = torch.rand(3).cuda()\n"
UNSAFE = "import torch\ndef f(x: torch.Tensor):\n    return x.cuda()\n"
NO_FIX = "import torch\nfor b in loader:\n    s = b.state.cuda()\n"  # not provably a tensor: no fix
# Two code points that are 2 and 4 UTF-8 bytes long before the finding on the same line.
NON_ASCII = 'import torch\ns = "é😀"; y = torch.rand(2).cuda()\n'
ALL_KINDS = SAFE + UNSAFE.split("\n", 1)[1] + NO_FIX.split("\n", 1)[1]

CI_FORMATS = ["github", "sarif", "rdjson", "rdjsonl", "json-lines", "junit", "gitlab", "grouped"]


def _findings(source: str, path: str = "m.py") -> tuple[list[Finding], ReportContext]:
    findings = check_code(source, path=path)
    return findings, ReportContext(root=".", sources={path: source}, repo_root=".")


def test_every_ci_format_is_registered():
    assert set(CI_FORMATS) | {"full", "concise", "json"} <= set(FORMATS)


# ---- SARIF ------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def sarif_schema():
    schema = sarif_schema_in_package()
    assert schema["id"] == SARIF_SCHEMA  # the schema the output claims is the one shipped
    return schema


def test_sarif_validates_against_the_2_1_0_schema(sarif_schema):
    findings, ctx = _findings(ALL_KINDS)
    assert len(findings) == 3
    log = json.loads(FORMATS["sarif"](findings, ctx))
    jsonschema.Draft4Validator(sarif_schema).validate(log)
    run = log["runs"][0]
    rules = run["tool"]["driver"]["rules"]
    sfx101 = next(r for r in rules if r["id"] == "SFX101")
    assert sfx101["help"]["markdown"].startswith("# blocking-host-to-device (SFX101)")
    assert len(sfx101["fullDescription"]["text"]) <= 1000
    results = run["results"]
    assert [r["ruleId"] for r in results] == ["SFX101"] * 3
    assert all(rules[r["ruleIndex"]]["id"] == r["ruleId"] for r in results)
    safe, unsafe, nofix = results
    assert safe["properties"]["applicability"] == "safe"
    assert "[unsafe fix]" not in safe["message"]["text"]
    assert unsafe["properties"]["applicability"] == "unsafe"
    assert unsafe["message"]["text"].endswith("[unsafe fix]")
    assert "fixes" not in nofix and "properties" not in nofix
    repl = safe["fixes"][0]["artifactChanges"][0]["replacements"][0]
    assert repl["deletedRegion"] == {"startLine": 2, "startColumn": 1, "endLine": 3, "endColumn": 1}
    assert repl["insertedContent"]["text"] == 'x = torch.rand(3).to("cuda", non_blocking=True)\n'
    loc = safe["locations"][0]["physicalLocation"]
    assert loc["artifactLocation"]["uri"] == "m.py"
    assert loc["region"] == {"startLine": 2, "startColumn": 5, "endLine": 2, "endColumn": 25}


def test_sarif_deletion_keeps_empty_inserted_content(sarif_schema):
    f = Finding("SFX101", "n", "m", "m.py", 1, 1, 1, 2, FixInfo(Applicability.SAFE, "delete", Edit(1, 1, "", "x\n")))
    log = json.loads(FORMATS["sarif"]([f], ReportContext(root=".", sources={})))
    jsonschema.Draft4Validator(sarif_schema).validate(log)
    repl = log["runs"][0]["results"][0]["fixes"][0]["artifactChanges"][0]["replacements"][0]
    assert repl["insertedContent"] == {"text": ""}


def test_sarif_paths_are_relative_to_the_repo_root(tmp_path):
    sub = tmp_path / "pkg dir"
    sub.mkdir()
    path = str(sub / "m.py")
    findings = check_code(SAFE, path=path)
    ctx = ReportContext(root=str(sub), sources={}, repo_root=str(tmp_path))
    log = json.loads(FORMATS["sarif"](findings, ctx))
    uri = log["runs"][0]["results"][0]["locations"][0]["physicalLocation"]["artifactLocation"]["uri"]
    assert uri == "pkg%20dir/m.py"
    line = FORMATS["github"](findings, ctx)
    assert "file=pkg dir/m.py," in line


# ---- rdjson -----------------------------------------------------------------------------------


def _check_rdjson_diagnostic(d: dict, source_lines: list[str], path: str = "m.py") -> None:
    assert d["location"]["path"] == path
    rng = d["location"]["range"]
    assert rng["start"]["line"] <= rng["end"]["line"]
    for s in d.get("suggestions", []):
        # reviewdog's github-pr-review posts a suggestion only if its lines equal the comment's.
        assert s["range"]["start"]["line"] == rng["start"]["line"]
        assert s["range"]["end"]["line"] == rng["end"]["line"]
        assert "column" not in s["range"]["start"] and "column" not in s["range"]["end"]
        assert not s["text"].endswith("\n")  # reviewdog adds the newline itself
        assert 1 <= s["range"]["start"]["line"] <= len(source_lines)


def test_rdjson_structure_and_line_span_rule():
    findings, ctx = _findings(ALL_KINDS)
    out = json.loads(FORMATS["rdjson"](findings, ctx))
    assert out["source"]["name"] == "syncfix"
    diags = out["diagnostics"]
    assert len(diags) == 3
    for d in diags:
        _check_rdjson_diagnostic(d, ALL_KINDS.splitlines())
        assert d["code"]["value"] == "SFX101"
        assert d["severity"] == "WARNING"
    safe, unsafe, nofix = diags
    assert safe["suggestions"][0]["text"] == 'x = torch.rand(3).to("cuda", non_blocking=True)'
    assert unsafe["message"].endswith("[unsafe fix]") and "suggestions" in unsafe
    assert "[unsafe fix]" not in safe["message"]
    assert "suggestions" not in nofix


def test_rdjson_columns_are_utf8_bytes_with_exclusive_end():
    findings, ctx = _findings(NON_ASCII)
    (f,) = findings
    assert (f.column, f.end_column) == (15, 35)  # code points
    d = json.loads(FORMATS["rdjson"](findings, ctx))["diagnostics"][0]
    rng = d["location"]["range"]
    line = NON_ASCII.splitlines()[1].encode("utf-8")
    start, end = rng["start"]["column"], rng["end"]["column"]
    assert (start, end) == (19, 39)
    assert line[start - 1 : end - 1] == b"torch.rand(2).cuda()"


def test_rdjson_widens_the_range_to_a_multi_line_suggestion():
    source = "import torch\nx = (\n    1 + torch.rand(3).cuda()\n)\n"
    lines = source.splitlines(keepends=True)
    edit = Edit(2, 4, "x = (1 + y)\n", "".join(lines[1:4]))
    f = Finding("SFX101", "n", "msg", "m.py", 3, 9, 3, 29, FixInfo(Applicability.SAFE, "d", edit))
    d = json.loads(FORMATS["rdjson"]([f], ReportContext(root=".", sources={"m.py": source})))["diagnostics"][0]
    _check_rdjson_diagnostic(d, source.splitlines())
    assert d["location"]["range"] == {"start": {"line": 2, "column": 1}, "end": {"line": 4, "column": 2}}


def test_pure_insertion_becomes_a_whole_line_suggestion():
    lines = ["a\n", "b\n"]
    assert line_edit(Edit(2, 1, "new\n", ""), lines) == Edit(2, 2, "new\nb\n", "b\n")
    assert line_edit(Edit(3, 2, "end\n", ""), lines) == Edit(2, 2, "b\nend\n", "b\n")
    assert line_edit(Edit(2, 1, "new\n", ""), None) is None


EXAMPLES = Path(__file__).parent.parent / "examples"


def _apply_suggestions(source: str, diagnostics: list[dict]) -> str:
    lines = source.splitlines(keepends=True)
    edits = sorted(
        ((s["range"]["start"]["line"], s["range"]["end"]["line"], s["text"]) for d in diagnostics for s in d.get("suggestions", [])),
        reverse=True,
    )
    for start, end, text in edits:
        lines[start - 1 : end] = [text + "\n"]
    return "".join(lines)


def _suggested_lines(diagnostics: list[dict]) -> list[set[int]]:
    return [
        set(range(s["range"]["start"]["line"], s["range"]["end"]["line"] + 1))
        for d in diagnostics
        for s in d.get("suggestions", [])
    ]


@pytest.mark.parametrize("unsafe", [False, True])
@pytest.mark.parametrize("name", ["train_logged.py", "evaluate.py", "train_classifier.py"])
def test_rdjson_merges_overlapping_fixes_into_one_suggestion(tmp_path, monkeypatch, name, unsafe):
    """SFX301, SFX401 and SFX402 on one log line (and SFX101s inside SFX302's loop) give one
    suggestion per line range, whose text is what `syncfix apply` writes there."""
    source = (EXAMPLES / name).read_text(encoding="utf-8")
    (tmp_path / name).write_text(source, encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    flags = ["--unsafe-fixes"] if unsafe else []
    out = CliRunner().invoke(cli, ["check", name, "-o", "rdjson", "--no-cache", *flags]).stdout
    diagnostics = json.loads(out)["diagnostics"]
    spans = _suggested_lines(diagnostics)
    for i, a in enumerate(spans):
        for b in spans[i + 1 :]:
            assert not a & b, "two suggestions touch the same line"
    for d in diagnostics:
        _check_rdjson_diagnostic(d, source.splitlines(), name)
    # without --unsafe-fixes, `apply` leaves the suggestions tagged unsafe out
    applied = [d for d in diagnostics if unsafe or not d["message"].endswith("[unsafe fix]")]
    suggested = _apply_suggestions(source, applied)
    assert CliRunner().invoke(cli, ["apply", name, "--no-cache", *flags]).exit_code in (0, 1)
    assert suggested == (tmp_path / name).read_text(encoding="utf-8")
    assert all(json.loads(x) for x in CliRunner().invoke(cli, ["check", name, "-o", "rdjsonl", *flags]).stdout.splitlines())


def test_rdjson_never_overlaps_even_without_the_fixed_text():
    """A library caller's context has no way to re-run the fixes: the first fix of an
    overlapping group is suggested alone, the others point to it."""
    source = (EXAMPLES / "train_logged.py").read_text(encoding="utf-8")
    findings, ctx = _findings(source, "t.py")
    assert {"SFX301", "SFX401"} <= {f.code for f in findings if f.line == 20}
    diagnostics = json.loads(FORMATS["rdjson"](findings, ctx))["diagnostics"]
    spans = _suggested_lines(diagnostics)
    assert len(spans) == 1
    assert sum("suggestion at line 20" in d["message"] for d in diagnostics) >= 1


def test_rdjsonl_is_one_diagnostic_per_line():
    findings, ctx = _findings(ALL_KINDS)
    lines = FORMATS["rdjsonl"](findings, ctx).splitlines()
    assert len(lines) == 3
    for line in lines:
        d = json.loads(line)
        _check_rdjson_diagnostic(d, ALL_KINDS.splitlines())
        assert d["source"]["name"] == "syncfix"


# ---- GitHub annotations -----------------------------------------------------------------------


def test_annotation_escaping():
    assert escape_data("100% done\r\nnext: a,b") == "100%25 done%0D%0Anext: a,b"
    assert escape_property("a:b,c%\n") == "a%3Ab%2Cc%25%0A"
    f = Finding("SFX101", "n", "50%: bad,\nworse", "dir,x/a:b.py", 1, 2, 3, 4, None)
    line = annotation(f, ReportContext(root=".", sources={}))
    head, message = line.rstrip("\n").split("::", 2)[1:]
    assert head == "warning title=syncfix (SFX101),file=dir%2Cx/a%3Ab.py,line=1,col=2,endLine=3,endColumn=4"
    assert message == "SFX101 50%25: bad,%0Aworse"
    assert line.count("\n") == 1


def test_annotation_carries_the_fix_and_its_safety():
    findings, ctx = _findings(ALL_KINDS)
    lines = FORMATS["github"](findings, ctx).splitlines()
    assert "(safe fix)" in lines[0] and "%0A  help: " in lines[0]
    assert "(unsafe fix)" in lines[1]
    assert "help:" not in lines[2]


def test_annotations_are_capped_per_level_with_a_full_summary():
    n = ANNOTATIONS_PER_LEVEL + 5
    source = "import torch\n" + "".join(f"x{i} = torch.rand(3).cuda()\n" for i in range(n))
    findings, ctx = _findings(source)
    assert len(findings) == n
    out = FORMATS["github"](findings, replace(ctx, step_summary=True))
    assert out.count("::warning ") == ANNOTATIONS_PER_LEVEL
    assert "5 more findings not annotated" in out
    md = github_summary(findings, ctx)
    assert md.count("| `m.py:") == n
    assert "```diff" in md and '+x14 = torch.rand(3).to("cuda", non_blocking=True)' in md


def test_github_format_annotates_everything_without_a_step_summary(tmp_path, monkeypatch):
    """Outside Actions (no $GITHUB_STEP_SUMMARY) nothing else would list the findings past the
    cap, so every one is printed."""
    n = ANNOTATIONS_PER_LEVEL + 5
    source = "import torch\n" + "".join(f"x{i} = torch.rand(3).cuda()\n" for i in range(n))
    findings, ctx = _findings(source)
    out = FORMATS["github"](findings, ctx)
    assert out.count("::warning ") == n and "not annotated" not in out
    (tmp_path / "m.py").write_text(source, encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("GITHUB_STEP_SUMMARY", raising=False)
    result = CliRunner().invoke(cli, ["check", "m.py", "-o", "github", "--no-cache"])
    assert result.exit_code == 1
    assert result.stdout.count("::warning ") == n
    summary = tmp_path / "summary.md"
    result = CliRunner().invoke(
        cli, ["check", "m.py", "-o", "github", "--no-cache"], env={"GITHUB_STEP_SUMMARY": str(summary)}
    )
    assert result.stdout.count("::warning ") == ANNOTATIONS_PER_LEVEL
    assert summary.read_text(encoding="utf-8").count("| `m.py:") == n


def test_github_format_writes_the_step_summary(tmp_path, monkeypatch):
    (tmp_path / "m.py").write_text(SAFE, encoding="utf-8")
    summary = tmp_path / "summary.md"
    monkeypatch.chdir(tmp_path)
    runner = CliRunner()
    result = runner.invoke(
        cli, ["check", "m.py", "-o", "github", "--no-cache"], env={"GITHUB_STEP_SUMMARY": str(summary)}
    )
    assert result.exit_code == 1
    assert result.output.startswith("::warning title=syncfix (SFX101),file=m.py,line=2,")
    assert "`m.py:2:5`" in summary.read_text(encoding="utf-8")


# ---- the rest ---------------------------------------------------------------------------------


def test_json_lines_gitlab_junit_grouped():
    findings, ctx = _findings(ALL_KINDS)
    rows = [json.loads(x) for x in "".join(FORMATS["json-lines"](findings, ctx)).splitlines()]
    assert [r["fix"] and r["fix"]["applicability"] for r in rows] == ["safe", "unsafe", None]

    cq = json.loads(FORMATS["gitlab"](findings, ctx))
    assert [c["location"] for c in cq] == [
        {"path": "m.py", "lines": {"begin": 2, "end": 2}},
        {"path": "m.py", "lines": {"begin": 4, "end": 4}},
        {"path": "m.py", "lines": {"begin": 6, "end": 6}},
    ]
    assert len({c["fingerprint"] for c in cq}) == 3
    assert "safe fix" in cq[0]["description"] and "unsafe fix" in cq[1]["description"]

    root = ET.fromstring(FORMATS["junit"](findings, ctx))
    assert root.get("failures") == "3"
    cases = root.findall("./testsuite/testcase")
    assert [c.get("line") for c in cases] == ["2", "4", "6"]
    assert all(c.find("failure").get("type") == "SFX101" for c in cases)
    empty = ET.fromstring(FORMATS["junit"]([], ctx))
    assert empty.get("failures") == "0" and empty.find("./testsuite/testcase") is not None

    grouped = "".join(FORMATS["grouped"](findings, ctx))
    assert grouped.startswith("m.py:\n  2:5  SFX101 [*] ")  # padded to the widest l:c
    assert grouped.count("[*]") == 1  # unsafe fixes are not marked without --unsafe-fixes


def test_gitlab_fingerprints_survive_moving_lines():
    a, ctx_a = _findings(SAFE)
    b, ctx_b = _findings("import torch\n\n\n" + SAFE.split("\n", 1)[1])
    fa = json.loads(FORMATS["gitlab"](a, ctx_a))[0]["fingerprint"]
    fb = json.loads(FORMATS["gitlab"](b, ctx_b))[0]["fingerprint"]
    assert fa == fb


@pytest.mark.parametrize("fmt", CI_FORMATS + ["full", "concise", "json"])
def test_cli_accepts_every_format(fmt, tmp_path, monkeypatch):
    (tmp_path / "m.py").write_text(NON_ASCII, encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(cli, ["check", "m.py", "-o", fmt, "--no-cache"], env={"GITHUB_STEP_SUMMARY": ""})
    assert result.exit_code == 1, result.output
    assert "m.py" in result.output
    if fmt == "rdjson":  # columns need the source, which check mode reads back for the report
        d = json.loads(result.output)["diagnostics"][0]
        assert d["location"]["range"]["start"]["column"] == 19


def test_step_summary_stays_under_githubs_size_limit(monkeypatch):
    import syncfix.formats as formats

    monkeypatch.setattr(formats, "SUMMARY_BUDGET", 2_000)
    n = 40
    source = "import torch\n" + "".join(f"x{i} = torch.rand(3).cuda()\n" for i in range(n))
    findings, ctx = _findings(source)
    md = github_summary(findings, ctx)
    assert len(md) < 4_000
    assert "more not listed" in md or "more fixes not shown" in md


def test_full_output_shows_the_finding_line_after_a_form_feed(tmp_path):
    """The snippet is cut at real newlines only, as the engine numbers lines (a form feed or a
    ``\\x1c`` in a comment must not shift the line shown)."""
    src = "import torch\n# page\x0c break \x1c here\nx = torch.ones(3)\ny = x.cuda()\n"
    (tmp_path / "m.py").write_text(src)
    result = CliRunner().invoke(cli, ["check", str(tmp_path / "m.py"), "--no-cache", "--output-format", "full"])
    assert "4 | y = x.cuda()" in result.output
    assert "    ^^^^^^^^" in result.output


# ---- streaming -------------------------------------------------------------------------------


@pytest.mark.parametrize("fmt", ["full", "concise", "json", "json-lines", "grouped"])
def test_per_finding_formats_stream_one_piece_per_finding(fmt):
    # a report is written piece by piece, so 80,000 findings are never one string in memory
    findings, ctx = _findings(ALL_KINDS, path="a.py")
    more, _ = _findings(SAFE, path="b.py")
    findings = sorted(findings + more, key=Finding.sort_key)
    ctx = replace(ctx, sources={"a.py": ALL_KINDS, "b.py": SAFE})
    pieces = FORMATS[fmt](findings, ctx)
    assert not isinstance(pieces, str)
    pieces = list(pieces)
    expected = 2 if fmt == "grouped" else len(findings) + (2 if fmt == "json" else 0)  # json: "[" ... "]"
    assert len(pieces) >= expected - 1 and len(findings) >= 3


@pytest.mark.parametrize("n", [0, 1, 3])
def test_streamed_json_is_the_text_of_one_dump(n):
    findings, ctx = _findings(ALL_KINDS)
    findings = findings[:n]
    text = "".join(FORMATS["json"](findings, ctx))
    assert text == json.dumps(json.loads(text), indent=2) + "\n"
    assert len(json.loads(text)) == n


def test_output_file_gets_the_streamed_report(tmp_path):
    (tmp_path / "m.py").write_text(ALL_KINDS)
    out = tmp_path / "report.json"
    result = CliRunner().invoke(cli, ["check", str(tmp_path / "m.py"), "--isolated", "-o", "json", "--output-file", str(out)])
    assert result.exit_code == 1, result.output
    assert len(json.loads(out.read_text())) == len(check_code(ALL_KINDS))


# ---- paths that could not be processed ------------------------------------------------------

BROKEN = "import torch\ndef f(x):\n    return x.item(\n"  # '(' never closed: CPython points at 3:18


@pytest.fixture
def broken_project(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("GITHUB_STEP_SUMMARY", raising=False)
    (tmp_path / "bad.py").write_text(BROKEN, encoding="utf-8")
    (tmp_path / "good.py").write_text(SAFE, encoding="utf-8")


def _report(fmt: str) -> str:
    r = CliRunner().invoke(cli, ["check", ".", "-o", fmt, "--no-cache"], catch_exceptions=False)
    assert r.exit_code == 1
    assert "syncfix: error: bad.py: syntax error at 3:18" in r.stderr  # still said on stderr
    return r.stdout


def test_json_formats_list_an_unparsable_file_as_ruff_does(broken_project):
    """As ruff writes a syntax error: an entry with no code and no fix, at the error's place."""
    for entries in (json.loads(_report("json")), [json.loads(x) for x in _report("json-lines").splitlines()]):
        assert [e["code"] for e in entries] == [None, "SFX101"]
        error = entries[0]
        assert error["filename"] == "bad.py" and error["fix"] is None
        assert error["location"] == {"row": 3, "column": 18}
        assert "was never closed" in error["message"]


def test_ci_formats_show_an_unparsable_file_as_an_error(broken_project, sarif_schema):
    assert _report("github").splitlines()[0].startswith("::error title=syncfix,file=bad.py,line=3,col=18::syntax error")
    log = json.loads(_report("sarif"))
    jsonschema.Draft4Validator(sarif_schema).validate(log)
    (invocation,) = log["runs"][0]["invocations"]
    assert invocation["executionSuccessful"] is False
    (note,) = invocation["toolExecutionNotifications"]
    assert note["level"] == "error"
    assert note["locations"][0]["physicalLocation"]["region"] == {"startLine": 3, "startColumn": 18}
    assert [r["ruleId"] for r in log["runs"][0]["results"]] == ["SFX101"]
    for diags in (json.loads(_report("rdjson"))["diagnostics"], [json.loads(x) for x in _report("rdjsonl").splitlines()]):
        assert [d["severity"] for d in diags] == ["ERROR", "WARNING"]
        assert diags[0]["location"] == {"path": "bad.py", "range": {"start": {"line": 3, "column": 18}}}
    issues = json.loads(_report("gitlab"))
    assert [i["check_name"] for i in issues] == ["syncfix-error", "SFX101"]
    assert issues[0]["location"] == {"path": "bad.py", "lines": {"begin": 3}}
    suites = ET.fromstring(_report("junit"))
    assert (suites.get("errors"), suites.get("failures")) == ("1", "1")
    assert suites.find("testsuite/testcase/error").get("message").startswith("syntax error at 3:18")


def test_an_unreadable_file_has_no_position(broken_project):
    Path("bad.py").write_bytes(b"x = 1\0\n")
    out = CliRunner().invoke(cli, ["check", ".", "-o", "json", "--no-cache"]).stdout
    (error,) = [e for e in json.loads(out) if e["code"] is None]
    assert error["message"] == "binary file (contains NUL bytes)"
    assert error["location"] == {"row": 1, "column": 1}
    r = CliRunner().invoke(cli, ["check", ".", "-o", "github", "--no-cache"])
    assert "::error title=syncfix,file=bad.py::binary file" in r.stdout


def test_sarif_run_without_problems_is_successful(sarif_schema):
    findings, ctx = _findings(SAFE)
    (invocation,) = json.loads(FORMATS["sarif"](findings, ctx))["runs"][0]["invocations"]
    assert invocation == {"executionSuccessful": True, "toolExecutionNotifications": []}
