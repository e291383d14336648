"""A ladder: the same profiles trained with paired seeds at several points of (size x tokens
per parameter), in one resumable run directory (`tlmsearch.ladders.files`), one point after
another, smallest first.

Each point is an ordinary search run directory: its "search" is one uniform run at the point's
length (after the learning-rate calibration on uniform, when the ladder asks for it: the rate it
chooses is the point's `train.lr`), and its verification (`tuning.verify.verify`, reused as it
is) re-trains cosine, uniform, the ladder's profiles and its "best" with fresh paired seeds at
the point's length and gives the three-outcome verdict there. Both phases are idempotent (a
search resumes from its records, verify reuses its finished runs), so `run_ladder` after a kill
anywhere trains nothing twice. The report is the caller's (`tlmsearch.api.ladder`).
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tlmsearch.costs.estimate import Estimate, fixed_work, plan_line
from tlmsearch.costs.price import LIMIT_HOURS, check_price
from tlmsearch.ladders.config import LadderConfig
from tlmsearch.ladders.files import (
    LADDER_CONFIG,
    LADDER_STATE,
    check_point_folders,
    load_config,
    phase_keys,
    read_state,
    set_phase,
    time_left,
    time_left_line,
)
from tlmsearch.ladders.plan import ladder_costs
from tlmsearch.ladders.point_plan import fix_plan
from tlmsearch.ladders.points import point_size
from tlmsearch.profiles import ProfileSpec, expand_profile_sets
from tlmsearch.rundir.io import write_json
from tlmsearch.rundir.layout import create_run_dir
from tlmsearch.rundir.lock import run_lock
from tlmsearch.rundir.records import finished, read_records
from tlmsearch.tuning import interrupts, runner
from tlmsearch.tuning import verify as verifying  # the module: tests may replace verify.verify
from tlmsearch.tuning.address import probe_address
from tlmsearch.tuning.announce import estimate_works, slots
from tlmsearch.tuning.resources import check_device, check_resources, local_gpus

# how a ladder priced beyond the limit shrinks (the CLI's flags; the Python API's keywords are the same names)
SHRINK_LADDER = "fewer or smaller --points, fewer --profiles, or fewer --seeds (or --max-seeds)"


def ladder_estimate(cfg: LadderConfig) -> Estimate | str:
    """What training every point of `cfg` costs here, priced without training (`costs.price`:
    recorded rates or FLOPs), or why there is no price.

    A point trains its learning-rate calibration, its uniform run and every profile x its seeds
    (`ladders.plan.ladder_costs`, counted in full-length runs: fewest seeds .. the planned seeds'
    cap), at its uniform shape's rate, as many at once as its trials fit here; the points run one
    after another, so their times add up."""
    low = high = 0.0
    rate = None
    gpus = float(local_gpus())
    for cost, point_cfg in zip(ladder_costs(cfg), cfg.point_configs(), strict=True):
        at_once = slots(point_cfg, gpus=gpus)
        steps = point_cfg.train.steps
        found = estimate_works(point_cfg, [fixed_work(n, steps, at_once) for n in (cost.runs_low, cost.runs_high)])
        if isinstance(found, str):
            return found
        low, high = low + found[0].low_s, high + found[1].high_s
        rate = rate or found[1].rate  # the first point's says where the rates come from
    assert rate is not None  # a ladder has at least two points
    return Estimate(low, high, rate)


def ladder_price_line(cfg: LadderConfig, found: Estimate | str) -> str:
    """`ladder NAME: 2 points, 30-84 runs counted at full length (...); estimate ...`."""
    costs = ladder_costs(cfg)
    runs = sum(c.runs_low for c in costs), sum(c.runs_high for c in costs)
    count = f"{runs[0]}" if runs[0] == runs[1] else f"{runs[0]}-{runs[1]}"
    where = f"cuda, {cfg.gpu_share:g} GPU a trial" if cfg.gpu_share > 0 else "cpu"
    head = (
        f"ladder {cfg.name}: {len(costs)} points, {count} runs counted at full length (calibration, uniform, "
        f"profiles x seeds), one point after another ({cfg.arch}, {where})"
    )
    return plan_line(head, found)


def check_ladder_price(cfg: LadderConfig, found: Estimate | str, *, yes: bool, max_hours: float) -> None:
    """Refuse a ladder priced beyond `max_hours` of this machine unless `yes` (`costs.price.check_price`);
    a ladder with no price (its rate could not be worked out) starts."""
    if not isinstance(found, str):
        what = f"ladder {cfg.name}".rstrip()
        check_price(what, found.high_s, yes=yes, limit_hours=max_hours, shrink=SHRINK_LADDER)


def start_ladder(
    cfg: LadderConfig,
    *,
    address: str | None = None,
    progress: bool = True,
    yes: bool = False,
    max_hours: float = LIMIT_HOURS,
) -> Path:
    """Price the ladder (nothing trains), refuse it beyond `max_hours` of this machine unless
    `yes`, then create the ladder directory, save its config and train every point."""
    cfg.check_arm()  # a compute ladder's points share depth and head size: refused before anything is created
    cfg.check_shapes()  # profiles that build one model at a point's depth: one line, before anything is written
    check_device(cfg.point_config(cfg.specs[0]), address)  # train's check: --device cuda without a GPU here
    # --gpus-per-trial auto: one GPU a trial where torch sees CUDA here, else the CPU; written out
    cfg = cfg.replace(gpus_per_trial=cfg.gpu_share)
    _check_before_start(cfg, address)
    found = ladder_estimate(cfg)
    check_ladder_price(cfg, found, yes=yes, max_hours=max_hours)
    ladder_dir = create_run_dir(cfg.runs_dir, cfg.name or None, prefix="ladder").resolve()
    cfg = cfg.replace(name=ladder_dir.name, runs_dir=str(ladder_dir.parent))
    cfg.save(ladder_dir / LADDER_CONFIG)
    write_json(ladder_dir / LADDER_STATE, {"phases": {k: {"status": "pending"} for k in phase_keys(cfg)}})
    if progress:
        print(ladder_price_line(cfg, found), file=sys.stderr, flush=True)
    return run_ladder(ladder_dir, address=address, progress=progress)


def _check_before_start(cfg: LadderConfig, address: str | None) -> None:
    """What a point's search would refuse after the ladder printed its price and made its folder,
    refused first, in one line: a cluster that cannot be reached, a trial that fits on no node of
    this machine, a corpus that does not prepare."""
    if address:
        probe_address(address)
    else:
        check_resources(cfg.point_config(cfg.specs[0]))
    from tlmsearch.tuning.specs import data_vocab  # lazy: the corpus (prepared once, as the first point would)

    data_vocab(cfg.data)


def order(cfg: LadderConfig) -> list[int]:
    """The points' indices, cheapest first (a ladder killed early has its small points done)."""
    sizes = [point_size(c).compute for c in cfg.point_configs()]
    return sorted(range(len(sizes)), key=lambda i: (sizes[i], i))


def run_ladder(ladder_dir: str | Path, *, address: str | None = None, progress: bool = True) -> Path:
    """Train every point's phases that are not done; finished runs are never trained again."""
    ladder_dir = Path(ladder_dir).resolve()
    cfg = load_config(ladder_dir)
    check_point_folders(ladder_dir, cfg)  # a point's folder that is a file: one line, before anything trains
    check_device(cfg.point_config(cfg.specs[0]), address)  # every point trains on the ladder's device
    state = read_state(ladder_dir)["phases"]
    say = (lambda text: print(text, flush=True)) if progress else (lambda text: None)
    try:
        with run_lock(ladder_dir):  # one driver a ladder; `ladder resume --max-seeds` waits for none
            _run_points(ladder_dir, cfg, state, say, address, progress)
    except KeyboardInterrupt:
        interrupts.say(f"ladder interrupted; resume it with: tlmsearch ladder resume {ladder_dir}")
        raise
    return ladder_dir


def _run_points(
    ladder_dir: Path,
    cfg: LadderConfig,
    state: dict[str, Any],
    say: Callable[[str], None],
    address: str | None,
    progress: bool,
) -> None:
    """Each point in turn, cheapest first: its search (the rate calibration and uniform), then its
    verification with the seed cap and profiles it began with (`ladders.point_plan`)."""
    specs = cfg.specs
    for done, i in enumerate(order(cfg)):
        spec = specs[i]
        sub = ladder_dir / spec.name
        point_cfg = cfg.point_config(spec, str(ladder_dir))
        size = point_size(point_cfg)
        say(
            f"ladder {cfg.name}: point {done + 1}/{len(specs)} {spec.text}: {size.non_embedding:,} non-embedding "
            f"parameters, {size.steps:,} steps, {size.compute:.3g} FLOPs a run; "
            + time_left_line(time_left(ladder_dir, cfg))  # `tlmsearch ladder status`'s estimate
        )
        key = f"{spec.name}/search"
        if state.get(key, {}).get("status") != "done" or not finished(read_records(sub)):
            set_phase(ladder_dir, key, "running")
            runner.search_or_resume(point_cfg, sub, address=address, progress=progress)
            set_phase(ladder_dir, key, "done")
        key = f"{spec.name}/verify"
        set_phase(ladder_dir, key, "running")
        plan = fix_plan(sub, cfg)  # kept from here on: a later --max-seeds or --profiles leaves this point as begun
        controls = tuple(expand_profile_sets(plan.profiles))
        result = verifying.verify(
            sub,
            top_k=1,
            seeds=cfg.verify_seeds,
            max_seeds=plan.max_seeds,
            pilot_seeds=cfg.pilot_seeds,
            looks=cfg.verify_looks,
            train={"tokens_per_param": spec.tokens_per_param},
            margin=cfg.margin,
            alpha=cfg.alpha,
            address=address,
            progress=progress,
            announce=say,
            controls=controls,
            named_controls={"best": _spec_dict(cfg.best)} if cfg.best else None,
            pack=cfg.pack,
            allow_collapsed=cfg.allow_collapsed,
            reference=cfg.reference,
        )
        set_phase(ladder_dir, key, "done")
        outcome = result.verdicts[0].outcome if result.verdicts else "no verdict"
        say(f"ladder {cfg.name}: point {spec.text}: {outcome} ({len(result.new_records)} runs trained now)")


def _spec_dict(text: str) -> dict[str, object]:
    return ProfileSpec.parse(text).to_dict()


def pending(ladder_dir: str | Path) -> list[str]:
    """The phases not done yet, in the ladder's order."""
    cfg = load_config(ladder_dir)
    state = read_state(ladder_dir)["phases"]
    return [k for k in phase_keys(cfg) if state.get(k, {}).get("status") != "done"]


__all__ = [
    "check_ladder_price",
    "ladder_estimate",
    "ladder_price_line",
    "order",
    "pending",
    "run_ladder",
    "start_ladder",
]
