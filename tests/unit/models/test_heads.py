"""Per-layer attention width: query heads and key/value heads per layer (`ModelConfig.attn_heads`,
`kv_heads`) in all four families.

- the config: validation in one line, the canonical form (defaults written out become ()),
  records without the fields read as before;
- the uniform case is today's model: parameter names and shapes, and logits recorded from the
  code before per-layer heads existed (commit bcb6c77, torch 2.13 CPU, float64);
- exact parameter counts against the built model, and each layer's projections' shapes;
- causality with per-layer heads in every family (chunk boundaries included);
- a Transformer with per-layer heads and grouped-query attention against an independent float64
  reference written from the math (plain torch ops; `transformers`' configs have one head count
  for every layer, so they cannot express this model);
- Titans' gate resampling (MAG with H_l != n_heads).
FLOPs against torch's counter are in test_flops.py.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import pytest
import torch
import torch.nn.functional as F
from arch_options import SMALL_CHUNKS, options_for

from tlmsearch.configs.presets import preset
from tlmsearch.core.base import ARCHITECTURE_NAMES, ModelConfig
from tlmsearch.errors import ConfigError
from tlmsearch.models import build_model, count_params
from tlmsearch.models.titans import gate_resampling

TINY = preset("tiny")  # d 32, 2 layers, 2 heads of 16, seq 32
WIDTHS = (96, 32)
# (attn_heads, kv_heads): more heads, fewer heads, grouped-query, multi-query
HEADS = [((3, 1), ()), ((4, 2), (2, 1)), ((1, 4), (1, 1)), ((2, 6), (2, 3))]
VARIANTS: dict[str, dict[str, object]] = {  # each family takes the fields of its own options (options_for)
    "default": SMALL_CHUNKS,
    "headwise/mal/full": {"gate": "headwise", "titans_variant": "mal", "window": 0, "mem_chunk": 8},
}


def tiny(arch: str, attn_heads: tuple[int, ...] = (), kv_heads: tuple[int, ...] = (), **kw: object) -> ModelConfig:
    kw.setdefault("options", options_for(arch, **SMALL_CHUNKS))
    return TINY.model_config(arch, WIDTHS, attn_heads=attn_heads, kv_heads=kv_heads, **kw)


@pytest.fixture(autouse=True)
def _one_thread() -> None:
    torch.set_num_threads(1)


# ----------------------------------------------------------------------------- the config


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"attn_heads": (2,)}, "attn_heads has 1 entries; it needs one per layer"),
        ({"kv_heads": (1, 1, 1)}, "kv_heads has 3 entries"),
        ({"attn_heads": (2, 0)}, "attn_heads[1]=0 must be a positive integer"),
        ({"kv_heads": (-1, 1)}, "kv_heads[0]=-1 must be a positive integer"),
        ({"attn_heads": (3, 2), "kv_heads": (2, 2)}, "kv_heads[0]=2 does not divide attn_heads[0]=3"),
        ({"kv_heads": (3, 1)}, "kv_heads[0]=3 does not divide attn_heads[0]=2"),
        ({"attn_heads": (2, 2.5)}, "attn_heads[1]: expected an integer"),
    ],
)
def test_bad_heads_are_one_line(fields: dict[str, object], message: str) -> None:
    with pytest.raises(ConfigError, match=r"^[^\n]*$") as err:
        TINY.model_config("transformer", WIDTHS, **fields)
    assert message in str(err.value)


def test_canonical_form_and_round_trip() -> None:
    plain = TINY.model_config("transformer", WIDTHS)
    spelled = TINY.model_config("transformer", WIDTHS, attn_heads=(2, 2), kv_heads=(2, 2))
    assert spelled == plain and spelled.attn_heads == () and spelled.kv_heads == ()
    assert "attn_heads" not in plain.to_dict() and "kv_heads" not in plain.to_dict()  # records as before
    only_kv = TINY.model_config("transformer", WIDTHS, attn_heads=(3, 1), kv_heads=(3, 1))
    assert only_kv.kv_heads == () and only_kv.attn_heads == (3, 1)
    moved = tiny("titans", (4, 2), (2, 1))
    assert ModelConfig.from_dict(moved.to_dict()) == moved
    assert ModelConfig.from_json(moved.to_json()) == moved
    assert [(moved.query_heads(i), moved.key_value_heads(i)) for i in range(2)] == [(4, 2), (2, 1)]
    assert not moved.uniform_attention and plain.uniform_attention


# ----------------------------------------------------------------------------- the uniform case is today's model

# recorded from the code before per-layer heads (bcb6c77): build_model(seed=3).double() on the
# tiny preset, widths (96, 32), options SMALL_CHUNKS; sum and sum of squares of the logits of
# `_golden_batch`, and the first three logits of its last position
GOLDEN = {
    "transformer": (
        41.87106883766121,
        227.7003155020814,
        (0.05479867605361078, 0.08573346520250096, -0.2109433550834038),
    ),
    "gated_attention": (
        45.537476812546984,
        228.92973251482567,
        (0.058056846411301134, 0.08567064933683355, -0.23346475354953997),
    ),
    "titans": (
        42.234250995747544,
        209.99395376396808,
        (0.21814772598480542, -0.06475914522225851, -0.14304642598601638),
    ),
    "hope_attention": (
        43.39796371008891,
        227.71046063708394,
        (0.05854172197597454, 0.09057483605207309, -0.20982998536396294),
    ),
}
GOLDEN_SHAPES: dict[str, dict[str, tuple[int, ...]]] = {  # block 0's attention projections then
    "transformer": {"attn.w_qkv.weight": (96, 32), "attn.w_o.weight": (32, 32)},
    "gated_attention": {"attn.w_qkvg.weight": (128, 32), "attn.w_o.weight": (32, 32)},
    "titans": {"w_qkv.weight": (96, 32), "w_o.weight": (32, 32), "y_norm.weight": (32,)},
    "hope_attention": {"attn.w_qkv.weight": (96, 32), "attn.w_o.weight": (32, 32)},
}


def _golden_batch() -> torch.Tensor:
    return torch.arange(64).remainder(251).view(2, 32) * 7 % 256


@pytest.mark.parametrize("arch", ARCHITECTURE_NAMES)
def test_uniform_heads_are_todays_model(arch: str) -> None:
    # block widths spelled out at d_model too, where the family builds them: still today's model
    blocks = {"block_widths": (32, 32)} if arch in ("transformer", "gated_attention") else {}
    spelled = tiny(arch, (2, 2), (2, 2), **blocks)
    assert spelled == tiny(arch)
    model = build_model(spelled, seed=3).double()
    names = dict(model.named_parameters())
    for name, shape in GOLDEN_SHAPES[arch].items():
        assert tuple(names[f"blocks.0.{name}"].shape) == shape, name
    assert not any(name.endswith("gate_map") for name, _ in model.named_buffers())  # Titans: no resampling
    with torch.no_grad():
        logits = model(_golden_batch())
    total, squares, last = GOLDEN[arch]
    assert logits.sum().item() == pytest.approx(total, rel=1e-9)
    assert logits.square().sum().item() == pytest.approx(squares, rel=1e-9)
    assert logits[1, -1, :3].tolist() == pytest.approx(list(last), rel=1e-9, abs=1e-12)


# ----------------------------------------------------------------------------- counts and shapes


def _projection_shapes(cfg: ModelConfig, model: Any, layer: int) -> tuple[int, int]:
    """(fused q/k/v outputs, W_o inputs) of block `layer` as built."""
    block = model.blocks[layer]
    attn = block if cfg.arch == "titans" else block.attn
    qkv = attn.w_qkvg if cfg.arch == "gated_attention" else attn.w_qkv
    return qkv.weight.shape[0], attn.w_o.weight.shape[1]


@pytest.mark.parametrize("arch", ARCHITECTURE_NAMES)
@pytest.mark.parametrize("variant", list(VARIANTS))
def test_param_count_and_shapes(arch: str, variant: str) -> None:
    for attn_heads, kv_heads in HEADS:
        cfg = tiny(arch, attn_heads, kv_heads, options=options_for(arch, **VARIANTS[variant]))
        model = build_model(cfg, seed=0)
        assert sum(p.numel() for p in model.parameters()) == count_params(cfg).total, (attn_heads, kv_heads)
        for layer in range(cfg.n_layers):
            h, g, d_h = cfg.query_heads(layer), cfg.key_value_heads(layer), cfg.head_dim
            gate = 0
            if arch == "gated_attention":
                gate = h * d_h if VARIANTS[variant].get("gate", "elementwise") == "elementwise" else h
            assert _projection_shapes(cfg, model, layer) == ((h + 2 * g) * d_h + gate, h * d_h)


def test_more_heads_cost_exactly_their_projections() -> None:
    """A Transformer layer with H query and G kv heads holds d (H + 2G) D + H D d attention weights."""
    base, moved = tiny("transformer"), tiny("transformer", (4, 2), (2, 1))
    d, d_h = 32, 16
    expected = sum(d * (h + 2 * g) * d_h + h * d_h * d - 4 * d * d for h, g in ((4, 2), (2, 1)))
    assert count_params(moved).total - count_params(base).total == expected


# ----------------------------------------------------------------------------- causality


@pytest.mark.parametrize("arch", ARCHITECTURE_NAMES)
@pytest.mark.parametrize("variant", list(VARIANTS))
def test_causality_with_per_layer_heads(arch: str, variant: str) -> None:
    cfg = tiny(arch, (3, 1), (1, 1), options=options_for(arch, **VARIANTS[variant]))
    model = build_model(cfg, seed=0).eval()
    idx = torch.randint(0, cfg.vocab_size, (1, cfg.seq_len), generator=torch.Generator().manual_seed(0))
    with torch.no_grad():
        base = model(idx)
        for j in (0, 3, 4, 7, 8, 9, 12, 15, 16, 20, 24, 31):  # memory chunk edges included
            changed = idx.clone()
            changed[0, j] = (changed[0, j] + 1) % cfg.vocab_size
            out = model(changed)
            torch.testing.assert_close(out[:, :j], base[:, :j], atol=1e-5, rtol=0)
            assert (out[:, j] - base[:, j]).abs().max() > 1e-4  # the test sees a change


# ----------------------------------------------------------------------------- float64 reference


def _reference_logits(cfg: ModelConfig, weights: Mapping[str, torch.Tensor], idx: torch.Tensor) -> torch.Tensor:
    """A Llama-style Transformer with per-layer heads written from the math in float64: RMSNorm
    (eps from the config), RoPE on half-split pairs, causal softmax attention where query head i
    reads key/value head floor(i G / H), W_o, SwiGLU, final norm, tied LM head. Only the weight
    layout is read from the model (fused q/k/v rows: q heads, then k heads, then v heads); RoPE's
    cos and sin tables are formed in float32, as the model's own buffers are (its one float32
    step: in float64 they would move the logits by about 1e-9)."""

    def rms(x: torch.Tensor, g: torch.Tensor) -> torch.Tensor:
        return x / torch.sqrt((x * x).mean(-1, keepdim=True) + cfg.norm_eps) * g

    t, d_h = idx.shape[1], cfg.head_dim
    freq = 1.0 / cfg.rope_theta ** (torch.arange(0, d_h, 2, dtype=torch.float32) / d_h)
    angle = torch.arange(t, dtype=torch.float32)[:, None] * freq[None, :]  # (T, D/2)
    cos, sin = torch.cos(angle).double(), torch.sin(angle).double()

    def rotate(x: torch.Tensor) -> torch.Tensor:  # (T, D)
        a, b = x[:, : d_h // 2], x[:, d_h // 2 :]
        return torch.cat((a * cos - b * sin, a * sin + b * cos), dim=1)

    mask = torch.ones(t, t, dtype=torch.bool).tril()
    out = []
    for seq in idx:
        h = weights["embed.weight"][seq]  # (T, C)
        for layer in range(cfg.n_layers):
            p = f"blocks.{layer}."
            n_q, n_kv = cfg.query_heads(layer), cfg.key_value_heads(layer)
            w = weights[p + "attn.w_qkv.weight"]
            wq, wk, wv = w[: n_q * d_h], w[n_q * d_h : (n_q + n_kv) * d_h], w[(n_q + n_kv) * d_h :]
            x = rms(h, weights[p + "attn_norm.weight"])
            heads = []
            for i in range(n_q):
                j = i * n_kv // n_q  # the key/value head this query head reads
                q = rotate(x @ wq[i * d_h : (i + 1) * d_h].T)
                k = rotate(x @ wk[j * d_h : (j + 1) * d_h].T)
                v = x @ wv[j * d_h : (j + 1) * d_h].T
                scores = (q @ k.T / math.sqrt(d_h)).masked_fill(~mask, -math.inf)
                heads.append(torch.softmax(scores, dim=-1) @ v)
            h = h + torch.cat(heads, dim=1) @ weights[p + "attn.w_o.weight"].T
            x = rms(h, weights[p + "mlp_norm.weight"])
            gate, up = x @ weights[p + "mlp.w_gate.weight"].T, x @ weights[p + "mlp.w_up.weight"].T
            h = h + (gate * torch.sigmoid(gate) * up) @ weights[p + "mlp.w_down.weight"].T
        out.append(rms(h, weights["norm.weight"]) @ weights["embed.weight"].T)
    return torch.stack(out)


@pytest.mark.parametrize(("attn_heads", "kv_heads"), HEADS)
def test_transformer_matches_float64_reference(attn_heads: tuple[int, ...], kv_heads: tuple[int, ...]) -> None:
    cfg = TINY.model_config("transformer", (40, 88), attn_heads=attn_heads, kv_heads=kv_heads, vocab_size=64)
    model = build_model(cfg, seed=1).double()
    with torch.no_grad():  # away from init: larger weights make a wrong grouping or rotation show
        for p in model.parameters():
            p.add_(0.05 * torch.randn(p.shape, generator=torch.Generator().manual_seed(p.numel()), dtype=p.dtype))
    idx = torch.randint(0, 64, (2, cfg.seq_len), generator=torch.Generator().manual_seed(2))
    with torch.no_grad():
        ours = model(idx)
        ref = _reference_logits(cfg, dict(model.named_parameters()), idx)
    assert ours.dtype == ref.dtype == torch.float64
    assert (ours - ref).abs().max().item() < 1e-10
    # the check can fail: reading kv head i mod G instead of floor(i G / H) is caught
    if cfg.key_value_heads(0) not in (1, cfg.query_heads(0)):
        swapped: dict[str, torch.Tensor] = dict(model.named_parameters())
        w = swapped["blocks.0.attn.w_qkv.weight"].clone()
        n_q, n_kv, d_h = cfg.query_heads(0), cfg.key_value_heads(0), cfg.head_dim
        k_rows = w[n_q * d_h : (n_q + n_kv) * d_h].view(n_kv, d_h, -1).flip(0).reshape(n_kv * d_h, -1)
        w[n_q * d_h : (n_q + n_kv) * d_h] = k_rows
        swapped["blocks.0.attn.w_qkv.weight"] = w
        assert (_reference_logits(cfg, swapped, idx) - ours).abs().max().item() > 1e-6


# ----------------------------------------------------------------------------- Titans' gate resampling


def test_gate_resampling() -> None:
    assert torch.equal(gate_resampling(4, 4), torch.eye(4, dtype=torch.float64))
    # 3 heads over 2 memory groups: head 1 straddles both halves
    expected = torch.tensor([[1.0, 0.0], [0.5, 0.5], [0.0, 1.0]], dtype=torch.float64)
    assert torch.equal(gate_resampling(3, 2), expected)
    assert torch.equal(gate_resampling(1, 4), torch.full((1, 4), 0.25, dtype=torch.float64))
    assert torch.equal(gate_resampling(4, 2), torch.tensor([[1.0, 0], [1, 0], [0, 1], [0, 1]], dtype=torch.float64))
    for h in range(1, 9):
        for n in range(1, 9):
            r = gate_resampling(h, n)
            torch.testing.assert_close(r.sum(1), torch.ones(h, dtype=torch.float64), atol=1e-15, rtol=0)
            assert (r.sum(0) > 0).all()  # every memory group reaches some head


def test_titans_mag_gates_every_head_with_the_memory() -> None:
    """With H_l != n_heads the memory still reaches every attention head's gate: the gradient
    of the loss reaches every memory channel (no memory head is left unread)."""
    cfg = tiny("titans", (1, 3))
    model = build_model(cfg, seed=0)
    idx = torch.randint(0, cfg.vocab_size, (2, cfg.seq_len), generator=torch.Generator().manual_seed(0))
    logits = model(idx[:, :-1])
    F.cross_entropy(logits.reshape(-1, cfg.vocab_size), idx[:, 1:].reshape(-1)).backward()
    for name, p in model.named_parameters():
        assert p.grad is not None and p.grad.abs().sum() > 0, name
        if name.endswith("memory.w_qkv.weight"):
            assert (p.grad.abs().sum(1) > 0).all(), name


@pytest.mark.parametrize("arch", ARCHITECTURE_NAMES)
def test_per_layer_heads_run_in_bfloat16(arch: str) -> None:
    """Autocast and a model converted wholesale (Titans' gate resampling buffer included) give
    finite logits near the float32 ones."""
    cfg = tiny(arch, (3, 1), (1, 1))
    model = build_model(cfg, seed=0)
    idx = torch.randint(0, cfg.vocab_size, (2, cfg.seq_len), generator=torch.Generator().manual_seed(0))
    with torch.no_grad():
        reference = model(idx)
        with torch.autocast("cpu", dtype=torch.bfloat16):
            autocast = model(idx)
        wholesale = model.to(torch.bfloat16)(idx)
    for out in (autocast, wholesale):
        assert out.dtype == torch.bfloat16 and torch.isfinite(out).all()
        assert (out.float() - reference).abs().max().item() < 0.1
