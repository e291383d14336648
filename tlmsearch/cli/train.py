"""`tlmsearch train`: one training run into `runs/<name>/`.

Run config files (`--config FILE`, YAML or JSON) are `tlmsearch.configs.run.RunConfig`s: sections
model / train / data / meta; the model is a full ModelConfig or a preset + profile spec (see
that module and docs/concepts.md, "Config files and shared flags"). `runs/<name>/config.yaml` and
`tlmsearch export --format native` write the same format.

Command-line flags override the file: `--arch/--preset/--family/--base-width/--model` rebuild
the model from the preset (a full ModelConfig in the file keeps only its arch); every training
and data flag (see `tlmsearch.cli._config_args`) replaces one field.

The run directory receives `config.yaml` (the resolved config, itself a valid `--config`),
`environment.json`, `metrics.jsonl` (one line per evaluation) and `summary.json`. While it runs,
`checkpoint/` holds its latest checkpoint (at every evaluation and every `--checkpoint-minutes`);
SIGINT (Ctrl-C) or SIGTERM writes one more and prints the `--resume` command; a run that
finishes deletes it unless `--keep-checkpoint`.
"""

from __future__ import annotations

import argparse
import json
import math
import shutil
import signal
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from tlmsearch.cli._config_args import (
    add_model_arguments,
    add_training_arguments,
    apply_overrides,
    parse_pairs,
    parse_tokenizer,
    training_overrides,
)
from tlmsearch.cli._train_progress import TrainProgress
from tlmsearch.configs.run import ModelSpec, RunConfig
from tlmsearch.core.base import ModelConfig, trial_length_text, with_tokens_per_param
from tlmsearch.core.validate import check_training_fits, writable_dir
from tlmsearch.costs.rates import rate_shape, record_rate, run_rate
from tlmsearch.errors import ConfigError

HELP = "train one model on real text and record its metrics in runs/<name>/"
DESCRIPTION = """\
Train one model (a preset shape, an architecture and a width profile) on real text, with
periodic validation (loss, perplexity, bits per byte), and write runs/<name>/ with the
resolved config, metrics.jsonl, summary.json and environment.json.

examples:
  tlmsearch train --arch titans --preset cpu-s --family cosine:start=1.5,end=0.5 --steps 300
  tlmsearch train --preset tiny --corpus pydoc --steps 50 --json
  tlmsearch train --config runs/<name>/config.yaml --seed 1 --name rerun-seed1
  tlmsearch train --name my-run --resume          # continue an interrupted run

corpora: shakespeare (default), mix, bible-web, bible-* (tlmsearch data lists them), pydoc, text:PATH,
tokens:PATH, hf:NAME[:CONFIG]
(see `tlmsearch data`). Config file format: docs/concepts.md, "Config files and shared flags".
"""

__all__ = ["add_arguments", "parse_tokenizer", "resolve_configs", "run"]

# `train` on a CPU runs 1 torch thread unless told otherwise: interleaved on a loaded 2-core
# machine, 2 threads ran 2.5x (issue 15) and 5x (the README's "Threads" before issue 32) slower than 1
TRAIN_THREADS = 1
CHECKPOINT_MINUTES = 5.0
PROGRESS_SECONDS = 30.0


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--config", metavar="FILE", help="run config (YAML/JSON with model/train/data/meta sections)")
    add_model_arguments(p, family=True)
    add_training_arguments(p, default_text={"threads": f"{TRAIN_THREADS} (see docs/concepts.md, 'Training one model')"})
    g = p.add_argument_group("output")
    g.add_argument("--name", help="run name (default: train-<date>-<time>)")
    g.add_argument("--runs-dir", default="runs", help="parent folder of run directories (default: runs)")
    g.add_argument("--resume", action="store_true", help="continue the run --name from its checkpoint")
    g.add_argument(
        "--checkpoint-minutes",
        type=float,
        default=CHECKPOINT_MINUTES,
        metavar="M",
        help=f"also checkpoint every M minutes of wall time; 0 = only at evaluations (default: {CHECKPOINT_MINUTES:g})",
    )
    g.add_argument(
        "--keep-checkpoint", action="store_true", help="keep checkpoint/ when the run finishes (default: delete it)"
    )
    g.add_argument(
        "--progress-seconds",
        type=float,
        default=PROGRESS_SECONDS,
        metavar="S",
        help=f"seconds between progress lines when output is not a terminal (default: {PROGRESS_SECONDS:g})",
    )
    g.add_argument("--json", action="store_true", help="print the summary as JSON on stdout")
    g = p.add_argument_group("data-parallel workers")
    g.add_argument(
        "--workers-per-trial",
        type=int,
        default=1,
        metavar="N",
        help="train on N data-parallel workers (Ray Train TorchTrainer on a local Ray; gloo on CPU, NCCL with one "
        "GPU each), the numbers of one worker; each takes --threads CPUs; checkpoints are kept at evaluations "
        "(default: 1, no Ray)",
    )


# ----------------------------------------------------------------------------- config resolution


def resolve_run_config(args: argparse.Namespace) -> Any:
    """The RunConfig that --config plus the flags describe (the model not yet resolved)."""
    run = RunConfig.load(args.config) if args.config else RunConfig()
    model = run.model
    spec_flags = {"preset": args.preset, "arch": args.arch, "family": args.family, "base_width": args.base_width}
    pairs = parse_pairs(args.model_pairs, "--model")
    # `--model preset=tiny` (family=, arch=, base_width=) sets the spec field like its flag does,
    # as the same key does in a config file; both at once must agree
    for key in [k for k in pairs if k in spec_flags]:
        value = pairs.pop(key)
        flag = "--" + key.replace("_", "-")
        if spec_flags[key] is not None and spec_flags[key] != value:
            raise ConfigError(f"--model {key}={value} conflicts with {flag} {spec_flags[key]}; give the {key} once")
        if value is None:
            raise ConfigError(f"--model {key}= needs a value (or use {flag})")
        spec_flags[key] = value
    if any(v is not None for v in spec_flags.values()) or (pairs and isinstance(model, ModelSpec)):
        spec = ModelSpec(arch=model.arch) if isinstance(model, ModelConfig) else model
        model = spec.replace(**spec_flags, **pairs)
    elif pairs:  # a full ModelConfig: replace its fields (validated like the file)
        model = apply_overrides(model, pairs, "model")
    train, data = training_overrides(args)
    if "threads" not in train and run.train.threads == 0:
        train["threads"] = TRAIN_THREADS
    return run.replace(
        model=model,
        train=apply_overrides(run.train, train, "train"),
        data=apply_overrides(run.data, data, "data"),
    )


def resolve_configs(args: argparse.Namespace) -> tuple[Any, Any, Any, dict[str, Any]]:
    """(ModelConfig, TrainConfig, DataConfig, meta) from --config and the flags; a trial length
    in tokens per parameter becomes its step count here, once (`config.with_tokens_per_param`)."""
    from tlmsearch.models import count_params

    run = resolve_run_config(args)
    model_cfg, meta = run.resolved()
    train = with_tokens_per_param(run.train, count_params(model_cfg).non_embedding, model_cfg.seq_len)
    return model_cfg, train, run.data, meta


def length_line(model_cfg: ModelConfig, train_cfg: Any) -> str | None:
    """'train: 20 tokens per parameter of ... = 4,199 steps of 2,048 tokens', or None when the
    steps were given directly."""
    if not train_cfg.tokens_per_param:
        return None
    from tlmsearch.models import count_params

    tokens = train_cfg.tokens_per_step * model_cfg.seq_len
    n = count_params(model_cfg).non_embedding
    return f"train: {trial_length_text(train_cfg.tokens_per_param, n, tokens, train_cfg.steps)}"


# ----------------------------------------------------------------------------- run


@contextmanager
def _stop_on_signals() -> Iterator[list[int]]:
    """SIGINT and SIGTERM ask the run to stop after the current step (a checkpoint follows);
    a second signal acts at once. Yields the list the signal numbers are appended to."""
    received: list[int] = []
    previous = {sig: signal.getsignal(sig) for sig in (signal.SIGINT, signal.SIGTERM)}

    def handler(signum: int, frame: Any) -> None:
        received.append(signum)
        for sig, old in previous.items():  # the next signal: the default (or caller's) behaviour
            signal.signal(sig, old)

    for sig in previous:
        signal.signal(sig, handler)
    try:
        yield received
    finally:
        for sig, old in previous.items():
            signal.signal(sig, old)


def _resume_command(run_dir: Path, runs_dir: str) -> str:
    extra = "" if runs_dir == "runs" else f" --runs-dir {runs_dir}"
    return f"tlmsearch train --name {run_dir.name}{extra} --resume"


def _plan(model_cfg: Any, train_cfg: Any, run_dir: Path, start_step: int, data_cfg: Any, workers: int = 1) -> str:
    """What the run will do, in one line (printed before the first step): where it trains (`--device
    auto`: CUDA where torch sees it, else the CPU) and its price, from the rates recorded for this
    shape here or from its FLOPs (`costs.calibrate.rate_or_reason`: nothing trains to price it)."""
    import torch

    from tlmsearch.costs.calibrate import device_of, rate_or_reason
    from tlmsearch.costs.estimate import estimate, fixed_work, plan_line
    from tlmsearch.models import count_params

    threads = train_cfg.threads or torch.get_num_threads()
    tokens = train_cfg.batch_size * train_cfg.grad_accum * model_cfg.seq_len
    steps = f"steps {start_step + 1}-{train_cfg.steps}" if start_step else f"{train_cfg.steps} steps"
    what = (
        f"train: {model_cfg.arch}, {model_cfg.n_layers} layers, d_model {model_cfg.d_model}, "
        f"{count_params(model_cfg).total:,} parameters; {steps} of {tokens:,} tokens, "
        f"{threads} thread{'s' * (threads != 1)}, {device_of(train_cfg)}{_workers_text(workers)}; into {run_dir}"
    )
    try:
        rate = rate_or_reason(model_cfg, train_cfg, data_cfg)
    except Exception as exc:  # noqa: BLE001 - the estimate is an aside: never the reason a run fails
        rate = f"pricing failed: {type(exc).__name__}: {str(exc).splitlines()[0][:160] if str(exc) else ''}"
    result = rate if isinstance(rate, str) else estimate(fixed_work(1, train_cfg.steps - start_step, 1), rate)
    return plan_line(what, result, tokens)


def _workers_text(workers: int) -> str:
    return f" on each of {workers} data-parallel workers (Ray Train)" if workers > 1 else ""


def _rate_shape(model_cfg: ModelConfig, train_cfg: Any) -> dict[str, Any]:
    from tlmsearch.costs.calibrate import device_of

    return rate_shape(model_cfg.to_dict(), train_cfg.to_dict(), device_of(train_cfg))


def _finished_summary(run_dir: Path) -> dict[str, Any] | None:
    """The run's summary when it completed (what `--json` printed then), else None."""
    try:
        summary = json.loads((run_dir / "summary.json").read_text())
    except (OSError, ValueError):
        return None
    return summary if isinstance(summary, dict) and summary.get("status") == "completed" else None


def _checkpoint_step(path: Path) -> int:
    import torch

    try:
        return int(torch.load(path, map_location="cpu", weights_only=True)["step"])
    except Exception:  # noqa: BLE001 - the trainer reports an unreadable checkpoint properly
        return 0


def run(args: argparse.Namespace) -> int:
    from tlmsearch import rundir  # run-directory writers: not needed for --help

    model_cfg, train_cfg, data_cfg, meta = resolve_configs(args)
    check_training_fits(model_cfg, train_cfg)  # refuse with the estimate before any directory or data
    writable_dir(data_cfg.cache_path(), "cache_dir")
    runs_dir = Path(args.runs_dir)
    if args.checkpoint_minutes < 0 or args.progress_seconds <= 0:
        raise ConfigError("--checkpoint-minutes must be >= 0 and --progress-seconds > 0")
    _check_workers(args.workers_per_trial, train_cfg)
    if args.resume:
        if not args.name:
            raise ConfigError("--resume needs --name (the run to continue)")
        run_dir = runs_dir / rundir.check_name(args.name)
        if not (run_dir / "checkpoint" / "checkpoint.pt").is_file():
            finished = (run_dir / "summary.json").is_file()
            why = "it finished (its checkpoint was deleted; --keep-checkpoint keeps it)" if finished else "none"
            raise ConfigError(f"{run_dir} holds no checkpoint to resume from: {why}")
        if not args.config:  # resume with the run's own config unless told otherwise
            args.config = str(run_dir / "config.yaml")
            model_cfg, train_cfg, data_cfg, meta = resolve_configs(args)
        done = _checkpoint_step(run_dir / "checkpoint" / "checkpoint.pt")
        summary = _finished_summary(run_dir)
        if done >= train_cfg.steps and summary is not None:  # finished, its checkpoint kept (--keep-checkpoint)
            line = f"{run_dir} already finished (step {done} of {train_cfg.steps}); nothing to resume, nothing changed"
            print(line, file=sys.stderr if args.json else sys.stdout)
            if args.json:
                print(json.dumps(summary, indent=2))
            return 0
    elif args.name and (runs_dir / rundir.check_name(args.name)).exists():  # before the corpus is prepared
        raise ConfigError(f"run directory {runs_dir / args.name} already exists; choose another name")

    from tlmsearch.training.trainer import check_run

    # every refusal that needs no training (device, corpus, vocabulary, memory) comes before the
    # run directory exists: a refused run leaves nothing behind and its name stays free
    model_cfg = _check_vocab(args, check_run(model_cfg, train_cfg, data_cfg), data_cfg)
    if not args.resume:
        run_dir = rundir.create_run_dir(runs_dir, args.name, prefix="train")
    try:
        return _train_into(args, run_dir, model_cfg, train_cfg, data_cfg, {**meta, "name": run_dir.name})
    except Exception:
        if not args.resume:
            _remove_if_untrained(run_dir)
        raise


def _check_workers(workers: int, train_cfg: Any) -> None:
    """`--workers-per-trial`: a whole number >= 1 that the batch can feed (one window of each
    micro-batch per worker at least); refused before anything is written."""
    from tlmsearch.configs.search import AUTO_GPUS, check_workers

    try:
        check_workers(workers, AUTO_GPUS, train_cfg.batch_size)
    except ConfigError as exc:
        raise ConfigError(str(exc).replace("workers_per_trial=", "--workers-per-trial ", 1)) from None


# what a run directory holds before its first training step (anything else is a result)
_SETUP_FILES = frozenset({"config.yaml", "environment.json"})


def _remove_if_untrained(run_dir: Path) -> None:
    """Delete `run_dir`, which this command created, when it failed before training left anything
    in it (only the config and environment files): the name becomes free again. A directory with
    a checkpoint, metrics or a summary is kept."""
    try:
        names = {p.name for p in run_dir.iterdir()}
    except OSError:
        return
    if names <= _SETUP_FILES:
        shutil.rmtree(run_dir, ignore_errors=True)


def _check_vocab(args: argparse.Namespace, model_cfg: ModelConfig, data_cfg: Any) -> ModelConfig:
    """Refuse a `vocab_size` the user set (`--model vocab_size=N`, or in a model spec) that is not
    the tokenizer's: the tokenizer fixes the vocabulary, so the value would be silently replaced."""
    asked = parse_pairs(args.model_pairs, "--model").get("vocab_size")
    if asked is None and args.config:
        spec = RunConfig.load(args.config).model
        asked = spec.overrides.get("vocab_size") if isinstance(spec, ModelSpec) else None
    if asked is not None and asked != model_cfg.vocab_size:
        raise ConfigError(
            f"model.vocab_size={asked!r} is not allowed: the vocabulary size comes from the tokenizer, here "
            f"{model_cfg.vocab_size} ({data_cfg.tokenizer} on corpus {data_cfg.corpus}); remove vocab_size, "
            "or choose another tokenizer (--tokenizer byte | bpe:VOCAB)"
        )
    return model_cfg


def _train_into(
    args: argparse.Namespace, run_dir: Path, model_cfg: ModelConfig, train_cfg: Any, data_cfg: Any, meta: Any
) -> int:
    """Train into the (existing) run directory `run_dir` and report; the exit status."""
    from tlmsearch import rundir
    from tlmsearch.training.hardware import resolve_device
    from tlmsearch.training.trainer import TrainingDiverged, TrainingInterrupted, train

    resolved = RunConfig(model=model_cfg, train=train_cfg, data=data_cfg, meta=meta)
    rundir.write_config(run_dir, resolved.to_dict())
    device = resolve_device(train_cfg.device)
    rundir.write_environment(run_dir, seeds={"seed": train_cfg.seed}, device=str(device))

    out = sys.stderr if args.json else sys.stdout
    checkpoint_dir = run_dir / "checkpoint"
    start_step = _checkpoint_step(checkpoint_dir / "checkpoint.pt") if args.resume else 0
    length = length_line(model_cfg, train_cfg)
    if length:
        print(length, file=out, flush=True)
    print(_plan(model_cfg, train_cfg, run_dir, start_step, data_cfg, args.workers_per_trial), file=out, flush=True)
    tokens_per_step = train_cfg.batch_size * train_cfg.grad_accum * model_cfg.seq_len
    progress = TrainProgress(train_cfg.steps, tokens_per_step, out, first=start_step, interval_s=args.progress_seconds)
    metrics_path = run_dir / "metrics.jsonl"

    def report(step: int, metrics: dict[str, float]) -> None:
        rundir.append_jsonl(metrics_path, metrics)
        progress.on_eval(step, metrics)

    workers = args.workers_per_trial
    summary: dict[str, Any] = {"name": run_dir.name, "run_dir": str(run_dir), "meta": meta, "workers": workers}
    if workers > 1:  # before the signal handlers: ray.init installs a SIGTERM handler of its own
        from tlmsearch.tuning.ray_session import ensure_ray

        ensure_ray()
    with _stop_on_signals() as received:
        try:
            if workers > 1:
                from tlmsearch.tuning.train_run import train_on_workers

                result = train_on_workers(
                    model_cfg,
                    train_cfg,
                    data_cfg,
                    report,
                    workers=workers,
                    checkpoint_dir=checkpoint_dir,
                    checkpoint_every_s=60.0 * args.checkpoint_minutes,
                    stop=lambda: bool(received),
                )
            else:
                result = train(
                    model_cfg,
                    train_cfg,
                    data_cfg,
                    report,
                    checkpoint_dir=checkpoint_dir,
                    progress=progress.on_step,
                    checkpoint_every_s=60.0 * args.checkpoint_minutes,
                    stop=lambda: bool(received),
                )
        except TrainingInterrupted as exc:
            progress.close()
            name = signal.Signals(received[0]).name if received else "a stop request"
            print(
                f"tlmsearch train: stopped by {name} at step {exc.step}/{train_cfg.steps}, checkpoint saved; "
                f"resume with: {_resume_command(run_dir, args.runs_dir)}",
                file=sys.stderr,
            )
            return 128 + (received[0] if received else signal.SIGINT)
        except TrainingDiverged as exc:
            progress.close()
            summary.update(status="diverged", error=str(exc), step=exc.step)
            rundir.write_json(run_dir / "summary.json", summary)
            print(f"tlmsearch train: {exc} (run {run_dir})", file=sys.stderr)
            return 1
    progress.close()
    measured = run_rate(result.metrics, int(result.metrics.get("steps", 0)), float(result.metrics.get("wall_s", 0)))
    if measured is not None and not args.resume and workers == 1:  # a resumed run's clock spans sessions
        record_rate(data_cfg.cache_path(), _rate_shape(result.model_config, train_cfg), *measured, "train")
    if not args.keep_checkpoint:
        shutil.rmtree(checkpoint_dir, ignore_errors=True)
    metrics_path.write_text("".join(json.dumps(c) + "\n" for c in result.curve))  # whole curve, once
    summary.update(
        status="completed",
        metrics=result.metrics,
        model_config=result.model_config.to_dict(),
        train_config=train_cfg.to_dict(),
        data_config=data_cfg.to_dict(),
    )
    rundir.write_json(run_dir / "summary.json", summary)
    if args.json:
        print(json.dumps(summary, indent=2))
    else:
        m = result.metrics
        kept = f"\n  checkpoint kept in {checkpoint_dir}" if args.keep_checkpoint else ""
        print(
            f"done: {run_dir}\n"
            f"  val_loss {m['val_loss']:.4f}  val_ppl {m['val_ppl']:.2f}  val_bpb {m['val_bpb']:.4f}  "
            f"train_loss {m['train_loss']:.4f}\n"
            f"  {int(m['steps'])} steps, {int(m['tokens']):,} tokens in {m['wall_s']:.1f}s "
            f"({m['tokens_per_s']:,.0f} tok/s, mfu {100 * m['mfu']:.1f}%), "
            f"{int(m['params_total']):,} parameters ({int(m['params_mlp']):,} in MLPs){_regime(m)}{kept}"
        )
    return 0


def _regime(m: dict[str, Any]) -> str:
    """'\n  regime: 0.52 tokens per parameter (20,640 non-embedding), 0.011 epochs, 8,192 validation
    tokens: early training' (empty for metrics without them)."""
    from tlmsearch.analysis.regime import regime_name

    if "tokens_per_param" not in m:
        return ""
    tpp = float(m["tokens_per_param"])
    return (
        f"\n  regime: {tpp:.3g} tokens per parameter ({int(m['params_non_embedding']):,} non-embedding), "
        f"{float(m.get('epochs', math.nan)):.3g} epochs, {int(m.get('val_tokens', 0)):,} validation tokens: "
        f"{regime_name(tpp)}"
    )
