"""Joint profiles (`joint` family, `search_spaces/joint.py`) through the one resolver.

Property: every profile the joint space samples resolves (`configs.resolve.resolve_model`) to a
model with exactly the non-embedding parameters of the budget's uniform model, whole heads and
MLP widths on the budget's rules: 10,000 samples per preset (tiny, cpu-xs) and family (marked
slow; 200 in the development loop), Titans and Hope in modes mlp and attention (they build no
block widths). None is refused. The named points resolve to the architectures they name, the
space contains them (`encode`), and what cannot be built is refused in one line.
"""

from __future__ import annotations

import math
import random
from pathlib import Path
from typing import Any

import pytest

from search_spaces import joint as space
from tlmsearch.configs.presets import shaped_preset
from tlmsearch.configs.resolve import resolve_model
from tlmsearch.errors import ConfigError
from tlmsearch.models import count_params
from tlmsearch.profiles import JOINT_POINTS, ProfileSpec, expand_profile_sets
from tlmsearch.profiles.spaces import load_space, sampled_text

FAMILIES = {  # family -> the modes it builds
    "transformer": space.MODES,
    "gated_attention": space.MODES,
    "titans": ("mlp", "attention"),
    "hope_attention": ("mlp", "attention"),
}
PRESETS = ("tiny", "cpu-xs")


class RandomTrial:
    """The part of Optuna's trial API a space uses, drawn uniformly from a seeded `random.Random`;
    `mode` only among `modes`."""

    def __init__(self, rng: random.Random, modes: tuple[str, ...]) -> None:
        self.rng, self.modes = rng, modes
        self.params: dict[str, Any] = {}

    def suggest_categorical(self, name: str, choices: Any) -> Any:
        self.params[name] = self.rng.choice([c for c in choices if name != "mode" or c in self.modes])
        return self.params[name]

    def suggest_float(self, name: str, low: float, high: float, **_: Any) -> float:
        self.params[name] = self.rng.uniform(low, high)
        return self.params[name]


class FixedTrial:
    """A trial that answers with given params (what Optuna's enqueue_trial does for a baseline)."""

    def __init__(self, params: dict[str, Any]) -> None:
        self.params = params

    def suggest_categorical(self, name: str, choices: Any) -> Any:
        assert self.params[name] in choices
        return self.params[name]

    def suggest_float(self, name: str, low: float, high: float, **_: Any) -> float:
        assert low <= self.params[name] <= high, (name, self.params[name])
        return float(self.params[name])


def _uniform_params(preset: str, arch: str) -> int:
    return count_params(resolve_model(preset, arch, {}, ProfileSpec.parse("uniform"))[2]).non_embedding


def _check_samples(preset: str, arch: str, n: int, seed: int = 0) -> None:
    rng, modes = random.Random(seed), FAMILIES[arch]
    target = _uniform_params(preset, arch)
    p = shaped_preset(preset, {}, None)
    budget = p.budget(base_width=p.base_width)
    seen = {mode: 0 for mode in modes}
    moved = 0
    for _ in range(n):
        trial = RandomTrial(rng, modes)
        spec = ProfileSpec.parse(sampled_text(load_space("joint"), trial, p.n_layers, budget, arch))
        _, widths, model = resolve_model(preset, arch, {}, spec)  # a refusal fails the test
        assert count_params(model).non_embedding == target, (spec, model)
        assert widths == model.mlp_widths and len(widths) == p.n_layers
        assert all(w % p.multiple_of == 0 and budget.lo <= w <= budget.hi for w in widths), (spec, widths)
        assert all(model.query_heads(layer) >= 1 for layer in range(p.n_layers))
        assert model.kv_heads == ()  # key/value heads follow the query heads
        seen[trial.params["mode"]] += 1
        moved += bool(model.attn_heads or model.block_widths)
    assert min(seen.values()) > n / len(modes) / 2, seen  # a balanced prior over the modes
    assert moved > n / 10  # the samples do move heads and block widths, not only the MLP


@pytest.mark.parametrize("preset", PRESETS)
@pytest.mark.parametrize("arch", FAMILIES)
def test_sampled_joint_profiles_hold_the_budget_exactly(preset: str, arch: str) -> None:
    _check_samples(preset, arch, 200)


@pytest.mark.slow
@pytest.mark.parametrize("preset", PRESETS)
@pytest.mark.parametrize("arch", FAMILIES)
def test_ten_thousand_sampled_joint_profiles_hold_the_budget_exactly(preset: str, arch: str) -> None:
    _check_samples(preset, arch, 10_000, seed=1)


@pytest.mark.parametrize("name", ["joint", "joint_flops"])
def test_told_its_family_the_space_draws_only_the_modes_that_family_builds(name: str, tmp_path: Path) -> None:
    """A search tells the joint spaces its family (`SearchSpace.draw`): Titans and Hope-attention
    get no whole-block bowtie (their trials would fail), the others all three modes; without a
    family (`tlmsearch profiles --spaces`) all three. A two-argument `sample` is called as before."""
    joint_space = load_space(name)
    assert joint_space.takes_arch
    for arch, modes in {**FAMILIES, None: space.MODES}.items():
        rng, drawn = random.Random(0), set()
        for _ in range(60):
            trial = RandomTrial(rng, space.MODES)  # offers whatever the space asks among
            sampled_text(joint_space, trial, 4, arch=arch)
            drawn.add(trial.params["mode"])
        assert drawn == set(modes), (arch, drawn)
    plain = tmp_path / "plain.py"
    plain.write_text(
        "from tlmsearch.profiles import ProfileSpec\n\ndef sample(trial, n):\n    return ProfileSpec.parse('uniform')\n"
    )
    assert not load_space(str(plain)).takes_arch
    assert sampled_text(load_space(str(plain)), None, 4, arch="titans") == "uniform"


@pytest.mark.parametrize("arch", FAMILIES)
@pytest.mark.parametrize("preset", PRESETS)
def test_mlp_mode_is_the_plain_profile_exactly(preset: str, arch: str) -> None:
    for joint, plain in (("joint:mlp,start=1.5,end=0.5", "cosine:start=1.5,end=0.5"), ("joint", "uniform")):
        assert resolve_model(preset, arch, {}, ProfileSpec.parse(joint)) == resolve_model(
            preset, arch, {}, ProfileSpec.parse(plain)
        )


@pytest.mark.parametrize("arch", ["transformer", "gated_attention"])
def test_the_bowtie_narrows_the_block_to_about_a_third_at_three_quarters_depth(arch: str) -> None:
    _, _, model = resolve_model("cpu-xs", arch, {}, ProfileSpec.parse("joint:block,ratio=0.3,position=0.75"))
    d, n = model.d_model, model.n_layers
    widths = [model.block_width(layer) for layer in range(n)]
    assert widths[0] == widths[-1] == d  # the embedding width at both ends
    narrow = min(widths)
    assert 0.2 <= narrow / d <= 0.4, widths
    assert abs(max(i for i, w in enumerate(widths) if w == narrow) / (n - 1) - 0.75) <= 0.2, widths
    assert all(model.query_heads(layer) == w // model.head_dim for layer, w in enumerate(widths))
    assert count_params(model).non_embedding == _uniform_params("cpu-xs", arch)


def test_the_attention_point_tapers_the_heads() -> None:
    _, _, model = resolve_model("cpu-xs", "transformer", {}, ProfileSpec.parse(JOINT_POINTS[3]))
    heads = [model.query_heads(layer) for layer in range(model.n_layers)]
    assert heads == sorted(heads, reverse=True) and heads[0] > model.n_heads > heads[-1], heads
    assert sum(heads) == model.n_heads * model.n_layers  # whole heads, traded between layers


def test_the_named_points_are_a_profile_set() -> None:
    assert expand_profile_sets(["joint"]) == JOINT_POINTS
    assert [str(ProfileSpec.parse(text)) for text in JOINT_POINTS] == list(JOINT_POINTS)  # canonical texts


@pytest.mark.parametrize(
    ("text", "plain"),
    [
        ("uniform", "uniform"),
        ("cosine:start=1.5,end=0.5", "cosine:start=1.5,end=0.5"),
        (JOINT_POINTS[0], "uniform"),
        (JOINT_POINTS[1], "cosine:start=1.5,end=0.5"),
        (JOINT_POINTS[2], JOINT_POINTS[2]),
        (JOINT_POINTS[3], JOINT_POINTS[3]),
    ],
)
def test_the_space_contains_uniform_cosine_and_the_bowtie(text: str, plain: str) -> None:
    point = space.encode(ProfileSpec.parse(text), 6)
    assert point is not None
    sampled = space.sample(FixedTrial(point), 6)
    assert resolve_model("cpu-xs", "transformer", {}, sampled) == resolve_model(
        "cpu-xs", "transformer", {}, ProfileSpec.parse(plain)
    )


def test_the_space_leaves_out_what_it_cannot_express() -> None:
    assert space.encode(ProfileSpec.parse("knots:k0=1,k1=2"), 6) is None
    assert space.encode(ProfileSpec.parse("joint:attention,heads_start=1.5,heads_end=1"), 6) is None  # mean != 1
    assert space.encode(ProfileSpec.parse("joint:block,start=2,ratio=0.5"), 6) is None  # MLP taper in block mode


@pytest.mark.parametrize(
    ("arch", "text", "words"),
    [
        ("titans", "joint:block,ratio=0.3", ["does not build", "transformer, gated_attention"]),
        ("hope_attention", "joint:block,ratio=0.5,position=0.5", ["does not build", "joint:attention"]),
        ("transformer", "joint:attention,heads_start=4,heads_end=4", ["cannot be balanced", "nearer 1"]),
        ("titans", "joint:attention,heads_start=0.2,heads_end=0.7", ["cannot be balanced", "nearer 1"]),
    ],
)
def test_what_cannot_be_built_is_refused_in_one_line(arch: str, text: str, words: list[str]) -> None:
    with pytest.raises(ConfigError) as info:
        resolve_model("cpu-xs", arch, {}, ProfileSpec.parse(text))
    message = str(info.value)
    assert "\n" not in message and text.split(",")[0].split(":")[0] in message
    assert all(w in message for w in words), message


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ("joint:mlp,ratio=0.3", ["mode=mlp keeps fixed", "mode=block"]),
        ("joint:block,heads_start=2", ["mode=block keeps fixed", "mode=attention"]),
        ("joint:attention,heads_start=5", ["(0, 4]"]),
        ("joint:block,ratio=1.5", ["(0, 1]"]),
        ("joint:block,position=1", ["(0, 1)"]),
        ("joint:wide", ["mlp, attention, block"]),
    ],
)
def test_bad_joint_texts_are_refused_in_one_line(text: str, words: list[str]) -> None:
    with pytest.raises(ConfigError) as info:
        ProfileSpec.parse(text)
    assert "\n" not in str(info.value) and all(w in str(info.value) for w in words), str(info.value)


def test_heads_snap_to_the_nearest_balanceable_whole_heads() -> None:
    """Brute force on preset tiny (2 layers): the resolved heads are, among all whole-head pairs
    within the snap radius that the budget balances, the nearest to the targets (ties: fewer
    heads in the earlier layers); where the rounded targets balance, they are the heads."""
    from tlmsearch.profiles.joint import head_targets
    from tlmsearch.profiles.joint_budget import SNAP_RADIUS, is_feasible

    p = shaped_preset("tiny", {}, None)
    budget = p.budget(base_width=p.base_width)
    uniform = resolve_model("tiny", "transformer", {}, ProfileSpec.parse("uniform"))[2]
    rng = random.Random(3)
    for _ in range(40):
        hs = rng.uniform(*space.HEADS_RANGE)
        spec = ProfileSpec(
            family="joint", params={"mode": "attention", "heads_start": hs, "heads_end": rng.uniform(0.5, 1.5)}
        )
        targets = head_targets(2, spec.resolved().params, uniform.n_heads)
        centres = [max(1, math.floor(t + 0.5)) for t in targets]
        near = [range(max(1, c - SNAP_RADIUS), c + SNAP_RADIUS + 1) for c in centres]
        ok = [(h0, h1) for h0 in near[0] for h1 in near[1] if is_feasible(uniform, budget, [h0, h1])]
        try:
            model = resolve_model("tiny", "transformer", {}, spec)[2]
        except ConfigError:
            assert not ok, (spec, ok)
            continue
        best = min(ok, key=lambda h: (sum(abs(a - t) for a, t in zip(h, targets, strict=True)), h))
        assert (model.query_heads(0), model.query_heads(1)) == best, (spec, targets, ok)
    _, _, cpu = resolve_model("cpu-xs", "transformer", {}, ProfileSpec.parse(JOINT_POINTS[3]))
    assert cpu.attn_heads == (6, 6, 5, 3, 2, 2)  # 4 x cosine 1.5 -> 0.5, rounded: it balances as it is


def test_verify_takes_the_joint_points_as_controls() -> None:
    from tlmsearch.cli.verify import verify_controls

    assert verify_controls(["joint"], ["uniform"]) == ("uniform", *JOINT_POINTS)
