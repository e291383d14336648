"""One point of a ladder from its run directory's records: the verdict, and each profile's paired
gain over uniform and over cosine with its standard error (pure; reads records and verify.json).

The gain is taken where the verdict takes it: on the verification's deciding seeds only (never a
pilot's), at the step count of the latest verification, per seed log ppl_reference - log
ppl_profile (nats; positive: the profile is better), its mean and standard error over the seeds
both profiles trained.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from tlmsearch.analysis.collect import profile_results
from tlmsearch.analysis.summary import decision_seeds, run_verdicts, verify_unfinished
from tlmsearch.analysis.verdict import COSINE, UNIFORM, ProfileResult, find, find_reference
from tlmsearch.rundir.axes import axes_text
from tlmsearch.rundir.records import as_records

REFERENCES = (UNIFORM, COSINE)


@dataclass(frozen=True)
class PairedGain:
    """Mean paired log gain of one profile over one reference at one point."""

    mean: float
    se: float
    n: int

    def interval(self, alpha: float) -> tuple[float, float]:
        """Two-sided (1 - alpha) t interval of the mean log gain."""
        from scipy import stats

        if self.n < 2:
            return (math.nan, math.nan)
        t = float(stats.t.ppf(1.0 - alpha / 2.0, self.n - 1))
        return (self.mean - t * self.se, self.mean + t * self.se)

    def to_dict(self, alpha: float) -> dict[str, Any]:
        low, high = self.interval(alpha)
        return {
            "log_gain": self.mean,
            "se": self.se,
            "n": self.n,
            "gain": math.expm1(self.mean),
            "low": _finite(math.expm1(low)),
            "high": _finite(math.expm1(high)),
            "confidence": 1.0 - alpha,
        }


@dataclass(frozen=True)
class PointResult:
    """A point's verdict (None before its verification has decided) and its profiles' gains."""

    verdict: dict[str, Any] | None
    gains: dict[str, dict[str, PairedGain]] = field(default_factory=dict)  # profile -> reference -> gain
    note: str | None = None  # why there is no verdict yet
    shapes: dict[str, str] = field(default_factory=dict)  # profile -> a joint architecture's every axis per layer


def profile_key(result: ProfileResult) -> str:
    """How a ladder names a profile: its name when verify trained it as a named control
    ("best"), else its label; cosine and uniform by name."""
    for name in REFERENCES:
        if result.is_(name):
            return name
    return result.baseline if result.baseline and result.baseline not in REFERENCES else result.label


def paired_gain(profile: ProfileResult, reference: ProfileResult) -> PairedGain | None:
    """log ppl_reference - log ppl_profile over their common seeds; None below two."""
    seeds = sorted(set(profile.ppl) & set(reference.ppl))
    d = [math.log(reference.ppl[s]) - math.log(profile.ppl[s]) for s in seeds]
    if len(d) < 2:
        return None
    return PairedGain(statistics.fmean(d), statistics.stdev(d) / math.sqrt(len(d)), len(d))


def point_result(
    records: Iterable[Any], verify_plan: Mapping[str, Any] | None, *, margin: float, alpha: float, arch: str
) -> PointResult:
    """The verdict and the paired gains of one point's run directory. The gains under "cosine" are
    over the point's reference: cosine 1.5 -> 0.5, or the ladder's `reference` that its verify
    recorded in verify.json (recognised by the model it builds; the verdict's `reference` names it)."""
    recs = as_records(records)
    note = verify_unfinished(recs, verify_plan)
    if not any(r.kind == "verify" for r in recs):
        return PointResult(None, {}, "not verified yet")
    vs = run_verdicts(recs, verify_plan, margin=margin, alpha=alpha, arch=arch)
    seeds = decision_seeds(recs, verify_plan)
    verify = [r for r in recs if r.kind == "verify"]
    steps = verify[-1].max_steps
    keep = [r for r in verify if r.max_steps == steps and (seeds is None or r.seed in set(seeds))]
    results = profile_results(keep, kinds=("verify",))
    reference = (verify_plan or {}).get("reference")
    refs = {UNIFORM: find(results, UNIFORM), COSINE: find_reference(results, reference if reference else None)}
    gains: dict[str, dict[str, PairedGain]] = {}
    if note is None:
        for res in results:
            key = profile_key(res)
            for name, ref in refs.items():
                if ref is None or ref is res:
                    continue
                g = paired_gain(res, ref)
                if g is not None:
                    gains.setdefault(key, {})[name] = g
    verdict = vs[0].to_dict() if vs and note is None else None
    shapes = {profile_key(r): text for r in results if (text := axes_text({"widths": r.widths, **r.axes}, sep="; "))}
    return PointResult(verdict, gains, note, shapes)


def _finite(x: float) -> float | None:
    return x if math.isfinite(x) else None


__all__ = ["REFERENCES", "PairedGain", "PointResult", "paired_gain", "point_result", "profile_key"]
