"""`tlmsearch train`: one training run into `runs/<name>/`.

Run config files (`--config FILE`, YAML or JSON; also what `runs/<name>/config.yaml` holds and
what `tlmsearch export --format native` writes) have up to four top-level sections:

    model:                       # either a full ModelConfig ...
      arch: transformer
      d_model: 128
      n_layers: 8
      n_heads: 4
      mlp_widths: [528, 512, ...]
      seq_len: 256
      vocab_size: 256            # replaced by the tokenizer's vocab when they differ
      options: {...}             # ArchOptions, optional
    # ... or a preset plus a width profile, with optional ModelConfig overrides:
    # model: {preset: cpu-s, arch: titans, family: "cosine:start=1.5,end=0.5", base_width: 352}
    train: {steps: 300, lr: 0.002, seed: 0, ...}     # TrainConfig fields, all optional
    data: {corpus: shakespeare, tokenizer: byte}     # DataConfig fields, all optional
    meta: {...}                                      # free-form notes; ignored when read

Command-line flags override the file: `--arch/--preset/--family/--base-width` rebuild the model
from the preset; `--steps`, `--lr`, `--seed`, ... replace single fields.

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
(see `tlmsearch data`). Config file format: see the docstring of tlmsearch.cli.train.
"""

TOP_LEVEL = ("model", "train", "data", "meta")
SPEC_KEYS = ("preset", "family", "base_width")


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--config", metavar="FILE", help="run config (YAML/JSON with model/train/data sections)")
    g = p.add_argument_group("model")
    g.add_argument("--arch", help="transformer | gated_attention | titans | hope_attention (default transformer)")
    g.add_argument("--preset", help="model shape preset (default cpu-s): tiny, cpu-s, cpu-m, 170m, ...")
    g.add_argument("--family", metavar="SPEC", help="width profile, e.g. cosine:start=1.5,end=0.5 (default uniform)")
    g.add_argument("--base-width", type=int, help="uniform MLP width per layer of the budget (default: preset's)")
    g = p.add_argument_group("training")
    g.add_argument("--steps", type=int, help="optimizer steps")
    g.add_argument("--lr", type=float, help="peak learning rate")
    g.add_argument("--batch-size", type=int, help="sequences per micro-batch")
    g.add_argument("--grad-accum", type=int, help="micro-batches per optimizer step")
    g.add_argument("--schedule", choices=("cosine", "wsd", "constant"), help="learning-rate schedule")
    g.add_argument("--dtype", choices=("float32", "bfloat16"), help="float32 or bfloat16 autocast")
    g.add_argument("--device", choices=("auto", "cpu", "cuda"), help="where to train (default auto)")
    g.add_argument("--compile", action="store_true", default=None, help="torch.compile the model")
    g.add_argument("--threads", type=int, help="torch threads for this run (0 = torch's default)")
    g.add_argument("--eval-interval", type=int, help="steps between evaluations")
    g.add_argument("--eval-windows", type=int, help="number of fixed validation windows")
    g.add_argument("--seed", type=int, help="seed of model init and batch order")
    g = p.add_argument_group("data")
    g.add_argument("--corpus", help="shakespeare (default), bible-web, pydoc, text:PATH, tokens:PATH, hf:NAME")
    g.add_argument("--tokenizer", metavar="KIND", help="byte (default), bpe or bpe:VOCAB (e.g. bpe:4096)")
    g = p.add_argument_group("output")
    g.add_argument("--name", help="run name (default: train-<date>-<time>)")
    g.add_argument("--runs-dir", default="runs", help="parent folder of run directories (default runs)")
    g.add_argument("--resume", action="store_true", help="continue the run --name from its checkpoint")
    g.add_argument("--json", action="store_true", help="print the summary as JSON on stdout")


# ----------------------------------------------------------------------------- config resolution


def parse_tokenizer(text: str) -> dict[str, Any]:
    """'byte' | 'bpe' | 'bpe:4096' -> DataConfig fields."""
    from tlmsearch.errors import ConfigError

    kind, _, vocab = text.partition(":")
    if kind == "byte" and not vocab:
        return {"tokenizer": "byte"}
    if kind == "bpe":
        if not vocab:
            return {"tokenizer": "bpe"}
        if vocab.isdigit():
            return {"tokenizer": "bpe", "bpe_vocab": int(vocab)}
    raise ConfigError(f"tokenizer {text!r} is not allowed; use byte, bpe or bpe:VOCAB (e.g. bpe:4096)")


def read_config_file(path: str | Path) -> dict[str, Any]:
    """The sections of a run config file (see the module docstring)."""
    import yaml

    from tlmsearch.errors import ConfigError

    path = Path(path)
    try:
        text = path.read_text()
    except OSError as exc:
        raise ConfigError(f"cannot read config file {path}: {exc.strerror}") from None
    try:
        doc = json.loads(text) if path.suffix == ".json" else yaml.safe_load(text)
    except (ValueError, yaml.YAMLError) as exc:
        raise ConfigError(f"{path}: not valid YAML/JSON ({str(exc).splitlines()[0]})") from None
    if doc is None:
        doc = {}
    if not isinstance(doc, dict):
        raise ConfigError(f"{path}: expected a mapping with sections {', '.join(TOP_LEVEL)}")
    unknown = sorted(set(doc) - set(TOP_LEVEL))
    if unknown:
        raise ConfigError(f"{path}: unknown section(s) {', '.join(unknown)}; allowed: {', '.join(TOP_LEVEL)}")
    for key in TOP_LEVEL:
        if doc.get(key) is not None and not isinstance(doc[key], dict):
            raise ConfigError(f"{path}: section {key!r} must be a mapping")
    return {k: dict(doc.get(k) or {}) for k in TOP_LEVEL}


def model_from_spec(spec: dict[str, Any]) -> tuple[Any, dict[str, Any]]:
    """ModelConfig from {preset, arch, family, base_width, **overrides}; returns (cfg, meta)."""
    from tlmsearch.presets import preset
    from tlmsearch.profiles import ProfileSpec

    spec = dict(spec)
    p = preset(str(spec.pop("preset", None) or "cpu-s"))
    arch = str(spec.pop("arch", None) or "transformer")
    family = ProfileSpec.parse(str(spec.pop("family", None) or "uniform"))
    base_width = spec.pop("base_width", None)
    widths = family.widths(p.budget(base_width))
    cfg = p.model_config(arch, widths, **spec)
    meta = {"preset": p.name, "arch": arch, "family": str(family), "base_width": base_width or p.base_width}
    return cfg, meta


def resolve_configs(args: argparse.Namespace) -> tuple[Any, Any, Any, dict[str, Any]]:
    """(ModelConfig, TrainConfig, DataConfig, meta) from --config and the flags."""
    from tlmsearch.config import DataConfig, ModelConfig, TrainConfig

    doc = read_config_file(args.config) if args.config else {k: {} for k in TOP_LEVEL}
    model_doc = doc["model"]
    flags = {"preset": args.preset, "arch": args.arch, "family": args.family, "base_width": args.base_width}
    meta: dict[str, Any] = {}
    if any(v is not None for v in flags.values()) or not model_doc or any(k in model_doc for k in SPEC_KEYS):
        if model_doc and not any(k in model_doc for k in SPEC_KEYS):
            # a full ModelConfig in the file: flags rebuild the model, keeping the arch by default
            model_doc = {"arch": model_doc.get("arch")}
        spec = {**model_doc, **{k: v for k, v in flags.items() if v is not None}}
        model_cfg, meta = model_from_spec(spec)
    else:
        model_cfg = ModelConfig.from_dict(model_doc, where="model")

    train_doc = dict(doc["train"])
    for flag, field in (
        ("steps", "steps"), ("lr", "lr"), ("batch_size", "batch_size"), ("grad_accum", "grad_accum"),
        ("schedule", "schedule"), ("dtype", "dtype"), ("device", "device"), ("compile", "compile"),
        ("threads", "threads"), ("eval_interval", "eval_interval"), ("eval_windows", "eval_windows"),
        ("seed", "seed"),
    ):  # fmt: skip
        value = getattr(args, flag)
        if value is not None:
            train_doc[field] = value
    train_cfg = TrainConfig.from_dict(train_doc, where="train")

    data_doc = dict(doc["data"])
    if args.corpus is not None:
        data_doc["corpus"] = args.corpus
    if args.tokenizer is not None:
        data_doc.update(parse_tokenizer(args.tokenizer))
    data_cfg = DataConfig.from_dict(data_doc, where="data")
    return model_cfg, train_cfg, data_cfg, {**doc["meta"], **meta}


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
    from tlmsearch import rundir
    from tlmsearch.errors import ConfigError

    model_cfg, train_cfg, data_cfg, meta = resolve_configs(args)
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
    rundir.write_config(run_dir, {"model": model_cfg, "train": train_cfg, "data": data_cfg, "meta": meta})
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
