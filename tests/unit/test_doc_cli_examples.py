"""docs/cli.md holds an example of every command, each with its cost beside it
(tests/integration/test_doc_cli_examples_run.py runs them)."""

from __future__ import annotations

from doc_python import cli_examples

from tlmsearch.cli import COMMANDS


def test_every_command_has_an_example_with_its_cost() -> None:
    examples = cli_examples()
    assert {argv[0] for argv, _ in examples} == set(COMMANDS)
    costs = ("instant", "second", "minute", "hour")
    assert all(any(c in cost for c in costs) for _, cost in examples), [c for _, c in examples]
