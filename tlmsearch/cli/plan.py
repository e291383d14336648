"""`tlmsearch plan`: what a study costs in tokens, FLOPs, GPU-hours and wall time (no torch)."""

from __future__ import annotations

import argparse
import json
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # pragma: no cover
    from tlmsearch.costs.plan import PlanConfig

HELP = "cost a study before running it: tokens, FLOPs, GPU-hours and wall time on N GPUs"
DESCRIPTION = """\
Cost a study at paper scale before launching it, phase by phase, as `search` and `verify` will
run it and from their defaults: a search of --trials trials and its noise floor's extra seeds
(--noise-seeds), each at the search's length (by default 5 tokens per non-embedding parameter,
the screening length; or --steps, --tokens), then a verification that re-trains
--verify-profiles profiles (verify's: its top 5, cosine, uniform, 3 controls) with --seeds seeds
each (by default verify's planned seeds, priced at their cap), each at the deciding length (20
tokens per parameter after a search given in tokens per parameter; or --verify-steps,
--verify-tokens). FLOPs
per token are the analytic ones of the model (forward + backward); GPU time is FLOPs over the
GPU's dense BF16 peak times --mfu, and at least --step-ms a step (small models are bound by
kernel launches, not FLOPs: such phases are marked step-bound); wall time counts waves of
trials on --gpus GPUs, packed --gpus-per-trial to a trial (0.25 = four trials per GPU). Search
trials are costed at full length (an upper bound: ASHA stops most early); start-up and data
loading are not counted.
The FLOPs are the budget's uniform model's: every MLP profile of a budget trains at exactly
them, and so does a joint architecture held at equal FLOPs (hold=flops in a joint profile,
`search --space joint_flops`); one held at equal parameters (the default) moves its FLOPs with
its heads and block widths (attention FLOPs grow with the sequence length).

With --run RUN_DIR the plan prices deciding that run instead: its verification again, with its
model shape, batch and steps, at the seeds its verdict says would decide it (or --seeds N);
only --seeds and the hardware flags may be given beside it.

examples:
  tlmsearch plan --run runs/my-search --gpu h200 --gpus 1 --gpus-per-trial 0.25
  tlmsearch plan --preset 170m --trials 64 --steps 2000 --gpus 8 --gpus-per-trial 0.25
  tlmsearch plan --preset 340m --layers 32 --trials 0 --verify-profiles 5 --seeds 3 \\
      --verify-tokens 30e9 --batch-size 64 --grad-accum 8 --gpu h100-sxm --gpus 64
  tlmsearch plan --preset 760m --arch transformer,gated_attention,titans,hope_attention --json
"""

# the flags of the model shape that are not PlanConfig fields of their own: flag dest -> `model` key
_SHAPE = {"d_model": "d_model", "layers": "n_layers", "heads": "n_heads", "seq_len": "seq_len", "vocab": "vocab_size"}
# PlanConfig fields by help group (every other field with a flag goes to "study")
_MODEL_FIELDS = ("preset", "base_width")
_HARDWARE_FIELDS = ("gpu", "mfu", "gpus", "gpus_per_trial", "link_gb_s", "step_ms")
_COUNTS = ("steps", "tokens", "verify_steps", "verify_tokens")  # whole numbers, also written 30e9
_OWN_FLAGS = ("archs", "model", "tie_embeddings")  # given as --arch a,b, the shape flags and --untied


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
    """PlanConfig's fields as flags (help and defaults from the config), plus --arch (a list),
    the shape overrides and --untied, which the config holds in other forms."""
    import dataclasses

    from tlmsearch.cli._config_args import add_config_arguments
    from tlmsearch.core.base import ARCHITECTURE_NAMES
    from tlmsearch.costs.plan import PlanConfig

    fields = [f.name for f in dataclasses.fields(PlanConfig)]
    study = [f for f in fields if f not in _MODEL_FIELDS + _HARDWARE_FIELDS + _OWN_FLAGS]
    counts = dict.fromkeys(_COUNTS, _count)
    g = p.add_argument_group("model")
    add_config_arguments(g, PlanConfig, section="plan", skip=[f for f in fields if f not in _MODEL_FIELDS])
    g.add_argument(
        "--arch",
        help=f"architecture(s), comma-separated, each once: {', '.join(ARCHITECTURE_NAMES)} (default: transformer)",
    )
    g.add_argument("--layers", type=int, help="override the preset's number of layers")
    g.add_argument("--d-model", type=int, help="override the preset's d_model")
    g.add_argument("--heads", type=int, help="override the preset's number of heads")
    g.add_argument("--seq-len", type=int, help="override the preset's sequence length")
    g.add_argument("--vocab", type=int, help="override the preset's vocabulary size")
    g.add_argument("--untied", action="store_true", help="a separate LM head (default: tied embeddings)")
    g = p.add_argument_group("study")
    add_config_arguments(g, PlanConfig, section="plan", skip=[f for f in fields if f not in study], types=counts)
    g = p.add_argument_group("hardware")
    add_config_arguments(g, PlanConfig, section="plan", skip=[f for f in fields if f not in _HARDWARE_FIELDS])
    p.add_argument(
        "--run", metavar="RUN_DIR",
        help="price deciding this search run's verification (a study's architecture folder too): its shape, "
        "batch and steps, at the seeds its verdict asks for",
    )  # fmt: skip
    p.add_argument("--json", action="store_true", help="machine-readable output")


def deciding_from_args(args: argparse.Namespace) -> Any:
    """The `Deciding` of `--run`: the run sets shape, lengths and profiles; the flags give
    only the seeds and the hardware."""
    from tlmsearch.api import load
    from tlmsearch.cli._config_args import config_overrides
    from tlmsearch.costs.deciding import HARDWARE_FIELDS
    from tlmsearch.errors import ConfigError
    from tlmsearch.studies.files import is_study

    if not args.run.strip():  # never the default study's price in place of the run asked for
        raise ConfigError(
            f"--run {args.run!r} names no run directory; give a search run's folder (or a study architecture's)"
        )
    fields: dict[str, Any] = config_overrides(args, "plan")
    shape = [k for k in _SHAPE if getattr(args, k) is not None]
    given = [f for f in fields if f not in (*HARDWARE_FIELDS, "seeds")] + shape
    given += ["arch"] * (args.arch is not None) + ["untied"] * args.untied
    if given:
        flags = ", ".join("--" + f.replace("_", "-") for f in given)
        raise ConfigError(f"--run takes the shape, lengths and profiles from the run; give only --seeds and the "
                          f"hardware flags beside it, not {flags}")  # fmt: skip
    if is_study(args.run):
        raise ConfigError(f"--run {args.run} is a study: name one architecture's folder, e.g. {args.run}/transformer")
    seeds = fields.pop("seeds", None)
    return load(args.run).deciding_plan(seeds, **fields)


def config_from_args(args: argparse.Namespace) -> PlanConfig:
    """The `PlanConfig` the flags describe (unset flags keep the defaults)."""
    from tlmsearch.cli._config_args import config_overrides, parse_names
    from tlmsearch.costs.plan import PlanConfig
    from tlmsearch.errors import ConfigError

    fields: dict[str, Any] = config_overrides(args, "plan")
    for steps, tokens in (("steps", "tokens"), ("verify_steps", "verify_tokens")):
        if steps in fields and tokens in fields:
            s, t = "--" + steps.replace("_", "-"), "--" + tokens.replace("_", "-")
            raise ConfigError(f"give {s} or {t}, not both: {t} sets the steps from the tokens per step")
    given = [f for f in _COUNTS if f in fields]
    if "tokens_per_param" in fields and given:
        flags = ", ".join("--" + f.replace("_", "-") for f in given)
        raise ConfigError(f"give --tokens-per-param or {flags}, not both: --tokens-per-param sets every run's steps")
    if args.arch is not None:  # "" names no architecture: PlanConfig refuses it with the allowed names
        fields["archs"] = tuple(parse_names(args.arch, "--arch", "transformer,titans"))
    shape = {f: getattr(args, k) for k, f in _SHAPE.items() if getattr(args, k) is not None}
    if shape:
        fields["model"] = shape
    if args.untied:
        fields["tie_embeddings"] = False
    return PlanConfig(**fields)


def run(args: argparse.Namespace) -> int:
    from tlmsearch.costs.plan import plan
    from tlmsearch.costs.plan_text import format_plan

    if args.run is not None:  # '' too: refused there, not priced as the default study
        deciding = deciding_from_args(args)
        result = plan(deciding.config)
        if args.json:
            print(json.dumps({**result.to_dict(), "deciding": deciding.line}, indent=2))
        else:
            print(deciding.line + "\n" + format_plan(result))
        return 0
    result = plan(config_from_args(args))
    print(json.dumps(result.to_dict(), indent=2) if args.json else format_plan(result))
    return 0
