"""The Megatron format: Megatron Core's heterogeneous-layers JSON, and the command that trains it.

Two readers read the file (`--heterogeneous-layers-config-path`):
- Megatron Core (`megatron-core` on PyPI), `HeterogeneousTransformerConfig`: `block_configs[i]`
  `.attention.num_query_groups` (else `n_heads_in_group`) and `.ffn.ffn_hidden_size` (else
  `ffn_mult`), one block a layer; it builds each layer with its own KV groups and MLP width.
- Megatron-LM's `pretrain_gpt.py` first validates its arguments against the file
  (`megatron/training/arguments.py`, `validate_model_config_args_from_heterogeneous_config`, not
  part of the PyPI package): `hidden_act` must be "silu"; every block's `attention.n_heads_in_group`
  is read and must be one value in all layers; and these flags must equal the file's fields:
  `--num-layers` num_hidden_layers, `--hidden-size` hidden_size, `--num-attention-heads`
  num_attention_heads, `--untie-embeddings-and-output-weights` not tie_word_embeddings,
  `--rotary-base` rope_theta, `--rope-scaling-factor` rope_scaling["factor"], `--num-query-groups`
  num_attention_heads // n_heads_in_group, and `--swiglu --normalization RMSNorm
  --group-query-attention --position-embedding-type rope --rotary-percent 1.0 --use-rope-scaling
  --use-rotary-position-embeddings` must be given.

That validation demands Llama-3 RoPE scaling; tlmsearch's models have none, so the file says
factor 1.0, which leaves every frequency as it is (the low band is divided by 1, the interpolated
band mixes f/1 and f, equal up to float rounding). The printed command (`megatron_loading`) holds
every flag the validation compares plus the model's remaining shape (head size, norm epsilon, no
biases, init std, sequence length) and the trial's training settings; the data flags are
Megatron's mock data, to replace with the user's corpus. A model whose layers have different
key/value heads builds in Megatron Core, but `pretrain_gpt.py` refuses it (one n_heads_in_group),
so the export then prints the Megatron Core calls that build it instead.
"""

from __future__ import annotations

from typing import Any

ROPE_SCALING = {  # Llama 3 scaling at factor 1: the frequencies stay as they are (module doc)
    "rope_type": "llama3",
    "factor": 1.0,
    "low_freq_factor": 1.0,
    "high_freq_factor": 4.0,
    "original_max_position_embeddings": 8192,  # the value Megatron Core's RoPE uses
}


def _number(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else repr(float(value))


def megatron_doc(
    model: Any, widths: tuple[int, ...], kv_heads: list[int], source: dict[str, Any], train: dict[str, Any]
) -> dict[str, Any]:
    """The heterogeneous-layers JSON: Megatron Core's block fields and Megatron-LM's validated ones;
    tlmsearch's own section keeps the widths, the init std and the trial's training settings."""
    blocks = [
        {
            "attention": {
                "no_op": False,
                "replace_with_linear": False,
                "num_query_groups": g,  # KV heads: what Megatron Core builds
                "n_heads_in_group": model.n_heads // g,  # query heads per KV head: what Megatron-LM validates
            },
            "ffn": {"no_op": False, "replace_with_linear": False, "ffn_hidden_size": w},
        }
        for w, g in zip(widths, kv_heads, strict=True)
    ]
    return {
        "hidden_act": "silu",
        "hidden_size": model.d_model,
        "num_hidden_layers": model.n_layers,
        "num_attention_heads": model.n_heads,
        "head_dim": model.head_dim,
        "vocab_size": model.vocab_size,
        "max_position_embeddings": model.seq_len,
        "rms_norm_eps": model.norm_eps,
        "rope_theta": model.rope_theta,
        "rope_scaling": dict(ROPE_SCALING),
        "tie_word_embeddings": model.tie_embeddings,
        "block_configs": blocks,
        "tlmsearch": {**source, "mlp_widths": list(widths), "init_std": model.init_std, "train": dict(train)},
    }


def one_kv_group(doc: dict[str, Any]) -> bool:
    """Whether every block has the same n_heads_in_group (what pretrain_gpt.py accepts)."""
    return len({b["attention"]["n_heads_in_group"] for b in doc["block_configs"]}) == 1


def _train_flags(train: dict[str, Any]) -> list[str]:
    if not train:
        return []
    steps, batch = int(train["steps"]), int(train["batch_size"])
    lr = float(train["lr"])
    schedule = {"cosine": "cosine", "constant": "constant"}.get(train["schedule"], "WSD")
    if schedule == "WSD":  # warmup-stable-decay: a linear decay over the last decay_fraction of the steps
        decay = round(float(train.get("decay_fraction", 0.2)) * steps)
        schedule += f" --lr-wsd-decay-style linear --lr-wsd-decay-iters {decay}"
    return [
        f"--micro-batch-size {batch} --global-batch-size {batch * int(train.get('grad_accum', 1))}",
        f"--train-iters {steps} --lr {lr!r} --min-lr {lr * float(train['min_lr_ratio'])!r} "
        f"--lr-decay-style {schedule} --lr-warmup-iters {min(int(train['warmup_steps']), steps)}",
        f"--weight-decay {float(train['weight_decay'])!r} --adam-beta1 {float(train['betas'][0])!r} "
        f"--adam-beta2 {float(train['betas'][1])!r} --adam-eps {float(train['eps'])!r} "
        f"--clip-grad {float(train['grad_clip'])!r} --seed {int(train['seed'])}",
    ]


def megatron_loading(doc: dict[str, Any]) -> str:
    """How to train the file: the pretrain_gpt.py command (one KV group size in every layer) or the
    Megatron Core calls (per-layer KV heads); `{path}` stands for the file."""
    h, groups = doc["num_attention_heads"], doc["block_configs"][0]["attention"]["n_heads_in_group"]
    theta = _number(doc["rope_theta"])
    if not one_kv_group(doc):
        return "\n".join(
            [
                "# per-layer key/value heads: pretrain_gpt.py accepts one n_heads_in_group; Megatron Core builds it:",
                "import torch",
                "from megatron.core.models.gpt import GPTModel",
                "from megatron.core.models.gpt.heterogeneous.heterogeneous_layer_specs import "
                "get_gpt_heterogeneous_layer_spec",
                "from megatron.core.transformer.heterogeneous.heterogeneous_config import "
                "HeterogeneousTransformerConfig",
                f"config = HeterogeneousTransformerConfig(heterogeneous_layers_config_path={{path!r}}, "
                f"num_layers={doc['num_hidden_layers']}, hidden_size={doc['hidden_size']}, num_attention_heads={h}, "
                f"kv_channels={doc['head_dim']}, num_query_groups={h}, gated_linear_unit=True, "
                f"activation_func=torch.nn.functional.silu, add_bias_linear=False, normalization='RMSNorm', "
                f"layernorm_epsilon={doc['rms_norm_eps']!r})  # after Megatron's parallel_state is initialised",
                "model = GPTModel(config=config, transformer_layer_spec=get_gpt_heterogeneous_layer_spec(config, "
                f"use_te=False), vocab_size={doc['vocab_size']}, max_sequence_length={doc['max_position_embeddings']}, "
                f"position_embedding_type='rope', rotary_base={theta}, "
                f"share_embeddings_and_output_weights={doc['tie_word_embeddings']})",
            ]
        )
    lines = [
        "torchrun --nproc-per-node 1 pretrain_gpt.py",
        "--heterogeneous-layers-config-path {path}",
        f"--num-layers {doc['num_hidden_layers']} --hidden-size {doc['hidden_size']} --num-attention-heads {h} "
        f"--kv-channels {doc['head_dim']}",
        f"--group-query-attention --num-query-groups {h // groups}",
        f"--swiglu --disable-bias-linear --normalization RMSNorm --norm-epsilon {doc['rms_norm_eps']!r}",
        f"--position-embedding-type rope --use-rotary-position-embeddings --rotary-percent 1.0 --rotary-base {theta}",
        f"--use-rope-scaling --rope-scaling-factor {doc['rope_scaling']['factor']!r}",
        f"--seq-length {doc['max_position_embeddings']} --max-position-embeddings {doc['max_position_embeddings']}",
    ]
    if not doc["tie_word_embeddings"]:
        lines.append("--untie-embeddings-and-output-weights")
    if "init_std" in doc.get("tlmsearch", {}):
        lines.append(f"--init-method-std {doc['tlmsearch']['init_std']!r}")
    lines += _train_flags(doc.get("tlmsearch", {}).get("train") or {})
    lines.append(f"--mock-data --tokenizer-type NullTokenizer --vocab-size {doc['vocab_size']}")
    return " \\\n  ".join(lines) + "\n# mock data: replace the last line with your --data-path and tokenizer flags"
