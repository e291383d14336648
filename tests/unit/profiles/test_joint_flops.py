"""Joint profiles held at equal training FLOPs per token (`hold=flops`, `search_spaces/joint_flops.py`).

Property: every profile the joint_flops space samples resolves (`configs.resolve.resolve_model`)
to a model whose training FLOPs per token (`models.counts.flops_per_token`, exact integers per
sequence) equal the budget's uniform model's exactly, with whole heads and MLP widths on the
budget's rules: 1,000 samples per preset (tiny, cpu-xs) and family in the development loop,
10,000 marked slow. The Transformer, Gated Attention (every mode, none refused) and Titans (mlp
and attention: its attention FLOPs are not linear in the heads, so only uniform heads balance
them, and a taper far from uniform is refused in one line); Hope-attention refuses `hold=flops`
in one line. FlopCounterMode counts the same FLOPs on built
models of the named points, and the parameters really drift where the FLOPs are held.
"""

from __future__ import annotations

import random

import pytest
import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel
from torch.utils.flop_counter import FlopCounterMode

from search_spaces import joint as params_space
from search_spaces import joint_flops as space
from tlmsearch.configs.presets import shaped_preset
from tlmsearch.configs.resolve import resolve_model
from tlmsearch.core.base import ModelConfig
from tlmsearch.errors import ConfigError
from tlmsearch.models import build_model, count_params, flops_per_token
from tlmsearch.profiles import ProfileSpec
from tlmsearch.profiles.joint_budget import held_quantity
from tlmsearch.profiles.spaces import load_space, sampled_text

FAMILIES = {  # family -> the modes it builds under hold=flops (Hope-attention: none, see below)
    "transformer": space.joint.MODES,
    "gated_attention": space.joint.MODES,
    "titans": ("mlp", "attention"),
}
PRESETS = ("tiny", "cpu-xs")
BOWTIE = "joint:block,ratio=0.3,position=0.75"
HEADS = "joint:attention,heads_start=1.5,heads_end=0.5"


class RandomTrial:
    """The part of Optuna's trial API a space uses, drawn from a seeded `random.Random`; `mode`
    only among `modes`."""

    def __init__(self, rng: random.Random, modes: tuple[str, ...]) -> None:
        self.rng, self.modes = rng, modes
        self.params: dict[str, object] = {}

    def suggest_categorical(self, name: str, choices: tuple[str, ...]) -> str:
        value = self.rng.choice([c for c in choices if name != "mode" or c in self.modes])
        self.params[name] = value
        return value

    def suggest_float(self, name: str, low: float, high: float, **_: object) -> float:
        value = self.rng.uniform(low, high)
        self.params[name] = value
        return value


def _model(preset: str, arch: str, text: str) -> ModelConfig:
    return resolve_model(preset, arch, {}, ProfileSpec.parse(text))[2]


def _check_samples(preset: str, arch: str, n: int, seed: int = 0) -> None:
    rng, modes = random.Random(seed), FAMILIES[arch]
    uniform = _model(preset, arch, "uniform")
    target, params = held_quantity(uniform, "flops"), count_params(uniform).non_embedding
    p = shaped_preset(preset, {}, None)
    budget = p.budget(base_width=p.base_width)
    moved = drifted = refused = 0
    for _ in range(n):
        trial = RandomTrial(rng, modes)
        spec = ProfileSpec.parse(sampled_text(load_space("joint_flops"), trial, p.n_layers, budget))
        assert spec.resolved().params["hold"] == "flops"
        if arch == "titans" and trial.params["mode"] == "attention":
            try:  # its attention FLOPs are not linear in the heads: uniform heads, or a one-line refusal
                _, widths, model = resolve_model(preset, arch, {}, spec)
            except ConfigError as exc:
                assert "\n" not in str(exc) and "cannot be balanced" in str(exc), str(exc)
                refused += 1
                continue
        else:
            _, widths, model = resolve_model(preset, arch, {}, spec)  # a refusal fails the test
        assert held_quantity(model, "flops") == target, (spec, model)  # exact: integer FLOPs per sequence
        assert flops_per_token(model) == flops_per_token(uniform)
        assert widths == model.mlp_widths and all(
            w % p.multiple_of == 0 and budget.lo <= w <= budget.hi for w in widths
        ), (spec, widths)
        assert all(model.query_heads(layer) >= 1 for layer in range(p.n_layers))
        moved += bool(model.attn_heads or model.block_widths)
        drifted += count_params(model).non_embedding != params
    if arch == "titans":  # its attention FLOPs are not linear in the heads: only uniform heads balance
        assert moved == 0 and refused < n / 2
    else:
        assert moved > n / 10 and refused == 0  # the samples move heads and block widths, not only the MLP
        assert drifted > n / 20 or preset == "tiny"  # at equal FLOPs a block's parameters move (cpu-xs)


@pytest.mark.parametrize("preset", PRESETS)
@pytest.mark.parametrize("arch", FAMILIES)
def test_sampled_flops_held_profiles_hold_the_flops_exactly(preset: str, arch: str) -> None:
    _check_samples(preset, arch, 200)  # the development loop; the slow test draws 10,000


@pytest.mark.slow
@pytest.mark.parametrize("preset", PRESETS)
@pytest.mark.parametrize("arch", FAMILIES)
def test_ten_thousand_sampled_flops_held_profiles_hold_the_flops_exactly(preset: str, arch: str) -> None:
    _check_samples(preset, arch, 10_000, seed=1)


def _counted_flops_per_token(cfg: ModelConfig, batch: int = 2) -> float:
    """FLOPs of one training step (forward and backward) counted by torch on the built model."""
    torch.manual_seed(0)
    model = build_model(cfg, seed=0)
    idx = torch.randint(0, cfg.vocab_size, (batch, cfg.seq_len))
    with sdpa_kernel(SDPBackend.MATH), FlopCounterMode(display=False) as counter:
        logits = model(idx)
        F.cross_entropy(logits.reshape(-1, cfg.vocab_size), idx.reshape(-1)).backward()
    return counter.get_total_flops() / (batch * cfg.seq_len)


@pytest.mark.parametrize(
    ("arch", "text", "drifts"),
    [("transformer", BOWTIE, True), ("gated_attention", BOWTIE, True), ("transformer", HEADS, False)],
)
def test_the_counter_agrees_the_flops_are_held(arch: str, text: str, drifts: bool) -> None:
    """cpu-xs at seq 32 (a quick count): the flops-held architecture and the uniform model take the
    same FLOPs per training token under FlopCounterMode. A bowtie held in parameters instead takes
    other FLOPs (so the check can fail); a head taper that keeps the total of heads holds both."""
    torch.set_num_threads(1)

    def model(t: str) -> ModelConfig:
        return resolve_model("cpu-xs", arch, {"seq_len": 32}, ProfileSpec.parse(t))[2]

    uniform, held, by_params = model("uniform"), model(text + ",hold=flops"), model(text)
    assert not held.uniform_attention
    counted = _counted_flops_per_token(held)
    assert counted == pytest.approx(_counted_flops_per_token(uniform), rel=1e-12)
    assert counted == pytest.approx(flops_per_token(held), rel=1e-12)
    assert (count_params(held).non_embedding != count_params(uniform).non_embedding) == drifts
    assert (_counted_flops_per_token(by_params) != pytest.approx(counted, rel=1e-9)) == drifts


def test_hope_attention_refuses_to_hold_flops_in_one_line() -> None:
    with pytest.raises(ConfigError) as info:
        _model("cpu-xs", "hope_attention", HEADS + ",hold=flops")
    message = str(info.value)
    assert "\n" not in message and "hold='flops'" in message and "hold='params'" in message, message


def test_hold_is_a_choice_named_in_one_line() -> None:
    with pytest.raises(ConfigError, match=r"^joint: hold='energy' is not allowed; choose one of: params, flops$"):
        ProfileSpec.parse("joint:block,hold=energy")


def test_the_flops_space_holds_uniform_cosine_and_the_flops_bowtie_only() -> None:
    for text in ("uniform", "cosine:start=1.5,end=0.5", BOWTIE + ",hold=flops"):
        point = space.encode(ProfileSpec.parse(text), 6)
        assert point is not None
        sampled = space.sample(_Fixed(point), 6)
        assert _model("cpu-xs", "transformer", str(sampled)) == _model("cpu-xs", "transformer", text)
    assert space.encode(ProfileSpec.parse(BOWTIE), 6) is None  # held in parameters: another model
    assert params_space.encode(ProfileSpec.parse(BOWTIE + ",hold=flops"), 6) is None  # and the other way round


class _Fixed:
    def __init__(self, params: dict[str, object]) -> None:
        self.params = params

    def suggest_categorical(self, name: str, choices: tuple[str, ...]) -> object:
        return self.params[name]

    def suggest_float(self, name: str, low: float, high: float, **_: object) -> object:
        return self.params[name]
