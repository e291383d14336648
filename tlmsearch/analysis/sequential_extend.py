"""Alpha spent once: what a verify may do with a verification its run already holds (pure).

`verify` reads the run's verify.json before anything trains and asks `continued` which design
its deciding seeds run under:

- no finished verification at this trial length (or another length: another question): the
  design asked for, as always;
- the same request again (a re-run or a resume): the recorded design, so nothing is tested anew;
- more seeds than a finished verification decided on (a re-planned `--seeds`/`--looks`, a larger
  `--max-seeds` under `--seeds auto`, a fixed plan with more seeds): a **new stage** of one
  history (`sequential_stages`). The earlier looks keep their boundaries and decisions; the new
  looks (the seeds beyond the last one, continuing the same seeds) spend only the alpha the
  history has not spent, so `--alpha` must exceed what it spent, and the verdict's claims are at
  the whole history's level. Refused in one line when that is not so (the default: the same
  alpha again, which would spend it twice), when the seeds do not continue the recorded ones,
  when the margin differs from the one declared before the first look, or with the bootstrap
  interval (the stages are t boundaries).

The reference every candidate is compared with (cosine 1.5 -> 0.5, or `--reference`) is declared
before the first look too: once a verification has decided, another reference is refused, on more
seeds or on the same ones (its hypotheses would be tested again at full alpha).

A fixed verification (`--seeds N`, or a pilot's planned seeds) is a one-look design at its alpha:
its extension is the same kind of history, decided sequentially from then on.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from tlmsearch.analysis.sequential import Design, Stage
from tlmsearch.analysis.verdict import reference_name, same_reference
from tlmsearch.errors import ConfigError


def recorded(doc: Mapping[str, Any]) -> tuple[Design, list[int]] | None:
    """The design and seeds verify.json records (a fixed plan: one look at its decision seeds,
    finished only), or None when it records no verification that decided anything."""
    seq = doc.get("sequential")
    if seq:
        return Design.from_dict(seq["design"]), [int(s) for s in seq["seeds"]]
    seeds = [int(s) for s in doc.get("decision_seeds") or []]
    if doc.get("complete") and len(seeds) >= 2:  # files written before the levels were recorded: the defaults
        design = Design(
            looks=(len(seeds),), margin=float(doc.get("margin") or 0.01), alpha=float(doc.get("alpha") or 0.05)
        )
        return design, seeds
    return None


def spent(doc: Mapping[str, Any]) -> tuple[tuple[Stage, ...], tuple[int, ...]]:
    """The finished stages of verify.json's history and their looks: every stage of a complete
    verification, the earlier stages only of one still training."""
    rec = recorded(doc)
    if rec is None:
        return (), ()
    design, _ = rec
    stages = design.stages
    if doc.get("complete"):
        stages = (*stages, Stage(end=design.max_seeds, alpha=design.alpha, spending=_stage_spending(design)))
    if not stages:
        return (), ()
    end = stages[-1].end
    return stages, tuple(n for n in design.looks if n <= end)


def _stage_spending(design: Design) -> str:
    return design.spending if design.spending in ("obf", "pocock") else "obf"


def _same(a: Design, b: Design) -> bool:
    return a.to_dict() == b.to_dict()


def continued(
    doc: Mapping[str, Any],
    request: Design,
    seeds: Sequence[int],
    *,
    run: str,
    method: str = "t",
    reference: str | None = None,
) -> tuple[Design, list[int]]:
    """The design (and its deciding seeds in order) this verify runs under, given the run's
    verify.json `doc` at the same trial length ({} when none): `request` itself, the recorded
    design (the same request again), or `request`'s looks beyond the history as a new stage of
    it. Raises `ConfigError` (one line: why, and what to do) when an extension cannot be
    accounted for; `reference`: the profile text this verify compares with, None: cosine)."""
    seeds = list(seeds)
    rec = recorded(doc)
    if rec is None:
        return request, seeds
    stages, looks = spent(doc)  # what the history decided (nothing yet: no stage)
    if stages:
        _check_reference(doc.get("reference"), reference, run)
    design, rec_seeds = rec
    earlier = design.stages
    cut = earlier[-1].end if earlier else 0
    again: Design | None = request
    if earlier:  # the request as the recorded history's last stage would have it
        later = tuple(n for n in request.looks if n > cut)
        again = None
        if later:
            again = (
                Design(
                    looks=tuple(n for n in design.looks if n <= cut) + later,
                    margin=request.margin,
                    alpha=request.alpha,
                    spending=request.spending,
                    stages=earlier,
                )
                if request.alpha > earlier[-1].alpha
                else None
            )
    if again is not None and _same(again, design) and seeds[: design.max_seeds] == rec_seeds[: design.max_seeds]:
        return design, rec_seeds  # the same request: a re-run or a resume tests nothing new
    if not stages:
        return request, seeds  # an unfinished first verification: nothing decided to account for
    end, used = stages[-1].end, stages[-1].alpha
    span = f"seeds {rec_seeds[0]}..{rec_seeds[end - 1]}"
    where = f"{run}'s verification decided on {end} seeds per profile ({span}; looks at {', '.join(map(str, looks))})"
    if method != "t":
        raise ConfigError(
            f"verify: {where}; extending it is a new stage of t boundaries, so it needs --interval t, not {method}"
        )
    if abs(request.margin - design.margin) > 1e-12:
        raise ConfigError(
            f"verify: {where} against the margin {design.margin:g} declared before its first look; an "
            f"extension keeps it (--margin {design.margin:g}), not {request.margin:g}"
        )
    if seeds[:end] != rec_seeds[:end]:
        raise ConfigError(
            f"verify: {where}; these deciding seeds ({seeds[0]}..{seeds[-1]}) do not continue them, so the "
            "same candidates would be tested again on other seeds at full alpha; keep the recorded first seed "
            "(the same --seed / pilot) to extend it as a new stage"
        )
    new = tuple(n for n in request.looks if n > end)
    if not new:
        raise ConfigError(
            f"verify: {where}; this request asks for no seeds beyond them ({', '.join(map(str, request.looks))}), "
            "so it would only test the same seeds again; ask for more seeds (--seeds / --max-seeds) to extend it, "
            f"or read its verdict as it stands: tlmsearch report {run}"
        )
    if request.alpha <= used + 1e-12:
        more = round(2.0 * used, 6)
        raise ConfigError(
            f"verify: {where} and spent alpha {used:g} by its last look; testing the same candidates again on "
            f"more seeds at alpha {request.alpha:g} would spend it twice. Extend it as a new stage that spends "
            f"only alpha not yet spent: give the whole history a level above {used:g} (e.g. --alpha {more:g}: "
            f"the new looks spend {more - used:g} more and the verdict says the history spent {more:g}), or "
            f"read its verdict as it stands: tlmsearch report {run}"
        )
    history = Design(
        looks=looks + new,
        margin=design.margin,
        alpha=request.alpha,
        spending=request.spending if request.spending in ("obf", "pocock") else "obf",
        calibrate=request.calibrate,
        stages=stages,
    )
    return history, seeds


def _check_reference(old: str | None, reference: str | None, run: str) -> None:
    """Refuse another reference than `old`, the one a decided verification compared with."""
    if same_reference(old, reference):
        return
    keep = f"--reference {old!r}" if old else "no --reference (cosine 1.5 -> 0.5)"
    raise ConfigError(
        f"verify: {run}'s verification decided against {reference_name(old)}, the reference declared before its "
        f"first look; comparing its candidates with {reference_name(reference)} instead would test them again "
        f"at full alpha. Keep its reference ({keep}) to re-run or extend it, or read its verdict as it stands: "
        f"tlmsearch report {run}"
    )


def decided(doc: Mapping[str, Any]) -> bool:
    """Whether verify.json records a finished verification (whose alpha is spent)."""
    return bool(doc.get("complete")) and recorded(doc) is not None


def history_line(doc: Mapping[str, Any]) -> str | None:
    """What verify.json says the verification's history spent, for status and the report:
    'alpha spent by the whole history: 0.1 (extended after its last look as a new stage: ...)'
    or '... 0.05 (one verification; more seeds later are a new stage that needs more alpha)';
    None before a finished verification."""
    seq = doc.get("sequential") or {}
    try:
        if not decided(doc):
            return None
    except (ConfigError, KeyError, TypeError, ValueError):  # a file damaged by hand: nothing to say
        return None
    spent_alpha = seq.get("alpha_spent") or doc.get("alpha") or 0.05
    how = seq.get("extension") or (
        "one verification; more seeds later are a new stage that needs more alpha (verify --alpha above it)"
    )
    return f"alpha spent by the whole history: {float(spent_alpha):g} ({how})"


__all__ = ["continued", "decided", "history_line", "recorded", "spent"]
