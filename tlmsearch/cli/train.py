"""`tlmsearch train`: one training run into `runs/<name>/`.

Run config files (`--config FILE`, YAML or JSON) are `tlmsearch.runconfig.RunConfig`s: sections
model / train / data / meta; the model is a full ModelConfig or a preset + profile spec (see
that module and the README's "Config files"). `runs/<name>/config.yaml` and
`tlmsearch export --format native` write the same format.

Command-line flags override the file: `--arch/--preset/--family/--base-width/--model` rebuild
the model from the preset (a full ModelConfig in the file keeps only its arch); every training
and data flag (see `tlmsearch.cli._config_args`) replaces one field.

The run directory receives `config.yaml` (the resolved config, itself a valid `--config`),
`environment.json`, `metrics.jsonl` (one line per evaluation), `summary.json` and
`checkpoint/` (resumable with `--resume`).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
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
from tlmsearch.config import ModelConfig
from tlmsearch.errors import ConfigError
from tlmsearch.runconfig import ModelSpec, RunConfig
from tlmsearch.validate import check_training_fits, writable_dir

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

corpora: shakespeare (default), bible-web, pydoc, text:PATH, tokens:PATH, hf:NAME[:CONFIG]
(see `tlmsearch data`). Config file format: README, "Config files".
"""

__all__ = ["add_arguments", "parse_tokenizer", "resolve_configs", "run"]


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--config", metavar="FILE", help="run config (YAML/JSON with model/train/data/meta sections)")
    add_model_arguments(p, family=True)
    add_training_arguments(p)
    g = p.add_argument_group("output")
    g.add_argument("--name", help="run name (default: train-<date>-<time>)")
    g.add_argument("--runs-dir", default="runs", help="parent folder of run directories (default: runs)")
    g.add_argument("--resume", action="store_true", help="continue the run --name from its checkpoint")
    g.add_argument("--json", action="store_true", help="print the summary as JSON on stdout")


# ----------------------------------------------------------------------------- config resolution


def resolve_run_config(args: argparse.Namespace) -> Any:
    """The RunConfig that --config plus the flags describe (the model not yet resolved)."""
    run = RunConfig.load(args.config) if args.config else RunConfig()
    model = run.model
    spec_flags = {"preset": args.preset, "arch": args.arch, "family": args.family, "base_width": args.base_width}
    pairs = parse_pairs(args.model_pairs, "--model")
    if any(v is not None for v in spec_flags.values()) or (pairs and isinstance(model, ModelSpec)):
        spec = ModelSpec(arch=model.arch) if isinstance(model, ModelConfig) else model
        model = spec.replace(**spec_flags, **pairs)
    elif pairs:  # a full ModelConfig: replace its fields (validated like the file)
        model = apply_overrides(model, pairs, "model")
    train, data = training_overrides(args)
    return run.replace(
        model=model,
        train=apply_overrides(run.train, train, "train"),
        data=apply_overrides(run.data, data, "data"),
    )


def resolve_configs(args: argparse.Namespace) -> tuple[Any, Any, Any, dict[str, Any]]:
    """(ModelConfig, TrainConfig, DataConfig, meta) from --config and the flags."""
    run = resolve_run_config(args)
    model_cfg, meta = run.resolved()
    return model_cfg, run.train, run.data, meta


# ----------------------------------------------------------------------------- progress display


class Progress:
    """One line updated in place on a TTY (throttled); plain lines per evaluation otherwise."""

    def __init__(self, total: int, stream: Any = sys.stderr) -> None:
        self.total, self.stream = total, stream
        self.tty = bool(getattr(stream, "isatty", lambda: False)())
        self.start = time.perf_counter()
        self.last_draw = 0.0
        self.step = 0
        self.eval_text = ""

    def on_step(self, step: int) -> None:
        self.step = step
        now = time.perf_counter()
        if self.tty and now - self.last_draw > 0.2:
            self.last_draw = now
            self._draw()

    def on_eval(self, step: int, m: dict[str, float]) -> None:
        self.step = step
        self.eval_text = (
            f"val {m['val_loss']:.4f} (ppl {m['val_ppl']:.2f}, bpb {m['val_bpb']:.3f}) | "
            f"train {m['train_loss']:.4f} | {m['tokens_per_s']:,.0f} tok/s | mfu {100 * m['mfu']:.1f}%"
        )
        if self.tty:
            self._draw()
        else:
            print(self._line(), file=self.stream, flush=True)

    def close(self) -> None:
        if self.tty:
            self._draw()
            print(file=self.stream, flush=True)

    def _line(self) -> str:
        elapsed = time.perf_counter() - self.start
        parts = [f"step {self.step}/{self.total}", self.eval_text, f"{elapsed:.1f}s"]
        return " | ".join(p for p in parts if p)

    def _draw(self) -> None:
        print("\r\033[K" + self._line(), end="", file=self.stream, flush=True)


# ----------------------------------------------------------------------------- run


def run(args: argparse.Namespace) -> int:
    from tlmsearch import rundir  # run-directory writers: not needed for --help

    model_cfg, train_cfg, data_cfg, meta = resolve_configs(args)
    check_training_fits(model_cfg, train_cfg)  # refuse with the estimate before any directory or data
    writable_dir(data_cfg.cache_path(), "cache_dir")
    runs_dir = Path(args.runs_dir)
    if args.resume:
        if not args.name:
            raise ConfigError("--resume needs --name (the run to continue)")
        run_dir = runs_dir / rundir.check_name(args.name)
        if not (run_dir / "checkpoint" / "checkpoint.pt").is_file():
            raise ConfigError(f"{run_dir} holds no checkpoint to resume from")
        if not args.config:  # resume with the run's own config unless told otherwise
            args.config = str(run_dir / "config.yaml")
            model_cfg, train_cfg, data_cfg, meta = resolve_configs(args)
    else:
        run_dir = rundir.create_run_dir(runs_dir, args.name, prefix="train")
    meta = {**meta, "name": run_dir.name}

    from tlmsearch.trainer import TrainingDiverged, resolve_vocab, train

    model_cfg = resolve_vocab(model_cfg, data_cfg)
    resolved = RunConfig(model=model_cfg, train=train_cfg, data=data_cfg, meta=meta)
    rundir.write_config(run_dir, resolved.to_dict())
    from tlmsearch.hardware import resolve_device

    device = resolve_device(train_cfg.device)
    rundir.write_environment(run_dir, seeds={"seed": train_cfg.seed}, device=str(device))

    out = sys.stderr if args.json else sys.stdout
    progress = Progress(train_cfg.steps, out)
    metrics_path = run_dir / "metrics.jsonl"

    def report(step: int, metrics: dict[str, float]) -> None:
        rundir.append_jsonl(metrics_path, metrics)
        progress.on_eval(step, metrics)

    summary: dict[str, Any] = {"name": run_dir.name, "run_dir": str(run_dir), "meta": meta}
    try:
        result = train(
            model_cfg, train_cfg, data_cfg, report, checkpoint_dir=run_dir / "checkpoint", progress=progress.on_step
        )
    except TrainingDiverged as exc:
        progress.close()
        summary.update(status="diverged", error=str(exc), step=exc.step)
        rundir.write_json(run_dir / "summary.json", summary)
        print(f"tlmsearch train: {exc} (run {run_dir})", file=sys.stderr)
        return 1
    progress.close()
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
        print(
            f"done: {run_dir}\n"
            f"  val_loss {m['val_loss']:.4f}  val_ppl {m['val_ppl']:.2f}  val_bpb {m['val_bpb']:.4f}  "
            f"train_loss {m['train_loss']:.4f}\n"
            f"  {int(m['steps'])} steps, {int(m['tokens']):,} tokens in {m['wall_s']:.1f}s "
            f"({m['tokens_per_s']:,.0f} tok/s, mfu {100 * m['mfu']:.1f}%), "
            f"{int(m['params_total']):,} parameters ({int(m['params_mlp']):,} in MLPs)"
        )
    return 0
