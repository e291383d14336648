"""A study's answer across architectures (pure): the cross-architecture table, the transfer
matrix, and whether one shape is best everywhere, from verdicts as plain dicts
(`Verdict.to_dict()`), so that the report can rebuild everything from `summary.json`.

- Cross-architecture table: rows are profiles (labels), columns architectures; a cell holds the
  profile's perplexity gain over uniform and over cosine on that architecture, with the
  verdict's intervals (paired by seed, Holm-level intervals against cosine).
- Transfer matrix: row A (the architecture whose verification found the profile best by mean),
  column B (where it is re-trained, seed-paired against cosine on B). The diagonal is A's own
  verification; off-diagonal cells come from the transfer runs.
- The paper's controlled experiment (a 440M Transformer, validation perplexity) beside ours,
  where the profiles correspond. Those numbers are the paper's, at another scale and data.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from tlmsearch.rundir.axes import LAYER_AXES

# Tapered Language Models (arXiv 2606.23670), controlled experiment, 440M Transformer,
# validation perplexity at equal parameters and FLOPs (as summarised in the project's facts)
PAPER_PPL: dict[str, float] = {
    "uniform": 16.28,
    "groups:third=early": 15.96,
    "groups:third=middle": 16.61,
    "groups:third=late": 17.29,
    "cosine:start=1.5,end=0.5": 14.44,
}
PAPER_SOURCE = "Tapered Language Models (arXiv 2606.23670), 440M Transformer, validation perplexity"
COSINE = "cosine:start=1.5,end=0.5"


def paper_gains() -> dict[str, dict[str, float]]:
    """The paper's gains (ppl_reference / ppl_profile - 1) over uniform and over cosine."""
    uni, cos = PAPER_PPL["uniform"], PAPER_PPL[COSINE]
    return {k: {"ppl": v, "vs_uniform": uni / v - 1.0, "vs_cosine": cos / v - 1.0} for k, v in PAPER_PPL.items()}


def _cell(interval: Mapping[str, Any] | None) -> dict[str, float] | None:
    if not interval:
        return None
    return {k: float(interval[k]) for k in ("estimate", "low", "high", "confidence") if k in interval}


def cross_table(verdicts: Mapping[str, Mapping[str, Any]]) -> list[dict[str, Any]]:
    """One row per profile label seen in any architecture's verification: per architecture its
    mean perplexity, seeds and gains over uniform and cosine (None where it was not trained).
    Rows: the named baselines and controls first (by label), then each architecture's own
    search profiles; the paper's figure where the profile corresponds."""
    rows: dict[str, dict[str, Any]] = {}
    for arch, v in verdicts.items():
        for row in v.get("table") or ():
            entry = rows.setdefault(row["label"], {"label": row["label"], "baseline": row.get("baseline"), "cells": {}})
            entry["cells"][arch] = {
                "mean_ppl": row.get("mean_ppl"),
                "n_seeds": row.get("n_seeds"),
                "vs_uniform": _cell(row.get("gain_vs_uniform")),
                "vs_cosine": _cell(row.get("gain_vs_cosine")),
                "widths": list(row.get("widths") or ()),
                **{axis: row[axis] for axis in LAYER_AXES if row.get(axis) is not None},  # a joint model's other axes
            }
    paper = paper_gains()
    out = []
    for label, entry in rows.items():
        entry["paper"] = paper.get(label)
        entry["shared"] = len(entry["cells"]) == len(verdicts)
        out.append(entry)
    return sorted(out, key=lambda e: (not e["shared"], e["label"]))


def best_profiles(verdicts: Mapping[str, Mapping[str, Any]]) -> dict[str, str]:
    """Each architecture's best profile: the verdict's `best` (lowest verified mean loss)."""
    return {arch: str(v["best"]) for arch, v in verdicts.items() if v.get("best")}


def transfer_matrix(
    archs: Sequence[str],
    best: Mapping[str, str],
    own: Mapping[str, Mapping[str, Any]],
    transfer: Mapping[str, Mapping[str, Any]],
) -> list[dict[str, Any]]:
    """Rows: source architecture and its best profile; cells per target architecture: the gain
    of that profile over cosine on the target (interval, seeds, whether shown better or within
    the margin). `own`: the verification verdicts; `transfer`: the transfer verdicts by target."""
    out = []
    for src in archs:
        label = best.get(src)
        cells: dict[str, Any] = {}
        for dst in archs:
            if label is None:
                cells[dst] = None
                continue
            if label == COSINE:
                cells[dst] = {"is_cosine": True}
                continue
            verdict = own.get(dst) if dst == src else transfer.get(dst)
            comp = _comparison(verdict, label)
            cells[dst] = (
                {
                    "gain": _cell(comp["gain"]),
                    "n": comp["n"],
                    "shown_better": comp.get("shown_better"),
                    "within_margin": comp.get("within_margin"),
                    "source": "verification" if dst == src else "transfer",
                }
                if comp
                else None
            )
        out.append({"source": src, "profile": label, "cells": cells})
    return out


def _comparison(verdict: Mapping[str, Any] | None, label: str) -> dict[str, Any] | None:
    for comp in (verdict or {}).get("comparisons") or ():
        if comp.get("label") == label and comp.get("reference", "").startswith("cosine"):
            return dict(comp)
    return None


def one_shape_answer(archs: Sequence[str], matrix: Sequence[Mapping[str, Any]], outcomes: Mapping[str, str]) -> str:
    """Is there one shape best everywhere, and is it cosine? In words, never claiming more than
    the tests showed: a profile is "better everywhere" only when shown better than cosine on
    every architecture; "no evidence of a difference" is never read as "no difference"."""
    everywhere = []
    somewhere = []
    for row in matrix:
        cells = row["cells"]
        if row["profile"] is None or any(c is None for c in cells.values()):
            continue
        if all(c.get("is_cosine") for c in cells.values()):
            continue
        shown = [a for a in archs if cells[a].get("shown_better")]
        if len(shown) == len(archs):
            everywhere.append(row["profile"])
        elif shown:
            somewhere.append(f"{row['profile']} (best on {row['source']}) on {', '.join(shown)}")
    near = [a for a in archs if outcomes.get(a) == "near_optimal"]
    if everywhere:
        head = f"one shape beats cosine on every architecture studied: {', '.join(sorted(set(everywhere)))}"
    elif somewhere:
        head = "no shape is shown better than cosine everywhere; shown better on some: " + "; ".join(somewhere)
    else:
        head = "no architecture's best profile is shown better than cosine on any architecture"
    tail = (
        f"; cosine is shown near-optimal (within the margin) on {', '.join(near)}"
        if near
        else "; cosine is not shown near-optimal on any architecture (absence of a difference is not shown either)"
    )
    undecided = [a for a in archs if outcomes.get(a) == "inconclusive"]
    if undecided:
        tail += f"; inconclusive on {', '.join(undecided)}"
    return head + tail


def fmt_gain(cell: Mapping[str, Any] | None) -> str:
    """'+1.20% [-0.40%, +2.80%]' (or '—')."""
    if not cell or "estimate" not in cell:
        return "—"

    def p(x: float) -> str:
        return f"{x:+.2%}" if math.isfinite(x) else ("-inf" if x < 0 else "+inf")

    return f"{p(cell['estimate'])} [{p(cell['low'])}, {p(cell['high'])}]"
