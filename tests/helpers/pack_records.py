"""Packed trials give the records of unpacked ones: the comparison the `--pack` tests share.

A packed record has exactly the fields of the same trial's unpacked record and the same values,
up to summation order in float32 (`TOL`; tests/unit/pack/test_pack_records.py measures it);
only times and throughputs (`TIMES`) are the pack's.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

TOL = 2e-5  # float32: a member's numbers against the trial alone
TIMES = {"tokens_per_s", "mfu", "elapsed_s", "wall_s", "train_time_s"}  # measured, not learned
SAME = ("status", "widths", "budget", "model", "train", "data", "baseline", "steps", "devices", "params")


def records_of(run: Path, kind: str) -> list[dict[str, Any]]:
    """`run`'s records of `kind`, in file order."""
    lines = [json.loads(x) for x in (run / "trials.jsonl").read_text().splitlines() if x.strip()]
    return [r for r in lines if r["kind"] == kind]


def key(r: dict[str, Any]) -> tuple[str, int, Any]:
    """A record's trial: its profile, seed and rate (the rate check's runs differ in rate only)."""
    return json.dumps(r["profile"], sort_keys=True), r["seed"], (r.get("params") or {}).get("lr")


def assert_same_records(off: list[dict[str, Any]], on: list[dict[str, Any]], tol: float = TOL) -> None:
    """`on` (packed) holds the trials of `off` (separate), once each, with the same fields and values."""
    a, b = {key(r): r for r in off}, {key(r): r for r in on}
    assert len(a) == len(off) and len(b) == len(on), "a trial recorded twice"
    assert set(a) == set(b), sorted(set(a) ^ set(b))
    for k, x in a.items():
        y = b[k]
        assert set(x) == set(y) and set(x["metrics"]) == set(y["metrics"]), k
        for field in SAME:
            assert x.get(field) == y.get(field), (k, field, x.get(field), y.get(field))
        assert len(x["curve"]) == len(y["curve"]), k
        for m, n in [(x["metrics"], y["metrics"]), *zip(x["curve"], y["curve"], strict=True)]:
            for name in set(m) - TIMES:
                if isinstance(m[name], int | float):
                    assert math.isclose(m[name], n[name], rel_tol=tol, abs_tol=tol), (k, name, m[name], n[name])
                else:
                    assert m[name] == n[name], (k, name)
