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
from pathlib import Path

from tlmsearch.ladders.config import LadderConfig
from tlmsearch.ladders.files import (
    LADDER_CONFIG,
    LADDER_STATE,
    load_config,
    phase_keys,
    read_state,
    set_phase,
    time_left,
    time_left_line,
)
from tlmsearch.ladders.points import point_size
from tlmsearch.profiles import ProfileSpec
from tlmsearch.rundir.io import write_json
from tlmsearch.rundir.layout import create_run_dir
from tlmsearch.rundir.records import finished, read_records
from tlmsearch.tuning import runner
from tlmsearch.tuning import verify as verifying  # the module: tests may replace verify.verify


def start_ladder(cfg: LadderConfig, *, address: str | None = None, progress: bool = True) -> Path:
    """Create the ladder directory, save its config and train every point."""
    cfg.check_arm()  # a compute ladder's points share depth and head size: refused before anything is created
    cfg.check_shapes()  # profiles that build one model at a point's depth: one line, before anything is written
    ladder_dir = create_run_dir(cfg.runs_dir, cfg.name or None, prefix="ladder").resolve()
    cfg = cfg.replace(name=ladder_dir.name, runs_dir=str(ladder_dir.parent))
    cfg.save(ladder_dir / LADDER_CONFIG)
    write_json(ladder_dir / LADDER_STATE, {"phases": {k: {"status": "pending"} for k in phase_keys(cfg)}})
    return run_ladder(ladder_dir, address=address, progress=progress)


def order(cfg: LadderConfig) -> list[int]:
    """The points' indices, cheapest first (a ladder killed early has its small points done)."""
    sizes = [point_size(c).compute for c in cfg.point_configs()]
    return sorted(range(len(sizes)), key=lambda i: (sizes[i], i))


def run_ladder(ladder_dir: str | Path, *, address: str | None = None, progress: bool = True) -> Path:
    """Train every point's phases that are not done; finished runs are never trained again."""
    ladder_dir = Path(ladder_dir).resolve()
    cfg = load_config(ladder_dir)
    specs = cfg.specs
    state = read_state(ladder_dir)["phases"]
    say = (lambda text: print(text, flush=True)) if progress else (lambda text: None)
    try:
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
                runner.search_or_resume(point_cfg, sub, address=address, progress=False)
                set_phase(ladder_dir, key, "done")
            key = f"{spec.name}/verify"
            set_phase(ladder_dir, key, "running")
            result = verifying.verify(
                sub,
                top_k=1,
                seeds=cfg.verify_seeds,
                max_seeds=cfg.max_seeds,
                pilot_seeds=cfg.pilot_seeds,
                train={"tokens_per_param": spec.tokens_per_param},
                margin=cfg.margin,
                alpha=cfg.alpha,
                address=address,
                progress=progress,
                announce=say,
                controls=cfg.controls,
                named_controls={"best": _spec_dict(cfg.best)} if cfg.best else None,
                pack=cfg.pack,
                allow_collapsed=cfg.allow_collapsed,
                reference=cfg.reference,
            )
            set_phase(ladder_dir, key, "done")
            outcome = result.verdicts[0].outcome if result.verdicts else "no verdict"
            say(f"ladder {cfg.name}: point {spec.text}: {outcome} ({len(result.new_records)} runs trained now)")
    except KeyboardInterrupt:
        print(f"ladder interrupted; resume it with: tlmsearch ladder resume {ladder_dir}", file=sys.stderr)
        raise
    return ladder_dir


def _spec_dict(text: str) -> dict[str, object]:
    return ProfileSpec.parse(text).to_dict()


def pending(ladder_dir: str | Path) -> list[str]:
    """The phases not done yet, in the ladder's order."""
    cfg = load_config(ladder_dir)
    state = read_state(ladder_dir)["phases"]
    return [k for k in phase_keys(cfg) if state.get(k, {}).get("status") != "done"]


__all__ = ["order", "pending", "run_ladder", "start_ladder"]
