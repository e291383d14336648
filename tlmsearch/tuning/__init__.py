"""The search engine: Ray Tune runs the trials, Optuna samplers choose the width profiles.

    cfg = SearchConfig(arch="transformer", preset="cpu-s", space="knots", sampler="tpe", trials=32)
    study = tlmsearch.search(cfg)            # runs/<name>/: search.yaml, trials.jsonl, optuna.log, tune/
    study.noise_floor()                      # uniform's seed-to-seed sd (cfg.noise_seeds seeds, before the search)
    study.best(5); study.pareto_front()      # full-fidelity trials only
    study = tlmsearch.load("runs/<name>")    # read back later; tlmsearch.tuning.resume(...) continues

Everything that trains through Ray lives here: searches, resumes, fixed trials, `verify` and
`compare`. Only this package imports Ray and Optuna; importing it imports neither (the modules
that subclass Ray's classes, `recorder`, `progress`, `searcher` and `scheduler`, load on use).
Run directories, records and `Study` are `tlmsearch.rundir`'s, re-exported here.
"""

from __future__ import annotations

from tlmsearch.configs.search import SearchConfig
from tlmsearch.rundir.records import TrialRecord, read_records
from tlmsearch.rundir.study import Study, load
from tlmsearch.tuning.fixed import FixedTrial, run_fixed
from tlmsearch.tuning.runner import resume, search

__all__ = [
    "FixedTrial", "SearchConfig", "Study", "TrialRecord", "load", "read_records", "resume", "run_fixed", "search",
]  # fmt: skip
