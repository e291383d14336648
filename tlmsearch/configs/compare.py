"""The options of a controlled comparison (`tlmsearch compare`, `tlmsearch.compare`), checked
once, and the search config its run directory holds (`compare_config`: its baselines are the
compared profiles, so `tlmsearch.load`, `report` and `export` read it like a search).

Pure: no torch, no Ray; the run is `tuning.compare`'s.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, fields, replace
from pathlib import Path
from typing import Any

from tlmsearch.configs.identity import DEFAULT_REFERENCE
from tlmsearch.configs.search import SearchConfig
from tlmsearch.configs.verify import check_pack
from tlmsearch.core.base import TRAIN_INT_BOUNDS, DataConfig, TrainConfig
from tlmsearch.core.validate import check_int, check_method, check_seed_count
from tlmsearch.errors import UserError
from tlmsearch.profiles import ProfileSpec


@dataclass(frozen=True, kw_only=True)
class CompareOptions:
    """How a comparison trains and judges: every keyword of `compare` and `tlmsearch.compare`,
    declared once here.

    `train`/`data` are TrainConfig/DataConfig fields, `model` ModelConfig or preset overrides;
    `storage` is where trial checkpoints go (`SearchConfig.storage`; "" = the run directory);
    `keep_checkpoints` keeps them after each run ends (`tuning.checkpoints`; default: deleted);
    `steps` sets the step count only; seeds are `seed`..`seed + seeds - 1`; `margin` (old name
    `threshold`) and `alpha` (or `confidence` = 1 - alpha) decide the verdict, `method` is its
    interval ("t" or "bootstrap"); `pack` ("off", "on", "auto") trains the profiles x seeds side by
    side in one process, each still one record (`tuning.pack_runs`); `address` joins a Ray
    cluster; `progress` prints the plan line and the live line. Profiles that build one model at
    the run's depth (cosine and linear 1.5 -> 0.5 at 2 layers) are refused unless `allow_collapsed`:
    then each such set trains once, as one candidate under all its names (`configs.identity`).
    `reference` (a profile text, default cosine 1.5 -> 0.5) is what every candidate is compared
    with; one other than cosine is trained too when `profiles` leave it out.
    """

    arch: str = "transformer"
    preset: str = "cpu-s"
    seeds: int = 3
    steps: int | None = None
    base_width: int = 0
    name: str = ""
    runs_dir: str | Path = "runs"
    model: Mapping[str, Any] | None = None
    train: Mapping[str, Any] | None = None
    data: Mapping[str, Any] | None = None
    cpus_per_trial: float = 1.0
    gpus_per_trial: float | str = "auto"  # "auto": one GPU a run where torch sees CUDA, else the CPU
    workers_per_trial: int = 1  # data-parallel workers per run (a Ray Train run; the numbers of one)
    storage: str = ""
    keep_checkpoints: bool = False
    seed: int = 0
    threshold: float | None = None
    confidence: float | None = None
    method: str = "t"
    margin: float | None = None
    alpha: float | None = None
    pack: str = "off"
    address: str | None = None
    progress: bool = True
    allow_collapsed: bool = False
    reference: str = DEFAULT_REFERENCE

    @classmethod
    def of(cls, options: CompareOptions | None = None, **changes: Any) -> CompareOptions:
        """`options` (default: the defaults) with single fields replaced by keyword; an unknown
        keyword is a TypeError that names it and the allowed ones."""
        allowed = [f.name for f in fields(cls)]
        unknown = sorted(set(changes) - set(allowed))
        if unknown:
            raise TypeError(f"compare() got unexpected keyword {', '.join(unknown)}; allowed: {', '.join(allowed)}")
        return replace(options or cls(), **changes)


def canonical(spec: ProfileSpec) -> tuple[str, tuple[tuple[str, Any], ...]]:
    """`spec`'s family and parameters with every default written out, in name order: two
    spellings of one profile (`cosine` and `cosine:end=0.5,start=1.5`) have the same one."""
    full = spec.resolved()
    return full.family, tuple(sorted(full.params.items(), key=lambda item: item[0]))


def check_distinct(profiles: Sequence[str], specs: Sequence[ProfileSpec]) -> None:
    """Refuse a profile given twice, in any spelling: the comparison would train it twice and
    pair it against itself."""
    seen: dict[tuple[str, tuple[tuple[str, Any], ...]], str] = {}
    for given, spec in zip(profiles, specs, strict=True):
        key = canonical(spec)
        if key in seen:
            first = seen[key]
            full = spec.resolved()
            same = f"{first!r} twice" if first.strip() == given.strip() else f"{first!r} and {given!r}, both {full}"
            raise UserError(f"profiles repeat a profile: {same}; give each profile once")
        seen[key] = given


def check_compare_model(model: Mapping[str, Any] | None) -> None:
    """`model` overrides that would choose the profile: a comparison trains `profiles`."""
    if model and "family" in model:
        raise UserError(
            "model.family is not a model override of compare: it trains the profiles you list "
            "(--families SPEC ... on the command line, `profiles` in Python); --model sets shape and "
            "ModelConfig fields such as n_layers=4"
        )


def compare_config(profiles: Sequence[str], o: CompareOptions) -> tuple[SearchConfig, list[ProfileSpec]]:
    """The search config a comparison of `profiles` (ProfileSpec texts) under `o` trains with (its
    name left for the run directory to give) and the parsed profiles; every option and profile
    checked in one line naming it, before anything is written or trained."""
    if isinstance(profiles, str) or not all(isinstance(p, str) for p in profiles or ()):
        raise UserError(f"compare: profiles={profiles!r} must be a list of profile texts, e.g. ['uniform', 'cosine']")
    if not profiles:
        raise UserError("compare needs at least one profile, e.g. --families uniform cosine")
    check_seed_count("seeds", o.seeds)  # a paired test needs two; each one trains every profile
    if o.steps is not None:
        check_int("steps", o.steps, 1, TRAIN_INT_BOUNDS["steps"])
    check_method(o.method, o.seeds)  # before any training: the bootstrap needs enough seeds
    specs = [ProfileSpec.parse(p) for p in profiles]  # ConfigError names a bad one
    check_distinct(profiles, specs)
    reference = ProfileSpec.parse(o.reference)  # a ConfigError names a bad one
    if str(reference.resolved()) != DEFAULT_REFERENCE and canonical(reference) not in map(canonical, specs):
        specs.append(reference)  # the reference is trained beside the candidates
    check_compare_model(o.model)
    train_cfg = TrainConfig.from_dict(dict(o.train or {}), where="train")
    if o.steps is not None:  # a step count replaces a trial length in tokens per parameter
        train_cfg = train_cfg.replace(steps=o.steps, warmup_steps=min(train_cfg.warmup_steps, o.steps))
        if train_cfg.tokens_per_param:
            raise UserError(
                f"steps={o.steps} and train.tokens_per_param={train_cfg.tokens_per_param:g} both set the trial "
                "length; give one"
            )
    cfg = SearchConfig(
        name=o.name or "",
        runs_dir=str(Path(o.runs_dir)),
        arch=o.arch,
        preset=o.preset,
        model=dict(o.model or {}),
        base_width=o.base_width,
        space="families",
        scheduler="none",
        trials=len(specs) * o.seeds,
        cpus_per_trial=o.cpus_per_trial,
        gpus_per_trial=o.gpus_per_trial,
        workers_per_trial=o.workers_per_trial,
        storage=o.storage,
        keep_checkpoints=o.keep_checkpoints,
        seed=o.seed,
        noise_seeds=0,  # a comparison is no search: its seeds are the replicates
        pack=check_pack(o.pack),
        baselines=tuple(str(s) for s in specs),
        train=train_cfg,
        data=DataConfig.from_dict(dict(o.data or {}), where="data"),
    )
    return cfg, specs
