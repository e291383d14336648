"""Generated blocks of the README and docs/: figures that are printed by the code, never typed.

A block sits between two markers and holds what its source gives today:

    <!-- generated: tlmsearch plan --preset 340m --trials 0 -->
    ```text
    ...what that command prints...
    ```
    <!-- /generated -->

Sources: a `tlmsearch ...` command line (run in-process, its stdout in a text fence), a table
the code holds (`table NAME`, one of `TABLES`: presets, families, corpora, export formats,
commands) or a section of a committed record (`excerpt PATH#HEADING`: the lines under that
Markdown heading, up to the next heading of the same level). tests/unit/test_docs.py checks
every block against its source, so a changed default, count or record shows there.

    python tests/helpers/doc_blocks.py            # rewrite every block (README.md, docs/*.md, runs/reference/README.md)
    python tests/helpers/doc_blocks.py --check    # name the blocks that differ; exit status 1 if any

The record tables have markers of their own (`<!-- ladder-table DIR -->`, `<!-- study-table
DIR -->`): what `tlmsearch ladder report DIR --readme-table` and `tlmsearch study --readme-table
DIR` print from a committed run's records. The same command rewrites them (`record_tables`), so
a long run's README follows its records as they are committed.
"""

from __future__ import annotations

import contextlib
import io
import re
import shlex
import sys
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
BLOCK = re.compile(r"^<!-- generated: (?P<source>.+?) -->\n(?P<body>.*?)^<!-- /generated -->$", re.M | re.S)


def doc_files(root: Path = ROOT) -> list[Path]:
    """The documents whose commands, flags and figures are checked: the README and docs/*.md."""
    return [root / "README.md", *sorted((root / "docs").glob("*.md"))]


# ----------------------------------------------------------------------------- tables


def _table(header: list[str], rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    return "\n".join([*lines, *("| " + " | ".join(r) + " |" for r in rows)])


def _millions(n: int) -> str:
    return f"{n / 1e6:.3g}M"


def presets_table() -> str:
    from tlmsearch.configs.presets import PRESETS
    from tlmsearch.models.counts import count_params

    rows = []
    for p in PRESETS.values():
        counts = count_params(p.model_config("transformer"))
        rows.append(
            [f"`{p.name}`", str(p.d_model), str(p.n_layers), str(p.n_heads), str(p.seq_len), f"{p.vocab_size:,}",
             str(p.base_width), str(p.multiple_of), _millions(counts.non_embedding), _millions(counts.total)]
        )  # fmt: skip
    header = ["preset", "d_model", "layers", "heads", "seq", "vocab", "base width", "multiple of",
              "non-embedding params (Transformer)", "total params (Transformer)"]  # fmt: skip
    return _table(header, rows)


def families_table() -> str:
    from tlmsearch.profiles.families import FAMILIES

    rows = []
    for f in FAMILIES.values():
        params = [f"{k}={v}" for k, v in f.defaults.items()]
        if f.indexed:
            params.insert(0, f"{f.indexed}0, {f.indexed}1, ...")
        rows.append([f"`{f.name}`", ", ".join(params) or "-", f.description.replace("|", "/")])
    return _table(["family", "parameters (defaults)", "what it is"], rows)


def corpora_table() -> str:
    from tlmsearch.data.corpora import BUILTIN

    rows = [[f"`{c.name}`", f"{c.approx_mb:g}", c.description, c.source] for c in BUILTIN.values()]
    return _table(["corpus", "MB (bytes = tokens with the byte tokenizer)", "what it is", "source"], rows)


def formats_table() -> str:
    from tlmsearch.export.formats import FORMATS

    rows = [[f"`{f.name}`", f"`{f.filename}`", f.description, f.exact_rule] for f in FORMATS.values()]
    return _table(["format", "file", "what it is", "reader's widths"], rows)


def commands_table() -> str:
    import argparse

    from tlmsearch.cli import build_parser

    sub = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    rows = [[f"`tlmsearch {c.dest}`", str(c.help)] for c in sub._choices_actions]  # the order --help shows
    return _table(["command", "what it does"], rows)


def defaults_table() -> str:
    from tlmsearch.analysis.verdict import DEFAULT_ALPHA, DEFAULT_MARGIN
    from tlmsearch.cli import verify
    from tlmsearch.configs.quickstart import QuickstartConfig
    from tlmsearch.configs.search import SearchConfig
    from tlmsearch.configs.study import StudyConfig
    from tlmsearch.core.base import TrainConfig, deciding_train

    cfg = SearchConfig()
    screen, plain = cfg.train, TrainConfig()
    decide = deciding_train(screen)

    def length(t: TrainConfig) -> str:
        return f"{t.tokens_per_param:g} tokens per parameter" if t.tokens_per_param else f"{t.steps} steps"

    def validation(t: TrainConfig) -> str:
        return "the whole split" if t.final_eval_windows == -1 else f"{t.eval_windows} windows"

    q = QuickstartConfig()
    rows = [
        ["search, study", "preset, architecture", "--preset, --arch", f"`{cfg.preset}`, `{cfg.arch}`"],
        ["search", "trials (the baselines first)", "--trials", str(cfg.trials)],
        ["search", "baselines (each --baseline replaces the list)", "--baseline",
         ", ".join(f"`{b}`" for b in cfg.baselines)],
        ["search", "space, sampler, scheduler", "--space, --sampler, --scheduler",
         f"`{cfg.space}`, `{cfg.sampler}`, `{cfg.scheduler}`"],
        ["search", "noise-floor seeds of uniform", "--noise-seeds", str(cfg.noise_seeds)],
        ["search, study", "a trial's length (screening)", "--tokens-per-param, --steps", length(screen)],
        ["verify, study", "a deciding run's length", "--tokens-per-param, --steps", length(decide)],
        ["search, study", "learning rate, schedule", "--lr, --schedule", f"{screen.lr:g}, `{screen.schedule}`"],
        ["search, study", "final validation", "--final-eval-windows", validation(screen)],
        ["train", "length, learning rate, schedule", "--steps, --lr, --schedule",
         f"{length(plain)}, {plain.lr:g}, `{plain.schedule}`"],
        ["train, search", "batch (sequences) x accumulation", "--batch-size, --grad-accum",
         f"{screen.batch_size} x {screen.grad_accum}"],
        ["verify", "best profiles re-trained", "--top-k", str(verify.DEFAULTS["top_k"])],
        ["verify", "seeds (auto: a pilot plans them)", "--seeds", f"`{verify.DEFAULTS['seeds']}`"],
        ["verify", "pilot seeds, most seeds per profile", "--pilot-seeds, --max-seeds",
         f"{verify.DEFAULTS['pilot_seeds']}, {verify.DEFAULTS['max_seeds']}"],
        ["verify", "margin (perplexity), alpha", "--margin, --alpha", f"{DEFAULT_MARGIN:.0%}, {DEFAULT_ALPHA:g}"],
        ["study", "learning-rate check: paired seeds (0: off; a bare verify: off)", "--rate-check",
         str(StudyConfig().rate_check)],
        ["quickstart", "trials, steps, verify seeds, top-k", "--trials, --steps, --seeds, --top-k",
         f"{q.trials}, {q.steps}, {q.seeds}, {q.top_k}"],
    ]  # fmt: skip
    return _table(["command", "setting", "flag", "default"], rows)


TABLES: dict[str, Callable[[], str]] = {
    "defaults": defaults_table,
    "presets": presets_table,
    "families": families_table,
    "corpora": corpora_table,
    "formats": formats_table,
    "commands": commands_table,
}


# ----------------------------------------------------------------------------- sources


def command_output(line: str) -> str:
    """What `tlmsearch ARGS` prints on stdout, run in-process (exit status 0 required)."""
    from tlmsearch.cli import main

    words = shlex.split(line)
    if words[:1] != ["tlmsearch"]:
        raise ValueError(f"a generated command starts with tlmsearch: {line!r}")
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
        try:
            status = main(words[1:])
        except SystemExit as exc:  # argparse's own exit: a bad flag (2) or --help (0)
            status = exc.code if isinstance(exc.code, int) else 2
    if status != 0:
        raise ValueError(f"{line!r} exited with status {status}")
    return f"```text\n$ {line}\n{out.getvalue().rstrip()}\n```"


def excerpt(spec: str, root: Path = ROOT) -> str:
    """The lines under heading `HEADING` of the Markdown file `PATH` (spec `PATH#HEADING`), up to the
    next heading of the same or a higher level, blank lines at either end dropped."""
    path, _, heading = spec.partition("#")
    lines = (root / path).read_text().splitlines()
    start = next(
        (i for i, x in enumerate(lines) if x.lstrip("#").strip().startswith(heading) and x.startswith("#")), None
    )
    if start is None:
        raise ValueError(f"{path} has no heading starting with {heading!r}")
    level = len(lines[start]) - len(lines[start].lstrip("#"))
    end = next(
        (i for i in range(start + 1, len(lines)) if re.match(rf"#{{1,{level}}} ", lines[i])),
        len(lines),
    )
    return "\n".join(lines[start + 1 : end]).strip("\n")


def render(source: str, root: Path = ROOT) -> str:
    """The body a block of `source` holds today."""
    kind, _, arg = source.partition(" ")
    if kind == "tlmsearch":
        return command_output(source)
    if kind == "table":
        if arg not in TABLES:
            raise ValueError(f"no table {arg!r}; the tables are {', '.join(TABLES)}")
        return TABLES[arg]()
    if kind == "excerpt":
        return excerpt(arg, root)
    raise ValueError(f"unknown generated source {source!r} (tlmsearch ..., table NAME or excerpt PATH#HEADING)")


def blocks(text: str) -> list[tuple[str, str]]:
    """(source, body) of every generated block of a document."""
    return [(m["source"], m["body"].rstrip("\n")) for m in BLOCK.finditer(text)]


def stale_blocks(text: str, root: Path = ROOT) -> list[str]:
    """The sources of the blocks of `text` whose body is not what they give today."""
    return [source for source, body in blocks(text) if body != render(source, root)]


def rewrite(text: str, root: Path = ROOT) -> str:
    """`text` with every generated block's body rendered anew."""

    def fill(m: re.Match[str]) -> str:
        return f"<!-- generated: {m['source']} -->\n{render(m['source'], root)}\n<!-- /generated -->"

    return BLOCK.sub(fill, text)


def record_tables(text: str, root: Path = ROOT) -> tuple[str, list[str]]:
    """`text` with every ladder and study table rendered afresh from the records it names, and
    the blocks that changed ("ladder-table runs/reference/ladder8")."""
    from tlmsearch.ladders import readme as ladders
    from tlmsearch.ladders.report import ladder_summary
    from tlmsearch.studies import readme as studies

    renderers = (
        (ladders.MARKERS, lambda path: ladders.readme_table(ladder_summary(root / path))),
        (studies.MARKERS, lambda path: studies.readme_table(studies.read_summary(root / path))),
    )
    changed = []
    for markers, render_table in renderers:
        for path, body in markers.blocks(text).items():
            fresh = render_table(path)
            if fresh != body:
                changed.append(f"{markers.kind} {path}")
                text = markers.fill(text, fresh, path)
    return text, changed


def main(argv: list[str]) -> int:
    check = argv == ["--check"]
    stale = []
    for path in [*doc_files(), ROOT / "runs" / "reference" / "README.md"]:
        text = path.read_text()
        for source in stale_blocks(text):
            stale.append(f"{path.relative_to(ROOT)}: {source}")
        new, tables = record_tables(rewrite(text))
        stale += [f"{path.relative_to(ROOT)}: {what}" for what in tables]
        if not check and new != text:
            path.write_text(new)
    for line in stale:
        print(("differs: " if check else "rewritten: ") + line)
    return 1 if check and stale else 0


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))
    raise SystemExit(main(sys.argv[1:]))
