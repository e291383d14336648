"""What a run's trial records are, in plain words (summary.md's opening line), from
`summary.json`'s `counts` ("kind/status" -> n). Pure."""

from __future__ import annotations

from collections.abc import Mapping

# record kinds in the order a run trains them, with the words for one and for several
_GROUPS: tuple[tuple[tuple[str, ...], str, str], ...] = (
    (("lr",), "learning-rate calibration run", "learning-rate calibration runs"),
    (("noise",), "noise-floor run", "noise-floor runs"),
    (("baseline", "sampled"), "search trial", "search trials"),
    (("verify",), "verification run", "verification runs"),
    (("compare",), "comparison run", "comparison runs"),
    (("ratecheck",), "learning-rate check run", "learning-rate check runs"),
)
_STATUS_WORDS = (("complete", "ran to the end"), ("stopped", "stopped early"), ("failed", "failed"))


def _statuses(by_status: Mapping[str, int], total: int) -> str:
    if by_status.get("complete", 0) == total:
        return "all ran to the end" if total > 1 else "ran to the end"
    return ", ".join(f"{by_status[s]} {words}" for s, words in _STATUS_WORDS if by_status.get(s))


def records_in_words(counts: Mapping[str, int]) -> str:
    """E.g. "8 search trials (5 ran to the end, 3 stopped early), 2 noise-floor runs (all ran to
    the end)"; kinds this module does not know are counted by their own name."""
    by_kind: dict[str, dict[str, int]] = {}
    for key, n in counts.items():
        kind, _, status = key.partition("/")
        by_kind.setdefault(kind, {})
        by_kind[kind][status] = by_kind[kind].get(status, 0) + int(n)
    known = {k for kinds, _, _ in _GROUPS for k in kinds}
    groups = [*_GROUPS, *(((k,), f"{k} run", f"{k} runs") for k in sorted(set(by_kind) - known))]
    parts = []
    for kinds, one, several in groups:
        merged: dict[str, int] = {}
        for kind in kinds:
            for status, n in by_kind.get(kind, {}).items():
                merged[status] = merged.get(status, 0) + n
        total = sum(merged.values())
        if total:
            parts.append(f"{total} {one if total == 1 else several} ({_statuses(merged, total)})")
    return ", ".join(parts) or "no trial records"
