"""Per-layer block (residual-stream) width, `ModelConfig.block_widths`: the Transformer and Gated
Attention.

- the config: validation in one line (whole heads, one per layer, families that build it), the
  canonical form (d_model everywhere is ()), heads following the width, records as before;
- the constant-width case is today's model: the same config, and the stream code run at constant
  width gives the plain loop's logits bit for bit (the golden logits recorded before per-layer
  heads and block widths are checked in test_heads.py with the widths spelled out);
- exact parameter counts against the built model for random shapes (FLOPs: test_flops.py);
- the width-aware init's rule (std * sqrt(d_model / w_l) for the matrices that read the block);
- causality with varying widths;
- a Transformer with varying widths (growing, shrinking, wider and narrower than d_model, first and
  last blocks included) and per-layer grouped-query heads against an independent float64
  reference: a plain loop over layers that keeps every earlier output and fills each block's
  input coordinate by coordinate from the closest earlier output that had it.
"""

from __future__ import annotations

import math
import random
from collections.abc import Mapping

import pytest
import torch

from tlmsearch.configs.presets import preset
from tlmsearch.core.base import ModelConfig
from tlmsearch.errors import ConfigError
from tlmsearch.models import build_model, count_params

TINY = preset("tiny")  # d 32, 2 layers, 2 heads of 16, seq 32
FAMILIES = {
    "transformer": {},
    "gated_attention": {},
    "gated_attention/headwise": {"gate": "headwise"},
}


def config(
    arch: str, block_widths: tuple[int, ...], mlp_widths: tuple[int, ...] | None = None, **kw: object
) -> ModelConfig:
    family = arch.split("/")[0]
    kw.setdefault("options", FAMILIES.get(arch, {}))
    widths = mlp_widths or tuple(32 + 16 * (i % 3) for i in range(len(block_widths)))
    return TINY.model_config(family, widths, n_layers=len(widths), block_widths=block_widths, **kw)


@pytest.fixture(autouse=True)
def _one_thread() -> None:
    torch.set_num_threads(1)


# ----------------------------------------------------------------------------- the config


@pytest.mark.parametrize(
    ("arch", "fields", "message"),
    [
        ("transformer", {"block_widths": (32,)}, "block_widths has 1 entries; it needs one per layer"),
        ("transformer", {"block_widths": (32, 40)}, "block_widths[1]=40 is not a whole number of heads of size 16"),
        ("transformer", {"block_widths": (0, 32)}, "block_widths[0]=0 must be a positive integer"),
        ("gated_attention", {"block_widths": (32, 2.5)}, "block_widths[1]: expected an integer"),
        ("titans", {"block_widths": (16, 48)}, "built by: transformer, gated_attention"),
        ("hope_attention", {"block_widths": (16, 48)}, "arch='hope_attention' has one residual width"),
        (
            "transformer",
            {"block_widths": (16, 48), "kv_heads": (2, 1)},
            "kv_heads[0]=2 does not divide attn_heads[0]=1",
        ),
    ],
)
def test_bad_block_widths_are_one_line(arch: str, fields: dict[str, object], message: str) -> None:
    with pytest.raises(ConfigError, match=r"^[^\n]*$") as err:
        TINY.model_config(arch, (96, 32), **fields)
    assert message in str(err.value)


def test_canonical_form_heads_and_round_trip() -> None:
    plain = TINY.model_config("transformer", (96, 32))
    spelled = TINY.model_config("transformer", (96, 32), block_widths=(32, 32))
    assert spelled == plain and spelled.block_widths == () and "block_widths" not in plain.to_dict()
    for arch in ("titans", "hope_attention"):  # d_model everywhere is today's model in every family
        assert TINY.model_config(arch, (96, 32), block_widths=(32, 32)) == TINY.model_config(arch, (96, 32))
    moved = TINY.model_config("gated_attention", (96, 32), block_widths=(64, 16), kv_heads=(2, 1))
    assert [moved.block_width(i) for i in range(2)] == [64, 16]
    assert [(moved.query_heads(i), moved.key_value_heads(i)) for i in range(2)] == [(4, 2), (1, 1)]
    assert not moved.uniform_attention
    assert ModelConfig.from_dict(moved.to_dict()) == moved and ModelConfig.from_json(moved.to_json()) == moved
    # heads that follow the widths are the canonical (), other heads are kept
    follow = TINY.model_config("transformer", (96, 32), block_widths=(64, 16), attn_heads=(4, 1))
    assert follow.attn_heads == () and follow == TINY.model_config("transformer", (96, 32), block_widths=(64, 16))
    own = TINY.model_config("transformer", (96, 32), block_widths=(64, 16), attn_heads=(2, 2))
    assert own.attn_heads == (2, 2) and own.query_heads(1) == 2


# ----------------------------------------------------------------------------- constant width is today's model


@pytest.mark.parametrize("arch", list(FAMILIES))
def test_constant_width_stream_is_the_plain_loop_bit_for_bit(arch: str) -> None:
    """The variable-width stream code, run with every block at d_model, gives the plain loop's
    logits exactly (both paths are the same operations), so the canonical () loses nothing."""
    cfg = config(arch, (32, 32, 32))
    assert cfg.block_widths == ()
    model = build_model(cfg, seed=3).double()
    idx = torch.randint(0, cfg.vocab_size, (2, cfg.seq_len), generator=torch.Generator().manual_seed(0))
    with torch.no_grad():
        plain = model(idx)
        h = model.embed(idx)
        object.__setattr__(model.cfg, "block_widths", (32, 32, 32))  # force the stream path, same weights
        try:
            stream = model.lm_head(model.norm(model.variable_width_blocks(h, model.rope(cfg.seq_len))))
        finally:
            object.__setattr__(model.cfg, "block_widths", ())
    assert torch.equal(plain, stream)


# ----------------------------------------------------------------------------- counts


def _random_shape(rng: random.Random) -> dict[str, object]:
    layers = rng.randint(1, 5)
    widths = tuple(16 * rng.randint(1, 6) for _ in range(layers))
    heads = tuple(rng.choice([w // 16, rng.randint(1, 5)]) for w in widths)
    kv = tuple(rng.choice([g for g in range(1, h + 1) if h % g == 0]) for h in heads)
    mlp = tuple(8 * rng.randint(1, 16) for _ in range(layers))
    return {"block_widths": widths, "attn_heads": heads, "kv_heads": kv, "mlp_widths": mlp}


@pytest.mark.parametrize("arch", list(FAMILIES))
def test_param_counts_match_the_built_model(arch: str) -> None:
    rng = random.Random(list(FAMILIES).index(arch))
    for _ in range(12):
        shape = _random_shape(rng)
        cfg = config(arch, shape.pop("block_widths"), shape.pop("mlp_widths"), **shape)  # type: ignore[arg-type]
        model = build_model(cfg, seed=0)
        counts = count_params(cfg)
        assert sum(p.numel() for p in model.parameters()) == counts.total, cfg
        mlp = sum(p.numel() for n, p in model.named_parameters() if ".mlp." in n)
        assert mlp == counts.mlp == 3 * sum(cfg.block_width(i) * f for i, f in enumerate(cfg.mlp_widths))
        for layer, block in enumerate(model.blocks):
            w = cfg.block_width(layer)
            assert block.attn_norm.weight.shape == block.mlp_norm.weight.shape == (w,)
            assert block.attn.w_o.weight.shape == (w, cfg.query_heads(layer) * cfg.head_dim)


# ----------------------------------------------------------------------------- init


@pytest.mark.parametrize("init", ["keyed", "stream"])
def test_width_aware_init(init: str) -> None:
    """Matrices reading block l's w_l-wide stream are drawn with std init_std sqrt(d / w_l); the
    others as at constant width (to 4 sampling standard deviations of the sample std)."""
    p = preset("cpu-xs")  # d 64, 6 layers, heads of 16
    widths = (128, 64, 16, 32, 64, 128)
    cfg = p.model_config("gated_attention", block_widths=widths, mlp_widths=(384,) * 6)
    model = build_model(cfg, seed=0, init=init)
    base, residual = cfg.init_std, cfg.init_std / math.sqrt(2 * cfg.n_layers)
    for layer, block in enumerate(model.blocks):
        scaled = base * math.sqrt(cfg.d_model / widths[layer])
        for weight, std in (
            (block.attn.w_qkvg.weight, scaled),
            (block.mlp.w_gate.weight, scaled),
            (block.mlp.w_up.weight, scaled),
            (block.attn.w_o.weight, residual),
            (block.mlp.w_down.weight, residual),
        ):
            tolerance = 4 / math.sqrt(2 * weight.numel())  # 4 sampling sds of a sample std
            assert weight.std().item() == pytest.approx(std, rel=tolerance), (layer, weight.shape)
    assert model.embed.weight.std().item() == pytest.approx(base, rel=0.03)
    # at constant width nothing is scaled: the same weights as a model without block widths
    same = build_model(p.model_config("gated_attention", mlp_widths=(384,) * 6), seed=0, init=init)
    wide = build_model(
        p.model_config("gated_attention", block_widths=(64,) * 6, mlp_widths=(384,) * 6), seed=0, init=init
    )
    assert all(torch.equal(a, b) for a, b in zip(same.parameters(), wide.parameters(), strict=True))


# ----------------------------------------------------------------------------- causality


@pytest.mark.parametrize("arch", list(FAMILIES))
def test_causality_with_block_widths(arch: str) -> None:
    cfg = config(arch, (64, 16, 48, 16), kv_heads=(2, 1, 3, 1))
    model = build_model(cfg, seed=0).eval()
    idx = torch.randint(0, cfg.vocab_size, (1, cfg.seq_len), generator=torch.Generator().manual_seed(0))
    with torch.no_grad():
        base = model(idx)
        for j in (0, 1, 7, 15, 16, 30, 31):
            changed = idx.clone()
            changed[0, j] = (changed[0, j] + 1) % cfg.vocab_size
            out = model(changed)
            torch.testing.assert_close(out[:, :j], base[:, :j], atol=1e-5, rtol=0)
            assert (out[:, j] - base[:, j]).abs().max() > 1e-4  # the test sees a change


# ----------------------------------------------------------------------------- float64 reference


def _reference_logits(cfg: ModelConfig, weights: Mapping[str, torch.Tensor], idx: torch.Tensor) -> torch.Tensor:
    """A Llama-style Transformer with per-layer block widths and heads, from the math in float64.
    Every layer's output is kept (the embedding is output -1, d wide); block l's input coordinate
    i is the coordinate i of the latest earlier output at least i + 1 wide, or 0 if none; the head
    reads coordinates 0..d-1 the same way after the last block. Attention: query head i reads
    key/value head floor(i G / H); RoPE tables in float32, as the model's own buffers."""

    def rms(x: torch.Tensor, g: torch.Tensor) -> torch.Tensor:
        return x / torch.sqrt((x * x).mean(-1, keepdim=True) + cfg.norm_eps) * g

    t, d_h, d = idx.shape[1], cfg.head_dim, cfg.d_model
    freq = 1.0 / cfg.rope_theta ** (torch.arange(0, d_h, 2, dtype=torch.float32) / d_h)
    angle = torch.arange(t, dtype=torch.float32)[:, None] * freq[None, :]  # (T, D/2)
    cos, sin = torch.cos(angle).double(), torch.sin(angle).double()

    def rotate(x: torch.Tensor) -> torch.Tensor:  # (T, D)
        a, b = x[:, : d_h // 2], x[:, d_h // 2 :]
        return torch.cat((a * cos - b * sin, a * sin + b * cos), dim=1)

    def gather(outputs: list[torch.Tensor], width: int) -> torch.Tensor:
        columns = []
        for i in range(width):
            earlier = [o for o in outputs if o.shape[1] > i]
            columns.append(earlier[-1][:, i] if earlier else torch.zeros(t, dtype=torch.float64))
        return torch.stack(columns, dim=1)  # (T, width)

    mask = torch.ones(t, t, dtype=torch.bool).tril()
    out = []
    for seq in idx:
        outputs = [weights["embed.weight"][seq]]  # (T, d)
        for layer in range(cfg.n_layers):
            p = f"blocks.{layer}."
            h = gather(outputs, cfg.block_width(layer))
            n_q, n_kv = cfg.query_heads(layer), cfg.key_value_heads(layer)
            w = weights[p + "attn.w_qkv.weight"]
            wq, wk, wv = w[: n_q * d_h], w[n_q * d_h : (n_q + n_kv) * d_h], w[(n_q + n_kv) * d_h :]
            x = rms(h, weights[p + "attn_norm.weight"])
            heads = []
            for i in range(n_q):
                j = i * n_kv // n_q
                q = rotate(x @ wq[i * d_h : (i + 1) * d_h].T)
                k = rotate(x @ wk[j * d_h : (j + 1) * d_h].T)
                v = x @ wv[j * d_h : (j + 1) * d_h].T
                scores = (q @ k.T / math.sqrt(d_h)).masked_fill(~mask, -math.inf)
                heads.append(torch.softmax(scores, dim=-1) @ v)
            h = h + torch.cat(heads, dim=1) @ weights[p + "attn.w_o.weight"].T
            x = rms(h, weights[p + "mlp_norm.weight"])
            gate, up = x @ weights[p + "mlp.w_gate.weight"].T, x @ weights[p + "mlp.w_up.weight"].T
            outputs.append(h + (gate * torch.sigmoid(gate) * up) @ weights[p + "mlp.w_down.weight"].T)
        out.append(rms(gather(outputs, d), weights["norm.weight"]) @ weights["embed.weight"].T)
    return torch.stack(out)


REFERENCE_CASES = {
    # grow past d, shrink below, grow back from the carried coordinates, end wider than d
    "bowtie, wide ends": ((64, 16, 48, 16, 64), (4, 1, 3, 1, 2), (2, 1, 3, 1, 1)),
    # start narrower than d (the embedding truncated), end narrower (the head completed from earlier)
    "narrow ends": ((16, 48, 32, 16), (1, 2, 2, 3), (1, 1, 2, 1)),
}


@pytest.mark.parametrize("case", list(REFERENCE_CASES))
def test_transformer_matches_float64_reference(case: str) -> None:
    widths, heads, kv = REFERENCE_CASES[case]
    mlp = tuple(24 + 8 * i for i in range(len(widths)))
    cfg = config("transformer", widths, mlp, attn_heads=heads, kv_heads=kv, vocab_size=64)
    model = build_model(cfg, seed=1).double()
    with torch.no_grad():  # away from init: larger weights make a wrong carry or rotation show
        for p in model.parameters():
            p.add_(0.05 * torch.randn(p.shape, generator=torch.Generator().manual_seed(p.numel()), dtype=p.dtype))
    idx = torch.randint(0, 64, (2, cfg.seq_len), generator=torch.Generator().manual_seed(2))
    with torch.no_grad():
        ours = model(idx)
        ref = _reference_logits(cfg, dict(model.named_parameters()), idx)
    assert ours.dtype == ref.dtype == torch.float64
    assert (ours - ref).abs().max().item() < 1e-10
    # the check can fail: zeros instead of the carried coordinates when a block grows
    zeroed = cfg.replace(block_widths=tuple(widths))
    with torch.no_grad():
        h = model.embed(idx)
        stream = max(cfg.d_model, *widths)
        h = torch.nn.functional.pad(h, (0, stream - cfg.d_model))
        for block, w in zip(model.blocks, zeroed.block_widths, strict=True):
            h = torch.nn.functional.pad(block(h[..., :w], model.rope(cfg.seq_len)), (0, stream - w))
        wrong = model.lm_head(model.norm(h[..., : cfg.d_model]))
    assert (wrong - ref).abs().max().item() > 1e-4
