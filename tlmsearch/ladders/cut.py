"""Cut a ladder from a point on: `tlmsearch ladder resume DIR --max-seeds N --profiles ...`.

The points whose verification has not begun take the new seed cap and profiles; a begun point
keeps the plan it began with, written into its folder first (`ladders.point_plan`).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from tlmsearch.errors import ConfigError
from tlmsearch.ladders.files import LADDER_CONFIG, load_config
from tlmsearch.ladders.point_plan import PointPlan, begun, fix_plan
from tlmsearch.ladders.points import PointSpec
from tlmsearch.rundir.io import write_text
from tlmsearch.rundir.lock import run_lock


def change_plan(
    ladder_dir: str | Path, *, max_seeds: int | None = None, profiles: str | Sequence[str] | None = None
) -> list[str]:
    """Set the ladder's `max_seeds` and `profiles` from here on (None = keep): the points whose
    verification has begun keep theirs (written into their folders first); refused in one line,
    changing nothing, when the new values are not a valid ladder or change nothing a point will
    use. Returns the lines that say what changed."""
    ladder_dir = Path(ladder_dir)
    cfg = load_config(ladder_dir)
    changes: dict[str, Any] = {}
    if max_seeds is not None and max_seeds != cfg.max_seeds:
        changes["max_seeds"] = max_seeds
    if isinstance(profiles, str):  # one profile (or set) named alone, not its letters
        profiles = [profiles]
    if profiles is not None and tuple(profiles) != tuple(cfg.profiles):
        changes["profiles"] = tuple(profiles)
    if not changes:
        return []
    new = cfg.replace(**changes)  # a bad value (seeds below the pilot's, an unknown profile): one line, nothing written
    new.check_shapes()
    started = [s for s in cfg.specs if begun(ladder_dir / s.name)]
    ahead = [s for s in cfg.specs if s not in started]
    if not ahead:
        raise ConfigError(
            f"{ladder_dir}: every point's verification has begun, each with its own seed cap and profiles; "
            f"--max-seeds and --profiles change only the points not begun. Drop them to resume as planned"
        )
    with run_lock(ladder_dir):  # a ladder running (`run_ladder` holds it): refused in one line
        kept = {s.text: fix_plan(ladder_dir / s.name, cfg) for s in started}
        write_text(ladder_dir / LADDER_CONFIG, new.to_yaml())
    return [_line(ladder_dir, k, getattr(cfg, k), v, ahead, kept) for k, v in changes.items()]


def _line(ladder_dir: Path, key: str, old: Any, new: Any, ahead: list[PointSpec], kept: dict[str, PointPlan]) -> str:
    """'RUN: max-seeds 20 -> 8 for B, C; A keeps its 20 (verification begun)'."""

    def shown(value: Any) -> str:
        return (" ".join(value) or "(none)") if isinstance(value, tuple) else str(value)

    keeps = "; ".join(f"{point} keeps its {shown(getattr(plan, key))}" for point, plan in kept.items())
    return (
        f"{ladder_dir}: {key.replace('_', '-')} {shown(old)} -> {shown(new)} for "
        f"{', '.join(s.text for s in ahead)}" + (f"; {keeps} (verification begun)" if keeps else "")
    )


__all__ = ["change_plan"]
