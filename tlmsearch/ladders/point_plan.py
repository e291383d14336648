"""Each ladder point's verification plan (its seed cap and its profiles), fixed when it begins.

A ladder that turns out dearer than this machine can pay is cut from a point on, not restarted
(`ladders.cut`: `tlmsearch ladder resume runs/ladder8 --max-seeds 8 --profiles openelm reverse`).
The points whose verification has not begun take the new `max_seeds` and `profiles`; a point
whose verification has begun keeps the plan it began with (its seeds were planned under that cap
and its alpha is spent on them: another cap would plan other seeds for the same question). The
plan lives in the point's own folder (`point_plan.json`, beside its records), written when its
verification begins, so a deleted state file loses nothing. A point begun before the file
existed is the ladder's: `cut.change_plan` writes the ladder's old values into it before changing them.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tlmsearch.errors import ConfigError
from tlmsearch.ladders.config import LadderConfig
from tlmsearch.rundir.io import read_json_object, write_json
from tlmsearch.rundir.layout import VERIFY
from tlmsearch.rundir.records import read_records

POINT_PLAN = "point_plan.json"
PLAN_FIELDS = ("max_seeds", "profiles")


@dataclass(frozen=True)
class PointPlan:
    """What a point's verification trains: `profiles` beside cosine and uniform (the ladder's
    field, sets unexpanded), planned seeds capped at `max_seeds`."""

    max_seeds: int
    profiles: tuple[str, ...]

    @classmethod
    def of(cls, cfg: LadderConfig) -> PointPlan:
        return cls(cfg.max_seeds, tuple(cfg.profiles))

    def to_dict(self) -> dict[str, Any]:
        return {"max_seeds": self.max_seeds, "profiles": list(self.profiles)}


def begun(point_dir: Path) -> bool:
    """Whether a point's verification has begun: its plan file (verify.json) or a record of it."""
    if (point_dir / VERIFY).is_file():
        return True
    return point_dir.is_dir() and any(r.kind == "verify" for r in read_records(point_dir))


def read_plan(point_dir: Path) -> PointPlan | None:
    """The plan a point's verification began with (None before it began, or for a point begun
    before plans were kept: the ladder's)."""
    if not point_dir.is_dir():  # not made yet, or damaged (a file, a link loop): `ladder_damage` says so
        return None
    path = point_dir / POINT_PLAN
    doc = read_json_object(path)
    if doc is None:
        return None
    seeds, profiles = doc.get("max_seeds"), doc.get("profiles")
    if not isinstance(seeds, int) or not isinstance(profiles, list) or not all(isinstance(p, str) for p in profiles):
        raise ConfigError(
            f"{path} is damaged (want {{'max_seeds': N, 'profiles': [...]}}, found {doc}): put back the values its "
            "verification began with (the ladder's ladder.yaml at that time)"
        )
    return PointPlan(seeds, tuple(profiles))


def plan_of(point_dir: Path, cfg: LadderConfig) -> PointPlan:
    """The plan a point verifies with: its own once begun, else the ladder's."""
    return read_plan(point_dir) or PointPlan.of(cfg)


def fix_plan(point_dir: Path, cfg: LadderConfig) -> PointPlan:
    """The point's plan, written into its folder if it has none yet (its verification begins)."""
    if (own := read_plan(point_dir)) is not None:
        return own
    plan = PointPlan.of(cfg)
    point_dir.mkdir(parents=True, exist_ok=True)
    write_json(point_dir / POINT_PLAN, plan.to_dict())
    return plan


def as_begun(cfg: LadderConfig, point_dir: Path) -> LadderConfig:
    """The ladder as the point at `point_dir` verifies: its own seed cap and profiles."""
    plan = plan_of(point_dir, cfg)
    if plan == PointPlan.of(cfg):
        return cfg
    return cfg.replace(max_seeds=plan.max_seeds, profiles=plan.profiles)


def plan_note(cfg: LadderConfig, point_dir: Path) -> str:
    """A point's plan in words where it differs from the ladder's ('' where the same)."""
    plan, ladder = plan_of(point_dir, cfg), PointPlan.of(cfg)
    parts = []
    if plan.max_seeds != ladder.max_seeds:
        parts.append(f"max {plan.max_seeds} seeds")
    if plan.profiles != ladder.profiles:
        parts.append(f"profiles {' '.join(plan.profiles) or '(cosine, uniform)'}")
    return ", ".join(parts)


__all__ = ["POINT_PLAN", "PointPlan", "as_begun", "begun", "fix_plan", "plan_note", "plan_of"]
