"""`SearchConfig`: everything that defines a search, saved as `runs/<name>/search.yaml`.

It sits on the bottom layer (beside the model/train/data configs) because everything above
reads it: the run directory (`Study` loads `search.yaml`), the resolver of a trial's model,
the search engine and the CLI.
"""

from __future__ import annotations

import dataclasses
import json
import math
from pathlib import Path
from typing import Any

from tlmsearch.configs.lr_calibration import (
    DEFAULT_SEEDS,
    FRACTION_HELP,
    SEEDS_HELP,
    SETTING_HELP,
    check_seeds,
    parse_setting,
)
from tlmsearch.configs.presets import check_search_model, shaped_preset
from tlmsearch.configs.storage import check_storage
from tlmsearch.core import validate
from tlmsearch.core.base import (
    ARCHITECTURE_NAMES,
    Config,
    DataConfig,
    TrainConfig,
    check_choice,
    check_field_types,
    check_positive,
    option,
    screening_train,
)
from tlmsearch.core.validate import MAX_SEED, check_int, load_yaml, read_text
from tlmsearch.errors import ConfigError
from tlmsearch.profiles import ProfileSpec

SAMPLERS: tuple[str, ...] = ("tpe", "gp", "nsga2", "cmaes", "random", "qmc")
SCHEDULERS: tuple[str, ...] = ("asha", "hyperband", "none")
# objective -> direction; "params" is the model's total parameter count (budget sweeps);
# "train_speed" / "infer_speed" are measured by `tlmsearch.costs.throughput` at the end of each trial
# (forward+backward / inference, interleaved with the uniform reference on the trial's worker)
OBJECTIVES: dict[str, str] = {
    "val_loss": "min",
    "params": "min",
    "tokens_per_s": "max",
    "train_speed": "max",
    "infer_speed": "max",
}
# objective -> the trainer's metric it reads
OBJECTIVE_METRICS: dict[str, str] = {
    "val_loss": "val_loss",
    "params": "params_total",
    "tokens_per_s": "tokens_per_s",
    "train_speed": "train_speed",
    "infer_speed": "infer_speed",
}
# what a new search may optimise: tokens_per_s stays in OBJECTIVES only so that old runs load
# (`check_fair_objectives` refuses it for a search), so error messages list these
SEARCH_OBJECTIVES: tuple[str, ...] = tuple(o for o in OBJECTIVES if o != "tokens_per_s")
# objectives measured by the micro-benchmark of `tlmsearch.costs.throughput` at the end of a trial
SPEED_OBJECTIVES: tuple[str, ...] = ("train_speed", "infer_speed")
# the default grace: the first rung after this fraction of a trial's steps (see SearchConfig.grace)
GRACE_FRACTION = 1 / 3
SINGLE_OBJECTIVE_SAMPLERS: tuple[str, ...] = ("cmaes",)

DEFAULT_BASELINES: tuple[str, ...] = (
    "uniform",
    "cosine:start=1.5,end=0.5",
    "linear:start=1.5,end=0.5",
    "cosine:start=0.5,end=1.5",
)


MAX_NOISE_SEEDS = 100  # seeds of the noise floor (uniform at trial fidelity before the search)
# --pack: fixed trials of one shape trained side by side in one process (the rule behind auto:
# tlmsearch.training.pack.auto)
PACK_MODES: tuple[str, ...] = ("auto", "on", "off")
AUTO_GPUS = "auto"  # gpus_per_trial: one GPU a trial where torch sees CUDA, else the CPU (`gpus_for`)

# samplers that learn only from COMPLETE trials: a trial early stopping cuts teaches them nothing
COMPLETE_ONLY_SAMPLERS: tuple[str, ...] = ("gp", "cmaes", "nsga2")


def check_sampler_scheduler(cfg: SearchConfig) -> None:
    """Refuse a sampler that ignores PRUNED trials together with early stopping.

    GP, CMA-ES and NSGA-II read only COMPLETE trials, so every trial ASHA stops is lost on
    them (GP even stays random until it has ten complete ones). Replayed on the recorded
    curves (bench/README.md), GP reached 0.2 % of the best loss in 8 of 8 runs without early
    stopping and 2 of 8 with ASHA; TPE, which ranks pruned trials by their last value, did
    best with ASHA (7 of 8).
    """
    if cfg.scheduler != "none" and cfg.sampler in COMPLETE_ONLY_SAMPLERS:
        raise ConfigError(
            f"sampler={cfg.sampler!r} learns only from completed trials, so with scheduler={cfg.scheduler!r} "
            "the trials early stopping cuts teach it nothing; use --scheduler none or --sampler tpe"
        )


def check_fair_objectives(cfg: SearchConfig) -> None:
    """Refuse the training tokens/s as an objective of a new search: measured during it, it is noise.

    Every profile of a budget has the same parameter count and FLOPs per token, so the
    tokens/s a trial reports while it trains differ mostly by what else the machine ran
    meanwhile (the same cosine widths measured 3,095 tok/s in a search and 4,640 in `verify`);
    a sampler given that objective optimises machine load. Speed is an objective only as
    `train_speed` / `infer_speed`: a separate micro-benchmark at the end of each trial, the
    trial's model interleaved with the uniform reference on the same worker, repeated, the
    median ratio (`tlmsearch.costs.throughput`). Loading an old run with `tokens_per_s` still works.
    """
    if "tokens_per_s" in cfg.objectives:
        raise ConfigError(
            "objective 'tokens_per_s' is refused: tokens/s measured while trials share the machine is load noise "
            "(every profile of a budget has the same parameters and FLOPs); use train_speed or infer_speed, "
            "measured by an interleaved micro-benchmark against the uniform profile on the trial's worker"
        )


def check_name(name: str) -> str:
    """`name` when it is a valid run name (a run directory's name), else a `ConfigError`."""
    return validate.check_name("run name", name)


@dataclasses.dataclass(frozen=True, kw_only=True)
class SearchConfig(Config):
    """A search over per-layer MLP width profiles.

    Trials train `preset` (with `model` overrides) for `train.steps` steps and evaluate every
    `train.eval_interval` steps; the scheduler may stop a trial at any evaluation after
    `grace_steps`. The budget is `base_width` per layer (0 = the preset's), or, for a budget
    sweep, a base width sampled from `budget_levels` widths evenly spaced from `base_widths =
    (low, high)` (multiples of the preset's `multiple_of`). The baselines (profile texts) are
    the first trials of every search, run at every budget of a sweep, so each budget has its
    references (and, with early stopping, rungs of its own).
    """

    name: str = option("", "run name: the run directory is RUNS_DIR/NAME; empty = <arch>-<space>-<sampler>-<time>")
    runs_dir: str = option("runs", "parent folder of run directories")
    arch: str = option("transformer", "architecture", choices=ARCHITECTURE_NAMES)
    preset: str = option("cpu-s", "model shape preset")
    model: dict[str, Any] = dataclasses.field(default_factory=dict)  # preset shape / ModelConfig overrides
    base_width: int = option(0, "fixed budget: MLP width per layer; 0 = the preset's")
    base_widths: tuple[int, ...] = option((), "budget sweep: (low, high); empty = fixed budget")
    budget_levels: int = option(
        3, "budget sweep: how many base widths, evenly spaced from low to high; every baseline runs at each"
    )
    space: str = option("taper", "search space: a name in search_spaces/ (`tlmsearch profiles --spaces`) or a .py file")
    sampler: str = option("tpe", "Optuna sampler", choices=SAMPLERS)
    objectives: tuple[str, ...] = option(
        ("val_loss",), "val_loss, optionally a second: params (budget sweeps), train_speed or infer_speed"
    )
    scheduler: str = option("asha", "early stopping (hyperband: async, 3 brackets)", choices=SCHEDULERS)
    reduction_factor: int = option(3, "ASHA / HyperBand: keep 1 / reduction_factor at each rung")
    grace_steps: int = option(
        0, "no early stop before this many steps; 0 = the first evaluation at or after a third of train.steps"
    )
    trials: int = option(32, "total trials, baselines included")
    time_budget_s: float = option(0.0, "stop the search after this many seconds; 0 = no limit")
    max_concurrent: int = option(0, "trials at once; 0 = as many as the resources allow")
    cpus_per_trial: float = option(1.0, "CPUs per trial (also its torch threads unless --threads)")
    gpus_per_trial: float | str = option(
        AUTO_GPUS,
        "GPUs per trial; fractions share one GPU between trials; a whole N > 1 trains each trial on N data-parallel "
        "workers of one GPU each (workers_per_trial N); auto = one GPU a trial where torch sees a CUDA device, else 0 "
        "(trials train on the CPU)",
    )
    workers_per_trial: int = option(
        1,
        "data-parallel workers per trial (Ray Train TorchTrainer, DDP; gloo on CPU, NCCL on GPU), each holding "
        "cpus_per_trial CPUs and gpus_per_trial GPUs (a whole GPU); they split every step's batch and give the "
        "numbers of one worker",
    )
    max_failures: int = option(2, "retries of a trial whose worker died (infrastructure failure)")
    storage: str = option(
        "",
        "where trial checkpoints go: a filesystem path or URI (s3://, gs://, file://...) every node reaches; "
        "empty = the run directory (one machine)",
    )
    keep_checkpoints: bool = option(
        False,
        "keep each trial's checkpoints after it ends; by default they are deleted once the trial is recorded "
        "(an interrupted trial keeps its own to resume from)",
    )
    seed: int = option(0, "sampler seed and training seed of every trial")
    noise_seeds: int = option(
        3,
        "noise floor: train uniform with this many seeds (seed, seed+1, ...) at trial fidelity before the "
        "search; the seed-to-seed sd of val_loss marks search-time gaps inside it as ties; 0 = off",
    )
    lr_calibration: str = option(
        "off",
        SETTING_HELP + ". Off by default for a search, on (auto) for a study: see tlmsearch.configs.lr_calibration",
    )
    lr_calibration_fraction: float = option(1.0, FRACTION_HELP)
    lr_calibration_seeds: int = option(DEFAULT_SEEDS, SEEDS_HELP)
    lr_calibration_tokens_per_param: float = option(
        0.0,
        "length of each learning-rate calibration run in tokens per non-embedding parameter when the trials' "
        "length is given that way (a study sets its verification's, 20: the rate is chosen where the profiles "
        "are decided); 0 = the trial length",
    )
    pack: str = option(
        "off",
        "the noise floor's seeds (compare: its profiles x seeds) trained side by side in one process, each still "
        "one record: auto (where bench_pack measured packs faster), on or off",
        choices=PACK_MODES,
    )
    baselines: tuple[str, ...] = DEFAULT_BASELINES
    train: TrainConfig = dataclasses.field(default_factory=screening_train)  # 5 tokens/param, wsd, whole split
    data: DataConfig = dataclasses.field(default_factory=DataConfig)

    def __post_init__(self) -> None:
        # every field's type first (as a file's values are checked), so that the Python API refuses
        # trials=2.5 or train={"steps": 3} here in one line, not with a TypeError in the middle of a search
        check_field_types(self)
        check_choice("arch", self.arch, ARCHITECTURE_NAMES)  # before the model's options, which are the arch's
        object.__setattr__(self, "model", check_search_model(self.model, self.arch))
        shaped_preset(self.preset, self.model, self.data)  # an unknown preset or a bad shape override
        check_choice("sampler", self.sampler, SAMPLERS)
        check_choice("scheduler", self.scheduler, SCHEDULERS)
        check_choice("pack", self.pack, PACK_MODES)
        if not self.objectives or len(self.objectives) > 2:
            raise ConfigError(
                f"objectives={list(self.objectives)} must name one or two of: {', '.join(SEARCH_OBJECTIVES)} "
                "(val_loss first)"
            )
        for obj in self.objectives:
            if obj not in OBJECTIVES:  # tokens_per_s is known (old runs load) but not offered
                raise ConfigError(f"objectives={obj!r} is not allowed; choose one of: {', '.join(SEARCH_OBJECTIVES)}")
        if self.objectives[0] != "val_loss":
            raise ConfigError(f"objectives={list(self.objectives)}: the first objective must be val_loss")
        if len(set(self.objectives)) != len(self.objectives):
            raise ConfigError(f"objectives={list(self.objectives)} repeats an objective")
        if self.multi_objective and self.sampler in SINGLE_OBJECTIVE_SAMPLERS:
            raise ConfigError(
                f"sampler={self.sampler!r} supports a single objective only, but objectives="
                f"{list(self.objectives)}; use tpe, nsga2, gp, random or qmc"
            )
        if "params" in self.objectives and not self.base_widths:
            raise ConfigError(
                "objective 'params' needs a budget sweep: every profile of a fixed budget has the same "
                "parameter count; set base_widths=(low, high)"
            )
        if self.base_widths:
            if len(self.base_widths) != 2 or not 0 < self.base_widths[0] < self.base_widths[1]:
                raise ConfigError(
                    f"base_widths={list(self.base_widths)} must be two widths (low, high) with 0 < low < high"
                )
            if self.base_width:
                raise ConfigError("give either base_width (fixed budget) or base_widths (budget sweep), not both")
        if self.budget_levels < 2:
            raise ConfigError(f"budget_levels={self.budget_levels} must be >= 2 (a sweep needs two budgets)")
        check_positive("base_width", self.base_width, allow_zero=True)
        if self.reduction_factor < 2:
            raise ConfigError(f"reduction_factor={self.reduction_factor} must be >= 2")
        check_positive("grace_steps", self.grace_steps, allow_zero=True)
        check_positive("trials", self.trials)
        check_positive("time_budget_s", self.time_budget_s, allow_zero=True)
        check_positive("max_concurrent", self.max_concurrent, allow_zero=True)
        check_positive("cpus_per_trial", self.cpus_per_trial)
        object.__setattr__(self, "gpus_per_trial", gpu_setting(self.gpus_per_trial))
        check_positive("max_failures", self.max_failures, allow_zero=True)
        check_int("workers_per_trial", self.workers_per_trial, 1, MAX_WORKERS_PER_TRIAL)
        gpus, workers = split_gpus(self.gpus_per_trial, self.workers_per_trial)  # N GPUs: N workers of one
        object.__setattr__(self, "gpus_per_trial", gpus)
        object.__setattr__(self, "workers_per_trial", workers)
        check_workers(self.workers_per_trial, self.gpus_per_trial, self.train.batch_size)
        check_int("seed", self.seed, 0, MAX_SEED)
        check_int("noise_seeds", self.noise_seeds, 0, MAX_NOISE_SEEDS)
        if self.noise_seeds == 1:
            raise ConfigError("noise_seeds=1 gives no spread: use 0 (no noise floor) or at least 2")
        check_storage(self.storage)
        object.__setattr__(self, "lr_calibration", parse_setting(self.lr_calibration))
        if not 0.0 < self.lr_calibration_fraction <= 1.0:
            raise ConfigError(f"lr_calibration_fraction={self.lr_calibration_fraction} must lie in (0, 1]")
        check_seeds(self.lr_calibration_seeds)
        check_positive("lr_calibration_tokens_per_param", self.lr_calibration_tokens_per_param, allow_zero=True)
        if self.grace_steps > self.train.steps and not self.train.tokens_per_param:  # else: once derived
            raise ConfigError(f"grace_steps={self.grace_steps} must not exceed train.steps={self.train.steps}")
        if self.name:
            check_name(self.name)
        for text in self.baselines:
            ProfileSpec.parse(text)  # raises ConfigError naming the bad baseline

    @property
    def multi_objective(self) -> bool:
        return len(self.objectives) > 1

    @property
    def modes(self) -> list[str]:
        """Ray/Optuna directions ("min" / "max"), one per objective."""
        return [OBJECTIVES[o] for o in self.objectives]

    @property
    def gpu_share(self) -> float:
        """GPUs per trial as a number: "auto" worked out on this machine (`gpus_for`)."""
        return gpus_for(self.gpus_per_trial)

    @property
    def grace(self) -> int:
        """Steps before the scheduler may stop a trial.

        By default the first evaluation at or after `GRACE_FRACTION` of the steps (100 of
        300): on the recorded curves the loss at step 50 of 300 ranked the final losses with
        Spearman 0.52 (95 % interval -0.20 to 0.91, 11 curves), at step 100 with 0.97, so a
        first rung at step 50 stops trials on a weak proxy (bench/README.md, proxy ranks).
        """
        if self.grace_steps:
            return min(self.grace_steps, self.train.steps)
        every = self.train.eval_interval
        first = -(-math.ceil(self.train.steps * GRACE_FRACTION - 1e-9) // every) * every
        return min(max(first, every), self.train.steps)


def load_search_config(path: str | Path) -> SearchConfig:
    """`SearchConfig.load(path)` whose errors name the file: "runs/x/search.yaml: trials:
    expected an integer, got 'abc'" rather than a field alone (a run directory's config is
    read by status, resume, export and verify, far from where it was written)."""
    try:
        return SearchConfig.load(path)
    except ConfigError as exc:
        text = str(exc)
        if str(path) in text:
            raise
        raise ConfigError(f"{path}: {text}") from None


def load_run_config(path: str | Path) -> SearchConfig:
    """A run directory's `search.yaml` (every setting written out, as `SearchConfig.save` writes it).
    One written before `lr_calibration_seeds` existed calibrated with one seed per rate, and reads
    so (its calibration is complete as it was: a resume trains no further calibration run)."""
    cfg = load_search_config(Path(path))
    if cfg.lr_calibration_seeds != 1 and "lr_calibration_seeds" not in _keys(Path(path)):
        cfg = cfg.replace(lr_calibration_seeds=1)
    return cfg


def _keys(path: Path) -> set[str]:
    """The top-level keys of a config file that loaded (so it reads again)."""
    text = read_text(path, "config file")
    data = load_yaml(text, str(path)) if path.suffix in (".yaml", ".yml") else json.loads(text)
    return set(data) if isinstance(data, dict) else set()


def search_runs_uniform(cfg: SearchConfig) -> bool:
    """Whether the search itself trains uniform at seed `cfg.seed` at the noise budget (a baseline
    within its `trials`; in a sweep the baselines of the first base width come first)."""
    names = [str(ProfileSpec.parse(text)) for text in cfg.baselines]
    return _UNIFORM in names and names.index(_UNIFORM) < cfg.trials


def noise_runs(cfg: SearchConfig) -> int:
    """Noise-floor runs beside the search's own trials: every floor seed but the search's own uniform."""
    if cfg.noise_seeds < 2:
        return 0
    return cfg.noise_seeds - 1 if search_runs_uniform(cfg) else cfg.noise_seeds


_UNIFORM = str(ProfileSpec.parse("uniform"))


def gpu_setting(value: float | str) -> float | str:
    """`gpus_per_trial` as a config holds it: "auto" or a number >= 0 (a number written as text,
    as a flag gives it, becomes the number); anything else is a ConfigError naming what is allowed."""
    if isinstance(value, str) and value.strip() != AUTO_GPUS:
        try:
            value = float(value)
        except ValueError:
            raise ConfigError(f"gpus_per_trial={value!r} must be a number >= 0 or 'auto'") from None
    if isinstance(value, str):
        return AUTO_GPUS
    check_positive("gpus_per_trial", value, allow_zero=True)
    return float(value)


MAX_WORKERS_PER_TRIAL = 4096


def split_gpus(gpus_per_trial: float | str, workers: int) -> tuple[float | str, int]:
    """(gpus_per_trial, workers_per_trial) with N > 1 GPUs per trial read as N data-parallel
    workers of one GPU each (the trainer uses one device a process); "auto", 0 and fractions up
    to 1 stay as they are. A number above 1 that is not whole, or N beside another worker count,
    is a ConfigError naming what is allowed."""
    if gpus_per_trial == AUTO_GPUS or isinstance(gpus_per_trial, str) or gpus_per_trial <= 1:
        return gpus_per_trial, workers
    if not float(gpus_per_trial).is_integer():
        raise ConfigError(
            f"gpus_per_trial={gpus_per_trial:g}: above 1 it must be a whole number N (N data-parallel workers of one "
            "GPU each); a fraction up to 1 shares one GPU"
        )
    n = int(gpus_per_trial)
    if workers not in (1, n):
        raise ConfigError(
            f"gpus_per_trial={n} with workers_per_trial={workers}: {n} GPUs per trial are {n} data-parallel workers "
            f"of one GPU each; give one of the two (or gpus_per_trial=1 with workers_per_trial={workers})"
        )
    return 1.0, n


def check_workers(workers: int, gpus_per_trial: float | str, batch_size: int) -> None:
    """`workers_per_trial`: a whole number >= 1; with several workers each reads at least one
    window of every micro-batch and holds a whole GPU or none (NCCL puts one worker on a GPU)."""
    check_int("workers_per_trial", workers, 1, MAX_WORKERS_PER_TRIAL)
    if workers == 1:
        return
    if batch_size < workers:
        raise ConfigError(
            f"workers_per_trial={workers} exceeds train.batch_size={batch_size}: every worker reads at least one "
            "window of each micro-batch; raise batch_size or use fewer workers"
        )
    if gpus_per_trial != AUTO_GPUS and float(gpus_per_trial) not in (0.0, 1.0):
        raise ConfigError(
            f"gpus_per_trial={float(gpus_per_trial):g} with workers_per_trial={workers}: each data-parallel worker "
            "holds 0 or 1 whole GPU"
        )


def gpus_for(value: float | str, cuda_devices: int | None = None) -> float:
    """GPUs per trial: a number as it is; "auto" one GPU a trial when CUDA is present (`cuda_devices`
    > 0; None: ask torch), else 0, the CPU. A trial of this project's trainer uses one device, so
    one GPU each is the share that keeps every GPU busy without sharing it."""
    if value != AUTO_GPUS:
        return float(value)
    if cuda_devices is None:
        cuda_devices = cuda_device_count()
    return 1.0 if cuda_devices > 0 else 0.0


def cuda_device_count() -> int:
    """CUDA devices torch sees here (0 without CUDA, or without torch)."""
    try:
        import torch
    except ImportError:  # pragma: no cover - torch is a dependency
        return 0
    return int(torch.cuda.device_count()) if torch.cuda.is_available() else 0
