"""The documents' table of a study, produced from the study's `summary.json`, never typed by hand.

A document (docs/concepts.md for the reference study) holds a study's results between two
markers (`tlmsearch.report.blocks`):

    <!-- study-table runs/reference/study -->
    ... what `readme_table(summary)` renders ...
    <!-- /study-table -->

`tlmsearch study --readme-table runs/reference/study` prints that block (markers included) from
the study's records; `check_readme` says where a README's block and a study's summary disagree
(a test runs it on the committed reference study, so the document cannot drift from the records).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from tlmsearch.errors import UserError
from tlmsearch.report.blocks import TableBlock
from tlmsearch.studies.files import STUDY_CONFIG, is_study
from tlmsearch.studies.report import length_text, preset_text, shortener, tables

MARKERS = TableBlock("study-table", "study")
# the README shows the verdicts, the cross-architecture gains and the transfer matrix (the
# per-layer widths stay in the study's own report)
SHOWN = 3


# what the README's table reads of a summary.json, and the JSON type each must have
_SHAPE: dict[str, type] = {
    "study": str, "config": dict, "answer": str, "verdicts": dict, "missing_verdicts": list,
    "cross_table": list, "transfer_matrix": list, "transfer_seeds": list,
}  # fmt: skip
_CONFIG_SHAPE: dict[str, type] = {"archs": list, "preset": str, "train": dict, "trials": int, "seed": int}


def read_summary(study_dir: str | Path) -> dict[str, Any]:
    """A study's summary.json, checked to be one: a `UserError` (one line) for a folder that is
    not a study, or a summary.json that is damaged, saying how to rebuild it."""
    path = Path(study_dir) / "summary.json"
    if not is_study(study_dir):
        has = "has no summary.json and " if not path.is_file() else ""
        raise UserError(
            f"{study_dir} {has}is not a study directory (no {STUDY_CONFIG}): the README's table is of a study, "
            "a directory made by `tlmsearch study`"
        )
    if not path.is_file():
        raise UserError(f"{study_dir} has no summary.json: run or resume the study (`tlmsearch resume {study_dir}`)")
    rebuild = f"rebuild it with `tlmsearch report {study_dir}`"
    try:
        data = json.loads(path.read_text())
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
        raise UserError(f"{path} is damaged (not readable as JSON: {e}); {rebuild}") from None
    problem = _shape_problem(data)
    if problem:
        raise UserError(f"{path} is not a study summary ({problem}); {rebuild}")
    return dict(data)


def _shape_problem(data: Any) -> str | None:
    """What keeps `data` from being a study's summary (None when the README's table can read it)."""

    def wrong(doc: Mapping[str, Any], shape: Mapping[str, type], where: str) -> str | None:
        for key, kind in shape.items():
            if key not in doc:
                return f"no key {where}{key}"
            if not isinstance(doc[key], kind) or (kind is int and isinstance(doc[key], bool)):
                return f"{where}{key} is {_json_type(doc[key])}, expected {_json_type(kind())}"
        return None

    if not isinstance(data, dict):
        return f"{_json_type(data)}, expected an object"
    problem = wrong(data, _SHAPE, "") or wrong(data["config"], _CONFIG_SHAPE, "config.")
    if problem is None and not isinstance(data["config"].get("margin"), int | float):
        problem = "config.margin is not a number"
    if problem is None and not isinstance(data["config"].get("alpha"), int | float):
        problem = "config.alpha is not a number"
    if problem is None and not isinstance(data["config"]["train"].get("steps"), int):
        problem = "config.train.steps is not a whole number"
    return problem


def _json_type(value: Any) -> str:
    """E.g. "a list", "null": what a JSON value is, in JSON's words."""
    kinds = [(bool, "a boolean"), (str, "a string"), (dict, "an object"), (list, "a list"), (int, "a whole number"),
             (float, "a number")]  # fmt: skip
    return next((name for kind, name in kinds if isinstance(value, kind)), "null")


def checked_block(summary: Mapping[str, Any], path: str) -> str:
    """`readme_block`, refusing (one line) a summary whose inner rows are not a study's."""
    try:
        return readme_block(summary, path)
    except (KeyError, TypeError, ValueError, AttributeError, IndexError) as e:
        raise UserError(
            f"{Path(path) / 'summary.json'} is not a study summary (its tables cannot be read: "
            f"{type(e).__name__} {e}); rebuild it with `tlmsearch report {path}`"
        ) from None


def readme_table(summary: Mapping[str, Any]) -> str:
    """The README's lines for a study (pure): its settings, its answer, and its tables."""
    cfg = summary["config"]
    out = [
        f"Study `{summary['study']}`: {', '.join(cfg['archs'])}; preset {preset_text(cfg)}, "
        f"{cfg['trials']} search trials each of {length_text(cfg['train'])}, seed {cfg['seed']}; "
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
    return MARKERS.block(readme_table(summary), path)


def readme_blocks(text: str) -> dict[str, str]:
    """{study path: block body} of every study table in a README's text."""
    return MARKERS.blocks(text)


def check_readme(text: str, summary: Mapping[str, Any], path: str) -> list[str]:
    """Where the README's block for `path` differs from the summary ([] when they agree)."""
    return MARKERS.check(text, readme_table(summary), path)
