"""Run searches on Ray Tune: resolve and check the config, start or join Ray, build the Tuner,
resume, run fixed trials. A run directory `<runs_dir>/<name>/` holds `search.yaml`,
`environment.json`, `optuna.log`, Tune's folder `tune/` and `trials.jsonl`; with `address` the
trial storage must lie where every node reaches (`SearchConfig.storage`, `locations.json`).
"""

from __future__ import annotations

import datetime as dt
import os
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tlmsearch.configs.lr_calibration import resolved_setting, same_rate
from tlmsearch.configs.resolve import budget_for, resolve_trial_length, search_preset, sweep_widths, trial_shape
from tlmsearch.configs.search import SearchConfig, check_fair_objectives, check_sampler_scheduler, load_run_config
from tlmsearch.configs.storage import join as join_location
from tlmsearch.configs.storage import normalise as normalise_storage
from tlmsearch.configs.storage import parent as parent_location
from tlmsearch.core.validate import check_training_fits, writable_dir
from tlmsearch.core.words import plural
from tlmsearch.data import check_windows, prepare
from tlmsearch.errors import ConfigError
from tlmsearch.profiles import ProfileSpec
from tlmsearch.profiles.spaces import load_space
from tlmsearch.rundir.io import check_run_files
from tlmsearch.rundir.layout import FIXED_DIR, OPTUNA_LOG, SEARCH_CONFIG, TUNE_DIR, remember
from tlmsearch.rundir.locations import folder as located
from tlmsearch.rundir.locations import record_folder
from tlmsearch.rundir.lock import run_lock
from tlmsearch.rundir.lr import (
    configured_rate,
    lr_base_width,
    lr_calibration,
    lr_train,
    missing_rates,
    write_lr_calibration,
)
from tlmsearch.rundir.noise import UNIFORM, missing_noise_seeds, noise_base_width, noise_floor, write_noise_floor
from tlmsearch.rundir.provenance import write_environment
from tlmsearch.rundir.records import (
    LR_KIND,
    NOISE_KIND,
    SEARCH_KINDS,
    RecordLog,
    TrialRecord,
    check_records,
    read_records,
)
from tlmsearch.rundir.study import Study, load
from tlmsearch.tuning import interrupts
from tlmsearch.tuning.announce import announce, check_search_price, search_line, slots
from tlmsearch.tuning.checkpoints import interrupted_trials
from tlmsearch.tuning.pack_runs import pack_groups, run_packs
from tlmsearch.tuning.ray_session import empty_scratch, ensure_ray
from tlmsearch.tuning.resources import check_resources
from tlmsearch.tuning.specs import with_spec
from tlmsearch.tuning.trainable import run_trial, trial_train_config
from tlmsearch.tuning.trial_storage import check_shared, check_unused, check_writable, ray_node_runner, run_root

# ----------------------------------------------------------------------------- validation


def resolve(cfg: SearchConfig) -> SearchConfig:
    """`cfg` with a run name, after checking everything that can be checked before Ray starts."""
    space = load_space(cfg.space)
    _check_sampler_dependencies(cfg.sampler)
    check_sampler_scheduler(cfg)
    check_fair_objectives(cfg)
    if cfg.base_widths:
        lo, hi, _ = sweep_widths(cfg)
        budget_for(cfg, lo), budget_for(cfg, hi)
    budget_for(cfg)  # raises for an infeasible budget
    cfg = resolve_trial_length(cfg)  # --tokens-per-param: the step count, once, before any trial
    # --gpus-per-trial auto: one GPU a trial where torch sees CUDA here, else the CPU; written out
    cfg = cfg.replace(gpus_per_trial=cfg.gpu_share)
    # the calibration grid written out ("auto" -> its rates around train.lr): a resume trains the same rates
    cfg = cfg.replace(lr_calibration=resolved_setting(cfg.lr_calibration, cfg.train.lr))
    # memory on the device a trial trains on (a GPU trial: its GPU, in bfloat16; unknown where
    # this process sees no CUDA: Ray places it), not the driver's host memory
    train = trial_train_config(cfg, cfg.train.seed)
    for text in cfg.baselines or ("uniform",):
        check_training_fits(trial_shape(cfg, ProfileSpec.parse(text))[2], train)
    if cfg.base_widths:  # the widest budget of a sweep
        check_training_fits(trial_shape(cfg, ProfileSpec.parse("uniform"), sweep_widths(cfg)[1])[2], train)
    writable_dir(cfg.runs_dir, "runs_dir")  # a file or unwritable place: refused before Ray starts
    writable_dir(cfg.data.cache_path(), "cache_dir")
    if cfg.storage:  # absolute: the workers do not share the driver's working directory
        cfg = cfg.replace(storage=normalise_storage(cfg.storage))
    if not cfg.name:
        stamp = dt.datetime.now().strftime("%Y%m%d-%H%M%S")
        cfg = cfg.replace(name=f"{cfg.arch}-{space.name}-{cfg.sampler}-{stamp}")
    return cfg


# samplers that need a package beyond optuna itself
_SAMPLER_NEEDS = {"cmaes": ("cmaes",), "gp": ("scipy", "torch"), "qmc": ("scipy",)}


def _check_sampler_dependencies(sampler: str) -> None:
    import importlib.util

    missing = [m for m in _SAMPLER_NEEDS.get(sampler, ()) if importlib.util.find_spec(m) is None]
    if missing:
        raise ConfigError(f"sampler={sampler!r} needs {', '.join(missing)}: pip install {' '.join(missing)}")


def prepare_local(cfg: SearchConfig) -> None:
    """Tokenize the corpus and measure the matmul peak once, before trials race to do it."""
    from tlmsearch.training.hardware import matmul_peak, resolve_device, thread_count  # lazy: heavy (torch)

    # every trial's windows fit the corpus' splits (else a one-line refusal before Ray starts)
    check_windows(prepare(cfg.data), trial_shape(cfg, ProfileSpec.parse("uniform"))[2].seq_len)
    train_cfg = trial_train_config(cfg, cfg.seed)
    if train_cfg.device != "cuda":
        with thread_count(train_cfg.threads):
            matmul_peak(resolve_device("cpu"), train_cfg.dtype, cfg.data.cache_path())


# ----------------------------------------------------------------------------- tuner


def start_ray(cfg: SearchConfig, address: str | None, root: str | None = None) -> None:
    """Check the resources a search asks for and its trial storage `root`, and start (or join)
    Ray; on a local Ray the driver prepares the corpus and measures the matmul peak once,
    before any trial. On a cluster, every node must see `root` (`trial_storage.check_shared`)."""
    if root is not None and cfg.storage:
        check_writable(root)
    if not address:
        check_resources(cfg)
        prepare_local(cfg)
    ensure_ray(address)
    if address:
        check_resources(cfg, address)
        if root is not None:
            check_shared(root, ray_node_runner)


TRAINABLE = "run_trial"
# what the Tune trial of a trial of several workers reserves: its function only drives their Ray Train
# run, and a CPU of its own would keep a machine's last worker from starting (Tune refuses a trial
# that asks for nothing, so it asks for a little of Ray's memory resource, as the process uses)
DRIVER_MEMORY = 256 * 1024**2


def trainable_for(cfg: SearchConfig, name: str | None = None) -> Any:
    """The Tune trainable of `cfg`'s trials, registered under `name` (default: one of its own,
    `run_trial-<run name>`). Tune looks trainables up by name in a registry shared by the whole
    Ray job, so two Tuners running at once in one driver (a study's overlapping phases) must not
    share a name, or one would train the other's configuration.

    The trainable takes nothing but the trial's Tune config: each config carries its resolved
    `TrialSpec` (`tuning.specs.with_spec`), so the search config does not cross Ray."""
    from ray import tune

    def fn(config: dict[str, Any]) -> None:
        run_trial(config)

    fn.__name__ = fn.__qualname__ = name or f"{TRAINABLE}-{cfg.name}"
    resources = {"cpu": cfg.cpus_per_trial, "gpu": cfg.gpu_share}
    if cfg.workers_per_trial > 1:  # the trial's Ray Train workers hold the CPUs and GPUs (tuning.train_workers)
        resources = {"cpu": 0.0, "gpu": 0.0, "memory": DRIVER_MEMORY}
    return tune.with_resources(fn, resources)


def _scheduler(cfg: SearchConfig) -> Any:
    from ray.tune.schedulers import FIFOScheduler

    from tlmsearch.tuning.scheduler import BaselineKeepingASHA  # lazy: heavy (ray)

    if cfg.scheduler == "none":
        return FIFOScheduler()
    # "hyperband" is asynchronous HyperBand: ASHA with several brackets (no paused trials);
    # baselines are never stopped early: they are the references of the verdict
    return BaselineKeepingASHA(
        time_attr="step",
        metric=cfg.objectives[0],
        mode=cfg.modes[0],
        max_t=cfg.train.steps,
        grace_period=cfg.grace,
        reduction_factor=cfg.reduction_factor,
        brackets=3 if cfg.scheduler == "hyperband" else 1,  # an upper bound: only brackets with a rung
        seed=cfg.seed,
    )


def run_config(cfg: SearchConfig, storage: str | Path, name: str, callbacks: list) -> Any:
    """Tune's RunConfig: the experiment folder `storage`/`name` (a path or a URI)."""
    from ray import tune

    return tune.RunConfig(
        name=name,
        storage_path=str(storage),
        verbose=0,
        callbacks=callbacks,
        failure_config=tune.FailureConfig(max_failures=cfg.max_failures),
        # the newest two (a kill while the newest is written leaves the one before it whole),
        # dropped once the trial is recorded; all of them with `keep_checkpoints`
        checkpoint_config=tune.CheckpointConfig(num_to_keep=None if cfg.keep_checkpoints else 2),
    )


def _callbacks(cfg: SearchConfig, run_dir: Path, total: int, progress: bool) -> list:
    from tlmsearch.tuning.progress import ProgressView  # lazy: heavy (ray)
    from tlmsearch.tuning.recorder import RecordWriter  # lazy: heavy (ray)

    writer = RecordWriter(run_dir, cfg)
    return [writer, ProgressView(cfg.name, total, writer)] if progress else [writer]


def _new_tuner(cfg: SearchConfig, run_dir: Path, root: str, progress: bool, *, resume: bool = False) -> Any:
    """A Tuner for the search's trials in `root/tune` (None when none is left). With `resume`,
    rebuilt from `trials.jsonl` alone: the unfinished trials first, each from its checkpoint,
    then the baselines not recorded, then sampled ones; the journal written anew and the sampler
    re-told from the records (`searcher.Past`), the rungs primed from their curves."""
    from ray import tune

    # lazy: heavy (ray)
    from tlmsearch.tuning.searcher import DefineProfile, Past, ProfileSearch, baseline_points, open_storage, sweep_of

    records = tuple(r for r in read_records(run_dir) if r.kind in SEARCH_KINDS) if resume else ()
    past = Past()
    if resume:
        past = Past(records=records, interrupted=tuple(interrupted_trials(tune_folder(run_dir), records)))
        journal = run_dir / OPTUNA_LOG
        if records and not journal.is_file() and len(records) < cfg.trials:
            print(f"note: {journal} is missing; rebuilding it from trials.jsonl", file=sys.stderr)
        for stale in (journal, journal.with_name(journal.name + ".lock")):  # written anew from the records
            if stale.is_symlink() or stale.is_file():
                stale.unlink()
    define = DefineProfile(cfg.space, search_preset(cfg).n_layers, sweep_of(cfg), cfg.arch)
    taken = {(r.baseline, r.params.get("base_width")) for r in records} | {
        (i.config.get("baseline"), i.config.get("base_width")) for i in past.interrupted
    }
    baselines = [b for b in baseline_points(cfg, define)[: cfg.trials] if (b[0], b[2].get("base_width")) not in taken]
    searcher = ProfileSearch(define, cfg=cfg, storage=open_storage(str(run_dir)), baselines=baselines, past=past)
    searcher.study  # noqa: B018 - the journal now, before any trial (a finished resume trains none)
    samples = cfg.trials - len(records)
    if samples <= 0:
        return None
    scheduler = _scheduler(cfg)
    if records and hasattr(scheduler, "prime"):
        scheduler.prime(records)
    tune_config = tune.TuneConfig(
        search_alg=searcher,
        scheduler=scheduler,
        num_samples=samples,
        max_concurrent_trials=concurrent_trials(cfg),
        time_budget_s=cfg.time_budget_s or None,
        reuse_actors=True,
        trial_dirname_creator=trial_dirname,
    )
    return tune.Tuner(
        trainable_for(cfg),
        tune_config=tune_config,
        run_config=run_config(cfg, root, TUNE_DIR, _callbacks(cfg, run_dir, cfg.trials, progress)),
    )


def concurrent_trials(cfg: SearchConfig) -> int | None:
    """Tune's cap on trials at once: `max_concurrent` (None: as many as Ray has slots), and for
    trials of several workers the slots their workers fill (their Tune trials reserve nothing)."""
    if cfg.workers_per_trial == 1:
        return cfg.max_concurrent or None
    import ray

    have = ray.cluster_resources()
    return slots(cfg, have.get("CPU", 1.0), have.get("GPU", 0.0))


def _limit_pending(cfg: SearchConfig) -> None:
    """Let Tune prepare only as many trials as can run at once: every slot starts its actor
    at the same time, and the sampler does not ask far ahead of the results it learns from."""
    import ray

    os.environ["TUNE_MAX_PENDING_TRIALS_PG"] = str(slots(cfg, ray.cluster_resources().get("CPU", 1.0)))


def trial_dirname(trial: Any) -> str:
    return f"trial_{trial.trial_id}"


def _quiet_optuna() -> None:
    import optuna

    optuna.logging.set_verbosity(optuna.logging.WARNING)


# Tuners fitting in this process now (a study overlaps phases, one Tuner per thread)
_FITS = 0
_FITS_LOCK = threading.Lock()


def fit_trials(
    tuner: Any,
    run_dir: Path,
    expected: int,
    ended: Callable[[], int],
    cfg: SearchConfig,
    resumable: bool = True,
    what: str = "search",
) -> None:
    """Run the trials; a Ctrl-C (Tune saves its state first) becomes a KeyboardInterrupt that
    names `what` was cut ("search", or a batch's kind: "verify", "compare", ...).

    Every ended trial leaves a record, so fewer records than trials means the run was cut
    short (unless the time budget ran out).
    """
    global _FITS
    _limit_pending(cfg)
    start = time.time()
    with _FITS_LOCK:
        _FITS += 1
    try:
        with interrupts.fitting():  # a Ctrl-C Tune caught, even as the last trial ended, is kept
            tuner.fit()  # trial errors are in the records, not raised
    finally:
        with _FITS_LOCK:
            _FITS -= 1
            if not _FITS:  # the scratch folder is shared: never empty it under another Tuner's trials
                empty_scratch()
    out_of_time = cfg.time_budget_s and time.time() - start >= 0.95 * cfg.time_budget_s
    if interrupts.requested() or (ended() < expected and not out_of_time):
        hint = f"; resume with: tlmsearch resume {run_dir}" if resumable else ""
        interrupts.say(f"{what} interrupted{hint}")
        raise KeyboardInterrupt(f"{what} interrupted{hint}")


# ----------------------------------------------------------------------------- fixed trials


def fixed_config(
    profile: str, seed: int, kind: str, index: int, *, base_width: int | None = None, **extra: Any
) -> dict[str, Any]:
    """The Tune config of one fixed trial: a profile text, a seed, the record kind, its index in
    the batch, a base width (a budget sweep's) and `extra` keys, None ones left out (`baseline`;
    `lr`: the rate it trains at, replacing train.lr; any other lands in the record's `params`)."""
    config: dict[str, Any] = {"profile": profile, "seed": int(seed), "kind": kind, "number": -1, "index": index}
    if base_width:
        config["base_width"] = int(base_width)
    return config | {k: v for k, v in extra.items() if v is not None}


def fit_fixed(
    cfg: SearchConfig,
    run_dir: Path,
    root: str,
    configs: list[dict[str, Any]],
    kind: str,
    progress: bool,
    resumable: bool = True,
) -> dict[int, TrialRecord]:
    """Train each Tune config of `configs` once, in parallel, at full fidelity (no sampler, no
    early stopping), each ended trial recorded with `kind` (the noise floor, the learning-rate
    calibration, and `run_fixed`'s batches); fewer records than configs after the fit (a Ctrl-C)
    ends it as in `fit_trials`. Tune's folder is `<root>/fixed/<kind>-<time>/`. Returns the
    records written, by their config's "index" (`fixed_config`)."""
    from ray import tune

    from tlmsearch.tuning.progress import ProgressView  # lazy: heavy (ray)
    from tlmsearch.tuning.recorder import RecordWriter  # lazy: heavy (ray)

    configs = [with_spec(cfg, c) for c in configs]  # each trial resolved once, here (`configs.trial`)
    writer = RecordWriter(run_dir, cfg)
    view = [ProgressView(f"{cfg.name} {kind}", len(configs), writer, kinds=None)] if progress else []
    stamp = dt.datetime.now().strftime("%Y%m%d-%H%M%S-%f")
    tuner = tune.Tuner(
        trainable_for(cfg),
        param_space={"item": tune.grid_search(configs)},
        tune_config=tune.TuneConfig(
            num_samples=1,
            max_concurrent_trials=concurrent_trials(cfg),
            reuse_actors=True,
            trial_dirname_creator=trial_dirname,
        ),
        run_config=run_config(cfg, join_location(root, FIXED_DIR), f"{kind}-{stamp}", [writer, *view]),
    )
    fit_trials(tuner, run_dir, len(configs), lambda: len(writer.written), cfg, resumable=resumable, what=kind)
    return {int(writer.configs[r.trial_id].get("index", -1)): r for r in writer.written}


def fit_configs(
    cfg: SearchConfig,
    run_dir: Path,
    root: str,
    configs: list[dict[str, Any]],
    kind: str,
    progress: bool,
    *,
    say: Callable[[str], None] | None = None,
    resumable: bool = True,
) -> dict[int, TrialRecord]:
    """`fit_fixed`, with the groups of one shape that `cfg.pack` packs trained as packs
    (`tuning.pack_runs`: each member still one record, appended as its pack returns) and the
    rest as fixed trials. Returns the records written, by their config's "index". Ray is running."""
    packing = cfg.pack != "off" and cfg.workers_per_trial == 1  # a trial of several workers is a Ray Train run
    packed, separate = pack_groups(cfg, configs, cfg.pack) if packing else ([], list(range(len(configs))))
    out: dict[int, TrialRecord] = {}
    if packed:
        found = run_packs(run_dir, cfg, configs, packed, kind, progress, say)
        out.update({int(configs[i]["index"]): r for i, r in found.items()})
    if separate:
        out.update(fit_fixed(cfg, run_dir, root, [configs[i] for i in separate], kind, progress, resumable))
    return out


def run_noise_trials(cfg: SearchConfig, run_dir: Path, root: str, progress: bool) -> int:
    """Train the noise floor's missing seeds of uniform (`tlmsearch.rundir.noise`) before the
    search: fixed trials at the trial fidelity, never stopped early and never told to the
    sampler, recorded once with kind "noise". Ray must be running. Returns how many trained."""
    seeds = missing_noise_seeds(cfg, read_records(run_dir))
    if seeds:
        width = noise_base_width(cfg)
        configs = [fixed_config(UNIFORM, s, NOISE_KIND, i, base_width=width) for i, s in enumerate(seeds)]
        own = f"; seed {cfg.seed} is the search's uniform baseline" if cfg.seed not in seeds else ""
        if progress:
            print(
                f"noise floor: uniform with seed{'s' * (len(seeds) > 1)} {', '.join(map(str, seeds))} "
                f"at {cfg.train.steps} steps before the search{own}",
                flush=True,
            )
        fit_configs(cfg, run_dir, root, configs, NOISE_KIND, progress)
    write_noise_floor(run_dir, noise_floor(cfg, read_records(run_dir)))
    return len(seeds)


def run_lr_trials(cfg: SearchConfig, run_dir: Path, root: str, progress: bool) -> SearchConfig:
    """Train the learning-rate calibration's missing runs (`tlmsearch.rundir.lr`) before the
    noise floor and the search: uniform at each rate of the grid with the same paired seeds,
    fixed trials never stopped early and never told to the sampler, recorded once with kind "lr";
    while the best mean lies at an edge, the grid widens by one rate and its seeds train too.
    Then choose the rate from the records (`tlmsearch.configs.lr_rule`), write `lr_calibration.json`,
    and, when it differs, make it `train.lr` of the run's `search.yaml`. Returns the config every
    later trial trains with (`cfg` when calibration is off). Ray must be running."""
    configured = configured_rate(run_dir, cfg)
    trained = False
    while runs := missing_rates(cfg, read_records(run_dir)):
        train = lr_train(cfg)
        steps = train.steps
        short = cfg.replace(grace_steps=0, train=train)
        width = lr_base_width(cfg)
        configs = [
            fixed_config(UNIFORM, seed, LR_KIND, i, base_width=width, lr=rate) for i, (rate, seed) in enumerate(runs)
        ]
        if progress:
            rates = sorted({rate for rate, _ in runs})
            seeds = sorted({seed for _, seed in runs})
            print(
                f"learning-rate calibration: uniform at {plural(len(rates), 'rate')} "
                f"({', '.join(format(r, '.6g') for r in rates)}) x seed{'s' * (len(seeds) > 1)} "
                f"{', '.join(map(str, seeds))} ({plural(len(runs), 'run')}) for {steps} steps, before the search",
                flush=True,
            )
        before = len(read_records(run_dir))
        fit_fixed(short, run_dir, root, configs, LR_KIND, progress)
        trained = True
        if len(read_records(run_dir)) == before:  # nothing recorded (an interrupt): never loop on it
            break
    calibration = lr_calibration(cfg, read_records(run_dir), configured)
    if calibration is None:
        return cfg
    write_lr_calibration(run_dir, calibration)
    changed = not same_rate(calibration.rate, cfg.train.lr)
    if changed:
        cfg = cfg.replace(train=cfg.train.replace(lr=calibration.rate))
        cfg.save(run_dir / SEARCH_CONFIG)  # verify, resume and status read the rate from here
    if trained or changed:
        if progress:
            print(calibration.describe(), flush=True)
        for line in calibration.warnings():
            print(line, file=sys.stderr, flush=True)
    return cfg


# ----------------------------------------------------------------------------- public


def search(
    cfg: SearchConfig, *, address: str | None = None, progress: bool = True, max_hours: float | None = None
) -> Study:
    """Run the search `cfg` describes in `<runs_dir>/<name>/` and return its `Study`; with
    `max_hours`, refuse one priced beyond it first (`announce.check_search_price`)."""
    interrupts.watch()  # a Ctrl-C from here on stops it (between Tune's fits too)
    cfg = resolve(cfg)
    from tlmsearch.tuning.searcher import check_space_samples  # lazy: heavy (ray)

    check_space_samples(cfg)  # a space whose sample() fails: one line before Ray (a study's searches too)
    if max_hours is not None:
        if not address:  # a trial that cannot fit here says so before its price does
            check_resources(cfg)
        check_search_price(cfg, max_hours=max_hours)
    run_dir = (Path(cfg.runs_dir) / cfg.name).resolve()
    if (run_dir / SEARCH_CONFIG).exists():
        raise ConfigError(f"run directory {run_dir} already holds a search; resume it or choose another name")
    root = run_root(cfg, run_dir)
    if cfg.storage:  # (start_ray checks it is writable again: resume and fixed trials need that too)
        check_writable(root)
        check_unused(root, cfg.name)
    _start(cfg, address, root, progress)
    remember(run_dir)  # a refusal from here on leaves nothing; a Ctrl-C names the command that resumes it
    run_dir.mkdir(parents=True, exist_ok=True)
    with run_lock(run_dir):
        cfg.save(run_dir / SEARCH_CONFIG)
        write_environment(run_dir, seeds={"search": cfg.seed})
        for key in ("tune", "fixed"):  # fixed: where a later verify puts its trials by default
            record_folder(run_dir, key, root if cfg.storage else None)
        _train(cfg, run_dir, root, progress)
    return load(run_dir)


def resume(run_dir: str | Path, *, address: str | None = None, progress: bool = True) -> Study:
    """Continue an interrupted search from its `trials.jsonl`, without re-running (or
    re-recording) finished trials: a new Tuner for what remains (`_new_tuner`); Tune's saved
    state is never read."""
    interrupts.watch()  # a Ctrl-C from here on stops it (between Tune's fits too)
    run_dir = Path(run_dir).resolve()
    if not (run_dir / SEARCH_CONFIG).is_file():
        raise ConfigError(f"{run_dir} is not a search run directory (no {SEARCH_CONFIG})")
    cfg = load_run_config(run_dir / SEARCH_CONFIG)
    kinds = {r.kind for r in read_records(run_dir)}
    if kinds and not kinds & {*SEARCH_KINDS, NOISE_KIND, LR_KIND}:
        raise ConfigError(
            f"{run_dir} holds no search trials (only {', '.join(sorted(kinds))} runs), so there is no search "
            "to resume; an interrupted `tlmsearch compare` is re-run under a new --name"
        )
    root = parent_location(tune_folder(run_dir))  # where the search wrote its trials (locations.json)
    with run_lock(run_dir):
        RecordLog(run_dir)  # cuts a record torn by a crash (one warning line)
        check_records(run_dir)  # any other damage: one line naming the file, before Ray starts
        check_run_files(run_dir)  # a folder, FIFO or link loop where a run file belongs: the same
        records = read_records(run_dir)
        done = sum(r.kind in SEARCH_KINDS for r in records)
        if done < cfg.trials or missing_noise_seeds(cfg, records) or missing_rates(cfg, records):
            _start(cfg, address, root, progress, done=done)  # else nothing trains: the journal is rebuilt, no Ray
        _train(cfg, run_dir, root, progress, resume=True)
    return load(run_dir)


def search_or_resume(cfg: SearchConfig, run_dir: Path, *, address: str | None, progress: bool) -> None:
    """Continue the search in `run_dir` when one was started there (before a kill), else start `cfg`
    (whose run directory is `run_dir`): a study's or a ladder's search phase."""
    if (run_dir / SEARCH_CONFIG).is_file():
        resume(run_dir, address=address, progress=progress)
    else:
        search(cfg, address=address, progress=progress)


def _start(cfg: SearchConfig, address: str | None, root: str, progress: bool, done: int = 0) -> None:
    """Print the plan line (before a local Ray starts: its estimate prices the trials' FLOPs on the
    CPUs; after joining a cluster: its resources) and start Ray."""
    if progress and not address:
        announce(search_line, None, cfg, done=done)
    start_ray(cfg, address, root)
    if progress and address:
        announce(search_line, address, cfg, done=done)


def _train(cfg: SearchConfig, run_dir: Path, root: str, progress: bool, resume: bool = False) -> None:
    """The learning-rate calibration, the noise floor and the search, each training only what
    `trials.jsonl` does not hold yet; every later phase trains at the rate the calibration chose."""
    _quiet_optuna()
    cfg = run_lr_trials(cfg, run_dir, root, progress)
    run_noise_trials(cfg, run_dir, root, progress)
    tuner = _new_tuner(cfg, run_dir, root, progress, resume=resume)
    if tuner is not None:
        fit_trials(tuner, run_dir, cfg.trials, lambda: sum(r.kind in SEARCH_KINDS for r in read_records(run_dir)), cfg)
    write_noise_floor(run_dir, noise_floor(cfg, read_records(run_dir)))


def tune_folder(run_dir: Path) -> str:
    """Where the search's Tune folder lies, as `locations.json` recorded it."""
    return located(run_dir, "tune")
