"""Packed training: one process trains M members of one architecture and shape side by side.

    outcomes = train_pack([Member(model=cfg_a, train=t0), Member(model=cfg_b, train=t1)], data_cfg)

Members may differ in their seed (initialisation and data order) and in their MLP width
profile; everything else (architecture, shape, and every other training field) is shared.
Each member is built exactly as `trainer.train` builds it alone (`build_model` with its own
seed: the keyed initialisation), its SwiGLUs padded to the widest member's (`padding`), and
the members' parameters are stacked along a leading dimension (`torch.func.stack_module_state`).
One forward is the architecture's own forward under `torch.func.vmap` over the members
(`functional_call`), so every family packs without code of its own. Per member, as alone:
its training windows (`train_starts` with its seed), its loss, its gradient clipped to its
own norm, its AdamW moments and learning rate (`optim.PackedAdamW`), its moving average, its
evaluation on the shared validation windows and its `TrainResult`. A member whose loss turns
non-finite leaves the pack with `TrainingDiverged` as its outcome; the others go on.

In float64 on CPU a member's logits equal those of the same trial trained alone to ~1e-13
after 20 steps (tests/unit/pack/test_pack_exact.py): the results differ by summation order only.
Titans' and Hope-attention's scans run in their autograd form inside the pack (their fused
single-node forms have no vmap rule); the two agree to rounding.

Under bf16 autocast the forward runs as alone, except that convolutions (Titans' causal
convs) compute in their weights' float32: vmap's batched conv does not take autocast's cast.
With `compile` the vmapped forward is compiled (`torch.compile`, once for training and once for
evaluation's shared input; a member leaving the pack changes the batch size and recompiles).
Not supported in a pack: checkpoints. Throughput
metrics (tokens_per_s, mfu) are each member's own tokens over the pack's training time.
"""

from __future__ import annotations

import dataclasses
import time
import warnings
from collections.abc import Callable, Sequence
from typing import Any

import torch
import torch.nn.functional as F
from torch.func import functional_call, stack_module_state, vmap

from tlmsearch.core.base import DataConfig, ModelConfig, TrainConfig
from tlmsearch.core.validate import check_training_fits
from tlmsearch.data import check_windows, gather, prepare, train_starts
from tlmsearch.errors import ConfigError
from tlmsearch.models import build_model
from tlmsearch.models.build import weight_decay_split
from tlmsearch.models.common import autograd_scans
from tlmsearch.models.parametrization import lr_scales
from tlmsearch.training.hardware import matmul_peak, resolve_device, thread_count
from tlmsearch.training.pack.optim import PackedAdamW, clip_per_member
from tlmsearch.training.pack.padding import mlp_paths, pad_members, unpad
from tlmsearch.training.trainer import (
    TrainingDiverged,
    TrainResult,
    at_least_fp32,
    autocast_for,
    eval_batch,
    eval_metrics,
    lr_at,
    static_metrics,
    val_sets,
)

PackReport = Callable[[int, int, dict[str, float]], None]  # (member index, step, metrics)


@dataclasses.dataclass(frozen=True)
class Member:
    """One trial of a pack: its model (its own `mlp_widths`) and its training (its own `seed`)."""

    model: ModelConfig
    train: TrainConfig


@dataclasses.dataclass(frozen=True)
class MemberOutcome:
    """What became of a member: its result, or the divergence that ended it."""

    result: TrainResult | None = None
    diverged: TrainingDiverged | None = None


def check_members(members: Sequence[Member]) -> None:
    """Members pack when they differ in `seed` and `mlp_widths` only (one line otherwise)."""
    if not members:
        raise ConfigError("a pack needs at least one member")
    first = members[0]
    for i, m in enumerate(members[1:], start=1):
        pairs = (("train", first.train, m.train, "seed"), ("model", first.model, m.model, "mlp_widths"))
        for section, a, b, free in pairs:
            da, db = a.to_dict(), b.to_dict()
            for key in sorted(set(da) | set(db)):
                if key != free and da.get(key) != db.get(key):
                    raise ConfigError(
                        f"pack member {i} differs from member 0 in {section}.{key} ({da.get(key)!r} -> "
                        f"{db.get(key)!r}); members may differ only in train.seed and model.mlp_widths"
                    )


def train_pack(
    members: Sequence[Member],
    data_cfg: DataConfig,
    report: PackReport | None = None,
    progress: Callable[[int], None] | None = None,
) -> list[MemberOutcome]:
    """Train `members` side by side (see the module docstring); one outcome per member, in order.
    `report(i, step, metrics)` follows each evaluation of member i; `progress(step)` each step."""
    check_members(members)
    with thread_count(members[0].train.threads):
        return Pack(members, data_cfg).run(report, progress)


class Pack:
    """The state of a pack: stacked parameters, optimizer moments, per-member progress."""

    def __init__(self, members: Sequence[Member], data_cfg: DataConfig) -> None:
        check_members(members)
        self.cfg = cfg = members[0].train
        self.device = resolve_device(cfg.device)
        self.data = prepare(data_cfg)
        T = members[0].model.seq_len
        check_windows(self.data, T)
        self.model_cfgs = [dataclasses.replace(m.model, vocab_size=self.data.vocab_size) for m in members]
        self.seeds = [m.train.seed for m in members]
        for mc in self.model_cfgs:
            check_training_fits(mc, cfg)
        models = [
            build_model(mc, seed=s, init=cfg.init, parametrization=cfg.parametrization)
            for mc, s in zip(self.model_cfgs, self.seeds, strict=True)
        ]
        self.own_widths = [mlp_paths(m) for m in models]
        decay, _ = weight_decay_split(models[0])
        scales = [lr_scales(m) or {} for m in models]
        _, masks = pad_members(models)
        params, buffers = stack_module_state(models)  # type: ignore[arg-type]
        self.params = {n: p.detach().to(self.device) for n, p in params.items()}
        self.buffers = {n: b.to(self.device) for n, b in buffers.items()}
        self.masks = {n: m.to(self.device) for n, m in masks.items()}
        # the modules whose code runs (every tensor comes from the stacks; a base on the meta
        # device would save its memory, but tied weights then read garbage)
        self.base = models[0].to(self.device)
        if cfg.dtype != "float32":  # vmap's batched conv ignores autocast: Titans' convs then read
            for module in self.base.modules():  # their input in the weights' dtype (fp32, not bf16)
                if isinstance(module, torch.nn.modules.conv._ConvNd):
                    module.register_forward_pre_hook(_input_in_weight_dtype)
        self.base.train()
        names = {n for s in scales for n in s}
        self.optimizer = PackedAdamW(
            self.params,
            weight_decay={n: cfg.weight_decay if n in decay else 0.0 for n in self.params},
            lr_scale={n: torch.tensor([s.get(n, 1.0) for s in scales], device=self.device) for n in names},
            betas=cfg.betas,
            eps=cfg.eps,
        )
        self.ema = {n: p.clone() for n, p in self.params.items()} if cfg.ema_decay > 0 else None
        self.autocast = autocast_for(self.device, cfg.dtype)
        self.val, self.final_val = val_sets(self.data, T, cfg, self.device)
        self.static = [static_metrics(mc) for mc in self.model_cfgs]
        self.tokens_per_step = cfg.batch_size * cfg.grad_accum * T
        self.peak_flops = matmul_peak(self.device, cfg.dtype, data_cfg.cache_path())
        self.active = list(range(len(members)))  # original indices of the members still training
        self.rows = torch.arange(len(members), device=self.device)  # the same, on the device
        self.step = 0
        self.losses = torch.zeros(len(members), cfg.steps, device=self.device)  # (M, steps)
        self.curves: list[list[dict[str, float]]] = [[] for _ in members]
        self.outcomes: list[MemberOutcome | None] = [None] * len(members)
        self.train_time = 0.0
        # how often the loop reads the losses back to drop diverged members: every step on CPU
        # (a read costs nothing there), every 16 steps on an accelerator (no host sync per step)
        self.check_every = 1 if self.device.type == "cpu" else 16
        self._forwards: dict[str, Callable[..., torch.Tensor]] = {}  # `_batched`'s

    # ------------------------------------------------------------------------- one step

    def forward(self, params: dict[str, torch.Tensor], x: torch.Tensor, shared_input: bool = False) -> torch.Tensor:
        """Logits (M, B, T, V) of the active members for tokens `x` (M, B, T), or (B, T) read by
        every member when `shared_input`."""

        with autograd_scans(), warnings.catch_warnings():  # the fused scans' Functions have no vmap rule
            # CPU attention has no batching rule: vmap runs it member by member, and says so
            warnings.filterwarnings("ignore", message="There is a performance drop", category=UserWarning)
            return self._batched(shared_input)(params, self.buffers, x)

    def _batched(self, shared_input: bool) -> Callable[..., torch.Tensor]:
        """The members' forward under vmap (compiled once per input layout when `compile`)."""
        key = "shared" if shared_input else "own"
        if key not in self._forwards:

            def one(p: dict[str, torch.Tensor], b: dict[str, torch.Tensor], idx: torch.Tensor) -> torch.Tensor:
                with self.autocast():  # inside vmap: around it, a batched conv (Titans) is not cast
                    return functional_call(self.base, (p, b), (idx,))

            fn = vmap(one, in_dims=(0, 0, None if shared_input else 0))
            self._forwards[key] = torch.compile(fn) if self.cfg.compile else fn
        return self._forwards[key]

    def gradients(self, step: int) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
        """The active members' mean training losses (M,) at optimizer step `step` and the
        gradients of their parameters, as the trainer computes them alone (grad_accum
        micro-batches, each member's own windows); not yet masked."""
        cfg, T = self.cfg, self.model_cfgs[0].seq_len
        n_train = self.data.train.shape[0]
        starts = [train_starts(n_train, T, (cfg.grad_accum, cfg.batch_size), self.seeds[i], step) for i in self.active]
        leaves = {n: p.detach().requires_grad_() for n, p in self.params.items()}
        grads: dict[str, torch.Tensor] = {}
        loss_sum = torch.zeros(len(self.active), device=self.device)
        for micro in range(cfg.grad_accum):
            windows = [torch.from_numpy(gather(self.data.train, s[micro], T)) for s in starts]
            window = torch.stack(windows).to(self.device, non_blocking=True)  # (M, B, T+1)
            x, y = window[..., :-1], window[..., 1:]  # (M, B, T) each
            logits = self.forward(leaves, x)  # (M, B, T, V), under autocast when bf16
            V = logits.shape[-1]
            per_token = F.cross_entropy(at_least_fp32(logits).reshape(-1, V), y.reshape(-1), reduction="none")
            loss = per_token.view(len(self.active), -1).mean(1)  # (M,)
            total = (loss / cfg.grad_accum).sum() if cfg.grad_accum > 1 else loss.sum()
            got = torch.autograd.grad(total, list(leaves.values()))
            for (n, _), g in zip(leaves.items(), got, strict=True):
                grads[n] = g if n not in grads else grads[n] + g
            loss_sum = loss_sum + loss.detach()
        return (loss_sum / cfg.grad_accum if cfg.grad_accum > 1 else loss_sum), grads

    def train_step(self) -> None:
        """One optimizer step of every active member."""
        cfg = self.cfg
        lr = lr_at(self.step, cfg)
        losses, grads = self.gradients(self.step)
        for n, mask in self.masks.items():
            grads[n].mul_(mask)  # padded units learn nothing
        if cfg.grad_clip > 0:
            clip_per_member(list(grads.values()), cfg.grad_clip)
        self.optimizer.step(self.params, grads, lr)
        if self.ema is not None:
            decay = min(cfg.ema_decay, (1 + self.step) / (10 + self.step))
            torch._foreach_lerp_(list(self.ema.values()), list(self.params.values()), 1.0 - decay)
        # row i of `losses` is the i-th active member's: its index on the device (no host sync)
        self.losses[:, self.step].index_copy_(0, self.rows, losses.to(self.losses.dtype))
        self.step += 1

    # ------------------------------------------------------------------------- the loop

    def run(
        self, report: PackReport | None = None, progress: Callable[[int], None] | None = None
    ) -> list[MemberOutcome]:
        cfg = self.cfg
        checked = 0
        start = t0 = time.perf_counter()
        while self.step < cfg.steps and self.active:
            self.train_step()
            if progress is not None:
                progress(self.step)
            evaluate_now = self.step % cfg.eval_interval == 0 or self.step == cfg.steps
            if self.step - checked >= self.check_every or evaluate_now:
                self._drop_diverged(checked, self.step)
                checked = self.step
            if evaluate_now and self.active:
                if self.device.type == "cuda":
                    torch.cuda.synchronize(self.device)
                now = time.perf_counter()
                self.train_time += now - t0
                for i, metrics in self._evaluate(lr_at(self.step - 1, cfg), now - start):
                    self.curves[i].append(metrics)
                    if report is not None:
                        report(i, self.step, dict(metrics))
                t0 = time.perf_counter()
        wall = time.perf_counter() - start
        for i in self.active:
            final = dict(self.curves[i][-1]) if self.curves[i] else {}
            final.update(self.static[i])
            final["wall_s"] = wall
            final["steps"] = float(self.step)
            result = TrainResult(metrics=final, curve=list(self.curves[i]), model_config=self.model_cfgs[i])
            self.outcomes[i] = MemberOutcome(result=result)
        assert all(o is not None for o in self.outcomes)
        return [o for o in self.outcomes if o is not None]

    def _drop_diverged(self, first: int, stop: int) -> None:
        """Members whose loss was non-finite at a step in [first, stop) leave the pack."""
        chunk = self.losses[self.active, first:stop]  # (M, k)
        bad = (~torch.isfinite(chunk)).cpu()
        if not bad.any():
            return
        keep = []
        for row, i in enumerate(self.active):
            hits = bad[row].nonzero()
            if hits.numel():
                at = int(hits[0, 0])
                self.outcomes[i] = MemberOutcome(diverged=TrainingDiverged(first + at + 1, float(chunk[row, at])))
            else:
                keep.append(row)
        self._select(keep)

    def _select(self, rows: list[int]) -> None:
        index = torch.tensor(rows, dtype=torch.long, device=self.device)
        self.active = [self.active[r] for r in rows]
        self.rows = self.rows[index]
        self.params = {n: p[index] for n, p in self.params.items()}
        self.buffers = {n: b[index] for n, b in self.buffers.items()}
        self.masks = {n: m[index] for n, m in self.masks.items()}
        if self.ema is not None:
            self.ema = {n: e[index] for n, e in self.ema.items()}
        self.optimizer.select(index)

    # ------------------------------------------------------------------------- evaluation

    @torch.no_grad()
    def val_nats(self, params: dict[str, torch.Tensor], windows: torch.Tensor) -> list[float]:
        """Summed validation nats of each active member over `windows` (W, T+1), in eval mode."""
        total = torch.zeros(len(self.active), dtype=torch.float64, device=self.device)
        self.base.eval()
        batch = eval_batch(self.cfg, windows.shape[1] - 1)
        for i in range(0, windows.shape[0], batch):
            window = windows[i : i + batch]  # (b, T+1)
            logits = self.forward(params, window[:, :-1], shared_input=True)  # (M, b, T, V)
            V = logits.shape[-1]
            y = window[:, 1:].reshape(-1).repeat(len(self.active))
            per_token = F.cross_entropy(at_least_fp32(logits).reshape(-1, V), y, reduction="none")
            total += per_token.view(len(self.active), -1).sum(1).to(torch.float64)
        self.base.train()
        return total.tolist()

    def _clip_fractions(self) -> list[float | None]:
        """Each active member's inner-clip fraction since the last evaluation (then reset)."""
        stats = [b for n, b in self.buffers.items() if n.endswith("clip_stats")]
        if not stats:
            return [None] * len(self.active)
        summed = torch.stack(stats).sum(0).tolist()  # (M, 2): clipped, total
        for b in stats:
            b.zero_()
        return [c / t if t else None for c, t in summed]

    def _evaluate(self, lr: float, elapsed: float) -> list[tuple[int, dict[str, float]]]:
        clip = self._clip_fractions()
        windows, n_bytes = self.final_val if self.step == self.cfg.steps else self.val
        n_tokens = windows.shape[0] * (windows.shape[1] - 1)
        last = self.val_nats(self.params, windows)
        nats = self.val_nats(self.ema, windows) if self.ema is not None else last
        last_eval = int(self.curves[self.active[0]][-1]["step"]) if self.curves[self.active[0]] else 0
        out = []
        for row, i in enumerate(self.active):
            train_loss = float(self.losses[i, last_eval : self.step].mean())
            metrics = eval_metrics(
                step=self.step,
                tokens_per_step=self.tokens_per_step,
                static_metrics=self.static[i],
                n_train_tokens=int(self.data.train.shape[0]),
                val_nats=nats[row],
                n_tokens=n_tokens,
                n_bytes=n_bytes,
                train_loss=train_loss,
                lr=lr,
                train_time=self.train_time,
                peak_flops=self.peak_flops,
                elapsed=elapsed,
            )
            if self.ema is not None:
                metrics["val_loss_last"] = last[row] / n_tokens
            if clip[row] is not None:
                metrics["inner_clip_frac"] = clip[row]  # type: ignore[assignment]
            out.append((i, metrics))
        return out

    # ------------------------------------------------------------------------- members' weights

    @torch.no_grad()
    def member_model(self, i: int) -> torch.nn.Module:
        """Member `i` (still in the pack) as a model of its own widths, holding its current
        weights: what `trainer.train` would have built and trained for it alone."""
        row = self.active.index(i)
        cfg = self.cfg
        model = build_model(self.model_cfgs[i], seed=self.seeds[i], init=cfg.init, parametrization=cfg.parametrization)
        model = model.to(self.device)
        state = unpad({n: p[row] for n, p in self.params.items()}, self.own_widths[i])
        state.update({n: b[row] for n, b in self.buffers.items()})
        for name, t in [*model.named_parameters(), *model.named_buffers()]:
            t.copy_(state[name])
        return model


def _input_in_weight_dtype(module: torch.nn.Module, args: tuple[Any, ...]) -> tuple[Any, ...]:
    weight = module.weight
    assert isinstance(weight, torch.Tensor)
    return (args[0].to(weight.dtype), *args[1:])
