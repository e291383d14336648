"""The regime a result was taken in, and what that lets it say (design.md, "Metrics").

Every result states its regime: model size (non-embedding parameters), tokens per parameter
(training tokens over non-embedding parameters), epochs over the corpus (training tokens over
the corpus' training tokens), validation tokens and the learning rate. The trainer reports the
first four in every evaluation, so each record's final metrics carry them; records written
before it did are read back from what they hold (tokens / non-embedding parameters, the
validation windows of their config), their epochs unknown.

The thresholds are defined here, once. The field decides architecture questions at
>= `DECIDE_TOKENS_PER_PARAM` (20) tokens per parameter (Crown/Frame/Reverse about 28,
Variable-Width Transformers about 50, the TLM paper about 66-77, DataDecide 100) and screens at
>= `SCREEN_TOKENS_PER_PARAM` (5; the 124M nanoGPT speedrun runs about 5.9). Below 5 a result is
about early training: losses rank how fast a shape starts, not how well it spends its capacity.
A verdict taken below 20 says which of the two it is. Pure Python.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from tlmsearch.core.base import DECIDE_TOKENS_PER_PARAM, SCREEN_TOKENS_PER_PARAM
from tlmsearch.profiles.dof import dof_text, free_widths, space_dof
from tlmsearch.rundir.records import TrialRecord, as_records

DECISION, SCREENING, EARLY, UNKNOWN = "decision", "screening", "early training", "unknown"


def regime_name(tokens_per_param: float) -> str:
    """ "decision" (>= 20), "screening" (5 to 20), "early training" (< 5), "unknown" (NaN)."""
    if not math.isfinite(tokens_per_param):
        return UNKNOWN
    if tokens_per_param >= DECIDE_TOKENS_PER_PARAM:
        return DECISION
    return SCREENING if tokens_per_param >= SCREEN_TOKENS_PER_PARAM else EARLY


def record_values(record: TrialRecord | Mapping[str, Any]) -> dict[str, float]:
    """One record's regime figures (NaN where unknown): non_embedding, tokens_per_param, epochs,
    val_tokens, lr."""
    r = as_records([record])[0]
    non_embedding = r.metric("params_non_embedding")
    tpp = r.metric("tokens_per_param")
    if not math.isfinite(tpp) and non_embedding > 0:  # a record from before the trainer reported it
        tpp = r.metric("tokens") / non_embedding
    val_tokens = r.metric("val_tokens")
    if not math.isfinite(val_tokens) and r.train and r.model:  # then every evaluation used eval_windows
        windows, seq_len = r.train.get("eval_windows"), r.model.get("seq_len")
        if isinstance(windows, int) and isinstance(seq_len, int):
            val_tokens = float(windows * seq_len)
    lr = r.train.get("lr") if r.train else None
    return {
        "non_embedding": non_embedding,
        "tokens_per_param": tpp,
        "epochs": r.metric("epochs"),
        "val_tokens": val_tokens,
        "lr": float(lr) if isinstance(lr, int | float) and not isinstance(lr, bool) else math.nan,
    }


def _span(values: list[float]) -> tuple[float, float]:
    known = [v for v in values if math.isfinite(v)]
    return (min(known), max(known)) if known else (math.nan, math.nan)


def _fmt(low: float, high: float, text: Any) -> str:
    return text(low) if low == high or not math.isfinite(high) else f"{text(low)}-{text(high)}"


def _si(x: float) -> str:
    for scale, unit in ((1e9, "G"), (1e6, "M"), (1e3, "K")):
        if abs(x) >= 0.1 * scale:
            return f"{x / scale:.3g}{unit}"
    return f"{x:.3g}"


@dataclass(frozen=True)
class Regime:
    """The regime of a set of records: each figure as (lowest, highest) over them (equal for the
    records of one budget and one trial length; NaN where unknown)."""

    n_records: int
    non_embedding: tuple[float, float]
    tokens_per_param: tuple[float, float]
    epochs: tuple[float, float]
    val_tokens: tuple[float, float]
    lr: tuple[float, float]
    # the depth of the records' models (None when they differ or do not say) and the search space
    # they were drawn from: the regime states how many ways a profile can differ there (`profiles.dof`)
    n_layers: int | None = None
    space: str | None = None

    @property
    def name(self) -> str:
        """The regime of the shortest training among the records (it bounds what they can say)."""
        return regime_name(self.tokens_per_param[0])

    @property
    def early(self) -> bool:
        """Below the deciding threshold: the result is about screening or early training."""
        return self.name in (SCREENING, EARLY)

    def figures(self) -> str:
        """'0.43M non-embedding parameters, 1.0 tokens per parameter, 0.42 epochs, 4,096 validation
        tokens, lr 0.002', after the depth and its degrees of freedom ('2 layers: 1 free MLP width,
        the knots space 1 degree of freedom; ...') when the records say it."""
        parts = []
        if math.isfinite(self.non_embedding[0]):
            parts.append(f"{_fmt(*self.non_embedding, _si)} non-embedding parameters")
        tpp = self.tokens_per_param
        parts.append(
            f"{_fmt(*tpp, lambda x: f'{x:#.2g}' if x < 10 else f'{x:.3g}')} tokens per parameter"
            if math.isfinite(tpp[0])
            else "tokens per parameter unknown"
        )
        if math.isfinite(self.epochs[0]):
            parts.append(f"{_fmt(*self.epochs, lambda x: f'{x:.2g}')} epochs")
        if math.isfinite(self.val_tokens[0]):
            parts.append(f"{_fmt(*self.val_tokens, lambda x: f'{x:,.0f}')} validation tokens")
        if math.isfinite(self.lr[0]):
            parts.append(f"lr {_fmt(*self.lr, lambda x: f'{x:g}')}")
        text = ", ".join(parts)
        return f"{dof_text(self.space, self.n_layers)}; {text}" if self.n_layers else text

    def meaning(self) -> str:
        """What the regime lets a result say, with the thresholds it was judged against."""
        decide, screen = f"{DECIDE_TOKENS_PER_PARAM:g}", f"{SCREEN_TOKENS_PER_PARAM:g}"
        if self.name == DECISION:
            return f"at or above {decide} tokens per parameter, where the field decides architecture questions"
        if self.name == SCREENING:
            return (
                f"screening regime, {screen}-{decide} tokens per parameter: a screen, not a decision "
                f"(the field decides at >= {decide})"
            )
        if self.name == EARLY:
            return (
                f"early training, below {screen} tokens per parameter: this is about early training (how fast a "
                f"shape starts, not how well it spends its capacity); the field screens at >= {screen} and "
                f"decides at >= {decide}"
            )
        return "records written before they carried their tokens per parameter"

    def clause(self) -> str:
        """The regime as the headline states it: 'regime: <figures> - <meaning>'."""
        return f"regime: {self.figures()} - {self.meaning()}"

    def to_dict(self) -> dict[str, Any]:
        def plain(pair: tuple[float, float]) -> list[float | None]:
            return [v if math.isfinite(v) else None for v in pair]

        return {
            "name": self.name,
            "n_records": self.n_records,
            "non_embedding": plain(self.non_embedding),
            "tokens_per_param": plain(self.tokens_per_param),
            "epochs": plain(self.epochs),
            "val_tokens": plain(self.val_tokens),
            "lr": plain(self.lr),
            "n_layers": self.n_layers,
            "space": self.space,
            "dof": space_dof(self.space, self.n_layers) if self.space and self.n_layers else None,
            "free_widths": free_widths(self.n_layers) if self.n_layers else None,
            "decide_at": DECIDE_TOKENS_PER_PARAM,
            "screen_at": SCREEN_TOKENS_PER_PARAM,
            "text": self.clause(),
        }


def regime_of(records: Iterable[TrialRecord | Mapping[str, Any]], space: str | None = None) -> Regime | None:
    """The regime of `records` (None for none); `space`: the search space they were drawn from."""
    recs = as_records(records)
    values = [record_values(r) for r in recs]
    if not values:
        return None
    depths = {r.budget_key[0] for r in recs if r.widths}

    def span(key: str) -> tuple[float, float]:
        return _span([v[key] for v in values])

    return Regime(
        n_records=len(values),
        non_embedding=span("non_embedding"),
        tokens_per_param=span("tokens_per_param"),
        epochs=span("epochs"),
        val_tokens=span("val_tokens"),
        lr=span("lr"),
        n_layers=depths.pop() if len(depths) == 1 else None,
        space=space or None,
    )


__all__ = [
    "DECIDE_TOKENS_PER_PARAM",
    "SCREEN_TOKENS_PER_PARAM",
    "Regime",
    "record_values",
    "regime_name",
    "regime_of",
]
