"""The short-trial trainer: one function, `train`, as lean as a hand-written PyTorch loop.

    result = train(model_cfg, TrainConfig(steps=300), DataConfig(corpus="shakespeare"),
                   report=lambda step, m: print(step, m["val_loss"]))

- AdamW (weight decay on Linear and Embedding weights only), linear warmup then cosine, WSD
  (warmup-stable-decay) or constant learning rate; global-norm gradient clipping; gradient
  accumulation; bf16 autocast (CPU and CUDA); optional `torch.compile`; the torch thread
  count set for the trial and restored afterwards; full seeding (model init and batch order
  both follow `TrainConfig.seed`).
- Every `eval_interval` steps and at the last step: loss on the fixed validation windows, in
  nats per token (`val_loss`), perplexity and bits per byte; `report(step, metrics)` follows.
  Titans and Hope-attention also report `inner_clip_frac`: the fraction of test-time token
  updates since the previous evaluation that the inner-gradient safety clip scaled down.
- With `checkpoint_dir`, a checkpoint (model, optimizer, schedule position, data position,
  loss history, RNG states) is written every `checkpoint_interval` steps (0: at every
  evaluation, before `report` is called), and also every `checkpoint_every_s` seconds of wall
  time (a long run between evaluations loses little when killed); when the folder already holds
  one, training resumes from it and ends with exactly the numbers of an uninterrupted run.
- With `parallel`, the run is one of N data-parallel workers of torch.distributed's process
  group: each reads its share of every step's windows and the numbers are those of one worker
  (`tlmsearch.training.parallel`); worker 0 writes the checkpoints.
- `stop()` (optional) is asked after every step; when it says yes, a checkpoint is written (with
  `checkpoint_dir`) and `TrainingInterrupted` is raised: a signal handler only sets a flag, and
  the run stops between two steps, where its state is whole.
- A non-finite training loss raises `TrainingDiverged` naming the step and the value.

The hot loop does no host synchronisation per step on CUDA (losses stay on the device and are
checked for finiteness every few steps); the training windows of step k are drawn from a
generator seeded by (seed, k), so a resumed run reads exactly the batches it would have read.
"""

from __future__ import annotations

import contextlib
import dataclasses
import math
import os
import pickle
import random
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

from tlmsearch.core.base import ALL_WINDOWS, DataConfig, ModelConfig, TrainConfig
from tlmsearch.core.validate import check_training_fits
from tlmsearch.data import TokenData, check_windows, gather, prepare, tile_windows, train_starts, val_windows
from tlmsearch.errors import ConfigError
from tlmsearch.models import build_model, count_params, flops_per_token
from tlmsearch.models.build import weight_decay_split
from tlmsearch.models.common import inner_clip_fraction
from tlmsearch.models.parametrization import lr_scales
from tlmsearch.training.hardware import matmul_peak, resolve_device, thread_count, torch_dtype
from tlmsearch.training.parallel import DataParallel, all_sum, check_batch, no_sync, sum_clip_stats, wrap

Report = Callable[[int, dict[str, float]], None]
CHECKPOINT_FILE = "checkpoint.pt"
_CHECKPOINT_VERSION = 1
# fields that may differ between a checkpoint and the run resuming from it (tokens_per_param is
# how the steps were asked for; the steps themselves are compared)
_RESUME_MAY_DIFFER = {"threads", "checkpoint_interval", "device", "tokens_per_param"}


class TrainingInterrupted(RuntimeError):
    """`stop()` asked the run to end; `checkpoint` is where it was saved (None without a folder)."""

    def __init__(self, step: int, checkpoint: Path | None) -> None:
        super().__init__(f"training interrupted at step {step}")
        self.step = step
        self.checkpoint = checkpoint


class TrainingDiverged(RuntimeError):
    """The training loss became NaN or infinite."""

    def __init__(self, step: int, value: float) -> None:
        super().__init__(f"training diverged at step {step}: loss = {value}")
        self.step = step
        self.value = value


@dataclasses.dataclass(frozen=True)
class TrainResult:
    """Final metrics, the evaluation curve (one dict per evaluation) and the resolved model config."""

    metrics: dict[str, float]
    curve: list[dict[str, float]]
    model_config: ModelConfig

    def to_dict(self) -> dict[str, Any]:
        return {"metrics": self.metrics, "curve": self.curve, "model_config": self.model_config.to_dict()}


def resolve_vocab(model_cfg: ModelConfig, data_cfg: DataConfig) -> ModelConfig:
    """`model_cfg` with `vocab_size` set to the tokenizer's (prepares the corpus if needed)."""
    return _with_vocab(model_cfg, prepare(data_cfg))


def check_run(model_cfg: ModelConfig, train_cfg: TrainConfig, data_cfg: DataConfig) -> ModelConfig:
    """Everything `train` would refuse before its first step, checked without training: the
    device exists, the corpus prepares and holds a training and a validation window, the model
    and batch fit in memory. Returns `model_cfg` with the tokenizer's `vocab_size`.

    `tlmsearch train` calls it before it creates the run directory, so that a refused run
    leaves no directory behind (and its name free).
    """
    resolve_device(train_cfg.device)  # "no CUDA device" as a ConfigError
    data = prepare(data_cfg)
    check_windows(data, model_cfg.seq_len)
    model_cfg = _with_vocab(model_cfg, data)
    check_training_fits(model_cfg, train_cfg)
    return model_cfg


def _with_vocab(model_cfg: ModelConfig, data: TokenData) -> ModelConfig:
    if model_cfg.vocab_size == data.vocab_size:
        return model_cfg
    return dataclasses.replace(model_cfg, vocab_size=data.vocab_size)


def lr_at(step: int, cfg: TrainConfig) -> float:
    """Learning rate for optimizer update number `step` (0-based)."""
    warmup = min(cfg.warmup_steps, cfg.steps)
    if warmup and step < warmup:
        return cfg.lr * (step + 1) / warmup
    low = cfg.lr * cfg.min_lr_ratio
    if cfg.schedule == "constant":
        return cfg.lr
    if cfg.schedule == "cosine":
        span = max(1, cfg.steps - warmup)
        progress = min(1.0, (step - warmup) / span)
        return low + (cfg.lr - low) * 0.5 * (1.0 + math.cos(math.pi * progress))
    # wsd: stable at the peak, then a linear decay over the last decay_fraction of the steps
    decay_steps = max(1, round(cfg.steps * cfg.decay_fraction))
    decay_start = max(warmup, cfg.steps - decay_steps)
    if step < decay_start:
        return cfg.lr
    progress = min(1.0, (step - decay_start + 1) / max(1, cfg.steps - decay_start))
    return cfg.lr + (low - cfg.lr) * progress


def autocast_for(device: torch.device, dtype: str) -> Callable[[], contextlib.AbstractContextManager[Any]]:
    """A context factory: autocast to `dtype` on `device` ("float32": no autocast)."""
    if dtype == "float32":
        return contextlib.nullcontext
    return lambda: torch.autocast(device.type, dtype=torch_dtype(dtype))


ValSet = tuple[torch.Tensor, float]  # validation windows (W, T+1) on the device, and the bytes they predict


def val_sets(data: TokenData, seq_len: int, cfg: TrainConfig, device: torch.device) -> tuple[ValSet, ValSet]:
    """The fixed validation windows of every evaluation, and those of the last one (more of
    them with `final_eval_windows`: the trial's result; the same set otherwise)."""

    def windows_at(starts: Any) -> ValSet:
        windows = torch.from_numpy(gather(data.val, starts, seq_len)).to(device)
        if data.token_bytes is None:
            return windows, float("nan")
        return windows, float(data.token_bytes[windows[:, 1:].cpu().numpy()].sum())

    n_val = data.val.shape[0]
    val = windows_at(val_windows(n_val, seq_len, cfg.eval_windows))
    final = cfg.final_eval_windows
    if final == ALL_WINDOWS:
        return val, windows_at(tile_windows(n_val, seq_len))
    if final and final != cfg.eval_windows:
        return val, windows_at(val_windows(n_val, seq_len, final))
    return val, val


EVAL_TOKENS = 1024  # an evaluation reads at least this many tokens per forward (short windows batch up)


def eval_batch(cfg: TrainConfig, seq_len: int) -> int:
    """Validation windows per evaluation forward: the training batch, or more where its windows
    are short, so that a forward reads at least `EVAL_TOKENS` tokens (at seq_len 32 and batch 8,
    a whole-split final evaluation ran 4x the forwards it needs). On this project's CPU, forwards
    of about 1,024 tokens were the fastest for the small presets: at 2,048 cpu-xs evaluated up
    to a fifth slower (`python -m bench.bench_eval`). The sum over windows is the same up to
    float rounding."""
    return max(cfg.batch_size, EVAL_TOKENS // seq_len)


def at_least_fp32(x: torch.Tensor) -> torch.Tensor:
    """`x` in float32 for the loss (bf16 logits under autocast); float64 stays float64, so a
    model trained in float64 (exactness tests) computes its loss in float64 too."""
    return x.to(torch.promote_types(x.dtype, torch.float32))


@torch.no_grad()
def val_nats(
    model: nn.Module,
    windows: torch.Tensor,
    batch_size: int,
    autocast: Callable[[], contextlib.AbstractContextManager[Any]] = contextlib.nullcontext,
) -> float:
    """Summed cross-entropy (nats) of `model` over validation `windows` (W, T+1), `batch_size`
    windows at a time, in evaluation mode (the model's mode is restored after)."""
    total = torch.zeros((), dtype=torch.float64, device=windows.device)
    was_training = model.training
    model.eval()
    for i in range(0, windows.shape[0], batch_size):
        window = windows[i : i + batch_size]  # (b, T+1)
        with autocast():
            logits = model(window[:, :-1])  # (b, T, V)
        total += F.cross_entropy(at_least_fp32(logits).flatten(0, 1), window[:, 1:].reshape(-1), reduction="sum")
    model.train(was_training)
    return float(total)


def static_metrics(model_cfg: ModelConfig) -> dict[str, float]:
    """The parameter counts and FLOPs per token of `model_cfg` (in every trial's final metrics)."""
    return {
        **count_params(model_cfg).metrics(),
        "flops_per_token": float(flops_per_token(model_cfg)),
    }


def eval_metrics(
    *,
    step: int,
    tokens_per_step: int,
    static_metrics: dict[str, float],
    n_train_tokens: int,
    val_nats: float,
    n_tokens: int,
    n_bytes: float,
    train_loss: float,
    lr: float,
    train_time: float,
    peak_flops: float,
    elapsed: float,
) -> dict[str, float]:
    """The metrics of one evaluation (what `report` receives): `val_nats` summed over `n_tokens`
    validation tokens that spell `n_bytes` bytes, after `step` steps of `tokens_per_step` tokens
    that took `train_time` seconds of training; `static_metrics` holds the parameter and FLOP
    counts (`params_non_embedding`, `flops_per_token`)."""
    val_loss = val_nats / n_tokens
    tokens = step * tokens_per_step
    tokens_per_s = tokens / train_time if train_time > 0 else float("nan")
    return {
        "step": float(step),
        "tokens": float(tokens),
        "tokens_per_param": tokens / static_metrics["params_non_embedding"],
        "epochs": tokens / n_train_tokens,
        "val_loss": val_loss,
        "val_ppl": math.exp(min(val_loss, 700.0)),
        "val_bpb": val_nats / (math.log(2) * n_bytes),
        "val_tokens": float(n_tokens),
        "train_loss": train_loss,
        "lr": lr,
        "tokens_per_s": tokens_per_s,
        "mfu": tokens_per_s * static_metrics["flops_per_token"] / peak_flops,
        "elapsed_s": elapsed,
    }


def make_optimizer(model: nn.Module, cfg: TrainConfig, device: torch.device) -> torch.optim.Optimizer:
    """AdamW with weight decay on the model's matrices only (`weight_decay_split`: Linear and
    Embedding weights; not norms, biases, conv taps, memory initial weights, persistent tokens).

    The parameters a width-aware parametrisation gave an lr multiplier (`lr_scales`, recorded by
    `build_model(..., parametrization="width")`) go to groups of their own, one per multiplier,
    each carrying `lr_scale`; the loop sets every group's lr to the schedule's lr times its
    `lr_scale` (1 when absent). Under "standard" the groups are exactly [decay, no decay]."""
    params = dict(model.named_parameters())
    decay, keep = weight_decay_split(model)
    scales = lr_scales(model)
    if (scales is not None) != (cfg.parametrization == "width"):
        raise ValueError(f"the model was not built with parametrization={cfg.parametrization!r}")
    scales = scales or {}
    scaled: dict[tuple[float, float], list[nn.Parameter]] = {}  # (weight decay, lr multiplier) -> params
    for names, wd in ((decay, cfg.weight_decay), (keep, 0.0)):
        for n in names:
            if n in scales:
                scaled.setdefault((wd, scales[n]), []).append(params[n])
    groups: list[dict[str, Any]] = [
        {"params": [params[n] for n in decay if n not in scales], "weight_decay": cfg.weight_decay},
        {"params": [params[n] for n in keep if n not in scales], "weight_decay": 0.0},
    ]
    groups += [{"params": ps, "weight_decay": wd, "lr": cfg.lr * m, "lr_scale": m} for (wd, m), ps in scaled.items()]
    kwargs: dict[str, Any] = {"lr": cfg.lr, "betas": cfg.betas, "eps": cfg.eps}
    if device.type in ("cpu", "cuda"):
        kwargs["fused"] = True
    return torch.optim.AdamW(groups, **kwargs)


def train(
    model_cfg: ModelConfig,
    train_cfg: TrainConfig,
    data_cfg: DataConfig,
    report: Report | None = None,
    *,
    checkpoint_dir: Path | str | None = None,
    progress: Callable[[int], None] | None = None,
    checkpoint_every_s: float = 0.0,
    stop: Callable[[], bool] | None = None,
    parallel: DataParallel | None = None,
) -> TrainResult:
    """Train `model_cfg` on `data_cfg` as `train_cfg` says; see the module docstring.

    `report(step, metrics)` is called after each evaluation with val_loss, val_ppl, val_bpb,
    train_loss, tokens_per_s, mfu, lr, step, tokens, elapsed_s. `progress(step)` (optional) is
    called after every optimizer step and costs nothing (no device synchronisation).
    `checkpoint_every_s` > 0 adds checkpoints by wall time; `stop()` ends the run early with a
    checkpoint and `TrainingInterrupted` (see the module docstring). `parallel` (this process's
    rank among the data-parallel workers of torch.distributed's default group) trains the run
    over several workers with the numbers of one (`tlmsearch.training.parallel`).
    """
    with thread_count(train_cfg.threads):
        ckpt = Path(checkpoint_dir) if checkpoint_dir else None
        run = _Run(model_cfg, train_cfg, data_cfg, ckpt, parallel or DataParallel(rank=0, world=1))
        return run.loop(report, progress, checkpoint_every_s, stop)


class _Run:
    """State of one training run (kept in one place so checkpoints can capture it)."""

    def __init__(
        self, model_cfg: ModelConfig, cfg: TrainConfig, data_cfg: DataConfig, ckpt: Path | None, parallel: DataParallel
    ):
        self.cfg, self.data_cfg, self.ckpt_dir, self.parallel = cfg, data_cfg, ckpt, parallel
        check_batch(cfg.batch_size, parallel.world)
        self.device = resolve_device(cfg.device)
        self.data = prepare(data_cfg)
        check_windows(self.data, model_cfg.seq_len)  # one line with the corpus size, before any step
        self.model_cfg = _with_vocab(model_cfg, self.data)
        check_training_fits(self.model_cfg, cfg)  # one line with the estimate, not the allocator's error
        T = self.model_cfg.seq_len

        torch.manual_seed(cfg.seed)
        random.seed(cfg.seed)
        self.model = build_model(self.model_cfg, seed=cfg.seed, init=cfg.init, parametrization=cfg.parametrization).to(
            self.device
        )
        self.model.train()
        # several workers: DDP all-reduces the gradients; each reads `rows` of every micro-batch,
        # its loss weighted by its share of the global batch (see tlmsearch.training.parallel)
        self.ddp = wrap(self.model, self.device) if parallel.world > 1 else None
        self.rows = parallel.rows(cfg.batch_size)
        self.share = (self.rows.stop - self.rows.start) / cfg.batch_size
        module = self.ddp if self.ddp is not None else self.model
        self.forward: Callable[[torch.Tensor], torch.Tensor] = (
            torch.compile(module) if cfg.compile else module  # type: ignore[assignment]
        )
        self.optimizer = make_optimizer(self.model, cfg, self.device)
        # the moving average of the weights (`ema_decay`), updated after every optimizer step
        self.ema: list[torch.Tensor] | None = (
            [p.detach().clone() for p in self.model.parameters()] if cfg.ema_decay > 0 else None
        )
        self.autocast = autocast_for(self.device, cfg.dtype)

        # data: the fixed validation windows (training windows are drawn per step from the seed);
        # the last evaluation may read more of them (`final_eval_windows`): the trial's result
        self.val, self.final_val = val_sets(self.data, T, cfg, self.device)

        self.static_metrics = static_metrics(self.model_cfg)
        self.tokens_per_step = cfg.batch_size * cfg.grad_accum * T
        self.n_train_tokens = int(self.data.train.shape[0])
        self.peak_flops = matmul_peak(self.device, cfg.dtype, data_cfg.cache_path())  # cached after first use

        # progress state (what a checkpoint saves)
        self.step = 0
        self.losses = torch.zeros(cfg.steps, device=self.device)  # per-step mean training loss
        self.curve: list[dict[str, float]] = []
        self.train_time = 0.0  # seconds spent in training steps (evaluation excluded)
        self.elapsed = 0.0  # wall seconds of earlier sessions of this run
        if self.ckpt_dir is not None and (self.ckpt_dir / CHECKPOINT_FILE).is_file():
            self._load_checkpoint(self.ckpt_dir / CHECKPOINT_FILE)

    # ------------------------------------------------------------------------- the loop

    def loop(
        self,
        report: Report | None,
        progress: Callable[[int], None] | None,
        checkpoint_every_s: float = 0.0,
        stop: Callable[[], bool] | None = None,
    ) -> TrainResult:
        cfg, T = self.cfg, self.model_cfg.seq_len
        V = self.model_cfg.vocab_size
        on_cpu, check_every = self.device.type == "cpu", 16
        n_train = self.data.train.shape[0]
        checked = self.step
        last_eval = int(self.curve[-1]["step"]) if self.curve else 0
        session_start = time.perf_counter()
        t0 = last_save = session_start
        while self.step < cfg.steps:
            lr = lr_at(self.step, cfg)
            for group in self.optimizer.param_groups:
                group["lr"] = lr * group.get("lr_scale", 1.0)  # per-layer multiplier (parametrization)
            loss_sum: torch.Tensor | None = None
            starts = train_starts(n_train, T, (cfg.grad_accum, cfg.batch_size), cfg.seed, self.step)
            for micro in range(cfg.grad_accum):
                window = torch.from_numpy(gather(self.data.train, starts[micro][self.rows], T))
                window = window.to(self.device, non_blocking=True)  # (B, T+1); B / workers rows with several
                x, y = window[:, :-1], window[:, 1:]  # (B, T), (B, T)
                with no_sync(self.ddp, micro == cfg.grad_accum - 1):
                    with self.autocast():
                        logits = self.forward(x)  # (B, T, V)
                    loss = F.cross_entropy(at_least_fp32(logits).view(-1, V), y.reshape(-1))
                    if self.ddp is not None:  # DDP averages over the workers: weight by the share of the batch
                        loss = loss * (self.share * self.parallel.world)
                    (loss / cfg.grad_accum if cfg.grad_accum > 1 else loss).backward()
                if self.ddp is not None:
                    loss = loss.detach() / self.parallel.world  # this worker's part of the global mean
                loss_sum = loss.detach() if loss_sum is None else loss_sum + loss.detach()
            if cfg.grad_clip > 0:
                torch.nn.utils.clip_grad_norm_(self.model.parameters(), cfg.grad_clip)
            self.optimizer.step()
            self.optimizer.zero_grad(set_to_none=True)
            if self.ema is not None:
                self._update_ema()
            assert loss_sum is not None
            step_loss = loss_sum / cfg.grad_accum if cfg.grad_accum > 1 else loss_sum
            self.step += 1
            if progress is not None:
                progress(self.step)
            time_to_save = checkpoint_every_s > 0 and time.perf_counter() - last_save >= checkpoint_every_s
            stop_now = stop is not None and stop() and self.step < cfg.steps
            if self.ddp is not None:  # the global loss; a clock or a signal on one worker decides for all
                flags = on_cpu or stop is not None or checkpoint_every_s > 0
                step_loss, stop_now, time_to_save = self._agree(step_loss, stop_now, time_to_save, flags)
            self.losses[self.step - 1] = step_loss

            evaluate_now = self.step % cfg.eval_interval == 0 or self.step == cfg.steps
            if on_cpu:  # reading a CPU scalar costs no synchronisation
                value = float(step_loss)
                if not math.isfinite(value):
                    raise TrainingDiverged(self.step, value)
            elif self.step - checked >= check_every or evaluate_now:
                self._check_finite(checked, self.step)
                checked = self.step
            ckpt_every = cfg.checkpoint_interval
            save_now = self.ckpt_dir is not None and (
                (ckpt_every and self.step % ckpt_every == 0)
                or (not ckpt_every and evaluate_now)
                or stop_now
                or time_to_save
            )
            if evaluate_now or save_now:
                if self.device.type == "cuda":
                    torch.cuda.synchronize(self.device)
                now = time.perf_counter()
                self.train_time += now - t0
                if evaluate_now:
                    metrics = self._evaluate(last_eval, lr, self.elapsed + now - session_start)
                    last_eval = self.step
                    self.curve.append(metrics)
                if save_now:
                    self._save_checkpoint(self.elapsed + time.perf_counter() - session_start)
                    last_save = time.perf_counter()
                if evaluate_now and report is not None:
                    report(self.step, dict(metrics))
                t0 = time.perf_counter()
            if stop_now:
                saved = self.ckpt_dir / CHECKPOINT_FILE if self.ckpt_dir is not None else None
                raise TrainingInterrupted(self.step, saved)
        wall = self.elapsed + time.perf_counter() - session_start
        final = dict(self.curve[-1]) if self.curve else {}
        final.update(self.static_metrics)
        final["wall_s"] = wall
        final["steps"] = float(self.step)
        return TrainResult(metrics=final, curve=list(self.curve), model_config=self.model_cfg)

    def _agree(self, loss: torch.Tensor, stop: bool, save: bool, flags: bool) -> tuple[torch.Tensor, bool, bool]:
        """The step's loss summed over the workers (each holds its share of the global mean) and,
        with `flags`, whether any worker asks to stop or to save. Reading the flags synchronises
        the device, so on CUDA they travel only when a worker can raise them (`stop` or a clock)."""
        if not flags:
            return all_sum(loss.detach().clone()), stop, save
        sent = torch.tensor([0.0, float(stop), float(save)], dtype=torch.float64, device=loss.device)
        sent[0] = loss.detach()
        got = all_sum(sent)
        return got[0].to(loss.dtype), bool(got[1] > 0), bool(got[2] > 0)

    def _check_finite(self, start: int, stop: int) -> None:
        chunk = self.losses[start:stop]
        bad = (~torch.isfinite(chunk)).nonzero()
        if bad.numel():
            i = int(bad[0, 0])
            raise TrainingDiverged(start + i + 1, float(chunk[i]))

    @torch.no_grad()
    def _update_ema(self) -> None:
        """ema <- d * ema + (1 - d) * weights, with d warming up as (1 + t) / (10 + t) so that the
        first steps' random weights fade fast (the usual warm-up of a weight average)."""
        assert self.ema is not None
        decay = min(self.cfg.ema_decay, (1 + self.step) / (10 + self.step))
        torch._foreach_lerp_(self.ema, [p.detach() for p in self.model.parameters()], 1.0 - decay)

    @contextlib.contextmanager
    def _ema_weights(self) -> Any:
        """The model holds the averaged weights inside the block, its own ones again after it."""
        assert self.ema is not None
        params = [p.data for p in self.model.parameters()]
        saved = [p.clone() for p in params]
        torch._foreach_copy_(params, self.ema)
        try:
            yield
        finally:
            torch._foreach_copy_(params, saved)

    def _val_nats(self, windows: torch.Tensor) -> float:
        batch = eval_batch(self.cfg, self.model_cfg.seq_len)
        if self.ddp is None:
            return val_nats(self.model, windows, batch, self.autocast)
        # several workers: each sums the nats of its share of the windows, then they add up
        mine = windows[self.parallel.rows(windows.shape[0])]
        nats = torch.tensor(val_nats(self.model, mine, batch, self.autocast), dtype=torch.float64, device=self.device)
        return float(all_sum(nats))

    def _evaluate(self, last_eval: int, lr: float, elapsed: float) -> dict[str, float]:
        if self.ddp is not None:
            sum_clip_stats(self.model)  # every worker's training forwards count
        clip_frac = inner_clip_fraction(self.model)  # training forwards since the last evaluation
        windows, n_bytes = self.final_val if self.step == self.cfg.steps else self.val
        n_tokens = windows.shape[0] * (windows.shape[1] - 1)
        last_nats = self._val_nats(windows)
        if self.ema is not None:
            with self._ema_weights():
                val_nats = self._val_nats(windows)
        else:
            val_nats = last_nats
        metrics = eval_metrics(
            step=self.step,
            tokens_per_step=self.tokens_per_step,
            static_metrics=self.static_metrics,
            n_train_tokens=self.n_train_tokens,
            val_nats=val_nats,
            n_tokens=n_tokens,
            n_bytes=n_bytes,
            train_loss=float(self.losses[last_eval : self.step].mean()),
            lr=lr,
            train_time=self.train_time,
            peak_flops=self.peak_flops,
            elapsed=elapsed,
        )
        if self.ema is not None:
            metrics["val_loss_last"] = last_nats / n_tokens
        if clip_frac is not None:
            metrics["inner_clip_frac"] = clip_frac
        return metrics

    # ------------------------------------------------------------------------- checkpoints

    def _configs(self) -> dict[str, Any]:
        return {"model": self.model_cfg.to_dict(), "train": self.cfg.to_dict(), "data": self.data_cfg.to_dict()}

    def _save_checkpoint(self, elapsed: float) -> None:
        assert self.ckpt_dir is not None
        if not self.parallel.writer:  # worker 0 writes for all (their states are equal)
            return
        self.ckpt_dir.mkdir(parents=True, exist_ok=True)
        state = {
            "version": _CHECKPOINT_VERSION,
            "step": self.step,
            "model": self.model.state_dict(),
            "optimizer": self.optimizer.state_dict(),
            "ema": self.ema if self.ema is not None else [],
            "losses": self.losses.cpu(),
            "curve": self.curve,
            "train_time": self.train_time,
            "elapsed": elapsed,
            "configs": self._configs(),
            "data_sha256": self.data.sha256,
            "rng": {
                "torch": torch.get_rng_state(),
                "cuda": torch.cuda.get_rng_state_all() if torch.cuda.is_available() else [],
                "python": random.getstate(),
            },
        }
        path = self.ckpt_dir / CHECKPOINT_FILE
        tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")
        torch.save(state, tmp)
        tmp.replace(path)

    def _load_checkpoint(self, path: Path) -> None:
        try:
            state = torch.load(path, map_location=self.device, weights_only=True)
        except Exception as exc:
            raise ConfigError(f"cannot read checkpoint {path}: {_load_failure(exc)}") from None
        if not isinstance(state, dict):  # e.g. a list saved by something else under this name
            raise ConfigError(f"checkpoint {path} holds a {type(state).__name__}, not a tlmsearch checkpoint")
        if state.get("version") != _CHECKPOINT_VERSION:
            raise ConfigError(f"checkpoint {path} has format {state.get('version')}, expected {_CHECKPOINT_VERSION}")
        _check_same_configs(state["configs"], self._configs(), path)
        if state["data_sha256"] != self.data.sha256:
            raise ConfigError(f"checkpoint {path} was written for different data (the corpus changed)")
        self.model.load_state_dict(state["model"])
        self.optimizer.load_state_dict(state["optimizer"])
        if self.ema is not None:
            self.ema = [t.to(self.device) for t in state["ema"]]
        self.step = int(state["step"])
        self.losses = state["losses"].to(self.device)
        self.curve = [dict(c) for c in state["curve"]]
        self.train_time = float(state["train_time"])
        self.elapsed = float(state["elapsed"])
        torch.set_rng_state(state["rng"]["torch"].cpu())
        if state["rng"]["cuda"] and torch.cuda.is_available():
            torch.cuda.set_rng_state_all([s.cpu() for s in state["rng"]["cuda"]])
        random.setstate(_as_tuple(state["rng"]["python"]))


def _load_failure(exc: Exception) -> str:
    """Why `torch.load` refused a checkpoint, in one line. The safe (weights-only) load's own
    message suggests loading without it, which a damaged or foreign file must never get."""
    text = str(exc).strip()
    if "weights only load failed" in text.lower() or isinstance(exc, pickle.UnpicklingError):
        return "damaged, or not a checkpoint tlmsearch wrote (it holds objects a safe load refuses)"
    first = text.splitlines()[0] if text else type(exc).__name__
    return f"damaged or not a checkpoint ({first})"


def _as_tuple(x: Any) -> Any:
    return tuple(_as_tuple(v) for v in x) if isinstance(x, list | tuple) else x


def _check_same_configs(saved: dict[str, Any], current: dict[str, Any], path: Path) -> None:
    for section in ("model", "train", "data"):
        for key in sorted(set(saved[section]) | set(current[section])):
            if section == "train" and key in _RESUME_MAY_DIFFER:
                continue
            if section == "data" and key == "cache_dir":
                continue
            a, b = saved[section].get(key), current[section].get(key)
            if a != b:
                raise ConfigError(
                    f"checkpoint {path} was written for a different config ({section}.{key}: {a!r} -> {b!r}); "
                    "use a new checkpoint folder"
                )
