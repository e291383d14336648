"""summary.md says what a run's records are in plain words (`analysis.counts`)."""

from __future__ import annotations

from analysis_fakes import search_records, verify_records, write_run

from tlmsearch.analysis.counts import records_in_words
from tlmsearch.report.run import write_report

QUICKSTART = {  # the counts of a default quickstart
    "baseline/complete": 4, "noise/complete": 2, "sampled/complete": 1, "sampled/stopped": 3, "verify/complete": 10,
}  # fmt: skip


def test_a_quickstart_in_words() -> None:
    assert records_in_words(QUICKSTART) == (
        "2 noise-floor runs (all ran to the end), 8 search trials (5 ran to the end, 3 stopped early), "
        "10 verification runs (all ran to the end)"
    )


def test_failures_single_runs_and_unknown_kinds() -> None:
    words = records_in_words({"sampled/failed": 1, "lr/complete": 1, "transfer/complete": 2, "transfer/failed": 1})
    assert words == (
        "1 learning-rate calibration run (ran to the end), 1 search trial (1 failed), "
        "3 transfer runs (2 ran to the end, 1 failed)"
    )
    assert records_in_words({}) == "no trial records"


def test_summary_md_opens_with_the_runs_in_words(tmp_path) -> None:  # noqa: ANN001
    run = write_run(tmp_path / "run", search_records() + verify_records())
    first = write_report(run)["markdown"].read_text().splitlines()[2]
    assert first.startswith("Architecture: **") and "Runs: " in first and "search trials (" in first, first
    assert "trial records" not in first
