"""A ladder's report from its records alone: summary.json, summary.md and report.html (a plot of
each profile's gain over uniform against training compute, with intervals, the fitted line of
cosine and the paper's point where it corresponds; inline SVG, no network, no plotly).
"""

from __future__ import annotations

import html
import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from tlmsearch.errors import UserError
from tlmsearch.ladders.files import (
    damage_text,
    ladder_damage,
    load_config,
    point_epochs,
    point_lr_intervals,
    point_rows,
    target_tokens_per_param,
)
from tlmsearch.ladders.points import target_of
from tlmsearch.ladders.summary import summarize_ladder
from tlmsearch.report.run import json_safe
from tlmsearch.rundir.io import write_json, write_text


def ladder_summary(ladder_dir: str | Path) -> dict[str, Any]:
    """The ladder's summary (what summary.json holds), computed from its records."""
    cfg = load_config(ladder_dir)
    rows, lrs = point_rows(ladder_dir, cfg)
    target = target_of(cfg.target, cfg.arch, target_tokens_per_param(cfg))
    texts = {s.name: s.text for s in cfg.specs}
    intervals = point_lr_intervals(ladder_dir, cfg)
    epochs = point_epochs(ladder_dir, cfg)
    summary = summarize_ladder(
        cfg.to_dict(), rows, target=target, texts=texts, lrs=lrs, lr_intervals=intervals, epochs=epochs
    )
    summary["run_dir"] = str(Path(ladder_dir).resolve())
    return summary


def write_ladder_report(ladder_dir: str | Path) -> dict[str, Path]:
    """Write summary.json, summary.md and report.html from the ladder's records; a damaged ladder
    (`files.ladder_damage`) is refused in one line and its last report kept."""
    ladder_dir = Path(ladder_dir)
    damage = ladder_damage(ladder_dir)
    if damage:
        raise UserError(damage_text(ladder_dir, damage, ", so its report is not rebuilt (the last one is kept)"))
    s = ladder_summary(ladder_dir)
    paths = {"json": ladder_dir / "summary.json", "md": ladder_dir / "summary.md", "html": ladder_dir / "report.html"}
    write_json(paths["json"], json_safe(s))
    write_text(paths["md"], to_markdown(s))
    write_text(paths["html"], to_html(s))
    return paths


def _pct(g: Mapping[str, Any] | None) -> str:
    """A gain (a point's: "gain", or an interval's: "estimate") in % with its interval."""
    if not g:
        return "-"
    est, low, high = g.get("gain", g.get("estimate")), g.get("low"), g.get("high")
    if est is None:
        return "-"
    if low is None or high is None:
        return f"{100 * est:+.2f} %"
    return f"{100 * est:+.2f} % [{100 * low:+.2f}, {100 * high:+.2f}]"


def _lr_text(p: Mapping[str, Any]) -> str:
    """A point's learning rate, with its calibration's 95% interval when it has one: "0.0174 [0.0153, 0.0211]"."""
    if p.get("lr") is None:
        return "-"
    interval = p.get("lr_interval")
    return f"{p['lr']:g}" + (f" [{interval[0]:.3g}, {interval[1]:.3g}]" if interval else "")


def tables(s: Mapping[str, Any]) -> list[tuple[str, list[str], list[list[str]]]]:
    """(title, header, rows) of the points, the gains per point and the trends."""
    points = [
        [
            p["point"],
            f"{p['non_embedding']:,}",
            _int(p.get("n_layers")),
            _int(p.get("d_model")),
            _int(p.get("n_heads")),
            f"{p['tokens_per_param']:g}",
            "-" if p.get("epochs") is None else f"{p['epochs']:.3g}",
            f"{p['compute']:.3g}",
            _lr_text(p),
            p["outcome"] or (p["note"] or "-"),
        ]
        for p in s["points"]
    ]
    header = ["point", "non-embedding params", "layers", "d_model", "heads", "tokens/param", "epochs", "FLOPs a run"]
    out = [("Points", [*header, "lr", "verdict"], points)]
    profiles = sorted({prof for p in s["points"] for prof in p["gains"]})
    for ref in ("uniform", "cosine"):
        rows = [
            [prof] + [_pct(p["gains"].get(prof, {}).get(ref)) for p in s["points"]] for prof in profiles if prof != ref
        ]
        header = ["profile"] + [p["point"] for p in s["points"]]
        out.append((f"Gain over {ref} per point (perplexity, {100 * (1 - s['alpha']):.0f} % t interval)", header, rows))
        depth = s.get("arm") == "depth"  # nothing to extrapolate to: no target column
        trend_rows = []
        for prof, t in (s["trends"].get(ref) or {}).items():
            if "slope" not in t:
                slope, target, claim = "-", "-", t.get("why", "")
            else:
                slope, target = t["text"], _pct((t.get("extrapolation") or {}).get("gain"))
                claim = "shown" if t["shown"] else "descriptive" if t.get("descriptive") else "not shown"
            trend_rows.append([prof, slope, claim] if depth else [prof, slope, target, claim])
        if depth:
            title = f"Trend of the gain over {ref} against log2(layers) at equal non-embedding parameters"
            header = ["profile", "slope per doubling of depth", "trend (Holm)"]
        else:
            title = f"Trend of the gain over {ref} against log10(training FLOPs), extrapolated to {s['target']['name']}"
            header = ["profile", "slope per 10x compute", f"at {s['target']['name']}", "trend (Holm)"]
        out.append((title, header, trend_rows))
    joint = sorted({prof for p in s["points"] for prof in p.get("shapes") or {}})
    if joint:  # the joint architectures at each point: MLP widths, query heads, KV heads, block widths
        rows = [[prof] + [(p.get("shapes") or {}).get(prof, "-") for p in s["points"]] for prof in joint]
        out.append(
            ("Joint architectures per layer at each point", ["profile"] + [p["point"] for p in s["points"]], rows)
        )
    for arm in s.get("other_arms") or []:  # a compute ladder's further groups of one depth and head size
        rows = [
            [prof, t.get("text", t.get("why", "")), _pct((t.get("extrapolation") or {}).get("gain"))]
            for prof, t in (arm["trends"].get("uniform") or {}).items()
        ]
        out.append(
            (
                f"Separate arm ({arm['shape']}: {', '.join(arm['points'])}): gain over uniform against log10(training "
                "FLOPs)",
                ["profile", "slope per 10x compute", f"at {s['target']['name']}"],
                rows,
            )  # fmt: skip
        )
    return out


def _int(x: Any) -> str:
    return f"{int(x)}" if x else "-"


def to_markdown(s: Mapping[str, Any]) -> str:
    lines = [f"# Ladder {s['ladder']} ({s['arch']})", "", f"**{s['conclusion']}**", ""]
    lines += [f"- {n}" for n in s["notes"]]
    lines += [
        f"- target {s['target']['name']}: {s['target']['compute']:.3g} FLOPs ({s['target']['how']})",
        f"- the paper's point: {100 * s['paper']['gain']:+.1f} % at 440M, {s['paper']['how']}",
        "",
    ]
    for title, header, rows in tables(s):
        lines += [f"## {title}", "", "| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
        lines += ["| " + " | ".join(r) + " |" for r in rows]
        lines.append("")
    for p in s["points"]:
        if p["headline"]:
            lines.append(f"- {p['point']}: {p['headline']}")
    return "\n".join(lines) + "\n"


def plot_data(s: Mapping[str, Any]) -> dict[str, Any]:
    """Per profile the points (log10 FLOPs, gain over uniform in %, its interval), cosine's fitted
    line from the smallest point to the target, and the paper's point."""
    series: dict[str, list[tuple[float, float, float, float]]] = {}
    for p in s["points"]:
        for prof, by in p["gains"].items():
            g = by.get("uniform")
            if g and g.get("low") is not None:
                series.setdefault(prof, []).append(
                    (math.log10(p["compute"]), 100 * g["gain"], 100 * g["low"], 100 * g["high"])
                )
    line = None
    t = (s["trends"].get("uniform") or {}).get("cosine") or {}
    if "slope_per_decade" in t and t.get("extrapolation"):
        xs = [math.log10(p["compute"]) for p in s["points"]]
        x_top = max(xs)
        b = t["slope_per_decade"]["estimate"]
        top = t["fitted_at_largest"]["estimate"]
        ext = t["extrapolation"]
        x_t = math.log10(ext["compute"])
        line = {
            "x": [min(xs), x_t],
            "y": [100 * math.expm1(top + b * (min(xs) - x_top)), 100 * ext["gain"]["estimate"]],
            "target": (x_t, 100 * ext["gain"]["low"], 100 * ext["gain"]["high"]),
        }
    paper = s["paper"]
    return {"series": series, "line": line, "paper": (math.log10(paper["compute"]), 100 * paper["gain"])}


def _svg(data: Mapping[str, Any]) -> str:
    xs = [x for pts in data["series"].values() for x, *_ in pts] + [data["paper"][0]]
    ys = [v for pts in data["series"].values() for pt in pts for v in pt[1:]] + [data["paper"][1], 0.0]
    if data["line"]:
        xs += data["line"]["x"]
        ys += [*data["line"]["y"], *data["line"]["target"][1:]]
    ys = [y for y in ys if math.isfinite(y)]
    x0, x1 = min(xs) - 0.3, max(xs) + 0.3
    y0, y1 = max(min(ys), -100.0) - 1, min(max(ys), 200.0) + 1
    w, h, m, legend = 900, 360, 50, 220  # the legend's column on the right

    def px(x: float) -> float:
        return m + (x - x0) / (x1 - x0) * (w - 2 * m - legend)

    def py(y: float) -> float:
        return h - m - (min(max(y, y0), y1) - y0) / (y1 - y0) * (h - 2 * m)

    colours = ["#c0392b", "#2c7fb8", "#7b3294", "#e08214", "#1b7837", "#555", "#d95f02", "#66a61e", "#e7298a"]
    out = [f'<svg width="{w}" height="{h}" xmlns="http://www.w3.org/2000/svg" font-size="11">']
    out.append(
        f'<line x1="{m}" y1="{py(0):.1f}" x2="{w - m - legend}" y2="{py(0):.1f}" stroke="#999" stroke-dasharray="3"/>'
    )
    for d in range(math.ceil(x0), math.floor(x1) + 1):
        out.append(f'<text x="{px(d):.1f}" y="{h - m + 15}" text-anchor="middle">1e{d}</text>')
    out.append(f'<text x="{(w - legend) / 2}" y="{h - 10}" text-anchor="middle">training FLOPs of one run</text>')
    out.append(f'<text x="12" y="{m - 15}">gain over uniform (% perplexity); {y0:.0f} .. {y1:.0f}</text>')
    names = sorted(data["series"], key=lambda n: (n != "cosine", n))
    for i, name in enumerate(names):
        c = colours[i % len(colours)]
        for x, g, lo, hi in data["series"][name]:
            dx = px(x) + (i - len(names) / 2) * 3
            out.append(f'<line x1="{dx:.1f}" y1="{py(lo):.1f}" x2="{dx:.1f}" y2="{py(hi):.1f}" stroke="{c}"/>')
            out.append(f'<circle cx="{dx:.1f}" cy="{py(g):.1f}" r="3" fill="{c}"/>')
        out.append(f'<text x="{w - legend}" y="{m + 14 * i}" fill="{c}">{html.escape(name[:36])}</text>')
    if data["line"]:
        (xa, xb), (ya, yb) = data["line"]["x"], data["line"]["y"]
        out.append(
            f'<line x1="{px(xa):.1f}" y1="{py(ya):.1f}" x2="{px(xb):.1f}" y2="{py(yb):.1f}" '
            f'stroke="{colours[0]}" stroke-dasharray="5"/>'
        )
        xt, lo, hi = data["line"]["target"]
        out.append(f'<line x1="{px(xt):.1f}" y1="{py(lo):.1f}" x2="{px(xt):.1f}" y2="{py(hi):.1f}" stroke="#000"/>')
    xp, yp = data["paper"]
    out.append(f'<rect x="{px(xp) - 4:.1f}" y="{py(yp) - 4:.1f}" width="8" height="8" fill="#000"/>')
    out.append(f'<text x="{px(xp) - 6:.1f}" y="{py(yp) - 8:.1f}" text-anchor="end">paper 440M</text>')
    out.append("</svg>")
    return "".join(out)


def to_html(s: Mapping[str, Any]) -> str:
    e = html.escape
    parts = [
        "<!doctype html><meta charset='utf-8'><title>ladder report</title>",
        "<style>body{font-family:sans-serif;margin:2em}td,th{border:1px solid #ccc;padding:4px;font-size:13px}"
        "table{border-collapse:collapse;margin-bottom:2em}</style>",
        f"<h1>Ladder {e(str(s['ladder']))} ({e(str(s['arch']))})</h1>",
        f"<p><b>{e(s['conclusion'])}</b></p>",
        *(f"<p>{e(n)}</p>" for n in s["notes"]),
        "<h2>Gain over uniform against training compute</h2>",
        "<p>Dots: each profile's mean paired gain at a point with its t interval; dashed: cosine's fitted line to "
        "the target, with the extrapolation's interval there (black bar); square: the paper's 440M point "
        f"({e(s['paper']['how'])}).</p>",
        _svg(plot_data(s)),
    ]
    for title, header, rows in tables(s):
        parts.append(f"<h2>{e(title)}</h2><table><tr>" + "".join(f"<th>{e(h)}</th>" for h in header) + "</tr>")
        parts += ["<tr>" + "".join(f"<td>{e(c)}</td>" for c in r) + "</tr>" for r in rows]
        parts.append("</table>")
    return "\n".join(parts) + "\n"


__all__ = ["ladder_summary", "plot_data", "tables", "to_html", "to_markdown", "write_ladder_report"]
