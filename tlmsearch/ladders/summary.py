"""A ladder's answer as plain data (`summary.json`): each point's size, compute, verdict and
paired gains; per profile the fitted trend of its gain over uniform and over cosine against
log10(training FLOPs), with intervals, the extrapolation to the target, and the conclusion.

The trend claims are Holm-adjusted over the profiles of one reference (the gains over uniform,
and separately over cosine): a ladder of eight profiles does not find a trend in one of them
by multiplicity alone. Each interval is the profile's own (1 - alpha) interval. A trend that is
not shown is reported as "no trend shown", never as "no trend".
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from tlmsearch.analysis.crossarch import COSINE as COSINE_LABEL
from tlmsearch.analysis.crossarch import PAPER_PPL, PAPER_SOURCE
from tlmsearch.analysis.decision import holm
from tlmsearch.analysis.regime import DECIDE_TOKENS_PER_PARAM
from tlmsearch.ladders.gains import REFERENCES, PointResult
from tlmsearch.ladders.points import PointSize
from tlmsearch.ladders.trend import LadderPoint, Target, Trend, fit_trend

# the paper's point, where it corresponds: its 440M Transformer, cosine 1.5 -> 0.5 over uniform;
# trained at about 66-77 tokens per parameter (the project's facts): 70 is used to place it
PAPER_PARAMS = 440e6
PAPER_TOKENS_PER_PARAM = 70.0


def paper_point() -> dict[str, Any]:
    """The paper's cosine-over-uniform gain at its 440M point, placed at 6 N D FLOPs."""
    log_gain = math.log(PAPER_PPL["uniform"]) - math.log(PAPER_PPL[COSINE_LABEL])
    return {
        "source": PAPER_SOURCE,
        "params": PAPER_PARAMS,
        "tokens_per_param": PAPER_TOKENS_PER_PARAM,
        "compute": 6.0 * PAPER_PARAMS * PAPER_TOKENS_PER_PARAM * PAPER_PARAMS,
        "profile": "cosine",
        "reference": "uniform",
        "log_gain": log_gain,
        "gain": math.expm1(log_gain),
        "how": "6 N D FLOPs at about 70 tokens per parameter (the paper trains at about 66-77): approximate",
    }


def ladder_points(
    name: str, size: PointSize, result: PointResult, profile: str, reference: str, planned_tpp: float
) -> LadderPoint | None:
    g = result.gains.get(profile, {}).get(reference)
    if g is None or not (g.se > 0):
        return None
    return LadderPoint(
        point=name,
        compute=size.compute,
        gain=g.mean,
        se=g.se,
        n=g.n,
        params=float(size.non_embedding),
        tokens_per_param=planned_tpp,
        layers=size.n_layers,
    )


Row = tuple[str, PointSize, PointResult, float]


def arm_groups(rows: Sequence[Row], arm: str) -> tuple[list[list[int]], list[str]]:
    """The groups of points one trend is fitted over, the main one first, and notes on the points
    left out. A depth arm is one group (its points share their parameters, `LadderConfig`). A
    compute arm fits a trend only over points that share depth and head size: the group with the
    most points (then the largest compute) is the ladder's trend, any other group of two or more a
    separate arm, and a point alone in its group is in no trend."""
    if arm == "depth":
        return [list(range(len(rows)))], []
    by: dict[tuple[int, int], list[int]] = {}
    for i, (_, size, _, _) in enumerate(rows):
        by.setdefault((size.n_layers, size.head_dim), []).append(i)
    groups = sorted(by.values(), key=lambda g: (-len(g), -max(rows[i][1].compute for i in g)))
    notes = []
    if len(groups) > 1:
        described = "; ".join(f"{rows[g[0]][1].shape_text()}: {', '.join(rows[i][0] for i in g)}" for g in groups)
        notes.append(
            f"the points differ in depth or head size ({described}): a trend across compute is fitted only over "
            "points that share both, each such group a separate arm; a point alone in its group is in no trend"
        )
    return [g for g in groups if len(g) >= 2], notes


def fit_all(
    rows: Sequence[Row], *, alpha: float, target: Target, arm: str = "compute"
) -> dict[str, dict[str, dict[str, Any]]]:
    """reference -> profile -> the trend of the ladder's main arm as a dict (or why there is none),
    Holm over profiles (`arm_groups`)."""
    groups, _ = arm_groups(rows, arm)
    if not groups:
        shapes = "; ".join(sorted({r[1].shape_text() for r in rows}))
        why = f"no two points share depth and head size ({shapes}): a trend across compute needs two that do"
        profiles = sorted({p for _, _, res, _ in rows for p in res.gains})
        return {ref: {prof: {"trend": None, "why": why} for prof in profiles if prof != ref} for ref in REFERENCES}
    return fit_group([rows[i] for i in groups[0]], alpha=alpha, target=target, axis=arm)


def other_arms(rows: Sequence[Row], *, alpha: float, target: Target) -> list[dict[str, Any]]:
    """A compute ladder's arms besides its main one: each group of points that share depth and head
    size, with its own trends."""
    groups, _ = arm_groups(rows, "compute")
    return [
        {
            "shape": rows[g[0]][1].shape_text(),
            "points": [rows[i][0] for i in g],
            "trends": fit_group([rows[i] for i in g], alpha=alpha, target=target, axis="compute"),
        }
        for g in groups[1:]
    ]


def fit_group(
    rows: Sequence[Row], *, alpha: float, target: Target, axis: str = "compute"
) -> dict[str, dict[str, dict[str, Any]]]:
    """reference -> profile -> the trend over `rows` as a dict (or why there is none), Holm over
    profiles; against log10 compute (with the extrapolation to `target`) or log2 layers."""
    out: dict[str, dict[str, dict[str, Any]]] = {}
    profiles = sorted({p for _, _, res, _ in rows for p in res.gains})
    arm = f"{rows[0][1].shape_text()}: {', '.join(r[0] for r in rows)}" if axis == "compute" else "depth"
    for ref in REFERENCES:
        fits: dict[str, Trend] = {}
        per: dict[str, dict[str, Any]] = {}
        for prof in profiles:
            if prof == ref:
                continue
            pts = [p for n, s, res, t in rows if (p := ladder_points(n, s, res, prof, ref, t)) is not None]
            distinct = {p.layers if axis == "depth" else p.compute for p in pts}
            if len(distinct) < 2:
                flat = [n for n, _, res, _ in rows if (g := res.gains.get(prof, {}).get(ref)) and not g.se > 0]
                why = f"{len(pts)} point(s) with a paired spread: a trend needs 2"
                if flat:
                    why += f"; no spread at {', '.join(flat)} (the same losses as {ref} at every seed: same widths)"
                per[prof] = {"trend": None, "why": why}
                continue
            fits[prof] = fit_trend(pts, alpha=alpha, target=target if axis == "compute" else None, axis=axis)
        tested = {prof: fit for prof, fit in fits.items() if not fit.descriptive}
        adjusted = [float(p) for p in holm([f.p_value for f in tested.values()])] if tested else []
        p_holm = dict(zip(tested, adjusted, strict=True))
        for prof, fit in fits.items():
            p_adj = p_holm.get(prof, math.nan)
            shown = bool(p_adj < alpha)
            text = trend_text(fit, shown, p_adj, len(tested))
            per[prof] = {**fit.to_dict(), "p_holm": p_adj, "shown": shown, "text": text, "arm": arm}
        out[ref] = per
    return out


def trend_text(fit: Trend, shown: bool, p_holm: float, profiles: int) -> str:
    """'+0.0021 [-0.0040, +0.0082] nats per 10x of compute (95 % interval, from 4 points over 101x
    of compute; p 0.31): no trend shown (Holm-adjusted p 0.62 over 3 profiles; ...)'. The interval
    is the profile's own; the claim is Holm-adjusted, so an interval that leaves out zero may still
    show no trend when several profiles are fitted: the text says both. A fit from too few points
    or seeds is descriptive: its interval and p are printed, no trend is claimed either way."""
    s = fit.slope
    level = f"{100 * (1 - fit.alpha):g} % interval"
    p = f"; p {fit.p_value:.2g}" if math.isfinite(fit.p_value) else "; no interval from 2 points"
    head = f"{s.estimate:+.4f} [{s.low:+.4f}, {s.high:+.4f}] {fit.unit} ({level}, {fit.reach()}{p})"
    if fit.descriptive:
        return f"{head}: {fit.descriptive}"
    over = f"Holm-adjusted p {p_holm:.2g} over {profiles} profile{'s' if profiles != 1 else ''}"
    if shown:
        along = "depth" if fit.axis == "depth" else "compute"
        word = f"grows with {along}" if s.estimate > 0 else f"shrinks with {along}"
        return f"{head}: the gain {word} ({over})"
    return f"{head}: no trend shown ({over}; no evidence of a change with scale, which is not evidence of none)"


def conclusion(trends: Mapping[str, Mapping[str, Any]], target: Target, paper: Mapping[str, Any]) -> str:
    """The ladder's answer for cosine over uniform, with its reach and interval."""
    t = trends.get("uniform", {}).get("cosine")
    if not t or not t.get("trend", True) or "slope" not in t:
        why = (t or {}).get("why", "no paired gains of cosine over uniform yet")
        if why.startswith("no two points share"):
            return f"cosine over uniform: no trend across compute ({why})"
        return f"cosine over uniform: no trend yet ({why})"
    if t.get("axis") == "depth":
        return f"cosine over uniform against depth (log2 layers at equal parameters): {t['text']}"
    text = f"cosine over uniform: {t['text']}"
    ext = t.get("extrapolation")
    if ext:
        text += f"; {ext['headline']} - {ext['reach']} (the paper reports {100 * paper['gain']:+.1f} % at 440M)"
    return text


def regime_note(rows: Sequence[tuple[str, PointSize, PointResult, float]]) -> str | None:
    low = [n for n, _, _, tpp in rows if tpp < DECIDE_TOKENS_PER_PARAM]
    if not low:
        return None
    return (
        f"points below {DECIDE_TOKENS_PER_PARAM:g} tokens per parameter ({', '.join(low)}) are about screening or "
        "early training, not where the field decides architecture questions"
    )


def summarize_ladder(
    config: Mapping[str, Any],
    rows: Sequence[tuple[str, PointSize, PointResult, float]],
    *,
    target: Target,
    texts: Mapping[str, str],
    lrs: Mapping[str, float | None] | None = None,
    lr_intervals: Mapping[str, Sequence[float]] | None = None,
    epochs: Mapping[str, float | None] | None = None,
) -> dict[str, Any]:
    """Everything `summary.json` holds. `rows`: (point name, size, result, planned tokens per
    parameter) in the ladder's order; `texts`: point name -> the point as written; `lrs`: each
    point's learning rate, `lr_intervals` its calibration's 95% interval where it has one;
    `epochs`: what each point trained (None: not known yet)."""
    alpha = float(config.get("alpha", 0.05))
    arm = str(config.get("arm", "compute"))
    trends = fit_all(rows, alpha=alpha, target=target, arm=arm)
    arms = other_arms(rows, alpha=alpha, target=target) if arm == "compute" else []
    paper = paper_point()
    points = []
    for name, size, res, tpp in rows:
        points.append(
            {
                "name": name,
                "point": texts.get(name, name),
                "n_layers": size.n_layers,
                "d_model": size.d_model,
                "n_heads": size.n_heads,
                "head_dim": size.head_dim,
                "non_embedding": size.non_embedding,
                "params_total": size.params_total,
                "tokens_per_param": tpp,
                "steps": size.steps,
                "tokens": size.tokens,
                "compute": size.compute,
                "lr": (lrs or {}).get(name),
                "epochs": (epochs or {}).get(name),
                "outcome": res.verdict["outcome"] if res.verdict else None,
                "headline": res.verdict["headline"] if res.verdict else None,
                "best": res.verdict.get("best") if res.verdict else None,  # lowest mean perplexity
                "note": res.note,
                "gains": {p: {r: g.to_dict(alpha) for r, g in by.items()} for p, by in res.gains.items()},
                **({"shapes": res.shapes} if res.shapes else {}),  # the joint architectures' axes per layer
                # the chosen rate's 95% interval (a calibration of paired seeds), when it has one
                **({"lr_interval": list((lr_intervals or {})[name])} if name in (lr_intervals or {}) else {}),
            }
        )
    notes = [n for n in (regime_note(rows),) if n] + arm_groups(rows, arm)[1]
    notes += [f"{p['name']}: {p['note']}" for p in points if p["note"]]
    return {
        "ladder": config.get("name", ""),
        "arch": config.get("arch", ""),
        "alpha": alpha,
        "margin": config.get("margin"),
        "points": points,
        "arm": arm,
        "trends": trends,
        "other_arms": arms,
        "target": {
            "name": target.name,
            "compute": target.compute,
            "params": target.params,
            "tokens_per_param": target.tokens_per_param,
            "how": target.how,
        },
        "paper": paper,
        "conclusion": conclusion(trends, target, paper),
        "notes": notes,
        "config": dict(config),
    }


__all__ = [
    "PAPER_PARAMS",
    "PAPER_TOKENS_PER_PARAM",
    "arm_groups",
    "conclusion",
    "fit_all",
    "fit_group",
    "other_arms",
    "paper_point",
    "summarize_ladder",
]
