"""The README's table of a study, produced from the study's `summary.json`, never typed by hand.

The README holds a study's results between two markers:

    <!-- study-table runs/reference/study -->
    ... what `readme_table(summary)` renders ...
    <!-- /study-table -->

`tlmsearch study --readme-table runs/reference/study` prints that block (markers included) from
the study's records; `check_readme` says where a README's block and a study's summary disagree
(a test runs it on the committed reference study, so the README cannot drift from the records).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from tlmsearch.errors import UserError
from tlmsearch.study_report import shortener, tables

START = "<!-- study-table {path} -->"
END = "<!-- /study-table -->"
_BLOCK = re.compile(r"<!-- study-table (?P<path>\S+) -->\n(?P<body>.*?)\n<!-- /study-table -->", re.DOTALL)
# the README shows the verdicts, the cross-architecture gains and the transfer matrix (the
# per-layer widths stay in the study's own report)
SHOWN = 3


def read_summary(study_dir: str | Path) -> dict[str, Any]:
    path = Path(study_dir) / "summary.json"
    if not path.is_file():
        raise UserError(f"{study_dir} has no summary.json: run or resume the study (`tlmsearch resume {study_dir}`)")
    data = json.loads(path.read_text())
    if not isinstance(data, dict) or "verdicts" not in data:
        raise UserError(f"{path} is not a study summary (no verdicts)")
    return data


def readme_table(summary: Mapping[str, Any]) -> str:
    """The README's lines for a study (pure): its settings, its answer, and its tables."""
    cfg = summary["config"]
    out = [
        f"Study `{summary['study']}`: {', '.join(cfg['archs'])}; preset {cfg['preset']}, "
        f"{cfg['train']['steps']} steps, {cfg['trials']} search trials each, seed {cfg['seed']}; "
        f"margin {cfg['margin']:.1%}, alpha {cfg['alpha']:g}.",
        "",
        f"**Is one shape best everywhere, and is it cosine?** {shortener(summary)(summary['answer'])}.",
    ]
    for title, header, rows in tables(summary)[:SHOWN]:
        out += ["", f"*{title}*", "", "| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
        out += ["| " + " | ".join(c.replace("|", "/") for c in r) + " |" for r in rows]
    return "\n".join(out)


def readme_block(summary: Mapping[str, Any], path: str) -> str:
    """`readme_table` between the markers, naming the study directory `path`."""
    return f"{START.format(path=path)}\n{readme_table(summary)}\n{END}"


def readme_blocks(text: str) -> dict[str, str]:
    """{study path: block body} of every study table in a README's text."""
    return {m["path"]: m["body"] for m in _BLOCK.finditer(text)}


def check_readme(text: str, summary: Mapping[str, Any], path: str) -> list[str]:
    """Where the README's block for `path` differs from the summary ([] when they agree)."""
    blocks = readme_blocks(text)
    if path not in blocks:
        return [f"the README has no study table for {path} (expected {START.format(path=path)})"]
    want, have = readme_table(summary).splitlines(), blocks[path].splitlines()
    problems = [
        f"line {i + 1}: README has {h!r}, the study says {w!r}"
        for i, (h, w) in enumerate(zip(have, want, strict=False))
        if h != w
    ]
    if len(have) != len(want):
        problems.append(f"the README's table has {len(have)} lines, the study's {len(want)}")
    return problems
