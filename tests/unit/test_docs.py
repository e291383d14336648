"""The README and docs/ say only what is true of the code (issue 32).

- every `tlmsearch COMMAND` and every `--flag` they name exists in the CLI's parsers (a flag
  written after `tlmsearch COMMAND` in the same command line, in that command's parser);
- every `tlmsearch.NAME` they name resolves;
- every generated block holds what its source gives today (tests/helpers/doc_blocks.py);
- no measured figure (a duration, a rate, a size, FLOPs, GPU-hours, a test count, a speed
  ratio) is typed outside a generated block: measurements live in bench/README.md and the
  committed reference runs;
- the README's setup and full test commands are the ones `.ci/run` runs.

Each check is a function of the text, so the tests below also plant a wrong flag, command,
name, figure and block and see each caught.
"""

from __future__ import annotations

import argparse
import functools
import importlib
import re
from pathlib import Path

import pytest
from doc_blocks import BLOCK, ROOT, doc_files, render, stale_blocks

from tlmsearch.cli import build_parser

FENCE = re.compile(r"^[ \t]*```[^\n]*\n(.*?)^[ \t]*```$", re.M | re.S)
SPAN = re.compile(r"`([^`\n]+(?:\n[^`\n]+)?)`")
COMMAND = re.compile(r"(?<![\w./\-'\[])tlmsearch ([a-z][\w-]*)")
FLAG = re.compile(r"(?<![\w-])--[a-z][a-z0-9-]*")
NAME = re.compile(r"(?<![\w/.\-])tlmsearch(?:\.[A-Za-z_]\w*)+")
# the study's and the ladder's tables, generated from their records and checked against them
RECORD_TABLE = re.compile(r"^<!-- (study|ladder)-table .*?^<!-- /\1-table -->$", re.M | re.S)
# programs other than tlmsearch whose flags the documents quote in code
FOREIGN = ("python", "pip", "ruff", "mypy", "ray", "srun", "sbatch", "scontrol", "kubectl", "optuna-dashboard")
SEPARATORS = re.compile(r"&&|\|\||;|\||(?<!\S)#|&\s*$", re.M)
NUMBER = r"(?<![\w.\-/])\d[\d,]*(?:\.\d+)?"
FIGURES = re.compile(
    rf"{NUMBER}\s?(?:s|ms|sec|min|minutes?|seconds?|hours?|h|days?)\b(?!-)"
    rf"|{NUMBER}\s?(?:tok/s|tokens/s|s/step)"
    rf"|{NUMBER}\s?(?:KB|MB|GB|TB|KiB|MiB|GiB)\b"
    rf"|{NUMBER}\s?[KMGTPEZ]?FLOP"
    rf"|{NUMBER}\s?GPU-h"
    rf"|{NUMBER}\s+tests\b"
    rf"|{NUMBER}\s?M (?:non-embedding )?(?:parameters|tokens)\b"
    rf"|(?<![\w.\-/])\d+\.\d+\s?[×x](?!\w)"
)


@functools.cache
def parsers() -> dict[str, frozenset[str]]:
    """{command: its --flags} of every `tlmsearch` subcommand, from the CLI's own parsers."""
    top = build_parser()
    sub = next(a for a in top._actions if isinstance(a, argparse._SubParsersAction))
    out = {"": frozenset(o for a in top._actions for o in a.option_strings)}
    for name, parser in sub.choices.items():
        out[name] = frozenset(_flags_of(parser))
    return out


def _flags_of(parser: argparse.ArgumentParser) -> set[str]:
    """A parser's flags and those of its actions' own parsers (`ladder report --readme-table`)."""
    flags = {o for a in parser._actions for o in a.option_strings}
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for child in action.choices.values():
                flags |= _flags_of(child)
    return flags


def _all_flags(known: dict[str, frozenset[str]]) -> frozenset[str]:
    return frozenset().union(*known.values())


def _without_generated(text: str) -> str:
    """The text with every generated block's body and the record tables removed (their figures are
    checked against their sources instead); a block's source line stays."""
    text = BLOCK.sub(lambda m: f"<!-- generated: {m['source']} -->", text)
    return RECORD_TABLE.sub("", text)


def _code(text: str) -> tuple[list[str], str]:
    """(the code fences' and spans' texts, the prose left once they are removed)."""
    codes: list[str] = []

    def take(m: re.Match[str]) -> str:
        codes.append(m[1])
        return " "

    def take_span(m: re.Match[str]) -> str:
        codes.append(m[1].replace("\n", " "))  # a span may wrap onto the next line
        return " "

    prose = SPAN.sub(take_span, FENCE.sub(take, text))
    return codes, prose


def _command_problems(code: str, known: dict[str, frozenset[str]]) -> list[str]:
    problems = []
    code = code.replace("\\\n", " ")
    for line in code.splitlines():
        for piece in SEPARATORS.split(line):
            m = COMMAND.search(piece)
            before, after = (piece[: m.start()], piece[m.end() :]) if m else (piece, "")
            if m:
                if m[1] not in known:
                    problems.append(f"no command `tlmsearch {m[1]}`: {piece.strip()!r}")
                else:
                    bad = [f for f in FLAG.findall(after) if f not in known[m[1]]]
                    problems += [f"`tlmsearch {m[1]}` has no {f}: {piece.strip()!r}" for f in bad]
            if before.strip().split()[:1] and before.strip().split()[0] in FOREIGN:
                continue
            bad = [f for f in FLAG.findall(before) if f not in _all_flags(known)]
            problems += [f"no command has {f}: {piece.strip()!r}" for f in bad]
    return problems


def name_resolves(dotted: str) -> bool:
    """Whether `tlmsearch.a.b.c` names a module or an attribute (of a module or of a class)."""
    parts = dotted.split(".")
    for i in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:i]))
        except ImportError:
            continue
        try:
            for attr in parts[i:]:
                obj = getattr(obj, attr)
        except AttributeError:
            return False
        return True
    return False


LINK = re.compile(r"\]\(((?:docs/)?[\w-]+\.md)?(?:#([\w-]+))?\)")


def slug(heading: str) -> str:
    """GitHub's anchor of a Markdown heading."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def link_problems(text: str, where: Path) -> list[str]:
    """Links to a page or a heading of the README and docs/ that lead nowhere."""
    problems = []
    for m in LINK.finditer(text):
        page, anchor = m[1], m[2]
        target = where if page is None else (where.parent / page)
        if not target.is_file():
            problems.append(f"a link to {page}, which does not exist")
        elif anchor and anchor not in {slug(h) for h in re.findall(r"^#+ (.+)$", target.read_text(), re.M)}:
            problems.append(f"a link to {page or where.name}#{anchor}: no such heading")
    return problems


def doc_problems(text: str, known: dict[str, frozenset[str]] | None = None) -> list[str]:
    """What a document names or quotes that the code does not bear out ([] when nothing)."""
    known = parsers() if known is None else known
    text = _without_generated(text)
    codes, prose = _code(text)
    problems = []
    for code in codes:
        problems += _command_problems(code, known)
    problems += [f"no command has {f} (in prose)" for f in FLAG.findall(prose) if f not in _all_flags(known)]
    problems += [f"{n} does not exist" for n in sorted(set(NAME.findall(text))) if not name_resolves(n)]
    for n, line in enumerate(text.splitlines(), 1):
        problems += [f"a typed figure {m[0]!r} (line {n} outside generated blocks)" for m in FIGURES.finditer(line)]
    return problems


# ----------------------------------------------------------------------------- the documents


@pytest.mark.parametrize("path", doc_files(), ids=lambda p: str(p.relative_to(ROOT)))
def test_the_documents_name_only_what_exists_and_type_no_figures(path: Path) -> None:
    assert doc_problems(path.read_text()) == []
    assert link_problems(path.read_text(), path) == []


def test_the_readme_is_short_and_points_at_every_page() -> None:
    readme = (ROOT / "README.md").read_text()
    assert len(readme.splitlines()) < 250
    pages = sorted(p.name for p in (ROOT / "docs").glob("*.md"))
    assert len(pages) >= 6 and all(f"(docs/{p})" in readme for p in pages)


@pytest.mark.parametrize("path", doc_files(), ids=lambda p: str(p.relative_to(ROOT)))
def test_every_generated_block_is_what_its_source_gives(path: Path) -> None:
    stale = stale_blocks(path.read_text())
    assert stale == [], "regenerate with `python tests/helpers/doc_blocks.py`: " + "; ".join(stale)


def test_the_readme_commands_are_what_ci_runs() -> None:
    readme, ci = (ROOT / "README.md").read_text(), (ROOT / ".ci" / "run").read_text()
    ci_lines = {line.strip() for line in ci.splitlines()}
    full = [line.split("#")[0].strip() for line in readme.splitlines() if "# everything: what CI runs" in line]
    assert len(full) == 1 and full[0] in ci_lines, full
    setup = re.search(r"pip install (torch==\S+ -e \"\.\[dev\]\")", readme)
    assert setup and f"python -m pip install -q {setup[1]}" in ci_lines


def quoted_constants() -> dict[str, list[str]]:
    """{document: phrases it must contain}: the rules the prose states in numbers, each phrase
    built from the constant the code decides with (a changed constant leaves the prose behind)."""
    import inspect

    from tlmsearch.analysis.stats import MIN_BOOTSTRAP_SEEDS
    from tlmsearch.analysis.verdict import DEFAULT_ALPHA, DEFAULT_MARGIN, verdict
    from tlmsearch.core.base import DECIDE_TOKENS_PER_PARAM, SCREEN_TOKENS_PER_PARAM

    power = inspect.signature(verdict).parameters["power"].default
    margin, alpha = f"{DEFAULT_MARGIN:.0%}", f"{DEFAULT_ALPHA:g}"
    four = f"{1 - 2 * DEFAULT_ALPHA / 4:.1%}"
    return {
        "README.md": [
            f"({margin} perplexity by default",
            f"stays at alpha ({alpha})",
            f"({four} with four candidates)",
        ],
        "docs/statistics.md": [
            f"(`--margin`, default {margin} perplexity)",
            f"(`--alpha`, default {alpha})",
            f"({four} with four candidates at alpha {alpha}, {1 - 2 * DEFAULT_ALPHA / 8:.2%} with eight)",
            f"`1 - 2·alpha`, {1 - 2 * DEFAULT_ALPHA:.0%} by default",
            f"(at {power:.0%} power)",
            f"refused below {MIN_BOOTSTRAP_SEEDS} deciding seeds",
            f"at {DECIDE_TOKENS_PER_PARAM:g} or more tokens per parameter and screens at "
            f"{SCREEN_TOKENS_PER_PARAM:g} or more",
        ],
    }


def test_the_numbers_the_prose_states_are_the_codes() -> None:
    for name, phrases in quoted_constants().items():
        text = " ".join((ROOT / name).read_text().split())
        assert [p for p in phrases if p not in text] == [], name


# ----------------------------------------------------------------------------- the checks can fail


def test_a_wrong_flag_command_name_or_figure_is_caught() -> None:
    good = (
        "Run `tlmsearch search --trials 4 --noise-seeds 0` or\n\n```bash\ntlmsearch verify runs/x --top-k 3 \\\n"
        "    --max-seeds 8 && tlmsearch report runs/x\nkubectl exec -it pod -- tlmsearch status runs/x --json\n"
        "python -m pytest -q -n 2\n```\n\nwith `--compile` and `tlmsearch.Budget`, `tlmsearch.models.ARCHITECTURES`.\n"
    )
    assert doc_problems(good) == []
    planted = {
        "`tlmsearch search --trails 4`": "`tlmsearch search` has no --trails",
        "```\ntlmsearch verify runs/x \\\n    --top-k 3 --trials 2\n```": "`tlmsearch verify` has no --trials",
        "`tlmsearch serch --trials 4`": "no command `tlmsearch serch`",
        "set `--no-such-flag` first": "no command has --no-such-flag",
        "`tlmsearch.no_such_name`": "tlmsearch.no_such_name does not exist",
        "`tlmsearch.profiles.no_such_family`": "tlmsearch.profiles.no_such_family does not exist",
        "it took 171 s here": "a typed figure '171 s'",
        "at 2,614 tok/s": "a typed figure '2,614 tok/s'",
        "Titans 6.37 GFLOP per token": "a typed figure '6.37 GFLOP'",
        "1,510 tests in all": "a typed figure '1,510 tests'",
        "Hope runs 0.34× as fast": "a typed figure '0.34×'",
        "a 4.9 MB report": "a typed figure '4.9 MB'",
    }
    for text, problem in planted.items():
        found = doc_problems(good + "\n" + text + "\n")
        assert len(found) == 1 and found[0].startswith(problem), (text, found)


def test_a_link_to_a_missing_page_or_heading_is_caught(tmp_path: Path) -> None:
    (tmp_path / "guide.md").write_text("# A\n\n## The regime: tokens per parameter\n")
    readme = tmp_path / "README.md"
    good = "[a](guide.md) and [r](guide.md#the-regime-tokens-per-parameter) and [x](https://example.org)"
    assert link_problems(good, readme) == []
    assert link_problems("[b](gone.md)", readme) == ["a link to gone.md, which does not exist"]
    assert link_problems("[r](guide.md#the-regime)", readme) == ["a link to guide.md#the-regime: no such heading"]


def test_figures_inside_a_generated_block_are_checked_against_their_source_instead() -> None:
    source = "tlmsearch plan --preset 170m --trials 8 --tokens 1e9 --seeds 2 --gpus 2"
    body = render(source)
    assert "GPU-h" in body and "FLOP" in body and doc_problems(body)  # typed, these would be refused
    text = f"Costs:\n\n<!-- generated: {source} -->\n{body}\n<!-- /generated -->\n"
    assert doc_problems(text) == [] and stale_blocks(text) == []
    edited = text.replace("GPU-h", "GPU-h ", 1)
    assert stale_blocks(edited) == [source]
    wrong = text.replace("--seeds 2", "--seeds 2 --trails 3")
    with pytest.raises(ValueError, match="exited with status 2"):
        stale_blocks(wrong)
