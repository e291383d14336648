"""The megatron (and nemotron-nas) export trains where Megatron trains: the printed
`pretrain_gpt.py` command passes Megatron-LM's argument validation against the file, and Megatron
Core (megatron-core from PyPI, the `megatron` extra) builds the model from the file with every
layer's MLP width and key/value groups, parameter for parameter the model tlmsearch trained.

Megatron-LM's validation is not in the PyPI package: `megatron_lm_expects` restates it as read
from Megatron-LM's source, megatron/training/arguments.py,
`validate_model_config_args_from_heterogeneous_config`, at commit d98e8a64dd (package version
0.20.0; the function is unchanged since it came in, bbe933713d, 2025-04-14): hidden_act must be
"silu", every block's attention.n_heads_in_group is read and must be one value, and the flags
below must equal the file's fields.
"""

from __future__ import annotations

import importlib.util
import json
import shlex
import socket
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from tlmsearch.core.base import ModelConfig
from tlmsearch.export.formats import FORMATS
from tlmsearch.export.schedule import export
from tlmsearch.models import count_params

MEGATRON_CORE = "0.16.1"  # the `megatron` extra's pin (pyproject.toml)
TRAIN = {
    "steps": 100, "batch_size": 8, "grad_accum": 2, "lr": 2e-3, "min_lr_ratio": 0.1, "warmup_steps": 10,
    "schedule": "cosine", "weight_decay": 0.1, "betas": [0.9, 0.95], "eps": 1e-8, "grad_clip": 1.0, "seed": 3,
}  # fmt: skip


def megatron_lm_expects(doc: dict[str, Any]) -> dict[str, Any]:
    """The argument values Megatron-LM's validation demands for heterogeneous-layers file `doc`
    (raises KeyError/AssertionError where it would)."""
    assert doc["hidden_act"] == "silu"
    groups = [b["attention"]["n_heads_in_group"] for b in doc["block_configs"]]
    groups = [g for g in groups if g is not None]
    assert all(g == groups[0] for g in groups), "num query head must be consistent across all layers"
    return {
        "swiglu": True, "normalization": "RMSNorm", "group_query_attention": True,
        "position_embedding_type": "rope", "rotary_percent": 1.0, "use_rope_scaling": True,
        "use_rotary_position_embeddings": True, "num_layers": doc["num_hidden_layers"],
        "hidden_size": doc["hidden_size"], "num_attention_heads": doc["num_attention_heads"],
        "untie_embeddings_and_output_weights": not doc["tie_word_embeddings"], "rotary_base": doc["rope_theta"],
        "rope_scaling_factor": doc["rope_scaling"]["factor"],
        "num_query_groups": doc["num_attention_heads"] // groups[0],
    }  # fmt: skip


def parse_flags(command: str) -> dict[str, Any]:
    """argparse's view of a printed command's flags: --a-b VALUE -> a_b (int, float or text), a
    flag without a value -> True; comment lines dropped."""
    words = shlex.split(" ".join(line for line in command.splitlines() if not line.startswith("#")).replace("\\", ""))
    words = words[words.index("pretrain_gpt.py") + 1 :]
    args: dict[str, Any] = {}
    for i, word in enumerate(words):
        if not word.startswith("--"):
            continue
        value: Any = True
        if i + 1 < len(words) and not words[i + 1].startswith("--"):
            value = words[i + 1]
            for kind in (int, float):
                try:
                    value = kind(value)
                    break
                except ValueError:
                    continue
        args[word[2:].replace("-", "_")] = value
    return args


def _model(kv: tuple[int, ...] = (), widths: tuple[int, ...] = (512, 256, 256, 512), **kw: Any) -> ModelConfig:
    return ModelConfig(
        arch="transformer", d_model=128, n_layers=4, n_heads=4, mlp_widths=widths, seq_len=64, kv_heads=kv, **kw
    )


@pytest.mark.parametrize("fmt", ["megatron", "nemotron-nas"])
@pytest.mark.parametrize("tied", [True, False])
def test_printed_command_passes_megatron_lms_validation_of_the_file(fmt: str, tied: bool) -> None:
    model = _model(kv=(2, 2, 2, 2), rope_theta=500000.0, tie_embeddings=tied)
    doc = json.loads(export(model, fmt).text)
    command = export(model, "megatron", train=TRAIN).loading  # the flags `--format megatron` prints
    args = parse_flags(command)
    expected = megatron_lm_expects(doc)
    wrong = {k: (args.get(k), v) for k, v in expected.items() if args.get(k, False) != v}
    assert wrong == {}
    assert args["num_query_groups"] == 2 and args["rotary_base"] == 500000 and args["kv_channels"] == 32
    assert args["heterogeneous_layers_config_path"] == "{path}" and args["disable_bias_linear"] is True
    assert args["norm_epsilon"] == 1e-6 and args["seq_length"] == 64 and args["vocab_size"] == 256
    assert args["global_batch_size"] == 16 and args["train_iters"] == 100 and args["lr_warmup_iters"] == 10
    assert args["min_lr"] == pytest.approx(2e-4) and args["seed"] == 3 and args["init_method_std"] == 0.02


def test_the_old_file_failed_that_validation() -> None:
    old = {"hidden_size": 128, "num_hidden_layers": 4, "num_attention_heads": 4, "block_configs": [
        {"attention": {"num_query_groups": 4}, "ffn": {"ffn_hidden_size": 512}}]}  # fmt: skip
    with pytest.raises(KeyError):
        megatron_lm_expects(old)


def test_per_layer_kv_heads_print_the_megatron_core_calls_instead() -> None:
    ex = export(_model(kv=(4, 2, 2, 1)), "megatron")
    doc = json.loads(ex.text)
    assert [b["attention"]["num_query_groups"] for b in doc["block_configs"]] == [4, 2, 2, 1]
    assert [b["attention"]["n_heads_in_group"] for b in doc["block_configs"]] == [1, 2, 2, 4]
    with pytest.raises(AssertionError, match="consistent"):
        megatron_lm_expects(doc)
    assert "pretrain_gpt.py" not in ex.loading.replace("pretrain_gpt.py accepts", "")
    assert "HeterogeneousTransformerConfig(heterogeneous_layers_config_path={path!r}" in ex.loading
    assert any("Megatron-LM's pretrain_gpt.py refuses them" in n for n in ex.notes)
    assert "Megatron Core" in FORMATS["megatron"].checked and "not installed" not in FORMATS["megatron"].checked


BUILD = textwrap.dedent(
    """
    import json, os, sys, warnings
    warnings.filterwarnings("ignore")
    import torch
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=sys.argv[2])
    torch.distributed.init_process_group("gloo", rank=0, world_size=1)
    from dataclasses import fields
    try:
        from megatron.core import __version__, parallel_state
    except Exception as exc:
        print(json.dumps({"import_error": f"{type(exc).__name__}: {exc}"}))
        sys.exit(0)
    from megatron.core.models.gpt import GPTModel
    from megatron.core.models.gpt.heterogeneous.heterogeneous_layer_specs import get_gpt_heterogeneous_layer_spec
    from megatron.core.transformer.heterogeneous.heterogeneous_config import (
        AttentionConfig, HeterogeneousTransformerConfig, MLPConfig)
    parallel_state.initialize_model_parallel(1, 1)
    doc = json.load(open(sys.argv[1]))
    h = doc["num_attention_heads"]
    config = HeterogeneousTransformerConfig(
        heterogeneous_layers_config_path=sys.argv[1], num_layers=doc["num_hidden_layers"],
        hidden_size=doc["hidden_size"], num_attention_heads=h, kv_channels=doc["hidden_size"] // h,
        num_query_groups=h, gated_linear_unit=True, activation_func=torch.nn.functional.silu, add_bias_linear=False,
        normalization="RMSNorm", layernorm_epsilon=doc["rms_norm_eps"], use_cpu_initialization=True,
        bias_activation_fusion=False)
    model = GPTModel(config=config, transformer_layer_spec=get_gpt_heterogeneous_layer_spec(config, use_te=False),
        vocab_size=doc["vocab_size"], max_sequence_length=doc["max_position_embeddings"],
        position_embedding_type="rope", rotary_base=doc["rope_theta"],
        share_embeddings_and_output_weights=doc["tie_word_embeddings"])
    print(json.dumps({
        "version": __version__,
        "reads": {"attention": [f.name for f in fields(AttentionConfig)], "ffn": [f.name for f in fields(MLPConfig)]},
        "shapes": {n: list(p.shape) for n, p in model.named_parameters()},
        "params": sum(p.numel() for p in model.parameters()),
    }))
    """
)


@pytest.mark.slow
@pytest.mark.parametrize(("fmt", "kv"), [("megatron", (4, 2, 2, 1)), ("nemotron-nas", (2, 2, 2, 2))])
def test_megatron_core_builds_the_exported_model(fmt: str, kv: tuple[int, ...], tmp_path: Path) -> None:
    if importlib.util.find_spec("megatron") is None:
        pytest.skip("megatron-core is not installed (pip install -e '.[megatron]')")
    model = _model(kv=kv, tie_embeddings=fmt == "megatron")
    ex = export(model, fmt)
    path = ex.write(tmp_path)
    with socket.socket() as free:  # a free port for the one-process gloo group
        free.bind(("127.0.0.1", 0))
        port = str(free.getsockname()[1])
    run = subprocess.run([sys.executable, "-c", BUILD, str(path), port], capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr[-2000:]
    built = json.loads(run.stdout.strip().splitlines()[-1])
    if "import_error" in built:
        pytest.skip(f"megatron-core does not import on this machine ({built['import_error']})")
    assert built["version"] == MEGATRON_CORE
    doc = json.loads(ex.text)
    for block in doc["block_configs"]:  # every field we write for Megatron Core is one it reads
        assert set(block["attention"]) <= {*built["reads"]["attention"], "n_heads_in_group"}
        assert set(block["ffn"]) <= {*built["reads"]["ffn"], "ffn_mult"}
    d, head = model.d_model, model.head_dim
    for layer, (w, g) in enumerate(zip(model.mlp_widths, kv, strict=True)):
        prefix = f"decoder.layers.{layer}."
        assert built["shapes"][prefix + "mlp.linear_fc1.weight"] == [2 * w, d]  # gate and up, SwiGLU
        assert built["shapes"][prefix + "mlp.linear_fc2.weight"] == [d, w]
        assert built["shapes"][prefix + "self_attention.linear_qkv.weight"] == [(model.n_heads + 2 * g) * head, d]
    assert built["params"] == count_params(model).total  # parameter for parameter tlmsearch's model
