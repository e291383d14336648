"""The options of a re-evaluation with seeds (`tlmsearch verify`, `tlmsearch.verify`), checked once.

    options = VerifyOptions.of(top_k=5, seeds="auto", looks=3)             # Python's names
    options = VerifyOptions.of(flags=True, seeds="6", rate_check="off")    # the command line's

`VerifyOptions` is the one check both front doors call, before anything is read or trained:
every option in one line naming it as the caller wrote it (`top_k` in Python, `--top-k` on the
command line) and what is allowed, and the combinations (the pilot against the cap, the
bootstrap's seeds, the sequential design's test) refused the same way. The values come back
normalised (a rate check "off" is 0, a pack " Auto " is "auto"; on the command line "6" seeds is 6).

`SequentialOptions` carries what a group-sequential verify (`looks`) runs under: the options'
numbers with the verdict's margin and alpha and the first seeds, built once by
`tuning.verify.verify` for `tuning.verify_sequential.run_sequential` (the boundaries planned
from them are `analysis.sequential.Design`). `retrain_config` is the search config a verify
trains with and its fresh seeds; `check_controls_build` refuses a control the run cannot build.

Pure: no torch, no Ray, no analysis (the statistics read their bounds from here).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from tlmsearch.configs.resolve import check_profiles_build, resolve_trial_length
from tlmsearch.configs.search import PACK_MODES, SearchConfig
from tlmsearch.core.base import TRAIN_INT_BOUNDS, deciding_train
from tlmsearch.core.validate import (
    MAX_SEEDS,
    MAX_TOP,
    MIN_BOOTSTRAP_SEEDS,
    check_int,
    check_method,
    check_seed_count,
)
from tlmsearch.errors import ConfigError
from tlmsearch.profiles import ProfileSpec

DEFAULT_PILOT_SEEDS = 3
DEFAULT_MAX_SEEDS = 20
MAX_TOP_K = MAX_TOP  # the bound of every ranked count (status --top, Study.best): one definition
MAX_LOOKS = 20  # looks of a group-sequential verify (`analysis.sequential`)
SPENDINGS = ("obf", "pocock")  # the alpha spending a user chooses (O'Brien-Fleming-type, Pocock-type)
FLAGS = {"method": "--interval"}  # the flags whose name is not the keyword's


@dataclasses.dataclass(frozen=True, kw_only=True)
class VerifyOptions:
    """How `verify` chooses, trains and judges: each field checked in `__post_init__` (and by
    `of`, which names them as flags with `flags=True`).

    `seeds` "auto" (a pilot of `pilot_seeds`, then the planned fresh seeds, pilot + fresh <=
    `max_seeds`, planned for `power`) or a count; `steps` None is the search's full fidelity;
    `method` the interval ("t" or "bootstrap"); `looks` None the fixed plan, else K
    group-sequential looks with `spending` (default "obf" with `looks`, None without; given without `looks`, refused);
    `rate_check` the paired seeds of the learning-rate
    check (0: off); `pack` "off", "on" or "auto".
    """

    top_k: int = 5
    seeds: int | str = "auto"
    max_seeds: int = DEFAULT_MAX_SEEDS
    pilot_seeds: int = DEFAULT_PILOT_SEEDS
    steps: int | None = None
    power: float = 0.8
    method: str = "t"
    looks: int | None = None
    spending: str | None = None
    rate_check: int = 0
    pack: str = "off"

    def __post_init__(self) -> None:
        for key, value in checked(dataclasses.asdict(self)).items():
            object.__setattr__(self, key, value)

    @classmethod
    def of(cls, *, flags: bool = False, **given: Any) -> VerifyOptions:
        """The options `given` (the others at their defaults), checked once, each named as a
        keyword or, with `flags`, as the command line's flag; an unknown keyword is a TypeError."""
        allowed = [f.name for f in dataclasses.fields(cls)]
        unknown = sorted(set(given) - set(allowed))
        if unknown:
            raise TypeError(f"verify got unexpected keyword {', '.join(unknown)}; allowed: {', '.join(allowed)}")
        defaults = {f.name: f.default for f in dataclasses.fields(cls)}
        return cls(**checked({**defaults, **given}, flags=flags))

    @property
    def auto(self) -> bool:
        return self.seeds == "auto"


def checked(values: Mapping[str, Any], *, flags: bool = False) -> dict[str, Any]:
    """Every verify option of `values` checked and normalised (see the module docstring)."""

    def name(option: str) -> str:
        return FLAGS.get(option, f"--{option.replace('_', '-')}") if flags else option

    v = dict(values)
    check_int(name("top_k"), v["top_k"], 1, MAX_TOP_K)
    v["seeds"] = seed_count(v["seeds"], name("seeds"), text=flags)
    check_int(name("pilot_seeds"), v["pilot_seeds"], 1, MAX_SEEDS)
    check_int(name("max_seeds"), v["max_seeds"], 1, MAX_SEEDS)
    if v["steps"] is not None:
        check_int(name("steps"), v["steps"], 1, TRAIN_INT_BOUNDS["steps"])
    check_plan_options(v["seeds"], pilot_seeds=v["pilot_seeds"], max_seeds=v["max_seeds"], method=v["method"])
    check_method(v["method"], None if v["seeds"] == "auto" else v["seeds"])  # the bootstrap needs enough seeds
    if v["looks"] is None and v["spending"] is not None:
        raise ConfigError(
            f"{name('spending')}={v['spending']!r} applies only to a group-sequential verify: give "
            f"{name('looks')} K (2 to {MAX_LOOKS}) too, or leave {name('spending')} out"
        )
    if v["looks"] is not None and v["spending"] is None:
        v["spending"] = "obf"  # the default spending of a sequential verify (None without looks)
    check_sequential_options(v["looks"], v["spending"], v["method"], name)
    check_looks_seeds(v["looks"], v["seeds"], pilot_seeds=v["pilot_seeds"], max_seeds=v["max_seeds"], name=name)
    v["rate_check"] = check_rate_check(v["rate_check"], name("rate_check"))
    v["pack"] = check_pack(v["pack"], flags=flags)
    return v


def seed_count(value: object, name: str = "--seeds", *, text: bool = True) -> int | str:
    """'auto' or a seed count, as the command line gives it (`text`: "6" is 6) or Python (an int)."""
    if isinstance(value, str):
        if value.strip() == "auto":
            return "auto"
        if text and value.strip().isdigit():
            value = int(value)
    return check_seed_count(name, value, auto=True)


def check_plan_options(seeds: int | str, *, pilot_seeds: int, max_seeds: int, method: str = "t") -> None:
    """Refuse bad combinations of the seed options before anything trains, in one line each.

    `seeds` is "auto" or a fixed count; with "auto" the pilot needs 2 seeds for a spread, the cap
    must leave 2 fresh seeds after it, and the bootstrap (valid from `MIN_BOOTSTRAP_SEEDS`
    seeds) needs room for that many fresh seeds under the cap.
    """
    if seeds == "auto":
        if pilot_seeds < 2:
            raise ConfigError(f"--pilot-seeds={pilot_seeds} must be >= 2: one seed gives no spread")
        if max_seeds < pilot_seeds + 2:
            raise ConfigError(
                f"--max-seeds={max_seeds} leaves fewer than 2 fresh seeds after the {pilot_seeds} pilot seeds; "
                f"allowed: >= {pilot_seeds + 2}"
            )
        if method == "bootstrap" and max_seeds - pilot_seeds < MIN_BOOTSTRAP_SEEDS:
            raise ConfigError(
                f"--interval bootstrap needs at least {MIN_BOOTSTRAP_SEEDS} deciding seeds: --max-seeds={max_seeds} "
                f"leaves {max_seeds - pilot_seeds} after the pilot; allowed: --max-seeds >= "
                f"{pilot_seeds + MIN_BOOTSTRAP_SEEDS}, or --interval t"
            )
        return
    check_seed_count("seeds", seeds, auto=True)


def check_sequential_options(
    looks: object, spending: object, method: str, name: Callable[[str], str] = lambda option: option
) -> None:
    """Refuse bad group-sequential options in one line each (`looks` None: the fixed plan)."""
    if looks is None:
        return
    check_int(name("looks"), looks, 2, MAX_LOOKS)
    if spending not in SPENDINGS:
        raise ConfigError(f"{name('spending')}={spending!r} is not allowed; choose one of: {', '.join(SPENDINGS)}")
    if method != "t":
        raise ConfigError(
            f"{name('looks')} needs the t tests (--interval t): the sequential boundaries are t boundaries"
        )


def min_seeds_for_looks(looks: int, first: int = 2) -> int:
    """The fewest deciding seeds N whose look schedule (`analysis.sequential.look_schedule`: n_k =
    max(`first`, ceil(k N / K)), duplicates merged) keeps all K = `looks` looks: (first - 1) K + 1,
    where the first look reaches `first` seeds and each later look adds at least one."""
    return (first - 1) * looks + 1


def check_config_looks(looks: object, seeds: int | str, *, pilot_seeds: int, max_seeds: int) -> None:
    """A config's `looks` field (a ladder's, a study's: 0 = one look at the end) checked as verify
    checks its option, in one line each."""
    if looks == 0 and not isinstance(looks, bool):
        return
    if isinstance(looks, bool) or not isinstance(looks, int) or not 2 <= looks <= MAX_LOOKS:
        raise ConfigError(
            f"looks={looks!r}: allowed 0 (one look at the end, the default) or 2 to {MAX_LOOKS} group-sequential looks"
        )
    check_looks_seeds(looks, seeds, pilot_seeds=pilot_seeds, max_seeds=max_seeds)


def check_looks_seeds(
    looks: int | None,
    seeds: int | str,
    *,
    pilot_seeds: int,
    max_seeds: int,
    name: Callable[[str], str] = lambda option: option,
) -> None:
    """Refuse `looks` the seeds cannot hold (fewer looks would run than asked): K looks need
    `min_seeds_for_looks(K)` deciding seeds, a fixed `seeds` count or, with "auto", the room the
    cap leaves after the pilot."""
    if looks is None:
        return
    need = min_seeds_for_looks(looks)
    if seeds == "auto":
        room = max_seeds - pilot_seeds
        if room < need:
            raise ConfigError(
                f"{name('looks')}={looks} needs at least {need} deciding seeds (2 at the first look, one more at "
                f"each next), but {name('max_seeds')}={max_seeds} leaves {room} after the {pilot_seeds} pilot seeds; "
                f"allowed: {name('max_seeds')} >= {pilot_seeds + need}, or fewer looks"
            )
        return
    if int(seeds) < need:
        most = int(seeds) - 1  # the most looks these seeds hold
        fewer = f"{name('looks')} 2 to {most}" if most >= 2 else f"no {name('looks')} (a fixed plan)"
        raise ConfigError(
            f"{name('looks')}={looks} with {name('seeds')}={seeds} would take only "
            f"{min(looks, max(1, int(seeds) - 1))} look(s): {looks} looks need at least {need} seeds (2 at the "
            f"first look, one more at each next); allowed: {name('seeds')} >= {need}, or {fewer}"
        )


def check_rate_check(value: object, name: str = "rate_check") -> int:
    """The rate check's paired seeds (0: off), or one line naming the option and what is allowed."""
    if value in ("off", 0) and not isinstance(value, bool):
        return 0
    if isinstance(value, str) and value.strip().isdigit():
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int) or not 2 <= value <= MAX_SEEDS:
        raise ConfigError(
            f"{name}={value!r} is not allowed; use off (or 0) or the paired seeds of each rate, 2 to {MAX_SEEDS} "
            "(a paired interval needs two)"
        )
    return value


def check_pack(value: object, *, flags: bool = False) -> str:
    """`value` as one of PACK_MODES, or one line naming the option and what is allowed."""
    if isinstance(value, str) and value.strip().lower() in PACK_MODES:
        return value.strip().lower()
    name = "--pack" if flags else "pack"
    raise ConfigError(f"{name}={value!r} is not allowed; choose one of: {', '.join(PACK_MODES)}")


@dataclasses.dataclass(frozen=True, kw_only=True)
class SequentialOptions:
    """What a group-sequential verify runs under, fixed before anything trains.

    `first`: the pilot's seeds (`n_seeds` None: the most seeds are planned from the pilot's
    spread, for `power`, within `max_seeds`) or the first of `n_seeds` deciding seeds; `looks`
    and `spending` shape the boundaries, `margin` and `alpha` the decision (resolved levels),
    `method` the test (t only), `arch` the family the verdicts name, `reference` the profile text
    every candidate is compared with (None: cosine 1.5 -> 0.5).
    """

    first: tuple[int, ...]
    n_seeds: int | None
    looks: int
    spending: str
    margin: float
    alpha: float
    power: float
    max_seeds: int
    method: str
    arch: str
    reference: str | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "first", tuple(self.first))
        if not self.first:
            raise ConfigError("a sequential verify needs its first seeds")
        if self.n_seeds is not None:
            check_seed_count("seeds", self.n_seeds)
        check_int("max_seeds", self.max_seeds, 1, MAX_SEEDS)
        check_sequential_options(self.looks, self.spending, self.method)

    @classmethod
    def of(
        cls,
        options: VerifyOptions,
        first: list[int],
        *,
        margin: float,
        alpha: float,
        arch: str,
        reference: str | None = None,
    ) -> SequentialOptions:
        """The design of `options` (which must ask for `looks`) from its first seeds."""
        if options.looks is None:
            raise ConfigError("a sequential design needs looks (verify's looks=K)")
        return cls(
            first=tuple(first),
            n_seeds=None if options.auto else int(options.seeds),
            looks=options.looks,
            spending=options.spending,
            margin=margin,
            alpha=alpha,
            power=options.power,
            max_seeds=options.max_seeds,
            method=options.method,
            arch=arch,
            reference=reference,
        )


def check_controls_build(cfg: SearchConfig, controls: Sequence[str]) -> None:
    """Refuse, before anything trains, a control the run's architecture and budget cannot build."""
    check_profiles_build(cfg, [ProfileSpec.parse(text) for text in controls], what="controls")


def retrain_config(
    cfg: SearchConfig,
    *,
    seeds: int,
    steps: int | None = None,
    train: Mapping[str, Any] | None = None,
    data: Mapping[str, Any] | None = None,
) -> tuple[SearchConfig, list[int]]:
    """The search config a re-evaluation trains with, and its seeds (pure).

    `train`/`data` replace single TrainConfig/DataConfig fields of the search's settings (the
    CLI's training flags); the trial length defaults to the search's full fidelity, raised to the
    deciding length (`config.deciding_train`: 20 tokens per parameter) when the search gave its
    length in tokens per parameter below it. The seeds start at
    `train["seed"]` when given, else at the search's seed + 1: fresh, never the seed the search
    selected on.
    """
    changes = dict(train or {})
    if steps is not None:
        changes["steps"] = steps
    first = int(changes.get("seed", cfg.seed + 1))
    # no length given: the deciding length (20 tokens per parameter after a search that screened at 5)
    given = steps is not None or "tokens_per_param" in changes
    base = cfg.train if given else deciding_train(cfg.train)
    new_train = cfg.train.from_dict({**base.to_dict(), **changes, "seed": first}, where="train")
    new_data = cfg.data.from_dict({**cfg.data.to_dict(), **(data or {})}, where="data")
    if steps is not None and "tokens_per_param" not in changes:  # a step count replaces the search's length
        new_train = new_train.replace(tokens_per_param=0.0)
    # a trial length in tokens per parameter (the search's, or given here) becomes the step count once
    resolved = resolve_trial_length(cfg.replace(train=new_train, data=new_data))
    return resolved, [first + i for i in range(seeds)]
