"""A toy fifth architecture, written the way the checklist in `tlmsearch/models/README.md`
says, to prove that adding a family needs nothing outside its own files and one registry
line: the tests name it by its import path `tests.integration.toy_arch:SPEC` (which works in every
process, Ray's workers included) or register it as `ARCHITECTURES["toy"]`.

Block l (a token-shift mixer, no attention):

    h = h + W_mix · shift(RMSNorm(h))        shift: each position sees the previous one (zeros at 0)
    h = h + SwiGLU_l(RMSNorm(h))              the tapered MLP, hidden f_l = mlp_widths[l]

The spec's counts and the module live side by side here because this file is one test helper;
a family inside the package keeps the module in `<name>.py` and the spec (torch-free) in
`<name>_spec.py`.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from tlmsearch.core.architectures import ArchSpec, linear_flops
from tlmsearch.core.base import ModelConfig
from tlmsearch.errors import ConfigError
from tlmsearch.models.common import LanguageModel, RMSNorm, Rope, SwiGLU


class ToyBlock(nn.Module):
    def __init__(self, cfg: ModelConfig, layer_idx: int) -> None:
        super().__init__()
        self.mix_norm = RMSNorm(cfg.d_model, cfg.norm_eps)
        self.w_mix = nn.Linear(cfg.d_model, cfg.d_model, bias=False)
        self.w_mix.RESIDUAL_OUT = True  # type: ignore[assignment]
        self.mlp_norm = RMSNorm(cfg.d_model, cfg.norm_eps)
        self.mlp = SwiGLU(cfg.d_model, cfg.mlp_widths[layer_idx])

    def forward(self, h: torch.Tensor, rope: Rope) -> torch.Tensor:
        x = self.mix_norm(h)  # (B, T, C)
        shifted = F.pad(x, (0, 0, 1, 0))[:, :-1]  # (B, T, C): position t holds x[t - 1]
        h = h + self.w_mix(shifted)  # (B, T, C)
        return h + self.mlp(self.mlp_norm(h))  # (B, T, C)


class ToyLM(LanguageModel):
    block_cls = ToyBlock


def block_params(cfg: ModelConfig, layer: int) -> int:
    return 2 * cfg.d_model + cfg.d_model * cfg.d_model  # two norms and W_mix


def block_flops(cfg: ModelConfig, layer: int) -> float:
    return linear_flops(cfg.seq_len, cfg.d_model, cfg.d_model)  # W_mix


def validate(cfg: ModelConfig) -> None:
    if cfg.seq_len < 2:
        raise ConfigError(f"seq_len={cfg.seq_len}: the toy mixer shifts by one token; it needs seq_len >= 2")


SPEC: ArchSpec[ModelConfig] = ArchSpec(
    model="tests.integration.toy_arch:ToyLM",
    summary="toy token-shift mixer (tests only)",
    block_params=block_params,
    block_flops=block_flops,
    validate=validate,
)
