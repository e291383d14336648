"""`tlmsearch plan`'s table for people: a costed study (`costs.plan.Plan`) as text."""

from __future__ import annotations

from tlmsearch.costs.phases import noise_runs
from tlmsearch.costs.plan import _SEARCH, MAX_SEEDS, Plan, PlanConfig


def _si(x: float, unit: str = "") -> str:
    for factor, prefix in ((1e21, "Z"), (1e18, "E"), (1e15, "P"), (1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k")):
        if abs(x) >= factor:
            return f"{x / factor:.3g} {prefix}{unit}"
    return f"{x:.3g} {unit}".rstrip()


def _hours(h: float) -> str:
    if h < 1:
        return f"{h * 60:.2g} min"
    return f"{h:,.1f} h" if h < 48 else f"{h:,.0f} h ({h / 24:,.1f} days)"


def _gpu_hours(h: float) -> str:
    """GPU-hours with the digits a small figure needs (never a bare 0.0 for work that costs)."""
    if h < 0.1:
        return f"{h * 3600:.3g} GPU-s" if h < 1 / 60 else f"{h * 60:.3g} GPU-min"
    return f"{h:,.1f} GPU-h" if h < 1000 else f"{h:,.0f} GPU-h"


def lengths_line(c: PlanConfig) -> str:
    """How the plan counted each phase's runs and lengths, as `search` and `verify` derive them."""
    if c.tokens or c.steps:
        search = f"{_si(c.tokens)} tokens" if c.tokens else f"{c.steps:,} steps"
    else:
        search = f"{c.tokens_per_param:g} tokens per parameter"
    if c.verify_tokens or c.verify_steps:
        verify = f"{_si(c.verify_tokens)} tokens" if c.verify_tokens else f"{c.verify_steps:,} steps"
    elif c.tokens or c.steps:
        verify = "the search's length"
    else:
        verify = f"{max(c.tokens_per_param, c.verify_tokens_per_param):g} tokens per parameter"
    parts = []
    if c.trials:
        noise = noise_runs(_SEARCH.replace(trials=c.trials, noise_seeds=c.noise_seeds))
        parts.append(f"search: {c.trials} trials and {noise} noise-floor run{'s' * (noise != 1)} at {search}")
    if c.verify_profiles:
        seeds = f"{c.seeds} seeds" if c.seeds else f"planned seeds at their cap of {MAX_SEEDS}"
        parts.append(f"verify: {c.verify_profiles} profiles x {seeds} at {verify}")
    return "; ".join(parts) + " (every run at full length: ASHA's early stops and planned seeds only lower it)"


def format_plan(p: Plan) -> str:
    """The plan as a short table for people."""
    c, s = p.config, p.shape
    lines = [
        f"preset {c.preset}: d_model {s['d_model']}, {s['n_layers']} layers, {s['n_heads']} heads, "
        f"seq {s['seq_len']}, vocab {s['vocab_size']}, MLP width {s['base_width']} per layer (budget)",
        f"{p.tokens_per_step:,} tokens per step (batch {c.batch_size} x accum {c.grad_accum} x seq {s['seq_len']})",
        f"{p.gpu.name}: {_si(p.gpu.bf16_dense_flops, 'FLOP/s')} dense BF16 peak, at MFU {c.mfu:.0%} "
        f"{_si(p.sustained_flops, 'FLOP/s')}, at least {c.step_ms:g} ms a step; {c.gpus} GPUs, "
        f"{c.gpus_per_trial:g} GPU per trial -> {p.slots} trials at once",
        lengths_line(c),
    ]
    for a in p.archs:
        lines.append("")
        lines.append(
            f"{a.arch}: {a.params_total / 1e6:,.1f} M parameters "
            f"({a.params_non_embedding / 1e6:,.1f} M non-embedding), "
            f"{_si(a.flops_per_token, 'FLOP')} per training token, {a.static_gb:.1f} GB weights+grads+AdamW per trial"
        )
        for ph in a.phases:
            lines.append(
                f"  {ph.name:<7} {ph.runs:>4} runs x {ph.steps:,} steps = {_si(ph.tokens_per_run)} tokens, "
                f"{_si(ph.flops_per_run, 'FLOP')}, {_gpu_hours(ph.gpu_hours_per_run)} per run"
                f"{' (step-bound)' if ph.step_bound else ''}; "
                f"{ph.waves} wave{'s' if ph.waves != 1 else ''} of {_hours(ph.run_hours)} -> "
                f"{_hours(ph.wall_hours)} wall, "
                f"{_gpu_hours(ph.gpu_hours)}"
            )
        lines.append(
            f"  total   {_si(a.tokens)} tokens, {_si(a.flops, 'FLOP')}, {_gpu_hours(a.gpu_hours)}, "
            f"{_hours(a.wall_hours)} wall"
        )
    lines.append("")
    lines.append(
        f"study: {_si(p.tokens)} tokens, {_si(p.flops, 'FLOP')}, {_gpu_hours(p.gpu_hours)}, "
        f"{_hours(p.wall_hours)} wall on {c.gpus} x {c.gpu} (slots used {p.packing:.0%})"
    )
    lines.extend(f"warning: {w}" for w in p.warnings)
    return "\n".join(lines)
