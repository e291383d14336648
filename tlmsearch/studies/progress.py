"""Where a study stands, read from its files: per architecture its phase, trials ended of the
phase's total, and the best so far; plus the time its remaining trials need. The live view of a
running study (`LiveView`) and `tlmsearch status runs/<study>` print the same line:

    study st 3m12s | transformer verify 12/18-90 best linear:... 5.4321 (2 seeds)
        | gated_attention search 3/4 best uniform 5.5012 | left 4.0-21.0 min

(one line). A verification's total counts its learning-rate check's runs; it is a range until
the pilot has fixed the seeds per profile (`verify.json`'s plan), then exact (a group-sequential
plan may stop early, so it stays a range). "best" is the best single trial during a search, then the best mean
val_loss of the verified profiles; once the verification is done, its outcome. The time left
comes from `tlmsearch.studies.cost` (seconds per trial measured in the study, else calibrated).
"""

from __future__ import annotations

import shutil
import statistics
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from tlmsearch.analysis.collect import brief_label, label
from tlmsearch.configs.search import load_search_config
from tlmsearch.configs.study import StudyConfig
from tlmsearch.costs.estimate import elapsed_text, fit_line
from tlmsearch.rundir.io import read_verify
from tlmsearch.rundir.layout import SEARCH_CONFIG
from tlmsearch.rundir.records import LR_KIND, NOISE_KIND, RATE_KIND, SEARCH_KINDS, finished, read_records_polled
from tlmsearch.studies.cost import (
    estimate,
    phase_trials,
    phase_weights,
    rate_check_trials,
    remaining_seconds,
    weighted_trials,
)
from tlmsearch.studies.files import TRANSFER_KIND, load_config, read_state, transfer_dir

ORDER = ("search", "verify", "transfer")


@dataclass(frozen=True)
class ArchProgress:
    arch: str
    phase: str  # search | verify | transfer: the first phase not done; "done" when all are
    running: bool  # whether that phase has started (else it waits for the phases it needs)
    ended: int  # trials of that phase ended
    total: tuple[int, int]  # (fewest, most) trials of that phase
    best: str  # the best so far, or the outcome once verified
    left: tuple[float, float]  # (fewest, most) trials still to train, every phase, counted in search trials

    def short(self) -> str:
        """`text` for a narrow terminal: the architecture's first 8 letters, no "best" word."""
        arch = self.arch if len(self.arch) <= 8 else self.arch[:8]
        if self.phase == "done":
            return f"{arch} done {self.best}".rstrip()
        lo, hi = self.total
        total = str(lo) if lo == hi else f"{lo}-{hi}"
        return f"{arch} {self.phase}{'' if self.running else ' (waiting)'} {self.ended}/{total} {self.best}".rstrip()

    def text(self) -> str:
        if self.phase == "done":
            return f"{self.arch} done {self.best}".rstrip()
        lo, hi = self.total
        total = str(lo) if lo == hi else f"{lo}-{hi}"
        waiting = "" if self.running else " (waiting)"
        best = f" best {self.best}" if self.best else ""
        return f"{self.arch} {self.phase}{waiting} {self.ended}/{total}{best}"


def _key(arch: str, phase: str) -> str:
    return f"transfer/{arch}" if phase == "transfer" else f"{arch}/{phase}"


def arch_progress(cfg: StudyConfig, study_dir: Path, arch: str, phases: dict[str, Any]) -> ArchProgress:
    status = {p: phases.get(_key(arch, p), {}).get("status", "pending") for p in ORDER}
    spans = phase_trials(cfg)
    records = read_records_polled(study_dir / arch)  # the live view asks every second
    moved = read_records_polled(transfer_dir(study_dir, arch))
    ended = {
        # its total counts the floor and the learning-rate calibration
        "search": sum(r.kind in (*SEARCH_KINDS, NOISE_KIND, LR_KIND) for r in records),
        "verify": sum(r.kind in ("verify", RATE_KIND) for r in records),  # its total counts the rate check's runs
        "transfer": sum(r.kind == TRANSFER_KIND for r in moved),
    }
    doc = read_verify(study_dir / arch)
    if (planned := planned_verify_trials(cfg, records, doc)) is not None:
        spans["verify"] = (planned, planned)
    sub = transfer_dir(study_dir, arch) / SEARCH_CONFIG
    if sub.is_file():  # the transfer knows its trials once it has started
        n = load_search_config(sub).trials
        spans["transfer"] = (n, n)
    totals = {p: (ended[p], ended[p]) if status[p] == "done" else spans[p] for p in ORDER}
    left = {p: (max(0, totals[p][0] - ended[p]), max(0, totals[p][1] - ended[p])) for p in ORDER}
    left_lo, left_hi = weighted_trials(left, phase_weights(cfg, arch))  # verification trials train longer
    current = next((p for p in ORDER if status[p] != "done"), None)
    if current is None:
        outcome = phases.get(f"{arch}/verify", {}).get("outcome") or "no verdict"
        return ArchProgress(arch, "done", True, 0, (0, 0), str(outcome), (0, 0))
    if current == "transfer" or status["verify"] == "done":
        best = str(phases.get(f"{arch}/verify", {}).get("outcome") or "")
    elif current == "verify" and ended["verify"]:  # decided and checking the rate: say so
        best = _best_verified(records) + ("; learning-rate check" if doc.get("complete") and cfg.rate_check else "")
    else:
        best = _best_trial(records)
    running = status[current] == "running"
    return ArchProgress(arch, current, running, ended[current], totals[current], best, (left_lo, left_hi))


def planned_verify_trials(cfg: StudyConfig, records: list[Any], doc: dict[str, Any]) -> int | None:
    """The verification's trials once its pilot has fixed the seeds per profile (`verify.json`'s
    plan): the verified profiles times those seeds, plus the learning-rate check's runs (cosine
    and the best candidate at half and twice the rate on `rate_check` seeds, and at the base rate
    the seeds the verification lacks). None before the plan, or for a group-sequential plan,
    which may stop early."""
    plan = doc.get("plan") or {}
    seeds = plan.get("n_seeds")
    if not isinstance(seeds, int) or seeds < 1 or doc.get("sequential") or plan.get("sequential"):
        return None
    profiles = len({label(r) for r in records if r.kind == "verify"})
    return profiles * seeds + rate_check_trials(cfg.rate_check, int(plan.get("final_seeds", seeds)))


def _best_trial(records: list[Any]) -> str:
    done = finished(records)
    if not done:
        return ""
    r = min(done, key=lambda r: r.metric("val_loss"))
    return f"{brief_label(r.profile)} {r.metric('val_loss'):.4f}"


def _best_verified(records: list[Any]) -> str:
    by: dict[str, list[float]] = {}
    shown: dict[str, str] = {}
    for r in finished(records, kinds=("verify",)):
        by.setdefault(label(r), []).append(r.metric("val_loss"))
        shown[label(r)] = brief_label(r.profile)
    if not by:
        return ""
    name, losses = min(by.items(), key=lambda kv: statistics.fmean(kv[1]))
    return f"{shown[name]} {statistics.fmean(losses):.4f} ({len(losses)} seed{'s' * (len(losses) > 1)})"


def snapshot(study_dir: str | Path) -> tuple[StudyConfig, list[ArchProgress]]:
    study_dir = Path(study_dir)
    cfg = load_config(study_dir)
    phases = read_state(study_dir)["phases"]
    return cfg, [arch_progress(cfg, study_dir, a, phases) for a in cfg.archs]


def time_left(cfg: StudyConfig, study_dir: str | Path, rows: list[ArchProgress]) -> tuple[float, float] | None:
    """(fewest, most) seconds the remaining trials need, or None without seconds per trial."""
    return remaining_seconds(estimate(cfg, study_dir), {r.arch: r.left for r in rows})


def fmt_seconds(seconds: float) -> str:
    return f"{seconds / 3600:.1f} h" if seconds >= 5400 else f"{seconds / 60:.1f} min"


def study_line(
    name: str,
    rows: list[ArchProgress],
    left: tuple[float, float] | None,
    elapsed: float | None = None,
    width: int | None = None,
) -> str:
    """The one line of the live view and of `status` (pure). With `width` (a terminal's), a line
    that does not fit puts the most important first: the study, the time left, the architectures
    at work (phase, done/total, best), then those waiting or done; cut from the right only then."""
    head = f"study {name}" + (f" {elapsed_text(elapsed)}" if elapsed is not None else "")
    parts = [head, *(r.text() for r in rows)]
    left_part = ""
    if any(r.left != (0, 0) for r in rows):
        left_part = f"left {fmt_seconds(left[0])}-{fmt_seconds(left[1])}" if left else "left: no seconds yet"
        parts.append(left_part)
    line = " | ".join(parts)
    if width is None or len(line) <= width:
        return line
    busy = [r.short() for r in rows if r.running and r.phase != "done"]
    others = [r.short() for r in rows if not (r.running and r.phase != "done")]
    head = f"study {name if len(name) <= 8 else name[:7] + '…'}"
    return fit_line(" | ".join([head, *([left_part] if left_part else []), *busy, *others]), width)


def current_line(study_dir: str | Path, elapsed: float | None = None) -> str:
    cfg, rows = snapshot(study_dir)
    return study_line(cfg.name, rows, time_left(cfg, study_dir, rows), elapsed)


# ----------------------------------------------------------------------------- live view


class LiveView:
    """Prints `current_line` while a study runs: on a terminal rewritten in place every
    `tty_interval` seconds; otherwise as a plain line every `interval` seconds and whenever an
    architecture changes phase. `tick()` does one round (tests call it with a fake clock);
    `start` runs it in a daemon thread until `close()`."""

    def __init__(
        self,
        study_dir: str | Path,
        *,
        stream: IO[str] | None = None,
        clock: Callable[[], float] = time.monotonic,
        interval: float = 60.0,
        tty_interval: float = 2.0,
        tty: bool | None = None,
    ) -> None:
        self.study_dir = Path(study_dir)
        self.out = stream or sys.stderr
        self.clock = clock
        self.tty = bool(getattr(self.out, "isatty", lambda: False)()) if tty is None else tty
        self.interval = tty_interval if self.tty else interval
        self._t0 = clock()
        self._last: float | None = None
        self._phases: list[str] = []
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._write = threading.Lock()  # the view's thread and the phases' notes share the stream

    @classmethod
    def start(cls, study_dir: str | Path, **kwargs: Any) -> LiveView:
        view = cls(study_dir, **kwargs)
        view._thread = threading.Thread(target=view._run, name="study live view", daemon=True)
        view._thread.start()
        return view

    def _run(self) -> None:
        # a terminal's line is rewritten every `interval`; otherwise a phase change is noticed
        # within 10 s (each look reads every architecture's records: keep it rare)
        poll = min(self.interval, 10.0)
        while not self._stop.wait(poll):
            try:
                self.tick()
            except Exception:  # noqa: BLE001 - a file caught mid-write: the next round reads it again
                continue

    def tick(self) -> bool:
        """Print the line if it is due; returns whether it printed."""
        now = self.clock()
        cfg, rows = snapshot(self.study_dir)
        phases = [f"{r.arch}:{r.phase}:{r.running}" for r in rows]
        due = self._last is None or now - self._last >= self.interval or phases != self._phases
        if not due:
            return False
        width = shutil.get_terminal_size((80, 24)).columns - 1 if self.tty else None
        line = study_line(cfg.name, rows, time_left(cfg, self.study_dir, rows), now - self._t0, width)
        with self._write:
            self.out.write(("\r\033[K" + line) if self.tty else line + "\n")
            self.out.flush()
        self._last, self._phases = now, phases
        return True

    def note(self, text: str) -> None:
        """Print `text` (a phase's message, e.g. a verification's seed plan) as lines of its own:
        on a terminal above the live line, which the next round draws again."""
        lines = "".join(f"{line}\n" for line in text.splitlines())
        with self._write:
            self.out.write(("\r\033[K" + lines) if self.tty else lines)
            self.out.flush()
        self._last = None

    def close(self) -> None:
        """Stop the thread and print the last line (ending the in-place line on a terminal)."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)
        try:
            self._last = None
            self.tick()
        except Exception:  # noqa: BLE001 - never hide why the study ended behind a view's error
            pass
        finally:
            if self.tty:
                self.out.write("\n")
                self.out.flush()
