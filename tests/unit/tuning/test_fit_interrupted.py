"""A cut batch of trials says which batch was cut: a verification interrupted by Ctrl-C says
"verify interrupted; resume with: ...", not "search interrupted" (the word every batch used)."""

from __future__ import annotations

import signal
from collections.abc import Iterator
from pathlib import Path

import pytest

from tlmsearch.configs.search import SearchConfig
from tlmsearch.tuning import interrupts, runner


class _Tuner:
    def fit(self) -> None:  # ends with fewer records than trials, as a Ctrl-C leaves it
        return None


@pytest.fixture(autouse=True)
def _a_fresh_command(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """No cluster to ask; each test a new command (`interrupts.watch`), the handlers put back."""
    monkeypatch.setattr(runner, "_limit_pending", lambda cfg: None)
    monkeypatch.setenv("TUNE_DISABLE_SIGINT_HANDLER", "1")  # the fake Tuner installs no handler of Tune's
    handlers = signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM)
    interrupts.watch()
    yield
    interrupts.watch()  # forget the cut this test made
    signal.signal(signal.SIGINT, handlers[0])
    signal.signal(signal.SIGTERM, handlers[1])


@pytest.mark.parametrize(("what", "said"), [(None, "search"), ("verify", "verify"), ("compare", "compare")])
def test_a_cut_batch_names_itself_and_the_resume_command(tmp_path: Path, what: str | None, said: str) -> None:
    extra = {"what": what} if what else {}
    with pytest.raises(KeyboardInterrupt) as cut:
        runner.fit_trials(_Tuner(), tmp_path, 3, lambda: 1, SearchConfig(), **extra)
    assert str(cut.value) == f"{said} interrupted; resume with: tlmsearch resume {tmp_path}"


def test_a_batch_with_every_record_is_not_cut(tmp_path: Path) -> None:
    runner.fit_trials(_Tuner(), tmp_path, 3, lambda: 3, SearchConfig(), what="verify")  # no exception
