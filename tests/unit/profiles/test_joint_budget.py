"""One exact budget over MLP and attention width (`tlmsearch.profiles.joint_budget`).

Property: every sampled joint architecture (per-layer query and key/value heads, any MLP shape)
that the solver accepts has exactly the non-embedding parameters of the budget's uniform model,
with MLP widths that obey the budget's rules; 10,000 samples per preset (tiny, cpu-xs) and
family (marked slow; 200 in the development loop), counted analytically (`count_params`,
itself checked against built models with per-layer heads in test_heads.py), plus a few built
models counted by torch. Heads the MLPs cannot balance are refused in one line, and a brute
force shows that no widths could have balanced them.
"""

from __future__ import annotations

import itertools
import math
import random
from collections.abc import Callable

import pytest
import torch
from random_shapes import random_shape

from tlmsearch.configs.presets import preset
from tlmsearch.core.base import ModelConfig
from tlmsearch.errors import ConfigError
from tlmsearch.models import build_model, count_params
from tlmsearch.profiles import Budget, profile, project_to_budget, relative_widths
from tlmsearch.profiles.budget import project_to_total
from tlmsearch.profiles.joint_budget import attention_delta, is_feasible, joint_config, mlp_step, mlp_units

SAMPLES = 10_000
FAMILIES = {
    "transformer": {},
    "gated_attention": {},
    "titans": {},
    "hope_attention": {},
}
VARIANTS = {  # options whose attention terms differ: fewer samples
    "gated_attention/headwise": ("gated_attention", {"gate": "headwise"}),
    "titans/mal": ("titans", {"titans_variant": "mal"}),
}

Pair = tuple[int, int]


def _divisors(h: int) -> list[int]:
    return [g for g in range(1, h + 1) if h % g == 0]


class Sampler:
    """Random joint architectures of one budget that the MLPs can balance: every layer draws
    (H, G) with H in [1, 2 n_heads] and G dividing H, and one random layer is then redrawn among
    the pairs that make the whole feasible (the per-layer parameter changes add up)."""

    def __init__(self, uniform: ModelConfig, budget: Budget, seed: int) -> None:
        self.uniform, self.budget, self.rng = uniform, budget, random.Random(seed)
        self.pairs: list[Pair] = [(h, g) for h in range(1, 2 * uniform.n_heads + 1) for g in _divisors(h)]
        n, layers = uniform.n_heads, uniform.n_layers
        # the parameter change of one layer at (H, G), the others uniform
        self.delta = {
            p: attention_delta(uniform, (p[0],) + (n,) * (layers - 1), (p[1],) + (n,) * (layers - 1))
            for p in self.pairs
        }
        self.step = mlp_step(uniform, budget)

    def units(self, delta: int) -> int | None:
        b = self.budget
        if delta % self.step:
            return None
        units = b.total - delta // (3 * self.uniform.d_model)
        return units if b.n_layers * b.lo <= units <= b.n_layers * b.hi else None

    def heads(self) -> tuple[list[Pair], int]:
        layers = self.uniform.n_layers
        while True:
            pairs = [self.rng.choice(self.pairs) for _ in range(layers)]
            r = self.rng.randrange(layers)
            rest = sum(self.delta[p] for i, p in enumerate(pairs) if i != r)
            ok = [p for p in self.pairs if self.units(rest + self.delta[p]) is not None]
            if ok:
                pairs[r] = self.rng.choice(ok)
                units = self.units(rest + self.delta[pairs[r]])
                assert units is not None
                return pairs, units

    def shape(self) -> list[float]:
        return random_shape(self.rng, self.uniform.n_layers)


def _check_samples(uniform: ModelConfig, budget: Budget, n: int, seed: int, build: int = 2) -> None:
    target = count_params(uniform).non_embedding
    sampler = Sampler(uniform, budget, seed)
    moved = grouped = 0
    seen: set[tuple[Pair, ...]] = set()
    for i in range(n):
        pairs, units = sampler.heads()
        cfg = joint_config(uniform, budget, sampler.shape(), [h for h, _ in pairs], [g for _, g in pairs])
        assert count_params(cfg).non_embedding == target, (pairs, cfg.mlp_widths)
        assert [(cfg.query_heads(layer), cfg.key_value_heads(layer)) for layer in range(cfg.n_layers)] == pairs
        assert budget.is_valid(cfg.mlp_widths, units), (pairs, cfg.mlp_widths, units)
        moved += not cfg.uniform_attention
        grouped += any(g < h for h, g in pairs)
        seen.add(tuple(pairs))
        if i < build:  # counted by torch: the built model's non-embedding parameters
            model = build_model(cfg, seed=0)
            built = sum(p.numel() for p in model.parameters()) - count_params(cfg).embedding
            assert built == target, pairs
    # the samples explore: where the feasible heads are few (tiny) every one of them is reached;
    # otherwise thousands of distinct ones, most moving attention, many grouping keys/values
    if len(sampler.pairs) ** uniform.n_layers <= 4096:
        every = itertools.product(sampler.pairs, repeat=uniform.n_layers)
        assert seen == {c for c in every if sampler.units(sum(sampler.delta[p] for p in c)) is not None}
    else:
        assert len(seen) > 0.2 * n and moved > 0.9 * n and grouped > 0.3 * n, (len(seen), moved, grouped)


# the acceptance's 10,000 per preset and family take about 40 s on one core: `slow` (CI); the
# development loop checks the first 200 of the same samples
@pytest.mark.parametrize("n", [200, pytest.param(SAMPLES, marks=pytest.mark.slow)])
@pytest.mark.parametrize("preset_name", ["tiny", "cpu-xs"])
@pytest.mark.parametrize("arch", list(FAMILIES))
def test_every_sampled_joint_architecture_has_the_uniform_parameters(preset_name: str, arch: str, n: int) -> None:
    p = preset(preset_name)
    _check_samples(p.model_config(arch, options=FAMILIES[arch]), p.budget(), n, seed=list(FAMILIES).index(arch))


@pytest.mark.parametrize("preset_name", ["tiny", "cpu-xs"])
@pytest.mark.parametrize("variant", list(VARIANTS))
def test_option_variants_too(preset_name: str, variant: str) -> None:
    arch, options = VARIANTS[variant]
    p = preset(preset_name)
    _check_samples(p.model_config(arch, options=options), p.budget(), 1_000, seed=7, build=1)


@pytest.mark.slow
def test_a_bounded_budget_keeps_its_bounds() -> None:
    p = preset("cpu-xs")
    budget = p.budget(min_width=96, max_width=320)
    _check_samples(p.model_config("transformer"), budget, 1_000, seed=3, build=0)


def test_the_built_model_is_a_real_check() -> None:
    """A model whose widths miss the solved total by one step is caught by both counts."""
    p = preset("tiny")
    uniform = p.model_config("transformer")
    cfg = joint_config(uniform, p.budget(), [1, 1], (3, 1), (3, 1))
    off = cfg.replace(mlp_widths=(cfg.mlp_widths[0] + 8, cfg.mlp_widths[1]))
    built = sum(x.numel() for x in build_model(off, seed=0).parameters()) - count_params(off).embedding
    assert built != count_params(uniform).non_embedding != count_params(off).non_embedding


# ----------------------------------------------------------------------------- named points


@pytest.mark.parametrize("arch", list(FAMILIES))
def test_uniform_cosine_and_attention_tapered_points(arch: str) -> None:
    p = preset("cpu-xs")
    budget, uniform = p.budget(), p.model_config(arch)
    target = count_params(uniform).non_embedding
    # uniform: the same model
    assert joint_config(uniform, budget, [1.0] * 6, ()) == uniform
    # TLM's MLP-only cosine 1.5 -> 0.5: today's profile, heads untouched
    cosine = joint_config(uniform, budget, relative_widths("cosine", 6, start=1.5, end=0.5), ())
    assert cosine == p.model_config(arch, profile("cosine", budget, start=1.5, end=0.5))
    # attention tapered with depth (as many query heads in all, keys/values grouped in pairs),
    # the MLPs uniform in shape and holding what the grouping frees
    tapered = joint_config(uniform, budget, [1.0] * 6, (6, 6, 4, 4, 2, 2), (3, 3, 2, 2, 1, 1))
    assert [tapered.query_heads(i) for i in range(6)] == [6, 6, 4, 4, 2, 2]
    assert sum(tapered.mlp_widths) > budget.total and len(set(tapered.mlp_widths)) <= 2
    for cfg in (cosine, tapered):
        assert count_params(cfg).non_embedding == target


# ----------------------------------------------------------------------------- refusals


def _first(sampler: Sampler, accept: Callable[[int], bool]) -> Pair:
    return next(p for p in sampler.pairs if accept(sampler.delta[p]))


@pytest.mark.parametrize("arch", list(FAMILIES))
def test_heads_no_widths_can_balance_are_refused_in_one_line(arch: str) -> None:
    p = preset("tiny")
    budget, uniform = p.budget(), p.model_config(arch)
    sampler = Sampler(uniform, budget, 0)
    bad = _first(sampler, lambda d: d % sampler.step != 0)
    heads, kv = (bad[0], 2), (bad[1], 2)
    assert not is_feasible(uniform, budget, heads, kv) and mlp_units(uniform, budget, heads, kv) is None
    with pytest.raises(ConfigError, match=r"^[^\n]*not a multiple of 3 x d_model x multiple_of[^\n]*$"):
        joint_config(uniform, budget, [1, 1], heads, kv)
    # brute force: no MLP total of the budget's multiples gives the uniform model's parameters
    target = count_params(uniform).non_embedding
    for total in range(2 * budget.lo, 4 * budget.total, budget.multiple_of):
        widths = (budget.lo, total - budget.lo)
        cfg = uniform.replace(attn_heads=heads, kv_heads=kv, mlp_widths=widths)
        assert count_params(cfg).non_embedding != target


def test_heads_the_budget_widths_cannot_hold_are_refused() -> None:
    p = preset("cpu-xs")  # d 64, 6 layers, 4 heads of 16, 6 x 192 MLP units in multiples of 16
    budget, uniform = p.budget(max_width=208), p.model_config("transformer")
    # 16 heads everywhere: a whole number of MLP steps, but more than all MLP units
    with pytest.raises(ConfigError, match=r"^[^\n]*leaves -384 MLP units, outside \[96, 1,248\][^\n]*$"):
        joint_config(uniform, budget, [1] * 6, (16,) * 6)
    # one head in two layers: the MLPs would need more units than 6 x 208
    with pytest.raises(ConfigError, match=r"^[^\n]*leaves 1,280 MLP units, outside \[96, 1,248\][^\n]*$"):
        joint_config(uniform, budget, [1] * 6, (1, 1, 4, 4, 4, 4))
    assert joint_config(uniform, p.budget(), [1] * 6, (1, 1, 4, 4, 4, 4)).mlp_widths == (224, 224, 208, 208, 208, 208)


def test_the_reference_must_be_the_uniform_model() -> None:
    p = preset("tiny")
    with pytest.raises(ConfigError, match="uniform model"):
        joint_config(p.model_config("transformer", (96, 32)), p.budget(), [1, 1], (2, 2))
    with pytest.raises(ConfigError, match="does not divide"):
        joint_config(p.model_config("transformer"), p.budget(), [1, 1], (3, 2), (2, 2))


# ----------------------------------------------------------------------------- projection onto a total


@pytest.mark.slow
def test_project_to_total_is_project_to_budget_at_the_budget_total() -> None:
    rng = random.Random(0)
    for _ in range(500):
        layers = rng.randint(1, 12)
        budget = Budget(layers, 32 * rng.randint(1, 12), multiple_of=32)
        raw = [math.exp(rng.uniform(-2, 2)) for _ in range(layers)]
        assert project_to_total(raw, budget, budget.total) == project_to_budget(raw, budget)
        total = 32 * rng.randint(layers, layers * budget.hi // 32)
        widths = project_to_total(raw, budget, total)
        assert budget.is_valid(widths, total)


def test_project_to_total_refuses_totals_the_budget_cannot_hold() -> None:
    budget = Budget(4, 64, multiple_of=16, max_width=128)
    for total in (8, 16 * 3, 528, 100):
        with pytest.raises(ConfigError, match=r"^[^\n]*cannot be 4 widths[^\n]*$"):
            project_to_total([1, 1, 1, 1], budget, total)


@pytest.fixture(autouse=True)
def _one_thread() -> None:
    torch.set_num_threads(1)
