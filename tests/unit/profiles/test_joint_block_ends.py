"""`joint:mode=block` resolves as the docs say (tlmsearch/profiles/joint.py, docs/concepts.md):
the bowtie's targets start and end at d_model, and the snap to whole heads the budget balances
moves each block, the first and last included, at most SNAP_RADIUS heads from its rounded target,
up or down, so a block may be wider than d_model. Over 1,000 random profiles of the joint space's
ranges per preset and family: every one resolves, holds the uniform model's non-embedding
parameters exactly, stays within the radius of its targets, and (where the model has more than
the two end layers) some do narrow; the counts of ends moved and of blocks wider than d_model
are pinned, so a change of the snap shows here."""

from __future__ import annotations

import random

import pytest

from tlmsearch.configs.resolve import resolve_model
from tlmsearch.models import count_params
from tlmsearch.profiles import ProfileSpec
from tlmsearch.profiles.joint import block_targets
from tlmsearch.profiles.joint_budget import SNAP_RADIUS

RATIO_RANGE = (0.2, 1.0)  # search_spaces/joint.py
POSITION_RANGE = (0.1, 0.9)
# (ends moved, some block wider than d_model, narrowed) of the 1,000 profiles (seed 7)
COUNTS = {
    ("tiny", "transformer"): (0, 0, 0),  # two layers: both are ends, the bowtie has no middle
    ("tiny", "gated_attention"): (0, 0, 0),
    ("cpu-xs", "transformer"): (297, 102, 613),
    ("cpu-xs", "gated_attention"): (189, 102, 613),
    ("cpu-s", "transformer"): (625, 314, 637),
    ("cpu-s", "gated_attention"): (621, 314, 637),
}
CASES = [pytest.param(*key, marks=[pytest.mark.slow] if key[0] != "tiny" else []) for key in COUNTS]  # 2-5 s each


@pytest.mark.parametrize(("preset", "arch"), CASES)
def test_a_thousand_random_bowties_resolve_within_the_snap_radius(preset: str, arch: str) -> None:
    rng = random.Random(7)
    uniform = count_params(resolve_model(preset, arch, {}, ProfileSpec.parse("uniform"))[2]).non_embedding
    ends = wider = narrowed = 0
    for _ in range(1000):
        ratio, position = rng.uniform(*RATIO_RANGE), rng.uniform(*POSITION_RANGE)
        spec = ProfileSpec.parse(f"joint:block,ratio={ratio:.4f},position={position:.4f}")
        _, _, model = resolve_model(preset, arch, {}, spec)  # a refusal fails the test
        d, head, n = model.d_model, model.head_dim, model.n_layers
        heads = [model.block_width(layer) // head for layer in range(n)]
        targets = block_targets(n, spec.resolved().params, model.n_heads)
        assert targets[0] == targets[-1] == model.n_heads  # the bowtie starts and ends at d_model
        assert all(abs(a - max(1, int(t + 0.5))) <= SNAP_RADIUS for a, t in zip(heads, targets, strict=True))
        assert count_params(model).non_embedding == uniform, spec
        ends += heads[0] != model.n_heads or heads[-1] != model.n_heads
        wider += max(heads) * head > d
        narrowed += min(heads) * head < d
    assert (ends, wider, narrowed) == COUNTS[(preset, arch)]


def test_the_docs_say_what_the_thousand_profiles_show() -> None:
    """The pinned counts move ends and widen blocks past d_model: the family's description (the
    families table in docs/concepts.md is generated from it) and the resolver's docstring say so."""
    from pathlib import Path

    from tlmsearch.profiles import joint
    from tlmsearch.profiles.families import FAMILIES

    assert any(c[0] for c in COUNTS.values()) and any(c[1] for c in COUNTS.values())
    said = FAMILIES["joint"].description
    assert f"within {SNAP_RADIUS} heads" in said and "the ends included" in said and "wider than d_model" in said
    concepts = (Path(__file__).resolve().parents[3] / "docs" / "concepts.md").read_text()
    assert said in concepts
    doc = " ".join((joint.__doc__ or "").split())
    assert "the first and last included" in doc and "wider than d_model" in doc
