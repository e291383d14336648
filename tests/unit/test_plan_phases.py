"""`tlmsearch plan` prices what `search` and `verify` will run, phase by phase, from their
defaults: the search's trials, noise floor and screening length, the verification's profiles,
planned seeds (at their cap) and deciding length (`costs.phases`, the one count both use)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tlmsearch.cli import main
from tlmsearch.configs.presets import preset
from tlmsearch.configs.search import SearchConfig
from tlmsearch.core.base import DECIDE_TOKENS_PER_PARAM, SCREEN_TOKENS_PER_PARAM
from tlmsearch.costs.phases import search_phase, verify_phase
from tlmsearch.costs.plan import PlanConfig, plan
from tlmsearch.models.counts import count_params


def test_plan_defaults_are_the_commands_defaults() -> None:
    cfg, search = PlanConfig(preset="cpu-s"), SearchConfig()
    assert (cfg.trials, cfg.noise_seeds, cfg.tokens_per_param) == (search.trials, search.noise_seeds,
                                                                   search.train.tokens_per_param)  # fmt: skip
    assert cfg.tokens_per_param == SCREEN_TOKENS_PER_PARAM and cfg.verify_tokens_per_param == DECIDE_TOKENS_PER_PARAM
    assert (cfg.batch_size, cfg.grad_accum) == (search.train.batch_size, search.train.grad_accum)


@pytest.mark.parametrize("name", ["cpu-s", "170m"])
def test_each_phase_counts_the_runs_and_steps_the_commands_train(name: str) -> None:
    """By hand for cpu-s: 1.61M non-embedding parameters (the Transformer's uniform budget) at
    16 x 256 = 4,096 tokens a step: 5 tokens per parameter are ceil(5 x 1,608,...) / 4,096 steps."""
    p = plan(PlanConfig(preset=name))
    search_ph, verify_ph = p.archs[0].phases
    cfg = SearchConfig(preset=name)
    s, v = search_phase(cfg), verify_phase(cfg)
    assert (search_ph.runs, search_ph.steps) == (s.runs[1], s.steps)
    assert (verify_ph.runs, verify_ph.steps) == (v.runs[1], v.steps)
    assert search_ph.runs == 32 + 2  # 32 trials and the noise floor's 2 extra seeds of uniform
    assert verify_ph.runs == (5 + 2 + 3) * 20  # top 5, cosine, uniform, 3 controls x the seed cap
    ne = count_params(preset(name).model_config("transformer")).non_embedding
    tokens = 16 * preset(name).seq_len
    assert search_ph.steps == -(-5 * ne // tokens) and verify_ph.steps == -(-20 * ne // tokens)


def test_plan_is_within_a_quarter_of_the_search_dry_run(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                         monkeypatch: pytest.MonkeyPatch) -> None:  # fmt: skip
    """The issue's complaint: `plan` priced 300-step trials while the search screens at 5 tokens
    per parameter and verify decides at 20 (700x apart at 760m). Now the plan's search phase
    trains the tokens the search's own dry run says, and its verification what verify retrains."""
    monkeypatch.setenv("TLMSEARCH_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr("tlmsearch.training.hardware.matmul_peak", lambda device, dtype, cache_dir=None: 9e10)
    assert main(["search", "--dry-run", "--name", "d", "--runs-dir", str(tmp_path)]) == 0
    line = capsys.readouterr().err
    trials, steps, noise = (int(x.replace(",", "")) for x in re.search(
        r"search d: (\d+) trials x ([\d,]+) steps after (\d+) noise-floor runs", line).groups())  # fmt: skip
    dry_tokens = (trials + noise) * steps * 16 * 256
    assert main(["plan", "--json"]) == 0  # the plan's own defaults run
    capsys.readouterr()
    p = plan(PlanConfig(preset=SearchConfig().preset))
    search_ph, verify_ph = p.archs[0].phases
    assert abs(search_ph.tokens - dry_tokens) <= 0.25 * dry_tokens
    assert search_ph.tokens == dry_tokens  # the same count, not merely close
    from tlmsearch.configs.verify import retrain_config

    retrain, _ = retrain_config(SearchConfig(), seeds=3)
    assert verify_ph.steps == retrain.train.steps  # the deciding length verify trains
    assert verify_ph.steps == pytest.approx(4 * search_ph.steps, rel=1e-3)  # 20 / 5 tokens per parameter


def test_a_length_given_in_steps_is_the_verifys_too() -> None:
    p = plan(PlanConfig(preset="170m", steps=300))
    search_ph, verify_ph = p.archs[0].phases
    assert search_ph.steps == verify_ph.steps == 300  # verify keeps a search's length given in steps
    p = plan(PlanConfig(preset="170m", tokens_per_param=25.0))
    search_ph, verify_ph = p.archs[0].phases
    assert search_ph.steps == verify_ph.steps  # already past the deciding length: not raised
