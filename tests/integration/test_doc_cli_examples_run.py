"""Every example of docs/cli.md ("One example per command") runs as written, in order, in a
temporary folder, and exits 0; the quickstart's (minutes on a CPU) is left to
tests/integration/test_quickstart.py."""

from __future__ import annotations

from pathlib import Path

import pytest
from doc_python import cli_examples

from tlmsearch.cli import main

pytestmark = pytest.mark.usefixtures("ray_session")  # the shared local Ray of tests/integration


@pytest.mark.slow
def test_the_examples_of_every_command_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    ran = []
    for argv, _ in cli_examples():
        if argv[0] == "quickstart":
            continue
        assert main(argv) == 0, argv
        ran.append(argv[0])
    assert ran[:4] == ["profiles", "data", "train", "search"] and (tmp_path / "runs" / "st1").is_dir()
