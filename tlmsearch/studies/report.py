"""The report of a cross-architecture study: summary.json, summary.md and report.html in the
study directory, rebuilt from its records alone (`tlmsearch.studies.files`).

It shows each architecture's three-outcome verdict, the cross-architecture table (rows:
profiles; columns: architectures; cells: gain over uniform and over cosine with intervals),
the transfer matrix, each profile's widths, and the paper's controlled experiment beside ours
where the profiles correspond (the paper's numbers, a 440M Transformer on its own data: a
different scale, shown for direction, not compared by test). Offline HTML, no scripts.
"""

from __future__ import annotations

import html
import math
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from tlmsearch.analysis.collect import brief_text
from tlmsearch.analysis.crossarch import (
    PAPER_SOURCE,
    best_profiles,
    cross_table,
    fmt_gain,
    one_shape_answer,
    transfer_matrix,
)
from tlmsearch.analysis.random_control import control_summary
from tlmsearch.analysis.rate_check import rate_checks
from tlmsearch.configs.lr_choice import short_text
from tlmsearch.errors import UserError
from tlmsearch.rundir.axes import axes_text
from tlmsearch.rundir.io import json_text, read_verify, refuse_folder, write_text
from tlmsearch.rundir.layout import SEARCH_CONFIG
from tlmsearch.rundir.lr import run_calibration
from tlmsearch.rundir.records import read_records
from tlmsearch.rundir.study import load
from tlmsearch.studies.files import (
    damage_text,
    load_config,
    own_verdict,
    random_dir,
    read_state,
    study_damage,
    transfer_seeds,
    transfer_verdict,
)


def study_summary(study_dir: str | Path) -> dict[str, Any]:
    """Everything the study report shows, as plain data (what summary.json holds)."""
    study_dir = Path(study_dir)
    cfg = load_config(study_dir)
    phases = read_state(study_dir)["phases"]
    # a verification still running (or cut) has no verdict yet: its records may be the pilot's
    ended = [a for a in cfg.archs if phases.get(f"{a}/verify", {}).get("status", "done") == "done"]
    own = {a: v for a in ended if (v := own_verdict(cfg, study_dir, a)) is not None}
    transfer = {a: v for a in cfg.archs if (v := transfer_verdict(cfg, study_dir, a)) is not None}
    best = best_profiles(own)
    matrix = transfer_matrix(cfg.archs, best, own, transfer)
    outcomes = {a: str(v["outcome"]) for a, v in own.items()}
    return {
        "study": cfg.name,
        "config": cfg.flat_dict(),  # flat, as the flags name the settings (the readers index it so)
        "phases": phases,
        "verdicts": {
            a: {
                k: v.get(k)
                for k in ("outcome", "headline", "n_seeds", "n_candidates", "best", "better", "regret", "regime")
            }
            for a, v in own.items()
        },
        "missing_verdicts": [a for a in cfg.archs if a not in own],
        "cross_table": cross_table(own),
        "best_profiles": best,
        "transfer_matrix": matrix,
        "transfer_seeds": transfer_seeds(cfg),
        "transfer_verdicts": {
            a: {k: v.get(k) for k in ("outcome", "headline", "n_seeds")} for a, v in transfer.items()
        },
        "answer": one_shape_answer(cfg.archs, matrix, outcomes),
        "paper_source": PAPER_SOURCE,
        "noise_floor": {a: arch_floor(study_dir / a) for a in cfg.archs},
        "learning_rates": {a: arch_lr(study_dir / a) for a in cfg.archs},
        "rate_checks": {a: arch_rate_check(study_dir / a) for a in ended},  # verify's check at half/twice the rate
        "random_control": (
            {a: random_control(study_dir, a, own.get(a)) for a in cfg.archs} if cfg.random_control else None
        ),
    }


def random_control(study_dir: Path, arch: str, verdict: dict[str, Any] | None) -> dict[str, Any] | None:
    """`arch`'s random-search control (`tlmsearch.analysis.random_control`), None before it ran."""
    sub = study_dir / arch
    if not (sub / SEARCH_CONFIG).is_file():
        return None
    study = load(sub)
    return control_summary(read_records(random_dir(study_dir, arch)), study.records, verdict, study.noise_floor())


def random_text(arch: str, c: Mapping[str, Any] | None) -> str:
    """One sentence on `arch`'s random-search control."""
    if not c:
        return f"{arch}: no random-search result yet"
    shared = " (a baseline both searches share)" if c["is_shared_baseline"] else ""
    gap = f"{c['gap']:+.4f} nats" + (f" = {c['gap_sd']:.1f} sd" if c.get("gap_sd") is not None else "")
    tie = " (a tie: inside the noise floor)" if c.get("tie") else ""
    row = c.get("verified")
    verified = f"; verified gain vs cosine {fmt_gain(row['gain_vs_cosine'])}" if row else ""
    return (
        f"{arch}: random search's best `{c['label']}`{shared} scored {c['search_val_loss']:.4f} at search time, "
        f"the sampler's best `{c['search_best']}` {c['search_best_val_loss']:.4f}: random minus sampler {gap}{tie}"
        f"{verified}"
    )


def arch_floor(sub: Path) -> dict[str, Any] | None:
    """An architecture's search noise floor as plain data (None before its search or without one)."""
    if not (sub / SEARCH_CONFIG).is_file():
        return None
    floor = load(sub).noise_floor()
    return floor.to_dict() if floor is not None else None


def arch_lr(sub: Path) -> dict[str, Any] | None:
    """An architecture's learning rate as plain data: the rate its trials train at (`lr`) and its
    calibration (`tlmsearch.configs.lr_calibration`: grid, losses, chosen; None when it ran none); None
    before its search started."""
    if not (sub / SEARCH_CONFIG).is_file():
        return None
    study = load(sub)
    calibration = run_calibration(sub, study.config, study.records)
    return {
        "lr": study.config.train.lr,
        "calibration": calibration.to_dict() if calibration is not None else None,
        "losses": calibration.loss_texts() if calibration is not None else [],
    }


def arch_rate_check(sub: Path) -> list[dict[str, Any]]:
    """An architecture's learning-rate check (`tlmsearch.analysis.rate_check`: its verdict's result
    at half, base and twice the rate), [] when its verification ran none."""
    if not (sub / SEARCH_CONFIG).is_file():
        return []
    return [c.to_dict() for c in rate_checks(read_records(sub), read_verify(sub).get("rate_check"))]


def rate_check_lines(s: Mapping[str, Any]) -> list[str]:
    """One line per architecture whose verification ran the learning-rate check: its headline."""
    return [f"{a}: {c['headline']}" for a, checks in (s.get("rate_checks") or {}).items() for c in checks]


def lr_text(entry: Mapping[str, Any] | None) -> str:
    """E.g. "0.004 (calibrated; val_loss by rate 0.002: 2.38, 0.004 (chosen): 2.35, ...)"; "-" before its search."""
    if not entry:
        return "-"
    cal = entry.get("calibration")
    if not cal:
        return f"{entry['lr']:.6g} (as configured)"
    losses = ", ".join(entry.get("losses") or [])
    if not cal.get("complete"):
        return f"calibrating ({losses})"
    edge = f"; best at the {cal['edge']} edge of the grid" if cal.get("edge") else ""
    return f"{entry['lr']:.6g} (calibrated{edge}; val_loss by rate {losses})"


def lr_short(entry: Mapping[str, Any] | None) -> str:
    """E.g. "0.004 of 0.0005..0.008" (calibrated), "0.002 (as configured)"; "-" before its search."""
    if not entry:
        return "-"
    cal = entry.get("calibration")
    return short_text(cal) if cal else f"{entry['lr']:.6g} (as configured)"


def floor_text(floor: Mapping[str, Any] | None) -> str:
    """E.g. "sd 0.0150 nats (3 seeds; ties under 0.0424)"; "-" when none is measured."""
    if not floor:
        return "-"
    if floor.get("sd") is None:
        return f"{floor['n']} of {floor['planned']} seeds so far"
    return f"sd {floor['sd']:.4f} nats ({floor['n']} seeds; ties under {floor['tie_gap']:.4f})"


def write_study_report(study_dir: str | Path) -> dict[str, Path]:
    """Write summary.json, summary.md and report.html, each atomically, all rendered first.

    A study whose records are damaged (`study_damage`: an architecture's folder gone or not a
    folder, its records emptied although its phases ran) is refused with a `UserError` naming
    what is wrong, before anything is written: its last report stays as it was rather than
    being replaced by one that silently lacks an architecture.
    """
    study_dir = Path(study_dir)
    problems = study_damage(study_dir, load_config(study_dir))
    if problems:
        raise UserError(damage_text(study_dir, problems, ", so its report is not rebuilt (the last one is kept)"))
    paths = {"json": study_dir / "summary.json", "md": study_dir / "summary.md", "html": study_dir / "report.html"}
    for path in paths.values():
        refuse_folder(path)
    summary = study_summary(study_dir)
    texts = {
        "json": json_text(_json_safe(summary)),
        "md": markdown(summary),
        "html": to_html(summary),
    }
    for key, text in texts.items():
        write_text(paths[key], text)
    return paths


def _json_safe(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, Mapping):
        return {str(k): _json_safe(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_json_safe(v) for v in value]
    return value


# ----------------------------------------------------------------------------- tables


def shortener(s: Mapping[str, Any]) -> Callable[[str], str]:
    """`brief_text` (profile numbers to 3 significant digits) when that keeps every profile of
    the study apart, else the identity; the exact texts stay in summary.json."""
    labels = {str(row["label"]) for row in s["cross_table"]} | {
        str(row["profile"]) for row in s["transfer_matrix"] if row["profile"] is not None
    }
    labels |= {str(v["best"]) for v in s["verdicts"].values()}
    return brief_text if len({brief_text(x) for x in labels}) == len(labels) else str


def tables(s: Mapping[str, Any]) -> list[tuple[str, list[str], list[list[str]]]]:
    """(title, header, rows) of every table, shared by the Markdown, the HTML and the README;
    profile numbers shortened for reading (`shortener`)."""
    short = shortener(s)
    return [(title, header, [[short(c) for c in r] for r in rows]) for title, header, rows in _tables(s)]


def _tables(s: Mapping[str, Any]) -> list[tuple[str, list[str], list[list[str]]]]:
    archs = list(s["config"]["archs"])
    verdict_rows = [
        [a, v["outcome"], str(v["n_seeds"]), str(v["best"]), v["headline"]] for a, v in s["verdicts"].items()
    ] + [[a, "no verdict yet", "", "", ""] for a in s["missing_verdicts"]]
    cross_rows = []
    for row in s["cross_table"]:
        cells = [
            f"{fmt_gain(c['vs_uniform'])} / {fmt_gain(c['vs_cosine'])}" if (c := row["cells"].get(a)) else "—"
            for a in archs
        ]
        paper = row.get("paper")
        ptext = f"ppl {paper['ppl']:.2f}: {paper['vs_uniform']:+.1%} / {paper['vs_cosine']:+.1%}" if paper else ""
        cross_rows.append([row["label"], *cells, ptext])
    matrix_rows = []
    for row in s["transfer_matrix"]:
        cells = []
        for a in archs:
            c = row["cells"].get(a)
            if c is None:
                cells.append("—")
            elif c.get("is_cosine"):
                cells.append("(is cosine)")
            else:
                mark = " better" if c.get("shown_better") else (" within margin" if c.get("within_margin") else "")
                cells.append(f"{fmt_gain(c['gain'])} n={c['n']}{mark}")
        best = row["profile"] if row["profile"] is not None else "no verdict yet"
        matrix_rows.append([f"{row['source']}: {best}", *cells])
    shape_rows = [[row["label"], *[shape_text(row["cells"].get(a)) for a in archs]] for row in s["cross_table"]]
    return [
        ("Verdicts per architecture", ["arch", "outcome", "seeds", "best by mean", "headline"], verdict_rows),
        (
            "Gain over uniform / over cosine (perplexity, verified seeds, intervals as in each verdict)",
            ["profile", *archs, f"paper: {PAPER_SOURCE} (vs uniform / vs cosine)"],
            cross_rows,
        ),
        (
            f"Transfer: each architecture's best profile against cosine on every architecture "
            f"(seeds {s['transfer_seeds']}; diagonal: the verification)",
            ["best of", *archs],
            matrix_rows,
        ),
        ("Profile widths per layer", ["profile", *archs], shape_rows),  # a joint model's: every axis (`shape_text`)
    ]


def shape_text(cell: Mapping[str, Any] | None) -> str:
    """A profile's MLP widths per layer on one architecture ("96 80 48 32"); a joint
    architecture's every axis ("mlp 64,64; query heads 3,1; kv heads as query; block 32,32")."""
    if cell is None:
        return "—"
    return axes_text(cell, sep="; ") or " ".join(map(str, cell["widths"]))


def preset_text(cfg: Mapping[str, Any]) -> str:
    """'cpu-xs', or 'cpu-xs with n_layers=2' when the study changed the preset's shape."""
    changed = ", ".join(f"{k}={v}" for k, v in (cfg.get("model") or {}).items())
    return f"{cfg['preset']} with {changed}" if changed else str(cfg["preset"])


def length_text(train: Mapping[str, Any]) -> str:
    """'300 steps', or '20 tokens per parameter (non-embedding; steps per architecture)'."""
    tpp = train.get("tokens_per_param") or 0
    return f"{tpp:g} tokens per parameter (non-embedding; steps per architecture)" if tpp else f"{train['steps']} steps"


def _regimes(s: Mapping[str, Any]) -> list[str]:
    """'Regime of each verification: transformer 0.43M non-embedding parameters, ... (early training ...).'"""
    parts = [
        f"{a}: {v['regime']['text'].removeprefix('regime: ')}" for a, v in s["verdicts"].items() if v.get("regime")
    ]
    return ["Regime of each verification: " + "; ".join(parts) + ".", ""] if parts else []


def markdown(s: Mapping[str, Any]) -> str:
    cfg = s["config"]
    out = [
        f"# Study {s['study']}",
        "",
        f"Architectures {', '.join(cfg['archs'])}; preset {preset_text(cfg)}, {cfg['trials']} search trials each "
        f"of {length_text(cfg['train'])}; margin {cfg['margin']:.1%}, alpha {cfg['alpha']:g}.",
        "",
        *_regimes(s),
        f"**Is one shape best everywhere, and is it cosine?** {shortener(s)(s['answer'])}.",
        "",
        "Profiles' parameters are shown to 3 significant digits; summary.json holds their exact specs.",
        "The paper's figures are its own (a 440M Transformer trained on its data), another scale than ours.",
        "Noise floor of each search (sd of uniform's val_loss over seeds at the trial fidelity; search-time gaps "
        "under 2 x sqrt(2) sd are ties): "
        + "; ".join(f"{a} {floor_text(f)}" for a, f in (s.get("noise_floor") or {}).items())
        + ".",
        "Learning rate of each architecture (chosen on uniform by the calibration: lowest final "
        "val_loss): " + "; ".join(f"{a} {lr_text(v)}" for a, v in (s.get("learning_rates") or {}).items()) + ".",
    ]
    if rate_check_lines(s):
        out += ["", "## Learning-rate check (each verdict at half and twice the rate)", ""]
        out += [f"- {line}" for line in rate_check_lines(s)]
    if s.get("random_control"):
        out += ["", "## Random-search control (verified as `random-best`)", ""]
        out += [f"- {random_text(a, c)}" for a, c in s["random_control"].items()]
    for title, header, rows in tables(s):
        out += ["", f"## {title}", "", "| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
        out += ["| " + " | ".join(c.replace("|", "/") for c in r) + " |" for r in rows]
    return "\n".join(out) + "\n"


def _svg(widths: Sequence[int], colour: str = "#4878a8", title: str = "MLP widths") -> str:
    if not widths:
        return ""
    top = max(widths)
    bars = "".join(
        f'<rect x="{i * 8}" y="{30 - 30 * w / top:.1f}" width="6" height="{30 * w / top:.1f}" fill="{colour}"/>'
        for i, w in enumerate(widths)
    )
    return f'<svg width="{8 * len(widths)}" height="30"><title>{title}</title>{bars}</svg>'


AXIS_COLOURS = (("attn_heads", "#e08030", "query heads"), ("kv_heads", "#50a050", "KV heads"),
                ("block_widths", "#905090", "block widths"))  # fmt: skip


def _shape_svgs(cell: Mapping[str, Any] | None) -> str:
    """A profile's MLP widths as bars; a joint architecture's query heads, KV heads and block
    widths beside them, one bar chart each (its legend under the table)."""
    if cell is None:
        return ""
    charts = [_svg(cell["widths"])]
    charts += [_svg(cell[axis], colour, what) for axis, colour, what in AXIS_COLOURS if cell.get(axis) is not None]
    return " ".join(charts)


def to_html(s: Mapping[str, Any]) -> str:
    e = html.escape
    parts = [
        "<!doctype html><meta charset='utf-8'><title>study report</title>",
        "<style>body{font-family:sans-serif;margin:2em}td,th{border:1px solid #ccc;padding:4px;font-size:13px}"
        "table{border-collapse:collapse;margin-bottom:2em}</style>",
        f"<h1>Study {e(s['study'])}</h1>",
        f"<p><b>Is one shape best everywhere, and is it cosine?</b> {e(shortener(s)(s['answer']))}.</p>",
        "<p>Profiles' parameters are shown to 3 significant digits; summary.json holds their exact specs.</p>",
        "<p>The paper's figures are its own (a 440M Transformer on its data): another scale, shown for direction.</p>",
        "<p>Noise floor of each search (sd of uniform's val_loss over seeds at the trial fidelity; search-time "
        "gaps under 2 x sqrt(2) sd are ties): "
        + e("; ".join(f"{a} {floor_text(f)}" for a, f in (s.get("noise_floor") or {}).items()))
        + ".</p>",
        "<p>Learning rate of each architecture (chosen on uniform by the calibration: lowest final "
        "val_loss): " + e("; ".join(f"{a} {lr_text(v)}" for a, v in (s.get("learning_rates") or {}).items())) + ".</p>",
    ]
    if rate_check_lines(s):
        parts.append("<h2>Learning-rate check (each verdict at half and twice the rate)</h2><ul>")
        parts += [f"<li>{e(line)}</li>" for line in rate_check_lines(s)]
        parts.append("</ul>")
    if s.get("random_control"):
        parts.append("<h2>Random-search control (verified as random-best)</h2><ul>")
        parts += [f"<li>{e(random_text(a, c))}</li>" for a, c in s["random_control"].items()]
        parts.append("</ul>")
    for title, header, rows in tables(s):
        parts.append(f"<h2>{e(title)}</h2><table><tr>" + "".join(f"<th>{e(h)}</th>" for h in header) + "</tr>")
        parts += ["<tr>" + "".join(f"<td>{e(c)}</td>" for c in r) + "</tr>" for r in rows]
        parts.append("</table>")
    archs = list(s["config"]["archs"])
    parts.append("<h2>Shapes</h2><table><tr><th>profile</th>" + "".join(f"<th>{e(a)}</th>" for a in archs) + "</tr>")
    short = shortener(s)
    for row in s["cross_table"]:
        cells = "".join(f"<td>{_shape_svgs(row['cells'].get(a))}</td>" for a in archs)
        parts.append(f"<tr><td>{e(short(row['label']))}</td>{cells}</tr>")
    parts.append("</table>")
    shown = [c for row in s["cross_table"] for c in row["cells"].values()]
    if any(c.get(axis) is not None for c in shown for axis, _, _ in AXIS_COLOURS):
        legend = ", then ".join(f'<span style="color:{colour}">{what}</span>' for _, colour, what in AXIS_COLOURS)
        parts.append(f"<p>Bars per layer: MLP widths; a joint architecture's also its {legend}.</p>")
    return "\n".join(parts) + "\n"
