"""Fair throughput of width profiles: a separate, interleaved, repeated micro-benchmark.

Every profile of one budget has the same parameters and FLOPs per token, so the tokens/s a
trial reports while it trains beside other trials say mostly what else the machine ran (the
same cosine widths measured 3,095 tok/s in a search and 4,640 in `verify`). Speed is measured
fairly here instead: the models of several profiles are built on one worker and timed in
rounds; each round times every model once per mode (`train`: forward+backward of one batch;
`infer`: a forward pass of one batch without gradients), in an order rotated from round to
round, after untimed warm-up calls. A model's speed is given relative to a reference model
timed in the same rounds (the uniform profile of the budget): per round, reference seconds /
model seconds (> 1 = faster than the reference), whose median over rounds cancels the load
both shared; the smallest and largest round ratio are its spread.

The noise floor is an A/A test: the reference is timed a second time under another name
(`AA_NAME`); that copy's ratio should be 1, and how far its rounds stray is what the
measurement cannot resolve: `floor = max(|median - 1|, (max - min) / 2)` of the copy's ratios.
A profile whose median ratio differs from 1 by no more than the floor is "within noise".

The timing is injectable (`clock`, the workloads), so the arithmetic is tested with a fake
clock; `model_workloads` builds the real torch workloads and `measure` runs everything.
"""

from __future__ import annotations

import dataclasses
import math
import statistics
import time
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from tlmsearch.core.base import Config, check_choice, check_positive, option
from tlmsearch.core.validate import available_memory_bytes, check_fits, estimate_timing_bytes

if TYPE_CHECKING:  # pragma: no cover
    from tlmsearch.core.base import ModelConfig

MODES: tuple[str, ...] = ("train", "infer")
AA_NAME = "reference (A/A copy)"
Clock = Callable[[], float]
Workloads = Mapping[str, Mapping[str, Callable[[], None]]]  # name -> mode -> one timed call


@dataclasses.dataclass(frozen=True, kw_only=True)
class ThroughputConfig(Config):
    """How the micro-benchmark times each model."""

    batch_size: int = option(8, "sequences per timed call")
    repeats: int = option(5, "timed rounds; each times every model once per mode, in rotated order")
    iters: int = option(1, "calls per timed sample")
    warmup: int = option(1, "untimed calls per model and mode before the first round")
    threads: int = option(1, "torch intra-op threads while timing (0 = leave torch's setting)")
    device: str = option("cpu", "cpu or cuda", choices=("cpu", "cuda"))
    seed: int = option(0, "seed of the models' weights and the timed batch")

    def __post_init__(self) -> None:
        for name in ("batch_size", "repeats", "iters"):
            check_positive(name, getattr(self, name))
        check_positive("warmup", self.warmup, allow_zero=True)
        check_positive("threads", self.threads, allow_zero=True)
        check_choice("device", self.device, ("cpu", "cuda"))


@dataclasses.dataclass(frozen=True)
class Speed:
    """One model's timings in one mode, and its speed relative to the reference."""

    name: str
    mode: str
    seconds: tuple[float, ...]  # per call, one per round
    ratios: tuple[float, ...]  # reference seconds / these seconds, per round (> 1 = faster)
    tokens_per_call: int

    @property
    def ratio(self) -> float:
        return statistics.median(self.ratios)

    @property
    def lo(self) -> float:
        return min(self.ratios)

    @property
    def hi(self) -> float:
        return max(self.ratios)

    @property
    def tokens_per_s(self) -> float:
        return self.tokens_per_call / statistics.median(self.seconds)


def time_rounds(
    workloads: Workloads, *, repeats: int, iters: int = 1, warmup: int = 1, clock: Clock = time.perf_counter
) -> dict[str, dict[str, tuple[float, ...]]]:
    """Seconds per call of every workload, one sample per round.

    Every name has the same modes. Warm-up calls first (untimed); then `repeats` rounds; in
    round r, mode by mode, the names are timed in the order rotated by r, so no model is
    always timed first or last.
    """
    names = list(workloads)
    if not names:
        return {}
    modes = list(workloads[names[0]])
    if any(list(workloads[n]) != modes for n in names):
        raise ValueError("every workload must have the same modes")
    for n in names:
        for m in modes:
            for _ in range(warmup):
                workloads[n][m]()
    out: dict[str, dict[str, list[float]]] = {n: {m: [] for m in modes} for n in names}
    for r in range(repeats):
        k = r % len(names)
        order = names[k:] + names[:k]
        for m in modes:
            for n in order:
                fn = workloads[n][m]
                t0 = clock()
                for _ in range(iters):
                    fn()
                out[n][m].append((clock() - t0) / iters)
    return {n: {m: tuple(v) for m, v in d.items()} for n, d in out.items()}


def speeds(seconds: Mapping[str, Mapping[str, Sequence[float]]], reference: str, tokens_per_call: int) -> list[Speed]:
    """Each model's speed per mode relative to `reference`, round by round."""
    if reference not in seconds:
        raise ValueError(f"reference {reference!r} was not timed")
    out = []
    for name, modes in seconds.items():
        for mode, secs in modes.items():
            ref = seconds[reference][mode]
            ratios = tuple(r / s if s > 0 else math.inf for r, s in zip(ref, secs, strict=True))
            out.append(Speed(name, mode, tuple(secs), ratios, tokens_per_call))
    return out


def noise_floor(ratios: Sequence[float]) -> float:
    """What an A/A pair's round ratios say the measurement cannot resolve (relative)."""
    med = statistics.median(ratios)
    return max(abs(med - 1.0), (max(ratios) - min(ratios)) / 2)


@dataclasses.dataclass(frozen=True)
class Ranking:
    """Speeds of one mode, fastest first, with the noise floor of that mode."""

    mode: str
    floor: float
    speeds: tuple[Speed, ...]

    def within_noise(self, s: Speed) -> bool:
        return abs(s.ratio - 1.0) <= self.floor

    def to_dict(self) -> dict[str, Any]:
        return {
            "mode": self.mode,
            "noise_floor": self.floor,
            "profiles": [
                {
                    "name": s.name,
                    "ratio": s.ratio,
                    "ratio_lo": s.lo,
                    "ratio_hi": s.hi,
                    "tokens_per_s": s.tokens_per_s,
                    "seconds": list(s.seconds),
                    "within_noise": self.within_noise(s),
                }
                for s in self.speeds
            ],
        }


def rankings(all_speeds: Sequence[Speed], aa_name: str = AA_NAME) -> list[Ranking]:
    """Per mode: the models (the A/A copy left out) by median ratio, and the copy's noise floor."""
    out = []
    for mode in dict.fromkeys(s.mode for s in all_speeds):
        of_mode = [s for s in all_speeds if s.mode == mode]
        aa = [s for s in of_mode if s.name == aa_name]
        floor = noise_floor(aa[0].ratios) if aa else math.nan
        ranked = sorted((s for s in of_mode if s.name != aa_name), key=lambda s: -s.ratio)
        out.append(Ranking(mode, floor, tuple(ranked)))
    return out


# ----------------------------------------------------------------------------- torch


def model_workloads(
    models: Mapping[str, ModelConfig], cfg: ThroughputConfig
) -> dict[str, dict[str, Callable[[], None]]]:
    """Per model: a forward+backward call and an inference call on one fixed batch of tokens."""
    import torch
    import torch.nn.functional as F

    from tlmsearch.models.build import build_model  # lazy: heavy (torch)

    device = torch.device(cfg.device)
    cuda = device.type == "cuda"

    def sync() -> None:
        if cuda:
            torch.cuda.synchronize()

    def autocast() -> Any:
        return torch.autocast("cuda", dtype=torch.bfloat16) if cuda else torch.autocast("cpu", enabled=False)

    out: dict[str, dict[str, Callable[[], None]]] = {}
    for name, mcfg in models.items():
        model = build_model(mcfg, seed=cfg.seed).to(device)
        gen = torch.Generator().manual_seed(cfg.seed)
        window = torch.randint(0, mcfg.vocab_size, (cfg.batch_size, mcfg.seq_len + 1), generator=gen).to(device)
        x, y = window[:, :-1], window[:, 1:]

        def train_call(model: Any = model, x: Any = x, y: Any = y, v: int = mcfg.vocab_size) -> None:
            with autocast():
                logits = model(x)  # (B, T, V)
            F.cross_entropy(logits.float().view(-1, v), y.reshape(-1)).backward()
            model.zero_grad(set_to_none=True)
            sync()

        def infer_call(model: Any = model, x: Any = x) -> None:
            with torch.inference_mode(), autocast():
                model(x)
            sync()

        out[name] = {"train": train_call, "infer": infer_call}
    return out


def tokens_per_call(models: Mapping[str, ModelConfig], cfg: ThroughputConfig) -> int:
    seq = {m.seq_len for m in models.values()}
    if len(seq) != 1:
        raise ValueError("every model of one measurement must have the same seq_len")
    return cfg.batch_size * seq.pop()


def check_timing_fits(models: Mapping[str, ModelConfig], cfg: ThroughputConfig) -> int:
    """Refuse (one line with the estimate and the memory available) to time models that cannot
    fit: on the host's available memory for the CPU, the device's free memory for CUDA. Returns
    the estimate in bytes."""
    cuda = cfg.device.startswith("cuda")
    estimate = estimate_timing_bytes(models.values(), cfg.batch_size, "bfloat16" if cuda else "float32")
    if cuda:
        import torch

        available: int | None = int(torch.cuda.mem_get_info(torch.device(cfg.device))[0])
    else:
        available = available_memory_bytes()
    what = f"timing {len(models)} models at batch size {cfg.batch_size} on {cfg.device}"
    check_fits(estimate, available, what, "use a smaller --preset, --batch-size or fewer profiles")
    return estimate


def measure(
    models: Mapping[str, ModelConfig],
    reference: str,
    cfg: ThroughputConfig = ThroughputConfig(),
    *,
    aa: bool = True,
    clock: Clock = time.perf_counter,
) -> list[Speed]:
    """Time `models` interleaved (with an A/A copy of `reference` when `aa`), relative to it."""
    import torch

    if reference not in models:
        raise ValueError(f"reference {reference!r} is not among the models")
    timed = {**models, AA_NAME: models[reference]} if aa else dict(models)
    check_timing_fits(timed, cfg)  # with the estimate and the memory there is, before building any
    before = torch.get_num_threads()
    if cfg.threads:
        torch.set_num_threads(cfg.threads)
    try:
        secs = time_rounds(
            model_workloads(timed, cfg), repeats=cfg.repeats, iters=cfg.iters, warmup=cfg.warmup, clock=clock
        )
    finally:
        torch.set_num_threads(before)
    return speeds(secs, reference, tokens_per_call(timed, cfg))


def trial_metrics(model: ModelConfig, reference: ModelConfig, cfg: ThroughputConfig) -> dict[str, float]:
    """What a search trial records about its speed (`search --objectives val_loss,train_speed`):
    per mode, `<mode>_speed` (median ratio against the reference, > 1 = faster), its round
    range `<mode>_speed_lo` / `_hi`, and the model's `<mode>_bench_tokens_per_s`."""
    out: dict[str, float] = {}
    for s in measure({"trial": model, "reference": reference}, "reference", cfg, aa=False):
        if s.name == "trial":
            out.update({
                f"{s.mode}_speed": s.ratio,
                f"{s.mode}_speed_lo": s.lo,
                f"{s.mode}_speed_hi": s.hi,
                f"{s.mode}_bench_tokens_per_s": s.tokens_per_s,
            })  # fmt: skip
    return out
