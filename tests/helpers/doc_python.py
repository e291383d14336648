"""The Python blocks of the README and docs/: found, checked for placeholders, and run in order.

    for path, blocks in python_blocks().items(): ...     # (line, code) of each ```python block
    run_document(blocks, namespace={}, timings=[])       # one session per document, each block timed

tests/unit/test_doc_python_static.py checks that every block compiles and holds no placeholder;
tests/integration/test_doc_python_blocks.py runs them all (at the tiny sizes they are written at).
"""

from __future__ import annotations

import re
import time
from pathlib import Path
from typing import Any

from doc_blocks import ROOT, doc_files

PYTHON_FENCE = re.compile(r"^```python\n(.*?)^```$", re.M | re.S)
# what a reader would have to replace before a block runs: <name>, RUN_DIR-style capitals in a
# string, an ellipsis standing for arguments
PLACEHOLDER = re.compile(r"<[a-z_ -]+>|[\"']RUN_DIR[\"']|\(\.\.\.\)|\[\.\.\.\]|=\s*\.\.\.")


def python_blocks(root: Path = ROOT) -> dict[Path, list[tuple[int, str]]]:
    """Each document's Python blocks as (first line number, code), documents without any left out."""
    out = {}
    for path in doc_files(root):
        text = path.read_text()
        blocks = [(text.count("\n", 0, m.start(1)) + 1, m[1]) for m in PYTHON_FENCE.finditer(text)]
        if blocks:
            out[path] = blocks
    return out


def placeholders(code: str) -> list[str]:
    return [m[0] for m in PLACEHOLDER.finditer(code)]


def run_document(
    path: Path, blocks: list[tuple[int, str]], namespace: dict[str, Any], timings: list[tuple[str, float]]
) -> None:
    """Run `blocks` one after the other in `namespace`, appending ("doc:line", seconds) to `timings`."""
    for line, code in blocks:
        where = f"{path.relative_to(ROOT)}:{line}"
        start = time.perf_counter()
        exec(compile(code, where, "exec"), namespace)  # noqa: S102 - the documentation's own examples
        timings.append((where, time.perf_counter() - start))


# ----------------------------------------------------------------------------- docs/cli.md's examples

EXAMPLES_HEADING = "## One example per command, with what it costs"


def cli_examples(root: Path = ROOT) -> list[tuple[list[str], str]]:
    """(argv after `tlmsearch`, the cost comment) of each example under docs/cli.md's heading
    `EXAMPLES_HEADING`, continuation lines joined."""
    import shlex

    text = (root / "docs" / "cli.md").read_text()
    section = text.split(EXAMPLES_HEADING, 1)[1]
    block = re.search(r"^```bash\n(.*?)^```$", section, re.M | re.S)
    assert block is not None, f"docs/cli.md: no bash block under {EXAMPLES_HEADING!r}"
    out = []
    for line in block[1].replace("\\\n", " ").splitlines():
        command, _, cost = line.partition("  #")
        words = shlex.split(command)
        if words:
            out.append((words[1:] if words[0] == "tlmsearch" else words, cost.strip()))
    return out
