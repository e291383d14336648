"""The README's table of a ladder, rendered from the ladder's records, never typed by hand.

    <!-- ladder-table runs/reference/ladder -->
    ... what `readme_table(ladder_summary(dir))` renders ...
    <!-- /ladder-table -->

`tlmsearch ladder report runs/reference/ladder --readme-table` prints that block (markers
included) from the records, writing nothing; `check_readme` says where a README's block and the
records disagree (a test runs it on the committed reference ladder). The README shows the
conclusion, the points and the gains per point; the trends with every profile's extrapolation
stay in the ladder's own summary.md.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from tlmsearch.ladders.report import tables
from tlmsearch.report.blocks import TableBlock

MARKERS = TableBlock("ladder-table", "ladder")
# the tables of `ladders.report.tables` the README shows: the points, the gain over uniform per
# point, the trend over uniform (cosine's line is the paper's claim), the gain over cosine per point
SHOWN = (0, 1, 2, 3)


def _size(n: int) -> str:
    return f"{n / 1e6:.3g}M" if n >= 1e6 else f"{n / 1e3:.3g}K"


QUESTIONS = {  # what a ladder's arm asks: over compute at one depth, or over depth at equal parameters
    "compute": "Does cosine's gain hold as the model grows?",
    "depth": "Does cosine's standing change with depth?",
}


def readme_table(summary: Mapping[str, Any]) -> str:
    """The README's lines for a ladder (pure): its settings, its conclusion and its tables."""
    points = summary["points"]
    sizes = [int(p["non_embedding"]) for p in points]
    lengths = sorted({f"{p['tokens_per_param']:g}" for p in points})
    out = [
        f"Ladder `{summary['ladder']}` ({summary['arch']}): {len(points)} points, {_size(min(sizes))} to "
        f"{_size(max(sizes))} non-embedding parameters, {' / '.join(lengths)} tokens per parameter; "
        f"margin {summary['margin']:.1%}, alpha {summary['alpha']:g}.",
        "",
        f"**{QUESTIONS.get(summary.get('arm', 'compute'), QUESTIONS['compute'])}** {summary['conclusion']}.",
    ]
    all_tables = tables(summary)
    for index in SHOWN:
        title, header, rows = all_tables[index]
        out += ["", f"*{title}*", "", "| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
        out += ["| " + " | ".join(c.replace("|", "/") for c in r) + " |" for r in rows]
    return "\n".join(out)


def readme_block(summary: Mapping[str, Any], path: str) -> str:
    """`readme_table` between the markers, naming the ladder directory `path`."""
    return MARKERS.block(readme_table(summary), path)


def check_readme(text: str, summary: Mapping[str, Any], path: str) -> list[str]:
    """Where the README's block for `path` differs from the ladder's records ([] when they agree)."""
    return MARKERS.check(text, readme_table(summary), path)
