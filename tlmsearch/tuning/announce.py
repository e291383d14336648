"""The plan line every search, verify and compare prints before it spends compute.

    search tiny-knots: 8 trials x 120 steps (4 baselines in full; ASHA may stop the other 4 at
    step 40), 2 at a time x 1 thread (transformer, cpu-xs, cpu); estimate 1m02s-2m10s (0.041-0.05
    s/step, 12,000-15,000 tok/s: measured in 6 earlier runs of this shape)

(one line; a trial length given in tokens per parameter adds the line before it that derives
the step count, and a trial count too small for every baseline a note that names those left
out). The arithmetic is `tlmsearch.costs.estimate`'s, the rate `tlmsearch.costs.calibrate`'s
(recorded, or priced from FLOPs: nothing trains). `check_search_price` and `check_fixed_price`
refuse a run priced beyond the limit (`tlmsearch.costs.price.check_price`) unless confirmed.
The line goes to stderr, beside the progress line, so a command's stdout (`--json`,
`--dry-run`'s YAML) stays clean.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any, TextIO

from tlmsearch.configs.presets import preset
from tlmsearch.configs.resolve import trial_length_line, trial_shape
from tlmsearch.configs.search import SearchConfig
from tlmsearch.core.words import plural
from tlmsearch.costs.calibrate import current_load, rate_or_reason
from tlmsearch.costs.estimate import Estimate, Work, estimate, fixed_work, load_drift, plan_line, search_work
from tlmsearch.costs.phases import lr_runs, search_runs
from tlmsearch.costs.price import LIMIT_HOURS, check_price
from tlmsearch.profiles import ProfileSpec
from tlmsearch.rundir.lr import calibration_runs
from tlmsearch.rundir.noise import noise_trial_seeds
from tlmsearch.tuning.ray_session import ensure_ray
from tlmsearch.tuning.resources import local_gpus
from tlmsearch.tuning.trainable import trial_train_config


def slots(cfg: SearchConfig, cpus: float | None = None, gpus: float | None = None) -> int:
    """Trials at once: by CPUs (and GPUs) per trial on `cpus` CPUs (default: this machine's),
    capped by `max_concurrent`; a trial of several data-parallel workers holds theirs."""
    from tlmsearch.training.hardware import cpu_count  # lazy: heavy (torch)

    workers = cfg.workers_per_trial
    n = max(1, int((cpus if cpus is not None else cpu_count()) // (cfg.cpus_per_trial * workers)))
    if cfg.gpu_share > 0 and gpus is not None:
        n = min(n, max(1, int(gpus // (cfg.gpu_share * workers))))
    return min(n, cfg.max_concurrent) if cfg.max_concurrent else n


def _rate(cfg: SearchConfig, at_once: int) -> object:
    model = trial_shape(cfg, ProfileSpec.parse("uniform"))[2]
    return rate_or_reason(model, trial_train_config(cfg, cfg.seed), cfg.data, slots=at_once)


def _tokens_per_step(cfg: SearchConfig) -> int:
    seq = int(cfg.model.get("seq_len", preset(cfg.preset).seq_len))
    return cfg.train.batch_size * cfg.train.grad_accum * seq


def _where(cfg: SearchConfig, at_once: int, runs: int) -> str:
    """Where and how many at once `runs` runs train: the slots, or the runs when fewer."""
    threads = trial_train_config(cfg, cfg.seed).threads
    share = cfg.gpu_share
    device = f"cuda, {share:g} GPU a trial" if share > 0 else "cpu"
    if cfg.workers_per_trial > 1:  # the threads and the GPU are each worker's
        device = f"{'cuda, 1 GPU' if share > 0 else 'cpu'} a worker, {cfg.workers_per_trial} workers a trial"
    return f"{max(1, min(at_once, runs))} at a time x {plural(threads, 'thread')} ({cfg.arch}, {cfg.preset}, {device})"


def estimate_works(cfg: SearchConfig, works: list[Work]) -> list[Estimate] | str:
    """Estimates of batches of `cfg`'s trials that run one after the other (one rate), or why
    there are none (a calibration that fails says so here; the run then meets the same problem)."""
    try:
        rate = _rate(cfg, max(w.slots for w in works))
    except Exception as exc:  # noqa: BLE001 - the estimate is an aside: never the reason a run fails
        return f"timing a few steps failed: {type(exc).__name__}: {str(exc).splitlines()[0][:160]}"
    return rate if isinstance(rate, str) else [estimate(w, rate) for w in works]  # type: ignore[arg-type]


def estimate_work(cfg: SearchConfig, work: Work) -> Estimate | str:
    found = estimate_works(cfg, [work])
    return found if isinstance(found, str) else found[0]


def search_line(cfg: SearchConfig, *, done: int = 0, cpus: float | None = None, gpus: float | None = None) -> str:
    """The plan line of a search (`done`: trials already recorded, for a resume)."""
    noise = 0 if done else len(noise_trial_seeds(cfg))  # full-length runs before the search, never stopped
    lr_n = 0 if done else calibration_runs(cfg)  # the learning-rate calibration's rates x seeds
    lr = 0 if done else lr_runs(cfg)  # the same in trial lengths (a study's calibrate at its verification's)
    first_rung = None if cfg.scheduler == "none" else cfg.grace
    at_once = slots(cfg, cpus, gpus)
    work = search_runs(cfg, done=done, at_once=at_once)
    left = cfg.trials - done
    trials = plural(cfg.trials, "trial")
    head = f"search {cfg.name}: " + (f"{left} of {trials} left" if done else trials)
    head += f" x {plural(cfg.train.steps, 'step')}"
    before = [plural(lr_n, "learning-rate calibration run")] if lr_n else []
    before += [plural(noise, "noise-floor run")] if noise else []
    if before:
        head += f" after {' and '.join(before)} of uniform"
    others = sum(lo < hi for lo, hi in work.runs)
    if others:
        full = len(work.runs) - others - noise - lr
        stop = f"{cfg.scheduler.upper()} may stop"
        head += (
            f" ({plural(full, 'baseline')} in full; {stop} the other {others} at step {first_rung})"
            if full
            else f" ({stop} any of them at step {first_rung})"
        )
    head += f", {_where(cfg, at_once, len(work.runs))}"
    line = _with_length(cfg, plan_line(head, estimate_work(cfg, work), _tokens_per_step(cfg)), f"search {cfg.name}")
    note = "" if done else dropped_baselines_line(cfg)
    return f"{note}\n{line}" if note else line


SHRINK_SEARCH = "fewer --trials, a smaller --preset, or fewer --steps or --tokens-per-param"


def check_search_price(cfg: SearchConfig, *, max_hours: float = LIMIT_HOURS, done: int = 0) -> None:
    """Refuse a search of `cfg` priced beyond `max_hours` of this machine (`costs.price.check_price`);
    a search with no price (its rate could not be worked out) starts."""
    found = estimate_work(cfg, search_runs(cfg, done=done, at_once=slots(cfg, gpus=float(local_gpus()))))
    if not isinstance(found, str):
        check_price(f"search {cfg.name}", found.high_s, yes=False, limit_hours=max_hours, shrink=SHRINK_SEARCH)


def check_fixed_price(cfg: SearchConfig, runs: int, what: str, *, max_hours: float = LIMIT_HOURS) -> None:
    """Refuse `runs` full-length runs of `cfg`'s shape (verify, compare) priced beyond `max_hours`."""
    found = estimate_work(cfg, fixed_work(runs, cfg.train.steps, slots(cfg, gpus=float(local_gpus()))))
    if not isinstance(found, str):
        shrink = "fewer seeds or profiles, or fewer --steps"
        check_price(what, found.high_s, yes=False, limit_hours=max_hours, shrink=shrink)


def fixed_estimate(cfg: SearchConfig, runs: int) -> Estimate | str:
    """`runs` full-length runs of `cfg`'s shape at the recorded (else priced) rates, the load
    now included: `estimate_work` as `check_fixed_price` prices them."""
    return estimate_work(cfg, fixed_work(runs, cfg.train.steps, slots(cfg, gpus=float(local_gpus()))))


def load_drift_here(cfg: SearchConfig) -> tuple[float, str]:
    """`costs.estimate.load_drift` for `cfg`'s trials here, and the words that say the load it
    was read from: (1.0, "") for trials on a GPU."""
    if cfg.gpu_share > 0:
        return 1.0, ""
    from tlmsearch.training.hardware import cpu_count  # lazy: heavy (torch)

    cores = cpu_count()
    load = current_load(cores)
    return load_drift(cores, load), f"beside a load of {load:.1f} on {cores} cores"


def dropped_baselines_line(cfg: SearchConfig) -> str:
    """One line when `cfg.trials` is too few for every baseline (at every budget of a sweep): the
    search runs the first baselines only, and says which it leaves out; "" when all fit."""
    levels = cfg.budget_levels if cfg.base_widths else 1
    total = len(cfg.baselines) * levels
    if cfg.trials >= total:
        return ""
    more = f"--trials {total} or more runs them all"
    if levels == 1:
        left = ", ".join(cfg.baselines[cfg.trials :])
        trials = plural(cfg.trials, "trial")
        return f"note: {trials} leave room for {cfg.trials} of the {total} baselines: {left} not run ({more})"
    return (
        f"note: {cfg.trials} trials leave room for {cfg.trials} of the {total} baseline runs ({len(cfg.baselines)} "
        f"baselines at {levels} budgets): the last {total - cfg.trials} not run ({more})"
    )


def _with_length(cfg: SearchConfig, line: str, what: str) -> str:
    """`line` after the line that says how the trial length in tokens per parameter became the
    step count (`configs.resolve.trial_length_line`), when it was given that way."""
    length = trial_length_line(cfg, what)
    return f"{length}\n{line}" if length else line


def search_and_verify(cfg: SearchConfig, verify_runs: tuple[int, int]) -> Estimate | str:
    """One estimate of a search followed by fewest..most full-length runs of its shape (a verify,
    a study's transfer check): the quickstart's and each architecture's of a study."""
    at_once = slots(cfg, gpus=None)
    levels = cfg.budget_levels if cfg.base_widths else 1
    first_rung = None if cfg.scheduler == "none" else cfg.grace
    noise = len(noise_trial_seeds(cfg)) + lr_runs(cfg)  # full-length runs before the search (calibration: in trials)
    search = search_work(
        cfg.trials + noise, cfg.train.steps, baselines=min(cfg.trials, len(cfg.baselines) * levels) + noise,
        first_rung=first_rung, slots=at_once,
    )  # fmt: skip
    fewest = fixed_work(verify_runs[0], cfg.train.steps, at_once)
    most = fixed_work(verify_runs[1], cfg.train.steps, at_once)
    found = estimate_works(cfg, [search, fewest, most])
    if isinstance(found, str):
        return found
    s, lo, hi = found
    return Estimate(s.low_s + lo.low_s, s.high_s + hi.high_s, s.rate)  # verify: workers started anew


def fixed_line(
    cfg: SearchConfig, runs: int, what: str, *, cpus: float | None = None, gpus: float | None = None, then: str = ""
) -> str:
    """The plan line of `runs` fixed runs of `cfg`'s shape at full length (verify, compare)."""
    at_once = slots(cfg, cpus, gpus)
    work = fixed_work(runs, cfg.train.steps, at_once)
    head = f"{what}: {plural(runs, 'run')} x {cfg.train.steps} steps, {_where(cfg, at_once, runs)}"
    line = plan_line(head, estimate_work(cfg, work), _tokens_per_step(cfg))
    return _with_length(cfg, f"{line}; {then}" if then else line, what)


def say(line: str, stream: TextIO | None = None) -> None:
    print(line, file=stream or sys.stderr, flush=True)


def announce(
    make: Callable[..., str], address: str | None, *args: Any, out: Callable[[str], None] | None = None, **kwargs: Any
) -> None:
    """Print (or hand to `out`) `make(*args, cpus=..., gpus=..., **kwargs)` with the CPUs and GPUs
    trials will get: this machine's, or (`address`) the joined Ray cluster's."""
    if address:
        import ray

        ensure_ray(address)  # joined now, reused by the run
        resources = ray.cluster_resources()
        kwargs.update(cpus=resources.get("CPU", 1.0), gpus=resources.get("GPU", 0.0))
    else:
        kwargs.update(gpus=float(local_gpus()))
    (out or say)(make(*args, **kwargs))
