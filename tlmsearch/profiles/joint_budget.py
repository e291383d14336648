"""One exact budget over MLP and attention width: per-layer heads, MLP widths solved to match.

A budget (`tlmsearch.profiles.Budget`) fixes the uniform model: every layer at the preset's
heads and `base_width` MLP units. A joint architecture also moves attention width layer by
layer (query heads H_l and key/value heads G_l, `ModelConfig.attn_heads` / `kv_heads`). Its
attention then holds Δ more (or fewer) non-embedding parameters than the uniform model's, and
the MLPs give (or take) exactly Δ back:

    Δ = non_embedding(heads, uniform MLP) - non_embedding(uniform)     (`models.counts`, any family)
    Σ_l f_l = n_layers * base_width - Δ / (3 d)                        (SwiGLU: 3 d per hidden unit)

and the MLP widths are the profile's shape projected onto that total with the budget's rules
(multiples of `multiple_of` within [min_width, max_width], water-filling and largest remainder:
`profiles.project_to_total`). So every joint architecture of a budget has exactly the uniform
model's non-embedding parameters. That is possible only when Δ is a whole number of MLP steps,
a multiple of 3 d multiple_of, and the MLPs can still hold the rest; `attention_delta`,
`mlp_units` and `is_feasible` say which head choices are, and `joint_config` refuses the others
in one line. Pure: integers in, integers out (no torch).

Block width (`ModelConfig.block_widths`, the Transformer and Gated Attention): block l's MLP
unit then costs 3 w_l parameters, not 3 d, so the MLPs must hold a weighted total,

    Σ_l w_l f_l = (non_embedding(uniform) - other) / 3        other: everything but the MLPs

with w_l = D a_l (whole heads of size D) and f_l = m k_l (m = multiple_of): Σ_l a_l k_l = N, an
integer equation. N must be whole (the rest a multiple of 3 D m) and reachable by integers k_l
within the budget's usable widths; reachability is decided exactly (sets of reachable sums,
layer by layer, as bit sets), and the widths are the shape `raw_widths` water-filled onto the
weighted total (x_l = clip(λ r_l, lo, hi), Σ a_l x_l = N) and rounded narrowest block first,
each layer taking the reachable integer nearest its target plus the rounding error carried so
far (so the error never accumulates), the widest closing the sum. Choices no widths can balance
are refused in one line. Without block widths the path above is unchanged.

Equal FLOPs (`hold="flops"`): the same solve holds the training FLOPs per token of the uniform
model (`counts.flops_per_token`, forward + backward: an MLP unit of block l costs 18 w_l FLOPs
per token) instead of its parameters, for per-layer heads in every family whose FLOPs are linear
in the MLP widths and for block widths where the family builds them. Attention FLOPs grow with
the sequence length (T² scores) and parameters do not, so the two budgets trade differently: a
head choice that balances one generally does not balance the other, and the other quantity
drifts (parameters under `hold="flops"`, FLOPs under `hold="params"`). Hope-attention's fast CMS
levels add FLOPs that are not linear in a layer's MLP width (its levels' widths are rounded
shares), so it refuses `hold="flops"` in one line.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence

from tlmsearch.core.architectures import architecture
from tlmsearch.core.base import ModelConfig
from tlmsearch.errors import ConfigError
from tlmsearch.models.counts import BACKWARD_FACTOR, block_width, count_params, forward_flops
from tlmsearch.profiles.budget import Budget, project_to_total

__all__ = [
    "HOLDS",
    "attention_delta",
    "held_quantity",
    "holds_budget",
    "is_feasible",
    "joint_config",
    "mlp_step",
    "mlp_units",
    "resolve_joint",
    "weighted_widths",
]

HOLDS = ("params", "flops")  # what a joint budget holds equal to the uniform model
SNAP_RADIUS = 2  # whole heads each layer may move away from its rounded target to balance the budget
SNAP_KEEP = 4  # head choices kept per residue while snapping: tried in order when one cannot be held


def _check_uniform(uniform: ModelConfig, budget: Budget) -> None:
    if not uniform.uniform_attention or uniform.mlp_widths != budget.uniform():
        raise ConfigError(
            "the reference of a joint budget must be the budget's uniform model "
            f"(mlp_widths {budget.n_layers} x {budget.base_width}, no attn_heads or kv_heads)"
        )


def _with_heads(
    uniform: ModelConfig,
    attn_heads: Sequence[int],
    kv_heads: Sequence[int],
    widths: Sequence[int],
    block_widths: Sequence[int] = (),
) -> ModelConfig:
    return uniform.replace(
        attn_heads=tuple(attn_heads),
        kv_heads=tuple(kv_heads),
        mlp_widths=tuple(widths),
        block_widths=tuple(block_widths),
    )


def mlp_step(uniform: ModelConfig, budget: Budget) -> int:
    """Parameters of the smallest change of the MLPs' total: 3 d multiple_of."""
    return 3 * uniform.d_model * budget.multiple_of


def attention_delta(uniform: ModelConfig, attn_heads: Sequence[int], kv_heads: Sequence[int] = ()) -> int:
    """Non-embedding parameters that per-layer heads add to `uniform` (negative: remove), MLPs
    unchanged: the family's own attention terms (projections, gates, norms) through its spec."""
    return _delta(uniform, _with_heads(uniform, attn_heads, kv_heads, uniform.mlp_widths))


def _delta(uniform: ModelConfig, moved: ModelConfig) -> int:
    return count_params(moved).non_embedding - count_params(uniform).non_embedding


def _units(uniform: ModelConfig, budget: Budget, delta: int) -> int | None:
    if delta % mlp_step(uniform, budget):
        return None
    units = budget.total - delta // (3 * uniform.d_model)
    return units if budget.n_layers * budget.lo <= units <= budget.n_layers * budget.hi else None


def mlp_units(
    uniform: ModelConfig, budget: Budget, attn_heads: Sequence[int], kv_heads: Sequence[int] = ()
) -> int | None:
    """MLP hidden units that make the heads' model exactly as large as `uniform`, or None when
    none can: Δ not a multiple of 3 d multiple_of, or a total the budget's widths cannot hold."""
    _check_uniform(uniform, budget)
    return _units(uniform, budget, attention_delta(uniform, attn_heads, kv_heads))


def is_feasible(
    uniform: ModelConfig,
    budget: Budget,
    attn_heads: Sequence[int],
    kv_heads: Sequence[int] = (),
    block_widths: Sequence[int] = (),
    *,
    hold: str = "params",
) -> bool:
    """Whether MLP widths of `budget` can balance these heads and block widths exactly."""
    try:
        joint_config(uniform, budget, [1.0] * budget.n_layers, attn_heads, kv_heads, block_widths, hold=hold)
    except ConfigError:
        return False
    return True


def joint_config(
    uniform: ModelConfig,
    budget: Budget,
    raw_widths: Sequence[float],
    attn_heads: Sequence[int],
    kv_heads: Sequence[int] = (),
    block_widths: Sequence[int] = (),
    *,
    hold: str = "params",
) -> ModelConfig:
    """The model with per-layer `attn_heads` / `kv_heads` / `block_widths` (() = uniform) and MLP
    widths of the shape `raw_widths` (relative, any scale) holding exactly the non-embedding
    parameters (`hold="params"`) or the training FLOPs per token (`hold="flops"`) of `uniform`,
    the budget's uniform model; a ConfigError in one line when no widths can."""
    _check_uniform(uniform, budget)
    if hold not in HOLDS:
        raise ConfigError(f"hold={hold!r} is not a joint budget; choose one of: {', '.join(HOLDS)}")
    # the heads and block widths together (heads written out that follow the widths become ())
    probe = _with_heads(uniform, attn_heads, kv_heads, uniform.mlp_widths, block_widths)
    if hold == "params" and not probe.block_widths:
        return _heads_only(uniform, budget, raw_widths, probe)
    if hold == "flops":
        _check_flops_linear(probe)
    per_unit = _mlp_cost(probe, hold)  # the held quantity per MLP unit of a w-wide block: per_unit * w
    rest = held_quantity(uniform, hold) - (held_quantity(probe, hold) - per_unit * _weighted_units(probe))
    d_h, m = probe.head_dim, budget.multiple_of
    step = per_unit * d_h * m
    what = "non-embedding parameters" if hold == "params" else "training FLOPs per sequence"
    choice = (
        f"block_widths={list(probe.block_widths) or 'uniform'}, attn_heads={list(probe.attn_heads) or 'default'}, "
        f"kv_heads={list(probe.kv_heads) or 'as attn_heads'} leave {rest:,} {what} for the MLPs"
    )
    if rest % step:
        raise ConfigError(
            f"{choice}, not a multiple of {per_unit:,} x head_dim x multiple_of = {step:,}: no MLP widths of the "
            "budget balance them exactly; choose other widths or heads"
        )
    weights = [block_width(probe, layer) // d_h for layer in range(probe.n_layers)]
    units = weighted_widths(raw_widths, weights, budget, rest // step)
    if units is None:
        raise ConfigError(
            f"{choice}: no MLP widths in multiples of {m} within [{budget.lo:,}, {budget.hi:,}] make "
            f"Σ w_l f_l = {rest // per_unit:,} exactly; choose other widths or heads"
        )
    return probe.replace(mlp_widths=tuple(m * k for k in units))


def _heads_only(uniform: ModelConfig, budget: Budget, raw_widths: Sequence[float], probe: ModelConfig) -> ModelConfig:
    """Per-layer heads at constant width, parameters held: Σ f_l from the heads' Δ."""
    delta = _delta(uniform, probe)
    units = _units(uniform, budget, delta)
    if units is None:
        step = mlp_step(uniform, budget)
        reason = (
            f"is not a multiple of 3 x d_model x multiple_of = {step:,}"
            if delta % step
            else f"leaves {budget.total - delta // (3 * uniform.d_model):,} MLP units, outside "
            f"[{budget.n_layers * budget.lo:,}, {budget.n_layers * budget.hi:,}]"
        )
        raise ConfigError(
            f"attn_heads={list(probe.attn_heads) or 'uniform'}, kv_heads={list(probe.kv_heads) or 'as attn_heads'} "
            f"change the non-embedding parameters by {delta:+,}, which {reason}: "
            "no MLP widths of the budget balance them exactly; choose other heads"
        )
    return probe.replace(mlp_widths=project_to_total(raw_widths, budget, units))


def holds_budget(model: ModelConfig, budget: Budget, hold: str = "params") -> bool:
    """Whether `model` (a joint architecture, or any model of `budget`'s shape) has MLP widths the
    budget allows (multiples of `multiple_of` within its bounds) and holds exactly what the
    budget's uniform model holds (`hold`: its non-embedding parameters or training FLOPs): what
    every architecture a joint profile resolves to on that budget satisfies."""
    if hold not in HOLDS:
        raise ConfigError(f"hold={hold!r} is not a joint budget; choose one of: {', '.join(HOLDS)}")
    m, widths = budget.multiple_of, model.mlp_widths
    if len(widths) != budget.n_layers or any(w % m or not budget.lo <= w <= budget.hi for w in widths):
        return False
    uniform = model.replace(attn_heads=(), kv_heads=(), block_widths=(), mlp_widths=budget.uniform())
    return held_quantity(model, hold) == held_quantity(uniform, hold)


def held_quantity(cfg: ModelConfig, hold: str = "params") -> int:
    """What a joint budget holds equal: non-embedding parameters, or training FLOPs per sequence
    of `seq_len` tokens ((1 + backward) x forward - frozen, `counts`; per token: / seq_len)."""
    if hold == "params":
        return count_params(cfg).non_embedding
    spec = architecture(cfg.arch)
    frozen = sum(spec.frozen_flops(cfg, layer) for layer in range(cfg.n_layers))
    return round((1 + BACKWARD_FACTOR) * forward_flops(cfg) - frozen)


def _mlp_cost(cfg: ModelConfig, hold: str) -> int:
    """The held quantity of one MLP hidden unit in a 1-wide block: 3 parameters (SwiGLU), or
    3 x 2 T x 3 training FLOPs per sequence."""
    return 3 if hold == "params" else (1 + BACKWARD_FACTOR) * 2 * cfg.seq_len * 3


def _weighted_units(cfg: ModelConfig) -> int:
    return sum(block_width(cfg, layer) * f for layer, f in enumerate(cfg.mlp_widths))


def _check_flops_linear(cfg: ModelConfig) -> None:
    """`hold="flops"` needs each block's FLOPs other than the MLP read to ignore the MLP widths."""
    spec = architecture(cfg.arch)
    # two uniform widths the family accepts: the narrowest of `cfg` and one 4096 wider
    low = min(cfg.mlp_widths)
    narrow, wide = (cfg.replace(mlp_widths=(w,) * cfg.n_layers) for w in (low, low + 4096))
    if any(spec.block_flops(narrow, layer) != spec.block_flops(wide, layer) for layer in range(cfg.n_layers)):
        raise ConfigError(
            f"hold='flops' needs FLOPs linear in the MLP widths, and arch={cfg.arch!r} adds FLOPs that depend on "
            "them otherwise (test-time-updated MLP levels); use hold='params'"
        )


def weighted_widths(raw: Sequence[float], weights: Sequence[int], budget: Budget, total: int) -> tuple[int, ...] | None:
    """Integers k_l (MLP widths in units of `multiple_of`) within the budget's usable widths with
    Σ weights_l k_l = `total` exactly, shaped like `raw`; None when no such integers exist.

    Reachability is decided exactly first (the sums layers can make, as bit sets). Targets:
    x_l = clip(λ raw_l, lo, hi) with Σ weights_l x_l = total (bisection on log λ). The widths are
    then the integers nearest the targets, Σ weights_l (k_l - x_l)² smallest, found by dynamic
    programming over the partial sums with each k_l within max(weights) of x_l (enough for every
    residue; the whole usable range if that window has no solution); ties go to the first found."""
    n, m = budget.n_layers, budget.multiple_of
    if len(raw) != n or len(weights) != n:
        raise ConfigError(f"profile has {len(raw)} widths and {len(weights)} block widths; the budget has n_layers={n}")
    values = [float(r) for r in raw]
    if any(not math.isfinite(v) or v < 0 for v in values) or sum(values) <= 0:
        raise ConfigError(f"relative widths must be finite, >= 0 and not all 0; got {list(raw)}")
    lo, hi = budget.lo // m, budget.hi // m
    if total < 0 or not sum(weights) * lo <= total <= sum(weights) * hi:
        return None
    mask, reach = (1 << (total + 1)) - 1, 1  # bit s set: the layers so far can make the sum s
    for a in weights:
        acc = 0
        for k in range(lo, hi + 1):
            acc |= reach << (a * k)
        reach = acc & mask
    if not reach >> total & 1:
        return None
    targets = _weighted_fill(values, weights, total, lo, hi)
    window = max(weights)
    near = [range(max(lo, math.floor(x) - window), min(hi, math.ceil(x) + window) + 1) for x in targets]
    found = _nearest(targets, weights, total, near)
    return found if found is not None else _nearest(targets, weights, total, [range(lo, hi + 1)] * n)


def _nearest(
    targets: Sequence[float], weights: Sequence[int], total: int, choices: Sequence[range]
) -> tuple[int, ...] | None:
    """argmin Σ w_l (k_l - x_l)² over k_l in choices[l] with Σ w_l k_l = total (None if none)."""
    n = len(weights)
    # bounds of what the layers after l can still add, to drop partial sums that cannot finish
    low_after, high_after = [0] * (n + 1), [0] * (n + 1)
    for layer in reversed(range(n)):
        low_after[layer] = low_after[layer + 1] + weights[layer] * choices[layer].start
        high_after[layer] = high_after[layer + 1] + weights[layer] * (choices[layer].stop - 1)
    states: dict[int, float] = {0: 0.0}
    back: list[dict[int, tuple[int, int]]] = []
    for layer in range(n):
        a, x, ks = weights[layer], targets[layer], choices[layer]
        k0, k1 = ks.start, ks.stop - 1
        penalty = [a * (k - x) ** 2 for k in ks]
        high, low = high_after[layer + 1] - total, total - low_after[layer + 1]
        nxt: dict[int, float] = {}
        came: dict[int, tuple[int, int]] = {}
        get = nxt.get
        for s, cost in states.items():
            # the k that leave a sum the later layers can still bring to `total`, in order
            first = max(k0, -((s + high) // a))
            last = min(k1, (low - s) // a)
            t = s + a * first
            for k in range(first, last + 1):
                c = cost + penalty[k - k0]
                old = get(t)
                if old is None or c < old:
                    nxt[t], came[t] = c, (s, k)
                t += a
        states = nxt
        back.append(came)
    if total not in states:
        return None
    out, t = [0] * n, total
    for layer in reversed(range(n)):
        t, out[layer] = back[layer][t]
    return tuple(out)


def _weighted_fill(raw: list[float], weights: Sequence[int], total: int, lo: int, hi: int) -> list[float]:
    """clip(λ raw_l, lo, hi) with Σ weights_l clip(...) = total (λ by bisection on log λ; zero
    widths stay at lo)."""
    logs = [math.log(r) if r > 0 else -math.inf for r in raw]

    def values(t: float) -> list[float]:
        return [lo if lg == -math.inf else min(hi, max(lo, math.exp(min(t + lg, 700.0)))) for lg in logs]

    finite = [lg for lg in logs if lg > -math.inf]
    a, b = math.log(lo) - max(finite) - 1, math.log(hi) - min(finite) + 1
    for _ in range(200):
        mid = (a + b) / 2
        before = a, b
        if sum(w * v for w, v in zip(weights, values(mid), strict=True)) < total:
            a = mid
        else:
            b = mid
        if (a, b) == before:  # a fixed point (adjacent floats): the remaining steps change nothing
            break
    return values(b)


def resolve_joint(
    uniform: ModelConfig,
    budget: Budget,
    raw_widths: Sequence[float],
    head_targets: Sequence[float],
    block_targets: Sequence[float] | None = None,
    *,
    radius: int = SNAP_RADIUS,
    hold: str = "params",
) -> ModelConfig:
    """The whole per-layer architecture of a joint profile on `budget`, its non-embedding
    parameters (`hold="params"`) or training FLOPs per token (`hold="flops"`) held exactly:
    real-valued targets snapped to whole heads the MLPs can balance, then `joint_config`.

    How heads snap: the head size D = d_model / n_heads is fixed (the preset's); layer l gets a
    whole number of query heads H_l >= 1 (with `block_targets`, of size-D heads of residual
    width, w_l = D a_l, a_l >= 1, and the block's heads follow its width: H_l = a_l). Key/value
    heads equal the query heads (no preset uses grouped-query attention, and the joint budget's
    reference is the uniform multi-head model), so every kv count divides its query count. Only
    some head vectors balance exactly (the attention's change of the held quantity must be a
    whole number of MLP steps), so the snap is the balanceable vector nearest the targets: each layer may move
    up to `radius` heads from its rounded target, the vectors ranked by Σ_l |a_l - target_l|
    (ties: the smaller heads, earlier layers first); the best `SNAP_KEEP` vectors of the right
    residue (the MLP step's divisibility, decided layer by layer on the per-layer parameter
    terms) are tried in that order against `joint_config`, and the first it balances is the
    model. Deterministic: the same profile and budget give the same model on every machine.
    None balancing (the targets ask for more attention than the MLPs can pay for): a
    ConfigError in one line naming the targets and what to change."""
    _check_uniform(uniform, budget)
    if hold not in HOLDS:
        raise ConfigError(f"hold={hold!r} is not a joint budget; choose one of: {', '.join(HOLDS)}")
    if hold == "flops":
        _check_flops_linear(uniform)
    n = uniform.n_layers
    targets = list(block_targets) if block_targets is not None else list(head_targets)
    if len(targets) != n or len(head_targets) != n:
        raise ConfigError(f"joint targets have {len(targets)} layers; the budget has n_layers={n}")
    blocks = block_targets is not None
    choices = [_snap_choices(t, radius) for t in targets]
    # the MLPs change the held quantity in whole steps: per unit x (D or d) x multiple_of
    per_unit = _mlp_cost(uniform, hold)
    modulus = per_unit * (uniform.head_dim if blocks else uniform.d_model) * budget.multiple_of
    # what the layers' other terms must make, modulo a step: the uniform model's own (n_heads heads,
    # a block d = n_heads x D wide); every MLP's share is a whole number of steps
    goal = sum(_layer_term(uniform, layer, uniform.n_heads, blocks, hold) for layer in range(n)) % modulus
    states: dict[int, list[tuple[float, tuple[int, ...]]]] = {0: [(0.0, ())]}
    for layer in range(n):
        terms = [(a, away, _layer_term(uniform, layer, a, blocks, hold) % modulus) for a, away in choices[layer]]
        nxt: dict[int, list[tuple[float, tuple[int, ...]]]] = {}
        for residue, partial in states.items():
            for dist, picked in partial:
                for a, away, term in terms:
                    nxt.setdefault((residue + term) % modulus, []).append((dist + away, (*picked, a)))
        states = {r: sorted(items)[:SNAP_KEEP] for r, items in nxt.items()}
    what = "block widths (heads of size D)" if blocks else "query heads"
    shown = ", ".join(f"{t:.3g}" for t in targets)
    held = "parameter" if hold == "params" else "training FLOPs"
    last = f"no {what} within {radius} heads of each target have a {held} change that MLP steps can balance"
    for _, picked in states.get(goal, []):
        heads = list(picked)
        try:
            if blocks:
                return joint_config(
                    uniform, budget, raw_widths, (), (), [uniform.head_dim * a for a in heads], hold=hold
                )
            return joint_config(uniform, budget, raw_widths, heads, hold=hold)
        except ConfigError as exc:
            last = str(exc)
    raise ConfigError(
        f"joint profile: {what} near the targets [{shown}] cannot be balanced by the budget's MLP widths "
        f"({last}); move the targets closer to uniform (heads_start/heads_end or ratio nearer 1)"
    )


def _snap_choices(target: float, radius: int) -> list[tuple[int, float]]:
    """(whole heads, distance from `target`) within `radius` of the rounded target, at least 1,
    nearest first (ties: fewer heads)."""
    centre = max(1, math.floor(target + 0.5))
    options = range(max(1, centre - radius), centre + radius + 1)
    return sorted(((a, abs(a - target)) for a in options), key=lambda c: (c[1], c[0]))


@functools.lru_cache(maxsize=65_536)
def _layer_term(uniform: ModelConfig, layer: int, heads: int, blocks: bool, hold: str = "params") -> int:
    """The held quantity of block `layer` of `uniform` but its MLP, with `heads` query heads (and,
    with `blocks`, a residual width of that many heads): its parameters, or its training FLOPs per
    sequence ((1 + backward) x forward - frozen). A family's block terms depend on its own layer
    only, so the snap adds them layer by layer."""
    n = uniform.n_layers
    if blocks:
        widths = [uniform.d_model] * n
        widths[layer] = heads * uniform.head_dim
        cfg = uniform.replace(block_widths=tuple(widths))
    else:
        query = [uniform.n_heads] * n
        query[layer] = heads
        cfg = uniform.replace(attn_heads=tuple(query))
    spec = architecture(cfg.arch)
    if hold == "params":
        return spec.block_params(cfg, layer)
    return round((1 + BACKWARD_FACTOR) * spec.block_flops(cfg, layer) - spec.frozen_flops(cfg, layer))
