"""Counts of Hope-attention (`hope_attention.py`); torch-free, see `spec.py`.

Per block: the Transformer's attention (norm, 4d² or layer l's heads, T x T scores), then K CMS levels, each with
its own norm; level widths split f_l exactly (`cms_level_widths`), so their reads are the
tapered MLP's `3 * d * f_l`. A fast level (period b with 0 < b < T) adds W_k, W_v (2d²) and its
step size, and per sequence, with n = ceil(T / b) chunks (the last one padded) and F its width:
the read of the padded tail (6dF per padded token) and, in every chunk but the last, the
SwiGLU on the chunk's keys (6bdF) and the closed-form step of all three matrices (8bdF). The
last chunk's step would never be read, so it is not computed (nor counted).
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING

from tlmsearch.core.architectures import ArchSpec, chunks, linear_flops
from tlmsearch.core.base import ArchOptions, check_choice, check_field_types, check_positive
from tlmsearch.errors import ConfigError
from tlmsearch.models.counts import RECOMPUTE_MODES, attention_params
from tlmsearch.models.transformer_spec import attention_mixer_flops

if TYPE_CHECKING:  # pragma: no cover
    from tlmsearch.core.base import ModelConfig


@dataclasses.dataclass(frozen=True, kw_only=True)
class HopeAttentionOptions(ArchOptions):
    """Options of hope_attention: its Continuum Memory System (CMS)."""

    cms_levels: int = 2  # number of CMS levels, fastest first
    cms_periods: tuple[int, ...] = (16, 0)  # update period per level in tokens; 0 = never
    cms_shares: tuple[float, ...] = ()  # share of f_l per level; () = equal
    cms_max_grad_norm: float = 1.0  # clip each token's fast-level gradient norm; 0 = off
    # fast-level keys RMS-normalised, values L2-normalised, and each token's gradient divided by
    # 1 + its Gauss-Newton curvature (normalised-LMS step) [OURS]
    cms_normalized_update: bool = True
    # recompute the fast levels' scans during backward instead of keeping every chunk's weights
    # ("auto": on CUDA only; saves most activation memory at GPU scale)
    recompute_memory: str = "auto"

    def __post_init__(self) -> None:
        check_field_types(self, "options.")
        check_positive("options.cms_levels", self.cms_levels)
        check_positive("options.cms_max_grad_norm", self.cms_max_grad_norm, allow_zero=True)
        check_choice("options.recompute_memory", self.recompute_memory, RECOMPUTE_MODES)
        if len(self.cms_periods) != self.cms_levels:
            raise ConfigError(
                f"options.cms_periods has {len(self.cms_periods)} entries; "
                f"it needs one per level (cms_levels={self.cms_levels})"
            )
        if any(p < 0 for p in self.cms_periods):
            raise ConfigError(f"options.cms_periods={self.cms_periods} must be >= 0 (0 = never updates)")
        if self.cms_shares:
            if len(self.cms_shares) != self.cms_levels or any(s <= 0 for s in self.cms_shares):
                raise ConfigError(
                    f"options.cms_shares={self.cms_shares} needs {self.cms_levels} positive entries (or none)"
                )
            if abs(sum(self.cms_shares) - 1.0) > 1e-6:
                raise ConfigError(f"options.cms_shares={self.cms_shares} must sum to 1")


def cms_level_widths(width: int, shares: tuple[float, ...], levels: int) -> tuple[int, ...]:
    """Split a layer's MLP width `width` over `levels` CMS levels, summing exactly to `width`.

    Shares default to equal; rounding uses the largest-remainder method, and every level keeps
    at least one unit (so `width >= levels` is required).
    """
    if width < levels:
        raise ValueError(f"mlp width {width} is smaller than the number of CMS levels {levels}")
    shares = shares or tuple(1.0 / levels for _ in range(levels))
    raw = [width * s for s in shares]
    out = [max(1, int(r)) for r in raw]
    rest = width - sum(out)
    order = sorted(range(levels), key=lambda i: (-(raw[i] - int(raw[i])), i))
    i = 0
    while rest != 0:  # hand out (or take back) units in remainder order
        j = order[i % levels]
        if rest > 0:
            out[j] += 1
            rest -= 1
        elif out[j] > 1:
            out[j] -= 1
            rest += 1
        i += 1
    return tuple(out)


def fast_levels(cfg: ModelConfig) -> tuple[bool, ...]:
    """Which CMS levels update inside a sequence: period p with 0 < p < seq_len."""
    return tuple(0 < p < cfg.seq_len for p in HopeAttentionOptions.of(cfg).cms_periods)


def block_params(cfg: ModelConfig, layer: int) -> int:
    d, o = cfg.d_model, HopeAttentionOptions.of(cfg)
    n = d + attention_params(cfg, layer)  # attention and its norm
    n += o.cms_levels * d  # one norm per level
    return n + sum(2 * d * d + 1 for fast in fast_levels(cfg) if fast)  # fast levels: W_k, W_v, step size


def block_flops(cfg: ModelConfig, layer: int) -> float:
    t, d, o = cfg.seq_len, cfg.d_model, HopeAttentionOptions.of(cfg)
    flops = attention_mixer_flops(cfg, layer)  # the Transformer's attention, layer `layer`'s heads
    widths = cms_level_widths(cfg.mlp_widths[layer], o.cms_shares, o.cms_levels)
    for width, period, fast in zip(widths, o.cms_periods, fast_levels(cfg), strict=True):
        if fast:
            n = chunks(t, period)
            flops += linear_flops(t, d, 2 * d)  # W_k, W_v
            flops += 6 * d * width * (n * period - t)  # the read of the padded tail
            flops += 14 * d * width * period * (n - 1)  # keys' forward and the step, all chunks but the last
    return flops


def validate(cfg: ModelConfig) -> None:
    levels = HopeAttentionOptions.of(cfg).cms_levels
    if min(cfg.mlp_widths) < levels:
        raise ConfigError(
            f"mlp_widths={cfg.mlp_widths}: hope_attention needs every width >= "
            f"options.cms_levels={levels} (one unit per CMS level)"
        )


SPEC: ArchSpec[ModelConfig] = ArchSpec(
    model="tlmsearch.models.hope_attention:HopeAttention",
    summary="Hope-attention: attention plus a Continuum Memory System of MLP levels updated at test time",
    block_params=block_params,
    block_flops=block_flops,
    validate=validate,
    options=HopeAttentionOptions,
)
