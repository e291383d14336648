"""The Python blocks of the README and docs/ as a reader meets them: each compiles, holds no
placeholder to fill in (`runs/<name>`), and opens with a comment that says what it costs.
tests/integration/test_doc_python_blocks.py runs them."""

from __future__ import annotations

from pathlib import Path

import pytest
from doc_python import placeholders, python_blocks

BLOCKS = [(path, line, code) for path, blocks in python_blocks().items() for line, code in blocks]


def test_the_documents_hold_python_blocks() -> None:
    assert len(BLOCKS) >= 6 and all(path.name == "python-api.md" for path, _, _ in BLOCKS[:6])


@pytest.mark.parametrize(("path", "line", "code"), BLOCKS, ids=[f"{p.name}:{n}" for p, n, _ in BLOCKS])
def test_each_block_compiles_has_no_placeholder_and_states_its_cost(path: Path, line: int, code: str) -> None:
    compile(code, f"{path.name}:{line}", "exec")
    assert placeholders(code) == []
    first = code.splitlines()[0]
    costs = ("instant", "second", "minute", "hour", "day", "month")
    assert first.startswith("#") and any(c in first for c in costs), f"{path.name}:{line} opens without its cost"


def test_placeholders_are_found() -> None:
    assert placeholders('tlmsearch.load("runs/<name>")') == ["<name>"]
    assert placeholders("f(...)") == ["(...)"] and placeholders("x = ...") == ["= ..."]
    assert placeholders("study.report(); tlmsearch.plan(p)") == []
