"""Property tests: byte-for-byte round trips, idempotence, parseable output, no rewrite without a
pattern — over generated PyTorch-like code and over arbitrary grammar-generated Python."""

from __future__ import annotations

import libcst as cst
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from syncfix import check_code, fix_code

NAMES = st.sampled_from(["x", "y", "batch", "loss", "h", "w", "acc"])
DEVICES = st.sampled_from(['"cuda"', '"cuda:0"', "device", '"cpu"', "other", "torch.float16"])
CREATORS = st.sampled_from(["torch.ones(3)", "torch.randn(2, 2)", "torch.tensor([1, 2])", "arr", "x"])
COMMENT = st.sampled_from(["", "  # keep", "  # noqa: SFX101", "  # syncfix: ignore[SFX101]", "  #"])
PLAIN_COMMENT = st.sampled_from(["", "  # keep", "  # noqa: E501", "  #"])  # no SFX suppression to remove
NEWLINE = st.sampled_from(["\n", "\r\n"])


@st.composite
def simple_statement(draw, with_patterns: bool) -> str:
    target, source = draw(NAMES), draw(CREATORS)
    options = [
        f"{target} = {source} * 2",
        f"{target} = {source}.sum()",
        f"print({target})",
        f"{target} += 1",
        f"{target} = model({source})",
        f"{target}.add_(1)",
        "opt.step()",
        "pass",
    ]
    if with_patterns:
        options += [
            f"{target} = {source}.cuda()",
            f"{target} = {source}.to({draw(DEVICES)})",
            f"{target} = {source}.to({draw(DEVICES)}, non_blocking=False)",
            f"{target} = {source}.cuda(0)",
        ]
    return draw(st.sampled_from(options)) + draw(COMMENT if with_patterns else PLAIN_COMMENT)


@st.composite
def program(draw, with_patterns: bool = True) -> str:
    nl = draw(NEWLINE)
    lines = [
        "import torch",
        "from torch.utils.data import DataLoader",
        'device = "cuda" if torch.cuda.is_available() else "cpu"',
        "other = torch.device('cuda', 1)",
        "",
    ]

    def block(depth: int, indent: str) -> list[str]:
        out: list[str] = []
        for _ in range(draw(st.integers(1, 4))):
            kind = draw(st.sampled_from(["stmt", "stmt", "for", "if", "def"] if depth < 3 else ["stmt"]))
            if kind == "stmt":
                out.append(indent + draw(simple_statement(with_patterns)))
            elif kind == "for":
                head = draw(st.sampled_from([
                    "for x, y in DataLoader(ds, batch_size=4):",
                    "for i in range(3):",
                    "for batch in loader:",
                    "while cond:",
                ]))
                out.append(indent + head)
                out.extend(block(depth + 1, indent + "    "))
            elif kind == "if":
                out.append(indent + "if flag:")
                out.extend(block(depth + 1, indent + "    "))
            else:
                args = draw(st.sampled_from(["x", "x: torch.Tensor", "model, loader, ds, opt"]))
                out.append(indent + f"def f{depth}({args}):")
                out.extend(block(depth + 1, indent + "    "))
        return out

    lines.extend(block(0, ""))
    return nl.join(lines) + draw(st.sampled_from([nl, ""]))


PROPS = settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@PROPS
@given(program(with_patterns=True), st.booleans())
def test_fixes_parse_and_are_idempotent(src, unsafe):
    once = fix_code(src, unsafe_fixes=unsafe)
    cst.parse_module(once)  # output parses
    assert fix_code(once, unsafe_fixes=unsafe) == once  # a second run changes nothing
    # whatever is left carries no fix that this mode would have applied
    for f in check_code(once, unsafe_fixes=unsafe):
        assert f.fix is None or (f.fix.applicability.value == "unsafe" and not unsafe)


@PROPS
@given(program(with_patterns=False))
def test_no_pattern_no_rewrite(src):
    assert fix_code(src, unsafe_fixes=True) == src


@PROPS
@given(program(with_patterns=True))
def test_only_flagged_lines_change(src):
    out = fix_code(src, unsafe_fixes=True)
    flagged = {f.line for f in check_code(src, unsafe_fixes=True) if f.fix is not None}
    old_lines, new_lines = src.splitlines(), out.splitlines()
    assert len(old_lines) == len(new_lines)  # SFX101 never adds or removes lines here
    for n, (a, b) in enumerate(zip(old_lines, new_lines, strict=True), 1):
        if a != b:
            assert n in flagged


try:
    import hypothesmith
except ImportError:  # pragma: no cover - optional
    hypothesmith = None


if hypothesmith is not None:

    @settings(max_examples=25, deadline=None, suppress_health_check=list(HealthCheck))
    @given(hypothesmith.from_grammar())
    def test_any_parseable_source_round_trips(src):
        try:
            cst.parse_module(src)
        except Exception:
            return  # the grammar generator also makes code LibCST rejects
        text = "import torch\n" + src
        out = fix_code(text, unsafe_fixes=True)
        if ".cuda(" not in src and ".to(" not in src:
            assert out == text  # byte for byte when nothing applies
        cst.parse_module(out)
        assert fix_code(out, unsafe_fixes=True) == out
