"""Re-evaluation with seeds: re-train the top-k profiles of a search and the baselines at full
fidelity with fresh seeds, then judge cosine with seed-paired statistics.

Short, noisy trials make the search's best trial optimistic (the winner's curse). `verify`
therefore trains every chosen profile again with new seeds (search seed + 1, + 2, ..., never
the seed the search selected on), in parallel through Ray (`run_fixed`), appends the records
with kind "verify" to the same run directory, and reuses finished verify records when run
again. Which profiles: `tlmsearch.analysis.plan`; how many seeds (`seeds="auto"`: a pilot,
then the planned fresh seeds that decide): `tlmsearch.analysis.pilot`. The seeds it decided
on go to `verify.json`, so that `tlmsearch report` decides on the same ones.

    from tlmsearch.tuning.verify import verify
    result = verify("runs/my-search", top_k=5)            # seeds="auto", max_seeds=20
    print(result.plan.describe(), result.verdicts[0].headline)
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from tlmsearch.analysis.collect import label
from tlmsearch.analysis.pilot import decision_seeds, plan_from_pilot
from tlmsearch.analysis.plan import CONTROLS, Planned, plan, same_training
from tlmsearch.analysis.planning import SeedPlan
from tlmsearch.analysis.rate_check import RateCheck
from tlmsearch.analysis.sequential import Design
from tlmsearch.analysis.sequential_extend import continued, decided
from tlmsearch.analysis.summary import verdicts
from tlmsearch.analysis.verdict import DEFAULT_REFERENCE, Verdict, is_default_reference, resolve_levels
from tlmsearch.configs.identity import ShapeKey, check_distinct_shapes, shape_key
from tlmsearch.configs.resolve import trial_shape
from tlmsearch.configs.storage import check_storage
from tlmsearch.configs.verify import (
    DEFAULT_MAX_SEEDS,
    DEFAULT_PILOT_SEEDS,
    SequentialOptions,
    VerifyOptions,
    check_controls_build,
    retrain_config,
)
from tlmsearch.costs.estimate import estimate_text
from tlmsearch.costs.price import LIMIT_HOURS
from tlmsearch.errors import ConfigError, UserError
from tlmsearch.profiles import ProfileSpec, expand_profile_sets
from tlmsearch.rundir.io import read_verify, write_json
from tlmsearch.rundir.layout import VERIFY
from tlmsearch.rundir.records import TrialRecord, finished
from tlmsearch.rundir.study import Study, load
from tlmsearch.tuning.announce import announce as announce_plan
from tlmsearch.tuning.announce import check_fixed_price, fixed_estimate, fixed_line, load_drift_here
from tlmsearch.tuning.fixed import FixedTrial, run_fixed
from tlmsearch.tuning.rate_check import run_rate_check
from tlmsearch.tuning.ray_session import ensure_ray
from tlmsearch.tuning.resources import check_device, trial_device_kind
from tlmsearch.tuning.trainable import trial_train_config
from tlmsearch.tuning.verify_sequential import StageHooks, run_looks, run_sequential


@dataclass(frozen=True)
class VerifyResult:
    run_dir: Path
    planned: list[Planned]  # every (profile, seed) of this verify, pilot included
    new_records: list[TrialRecord]  # written by this call
    verdicts: list[Verdict]
    seeds: list[int] = field(default_factory=list)  # the seeds that decided
    pilot: list[int] = field(default_factory=list)  # the pilot's seeds (spread only), [] for fixed seeds
    plan: SeedPlan | None = None  # the seed plan (`seeds="auto"`), None for fixed seeds
    sequential: dict[str, Any] | None = None  # `looks`: the design, looks and seeds used (verify.json's)
    rate_check: list[RateCheck] = field(default_factory=list)  # `rate_check=N`: one per verdict with a candidate

    @property
    def reused(self) -> int:
        return sum(p.done is not None for p in self.planned)


def verify(
    study: Study | str | Path,
    top_k: int = 5,
    seeds: int | str = "auto",
    steps: int | None = None,
    *,
    max_seeds: int = DEFAULT_MAX_SEEDS,
    pilot_seeds: int = DEFAULT_PILOT_SEEDS,
    power: float = 0.8,
    train: Mapping[str, Any] | None = None,
    data: Mapping[str, Any] | None = None,
    threshold: float | None = None,
    confidence: float | None = None,
    method: str = "t",
    margin: float | None = None,
    alpha: float | None = None,
    address: str | None = None,
    storage: str | None = None,
    keep_checkpoints: bool | None = None,
    workers_per_trial: int | None = None,
    progress: bool = True,
    announce: Callable[[str], None] | None = None,
    controls: Sequence[str] = CONTROLS,
    named_controls: Mapping[str, Mapping[str, Any]] | None = None,
    looks: int | None = None,
    spending: str | None = None,
    rate_check: int | str = 0,
    pack: str = "off",
    yes: bool = True,
    max_hours: float = LIMIT_HOURS,
    allow_collapsed: bool = False,
    reference: str = DEFAULT_REFERENCE,
) -> VerifyResult:
    """Re-train the top-k profiles and the baselines with fresh seeds; return the verdicts.

    `seeds="auto"`: a pilot of `pilot_seeds` seeds measures the paired spread, the planner
    (`analysis.pilot.plan_from_pilot`) picks how many fresh seeds decide (pilot + fresh <=
    `max_seeds`) and the plan is announced with its cost before they train; the pilot never
    decides. `seeds=N`: N seeds that all decide. `looks=K`: group-sequential
    (`analysis.sequential`, `tuning.verify_sequential`): the deciding seeds train in K stages
    with `spending` alpha spending (default "obf"; refused without `looks`), and decided candidates stop training.

    `study`: a `Study` or a run directory. `steps`, `train`, `data`: see `retrain_config`;
    finished verify records are reused only when trained the same way. `margin` (old name
    `threshold`) and `alpha` (or `confidence`) decide the verdict. `announce` receives the plan
    lines (default: printed with `progress`). `controls` (ProfileSpec texts) and
    `named_controls` (name -> ProfileSpec dict, e.g. "random-best") are re-trained beside
    cosine and uniform. `storage`, `keep_checkpoints`: the re-trainings' trial storage and
    checkpoints (default: the search's). `workers_per_trial`: data-parallel workers per re-training
    (default: the search's; records of any worker count pair: their numbers are the same).
    `rate_check=N`: cosine and each verdict's best candidate re-trained at half and twice the
    rate on N paired seeds (`tuning.rate_check`).
    `pack` ("off", "on", "auto"): trials of one shape trained side by side (`tuning.pack_runs`).
    `yes=False`: refuse a verification priced beyond `max_hours` of this machine (its pilot and
    the most fresh seeds the planner may add; `costs.price.check_price`) before anything trains.
    Profiles that build one model are one candidate (`configs.identity`), trained once under its
    first name; cosine, uniform and the `controls` doing so at this depth (cosine and linear
    1.5 -> 0.5 at 2 layers) are refused unless `allow_collapsed`. `reference` (a profile text,
    default cosine 1.5 -> 0.5) is what every candidate is compared with: trained beside the others,
    recognised by the model it builds, and the verdict says whether it is near-optimal.
    Every bad option is refused before anything trains.
    """
    if not isinstance(study, Study | str | Path) or isinstance(study, str) and not study.strip():
        raise UserError(
            f"verify: study={study!r} must be a Study (tlmsearch.load(run_dir)) or the path of a search run directory"
        )
    options = VerifyOptions.of(
        top_k=top_k,
        seeds=seeds,
        max_seeds=max_seeds,
        pilot_seeds=pilot_seeds,
        steps=steps,
        power=power,
        method=method,
        looks=looks,
        spending=spending,
        rate_check=rate_check,
        pack=pack,
    )  # the one check of every option, the command line's too
    seeds, rate_seeds, pack = options.seeds, options.rate_check, options.pack
    margin, alpha = resolve_levels(margin, alpha, threshold=threshold, confidence=confidence)
    study = load(study) if isinstance(study, str | Path) else study
    if not finished(study.records):
        raise UserError(f"{study.run_dir} has no finished trials (complete, full fidelity): nothing to verify")
    n_first = pilot_seeds if seeds == "auto" else int(seeds)
    cfg, first_seeds = retrain_config(study.config, seeds=n_first, steps=steps, train=train, data=data)
    reference = str(ProfileSpec.parse(reference))  # a ConfigError names a bad one
    if not is_default_reference(reference):
        controls = (*controls, reference)  # trained beside the others (once: a control already is)
    check_controls_build(cfg, controls)
    named = (DEFAULT_REFERENCE, "uniform", *expand_profile_sets(controls))
    check_distinct_shapes(cfg, named, what="verify", allow=allow_collapsed)

    def key_of(profile: Mapping[str, Any], base_width: int) -> ShapeKey:
        return shape_key(trial_shape(cfg, ProfileSpec.from_dict(dict(profile)), base_width)[2])

    if storage is not None:
        cfg = cfg.replace(storage=check_storage(storage))
    if keep_checkpoints is not None:
        cfg = cfg.replace(keep_checkpoints=bool(keep_checkpoints))
    if workers_per_trial is not None:
        cfg = cfg.replace(workers_per_trial=workers_per_trial)
    steps = cfg.train.steps
    wanted_train, wanted_data = trial_train_config(cfg, first_seeds[0]).to_dict(), cfg.data.to_dict()
    device = trial_device_kind(cfg)
    check_device(cfg, address)  # train's check: --device cuda without a GPU here, before anything is written
    if address:  # reach the cluster before verify.json is written (an unreachable one: one line, nothing left)
        ensure_ray(address)
    say = announce or (lambda text: print(text, flush=True))  # the plan lines: to `announce`, else printed
    tell = say if announce is not None or progress else None  # those printed only with `progress`

    def reusable(r: TrialRecord) -> bool:
        return same_training(r, wanted_train, wanted_data, device)

    def train_seeds(
        seed_list: list[int],
        what: str = "",
        before: Callable[[], None] | None = None,
        only: set[tuple[str, int]] | None = None,
    ) -> tuple[list[Planned], list[TrialRecord], float]:
        planned = plan(load(study.run_dir).records, top_k, seed_list, steps, reusable, controls, named_controls, key_of)
        aliases.update({p.label: list(p.aliases) for p in planned if p.aliases})
        if only is not None:  # a sequential stage: cosine and the candidates still undecided
            planned = [p for p in planned if (p.label, p.base_width) in only]
        if before is not None:  # the plan is valid: say what is about to train
            before()
        items = [
            FixedTrial(spec=ProfileSpec.from_dict(p.profile), seed=p.seed, base_width=p.base_width, name=p.name)
            for p in planned
            if p.done is None
        ]
        profiles = len(planned) // max(1, len(seed_list))
        more = profiles * (max_seeds - len(seed_list)) if seeds == "auto" and looks is None else 0
        if what and not yes and items:  # the first batch: priced with the most it may add
            check_fixed_price(cfg, len(items) + more, f"verify {study.run_dir.name}", max_hours=max_hours)
        if what and progress and items:
            then = ""
            if more:
                lo, hi = profiles * 2, more
                then = f"then {lo}-{hi} runs of the fresh seeds the planner asks for (2-{hi // profiles} a profile)"
            announce_plan(fixed_line, address, cfg, len(items), what, then=then, out=announce)
        t0 = time.monotonic()
        new = run_fixed(study.run_dir, cfg, items, "verify", pack=pack, address=address, progress=progress, say=say)
        return planned, new, time.monotonic() - t0

    def mine(seed_list: list[int]) -> list[TrialRecord]:
        """This verify's finished records of `seed_list`, and every other record (search scores)."""
        records = load(study.run_dir).records
        keep = set(seed_list)
        return [
            r
            for r in finished(records, kinds=("verify",))
            if r.max_steps == steps and r.seed in keep and label(r) in wanted and reusable(r)
        ] + [r for r in finished(records) if r.kind != "verify" or reusable(r)]

    def record_plan(
        pilot: list[int],
        decide_on: list[int],
        seed_plan: SeedPlan | None,
        complete: bool,
        sequential: Mapping[str, Any] | None = None,
    ) -> None:
        """verify.json: the seeds that decide; `complete` false while they are still training, so
        that a report of an interrupted verify gives no verdict (never one on the pilot's seeds).
        A finished plan of another step count stays in it as `previous` until this one ends: it
        still decides for its records while this verify has recorded none."""
        doc: dict[str, Any] = {
            "steps": steps,
            "pilot_seeds": pilot,
            "decision_seeds": decide_on,
            "plan": seed_plan.to_dict() if seed_plan else None,
            "margin": margin,
            "alpha": alpha,
            "complete": complete,
        }
        if sequential is not None:
            doc["sequential"] = dict(sequential)
        if aliases:  # profiles trained once under another's name: the report shows every name
            doc["aliases"] = dict(aliases)
        if not is_default_reference(reference):  # what the report compares with
            doc["reference"] = reference
        try:
            old = read_verify(study.run_dir)
        except ConfigError:
            old = {}  # damaged: rewritten here
        if not complete:
            finished_other = old.get("steps") != steps and old.get("complete", True)
            prev = old if finished_other else old.get("previous") or {}
            if prev.get("decision_seeds") and prev.get("steps") != steps:
                doc["previous"] = {k: v for k, v in prev.items() if k != "previous"}
        write_json(Path(study.run_dir) / VERIFY, doc)

    def checked(result: VerifyResult) -> VerifyResult:
        """`result` with its learning-rate check (`rate_check` seeds; none when off or undecidable)."""
        if not rate_seeds or not result.verdicts or not result.seeds:
            return result
        checks = run_rate_check(
            study.run_dir,
            cfg,
            result.verdicts,
            result.seeds,
            rate_seeds,
            same=lambda r, lr: same_training(r, {**wanted_train, "lr": lr}, wanted_data, device),
            alpha=alpha,
            lr_given="lr" in (train or {}),
            pack=pack,
            address=address,
            progress=progress,
            say=tell,
        )
        return replace(result, rate_check=checks)

    auto = seeds == "auto"
    wanted: set[str] = set()
    aliases: dict[str, list[str]] = {}
    found = _found_plan(study.run_dir, steps)  # a verification this run holds at this length (alpha spent)
    hooks = StageHooks(
        train_seeds=train_seeds, mine=mine, record_plan=record_plan, want=wanted.update, say=tell, previous=found
    )
    if looks is not None:
        design = SequentialOptions.of(
            options, first_seeds, margin=margin, alpha=alpha, arch=cfg.arch, reference=reference
        )
        seq = run_sequential(study.run_dir, design, hooks)
        result = VerifyResult(
            Path(study.run_dir), seq.planned, seq.new, seq.verdicts, seq.seeds, seq.pilot, None, seq.summary
        )
        return checked(result)

    def extended(decide_on: list[int], pilot: list[int], before: tuple[list[Planned], list[TrialRecord]]) -> Any:
        """A fixed plan's seeds beyond a finished verification's: a new stage of its history
        (`analysis.sequential_extend`; refused there when it cannot be accounted for), else None."""
        request = Design(looks=(len(decide_on),), margin=margin, alpha=alpha)
        history, order = continued(
            found, request, decide_on, run=str(study.run_dir), method=method, reference=reference
        )
        if not history.stages:
            return None
        seq = run_looks(
            study.run_dir,
            history,
            order,
            pilot,
            hooks,
            arch=cfg.arch,
            method=method,
            before=before,
            reference=reference,
        )
        return checked(
            VerifyResult(
                Path(study.run_dir), seq.planned, seq.new, seq.verdicts, seq.seeds, seq.pilot, None, seq.summary
            )
        )

    if not auto and (done := extended(first_seeds, [], ([], []))) is not None:
        return done
    stage = "pilot" if auto else "seeds"
    what = f"verify {Path(study.run_dir).name} ({stage} {first_seeds[0]}..{first_seeds[-1]})"
    keep = decided(found)  # verify.json stays as found until the extension is accepted
    planned, new, wall = train_seeds(
        first_seeds,
        what,
        None if keep else lambda: record_plan(first_seeds if auto else [], [] if auto else first_seeds, None, False),
    )
    wanted |= {p.label for p in planned}
    pilot: list[int] = []
    seed_plan: SeedPlan | None = None
    decide_on = first_seeds
    if auto:
        pilot = first_seeds
        seed_plan, spread = plan_from_pilot(
            mine(pilot),
            pilot,
            margin=margin,
            alpha=alpha,
            max_seeds=max_seeds,
            power=power,
            method=method,
            reference=reference,
            aliases=aliases,
        )
        decide_on = decision_seeds(seed_plan, pilot)
        if (done := extended(decide_on, pilot, (planned, list(new)))) is not None:
            return done
        profiles = len(planned) // len(pilot)
        runs = profiles * len(decide_on)
        times = [r.wall_s for r in mine(pilot) if r.kind == "verify" and r.wall_s > 0]
        priced = fixed_estimate(cfg, runs)  # the pilot's own step rates are recorded by now
        drift, load_note = load_drift_here(cfg)
        text = (
            f"verify {seed_plan.describe()}; the largest pilot spread is {spread.worst}'s over {spread.n_pairs} "
            f"paired seeds.\nverify: next {profiles} profiles x {len(decide_on)} fresh seeds "
            f"({decide_on[0]}..{decide_on[-1]}) = {runs} runs (finished ones are reused): "
            + estimate_text(
                runs,
                len(new),
                wall,
                statistics.fmean(times) if times else 0.0,
                drift=drift,
                priced=None if isinstance(priced, str) else priced,
                load_note=load_note,
            )
        )
        record_plan(pilot, decide_on, seed_plan, False)
        if tell is not None:
            tell(text)
        more, fresh, _ = train_seeds(decide_on)
        planned, new = planned + more, new + fresh
        wanted |= {p.label for p in more}
    record_plan(pilot, decide_on, seed_plan, True)
    vs = verdicts(
        mine(decide_on),
        margin=margin,
        alpha=alpha,
        arch=cfg.arch,
        kinds=("verify",),
        method=method,
        seeds=decide_on,
        aliases=aliases,
        space=cfg.space,
        reference=reference,
    )
    return checked(VerifyResult(Path(study.run_dir), planned, list(new), vs, decide_on, pilot, seed_plan))


def _found_plan(run_dir: str | Path, steps: int | None) -> dict[str, Any]:
    """The run's verify.json as this verify finds it, when it was made at the same trial length
    ({} otherwise: another length is another question, and a damaged file is rewritten)."""
    try:
        doc = read_verify(run_dir)
    except ConfigError:
        return {}
    return doc if doc.get("steps") == steps else {}
