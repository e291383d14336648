"""The search engine: Ray Tune runs the trials, Optuna samplers choose the width profiles.

    cfg = SearchConfig(arch="transformer", preset="cpu-s", space="knots", sampler="tpe", trials=32)
    study = tlmsearch.search(cfg)            # runs/<name>/: search.yaml, trials.jsonl, optuna.log, tune/
    study.best(5); study.pareto_front()      # full-fidelity trials only
    study = tlmsearch.load("runs/<name>")    # read back later; tlmsearch.tuning.resume(...) continues

Only this package imports Ray and Optuna; importing it imports neither (they load on use).
"""

from __future__ import annotations

from tlmsearch.tuning.config import SearchConfig
from tlmsearch.tuning.records import TrialRecord, read_records
from tlmsearch.tuning.study import Study, load


def search(cfg: SearchConfig, *, address: str | None = None, progress: bool = True) -> Study:
    """Run the search `cfg` describes (locally, or on the Ray cluster at `address`)."""
    from tlmsearch.tuning.runner import search as _search

    return _search(cfg, address=address, progress=progress)


def resume(run_dir: str, *, address: str | None = None, progress: bool = True) -> Study:
    """Continue an interrupted search in `run_dir` without re-running finished trials."""
    from tlmsearch.tuning.runner import resume as _resume

    return _resume(run_dir, address=address, progress=progress)


def __getattr__(name: str) -> object:
    if name in ("run_fixed", "FixedTrial"):
        from tlmsearch.tuning import fixed

        return getattr(fixed, name)
    raise AttributeError(f"module 'tlmsearch.tuning' has no attribute {name!r}")


__all__ = [
    "FixedTrial", "SearchConfig", "Study", "TrialRecord", "load", "read_records", "resume", "run_fixed", "search",
]  # fmt: skip
