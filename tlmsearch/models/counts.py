"""Exact parameter counts and training FLOPs per token, for every family (no torch).

The shared chassis is counted here; each architecture adds its own block terms through its
`ArchSpec` (`<name>_spec.py`, registered in `tlmsearch.core.architectures`). A test builds every
family and compares the parameters, and another runs `torch.utils.flop_counter.FlopCounterMode` over a training step.

Parameters
- `mlp`: the tapered MLP hidden units' parameters, `3 * d * sum(mlp_widths)` (SwiGLU; with block
  widths `3 * sum(w_l * f_l)`). For
  Hope-attention the CMS levels of a layer split `f_l` exactly, so the same formula holds.
- `embedding`: the token embedding, plus the LM head when it is not tied.
- `non_embedding = total - embedding` (Kaplan et al. 2020 convention).

    total = Σ_l (block_params(l) + 3 w_l f_l) + d (final norm) + embedding

Attention (`attention_params`, `qkv_width`, `attention_width`): layer l has H_l query heads and
G_l key/value heads of head size D = d / n_heads (`ModelConfig.query_heads`, `key_value_heads`;
both n_heads by default), so its fused q/k/v projection is d -> (H_l + 2 G_l) D and its output
projection W_o is H_l D -> d: `d (H_l + 2 G_l) D + H_l D d` parameters (4 d² when uniform). Every
family's spec counts its attention through these, plus what its attention adds (gates, norms).

Block width (`ModelConfig.block_widths`, the Transformer and Gated Attention): block l reads and
writes w_l = `cfg.block_width(l)` residual coordinates (d by default), so every d above that
belongs to block l becomes w_l: its norms hold w_l each, its q/k/v projection is w_l -> (H_l +
2 G_l) D, W_o is H_l D -> w_l (heads default to w_l / D), and its MLP holds `3 w_l f_l` and reads
`2 T 3 w_l f_l` FLOPs. The embedding, the final norm and the LM head stay at d; resizing the
stream between blocks (truncation, carrying coordinates forward, zeros) is slicing and
concatenation, no FLOPs and no parameters (`common.LanguageModel`). So, in general:

    mlp = 3 Σ_l w_l f_l                      (3 d Σ_l f_l at constant width)

FLOPs per token (training: forward + backward), for one sequence of T = seq_len tokens:

    forward  = Σ_l (block_flops(l) + 2 T · 3 w_l f_l) + 2 T d V     # blocks, tapered MLPs, LM head
    training = 3 · forward - Σ_l frozen_flops(l)                    # per token: / T

FLOPs are those of matrix products and convolutions, two per multiply-add, as they run in
float32 on the math attention backend (see `tlmsearch.core.architectures`). The backward of a product of two
tensors that both need a gradient costs two products of the same size, and in these models
every product has two such factors (weights, activations and the test-time-learned weights,
which depend on the weights), so backward = 2 · forward; the exception is a product with a
constant factor (Titans' fixed gate resampling with per-layer heads), whose backward is one
product: a spec names those FLOPs in `frozen_flops` and they count twice, not three times.
Not counted: elementwise work, and the extra forward pass that `options.recompute_memory`
spends on CUDA (hardware FLOPs, not model FLOPs). Attention counts every score it computes:
all T x T under a causal mask, as `scaled_dot_product_attention`'s math backend does (flash
kernels skip about half under a causal mask; the PaLM convention counts them all too).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, NamedTuple

from tlmsearch.core.architectures import architecture

if TYPE_CHECKING:  # pragma: no cover
    from tlmsearch.core.base import ModelConfig

BACKWARD_FACTOR = 2  # backward FLOPs per forward FLOP (see the module docstring)
# `recompute_memory` of the families with test-time-learning scans (`common.run_scan`): recompute the
# scan during backward instead of keeping every chunk's weights ("auto": on CUDA only)
RECOMPUTE_MODES: tuple[str, ...] = ("auto", "always", "never")


class ParamCounts(NamedTuple):
    total: int
    non_embedding: int
    mlp: int
    embedding: int

    def metrics(self) -> dict[str, float]:
        """The counts every trial reports and records (params_total, params_non_embedding, params_mlp)."""
        return {"params_total": float(self.total), "params_non_embedding": float(self.non_embedding),
                "params_mlp": float(self.mlp)}  # fmt: skip


def block_width(cfg: ModelConfig, layer: int) -> int:
    """w_l: the residual width block `layer` reads and writes (d_model unless `block_widths`)."""
    return cfg.block_width(layer)


def mlp_params(cfg: ModelConfig) -> int:
    """Parameters of the tapered MLPs: 3 Σ_l w_l f_l (SwiGLU; 3 d Σ_l f_l at constant width)."""
    return 3 * sum(block_width(cfg, layer) * f for layer, f in enumerate(cfg.mlp_widths))


def attention_width(cfg: ModelConfig, layer: int) -> int:
    """H_l D: the width of layer `layer`'s attention output (what W_o reads)."""
    return cfg.query_heads(layer) * cfg.head_dim


def qkv_width(cfg: ModelConfig, layer: int) -> int:
    """(H_l + 2 G_l) D: the outputs of layer `layer`'s fused q/k/v projection."""
    return (cfg.query_heads(layer) + 2 * cfg.key_value_heads(layer)) * cfg.head_dim


def attention_params(cfg: ModelConfig, layer: int) -> int:
    """Parameters of layer `layer`'s attention projections: q/k/v (w_l -> (H_l + 2 G_l) D) and W_o
    (H_l D -> w_l), w_l its block width; 4 d² with uniform heads and width. Norms and gates are
    the family's own terms."""
    return block_width(cfg, layer) * (qkv_width(cfg, layer) + attention_width(cfg, layer))


def count_params(cfg: ModelConfig) -> ParamCounts:
    """Exact parameter counts of `build_model(cfg)`."""
    spec = architecture(cfg.arch)
    d, v = cfg.d_model, cfg.vocab_size
    mlp = mlp_params(cfg)
    blocks = sum(spec.block_params(cfg, layer) for layer in range(cfg.n_layers)) + mlp
    embedding = v * d * (1 if cfg.tie_embeddings else 2)
    non_embedding = blocks + d  # + final norm
    return ParamCounts(total=non_embedding + embedding, non_embedding=non_embedding, mlp=mlp, embedding=embedding)


def forward_flops(cfg: ModelConfig) -> float:
    """Forward FLOPs of one sequence of `seq_len` tokens (formula in the module docstring)."""
    spec = architecture(cfg.arch)
    t, d = cfg.seq_len, cfg.d_model
    blocks = sum(
        spec.block_flops(cfg, layer) + 2 * t * 3 * block_width(cfg, layer) * f for layer, f in enumerate(cfg.mlp_widths)
    )
    return float(blocks + 2 * t * d * cfg.vocab_size)


def flops_per_token(cfg: ModelConfig) -> float:
    """Training FLOPs per token (forward + backward); formula in the module docstring."""
    spec = architecture(cfg.arch)
    frozen = sum(spec.frozen_flops(cfg, layer) for layer in range(cfg.n_layers))
    return ((1 + BACKWARD_FACTOR) * forward_flops(cfg) - frozen) / cfg.seq_len
