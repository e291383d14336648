"""Alpha spent once on the path issue 46 names: `verify --max-seeds 40` on a verification that a
pilot planned and that has finished (`--seeds auto`, the default, as a study's is). Asking for more
seeds at the same alpha is refused in one line before anything trains, verify.json left as it was;
at a higher `--alpha` the extension is a new stage of one history that reuses every finished run
and trains only seeds beyond the recorded ones. Training is faked at `run_fixed` (records of known
losses appended to trials.jsonl as a real run appends them); no Ray."""

from __future__ import annotations

import json
import math
import statistics
from pathlib import Path
from typing import Any

import pytest
from analysis_fakes import search_records, write_run
from verify_fakes import FakeRuns, seeded_loss

from tlmsearch.cli import main
from tlmsearch.errors import ConfigError
from tlmsearch.rundir.layout import VERIFY
from tlmsearch.tuning.verify import verify

STEPS = 40
EQUAL = 2.25  # every profile's true loss: no candidate is better than cosine, none shown within the margin at 3


def equal_runs() -> FakeRuns:
    """Every profile as good as cosine (2.25 nats), with a seed offset shared by a seed's profiles and
    a profile's own noise (sd 0.01 nats: 3 seeds decide nothing at a 1 % margin and the pilot plans
    many)."""
    return FakeRuns(seeded_loss(lambda spec: EQUAL, 0.01))


@pytest.fixture
def finished(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, FakeRuns, dict[str, Any]]:
    """A search run whose planned verification finished at --max-seeds 6 (pilot 1-3, fresh 4-6)."""
    run = write_run(tmp_path / "run", search_records())
    fake = equal_runs()
    monkeypatch.setattr("tlmsearch.tuning.verify.run_fixed", fake)
    verify(run, top_k=1, steps=STEPS, max_seeds=6, progress=False)
    doc = json.loads((run / VERIFY).read_text())
    assert doc["complete"] and doc["pilot_seeds"] == [1, 2, 3] and doc["decision_seeds"] == [4, 5, 6]
    assert doc["plan"]["capped"], doc["plan"]  # the pilot wanted more seeds than the cap allowed
    trained = len(fake.trained)
    (v,) = verify(run, top_k=1, steps=STEPS, max_seeds=6, progress=False).verdicts  # the same request: read back
    assert v.outcome == "inconclusive" and len(fake.trained) == trained
    return run, fake, doc


def test_more_max_seeds_at_the_same_alpha_is_refused_before_anything_trains(
    finished: tuple[Path, FakeRuns, dict[str, Any]], capsys: pytest.CaptureFixture[str]
) -> None:
    run, fake, doc = finished
    before, records = list(fake.trained), (run / "trials.jsonl").read_text()
    with pytest.raises(ConfigError, match="would spend it twice") as err:
        verify(run, top_k=1, steps=STEPS, max_seeds=40, progress=False)
    assert "\n" not in str(err.value) and "seeds 4..6" in str(err.value) and "--alpha 0.1" in str(err.value)
    argv = ["verify", str(run), "--top-k", "1", "--steps", str(STEPS), "--max-seeds", "40", "--no-report"]
    assert main(argv) == 2
    lines = [line for line in capsys.readouterr().err.splitlines() if line.strip()]
    assert len(lines) == 1 and "would spend it twice" in lines[0], lines
    assert fake.trained == before and (run / "trials.jsonl").read_text() == records  # nothing trained
    assert json.loads((run / VERIFY).read_text()) == doc  # verify.json as it was


def test_more_max_seeds_at_a_higher_alpha_is_a_new_stage(finished: tuple[Path, FakeRuns, dict[str, Any]]) -> None:
    run, fake, _ = finished
    before = list(fake.trained)
    result = verify(run, top_k=1, steps=STEPS, max_seeds=40, alpha=0.1, progress=False)
    seq = json.loads((run / VERIFY).read_text())["sequential"]
    assert seq["design"]["stages"] == [{"end": 3, "alpha": 0.05, "spending": "obf"}]  # seeds 4-6 at 0.05
    assert seq["design"]["looks"][0] == 3 and seq["seeds"][:3] == [4, 5, 6]
    assert "the whole history spends alpha 0.1" in seq["extension"]
    new = fake.trained[len(before) :]
    assert new and all(seed > 6 for _, seed in new)  # the pilot and seeds 4-6 were reused, not retrained
    assert seq["looks_taken"] == 2 and math.isclose(seq["alpha_spent"], 0.1)
    (v,) = result.verdicts
    assert "the whole history" in v.headline


def test_a_chosen_reference_plans_the_seeds_from_its_own_pairs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`verify --reference X --seeds auto`: the pilot's spread that plans the seeds is the spread of
    the candidates' gains over X (what the verdict tests), not over cosine. Pilot seeds 1-3, a shared
    seed offset, and own noise only for X (+0.03, -0.03, 0) and uniform (0, 0, +0.03): over cosine
    the largest sd is X's, 0.03; over X it is uniform's, sd(-0.03, +0.03, +0.03) = 0.0346."""
    ref = "knots:k0=1,k1=1.2"
    own = {ref: (0.03, -0.03, 0.0), "uniform": (0.0, 0.0, 0.03)}
    run = write_run(tmp_path / "run", search_records())
    fake = equal_runs()
    monkeypatch.setattr(
        fake,
        "loss",
        lambda spec, seed: EQUAL + 0.05 * seed + (own.get(spec, (0.0,) * 3)[seed - 1] if seed <= 3 else 0.0),
    )
    monkeypatch.setattr("tlmsearch.tuning.verify.run_fixed", fake)
    verify(run, top_k=1, steps=STEPS, max_seeds=6, reference=ref, progress=False)
    doc = json.loads((run / VERIFY).read_text())
    assert doc["reference"] == ref and doc["pilot_seeds"] == [1, 2, 3]
    assert doc["plan"]["sd"] == pytest.approx(statistics.stdev([-0.03, 0.03, 0.03]), abs=1e-9)  # not 0.03
