"""Trained weights for the Hugging Face folder: a tlmsearch checkpoint's model as model.safetensors.

The modeling file (`hf_model/modeling_tlmsearch.py`) keeps tlmsearch's module names under
`model.`, so the conversion is a renaming: `embed.weight` -> `model.embed.weight`, ...,
`lm_head.weight` stays (left out when tied to the embedding: transformers ties it back). The
checkpoint must be one of the exported model (its recorded model config is compared whole).

Where a run's checkpoints are: `find_checkpoint` looks for the trial's kept checkpoints
(`--keep-checkpoints`) in the run's Tune folders (`locations.json`) and takes the furthest step.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tlmsearch.configs.storage import is_uri
from tlmsearch.core.base import ModelConfig
from tlmsearch.errors import UserError
from tlmsearch.export.hf import WEIGHTS_FILE
from tlmsearch.rundir.locations import FOLDERS, folder

CHECKPOINT_FILE = "checkpoint.pt"  # tlmsearch.training.trainer.CHECKPOINT_FILE (not imported: torch-heavy)


def hf_names(state: dict[str, Any], tied: bool) -> dict[str, Any]:
    """tlmsearch's parameter names -> the modeling file's (contiguous tensors, the tied head left out)."""
    out = {}
    for name, tensor in state.items():
        if name == "lm_head.weight":
            if not tied:
                out[name] = tensor.contiguous()
            continue
        out[f"model.{name}"] = tensor.contiguous()
    return out


def find_checkpoint(run_dir: str | Path, trial_id: str) -> Path:
    """The trial's kept checkpoint file at its furthest step, in the run's Tune folders."""
    found: list[tuple[int, Path]] = []
    for key in FOLDERS:
        where = folder(run_dir, key)
        if is_uri(where) or not Path(where).is_dir():
            continue
        for trial_dir in Path(where).rglob(f"trial_{trial_id}"):
            for ckpt in trial_dir.glob(f"checkpoint_*/{CHECKPOINT_FILE}"):
                step = ckpt.parent.name.removeprefix("checkpoint_")
                found.append((int(step) if step.isdigit() else -1, ckpt))
    if not found:
        raise UserError(
            f"trial {trial_id} has no kept checkpoint in {run_dir} (checkpoints are deleted once a trial is recorded "
            "unless the run kept them: --keep-checkpoints); pass --weights PATH to a checkpoint.pt"
        )
    return max(found)[1]


def read_model_state(path: str | Path, model: ModelConfig) -> tuple[dict[str, Any], int]:
    """The model weights and step of checkpoint `path` (a checkpoint.pt, or a folder holding one),
    refused in one line when it is not a checkpoint of `model`."""
    import torch

    path = Path(path)
    if path.is_dir():
        path = path / CHECKPOINT_FILE
    if not path.is_file():
        raise UserError(f"--weights {path}: no such checkpoint file (a tlmsearch checkpoint.pt, or its folder)")
    try:
        state = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as exc:  # noqa: BLE001 - damaged or foreign: one line
        first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
        raise UserError(f"--weights {path}: cannot read it as a tlmsearch checkpoint ({first[:200]})") from None
    if not isinstance(state, dict) or not isinstance(state.get("model"), dict):
        raise UserError(f"--weights {path}: not a tlmsearch checkpoint (no model weights in it)")
    recorded = (state.get("configs") or {}).get("model")
    if recorded != model.to_dict():
        raise UserError(
            f"--weights {path}: the checkpoint is of another model than the exported one (its recorded model config "
            "differs); pass the exported trial's checkpoint"
        )
    return state["model"], int(state.get("step", -1))


def write_weights(model: ModelConfig, checkpoint: str | Path, out_dir: str | Path) -> tuple[Path, int]:
    """Write the checkpoint's weights as `out_dir/model.safetensors`; returns (path, step)."""
    from safetensors.torch import save_file

    state, step = read_model_state(checkpoint, model)
    path = Path(out_dir) / WEIGHTS_FILE
    save_file(hf_names(state, model.tie_embeddings), str(path), metadata={"format": "pt", "step": str(step)})
    return path, step
