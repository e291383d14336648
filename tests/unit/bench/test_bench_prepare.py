"""The memory benchmark of `data prepare` end to end on a small corpus (`--dry`): the corpus
written, the command run as a subprocess, its token count checked, its peak memory read."""

from __future__ import annotations

import json
from pathlib import Path

from bench import bench_prepare


def test_the_generated_corpus_and_its_independent_token_count(tmp_path: Path) -> None:
    path = tmp_path / "c.jsonl"
    nbytes, docs = bench_prepare.write_corpus(path, 0.3)
    lines = path.read_text().splitlines()
    assert len(lines) == docs and nbytes == path.stat().st_size >= 300_000
    texts = [json.loads(x)["text"] for x in lines]
    assert all(50 <= len(t.split()) < 400 for t in texts)
    assert bench_prepare.expected_tokens(path) == sum(len(t) + 2 for t in texts)  # ASCII: a byte a character


def test_the_dry_run_measures_a_real_subprocess(tmp_path: Path) -> None:
    out = tmp_path / "prepare.json"
    assert bench_prepare.main(["--dry", "--tmp", str(tmp_path), "--out", str(out)]) == 0
    (row,) = json.loads(out.read_text())["results"]
    assert row["train_tokens"] + row["val_tokens"] > 2_000_000 and 10 < row["peak_rss_mb"] < 1024


def test_the_peak_is_the_childs_own_not_its_parents(tmp_path: Path) -> None:
    """A parent of more than the limit (a test worker that has trained models): Linux carries a
    forked child's high-water mark across exec, so `ru_maxrss` would report the parent's 1.1 GB
    for a command that used some 50 MB; the child's own VmHWM does not."""
    held = b"\1" * (1100 << 20)  # touched pages: resident in this process
    out = tmp_path / "prepare.json"
    assert bench_prepare.main(["--dry", "--tmp", str(tmp_path), "--out", str(out)]) == 0
    (row,) = json.loads(out.read_text())["results"]
    assert len(held) and 10 < row["peak_rss_mb"] < 400, row
