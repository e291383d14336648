"""Each ladder point's verification plan (its seed cap and its profiles), fixed when it begins.

A ladder that turns out dearer than this machine can pay is cut from a point on, not restarted:

    tlmsearch ladder resume runs/ladder8 --max-seeds 8 --profiles openelm reverse

The points whose verification has not begun take the new `max_seeds` and `profiles`; a point
whose verification has begun keeps the plan it began with (its seeds were planned under that cap
and its alpha is spent on them: another cap would plan other seeds for the same question). The
plan lives in the point's own folder (`point_plan.json`, beside its records), written when its
verification begins, so a deleted state file loses nothing. A point begun before the file
existed is the ladder's: `change_plan` writes the ladder's old values into it before changing them.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tlmsearch.errors import ConfigError
from tlmsearch.ladders.config import LadderConfig
from tlmsearch.ladders.points import PointSpec
from tlmsearch.rundir.io import read_json_object, write_json, write_text
from tlmsearch.rundir.layout import VERIFY
from tlmsearch.rundir.lock import run_lock
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
    plan = plan_of(point_dir, cfg)
    if read_plan(point_dir) is None:
        point_dir.mkdir(parents=True, exist_ok=True)
        write_json(point_dir / POINT_PLAN, plan.to_dict())
    return plan


def point_config(cfg: LadderConfig, point_dir: Path) -> LadderConfig:
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


def change_plan(
    ladder_dir: str | Path, *, max_seeds: int | None = None, profiles: str | Sequence[str] | None = None
) -> list[str]:
    """Set the ladder's `max_seeds` and `profiles` from here on (None = keep): the points whose
    verification has begun keep theirs (written into their folders first); refused in one line,
    changing nothing, when the new values are not a valid ladder or change nothing a point will
    use. Returns the lines that say what changed."""
    from tlmsearch.ladders.files import LADDER_CONFIG, load_config  # files imports the ladder's summary

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


__all__ = ["POINT_PLAN", "PointPlan", "begun", "change_plan", "fix_plan", "plan_note", "plan_of", "point_config"]
