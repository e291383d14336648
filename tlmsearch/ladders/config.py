"""`LadderConfig`: a ladder, saved as `runs/<name>/ladder.yaml`.

The same profiles (cosine, uniform, the literature's, optionally a search's best) trained with
paired seeds at several points of (model size x tokens per parameter), one architecture. Each
point becomes a `SearchConfig` (`point_config`): its run directory holds one search of a single
uniform trial (after the learning-rate calibration, when on), which `verify` then re-trains
beside the profiles with fresh paired seeds, so every point is an ordinary run directory that
`tlmsearch status`, `report` and `verify` read.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from tlmsearch.configs.identity import DEFAULT_REFERENCE, check_distinct_shapes
from tlmsearch.configs.lr_calibration import (
    DEFAULT_SEEDS,
    FRACTION_HELP,
    SEEDS_HELP,
    SETTING_HELP,
    check_seeds,
    parse_setting,
)
from tlmsearch.configs.search import (
    AUTO_GPUS,
    MAX_WORKERS_PER_TRIAL,
    PACK_MODES,
    SearchConfig,
    check_workers,
    gpu_setting,
    gpus_for,
    split_gpus,
)
from tlmsearch.configs.verify import check_config_looks, check_plan_options
from tlmsearch.core.base import (
    ARCHITECTURE_NAMES,
    Config,
    DataConfig,
    TrainConfig,
    check_choice,
    option,
    screening_train,
)
from tlmsearch.core.validate import MAX_SEED, MAX_SEEDS, check_int
from tlmsearch.errors import ConfigError
from tlmsearch.ladders.points import (
    PointSpec,
    check_overrides_reach,
    parse_point,
    point_identity,
    point_size,
    resolve_length,
    target_of,
)
from tlmsearch.profiles import ProfileSpec, expand_profile_sets

DEFAULT_PROFILES: tuple[str, ...] = ("literature",)
MIN_POINTS = 2
ARMS = ("compute", "depth")
DEPTH_TOLERANCE = 0.05  # a depth arm's points: non-embedding parameters within 5 % (widths are integers)
DEPTH_EXAMPLE = (
    "cpu-xs:n_layers=3,d_model=96,n_heads=6,base_width=240@20 cpu-xs@20 "
    "cpu-xs:n_layers=12,d_model=48,n_heads=3,base_width=128@20"
)
ARM_HELP = (
    "what the points vary: compute (sizes and lengths at one depth and head size; the gain fitted against "
    "log10 training FLOPs and extrapolated to --target) or depth (equal non-embedding parameters within 5 %, "
    f"one length, layers varying, e.g. --points {DEPTH_EXAMPLE}; the gain fitted against log2 layers)"
)


def ladder_train() -> TrainConfig:
    """A ladder's default training at every point: the deciding regime's (`config.screening_train`)
    without its length, which is each point's."""
    return screening_train(tokens_per_param=0.0)


@dataclasses.dataclass(frozen=True, kw_only=True)
class LadderConfig(Config):
    """The points, the profiles, the seeds and the target of a ladder.

    `train` defaults to `ladder_train()`; a partial `train` mapping (a config file's section, or
    `tlmsearch.ladder(train={...})`) starts from TrainConfig's own defaults, as a study's does;
    the command line's training flags change the ladder's defaults."""

    name: str = option("", "ladder name: the ladder directory is RUNS_DIR/NAME; empty = ladder-<time>")
    runs_dir: str = option("runs", "parent folder of run directories")
    arch: str = option("transformer", "architecture", choices=ARCHITECTURE_NAMES)
    arm: str = option("compute", ARM_HELP, choices=ARMS)
    points: tuple[str, ...] = option(
        (), "points SHAPE@TOKENS_PER_PARAM (a preset, optional overrides), e.g. cpu-xs@20 tiny:n_layers=3@5"
    )
    profiles: tuple[str, ...] = option(
        DEFAULT_PROFILES,
        "profiles trained at every point beside cosine and uniform; the set 'literature' stands for openelm, "
        "reverse, frame, crown, middle and bowtie",
    )
    best: str = option("", "a further profile trained at every point as 'best' (e.g. a search's best profile)")
    seeds: int = option(4, "paired seeds per profile at every point; 0 = planned (a pilot, then the seeds that decide)")
    pilot_seeds: int = option(3, "pilot seeds of a planned verification (seeds 0)")
    max_seeds: int = option(20, "cap on seeds per profile of a planned verification, pilot included")
    looks: int = option(
        0,
        "group-sequential looks at every point's deciding seeds (0 = one look at the end): the candidates a look "
        "decides stop training, O'Brien-Fleming-type alpha spending (verify --looks)",
    )
    margin: float = option(0.01, "perplexity gain over cosine that matters at a point, declared before the data")
    alpha: float = option(0.05, "level of each claim: every point's verdict, every trend")
    target: str = option("440m", "extrapolate to this size: a preset name or a non-embedding parameter count")
    target_tokens_per_param: float = option(0.0, "tokens per parameter at the target; 0 = the largest point's")
    cpus_per_trial: float = option(1.0, "CPUs per trial")
    gpus_per_trial: float | str = option(
        AUTO_GPUS,
        "GPUs per trial; fractions share one GPU between trials; a whole N > 1: N data-parallel workers of one GPU "
        "each; auto = one GPU a trial where torch sees a CUDA "
        "device, else 0 (trials train on the CPU)",
    )
    workers_per_trial: int = option(
        1, "data-parallel workers per trial (Ray Train, DDP), each with cpus_per_trial CPUs and gpus_per_trial GPUs"
    )
    seed: int = option(0, "seed of each point's uniform run; the paired seeds follow it")
    lr_calibration: str = option(
        "auto",
        SETTING_HELP + "; at every point, on uniform, before its profiles (one rate for all sizes is a confound)",
    )
    lr_calibration_fraction: float = option(1.0, FRACTION_HELP)
    lr_calibration_seeds: int = option(DEFAULT_SEEDS, SEEDS_HELP)
    pack: str = option(
        "off",
        "each point's verification trials of one shape trained side by side in one process: auto (where "
        "bench_pack measured packs faster), on or off",
        choices=PACK_MODES,
    )
    reference: str = option(
        DEFAULT_REFERENCE,
        "the profile every other is compared with at every point (trained beside them): each point's verdict says "
        "whether it is near-optimal, and the gains over it are the ladder's gains over cosine",
    )
    allow_collapsed: bool = option(
        False,
        "go on where cosine, uniform, the profiles and best build one model at a point's depth (cosine and linear "
        "1.5 -> 0.5 at 2 or 3 layers): each runs as one merged candidate; by default such a point is refused",
    )
    # every point's training (its length: the point's): the regime of a decision, warmup-stable-decay and the
    # result on the whole validation split (`config.screening_train`, bench/README 14), length left to the points
    train: TrainConfig = dataclasses.field(default_factory=ladder_train)
    data: DataConfig = dataclasses.field(default_factory=DataConfig)

    def __post_init__(self) -> None:
        check_choice("arch", self.arch, ARCHITECTURE_NAMES)
        check_choice("pack", self.pack, PACK_MODES)
        check_choice("arm", self.arm, ARMS)
        if len(self.points) < MIN_POINTS:
            raise ConfigError(
                f"points: a ladder needs at least {MIN_POINTS} points to fit a trend; {len(self.points)} given"
            )
        specs = [parse_point(p) for p in self.points]
        names = [s.name for s in specs]
        if len(set(names)) != len(names):
            twice = sorted({n for n in names if names.count(n) > 1})
            raise ConfigError(f"points repeat a point: {', '.join(twice)}; give each point once")
        object.__setattr__(self, "points", tuple(s.text for s in specs))
        texts = expand_profile_sets(self.profiles)
        canon = [str(ProfileSpec.parse(t)) for t in texts]  # a ConfigError names a bad one
        if self.best:
            canon.append(str(ProfileSpec.parse(self.best)))
        object.__setattr__(self, "reference", str(ProfileSpec.parse(self.reference)))  # a ConfigError names a bad one
        if len(set(canon)) != len(canon):
            raise ConfigError(f"profiles repeat a profile: {', '.join(canon)}; give each profile once")
        if self.seeds != 0:
            check_int("seeds", self.seeds, 2, MAX_SEEDS)
        check_int("pilot_seeds", self.pilot_seeds, 2, MAX_SEEDS)
        check_int("max_seeds", self.max_seeds, 2, MAX_SEEDS)
        check_int("seed", self.seed, 0, MAX_SEED)
        check_plan_options(self.verify_seeds, pilot_seeds=self.pilot_seeds, max_seeds=self.max_seeds)
        check_config_looks(self.looks, self.verify_seeds, pilot_seeds=self.pilot_seeds, max_seeds=self.max_seeds)
        from tlmsearch.analysis.verdict import resolve_levels  # lazy: heavy (numpy)

        resolve_levels(self.margin, self.alpha)
        if self.target_tokens_per_param < 0:
            raise ConfigError(f"target_tokens_per_param={self.target_tokens_per_param:g} must be >= 0")
        target_of(self.target, self.arch, self.target_tokens_per_param or 1.0)  # a bad target: one line now
        if self.cpus_per_trial <= 0:
            raise ConfigError(f"cpus_per_trial={self.cpus_per_trial:g} must be > 0")
        object.__setattr__(self, "gpus_per_trial", gpu_setting(self.gpus_per_trial))
        check_int("workers_per_trial", self.workers_per_trial, 1, MAX_WORKERS_PER_TRIAL)
        gpus, workers = split_gpus(self.gpus_per_trial, self.workers_per_trial)  # N GPUs: N workers of one
        object.__setattr__(self, "gpus_per_trial", gpus)
        object.__setattr__(self, "workers_per_trial", workers)
        check_workers(self.workers_per_trial, self.gpus_per_trial, self.train.batch_size)
        object.__setattr__(self, "lr_calibration", parse_setting(self.lr_calibration))
        check_seeds(self.lr_calibration_seeds)
        if self.train.tokens_per_param:
            raise ConfigError(
                f"train.tokens_per_param={self.train.tokens_per_param:g}: a ladder's lengths are its points' "
                "(SHAPE@TOKENS_PER_PARAM)"
            )
        configs = self.point_configs()  # every point's search config: shapes, budgets and lengths checked now
        self._check_points(specs, configs)
        if self.arm == "depth":
            self._check_depth_arm(configs)

    @staticmethod
    def _check_points(specs: list[PointSpec], configs: list[Any]) -> None:
        """Every override reaches the model its point trains, and no two points train one model
        (one shape spelled two ways: `tiny@1` and `tiny:n_layers=2@1`, overrides in another order)."""
        seen: dict[tuple[Any, ...], str] = {}
        for spec, cfg in zip(specs, configs, strict=True):
            check_overrides_reach(spec, cfg)
            first = seen.setdefault(point_identity(cfg), spec.text)
            if first != spec.text:
                raise ConfigError(
                    f"points {first} and {spec.text} are one point (the same model, budget and length); give it once"
                )

    def _check_depth_arm(self, configs: list[Any]) -> None:
        """A depth arm's points: one length, at least two depths, equal non-embedding parameters
        within `DEPTH_TOLERANCE`; a `ConfigError` naming what differs otherwise."""
        specs = self.specs
        sizes = [point_size(c) for c in configs]
        if len({s.tokens_per_param for s in specs}) > 1:
            lengths = ", ".join(f"{s.text}" for s in specs)
            raise ConfigError(f"arm depth: every point needs the same tokens per parameter; given {lengths}")
        if len({z.n_layers for z in sizes}) < 2:
            raise ConfigError(f"arm depth: the points need at least 2 different depths (n_layers); all have "
                              f"{sizes[0].n_layers}")  # fmt: skip
        low, high = min(z.non_embedding for z in sizes), max(z.non_embedding for z in sizes)
        if high > low * (1.0 + DEPTH_TOLERANCE):
            pairs = zip(specs, sizes, strict=True)
            counts = ", ".join(f"{s.text}: {z.non_embedding:,} ({z.n_layers} layers)" for s, z in pairs)
            raise ConfigError(
                f"arm depth: non-embedding parameters differ by {high / low - 1:.1%} ({counts}); a depth arm holds "
                f"them within {DEPTH_TOLERANCE:.0%}: change d_model, n_heads or base_width, e.g. {DEPTH_EXAMPLE}"
            )

    def check_arm(self) -> None:
        """A compute arm's points share depth and head size (a trend across compute moves nothing
        else of the shape); a `ConfigError` in one line otherwise. Checked before a ladder starts
        and when it is priced, not on loading one (a ladder saved before arms reads as it trained)."""
        if self.arm != "compute":
            return
        sizes = [point_size(c) for c in self.point_configs()]
        if len({(z.n_layers, z.head_dim) for z in sizes}) > 1:
            shapes = "; ".join(f"{s.text}: {z.shape_text()}" for s, z in zip(self.specs, sizes, strict=True))
            raise ConfigError(
                f"points differ in depth or head size ({shapes}): a trend across compute is fitted only over points "
                "that share both; give points of one depth and head size (vary d_model with n_heads, base_width, the "
                "length), or --arm depth for points of equal parameters at different depths"
            )

    @property
    def gpu_share(self) -> float:
        """GPUs per trial as a number: "auto" worked out on this machine (`configs.search.gpus_for`)."""
        return gpus_for(self.gpus_per_trial)

    @property
    def specs(self) -> list[PointSpec]:
        return [parse_point(p) for p in self.points]

    @property
    def controls(self) -> tuple[str, ...]:
        """The profiles verify trains beside cosine and uniform at every point (sets expanded)."""
        return tuple(t for t in expand_profile_sets(self.profiles))

    @property
    def verify_seeds(self) -> int | str:
        return "auto" if self.seeds == 0 else self.seeds

    @property
    def verify_looks(self) -> int | None:
        """verify's `looks` at every point: None for one look at the end."""
        return self.looks or None

    def point_config(self, spec: PointSpec, runs_dir: str = "") -> Any:
        """The `SearchConfig` of one point (steps resolved from its tokens per parameter): one
        uniform trial at the point's length, no noise floor, no early stopping."""
        train = self.train.replace(tokens_per_param=spec.tokens_per_param)
        cfg = SearchConfig(
            name=spec.name,
            runs_dir=runs_dir or self.runs_dir,
            arch=self.arch,
            preset=spec.preset,
            model=dict(spec.model),
            space="families",
            sampler="random",
            scheduler="none",
            trials=1,
            cpus_per_trial=self.cpus_per_trial,
            gpus_per_trial=self.gpus_per_trial,
            workers_per_trial=self.workers_per_trial,
            seed=self.seed,
            noise_seeds=0,
            lr_calibration=self.lr_calibration,
            lr_calibration_fraction=self.lr_calibration_fraction,
            lr_calibration_seeds=self.lr_calibration_seeds,
            baselines=("uniform",),
            train=train,
            data=self.data,
        )
        return resolve_length(cfg)

    def point_configs(self, runs_dir: str = "") -> list[Any]:
        return [self.point_config(s, runs_dir) for s in self.specs]

    @property
    def named_profiles(self) -> tuple[str, ...]:
        """Every profile a point's verification names: cosine, uniform, the profiles and best."""
        best = (self.best,) if self.best else ()
        return (self.reference, DEFAULT_REFERENCE, "uniform", *self.controls, *best)

    def check_shapes(self) -> None:
        """Refuse, in one line before anything trains, a point at whose depth the named profiles
        build one model (`configs.identity`), unless `allow_collapsed`."""
        for spec, cfg in zip(self.specs, self.point_configs(), strict=True):
            what = f"ladder point {spec.text}"
            check_distinct_shapes(cfg, self.named_profiles, what=what, allow=self.allow_collapsed, searched=False)


__all__ = ["ARMS", "DEFAULT_PROFILES", "DEPTH_TOLERANCE", "MIN_POINTS", "LadderConfig", "ladder_train"]
