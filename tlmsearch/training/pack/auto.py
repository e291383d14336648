"""When to train trials as packs: `--pack auto|on|off` and the measured rule behind `auto` (pure).

`auto` packs only where a pack was measured faster than the same members trained separately
(bench/bench_pack.py, bench/README.md section 16): the table `MEASURED` holds, per device kind,
thread count and dtype, the packed/separate ratio of training time at measured model sizes
(non-embedding parameters) and member counts: the slowest of at least two repeats (a cell
measured once is not in it). A pack of M members is "measured faster" for a model when the
smallest measured size >= the model's, and every measured size below it, has a ratio above 1
at M members. A size above the largest measured, a member count or a setting (device, threads,
dtype) never measured, counts as slower: `auto` never guesses.

`auto` then forms packs of one measured-faster member count only (the rest of the trials train
separately) and packs at all only when that plan's estimated time beats separate trials on the
same parallel slots (`plan_time`): k packs of M members take ceil(k / slots) waves of M / ratio
trial-times, the rest ceil(rest / slots) waves of one, against ceil(n / slots) for all
separately. So a pack is never chosen where it measured slower, nor where packing would leave
slots idle that separate trials would fill.

On CPU at one thread, float32 (2026-12-02, bench/data/pack-cpu-*.json, slowest repeats): at
tiny 1 member 0.40x, 2 members 0.92x, 3 members 0.94x, 4 members 1.56x (one run, side by side);
cpu-xs 0.91x and cpu-s 0.78x at 4 members; at two threads tiny measured 0.15x. So `auto` packs
CPU trials of at most tiny's 20,640 non-embedding parameters at one thread, in packs of 4,
where 4 / 1.56 trial-times a pack beat the slots (8 trials on 2 slots: 2 packs; 4 trials on 2
slots: separate); nothing else. No GPU figure has been taken yet (bench/device_check.sh's
`pack` step measures it), so on CUDA `auto` trains separately until one is added here.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

from tlmsearch.configs.verify import check_pack

# (device kind, threads per trial, dtype) -> ((non-embedding parameters, {members: packed/separate
# ratio of training time, the slowest repeat}), ...) ascending in size
MEASURED: dict[tuple[str, int, str], tuple[tuple[int, Mapping[int, float]], ...]] = {
    ("cpu", 1, "float32"): (
        (20_640, {1: 0.40, 2: 0.92, 3: 0.94, 4: 1.56}),  # tiny (pack-cpu-tiny-members.json)
        (320_320, {4: 0.91}),  # cpu-xs
        (1_607_808, {4: 0.78}),  # cpu-s
    ),
    ("cpu", 2, "float32"): ((20_640, {4: 0.15}),),  # tiny; cpu-xs and cpu-s at 2 threads: one repeat each
}
MAX_MEMBERS = 16  # `on`: at most this many members in one pack


@dataclass(frozen=True)
class PackChoice:
    """What `choose` decided for n trials of one shape: the sizes of the packs they form (empty:
    none packs; members beyond their sum train separately), and why (one line)."""

    sizes: tuple[int, ...]
    reason: str

    @property
    def pack(self) -> bool:
        return bool(self.sizes)


def faster_members(device: str, threads: int, dtype: str, non_embedding: int) -> tuple[dict[int, float], str]:
    """{members: measured ratio} of the pack sizes bench_pack measured faster for a model of
    `non_embedding` parameters trained on `device` ("cpu"/"cuda") at `threads` threads in
    `dtype` (see the module doc), and why (one line)."""
    points = MEASURED.get((device, threads, dtype))
    where = f"{device}, {threads} thread{'s' if threads != 1 else ''}, {dtype}"
    if not points:
        return {}, f"no packed/separate figure measured for {where}"
    faster: dict[int, float] | None = None
    for size, ratios in points:
        good = {m: r for m, r in ratios.items() if r > 1.0}
        faster = good if faster is None else {m: min(r, good[m]) for m, r in faster.items() if m in good}
        if non_embedding <= size:
            break
    else:
        size = points[-1][0]
        return {}, f"{non_embedding:,} parameters is above the largest size measured, {size:,} ({where})"
    if not faster:
        return {}, f"no pack size measured faster than separate trials at every size up to {size:,} ({where})"
    shown = ", ".join(f"{m} members {r:.2f}x" for m, r in sorted(faster.items()))
    return faster, f"packs measured faster at {size:,} >= {non_embedding:,} parameters ({where}): {shown}"


def plan_time(n: int, members: int, ratio: float, slots: int) -> float:
    """Trial-times for n trials on `slots` slots as packs of `members` (each `ratio` times as fast
    a member as a separate trial) then the rest separately; `members` 1 (ratio 1): all separately."""
    k, rest = divmod(n, members)
    return math.ceil(k / slots) * members / ratio + math.ceil(rest / slots)


def choose(
    mode: str, *, device: str, threads: int, dtype: str, non_embedding: int, members: int, slots: int = 1
) -> PackChoice:
    """The packs `members` trials of one shape form as `mode` says on `slots` parallel slots
    ("off": none; "on": all, at most MAX_MEMBERS a pack, at least `slots` packs when there are
    members enough; "auto": packs of one measured-faster size where that plan beats separate
    trials, see the module doc)."""
    mode = check_pack(mode)
    if mode == "off":
        return PackChoice((), "--pack off")
    if mode == "on":
        return PackChoice(tuple(split(members, MAX_MEMBERS, slots)), "--pack on")
    if members < 2:
        return PackChoice((), "auto: fewer than 2 trials of one shape to pack")
    faster, why = faster_members(device, threads, dtype, non_embedding)
    sizes = {m: r for m, r in faster.items() if 2 <= m <= members}
    if not sizes:
        return PackChoice((), f"auto: {why}" if not faster else f"auto: {why}; fewer trials than that ({members})")
    separate = plan_time(members, 1, 1.0, slots)
    best = min(sizes, key=lambda m: (plan_time(members, m, sizes[m], slots), -m))
    packed = plan_time(members, best, sizes[best], slots)
    if packed >= separate:
        return PackChoice(
            (),
            f"auto: {why}; but {members} trials on {slots} slot{'s' if slots != 1 else ''} take {packed:.2f} "
            f"trial-times in packs of {best} against {separate:.0f} separately",
        )
    return PackChoice((best,) * (members // best), f"auto: {why}; packs of {best}")


def split(n: int, max_members: int, slots: int = 1) -> list[int]:
    """Sizes of the packs `n` members of one shape form: at most `max_members` each, at least
    `slots` packs when there are members enough (so that packing never leaves a parallel slot
    idle that separate trials would fill), sizes as equal as possible, larger first."""
    if n <= 0:
        return []
    if max_members < 1 or slots < 1:
        raise ValueError("max_members and slots must be at least 1")
    k = max(math.ceil(n / max_members), min(slots, n))
    base, extra = divmod(n, k)
    return [base + 1] * extra + [base] * (k - extra)
