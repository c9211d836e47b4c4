"""The observed-fix loop on a GPU: record the facts, apply what they justify, prove it."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from syncfix import check_code
from syncfix.harness import apply_verify
from syncfix.harness.record import record
from syncfix.observed import Observations

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.cuda

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "train_from_config.py"
CONFIG = '{"device": "cuda", "data": "synthetic", "batch_size": 256, "dim": 256, "epochs": 1}'


@pytest.fixture
def script(tmp_path: Path) -> Path:
    if not torch.cuda.is_available():
        pytest.skip("needs CUDA")
    path = tmp_path / "train.py"
    shutil.copy(EXAMPLE, path)
    return path


def test_recorded_facts_make_the_batch_copies_observed_fixes(script, tmp_path):
    from syncfix import observable_needs

    needs = observable_needs([str(script)])
    obs = record(str(script), ["--config", CONFIG], needs, root=str(tmp_path))
    assert obs.meta["cuda"] is True
    again = Observations.load(str(tmp_path / ".syncfix" / "observed.json"))
    found = check_code(script.read_text(), path=str(script), observations=again)
    observed = [f for f in found if f.fix and f.fix.applicability.value == "observed"]
    assert sorted(f.line for f in observed) == [46, 47]


def test_apply_verify_writes_verified_fixes_and_syncs_go_down(script, tmp_path):
    # unsafe fixes too: SFX302's float64 total on a device the config names (it may be MPS,
    # which has no float64) is one, and the run verifies it
    outcome = apply_verify.run(
        [str(script)], str(script), ["--config", CONFIG], {"select": ["SFX"], "unsafe_fixes": True},
        root=str(tmp_path),
    )
    assert not outcome.dropped
    tiers = sorted(c.tier for c in outcome.kept)
    assert tiers == ["observed", "observed", "unsafe"], apply_verify.summary_line(outcome)
    assert outcome.syncs_before is not None and outcome.syncs_after is not None
    assert outcome.syncs_after < outcome.syncs_before
    text = script.read_text()
    assert text.count("non_blocking=True") == 2 and "running_acc" in text
