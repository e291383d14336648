"""`verify --looks K`: train the deciding seeds in K stages, decide after each, stop the decided.

The design and the decision are `analysis.sequential`'s (pure); the verdict from the records is
`analysis.sequential_verdict`'s. This module only runs the stages, under the numbers of one
`configs.verify.SequentialOptions` and with verify's own helpers in one `StageHooks`
(`train_seeds`, `mine`, `record_plan`, built once by `tuning.verify.verify`): after each look the
candidates still undecided and the reference (cosine 1.5 -> 0.5, or `--reference`) train the next
stage's seeds; the study ends when every candidate is decided, when one is shown better, or at the
last look. verify.json records the design, its seeds and the looks taken, so that `tlmsearch
report` re-decides the same way.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from tlmsearch.analysis.pilot import pilot_spread
from tlmsearch.analysis.plan import Planned
from tlmsearch.analysis.sequential import Design
from tlmsearch.analysis.sequential import design as make_design
from tlmsearch.analysis.sequential_extend import continued, decided
from tlmsearch.analysis.sequential_sim import plan_max_seeds
from tlmsearch.analysis.sequential_verdict import SequentialGroup, sequential_verdicts
from tlmsearch.analysis.verdict import Verdict
from tlmsearch.configs.verify import SequentialOptions, min_seeds_for_looks
from tlmsearch.errors import ConfigError
from tlmsearch.rundir.records import TrialRecord


@dataclass(frozen=True)
class SequentialRun:
    planned: list[Planned]
    new: list[TrialRecord]
    verdicts: list[Verdict]
    seeds: list[int]  # the seeds the reference trained (the deciding seeds up to the last look taken)
    pilot: list[int]
    summary: dict[str, Any]  # verify.json's "sequential"


def record(design: Design, seeds: Sequence[int], looks_taken: int, groups: Sequence[SequentialGroup]) -> dict[str, Any]:
    """verify.json's "sequential" entry: enough to re-decide from the records alone, and what alpha
    the whole history has spent by the looks taken ("extension": how a verification extended
    after its last look was accounted for)."""
    out = {
        "design": design.to_dict(),
        "seeds": list(seeds),
        "looks_taken": looks_taken,
        "alpha_spent": design.alpha_through(max(looks_taken, 1) - 1),
        "groups": [g.to_dict() for g in groups],
    }
    if design.stages:
        out["extension"] = design.history_text()
    return out


class TrainSeeds(Protocol):
    def __call__(
        self,
        seed_list: list[int],
        what: str = "",
        before: Callable[[], None] | None = None,
        only: set[tuple[str, int]] | None = None,
        /,
    ) -> tuple[list[Planned], list[TrialRecord], float]: ...


class RecordPlan(Protocol):
    def __call__(
        self,
        pilot: list[int],
        decide_on: list[int],
        seed_plan: Any,
        complete: bool,
        sequential: Mapping[str, Any] | None = None,
        /,
    ) -> None: ...


@dataclass(frozen=True, kw_only=True)
class StageHooks:
    """What a sequential verify does through verify's own helpers: `train_seeds` trains the
    plan's profiles on some seeds (only those in `only` after a look) and returns (planned, new
    records, wall seconds); `mine` is verify's finished records of some seeds, with the search's;
    `record_plan` writes verify.json; `want` adds labels to what `mine` keeps; `say` prints a line
    (None: quiet); `previous` the run's verify.json at this trial length when verify started (a
    finished verification there is extended as a new stage, or the extension refused:
    `analysis.sequential_extend`)."""

    train_seeds: TrainSeeds
    mine: Callable[[list[int]], list[TrialRecord]]
    record_plan: RecordPlan
    want: Callable[[set[str]], None]
    say: Callable[[str], None] | None = None
    previous: Mapping[str, Any] | None = None  # verify.json as this verify found it, at its trial length


def run_sequential(run_dir: str | Path, setup: SequentialOptions, hooks: StageHooks) -> SequentialRun:
    """The stages of a sequential verify under `setup`: a pilot first when `setup.n_seeds` is None (its
    spread plans the most seeds), then the looks on the deciding seeds."""
    train_seeds, mine, record_plan, want, say = hooks.train_seeds, hooks.mine, hooks.record_plan, hooks.want, hooks.say
    name = Path(run_dir).name
    planned: list[Planned] = []
    new: list[TrialRecord] = []
    pilot: list[int] = []
    start, n_seeds = setup.first[0], setup.n_seeds
    if n_seeds is None:  # a pilot for the spread only, as the fixed plan's, then N_max planned
        pilot = list(setup.first)
        keep = decided(hooks.previous or {})  # verify.json stays as found until an extension is accepted
        more, fresh, _ = train_seeds(
            pilot,
            f"verify {name} (pilot {pilot[0]}..{pilot[-1]})",
            None if keep else lambda: record_plan(pilot, [], None, False),
        )
        planned, new = planned + more, new + fresh
        want({p.label for p in more})
        spread = pilot_spread(mine(pilot), pilot, reference=setup.reference)
        room = setup.max_seeds - len(pilot)
        if room < min_seeds_for_looks(setup.looks):
            raise ConfigError(
                f"--max-seeds={setup.max_seeds} leaves {room} seeds after the pilot, fewer than the "
                f"{min_seeds_for_looks(setup.looks)} that --looks {setup.looks} needs"
            )
        n_seeds = plan_max_seeds(
            spread.sd,
            spread.n_candidates,
            setup.looks,
            margin=setup.margin,
            alpha=setup.alpha,
            power=setup.power,
            spending=setup.spending,
            cap=room,
        )
        n_seeds = max(n_seeds, min_seeds_for_looks(setup.looks))  # every look asked for (room checked up front)
        start = max(pilot) + 1
        if say:
            say(
                f"verify: the pilot's paired sd {spread.sd:.4f} nats ({spread.worst}, "
                f"{spread.n_candidates} candidates"
                + (f"; seed correlation {spread.correlation:+.2f}, median" if spread.correlation is not None else "")
                + ") "
                f"asks for at most {n_seeds} fresh seeds per profile in {setup.looks} looks"
            )
    design = make_design(n_seeds, setup.looks, margin=setup.margin, alpha=setup.alpha, spending=setup.spending)
    seeds = [start + i for i in range(design.max_seeds)]
    design, seeds = continued(
        hooks.previous or {}, design, seeds, run=str(run_dir), method=setup.method, reference=setup.reference
    )
    return run_looks(
        run_dir,
        design,
        seeds,
        pilot,
        hooks,
        arch=setup.arch,
        method=setup.method,
        before=(planned, new),
        reference=setup.reference,
    )


def run_looks(
    run_dir: str | Path,
    design: Design,
    seeds: Sequence[int],
    pilot: list[int],
    hooks: StageHooks,
    *,
    arch: str,
    method: str = "t",
    before: tuple[list[Planned], list[TrialRecord]] = ([], []),
    reference: str | None = None,
) -> SequentialRun:
    """The looks of `design` on the deciding `seeds` (in order; the records of looks already
    trained are reused), deciding after each against `reference` (None: cosine 1.5 -> 0.5);
    `before`: what a pilot planned and trained."""
    train_seeds, mine, record_plan, want, say = hooks.train_seeds, hooks.mine, hooks.record_plan, hooks.want, hooks.say
    name = Path(run_dir).name
    planned, new = list(before[0]), list(before[1])
    seeds = list(seeds)
    if say:
        say(f"verify: {design.describe()}; seeds {seeds[0]}..{seeds[-1]}; decided candidates stop training")
    only: set[tuple[str, int]] | None = None
    results: list[tuple[Verdict, SequentialGroup]] = []
    taken = 0
    for k, n in enumerate(design.looks):
        prev = design.looks[k - 1] if k else 0
        stage = seeds[prev:n]
        what = f"verify {name} (look {k + 1} of {design.n_looks}: seeds {stage[0]}..{stage[-1]})"
        groups_so_far = [g for _, g in results]
        record_plan(pilot, seeds[:n], None, False, record(design, seeds, k, groups_so_far))
        more, fresh, _ = train_seeds(stage, what, None, only)
        planned, new = planned + more, new + fresh
        want({p.label for p in more})
        taken = k + 1
        decided = mine(seeds[:n])
        results = sequential_verdicts(
            decided, design, seeds, through=taken, arch=arch, method=method, reference=reference
        )
        groups = [g for _, g in results]
        only = {(c, g.base_width) for g in groups if g.running for c in (g.cosine, *g.active)}
        if say:
            for g in groups:
                d = g.decision
                better = [c for j, c in enumerate(g.candidates) if d.shown_better[j]]
                within = [c for j, c in enumerate(g.candidates) if d.within_margin[j] and not d.shown_better[j]]
                say(
                    f"verify: look {taken} of {design.n_looks} ({n} seeds) {g.group}: shown better: "
                    f"{', '.join(better) or 'none'}; within the margin: {len(within)}; still training: "
                    f"{len(g.active) if g.running else 0}"
                )
        if not only:
            break
    groups = [g for _, g in results]
    used = seeds[: design.looks[max(taken, 1) - 1]]
    summary = record(design, seeds, taken, groups)
    record_plan(pilot, used, None, True, summary)
    return SequentialRun(planned, new, [v for v, _ in results], used, pilot, summary)
