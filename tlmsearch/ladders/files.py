"""A ladder's run directory: its files, its state, and its points read back (no Ray, no torch).

    runs/<ladder>/
      ladder.yaml           the resolved LadderConfig
      ladder_state.json     each point's phases (search, verify): pending / running / done
      <point>/              one run directory per point (search.yaml, trials.jsonl, verify.json,
                            point_plan.json: its seed cap and profiles once begun, `point_plan`)
      summary.json, summary.md, report.html   the ladder's report (`ladder.report`)

The state file only says where the ladder is, for `status`; resuming trusts the records: a
point's search resumes from its own run directory, and verify reuses its finished runs.
"""

from __future__ import annotations

import json
import math
import time
from pathlib import Path
from typing import Any

from tlmsearch.configs.search import load_run_config
from tlmsearch.core.words import plural
from tlmsearch.errors import UserError
from tlmsearch.ladders.config import LadderConfig
from tlmsearch.ladders.gains import PointResult, point_result
from tlmsearch.ladders.plan import ladder_costs
from tlmsearch.ladders.point_plan import as_begun
from tlmsearch.ladders.points import PointSize, point_size, resolve_length
from tlmsearch.rundir.io import read_phases, read_verify, read_yaml, write_json
from tlmsearch.rundir.layout import SEARCH_CONFIG, TRIALS, VERIFY
from tlmsearch.rundir.lr import read_lr_calibration
from tlmsearch.rundir.records import LR_KIND, read_records, read_records_checked

LADDER_CONFIG = "ladder.yaml"
LADDER_STATE = "ladder_state.json"
PHASES = ("search", "verify")


def is_ladder(path: str | Path) -> bool:
    return (Path(path) / LADDER_CONFIG).is_file()


def load_config(ladder_dir: str | Path) -> LadderConfig:
    path = Path(ladder_dir)
    if not path.is_dir():
        raise UserError(f"{path} is not a directory")
    if not is_ladder(path):
        raise UserError(f"{path} is not a ladder run directory (no {LADDER_CONFIG})")
    cfg = LadderConfig.load(path / LADDER_CONFIG)
    if "lr_calibration_seeds" not in read_yaml(path / LADDER_CONFIG):
        cfg = cfg.replace(lr_calibration_seeds=1)  # written before the calibration's seeds: one seed a rate
    return cfg


def phase_keys(cfg: LadderConfig) -> list[str]:
    return [f"{s.name}/{p}" for s in cfg.specs for p in PHASES]


def read_state(ladder_dir: str | Path) -> dict[str, Any]:
    """{"phases": {key: {"status": ..., "at": ...}}} ({} phases before the first write); a state
    file that is not one (no object, phases or a phase not an object, a status not a word) is
    refused in one line saying how to rebuild it: the records, not the state, say what is done."""
    return read_phases(Path(ladder_dir) / LADDER_STATE, f"tlmsearch ladder resume {ladder_dir}", "point")


def ladder_damage(ladder_dir: str | Path, cfg: LadderConfig | None = None) -> list[str]:
    """What is broken or gone of the records a ladder's state says it made, one sentence each
    ([] for a healthy ladder, running or not), as `studies.files.study_damage` reads a study.

    A point's folder that is not a folder (a file, a link loop) is damage; once the state says a
    point's search is done, its folder must hold `search.yaml` and the search's records; once its
    verification is done, the verification's records, whole: every seed `verify.json` names with
    the same profiles (a deleted, emptied or torn `trials.jsonl` loses some), no damaged line."""
    ladder_dir = Path(ladder_dir)
    cfg = cfg if cfg is not None else load_config(ladder_dir)
    phases = read_state(ladder_dir)["phases"]
    problems: list[str] = []
    for spec in cfg.specs:
        sub = ladder_dir / spec.name
        searched = phases.get(f"{spec.name}/search", {}).get("status") == "done"
        verified = phases.get(f"{spec.name}/verify", {}).get("status") == "done"
        problem = _point_problem(sub, spec.text, searched=searched, verified=verified)
        if problem:
            problems.append(problem)
    return problems


def _point_problem(sub: Path, point: str, *, searched: bool, verified: bool) -> str | None:
    if sub.is_symlink() and not sub.is_dir() or (sub.exists() and not sub.is_dir()):
        kind = "a file" if sub.is_file() else "not a folder"
        return f"{sub} is {kind}; it should be the folder of point {point} (search.yaml, trials.jsonl)"
    if not (searched or verified):
        return None
    phase = "verification" if verified else "search"
    if not sub.is_dir():
        return f"{sub} is missing, although {LADDER_STATE} says point {point}'s {phase} is done"
    for name in (SEARCH_CONFIG, TRIALS):
        if not (sub / name).is_file():
            state = "is not a file" if (sub / name).exists() or (sub / name).is_symlink() else "is missing"
            return f"{sub / name} {state}, although {LADDER_STATE} says point {point}'s {phase} is done"
    records, bad = read_records_checked(sub)
    if not any(r.kind in ("baseline", LR_KIND) for r in records):
        return f"{sub / TRIALS} holds none of the search's records (emptied?), although its search is done"
    if verified:  # nothing writes into a point whose verification is done: a damaged line is damage
        if bad:
            lines = ", ".join(map(str, bad[:5]))
            return f"{sub / TRIALS} has {len(bad)} damaged line(s) (line {lines}): the runs they held are lost"
        plan = read_verify(sub)
        seeds = [*plan.get("pilot_seeds", []), *plan.get("decision_seeds", [])]
        by_seed = {s: {json.dumps(r.profile, sort_keys=True) for r in records if r.kind == "verify" and r.seed == s}
                   for s in seeds}  # fmt: skip
        everyone = set().union(*by_seed.values()) if by_seed else set()
        short = [s for s, profiles in by_seed.items() if profiles != everyone or not profiles]
        if not seeds or short:
            which = f"seed(s) {', '.join(map(str, short[:5]))}" if short else f"{VERIFY}'s seeds"
            return (
                f"{sub / TRIALS} lacks verification runs of {which}, although {LADDER_STATE} says point "
                f"{point}'s verification is done"
            )
    return None


def damage_text(ladder_dir: str | Path, problems: list[str], consequence: str = "") -> str:
    """One line: what `ladder_damage` found, and how to put it right."""
    return (
        f"ladder {ladder_dir} is damaged{consequence}: " + "; ".join(problems) + ". Put it back from a copy; or, to "
        f"train what is lost again, move what is damaged aside and run `tlmsearch ladder resume {ladder_dir}` "
        "(every point then checks its own records; nothing finished is trained twice)"
    )


def check_point_folders(ladder_dir: str | Path, cfg: LadderConfig) -> None:
    """Refuse, in one line before anything trains, a ladder a resume cannot write into: a point's
    folder that is a file or a link loop (what is gone is trained again; what is in the way is not
    moved)."""
    blocked = [p for s in cfg.specs if (p := _point_problem(Path(ladder_dir) / s.name, s.text, searched=False,
                                                            verified=False))]  # fmt: skip
    if blocked:
        raise UserError(damage_text(ladder_dir, blocked, ", so it cannot be resumed"))


def set_phase(ladder_dir: str | Path, key: str, status: str) -> None:
    """Record one phase's status atomically (the file is rewritten whole)."""
    state = read_state(ladder_dir)
    state["phases"][key] = {"status": status, "at": time.time()}
    write_json(Path(ladder_dir) / LADDER_STATE, state)


def point_rows(
    ladder_dir: str | Path, cfg: LadderConfig | None = None
) -> tuple[list[tuple[str, PointSize, PointResult, float]], dict[str, float | None]]:
    """Every point's (name, size, result, planned tokens per parameter), in the ladder's order,
    and the learning rate each point trained at (None before its search config exists, and while
    its learning-rate calibration has not chosen one)."""
    ladder_dir = Path(ladder_dir)
    cfg = cfg or load_config(ladder_dir)
    rows = []
    lrs: dict[str, float | None] = {}
    for spec in cfg.specs:
        sub = ladder_dir / spec.name
        saved = sub / SEARCH_CONFIG
        point_cfg = load_run_config(saved) if saved.is_file() else cfg.point_config(spec, str(ladder_dir))
        point_cfg = resolve_length(point_cfg)
        calibrating = point_cfg.lr_calibration != "off" and read_lr_calibration(sub) is None
        lrs[spec.name] = point_cfg.train.lr if saved.is_file() and not calibrating else None
        records = read_records(sub) if sub.is_dir() else []
        plan = read_verify(sub) if sub.is_dir() else {}
        result = point_result(records, plan, margin=cfg.margin, alpha=cfg.alpha, arch=cfg.arch)
        rows.append((spec.name, point_size(point_cfg), result, spec.tokens_per_param))
    return rows, lrs


def point_lr_intervals(ladder_dir: str | Path, cfg: LadderConfig | None = None) -> dict[str, list[float]]:
    """Each point's chosen learning rate's 95% interval (`lr_calibration.json`), for the points
    whose calibration gave one (paired seeds; a point calibrated with one seed a rate has none)."""
    ladder_dir = Path(ladder_dir)
    cfg = cfg or load_config(ladder_dir)
    out = {}
    for spec in cfg.specs:
        interval = (read_lr_calibration(ladder_dir / spec.name) or {}).get("interval")
        if isinstance(interval, list) and len(interval) == 2:
            out[spec.name] = [float(interval[0]), float(interval[1])]
    return out


def point_epochs(ladder_dir: str | Path, cfg: LadderConfig | None = None) -> dict[str, float | None]:
    """Each point's epochs over the corpus as its verification's runs recorded them (their mean;
    None before any finished)."""
    ladder_dir = Path(ladder_dir)
    cfg = cfg or load_config(ladder_dir)
    out: dict[str, float | None] = {}
    for spec in cfg.specs:
        sub = ladder_dir / spec.name
        values = [e for r in (read_records(sub) if sub.is_dir() else []) if r.kind == "verify"
                  if math.isfinite(e := r.metric("epochs"))]  # fmt: skip
        out[spec.name] = sum(values) / len(values) if values else None
    return out


def time_left(ladder_dir: str | Path, cfg: LadderConfig | None = None) -> dict[str, Any]:
    """Runs done and planned, and the run time left: the planned runs not yet recorded times
    each point's FLOPs, at the seconds per FLOP its full-length runs took so far (summed over
    runs: trials that train at once divide it). A point's planned runs are its verification's
    seeds once they are planned (`verify.json`: pilot and deciding seeds), else the fewest its
    seed setting asks for, and never fewer than it has run (`unplanned`: how many points count
    that fewest, so the totals are lower bounds until their pilots plan their seeds)."""
    cfg = cfg or load_config(ladder_dir)
    costs = ladder_costs(cfg)
    first_seeds = cfg.seeds or cfg.pilot_seeds
    done = planned = unplanned = 0
    seconds = flops = left = 0.0
    for i, (spec, cost) in enumerate(zip(cfg.specs, costs, strict=True)):
        sub = Path(ladder_dir) / spec.name
        if (own := as_begun(cfg, sub)) is not cfg:  # a point begun with other profiles (`point_plan`)
            cost = ladder_costs(own)[i]
        recs = [r for r in (read_records(sub) if sub.is_dir() else []) if r.kind in ("lr", "baseline", "verify")]
        ended = [r for r in recs if r.status in ("complete", "stopped")]
        doc = read_verify(sub) if sub.is_dir() else {}
        seeds = len(doc.get("pilot_seeds", [])) + len(doc.get("decision_seeds", []))
        profiles = (cost.runs_low - cost.extra_runs) // first_seeds  # the point's own (`plan.profile_texts`)
        runs = cost.runs_low + profiles * max(0, seeds - first_seeds)
        unplanned += not doc.get("decision_seeds") and len(ended) < runs
        done += len(ended)
        planned += max(runs, len(ended))
        left += max(0, runs - len(ended)) * cost.compute
        full = [r for r in ended if r.kind != "lr" and r.wall_s > 0]
        seconds += sum(r.wall_s for r in full)
        flops += len(full) * cost.compute
    rate = seconds / flops if flops else math.nan
    return {
        "runs_done": done,
        "runs_planned": planned,
        "run_seconds_left": left * rate if flops else None,
        "unplanned": unplanned,
    }


def time_left_line(left: dict[str, Any]) -> str:
    """`time_left`'s answer in words: "12/30 runs; left: about 4.2 min of run time (summed over runs)";
    while some point's seeds are not planned yet, the totals are lower bounds and say so:
    "12/30+ runs; left: at least about 4.2 min of run time (summed over runs; 1 point counts the
    fewest runs its seed setting allows until its pilot plans them)"."""
    seconds, unplanned = left["run_seconds_left"], left.get("unplanned", 0)
    more = least = why = ""
    if unplanned:
        verb, its = ("counts", "its") if unplanned == 1 else ("count", "their")
        more, least = "+", "at least "
        why = (
            f"; {plural(unplanned, 'point')} {verb} the fewest runs {its} seed setting allows "
            f"until {its} pilot plans them"
        )
    when = "unknown until a run has ended" if seconds is None else f"{least}about {seconds / 60:.1f} min of run time"
    return f"{left['runs_done']}/{left['runs_planned']}{more} runs; left: {when} (summed over runs{why})"


def target_tokens_per_param(cfg: LadderConfig) -> float:
    """The target's tokens per parameter: the configured one, else the largest point's."""
    if cfg.target_tokens_per_param:
        return cfg.target_tokens_per_param
    sizes = [(point_size(cfg.point_config(s)).compute, s.tokens_per_param) for s in cfg.specs]
    return max(sizes)[1] if sizes else math.nan


__all__ = [
    "LADDER_CONFIG",
    "LADDER_STATE",
    "PHASES",
    "check_point_folders",
    "damage_text",
    "is_ladder",
    "ladder_damage",
    "load_config",
    "phase_keys",
    "point_epochs",
    "point_rows",
    "read_state",
    "set_phase",
    "target_tokens_per_param",
    "time_left",
    "time_left_line",
]
