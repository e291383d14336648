"""`StudyConfig`: the cross-architecture study, saved as `runs/<name>/study.yaml`.

A study asks the paper's question of several architectures at once: for each, a search, then a
verification of the search's best profiles beside the baselines with planned seeds (the
three-outcome verdict), then a transfer check of each architecture's best profile on the
others. It sits on the bottom layer beside `SearchConfig` and holds one, `search`: the template every
architecture's search is derived from (`search_config` sets its name, arch and run folder), so a
search setting is declared, defaulted and checked once, in `SearchConfig`. The study's own fields
are only what the verification, the transfer and the report need. The CLI and the Python API
still take the search settings as flat names (`--trials`, `tlmsearch.study(trials=...)`):
`flat_dict` and `from_flat` translate between those and the nested layout of `study.yaml`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any, Self

from tlmsearch.configs.identity import Candidate, candidates, check_distinct_shapes
from tlmsearch.configs.lr_calibration import SETTING_HELP
from tlmsearch.configs.search import PACK_MODES, SearchConfig, check_name
from tlmsearch.configs.storage import join
from tlmsearch.configs.verify import check_config_looks
from tlmsearch.core.architectures import ARCHITECTURES, architecture
from tlmsearch.core.base import (
    ARCHITECTURE_NAMES,
    DECIDE_TOKENS_PER_PARAM,
    Config,
    check_choice,
    check_positive,
    option,
    resolve_options,
)
from tlmsearch.core.validate import MAX_SEEDS
from tlmsearch.errors import ConfigError
from tlmsearch.profiles import ProfileSpec, expand_profile_sets

PHASE_ORDERS = ("overlap", "sequential")
COSINE_TEXT = "cosine:start=1.5,end=0.5"  # the paper's taper, every verdict's reference
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


# The search settings a study sets once for every architecture's search: the fields of its
# `search` template (and of study.yaml's `search:` section). The rest of SearchConfig keeps its
# defaults in a study (one fixed budget, val_loss alone, the default baselines, ...), and name,
# arch and runs_dir are set per architecture by `StudyConfig.search_config`.
SEARCH_FIELDS: tuple[str, ...] = (
    "preset",
    "model",
    "base_width",
    "space",
    "sampler",
    "scheduler",
    "trials",
    "cpus_per_trial",
    "gpus_per_trial",
    "workers_per_trial",
    "storage",
    "keep_checkpoints",
    "max_concurrent",
    "seed",
    "noise_seeds",
    "lr_calibration",
    "lr_calibration_fraction",
    "lr_calibration_seeds",
    "train",
    "data",
)
PER_ARCH_FIELDS: tuple[str, ...] = ("name", "arch", "runs_dir")  # set by `StudyConfig.search_config`
# where a study's default differs from a plain search's: the knots space (a profile shape free
# enough to tell architectures apart), half the trials (a search per architecture), and the
# learning-rate calibration on (each architecture trains at its own rate)
STUDY_SEARCH_DEFAULTS: dict[str, Any] = {"space": "knots", "trials": 16, "lr_calibration": "auto"}
# the help of a search setting's `tlmsearch study` flag where a study reads it differently from a
# search (the others keep SearchConfig's help)
SEARCH_HELP: dict[str, str] = {
    "space": "search space of every architecture's search",
    "scheduler": "early stopping of the searches",
    "trials": "search trials per architecture, baselines included",
    "cpus_per_trial": "CPUs per trial",
    "storage": "where trial checkpoints go: a filesystem path or URI (s3://, gs://, file://...) every node "
    "reaches; empty = the study directory (one machine)",
    "keep_checkpoints": "keep each trial's checkpoints after it ends; by default deleted once the trial is recorded",
    "seed": "sampler seed and training seed of the searches (verification seeds follow it)",
    "noise_seeds": "noise floor of each search: uniform with this many seeds at trial fidelity before it; 0 = off",
    "lr_calibration": SETTING_HELP + ". Each architecture's search calibrates its own rate (on by default in a "
    "study), each run at the verification's length (verify_tokens_per_param): where the profiles are decided",
}


def study_search(**fields: Any) -> SearchConfig:
    """A study's search template: SearchConfig with the study's defaults (`STUDY_SEARCH_DEFAULTS`),
    then `fields` (search settings, `SEARCH_FIELDS`)."""
    return SearchConfig(**{**STUDY_SEARCH_DEFAULTS, **fields})


def _search_section(search: SearchConfig) -> dict[str, Any]:
    """The `search:` section of study.yaml: the template's study settings, in SEARCH_FIELDS order."""
    data = search.to_dict()
    return {name: data[name] for name in SEARCH_FIELDS}


def _check_layout(data: Mapping[str, Any], where: str) -> None:
    """Refuse a `search:` section that sets what a study sets per architecture, in one line."""
    section = data.get("search")
    if isinstance(section, Mapping):
        extra = [str(k) for k in section if k not in SEARCH_FIELDS]
        if extra:
            raise ConfigError(
                f"{where + '.' if where else ''}search: {', '.join(extra)} cannot be set in a study (name, arch and "
                f"runs_dir are set per architecture; the rest keep the search defaults); allowed: "
                f"{', '.join(SEARCH_FIELDS)}"
            )


def nest(fields: Mapping[str, Any]) -> dict[str, Any]:
    """Flat study settings (`tlmsearch.study(trials=8, top_k=2)`, the CLI's flags) in the nested
    layout: the search settings (`SEARCH_FIELDS`) moved into `search` (over a `search` given too)."""
    out = {k: v for k, v in fields.items() if k not in SEARCH_FIELDS}
    moved = {k: v for k, v in fields.items() if k in SEARCH_FIELDS}
    if moved:
        given = out.get("search")
        if isinstance(given, SearchConfig):
            given = _search_section(given)
        out["search"] = {**(given if isinstance(given, Mapping) else {}), **moved}
    return out


@dataclasses.dataclass(frozen=True, kw_only=True)
class StudyConfig(Config):
    """One search + verification per architecture, then a transfer check across them.

    Every architecture trains the same preset, budget, steps and data (the `search` template's), so
    profiles (as `ProfileSpec`s, i.e. shapes) carry over between them exactly.
    """

    name: str = option("", "study name: the study directory is RUNS_DIR/NAME; empty = study-<time>")
    runs_dir: str = option("runs", "parent folder of run directories")
    archs: tuple[str, ...] = option(DEFAULT_ARCHS, "architectures, in the order they are studied")
    # the template of every architecture's search (its `SEARCH_FIELDS`; the rest at their defaults)
    search: SearchConfig = dataclasses.field(default_factory=study_search)
    top_k: int = option(3, "distinct best search profiles each verification re-trains")
    controls: tuple[str, ...] = option(
        STUDY_CONTROLS,
        "profiles each verification re-trains beside cosine and uniform; the set 'literature' stands for openelm, "
        "reverse, frame, crown, middle and bowtie",
    )
    seeds: int = option(0, "verification seeds per profile; 0 = planned (a pilot, then the seeds that decide)")
    pilot_seeds: int = option(3, "pilot seeds of a planned verification")
    max_seeds: int = option(20, "cap on seeds per profile of a planned verification, pilot included")
    looks: int = option(
        0,
        "group-sequential looks at each verification's deciding seeds (0 = one look at the end): the candidates a "
        "look decides stop training, O'Brien-Fleming-type alpha spending (verify --looks)",
    )
    transfer_seeds: int = option(3, "seeds of each transferred profile and of cosine on every other architecture")
    verify_tokens_per_param: float = option(
        DECIDE_TOKENS_PER_PARAM,
        "trial length of the verification and the transfer, in tokens per non-embedding parameter, when the "
        "searches' length is in tokens per parameter (the default, 5): at least this; 20 is where the field "
        "decides; 0 = the searches' length",
    )
    margin: float = option(0.01, "perplexity gain over cosine that matters, declared before the data")
    alpha: float = option(0.05, "level of each claim of a verdict")
    phase_order: str = option(
        "overlap", "phases: overlap (the next search trains beside the last verification) or sequential",
        choices=PHASE_ORDERS,
    )  # fmt: skip
    random_control: bool = option(
        False,
        "per architecture, a companion search with the random sampler (same trials, seed, fidelity; the "
        "baselines shared, not re-trained) whose best profile verify re-trains as the control 'random-best'; "
        "off by default: it nearly doubles the search cost",
    )
    rate_check: int = option(
        RATE_CHECK_SEEDS,
        "learning-rate check of each verification: cosine and the best candidate re-trained at half and twice the "
        "rate on this many paired seeds, and the verdict says whether its result holds across rates; 0 = off",
    )
    pack: str = option(
        "off",
        "trials of one shape (each search's noise floor, each verification and its rate check, the transfer) "
        "trained side by side in one process, each still one record: auto (where bench_pack measured packs "
        "faster), on or off",
        choices=PACK_MODES,
    )
    reference: str = option(
        COSINE_TEXT,
        "the profile every candidate is compared with in each verification (trained beside them): its verdict says "
        "whether it is near-optimal",
    )
    allow_collapsed: bool = option(
        False,
        "go on where profiles the study names (cosine, uniform, the controls) build one model at its depth "
        "(cosine and linear 1.5 -> 0.5 at 2 or 3 layers): each runs as one merged candidate; by default refused",
    )
    # each architecture's options ({arch: {option: value}}, the fields of its `ArchSpec.options`);
    # per architecture because each family owns its own; an architecture not named keeps its defaults
    options: dict[str, dict[str, Any]] = dataclasses.field(default_factory=dict)

    def __post_init__(self) -> None:
        if isinstance(self.search, Mapping):  # the Python API: a section as study.yaml holds it
            object.__setattr__(self, "search", _template(self.search, "search"))
        if not isinstance(self.search, SearchConfig):
            raise ConfigError(f"search must be a SearchConfig or a mapping of {', '.join(SEARCH_FIELDS)}")
        self._check_template()
        if not self.archs:
            raise ConfigError(f"archs must name at least one of: {', '.join(ARCHITECTURE_NAMES)}")
        for arch in self.archs:
            check_choice("archs", arch, ARCHITECTURE_NAMES)
        if len(set(self.archs)) != len(self.archs):
            raise ConfigError(f"archs={list(self.archs)} repeats an architecture")
        check_choice("phase_order", self.phase_order, PHASE_ORDERS)
        check_choice("pack", self.pack, PACK_MODES)
        for field in ("top_k", "transfer_seeds"):
            check_positive(field, getattr(self, field))
        check_positive("verify_tokens_per_param", self.verify_tokens_per_param, allow_zero=True)
        for field in ("seeds", "rate_check"):
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
        check_config_looks(self.looks, self.verify_seeds, pilot_seeds=self.pilot_seeds, max_seeds=self.max_seeds)
        if self.name:
            check_name(self.name)
        # set names ("literature": the literature's shapes) stand for their profiles, written out
        object.__setattr__(self, "controls", expand_profile_sets(self.controls))
        object.__setattr__(self, "reference", str(ProfileSpec.parse(self.reference)))  # ConfigError names a bad one
        for text in self.controls:
            ProfileSpec.parse(text)  # raises ConfigError naming the bad profile
        for arch, given in self.options.items():
            if arch not in self.archs:
                archs = ", ".join(self.archs)
                raise ConfigError(f"options: {arch!r} is not an architecture of this study; its architectures: {archs}")
            resolve_options(arch, given, f"options.{arch}")  # one line naming the family's own options
        for arch in self.archs:
            self.search_config(arch)  # every derived search must be valid too
            _check_controls_build(arch, self.controls)

    @property
    def named_profiles(self) -> tuple[str, ...]:
        """The profiles every verification names: cosine, uniform and the controls."""
        return (self.reference, COSINE_TEXT, "uniform", *self.controls)

    def named_candidates(self, arch: str) -> list[Candidate]:
        """The named profiles of `arch`'s verification, merged by the model they build
        (`configs.identity`): one candidate a model, under all its names."""
        return candidates(self.search_config(arch), self.named_profiles)

    def check_shapes(self) -> None:
        """Refuse, in one line before anything trains, a depth at which the profiles the study
        names build one model (cosine and linear 1.5 -> 0.5 at 2 layers), unless `allow_collapsed`."""
        for arch in self.archs:
            check_distinct_shapes(
                self.search_config(arch), self.named_profiles, what="study", allow=self.allow_collapsed
            )

    def _check_template(self) -> None:
        """Refuse a template that sets what a study sets per architecture or keeps at its default
        (the search settings themselves were checked by SearchConfig)."""
        _check_no_template_options(self.search.model, "search")
        for f in dataclasses.fields(SearchConfig):
            if f.name in SEARCH_FIELDS or not f.init:
                continue
            value = getattr(self.search, f.name)
            if value != f.default:
                why = "per architecture" if f.name in PER_ARCH_FIELDS else f"to the search default {f.default!r}"
                raise ConfigError(
                    f"search.{f.name}={value!r}: a study sets it {why}; a study's search settings are "
                    f"{', '.join(SEARCH_FIELDS)}"
                )

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], *, where: str = "") -> Self:
        """`Config.from_dict` of the nested layout: a `search:` section's missing settings take the
        study's defaults (`study_search`), not a plain search's."""
        if isinstance(data, Mapping):
            _check_layout(data, where)
            if isinstance(data.get("search"), Mapping):
                section = f"{where}.search" if where else "search"
                data = {**data, "search": _template(data["search"], section)}
        return super().from_dict(data, where=where)

    def to_dict(self) -> dict[str, Any]:
        """Plain data in the nested layout, the `search:` section holding the study's search settings;
        `options` only when the study sets some and `looks` only when not 0 (a study without them reads
        and compares as before, and as older versions wrote it)."""
        data = super().to_dict()
        data["search"] = _search_section(self.search)
        for name in ("options", "looks"):
            if not data[name]:
                del data[name]
        return data

    @classmethod
    def from_flat(cls, fields: Mapping[str, Any], *, where: str = "") -> Self:
        """From flat settings, as the CLI and `tlmsearch.study(...)` name them (`nest`)."""
        return cls.from_dict(nest(fields), where=where)

    def flat_dict(self) -> dict[str, Any]:
        """The study's own settings and its search settings side by side (`from_flat` reads it back;
        summary.json's `config`)."""
        data = self.to_dict()
        search = data.pop("search")
        return {**data, **search}

    def with_fields(self, **fields: Any) -> Self:
        """This study with flat `fields` changed (a search setting changes the template)."""
        return self.from_flat({**self.flat_dict(), **fields})

    @property
    def verify_seeds(self) -> int | str:
        """What `verify` takes: "auto" or a number of seeds."""
        return "auto" if self.seeds == 0 else self.seeds

    @property
    def verify_looks(self) -> int | None:
        """What `verify` takes as `looks`: None for one look at the end."""
        return self.looks or None

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

    def _decide_tokens_per_param(self) -> float:
        """The verification's tokens per parameter when it trains longer than the searches (as
        `deciding_train` says), else 0: the calibration at the searches' own length."""
        train = self.search.train
        return self.verify_tokens_per_param if 0 < train.tokens_per_param < self.verify_tokens_per_param else 0.0

    def search_config(self, arch: str, runs_dir: str = "") -> SearchConfig:
        """The search of `arch` inside the study directory `runs_dir` (named after the arch): the
        template with its name, arch and run folder set."""
        storage = self.search.storage
        model = {**self.search.model, "options": self.options[arch]} if arch in self.options else self.search.model
        return self.search.replace(
            name=arch,
            model=model,
            runs_dir=runs_dir or self.runs_dir,
            arch=arch,
            pack=self.pack,  # its noise floor's seeds and the transfer's trials pack as its verification does
            # the learning rate is chosen at the length the verification decides at (`deciding_train`)
            lr_calibration_tokens_per_param=self._decide_tokens_per_param(),
            # every run of the study gets its folder below <storage>/<study name>/
            storage=join(storage, self.name or "study") if storage else "",
        )


def _check_controls_build(arch: str, controls: tuple[str, ...]) -> None:
    """Refuse, before anything trains, a control that `arch` cannot build: a joint profile that
    moves the block width on a family with one residual width in every layer (Titans,
    Hope-attention). Its verification would otherwise stop the study midway, after the searches."""
    if architecture(arch).block_widths:
        return
    for text in controls:
        spec = ProfileSpec.parse(text)
        if spec.family == "joint" and spec.resolved().params["mode"] == "block":
            allowed = ", ".join(name for name in ARCHITECTURES if architecture(name).block_widths)
            raise ConfigError(
                f"controls: {spec} moves the block width, which arch={arch!r} of this study does not build "
                f"(families with block widths: {allowed}); drop it (the set `joint` holds it: name its other "
                "points) or study only those families"
            )


def _check_no_template_options(model: Any, where: str) -> None:
    if isinstance(model, Mapping) and "options" in model:
        raise ConfigError(
            f"{where}.model.options: a study sets options per architecture, each family owning its own: "
            "write them in the study's `options:` section as {ARCH: {OPTION: VALUE}}"
        )


def _template(section: Mapping[str, Any], where: str) -> SearchConfig:
    """A `search:` section as the study's template: its settings over the study's defaults."""
    _check_no_template_options(section.get("model"), where)
    defaults = _search_section(study_search())
    return SearchConfig.from_dict({**defaults, **section}, where=where)
