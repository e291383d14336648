"""`report.html` (offline: plotly.js embedded), `summary.md` and `summary.json` for a run.

from tlmsearch.report.run import write_report
paths = write_report("runs/my-search")   # {"html": ..., "markdown": ..., "json": ...}
"""

from __future__ import annotations

import html
import json
import math
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tlmsearch import plots
from tlmsearch.analysis.counts import records_in_words
from tlmsearch.analysis.front import front_axis
from tlmsearch.analysis.headline import describe_shape, level
from tlmsearch.analysis.sequential_extend import history_line
from tlmsearch.analysis.stats import check_method
from tlmsearch.analysis.summary import run_verdicts, search_space, summarize
from tlmsearch.analysis.verdict import Verdict, resolve_levels
from tlmsearch.core.validate import file_present
from tlmsearch.errors import ConfigError, UserError
from tlmsearch.noise_floor import NoiseFloor, floor_text, gap_text
from tlmsearch.plots.bundle import plotly_script
from tlmsearch.plots.rate_check import plot_rate_check, rate_check_markdown
from tlmsearch.profiles.spec import display_name
from tlmsearch.rundir.axes import axes_text
from tlmsearch.rundir.io import read_verify, read_yaml, refuse_folder, require_dir, write_text
from tlmsearch.rundir.layout import CONFIG_FILES, REPORT_HTML, SEARCH_CONFIG, SUMMARY_JSON, SUMMARY_MD, TRIALS
from tlmsearch.rundir.records import EVAL_KINDS, SEARCH_KINDS, TrialRecord, finished, read_records
from tlmsearch.rundir.study import load

if TYPE_CHECKING:  # pragma: no cover
    import plotly.graph_objects as go

# figure id -> section title, in page order (the verdict table comes first, as HTML)
FIGURES: dict[str, str] = {
    "pareto": "Ranking and Pareto front",
    "widths": "Width profiles of the best trials",
    "curves": "Learning curves",
    "front-load": "Quality against front-load",
    "parallel": "Sampled parameters",
}
OPTIONAL_FIGURES: dict[str, str] = {"rate-check": "Learning-rate check"}  # when verify ran one (--rate-check)


def load_run(run_dir: str | Path) -> tuple[list[TrialRecord], dict[str, Any]]:
    """The records and the resolved config (plain dict, {} if none) of a run."""
    path = require_dir(run_dir)
    if not file_present(path / TRIALS, "run file"):  # a folder, a FIFO or a link loop: one line
        raise UserError(f"{path} has no {TRIALS}: not a tlmsearch run directory, or no trial has ended yet")
    config: dict[str, Any] = {}
    for name in CONFIG_FILES:
        if file_present(path / name, "run file"):
            config = read_yaml(path / name)
            break
    return read_records(path), config


def quality_figure(
    records: list[TrialRecord],
    kinds: tuple[str, ...],
    objectives: tuple[str, ...],
    floor: Mapping[str, Any] | None = None,
) -> go.Figure:
    """The figure that follows the declared objectives: a Pareto front of the two objectives
    when there are two; quality against parameters in a budget sweep; otherwise a ranking
    (one objective at one budget: a front against measured speed would only show load), its band
    the search's noise floor (`floor`, `NoiseFloor.to_dict()`)."""
    x = front_axis(records, objectives, kinds=kinds)
    if x is not None and plots.pareto_data(records, y=objectives[0], x=x, kinds=kinds).two_dimensional:
        return plots.plot_pareto(records, y=objectives[0], x=x, kinds=kinds)
    return plots.plot_ranking(records, kinds=kinds, floor=floor)  # one objective, or a second that never varies


def figures(
    records: list[TrialRecord],
    verdicts: list[Verdict],
    kinds: tuple[str, ...],
    objectives: tuple[str, ...] = ("val_loss",),
    floor: Mapping[str, Any] | None = None,
) -> dict[str, go.Figure]:
    """Every figure of the report that shows something, by id (see `FIGURES`): the sampled
    parameters only where at least two finished sampled trials differ in one (`ParallelData.
    informative`; else the figure would be one line), the learning curves only where a trial
    reported an evaluation."""
    figs = {
        "pareto": quality_figure(records, kinds, objectives, floor),
        "widths": plots.plot_widths(records, kinds=kinds),
    }
    if plots.curves_data(records, kinds=kinds):
        figs["curves"] = plots.plot_curves(records, kinds=kinds)
    figs["front-load"] = plots.plot_front_load(records, kinds=kinds)
    if plots.parallel_data(records).informative:
        figs["parallel"] = plots.plot_parallel(records)
    return figs


def build(
    run_dir: str | Path,
    *,
    threshold: float | None = None,
    confidence: float | None = None,
    method: str = "t",
    margin: float | None = None,
    alpha: float | None = None,
) -> tuple[dict[str, Any], dict[str, go.Figure]]:
    """The summary (plain data) and the figures of a run."""
    check_method(method)
    margin, alpha = resolve_levels(margin, alpha, threshold=threshold, confidence=confidence)
    records, config = load_run(run_dir)
    kinds = SEARCH_KINDS if finished(records) else ("compare",)
    if not finished(records, kinds=kinds + EVAL_KINDS):
        raise UserError(f"{run_dir} has no finished trials (complete, full fidelity): nothing to report yet")
    plan = read_verify(run_dir)
    summary = summarize(
        records, config, margin=margin, alpha=alpha, method=method, verify_plan=plan, noise_floor=_floor(run_dir)
    )
    summary["run_dir"] = str(run_dir)
    space = search_space(config)
    vs = run_verdicts(records, plan, margin=margin, alpha=alpha, arch=summary["arch"], method=method, space=space)
    summary["verdict_table"] = _verdict_table(vs)
    objectives = tuple(config.get("objectives") or ("val_loss",))
    figs = figures(records, vs, kinds, objectives, summary["noise_floor"])
    if summary["rate_check"]:
        figs["rate-check"] = plot_rate_check(summary["rate_check"])
    return summary, figs


def _floor(run_dir: str | Path) -> NoiseFloor | None:
    """The search's noise floor (None for a comparison or a search run without one)."""
    if not (Path(run_dir) / SEARCH_CONFIG).is_file():
        return None
    try:
        return load(run_dir).noise_floor()
    except ConfigError:
        return None


def _verdict_table(vs: list[Verdict]) -> dict[str, Any]:
    d = plots.verdict_table_data(vs)
    return {"header": list(d.header), "rows": [list(r) for r in d.rows]}


def write_report(
    run_dir: str | Path,
    out_dir: str | Path | None = None,
    *,
    threshold: float | None = None,
    confidence: float | None = None,
    method: str = "t",
    margin: float | None = None,
    alpha: float | None = None,
) -> dict[str, Path]:
    """Write report.html, summary.md and summary.json into `out_dir` (default: the run dir).

    `margin` (old name `threshold`) and `alpha` (or `confidence` = 1 - alpha) decide the verdict;
    `method` is the interval of the seed-paired statistics: "t" (default) or "bootstrap".
    """
    out = Path(out_dir or run_dir)
    paths = {"html": out / REPORT_HTML, "markdown": out / SUMMARY_MD, "json": out / SUMMARY_JSON}
    for path in paths.values():
        refuse_folder(path)  # before the work, not after it
    summary, figs = build(
        run_dir, threshold=threshold, confidence=confidence, method=method, margin=margin, alpha=alpha
    )
    # every text is rendered before the first file is replaced: a failure leaves the old report whole
    texts = {
        "json": json.dumps(json_safe(summary), indent=2) + "\n",
        "markdown": render_markdown(summary),
        "html": render_html(summary, figs),
    }
    out.mkdir(parents=True, exist_ok=True)
    for key, text in texts.items():
        write_text(paths[key], text)
    return paths


# ----------------------------------------------------------------------------- rendering


def _pct(iv: Mapping[str, Any] | None) -> str:
    if not iv:
        return "-"
    f = [iv["estimate"], iv["low"], iv["high"]]
    return "{:+.2%} [{}, {}]".format(f[0], *(f"{x:+.2%}" if math.isfinite(x) else "n/a" for x in f[1:]))


def _diff(iv: Mapping[str, Any] | None) -> str:
    if not iv:
        return "-"
    lo, hi = (f"{x:+.4f}" if math.isfinite(x) else "n/a" for x in (iv["low"], iv["high"]))
    return f"{iv['estimate']:+.4f} [{lo}, {hi}]"


def _f(x: Any, fmt: str = ".4f") -> str:
    return "-" if x is None or (isinstance(x, float) and not math.isfinite(x)) else format(x, fmt)


def render_markdown(summary: Mapping[str, Any], *, headlines: bool = True) -> str:
    """summary.md. `headlines=False` leaves out each verdict's headline and the notes: the HTML
    page states them once, in its verdict section, above this text."""
    lines = [
        f"# tlmsearch report: {summary.get('run_dir', '')}",
        "",
        f"Architecture: **{summary['arch']}**. Runs: {records_in_words(summary.get('counts') or {})}.",
        "",
    ]
    lines += _regime_markdown(summary.get("regime"))
    lines += _plan_markdown(summary.get("verify_plan"))
    for v in summary["verdicts"]:
        lines += _verdict_markdown(v, headline=headlines) + rate_check_markdown(v.get("rate_check"))
    for note in summary["notes"] if headlines else ():
        lines += [f"> {note}", ""]
    lines += ["## Best trials", ""] + _floor_markdown(summary.get("noise_floor"))
    lines += [
        "| trial | profile | val_loss | gap to the best | val_ppl | tokens/param | epochs | widths |",
        "|---|---|---:|---|---:|---:|---:|---|",
    ]
    for b in summary["best"]:
        lines.append(
            f"| {b['trial_id']} | `{display_name(b['profile'])}` | {_f(b['val_loss'])} | {gap_text(b)} "
            f"| {_f(b['val_ppl'], '.3f')} "
            f"| {_f(b.get('tokens_per_param'), '.3g')} | {_f(b.get('epochs'), '.3g')} "
            f"| {axes_text(b, sep='; ') or b['widths']} |"
        )
    lines += ["", f"Export the best: `tlmsearch export {summary.get('run_dir', 'RUN_DIR')} --format native`", ""]
    return "\n".join(lines)


def _regime_markdown(regime: Mapping[str, Any] | None) -> list[str]:
    """The regime (`analysis.regime`) of the search's trials and of the re-evaluations: model
    size, tokens per parameter, epochs, validation tokens, learning rate, and what it lets the
    results say."""
    lines = []
    for key, what in (("search", "the search's trials"), ("evaluation", "the re-evaluations")):
        r = (regime or {}).get(key)
        if r:
            lines += [f"Regime of {what}: {r['text'].removeprefix('regime: ')}.", ""]
    return lines


def _floor_markdown(floor: Mapping[str, Any] | None) -> list[str]:
    """The noise floor the search measured (what a search-time gap is worth), or why there is
    none: `noise_floor.floor_text`, the words of `tlmsearch status` and of the ranking figure."""
    text = floor_text(floor)
    return [text[0].upper() + text[1:] + ". Only `verify`, with fresh paired seeds, decides.", ""]


_CSS = (
    "body{font-family:sans-serif;max-width:1200px;margin:auto;padding:1em;overflow-wrap:anywhere}"
    ".headline{font-size:1.15em}.note{color:#a15c00}"
    "table{border-collapse:collapse;margin:.5em 0;font-size:.9em;width:100%}"
    "th,td{border:1px solid #ccc;padding:4px 6px;text-align:left;vertical-align:top}"
    "th{background:#f3f3f3;overflow-wrap:normal;word-break:normal;hyphens:none}"  # headers wrap between words
    "code{font-size:.95em;word-break:break-all}"
    "section{margin-bottom:1.5em}.plot{width:100%}"
)


def _html_table(table: Mapping[str, Any], table_id: str) -> str:
    head = "".join(f"<th>{html.escape(str(h))}</th>" for h in table["header"])
    body = "".join("<tr>" + "".join(f"<td>{html.escape(str(c))}</td>" for c in row) + "</tr>" for row in table["rows"])
    return f"<table id='{table_id}'><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def markdown_to_html(text: str) -> str:
    """The summary's Markdown as HTML (tables included), escaping any raw HTML in it."""
    from markdown_it import MarkdownIt

    return MarkdownIt("commonmark", {"html": False}).enable("table").render(text)


def _section_title(fig_id: str, fig: go.Figure) -> str:
    if fig_id == "pareto":
        title = str(fig.layout.title.text or "")
        return "Pareto front" if title.startswith("Pareto") else "Ranking of finished trials"
    return {**FIGURES, **OPTIONAL_FIGURES}[fig_id]


def _plan_markdown(plan: Mapping[str, Any] | None) -> list[str]:
    """The seeds the verdict stands on: the pilot (spread only) and the fresh seeds that decide."""
    if not plan:
        return []
    seeds = plan["decision_seeds"]
    text = f"Decided on {len(seeds)} seeds per profile ({seeds[0]}..{seeds[-1]})"
    p = plan.get("plan")
    if plan.get("pilot_seeds") and p:
        pilot = plan["pilot_seeds"]
        text += (
            f", planned from a pilot of {len(pilot)} seeds ({pilot[0]}..{pilot[-1]}; their paired spread "
            f"{p['sd']:.4f} nats set the number of seeds and never enters the decision): target "
            f"{p['power']:.0%} power to show cosine within the margin if all candidates equal it"
        )
        if p.get("capped"):
            need = p.get("needed") or "very many"
            text += f"; capped at {p['n_seeds']} seeds in all (the target needs {need} fresh seeds)"
    else:
        text += " (a fixed number of seeds, all deciding)"
    history = history_line(plan)  # alpha spent once: what the verification's whole history spent
    return [text + ".", *([f"Verification: {history}."] if history else []), ""]


def _verdict_markdown(v: Mapping[str, Any], *, headline: bool = True) -> list[str]:
    rc = v.get("rank_correlation") or {}
    rci = rc.get("interval")
    rc_text = "-" if rc.get("rho") is None else f"{rc['rho']:.2f}"
    rc_text += f" [{rci['low']:.2f}, {rci['high']:.2f}]" if rci else " (no interval: too few profiles)"
    ref = str(v.get("reference") or "cosine")  # what every candidate is compared with (cosine by default)
    lines = [
        f"## Verdict ({v['group']}): {v.get('outcome', '')}",
        "",
        *([f"**{v['headline']}**", ""] if headline else []),
        f"- margin {v['margin']:.1%} perplexity, declared in advance; alpha {v['alpha']:g}; "
        f"{v['n_candidates']} candidates against {ref}; {v['n_seeds']} paired seeds",
        f"- {ref} ranks {v['cosine_rank']} of {v['n_profiles']} re-evaluated profiles by mean loss",
        f"- {ref}'s regret (largest gain of any candidate over {ref}): {_pct(v['regret'])} "
        f"({level(v['regret']['confidence'])} simultaneous)",
        f"- Spearman rank correlation of search-time and verified scores over {rc.get('n', 0)} profiles: "
        f"{rc_text}; it measures {v.get('rank_correlation_measures', '')}",
    ]
    if v.get("seeds_to_decide") is not None:
        lines.append(f"- seeds per profile that would decide it, if the observed spread holds: {v['seeds_to_decide']}")
    if v.get("search_best"):
        opt, fav = v.get("search_optimism"), display_name(v["search_best"])
        lines.append(
            f"- the search's favourite `{fav}`: verified val_loss minus search val_loss at the same "
            f"steps {_f(opt, '+.4f')} (positive: the search's single trial flattered it)"
            if opt is not None
            else f"- the search's favourite `{fav}`: no winner's-curse figure (the search and the "
            "verification trained for different numbers of steps)"
        )
    if v["better"]:
        lines.append(f"- better profile: `{v['better']}` widths {v['better_widths']}")
        lines.append(f"- {describe_shape(v['better_shape']).removeprefix('; ')}")
    lines += [
        "",
        f"| rank | profile | seeds | mean loss | mean ppl | gain vs {ref} | p (better) | p (within margin) | "
        f"gain vs uniform | Δ loss vs {ref} | front-load |",
        "|---:|---|---:|---:|---:|---|---:|---:|---|---|---:|",
    ]
    for row in v["table"]:
        lines.append(
            f"| {row['rank']} | `{_shown(row)}` | {row['n_seeds']} | {row['mean_loss']:.4f} | "
            f"{row['mean_ppl']:.3f} | {_pct(row['gain_vs_cosine'])} | {_f(row.get('p_better'), '.3g')} | "
            f"{_f(row.get('p_within'), '.3g')} | {_pct(row['gain_vs_uniform'])} | "
            f"{_diff(row.get('loss_diff_vs_cosine'))} | {_f(row['front_load'], '.3f')} |"
        )
    joint = [(row["label"], text) for row in v["table"] if (text := axes_text(row, sep="; "))]
    if joint:  # the joint architectures' every axis, per layer
        lines += ["", "Per layer, the joint architectures (MLP widths, query heads, KV heads, block widths):", ""]
        lines += [f"- `{display_name(name)}`: {text}" for name, text in joint]
    lines += [
        "",
        "Gains are exp(mean over seeds of log(ppl_reference / ppl_profile)) - 1, paired by seed (positive: the "
        f"profile is better); Δ loss is profile - {ref} (negative: the profile is better); p are Holm-adjusted "
        "one-sided p-values; "
        f"intervals are two-sided {level(v['confidence'])} "
        f"{'t' if v.get('method', 't') == 't' else 'BCa bootstrap'} intervals (their ends are the one-sided "
        "bounds the tests use).",
        "",
    ]
    return lines


def _shown(row: Mapping[str, Any]) -> str:
    """A verdict row's profile for people: every name of one model ("cosine:... = linear:..."), each short."""
    return " = ".join(display_name(n) for n in str(row.get("name") or row["label"]).split(" = "))


def render_html(summary: Mapping[str, Any], figs: Mapping[str, go.Figure]) -> str:
    """One self-contained page: plotly.js inline once (the smallest bundle that draws `figs`:
    `tlmsearch.plots.bundle`), no network needed. Texts and tables are
    HTML (they wrap and are never cut); figures size themselves from their content."""
    heads = "".join(
        f"<p class='headline'><b>{html.escape(v['group'])}</b>: {html.escape(v['headline'])}</p>"
        + (f"<p class='headline'>{html.escape(v['rate_check']['headline'])}</p>" if v.get("rate_check") else "")
        for v in summary["verdicts"]
    )
    notes = "".join(f"<p class='note'>{html.escape(n)}</p>" for n in summary["notes"])
    table = summary.get("verdict_table") or {"header": [], "rows": []}
    refs = sorted({str(v.get("reference") or "cosine") for v in summary["verdicts"]})
    question = "cosine tapering" if refs in ([], ["cosine"]) else " / ".join(refs)
    verdict = (
        f"<section><h2>Verdict: is {html.escape(question)} near-optimal?</h2>"
        + (heads or "<p>No verdict yet.</p>")
        + notes
        + (_html_table(table, "verdict-table") if table["rows"] else "")
        + "</section>"
    )
    sections = []
    for fig_id in [f for f in (*FIGURES, *OPTIONAL_FIGURES) if f in figs]:
        fig = figs[fig_id]
        height = fig.layout.height or 480
        div = fig.to_html(
            full_html=False,
            include_plotlyjs=False,
            div_id=f"fig-{fig_id}",
            default_height=f"{height}px",
            default_width="100%",
            config={"responsive": True, "displaylogo": False},
        )
        sections.append(f"<section><h2>{html.escape(_section_title(fig_id, fig))}</h2>{div}</section>")
    # the page has its own title, and its verdict section states the headlines and notes once
    md = markdown_to_html(render_markdown(summary, headlines=False).split("\n", 1)[-1])
    return (
        "<!DOCTYPE html><html><head><meta charset='utf-8'>"
        "<meta name='viewport' content='width=device-width, initial-scale=1'>"
        f"<title>tlmsearch report: {html.escape(str(summary.get('run_dir', '')))}</title>"
        f"<style>{_CSS}</style>"
        f"<script type='text/javascript'>{plotly_script(figs.values())}</script></head><body>"
        f"<h1>tlmsearch report</h1><p>{html.escape(str(summary.get('run_dir', '')))} &middot; "
        f"architecture {html.escape(str(summary['arch']))} &middot; {html.escape(runs_line(summary))}</p>"
        f"{verdict}{''.join(sections)}<section id='summary'><h2>Summary</h2>{md}</section></body></html>\n"
    )


def runs_line(summary: Mapping[str, Any]) -> str:
    """Every run the records hold, by kind and status: "20 runs: 8 search trials (5 ran to the
    end, 3 stopped early), 12 verification runs (all ran to the end)"."""
    counts = summary.get("counts") or {}
    total = sum(int(n) for n in counts.values())
    return f"{total} run{'s' if total != 1 else ''}: {records_in_words(counts)}"


def json_safe(value: Any) -> Any:
    """Plain data with non-finite floats replaced by None (strict JSON)."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, Mapping):
        return {str(k): json_safe(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [json_safe(v) for v in value]
    return value
