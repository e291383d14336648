"""The one-sentence answer of a verdict, for each of the three outcomes.

Every figure in it carries its interval, its seeds and its test, and the confidence level is the
one used (it depends on alpha and on the number of candidates), never a fixed "95%".
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from tlmsearch.core.words import plural
from tlmsearch.profiles.spec import display_name


def pct(x: float) -> str:
    return f"{x:+.2%}" if math.isfinite(x) else ("-inf" if x < 0 else "+inf")


def level(x: float) -> str:
    """0.975 -> '97.5%', 0.95 -> '95%'."""
    return f"{100 * x:.4g}%"


def _tests(alpha: float, m: int, n_seeds: int, method: str) -> str:
    kind = "one-sided t tests" if method == "t" else "BCa bootstrap bounds, Bonferroni"
    over = ("Holm over " if method == "t" else "over ") + plural(m, "candidate")
    return f"{kind} at alpha {alpha:g}, {over}, n={n_seeds} seeds"


def headline(
    outcome: str,
    *,
    margin: float,
    alpha: float,
    m: int,
    n_seeds: int,
    conf: float,
    better: Any,
    clears: bool | None,
    better_result: Any,
    vs_cos: Mapping[str, Any],
    ranked: Sequence[Any],
    cos: Any,
    regret: Any,
    to_decide: int | None,
    max_p_within: float,
    method: str,
    all_within: bool = False,
    ref: str = "cosine",
) -> str:
    """The sentence; `ref` names the reference every candidate is compared with (cosine by default)."""
    mpct = f"{margin:.1%}"
    names = {r.label: getattr(r, "name", r.label) for r in ranked}  # a merged candidate under all its names

    def shown(label: str) -> str:
        return " = ".join(display_name(n) for n in names.get(label, label).split(" = "))

    if m == 0:
        return f"inconclusive: {ref} is the only re-evaluated profile; there is nothing to compare it with"
    tests = _tests(alpha, m, n_seeds, method)
    reg = (
        f"{ref}'s regret {pct(regret.estimate)} [{pct(regret.low)}, {pct(regret.high)}] "
        f"({level(regret.confidence)} simultaneous)"
    )
    if outcome == "better" and better is not None:
        g = better.gain
        verb = "also clears" if clears else "does not clear"
        within = (
            f"; every candidate's gain is also shown below the {mpct} margin: {ref} is within it"
            if all_within and not clears
            else ""
        )
        return (
            f"a better profile than {ref} exists: {shown(better.label)} has {g.estimate:.2%} lower perplexity "
            f"({level(g.confidence)} interval {pct(g.low)} to {pct(g.high)}; {tests}); its lower bound "
            f"{verb} the {mpct} margin{within}{describe_shape(better_result.shape if better_result else {})}"
        )
    if outcome == "near_optimal":
        return (
            f"{ref} is near-optimal within the {mpct} margin: every candidate's perplexity gain over {ref} "
            f"is shown below it ({tests}; largest Holm-adjusted p {max_p_within:.3g}); {reg}"
            if method == "t"
            else f"{ref} is near-optimal within the {mpct} margin: every candidate's perplexity gain over "
            f"{ref} is shown below it ({tests}); {reg}"
        )
    top = next((r for r in ranked if r is not cos), None)
    lead = ""
    if top is not None and top.label in vs_cos:
        g = vs_cos[top.label].gain
        who = (
            f"{ref} leads by mean; the best other candidate, {shown(top.label)},"
            if ranked and ranked[0] is cos
            else f"the best candidate by mean, {shown(top.label)},"
        )
        lead = f"; {who} gains {pct(g.estimate)} [{pct(g.low)}, {pct(g.high)}] ({level(g.confidence)} interval)"
    if to_decide is not None:
        more = f"about {to_decide} seeds per profile would decide it if the spread observed over {n_seeds} seeds holds"
    elif n_seeds < 2:
        more = "one seed gives no spread: run at least 2 seeds (better: `verify` plans them)"
    else:
        more = "no practical number of seeds would decide it if the observed means hold (a gain sits on the margin)"
    return (
        f"inconclusive: no candidate is shown better than {ref}, and not every candidate is shown within "
        f"the {mpct} margin ({tests}){lead}; {reg}; {more}"
    )


def describe_shape(shape: Mapping[str, Any]) -> str:
    """'; its shape: front-load 0.36, non-increasing, best-fit cosine 1.45 -> 0.55 (RMS residual 0.08)'."""
    if not shape or "front_load" not in shape:
        return ""
    text = f"; its shape: front-load {float(shape['front_load']):.2f}"
    if shape.get("monotonicity"):
        text += f", {shape['monotonicity']}"
    if "cosine_start" in shape:
        text += (
            f", best-fit cosine {float(shape['cosine_start']):.2f} -> {float(shape['cosine_end']):.2f}"
            f" (RMS residual {float(shape.get('cosine_distance', math.nan)):.2f})"
        )
    return text
