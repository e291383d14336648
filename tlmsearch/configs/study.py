"""`StudyConfig`: the cross-architecture study, saved as `runs/<name>/study.yaml`.

A study asks the paper's question of several architectures at once: for each, a search, then a
verification of the search's best profiles beside the baselines with planned seeds (the
three-outcome verdict), then a transfer check of each architecture's best profile on the
others. It sits on the bottom layer beside `SearchConfig`, from which every per-architecture
search is derived (`search_config`), so that the CLI, the orchestration and the report all read
the same plain data.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from tlmsearch.configs.base import (
    ARCHITECTURE_NAMES,
    DECIDE_TOKENS_PER_PARAM,
    Config,
    DataConfig,
    TrainConfig,
    check_choice,
    check_positive,
    option,
    screening_train,
)
from tlmsearch.configs.lr_calibration import FRACTION_HELP, SETTING_HELP, parse_setting
from tlmsearch.configs.search import DEFAULT_BASELINES, SAMPLERS, SCHEDULERS, SearchConfig, check_name
from tlmsearch.configs.storage import check_storage, join
from tlmsearch.configs.validate import MAX_SEEDS
from tlmsearch.errors import ConfigError
from tlmsearch.profiles import ProfileSpec, expand_profile_sets

PHASE_ORDERS = ("overlap", "sequential")
PACK_MODES = ("auto", "on", "off")  # verify --pack (the rule behind auto: tlmsearch.training.pack.auto)
# the learning-rate check's paired seeds per rate in a study (verify's own default is off): at a paired
# sd of 0.011 nats (bench/README 14, 5 tokens per parameter under wsd) its 98.3% intervals are
# +-0.016 nats wide at 6 seeds (+-0.027 at 4), for 2 profiles x 2 rates x 6 = 24 runs an architecture
RATE_CHECK_SEEDS = 6
DEFAULT_ARCHS: tuple[str, ...] = ("transformer", "gated_attention", "titans", "hope_attention")
# the paper's controlled experiment (one third of the layers wider: early / middle / late),
# re-trained by a study's verification beside the usual controls
GROUP_CONTROLS: tuple[str, ...] = ("groups:third=early", "groups:third=middle", "groups:third=late")
# what each verification re-trains beside cosine and uniform: verify's controls (expanding
# cosine, linear, the bowtie hourglass; `analysis.plan.CONTROLS`, kept equal by a test) and the groups
STUDY_CONTROLS: tuple[str, ...] = (
    "cosine:start=0.5,end=1.5",
    "linear:start=1.5,end=0.5",
    "bowtie:ratio=0.3,position=0.75",
    *GROUP_CONTROLS,
)


def companion_trials(trials: int, baselines: tuple[str, ...]) -> int:
    """How many random profiles a random-search companion trains: the main search's trials minus
    the baselines it shares with it instead of re-training them (same profiles, seed and steps:
    identical runs); 0 when the main search runs nothing but baselines."""
    return max(0, trials - min(len(baselines), trials))


@dataclasses.dataclass(frozen=True, kw_only=True)
class StudyConfig(Config):
    """One search + verification per architecture, then a transfer check across them.

    Every architecture trains the same preset, budget, steps and data, so profiles (as
    `ProfileSpec`s, i.e. shapes) carry over between them exactly.
    """

    name: str = option("", "study name: the study directory is RUNS_DIR/NAME; empty = study-<time>")
    runs_dir: str = option("runs", "parent folder of run directories")
    archs: tuple[str, ...] = option(DEFAULT_ARCHS, "architectures, in the order they are studied")
    preset: str = option("cpu-s", "model shape preset")
    model: dict[str, Any] = dataclasses.field(default_factory=dict)  # preset shape overrides
    base_width: int = option(0, "fixed budget: MLP width per layer; 0 = the preset's")
    space: str = option("knots", "search space of every architecture's search")
    sampler: str = option("tpe", "Optuna sampler", choices=SAMPLERS)
    scheduler: str = option("asha", "early stopping of the searches", choices=SCHEDULERS)
    trials: int = option(16, "search trials per architecture, baselines included")
    top_k: int = option(3, "distinct best search profiles each verification re-trains")
    controls: tuple[str, ...] = option(
        STUDY_CONTROLS,
        "profiles each verification re-trains beside cosine and uniform; the set 'literature' stands for openelm, "
        "reverse, frame, crown, middle and bowtie",
    )
    seeds: int = option(0, "verification seeds per profile; 0 = planned (a pilot, then the seeds that decide)")
    pilot_seeds: int = option(3, "pilot seeds of a planned verification")
    max_seeds: int = option(20, "cap on seeds per profile of a planned verification, pilot included")
    transfer_seeds: int = option(3, "seeds of each transferred profile and of cosine on every other architecture")
    verify_tokens_per_param: float = option(
        DECIDE_TOKENS_PER_PARAM,
        "trial length of the verification and the transfer, in tokens per non-embedding parameter, when the "
        "searches' length is in tokens per parameter (the default, 5): at least this; 20 is where the field "
        "decides; 0 = the searches' length",
    )
    margin: float = option(0.01, "perplexity gain over cosine that matters, declared before the data")
    alpha: float = option(0.05, "level of each claim of a verdict")
    cpus_per_trial: float = option(1.0, "CPUs per trial")
    gpus_per_trial: float = option(0.0, "GPUs per trial; fractions share one GPU between trials")
    storage: str = option(
        "",
        "where trial checkpoints go: a filesystem path or URI (s3://, gs://, file://...) every node reaches; "
        "empty = the study directory (one machine)",
    )
    keep_checkpoints: bool = option(
        False, "keep each trial's checkpoints after it ends; by default deleted once the trial is recorded"
    )
    max_concurrent: int = option(0, "trials at once; 0 = as many as the resources allow")
    phase_order: str = option(
        "overlap", "phases: overlap (the next search trains beside the last verification) or sequential",
        choices=PHASE_ORDERS,
    )  # fmt: skip
    seed: int = option(0, "sampler seed and training seed of the searches (verification seeds follow it)")
    random_control: bool = option(
        False,
        "per architecture, a companion search with the random sampler (same trials, seed, fidelity; the "
        "baselines shared, not re-trained) whose best profile verify re-trains as the control 'random-best'; "
        "off by default: it nearly doubles the search cost",
    )
    noise_seeds: int = option(
        3, "noise floor of each search: uniform with this many seeds at trial fidelity before it; 0 = off"
    )
    lr_calibration: str = option(
        "auto", SETTING_HELP + ". Each architecture's search calibrates its own rate (on by default in a study)"
    )
    lr_calibration_fraction: float = option(1.0, FRACTION_HELP)
    rate_check: int = option(
        RATE_CHECK_SEEDS,
        "learning-rate check of each verification: cosine and the best candidate re-trained at half and twice the "
        "rate on this many paired seeds, and the verdict says whether its result holds across rates; 0 = off",
    )
    pack: str = option(
        "off",
        "verification trials of one shape trained side by side in one process: auto (where bench_pack measured "
        "packs faster), on or off",
        choices=PACK_MODES,
    )
    train: TrainConfig = dataclasses.field(default_factory=screening_train)  # 5 tokens/param, wsd, whole split
    data: DataConfig = dataclasses.field(default_factory=DataConfig)

    def __post_init__(self) -> None:
        if not self.archs:
            raise ConfigError(f"archs must name at least one of: {', '.join(ARCHITECTURE_NAMES)}")
        for arch in self.archs:
            check_choice("archs", arch, ARCHITECTURE_NAMES)
        if len(set(self.archs)) != len(self.archs):
            raise ConfigError(f"archs={list(self.archs)} repeats an architecture")
        check_choice("sampler", self.sampler, SAMPLERS)
        check_choice("scheduler", self.scheduler, SCHEDULERS)
        check_choice("phase_order", self.phase_order, PHASE_ORDERS)
        check_choice("pack", self.pack, PACK_MODES)
        for field in ("trials", "top_k", "transfer_seeds", "cpus_per_trial"):
            check_positive(field, getattr(self, field))
        check_positive("verify_tokens_per_param", self.verify_tokens_per_param, allow_zero=True)
        for field in ("seeds", "base_width", "max_concurrent", "seed", "gpus_per_trial", "rate_check"):
            check_positive(field, getattr(self, field), allow_zero=True)
        for field in ("seeds", "pilot_seeds", "max_seeds", "transfer_seeds", "rate_check"):
            if getattr(self, field) > MAX_SEEDS:
                raise ConfigError(f"{field}={getattr(self, field)} must be at most {MAX_SEEDS} (seeds per profile)")
        if self.seeds == 1:
            raise ConfigError("seeds=1 gives no spread: use 0 (planned) or at least 2")
        if self.rate_check == 1:
            raise ConfigError("rate_check=1 gives no spread: use 0 (off) or at least 2 paired seeds")
        if self.pilot_seeds < 2:
            raise ConfigError(f"pilot_seeds={self.pilot_seeds} must be >= 2 (a spread needs two seeds)")
        if self.max_seeds < self.pilot_seeds + 2:
            raise ConfigError(f"max_seeds={self.max_seeds} must be at least pilot_seeds + 2 = {self.pilot_seeds + 2}")
        if self.transfer_seeds < 2:
            raise ConfigError(f"transfer_seeds={self.transfer_seeds} must be >= 2 (a paired spread needs two seeds)")
        if not 0.0 < self.margin < 1.0:
            raise ConfigError(f"margin={self.margin} must lie in (0, 1): a relative perplexity gain (0.01 = 1%)")
        if not 0.0 < self.alpha < 0.5:
            raise ConfigError(f"alpha={self.alpha} must lie in (0, 0.5)")
        if self.name:
            check_name(self.name)
        check_storage(self.storage)
        # set names ("literature": the literature's shapes) stand for their profiles, written out
        object.__setattr__(self, "controls", expand_profile_sets(self.controls))
        for text in self.controls:
            ProfileSpec.parse(text)  # raises ConfigError naming the bad profile
        object.__setattr__(self, "lr_calibration", parse_setting(self.lr_calibration))
        self.search_config(self.archs[0])  # every derived search must be valid too

    @property
    def verify_seeds(self) -> int | str:
        """What `verify` takes: "auto" or a number of seeds."""
        return "auto" if self.seeds == 0 else self.seeds

    def random_config(self, arch: str, runs_dir: str = "") -> SearchConfig | None:
        """The random-search companion of `arch` (`tlmsearch.analysis.random_control`): the random
        sampler, the same seed and fidelity, `trials` minus the baselines it shares with the main
        search, no noise floor and no learning-rate calibration of its own (the main search's serve: the
        study trains it at the rate the main search chose). None when that leaves no trial."""
        main = self.search_config(arch, runs_dir)
        n = companion_trials(main.trials, main.baselines)
        if n == 0:
            return None
        return main.replace(
            name=f"random-{arch}", sampler="random", trials=n, baselines=(), noise_seeds=0, lr_calibration="off"
        )

    def search_config(self, arch: str, runs_dir: str = "") -> SearchConfig:
        """The search of `arch` inside the study directory `runs_dir` (named after the arch)."""
        return SearchConfig(
            name=arch,
            runs_dir=runs_dir or self.runs_dir,
            arch=arch,
            preset=self.preset,
            model=dict(self.model),
            base_width=self.base_width,
            space=self.space,
            sampler=self.sampler,
            scheduler=self.scheduler,
            trials=self.trials,
            cpus_per_trial=self.cpus_per_trial,
            gpus_per_trial=self.gpus_per_trial,
            # every run of the study gets its folder below <storage>/<study name>/
            storage=join(self.storage, self.name or "study") if self.storage else "",
            keep_checkpoints=self.keep_checkpoints,
            max_concurrent=self.max_concurrent,
            seed=self.seed,
            noise_seeds=self.noise_seeds,
            lr_calibration=self.lr_calibration,
            lr_calibration_fraction=self.lr_calibration_fraction,
            baselines=DEFAULT_BASELINES,
            train=self.train,
            data=self.data,
        )
