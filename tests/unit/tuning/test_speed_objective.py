"""Speed objectives: measured by the micro-benchmark, never the load-noise tokens/s; the front
follows the declared objectives (no Ray started)."""

from __future__ import annotations

import pytest
from analysis_fakes import search_records

from tlmsearch.analysis.front import front_axis, pareto_data
from tlmsearch.analysis.summary import summarize
from tlmsearch.configs.resolve import trial_shape
from tlmsearch.configs.search import check_fair_objectives
from tlmsearch.core.base import DataConfig, TrainConfig
from tlmsearch.errors import ConfigError
from tlmsearch.profiles import ProfileSpec
from tlmsearch.training.trainer import resolve_vocab
from tlmsearch.tuning import SearchConfig
from tlmsearch.tuning.specs import spec_of
from tlmsearch.tuning.trainable import speed_metrics


def tiny(**changes: object) -> SearchConfig:
    base = SearchConfig(
        preset="tiny",
        model={"n_layers": 4},
        trials=8,
        train=TrainConfig(steps=30, eval_interval=10, warmup_steps=5, batch_size=2),
        data=DataConfig(corpus="pydoc"),
    )
    return base.replace(**changes)


@pytest.mark.parametrize("objective", ["train_speed", "infer_speed"])
def test_measured_speed_objectives_are_allowed(objective: str) -> None:
    cfg = tiny(objectives=("val_loss", objective))
    check_fair_objectives(cfg)  # no error
    assert cfg.modes == ["min", "max"]


def test_load_noise_tokens_per_s_is_still_refused_and_points_to_the_fair_ones() -> None:
    with pytest.raises(ConfigError, match="load noise.*train_speed or infer_speed"):
        check_fair_objectives(tiny(objectives=("val_loss", "tokens_per_s")))


def test_speed_is_measured_only_when_an_objective_asks_for_it() -> None:
    cfg = tiny()
    model = resolve_vocab(trial_shape(cfg, ProfileSpec.parse("cosine:start=1.5,end=0.5"))[2], cfg.data)
    spec = spec_of(cfg, {"profile": "cosine:start=1.5,end=0.5"})
    assert spec.model == model and spec.reference is None  # the spec carries no reference to measure against
    assert speed_metrics(spec.train, model, spec.reference) == {}
    cfg = tiny(objectives=("val_loss", "train_speed"))
    spec = spec_of(cfg, {"profile": "cosine:start=1.5,end=0.5"})
    assert spec.reference == resolve_vocab(trial_shape(cfg, ProfileSpec.parse("uniform"))[2], cfg.data)
    got = speed_metrics(spec.train, model, spec.reference)
    assert got["train_speed_lo"] <= got["train_speed"] <= got["train_speed_hi"]
    assert {"infer_speed", "train_bench_tokens_per_s", "infer_bench_tokens_per_s"} <= set(got)


def test_front_only_with_two_objectives_or_a_budget_sweep() -> None:
    recs = search_records()  # one budget: every trial has the same parameter count
    assert front_axis(recs, ("val_loss",)) is None
    assert front_axis(recs, ("val_loss", "train_speed")) == "train_speed"
    assert front_axis(recs, ("val_loss", "params")) == "params_total"
    assert pareto_data(recs, x="train_speed").x_maximize
    s = summarize(recs, {"objectives": ["val_loss"]})
    assert s["pareto_x"] is None and s["pareto_front"] == []
