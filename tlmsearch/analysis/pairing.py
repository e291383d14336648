"""What pairing by seed buys: the spread of a paired difference against an unpaired one (pure).

Two profiles trained with the same seed share its initialisation (keyed, tensor by tensor) and
its data order, so their losses correlate over seeds. For per-seed values a_s and b_s:

- each profile's own spread over seeds: sd_a, sd_b;
- the **unpaired** sd of a difference (two independent runs): sqrt(sd_a^2 + sd_b^2) (sqrt(2) x a
  profile's sd when both spread alike);
- the **paired** sd: the sd of the per-seed differences a_s - b_s, which the verdict's tests and
  the seed planner use;
- the seed correlation r = (sd_a^2 + sd_b^2 - paired^2) / (2 sd_a sd_b) (exactly Pearson's r of the
  pairs, the same n - 1 in every variance), and the ratio paired / unpaired = sqrt(1 - 2 r sd_a
  sd_b / (sd_a^2 + sd_b^2)) (sqrt(1 - r) when they spread alike): below 1 when pairing helps.

`record_pairings` measures it for cosine against every candidate of each budget in a run's
records; `python -m bench.bench_noise --pairing RUN...` prints it for committed runs.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from tlmsearch.analysis.collect import profile_results
from tlmsearch.analysis.verdict import COSINE, find
from tlmsearch.rundir.records import as_records


@dataclass(frozen=True)
class Pairing:
    """Paired and unpaired spreads of one comparison over n seeds (nats)."""

    n: int
    sd_a: float
    sd_b: float
    paired_sd: float

    @property
    def unpaired_sd(self) -> float:
        return math.sqrt(self.sd_a**2 + self.sd_b**2)

    @property
    def correlation(self) -> float:
        den = 2.0 * self.sd_a * self.sd_b
        return (self.sd_a**2 + self.sd_b**2 - self.paired_sd**2) / den if den > 0 else math.nan

    @property
    def ratio(self) -> float:
        """paired sd / unpaired sd (below 1: pairing removes spread)."""
        return self.paired_sd / self.unpaired_sd if self.unpaired_sd > 0 else math.nan

    def to_dict(self) -> dict[str, Any]:
        return {
            "n": self.n,
            "sd_a": self.sd_a,
            "sd_b": self.sd_b,
            "paired_sd": self.paired_sd,
            "unpaired_sd": self.unpaired_sd,
            "correlation": self.correlation,
            "ratio": self.ratio,
        }


def pairing(a: Sequence[float], b: Sequence[float]) -> Pairing:
    """The spreads of per-seed values `a` and `b` (the same seeds, in the same order; n >= 2)."""
    if len(a) != len(b) or len(a) < 2:
        raise ValueError(f"pairing needs two equal-length sequences of at least 2 seeds, got {len(a)} and {len(b)}")
    d = [x - y for x, y in zip(a, b, strict=True)]
    return Pairing(len(a), statistics.stdev(a), statistics.stdev(b), statistics.stdev(d))


@dataclass(frozen=True)
class Comparison:
    group: tuple[int, int]  # (layers, base width) of the budget
    candidate: str
    pairing: Pairing


def record_pairings(
    records: Iterable[Any], *, kinds: Sequence[str] = ("verify",), seeds: Iterable[int] | None = None
) -> list[Comparison]:
    """Cosine against every candidate of each budget, on log perplexity over the seeds both
    finished (within `seeds` when given; at least 2)."""
    keep = None if seeds is None else set(seeds)
    recs = [r for r in as_records(records) if keep is None or r.kind not in kinds or r.seed in keep]
    by_id = {r.trial_id: r for r in recs}
    groups: dict[tuple[int, int], list[Any]] = {}
    for res in profile_results(recs, kinds=kinds):
        groups.setdefault(by_id[res.trial_ids[0]].budget_key, []).append(res)
    out = []
    for key, group in sorted(groups.items()):
        cos = find(group, COSINE)
        if cos is None:
            continue
        for c in sorted((r for r in group if r is not cos), key=lambda r: r.label):
            common = sorted(set(c.ppl) & set(cos.ppl))
            if len(common) < 2:
                continue
            p = pairing([math.log(cos.ppl[s]) for s in common], [math.log(c.ppl[s]) for s in common])
            out.append(Comparison(key, c.label, p))
    return out


__all__ = ["Comparison", "Pairing", "pairing", "record_pairings"]
