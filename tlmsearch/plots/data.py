"""Plot data: what each figure of a study draws, as plain NamedTuples (tested without plotly).

Every `*_data` function takes a `Study` (anything with `.records`) or a list of trial records
(`TrialRecord`s or their dicts); `tlmsearch.plots.figures` draws them. The Pareto data
(`pareto_data`) is the analysis's (`tlmsearch.analysis.front`): `summary.json` lists it too.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, NamedTuple

from tlmsearch.analysis.collect import baseline_name, label, ranked
from tlmsearch.analysis.headline import level
from tlmsearch.profiles import Budget, ProfileSpec
from tlmsearch.profiles.spec import display_name
from tlmsearch.rundir.records import SEARCH_KINDS, as_records, finished

if TYPE_CHECKING:  # pragma: no cover
    from tlmsearch.analysis.verdict import Verdict


class WidthSeries(NamedTuple):
    label: str
    role: str  # "best" | "cosine" | "uniform"
    widths: list[int]
    value: float  # the record's final metric (nan for a computed reference)
    # the other axes of a joint architecture (`joint` profiles), per layer; () at the preset's
    heads: tuple[int, ...] = ()  # query heads
    blocks: tuple[int, ...] = ()  # block (residual) widths
    kv: tuple[int, ...] = ()  # key/value heads where they differ from the query heads (grouped-query)


def model_axes(model: Mapping[str, Any] | None) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """(query heads, block widths) per layer of a record's `model` dict, each () where the model
    keeps the preset's (no `attn_heads` / `block_widths`); a block's heads default to its width
    over the head size, as `ModelConfig.query_heads` says."""
    model = model or {}
    blocks = tuple(int(w) for w in model.get("block_widths") or ())
    heads = tuple(int(h) for h in model.get("attn_heads") or ())
    if blocks and not heads:
        head_dim = int(model["d_model"]) // int(model["n_heads"])
        heads = tuple(w // head_dim for w in blocks)
    return heads, blocks


class WidthsData(NamedTuple):
    layers: list[int]
    series: list[WidthSeries]


def widths_data(
    source: Any, k: int = 3, metric_name: str = "val_loss", kinds: Sequence[str] = SEARCH_KINDS
) -> WidthsData:
    """The `k` best finished trials' widths, with cosine and uniform of the same budget."""
    recs = ranked(as_records(source), metric_name, kinds)
    series: list[WidthSeries] = []
    seen: set[tuple[tuple[int, ...], ...]] = set()
    for r in recs:
        if len([s for s in series if s.role == "best"]) >= k:
            break
        heads, blocks = model_axes(r.model)
        kv = tuple(int(g) for g in (r.model or {}).get("kv_heads") or ())  # () = as the query heads
        key = (tuple(r.widths), heads, blocks, kv)  # joint architectures with one MLP shape stay apart
        if key in seen or baseline_name(r) in ("cosine", "uniform"):
            continue
        seen.add(key)
        value = r.metric(metric_name)
        series.append(WidthSeries(f"#{r.trial_id} {label(r)}", "best", list(r.widths), value, heads, blocks, kv))
    budget = recs[0].budget if recs else None
    for name in ("cosine", "uniform"):
        rec = next((r for r in recs if baseline_name(r) == name), None)
        if rec is not None:
            series.append(WidthSeries(name, name, list(rec.widths), rec.metric(metric_name)))
        elif budget:
            series.append(WidthSeries(name, name, _baseline_widths(name, budget), math.nan))
    n = max((len(s.widths) for s in series), default=0)
    return WidthsData(list(range(n)), series)


def _baseline_widths(name: str, budget: dict[str, Any]) -> list[int]:
    return list(ProfileSpec(family=name).widths(Budget.from_dict(budget)))


class Curve(NamedTuple):
    trial_id: str
    label: str
    status: str
    kind: str
    steps: list[float]
    values: list[float]

    @property
    def stopped(self) -> bool:
        """Ended before its last step (ASHA stopped it, or it failed)."""
        return self.status != "complete"

    @property
    def mode(self) -> str:
        """How it is drawn, so that every curve shows: a single evaluation (a trial ASHA
        stopped at its first rung) as a marker, a stopped trial's few points as a line with
        markers, a complete trial as a line."""
        if len(self.steps) == 1:
            return "markers"
        return "lines+markers" if self.stopped else "lines"


def curves_data(source: Any, metric_name: str = "val_loss", kinds: Sequence[str] = SEARCH_KINDS) -> list[Curve]:
    """One curve per trial of `kinds` that reported at least one evaluation."""
    out = []
    for r in as_records(source):
        if r.kind not in kinds:
            continue
        raw = [(c.get("step"), c.get(metric_name)) for c in r.curve]
        pts = [(float(s), float(v)) for s, v in raw if s is not None and v is not None]
        if pts:
            out.append(
                Curve(
                    r.trial_id,
                    label(r),
                    r.status,
                    r.kind,
                    [p[0] for p in pts],
                    [p[1] for p in pts],
                )
            )
    return out


class ShapePoint(NamedTuple):
    trial_id: str
    front_load: float
    value: float
    label: str
    baseline: str | None


def front_load_data(
    source: Any, metric_name: str = "val_loss", kinds: Sequence[str] = SEARCH_KINDS
) -> list[ShapePoint]:
    out = []
    for r in finished(as_records(source), kinds=kinds, metric_name=metric_name):
        fl = r.shape.get("front_load")
        if fl is not None:
            out.append(ShapePoint(r.trial_id, float(fl), r.metric(metric_name), label(r), baseline_name(r)))
    return out


class ParallelData(NamedTuple):
    names: list[str]  # sampled parameter names (numeric ones only)
    columns: list[list[float]]  # one column per name, nan where a trial lacks the parameter
    color: list[float]  # the metric
    metric_name: str

    @property
    def informative(self) -> bool:
        """Whether the figure shows anything: at least two finished sampled trials and at least
        one parameter that differs between them (else it is one line, or lines on top of
        each other, and the report leaves it out)."""
        if len(self.color) < 2 or not self.names:
            return False
        return any(len({v for v in col if math.isfinite(v)}) > 1 for col in self.columns)


def parallel_data(source: Any, metric_name: str = "val_loss") -> ParallelData:
    recs = [r for r in finished(as_records(source), kinds=("sampled",), metric_name=metric_name) if r.params]
    names = sorted({k for r in recs for k, v in r.params.items() if _is_number(v)})
    columns = [[float(r.params[n]) if _is_number(r.params.get(n)) else math.nan for r in recs] for n in names]
    return ParallelData(names, columns, [r.metric(metric_name) for r in recs], metric_name)


def _is_number(v: Any) -> bool:
    return isinstance(v, int | float) and not isinstance(v, bool)


class TableData(NamedTuple):
    header: list[str]
    rows: list[list[str]]


def _ci(iv: dict[str, Any] | None) -> str:
    if not iv:
        return ""
    return f"{iv['estimate']:+.2%} [{iv['low']:+.2%}, {iv['high']:+.2%}]"


def verdict_table_data(verdicts: Iterable[Verdict]) -> TableData:
    verdicts = list(verdicts)
    ci = ", ".join(sorted({level(v.confidence) for v in verdicts})) or "-"
    header = [
        "group",
        "rank",
        "profile",
        "seeds",
        "mean ppl",
        f"gain vs cosine ({ci} CI)",
        f"gain vs uniform ({ci} CI)",
        "front-load",
    ]
    rows = []
    for v in verdicts:
        for row in v.table:
            fl = row.get("front_load")
            rows.append(
                [
                    v.group,
                    str(row["rank"]),
                    display_name(row["label"]),
                    str(row["n_seeds"]),
                    f"{row['mean_ppl']:.3f}",
                    _ci(row.get("gain_vs_cosine")),
                    _ci(row.get("gain_vs_uniform")),
                    "" if fl is None else f"{fl:.3f}",
                ]
            )
    return TableData(header, rows)
