"""Which profiles and seeds a re-evaluation trains: the plan of `tlmsearch verify` (pure).

Short, noisy trials make the search's best trial optimistic (the winner's curse), so the top-k
distinct finished search profiles are trained again with fresh seeds, together with cosine,
uniform and the controls the field argues about (expanding cosine 0.5 -> 1.5, linear 1.5 ->
0.5, the bowtie hourglass) at each of their budgets. A (profile, budget, seed) already re-trained with the same
step count and the same training and data settings (`same_training`) is marked done and reused.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from tlmsearch.analysis.collect import label, profile_baseline, profile_label, ranked
from tlmsearch.profiles import ProfileSpec, expand_profile_sets
from tlmsearch.rundir.records import finished

BASELINES = {
    "cosine": {"family": "cosine", "params": {"start": 1.5, "end": 0.5}},
    "uniform": {"family": "uniform", "params": {}},
}
# the other shapes the field argues about, re-trained beside cosine and uniform by default:
# expanding cosine, the linear taper, and the hourglass of Variable-Width Transformers
CONTROLS: tuple[str, ...] = ("cosine:start=0.5,end=1.5", "linear:start=1.5,end=0.5", "bowtie:ratio=0.3,position=0.75")


@dataclass(frozen=True)
class Planned:
    """One (profile, budget, seed) to re-train, or already re-trained (`done` holds its trial id)."""

    profile: dict[str, Any]  # ProfileSpec dict
    base_width: int
    seed: int
    name: str | None  # baseline name, else None
    label: str
    done: str | None = None
    aliases: tuple[str, ...] = ()  # the other profile texts that build the same model (trained once, as `label`)


KeyOf = Callable[[Mapping[str, Any], int], Any]  # (profile dict, base width) -> `configs.identity.shape_key`


def choose_profiles(
    records: Iterable[Any],
    top_k: int,
    controls: Sequence[str] = CONTROLS,
    named: Mapping[str, Mapping[str, Any]] | None = None,
    key_of: KeyOf | None = None,
) -> list[tuple[dict[str, Any], int, str | None]]:
    """(profile dict, base width, baseline name) of the `top_k` best distinct finished search
    profiles of each budget, then cosine, uniform, the `controls` (ProfileSpec texts, or set names
    such as "literature") and the `named` controls (name -> ProfileSpec dict, e.g. "random-best":
    the random-search control) at each of their budgets, each only when not already among them
    (a named control already chosen keeps the name it was chosen under). `choose_candidates`
    says which names each one stands for.

    Per budget, not overall: in a budget sweep the larger budgets have the lower losses, so an
    overall top-k would re-train only the largest budgets and leave the rest of the front
    unverified. A fixed-budget search has one budget, and this is its top k.
    """
    return [(p, b, n) for p, b, n, _ in choose_candidates(records, top_k, controls, named, key_of)]


def choose_candidates(
    records: Iterable[Any],
    top_k: int,
    controls: Sequence[str] = CONTROLS,
    named: Mapping[str, Mapping[str, Any]] | None = None,
    key_of: KeyOf | None = None,
) -> list[tuple[dict[str, Any], int, str | None, tuple[str, ...]]]:
    """`choose_profiles` with the other names of each candidate (profile texts). With `key_of`
    (the shape key of a profile's model at a base width: `configs.identity.shape_key`) a named
    profile whose model is already chosen is that candidate, trained once: a search profile it
    equals is trained under the named profile's text (so cosine is found as cosine), and a named
    profile that equals an earlier one (linear 1.5 -> 0.5 and cosine at 2 layers) is one more name
    of it. Without `key_of` named profiles are told apart by their text."""
    chosen: list[list[Any]] = []  # [profile, base, name, key, other names]
    per_budget: dict[int, int] = {}
    for r in ranked(records):
        key = (r.arch_key, r.base_width)  # joint architectures with one MLP shape are distinct
        if any(c[3] == key for c in chosen) or per_budget.get(r.base_width, 0) >= top_k:
            continue
        per_budget[r.base_width] = per_budget.get(r.base_width, 0) + 1
        chosen.append([r.profile, r.base_width, None, key, []])

    def add(prof: dict[str, Any], base: int, name: str | None) -> None:
        text = profile_label(prof)
        key = (key_of(prof, base), base) if key_of is not None else None
        for c in chosen:
            if c[1] != base or not (profile_label(c[0]) == text or (key is not None and c[3] == key)):
                continue
            if profile_label(c[0]) == text:
                return  # the same profile: chosen already
            if c[2] is None:  # a search profile: trained under the named text
                c[4].append(profile_label(c[0]))
                c[0], c[2] = prof, name
            elif text not in c[4]:
                c[4].append(text)
            return
        chosen.append([prof, base, name, key if key is not None else ("label", text, base), []])

    for base in sorted({c[1] for c in chosen}):
        for name, prof in BASELINES.items():
            add(dict(prof), base, name)
        for text in expand_profile_sets(controls):  # a set name ("literature") stands for its profiles
            prof = ProfileSpec.parse(text).to_dict()
            add(prof, base, profile_label(prof))
        for name, given in (named or {}).items():
            add(ProfileSpec.from_dict(dict(given)).to_dict(), base, name)
    return [(p, b, n or _baseline_of(p), tuple(others)) for p, b, n, _, others in chosen]


def _key_or_none(key_of: KeyOf, profile: Mapping[str, Any], base: int) -> Any:
    """The model key of a recorded profile, None when it no longer builds (a family since removed,
    a shape this run's config cannot make): such a record is reused by its text only."""
    try:
        return key_of(profile, base)
    except ValueError:
        return None


def _baseline_of(profile: dict[str, Any]) -> str | None:
    name = profile_baseline(profile)
    return name if name in BASELINES else None


# TrainConfig fields that say how a trial ran, not what it learned from: never block a reuse
RESOURCE_FIELDS: tuple[str, ...] = ("seed", "threads", "device", "checkpoint_interval")


def device_kind(devices: Sequence[str]) -> str:
    """ "cuda" when a record's devices name a GPU, else "cpu" (records from before devices were
    recorded ran on CPUs)."""
    return "cuda" if any(str(d).startswith("GPU") for d in devices) else "cpu"


def same_training(
    record: Any,
    train: Mapping[str, Any],
    data: Mapping[str, Any],
    device: str | None = None,
) -> bool:
    """Whether `record` was trained with the TrainConfig/DataConfig dicts `train` and `data`,
    and, given `device` ("cpu" or "cuda"), on that kind of device: a paired comparison must not
    pair a CPU run with a GPU run of the same seed (their numbers differ in rounding and kernels).

    Seeds, threads, the device flag and checkpointing are not compared, nor the data cache folder,
    nor `tokens_per_param` (the steps it was resolved into are).
    The init mode is: keyed and stream initialisations of one seed are different draws; so is
    the parametrization. Every record carries its whole TrainConfig and DataConfig.
    """
    if device is not None and device_kind(getattr(record, "devices", ())) != device:
        return False

    def strip(d: Mapping[str, Any], keys: tuple[str, ...]) -> dict[str, Any]:
        return {k: v for k, v in d.items() if k not in keys}

    # how the step count was given (directly or in tokens per parameter) changes nothing learnt:
    # the steps themselves are compared
    ignored = (*RESOURCE_FIELDS, "tokens_per_param")
    recorded, wanted = record.train, train
    return strip(recorded, ignored) == strip(wanted, ignored) and strip(record.data, ("cache_dir",)) == strip(
        data, ("cache_dir",)
    )


def plan(
    records: Iterable[Any],
    top_k: int,
    seeds: list[int],
    steps: int,
    reusable: Callable[[Any], bool] = lambda r: True,
    controls: Sequence[str] = CONTROLS,
    named: Mapping[str, Mapping[str, Any]] | None = None,
    key_of: KeyOf | None = None,
) -> list[Planned]:
    """Every (profile, seed) to verify; those with a finished verify record of `steps` (and
    `reusable`, e.g. `same_training`) are marked done. `controls`, `named`, `key_of`: see
    `choose_candidates`. With `key_of`, a candidate none of whose seeds is recorded under its
    own text, whose model is recorded under another (the same profile spelt otherwise, e.g.
    `linear:end=0.8,start=1.2`), is that text's candidate, its own text one more name of it:
    reused, not trained again."""
    records = list(records)
    done: dict[tuple[str, int, int], str] = {}
    texts: dict[tuple[str, int], dict[str, Any]] = {}  # (text, base) -> its profile, in record order
    for r in finished(records, kinds=("verify",)):
        if r.max_steps == steps and reusable(r):
            done.setdefault((label(r), r.base_width, r.seed), r.trial_id)
            texts.setdefault((label(r), r.base_width), r.profile)
    trained_as: dict[tuple[Any, int], dict[str, Any]] = {}  # (model key, base) -> the text recorded first
    if key_of is not None:  # one key per text, not per record
        for (_, base), prof in texts.items():
            if (key := _key_or_none(key_of, prof, base)) is not None:
                trained_as.setdefault((key, base), prof)
    out = []
    for prof, base, name, aliases in choose_candidates(records, top_k, controls, named, key_of):
        text = profile_label(prof)
        if key_of is not None and not any((text, base, s) in done for s in seeds):
            found = trained_as.get((key_of(prof, base), base))
            if found is not None and profile_label(found) != text:  # recorded under another spelling
                prof, aliases, text = dict(found), (*aliases, text), profile_label(found)
        for s in seeds:
            out.append(Planned(prof, base, s, name, text, done.get((text, base, s)), aliases))
    return out
