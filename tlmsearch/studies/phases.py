"""The phases of a study (pure): every phase key in `study_state.json`'s order (`phase_keys`),
and the graph of which step waits for which (`phase_graph`), run by `tuning.study.run_phases`.
"""

from __future__ import annotations

from tlmsearch.configs.study import StudyConfig


def phase_keys(cfg: StudyConfig) -> list[str]:
    """Every phase key in order: per architecture its search (with its noise floor), its
    random-search companion when `random_control`, its verification; the transfers; "report"."""
    chain = ("search", "random", "verify") if cfg.random_control else ("search", "verify")
    return [f"{a}/{p}" for a in cfg.archs for p in chain] + [f"transfer/{a}" for a in cfg.archs] + ["report"]


def phase_graph(
    archs: tuple[str, ...], *, overlap: bool = True, random_control: bool = False
) -> dict[str, tuple[str, ...]]:
    """Each step of a study and the steps it waits for, in start order (pure).

    Overlapping: one search at a time, in `archs` order (each architecture's search starts when
    the previous one ends, beside that one's verification; with `random_control` its random-search
    companion follows it in the same chain); each verification after its search (and companion);
    the choice of the best profiles after every verification; the transfers after that choice,
    all at once. Sequential: each step after the one before it.
    """
    chain = ("search", "random") if random_control else ("search",)
    searches = [f"{a}/{p}" for a in archs for p in chain]
    keys = searches + [f"{a}/verify" for a in archs] + ["choose"] + [f"transfer/{a}" for a in archs]
    if not overlap:
        order = [f"{a}/{p}" for a in archs for p in (*chain, "verify")] + keys[len(searches) + len(archs) :]
        return {k: (order[i - 1],) if i else () for i, k in enumerate(order)}
    graph: dict[str, tuple[str, ...]] = {}
    for i, k in enumerate(searches):
        graph[k] = (searches[i - 1],) if i else ()
    for a in archs:
        graph[f"{a}/verify"] = (f"{a}/{chain[-1]}",)
    graph["choose"] = tuple(f"{a}/verify" for a in archs)
    for a in archs:
        graph[f"transfer/{a}"] = ("choose",)
    return graph
