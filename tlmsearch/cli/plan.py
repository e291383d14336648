"""`tlmsearch plan`: what a study costs in tokens, FLOPs, GPU-hours and wall time (no torch)."""

from __future__ import annotations

import argparse
import json
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # pragma: no cover
    from tlmsearch.costs.plan import PlanConfig

HELP = "cost a study before running it: tokens, FLOPs, GPU-hours and wall time on N GPUs"
DESCRIPTION = """\
Cost a study at paper scale before launching it: a search of --trials trials of --steps steps,
then a verification that re-trains --verify-profiles profiles with --seeds seeds each. FLOPs
per token are the analytic ones of the model (forward + backward); GPU time is FLOPs over the
GPU's dense BF16 peak times --mfu; wall time counts waves of trials on --gpus GPUs, packed
--gpus-per-trial to a trial (0.25 = four trials per GPU). Search trials are costed at full
length (an upper bound: ASHA stops most early); start-up and data loading are not counted.

examples:
  tlmsearch plan --preset 170m --trials 64 --steps 2000 --gpus 8 --gpus-per-trial 0.25
  tlmsearch plan --preset 340m --layers 32 --trials 0 --verify-profiles 5 --seeds 3 \\
      --verify-tokens 30e9 --batch-size 64 --grad-accum 8 --gpu h100-sxm --gpus 64
  tlmsearch plan --preset 760m --arch transformer,gated_attention,titans,hope_attention --json
"""

# flag dest -> PlanConfig field
_FIELDS = {
    "preset": "preset", "base_width": "base_width", "trials": "trials", "steps": "steps", "tokens": "tokens",
    "verify_profiles": "verify_profiles", "seeds": "seeds", "verify_steps": "verify_steps",
    "verify_tokens": "verify_tokens", "batch_size": "batch_size", "grad_accum": "grad_accum",
    "eval_interval": "eval_interval", "eval_windows": "eval_windows", "gpu": "gpu", "mfu": "mfu",
    "gpus": "gpus", "gpus_per_trial": "gpus_per_trial", "tokens_per_param": "tokens_per_param",
}  # fmt: skip
_SHAPE = {"d_model": "d_model", "layers": "n_layers", "heads": "n_heads", "seq_len": "seq_len", "vocab": "vocab_size"}


def _count(text: str) -> int:
    """A whole number, also written like 30e9 or 3.5e10."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if not value.is_integer():
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number")
    return int(value)


def add_arguments(p: argparse.ArgumentParser) -> None:
    from tlmsearch.configs.base import ARCHITECTURE_NAMES
    from tlmsearch.costs.plan import GPUS

    g = p.add_argument_group("model")
    g.add_argument("--preset", help="model shape preset, e.g. 170m, 340m, 760m, 1.3b (default 170m)")
    g.add_argument(
        "--arch",
        help=f"architecture(s), comma-separated, each once: {', '.join(ARCHITECTURE_NAMES)} (default transformer)",
    )
    g.add_argument("--layers", type=int, help="override the preset's number of layers")
    g.add_argument("--d-model", type=int, help="override the preset's d_model")
    g.add_argument("--heads", type=int, help="override the preset's number of heads")
    g.add_argument("--seq-len", type=int, help="override the preset's sequence length")
    g.add_argument("--vocab", type=int, help="override the preset's vocabulary size")
    g.add_argument("--base-width", type=int, help="MLP width per layer (default: the preset's)")
    g.add_argument("--untied", action="store_true", help="a separate LM head (default: tied embeddings)")
    g = p.add_argument_group("study")
    g.add_argument("--trials", type=int, help="search trials, baselines included (default 32; 0 = no search)")
    g.add_argument("--steps", type=_count, help="steps of a search trial (default 300)")
    g.add_argument("--tokens", type=_count, help="tokens of a search trial instead of --steps, not with it (e.g. 2e8)")
    g.add_argument(
        "--tokens-per-param",
        type=float,
        metavar="X",
        help="every run's length in tokens per NON-EMBEDDING parameter, each architecture's steps from its own "
        "count, instead of --steps/--tokens and --verify-steps/--verify-tokens (e.g. 20)",
    )
    g.add_argument(
        "--verify-profiles", type=int, help="profiles re-trained with seeds (default 9: top 5 + 4 baselines)"
    )
    g.add_argument("--seeds", type=int, help="seeds per verified profile (default 3)")
    g.add_argument("--verify-steps", type=_count, help="steps of a verification run (default: --steps)")
    g.add_argument(
        "--verify-tokens", type=_count, help="tokens of a verification run instead of --verify-steps, not with it"
    )
    g.add_argument("--batch-size", type=int, help="sequences per micro-batch (default 16)")
    g.add_argument("--grad-accum", type=int, help="micro-batches per step (default 1)")
    g.add_argument("--eval-interval", type=int, help="steps between evaluations (default 50)")
    g.add_argument("--eval-windows", type=int, help="validation windows per evaluation (default 32)")
    g = p.add_argument_group("hardware")
    g.add_argument("--gpu", help=f"GPU model: {', '.join(GPUS)} (default h100-sxm)")
    g.add_argument("--mfu", type=float, help="share of the dense BF16 peak a trial sustains (default 0.4)")
    g.add_argument("--gpus", type=int, help="GPUs in the cluster (default 8)")
    g.add_argument("--gpus-per-trial", type=float, help="GPUs per trial; 0.25 packs four trials per GPU (default 1)")
    p.add_argument("--json", action="store_true", help="machine-readable output")


def config_from_args(args: argparse.Namespace) -> PlanConfig:
    """The `PlanConfig` the flags describe (unset flags keep the defaults)."""
    from tlmsearch.cli._config_args import parse_names
    from tlmsearch.costs.plan import PlanConfig
    from tlmsearch.errors import ConfigError

    for steps, tokens in (("steps", "tokens"), ("verify_steps", "verify_tokens")):
        if getattr(args, steps) is not None and getattr(args, tokens) is not None:
            s, t = "--" + steps.replace("_", "-"), "--" + tokens.replace("_", "-")
            raise ConfigError(f"give {s} or {t}, not both: {t} sets the steps from the tokens per step")
    given = [f for f in ("steps", "tokens", "verify_steps", "verify_tokens") if getattr(args, f) is not None]
    if args.tokens_per_param is not None and given:
        flags = ", ".join("--" + f.replace("_", "-") for f in given)
        raise ConfigError(f"give --tokens-per-param or {flags}, not both: --tokens-per-param sets every run's steps")
    fields: dict[str, Any] = {f: getattr(args, k) for k, f in _FIELDS.items() if getattr(args, k) is not None}
    if args.arch is not None:  # "" names no architecture: PlanConfig refuses it with the allowed names
        fields["archs"] = tuple(parse_names(args.arch, "--arch", "transformer,titans"))
    shape = {f: getattr(args, k) for k, f in _SHAPE.items() if getattr(args, k) is not None}
    if shape:
        fields["model"] = shape
    if args.untied:
        fields["tie_embeddings"] = False
    return PlanConfig(**fields)


def run(args: argparse.Namespace) -> int:
    from tlmsearch.costs.plan import format_plan, plan

    result = plan(config_from_args(args))
    print(json.dumps(result.to_dict(), indent=2) if args.json else format_plan(result))
    return 0
