"""A Llama-style causal language model whose layers may each have their own shape, for Hugging Face
transformers (`AutoModelForCausalLM.from_pretrained(folder, trust_remote_code=True)`).

Written by tlmsearch for its `--format hf` export; standalone: it imports torch and transformers only.
It computes what tlmsearch's Transformer and Gated Attention compute, operation for operation, so
that the same weights give the same logits:

    h = embed(ids)                                              (B, T, d)
    per layer l:  x = RMSNorm(h);  h = h + W_o Attn_l(RoPE(q), RoPE(k), v)      q, k, v from one fused W_qkv
                  h = h + W_down(silu(W_gate y) * W_up y),  y = RMSNorm(h)      hidden units f_l
    logits = lm_head(RMSNorm(h))                                (B, T, V)

Per layer l (config lists, one entry a layer): MLP hidden units `intermediate_sizes[l]`, query heads
`query_heads[l]` and key/value heads `key_value_heads[l]` (grouped-query attention, head size fixed),
and optionally a block width `block_widths[l]`: block l then works on the first w_l coordinates of
a residual stream of width max(d, w_l), coordinates it does not have keep the value of the closest
earlier layer that wrote them, and the head reads the first d. `attention_gate` "elementwise" or
"headwise" multiplies each head's attention output by sigmoid(x W_g) before W_o (Gated Attention,
Qiu et al. 2025), W_g's rows appended to the fused projection `w_qkvg`. RMSNorm in at least float32,
RoPE in the half-split layout with tables of `max_position_embeddings` positions, no biases.

Padding is not modelled (causal attention over whole sequences): an attention mask with zeros is
refused. There is no key/value cache: generation recomputes the prefix.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn
from transformers import GenerationMixin, PretrainedConfig, PreTrainedModel
from transformers.modeling_outputs import CausalLMOutput

GATES = ("none", "elementwise", "headwise")


class TlmsearchConfig(PretrainedConfig):
    model_type = "tlmsearch"

    def __init__(
        self,
        vocab_size: int = 256,
        hidden_size: int = 64,
        num_hidden_layers: int = 2,
        num_attention_heads: int = 4,
        head_dim: int | None = None,
        intermediate_sizes: list[int] | None = None,
        query_heads: list[int] | None = None,
        key_value_heads: list[int] | None = None,
        block_widths: list[int] | None = None,
        attention_gate: str = "none",
        rms_norm_eps: float = 1e-6,
        rope_theta: float = 10000.0,
        max_position_embeddings: int = 256,
        initializer_range: float = 0.02,
        tie_word_embeddings: bool = True,
        **kwargs,
    ) -> None:
        n = num_hidden_layers
        self.vocab_size = vocab_size
        self.hidden_size = hidden_size
        self.num_hidden_layers = n
        self.num_attention_heads = num_attention_heads
        self.head_dim = head_dim or hidden_size // num_attention_heads
        self.intermediate_sizes = list(intermediate_sizes or [4 * hidden_size] * n)
        self.query_heads = list(query_heads or [num_attention_heads] * n)
        self.key_value_heads = list(key_value_heads or self.query_heads)
        self.block_widths = list(block_widths) if block_widths else None
        self.attention_gate = attention_gate
        self.rms_norm_eps = rms_norm_eps
        self.rope_theta = rope_theta
        self.max_position_embeddings = max_position_embeddings
        self.initializer_range = initializer_range
        for name in ("intermediate_sizes", "query_heads", "key_value_heads", "block_widths"):
            value = getattr(self, name)
            if value is not None and len(value) != n:
                raise ValueError(f"{name} has {len(value)} entries; num_hidden_layers is {n}")
        if attention_gate not in GATES:
            raise ValueError(f"attention_gate={attention_gate!r}; allowed: {', '.join(GATES)}")
        for layer, (h, g) in enumerate(zip(self.query_heads, self.key_value_heads, strict=True)):
            if g < 1 or h % g:
                raise ValueError(f"layer {layer}: key_value_heads {g} must divide query_heads {h}")
        super().__init__(**kwargs)
        self.tie_word_embeddings = tie_word_embeddings  # after: transformers 4's init sets it from kwargs (True)

    def block_width(self, layer: int) -> int:
        return self.block_widths[layer] if self.block_widths else self.hidden_size


class RMSNorm(nn.Module):
    def __init__(self, dim: int, eps: float) -> None:
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        xf = x.to(torch.promote_types(x.dtype, torch.float32))
        xf = xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + self.eps)
        return xf.type_as(x) * self.weight


def rope_tables(length: int, head_dim: int, theta: float, device: torch.device) -> tuple[torch.Tensor, torch.Tensor]:
    inv_freq = 1.0 / theta ** (torch.arange(0, head_dim, 2, device=device, dtype=torch.float32) / head_dim)
    angles = torch.outer(torch.arange(length, device=device, dtype=torch.float32), inv_freq)  # (T, D/2)
    return angles.cos(), angles.sin()


def rotate(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    t = x.shape[-2]
    cos, sin = cos[:t].to(x.dtype), sin[:t].to(x.dtype)
    x1, x2 = x.chunk(2, dim=-1)  # (B, H, T, D/2) each
    return torch.cat((x1 * cos - x2 * sin, x1 * sin + x2 * cos), dim=-1)


def heads(x: torch.Tensor, n: int) -> torch.Tensor:
    b, t, c = x.shape
    return x.view(b, t, n, c // n).transpose(1, 2)  # (B, H, T, D)


def shared(x: torch.Tensor, query_heads: int) -> torch.Tensor:
    """Key/value heads (B, G, T, D) repeated over their groups of query heads."""
    b, g, t, d = x.shape
    if g == query_heads:
        return x
    return x[:, :, None].expand(b, g, query_heads // g, t, d).reshape(b, query_heads, t, d)


def init_scales(config: TlmsearchConfig, width: int, inputs: list[nn.Linear], output: nn.Linear) -> None:
    """Mark a block's linears for `_init_weights`: those reading the block's w_l-wide input get
    std * sqrt(d / w_l), the one writing into the residual stream std / sqrt(2 L)."""
    for linear in inputs:
        linear.std_scale = math.sqrt(config.hidden_size / width)
    output.std_scale = 1 / math.sqrt(2 * config.num_hidden_layers)


class Attention(nn.Module):
    def __init__(self, config: TlmsearchConfig, layer: int) -> None:
        super().__init__()
        width = config.block_width(layer)
        self.heads, self.kv_heads = config.query_heads[layer], config.key_value_heads[layer]
        self.width = self.heads * config.head_dim
        self.kv_width = self.kv_heads * config.head_dim
        self.gate = {"none": 0, "elementwise": self.width, "headwise": self.heads}[config.attention_gate]
        # tlmsearch's names: w_qkv (Transformer), w_qkvg (Gated Attention: the gate's rows appended)
        self.proj_name = "w_qkvg" if self.gate else "w_qkv"
        self.add_module(self.proj_name, nn.Linear(width, self.width + 2 * self.kv_width + self.gate, bias=False))
        self.w_o = nn.Linear(self.width, width, bias=False)
        init_scales(config, width, [getattr(self, self.proj_name)], self.w_o)

    def forward(self, x: torch.Tensor, rope: tuple[torch.Tensor, torch.Tensor]) -> torch.Tensor:
        out = getattr(self, self.proj_name)(x)
        if self.gate:
            out, g = out.split([self.width + 2 * self.kv_width, self.gate], dim=-1)
        q, k, v = out.split([self.width, self.kv_width, self.kv_width], dim=-1)
        q = heads(q, self.heads)  # (B, H, T, D)
        k, v = (shared(heads(z, self.kv_heads), self.heads) for z in (k, v))
        y = F.scaled_dot_product_attention(rotate(q, *rope), rotate(k, *rope), v, is_causal=True)
        if self.gate:
            gate = heads(g, self.heads) if self.gate == self.width else g.transpose(1, 2).unsqueeze(-1)
            y = y * torch.sigmoid(gate)
        b, h, t, d = y.shape
        return self.w_o(y.transpose(1, 2).reshape(b, t, h * d))  # (B, T, C)


class MLP(nn.Module):
    def __init__(self, config: TlmsearchConfig, layer: int) -> None:
        super().__init__()
        dim, hidden = config.block_width(layer), config.intermediate_sizes[layer]
        self.w_gate = nn.Linear(dim, hidden, bias=False)
        self.w_up = nn.Linear(dim, hidden, bias=False)
        self.w_down = nn.Linear(hidden, dim, bias=False)
        init_scales(config, dim, [self.w_gate, self.w_up], self.w_down)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.w_down(F.silu(self.w_gate(x)) * self.w_up(x))


class Block(nn.Module):
    def __init__(self, config: TlmsearchConfig, layer: int) -> None:
        super().__init__()
        width = config.block_width(layer)
        self.attn_norm = RMSNorm(width, config.rms_norm_eps)
        self.attn = Attention(config, layer)
        self.mlp_norm = RMSNorm(width, config.rms_norm_eps)
        self.mlp = MLP(config, layer)

    def forward(self, h: torch.Tensor, rope: tuple[torch.Tensor, torch.Tensor]) -> torch.Tensor:
        h = h + self.attn(self.attn_norm(h), rope)
        return h + self.mlp(self.mlp_norm(h))


class TlmsearchPreTrainedModel(PreTrainedModel):
    config_class = TlmsearchConfig
    base_model_prefix = "model"
    _no_split_modules = ["Block"]

    def _init_weights(self, module: nn.Module) -> None:
        """tlmsearch's init: N(0, std); W_o and W_down / sqrt(2L); a block's input projections
        times sqrt(d / w_l) under per-layer block widths; norm scales 1."""
        std = self.config.initializer_range
        if isinstance(module, RMSNorm):
            nn.init.ones_(module.weight)
        elif isinstance(module, nn.Linear | nn.Embedding):
            nn.init.normal_(module.weight, mean=0.0, std=std * getattr(module, "std_scale", 1.0))


class TlmsearchModel(TlmsearchPreTrainedModel):
    def __init__(self, config: TlmsearchConfig) -> None:
        super().__init__(config)
        self.embed = nn.Embedding(config.vocab_size, config.hidden_size)
        self.blocks = nn.ModuleList([Block(config, layer) for layer in range(config.num_hidden_layers)])
        self.norm = RMSNorm(config.hidden_size, config.rms_norm_eps)
        self.post_init()

    def get_input_embeddings(self) -> nn.Embedding:
        return self.embed

    def set_input_embeddings(self, value: nn.Embedding) -> None:
        self.embed = value

    def forward(self, input_ids: torch.Tensor) -> torch.Tensor:
        config = self.config
        t = input_ids.shape[1]
        rope = rope_tables(max(config.max_position_embeddings, t), config.head_dim, config.rope_theta, input_ids.device)
        h = self.embed(input_ids)  # (B, T, d)
        if not config.block_widths:
            for block in self.blocks:
                h = block(h, rope)
            return self.norm(h)
        d, widths = config.hidden_size, config.block_widths
        stream = max(d, *widths)
        if stream > d:
            h = F.pad(h, (0, stream - d))  # coordinates no earlier layer wrote start at zero
        for block, w in zip(self.blocks, widths, strict=True):
            out = block(h[..., :w], rope)
            h = torch.cat((out, h[..., w:]), dim=-1) if w < stream else out
        return self.norm(h[..., :d])


class TlmsearchForCausalLM(TlmsearchPreTrainedModel, GenerationMixin):
    _tied_weights_keys = {"lm_head.weight": "model.embed.weight"}

    def __init__(self, config: TlmsearchConfig) -> None:
        super().__init__(config)
        self.model = TlmsearchModel(config)
        self.lm_head = nn.Linear(config.hidden_size, config.vocab_size, bias=False)
        self.post_init()

    def get_input_embeddings(self) -> nn.Embedding:
        return self.model.embed

    def set_input_embeddings(self, value: nn.Embedding) -> None:
        self.model.embed = value

    def get_output_embeddings(self) -> nn.Linear:
        return self.lm_head

    def set_output_embeddings(self, value: nn.Linear) -> None:
        self.lm_head = value

    def prepare_inputs_for_generation(self, input_ids: torch.Tensor, **kwargs) -> dict[str, torch.Tensor]:
        """generate() feeds the whole sequence at every step: there is no key/value cache to extend."""
        return {"input_ids": input_ids}

    def forward(
        self,
        input_ids: torch.Tensor,
        attention_mask: torch.Tensor | None = None,
        labels: torch.Tensor | None = None,
        num_items_in_batch: int | torch.Tensor | None = None,
        **kwargs,
    ) -> CausalLMOutput:
        """Logits (B, T, V); with `labels` (B, T) also the mean next-token cross-entropy (labels
        are shifted here, -100 ignored; summed over `num_items_in_batch` when the Trainer gives it)."""
        if attention_mask is not None and not bool(attention_mask.all()):
            raise ValueError("this model attends over whole sequences: pack them instead of padding")
        logits = self.lm_head(self.model(input_ids))
        loss = None
        if labels is not None:
            flat = logits[:, :-1].reshape(-1, logits.shape[-1]).float()
            target = labels[:, 1:].reshape(-1).to(flat.device)
            if num_items_in_batch is None:
                loss = F.cross_entropy(flat, target, ignore_index=-100)
            else:
                loss = F.cross_entropy(flat, target, ignore_index=-100, reduction="sum") / num_items_in_batch
        return CausalLMOutput(loss=loss, logits=logits)
