"""When to train trials as packs: `--pack auto|on|off` and the measured rule behind `auto` (pure).

`auto` packs only where a pack was measured faster than the same members trained separately
(bench/bench_pack.py, bench/README.md section 16): the table `MEASURED` holds, per device
kind, thread count and dtype, the packed/separate ratio of training time at measured model
sizes (non-embedding parameters, 4 members). A model packs when every measured size at or
above its own, up to the first measured one, says faster: precisely, when the smallest
measured size >= the model's has a ratio above 1 and so does every measured size below it.
A size above the largest measured, or a setting (device, threads, dtype) never measured,
stays separate: `auto` never guesses.

On CPU at one thread, float32 (2026-12-02, bench/data/pack-cpu-*.json): tiny 1.44x, cpu-xs
0.91x, cpu-s 0.83x; at two threads tiny measured 0.15x. So `auto` packs CPU trials of at most
tiny's 20,640 non-embedding parameters at one thread, in packs of at most the 4 members
measured, and nothing else; no GPU figure has been taken yet (bench/device_check.sh's `pack`
step measures it), so on CUDA `auto` trains separately until one is added here.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from tlmsearch.configs.verify import check_pack

# (device kind, threads per trial, dtype) -> ((non-embedding parameters, packed/separate ratio of
# training time), ...) ascending in size; each measured with MEASURED_MEMBERS members
MEASURED: dict[tuple[str, int, str], tuple[tuple[int, float], ...]] = {
    ("cpu", 1, "float32"): ((20_640, 1.44), (320_320, 0.91), (1_607_808, 0.83)),  # tiny, cpu-xs, cpu-s
    ("cpu", 2, "float32"): ((20_640, 0.15),),  # tiny; cpu-xs/cpu-s at 2 threads measured stalls (one repeat)
}
MEASURED_MEMBERS = 4  # the members of every measured pack: auto's packs hold at most this many
MAX_MEMBERS = 16  # `on`: at most this many members in one pack


@dataclass(frozen=True)
class PackChoice:
    """What `choose` decided: pack or not, at most how many members a pack, and why (one line)."""

    pack: bool
    max_members: int
    reason: str


def measured_faster(device: str, threads: int, dtype: str, non_embedding: int) -> tuple[bool, str]:
    """Whether bench_pack measured a pack faster for a model of `non_embedding` parameters
    trained on `device` ("cpu"/"cuda") at `threads` threads in `dtype`, and why (see the module doc)."""
    points = MEASURED.get((device, threads, dtype))
    where = f"{device}, {threads} thread{'s' if threads != 1 else ''}, {dtype}"
    if not points:
        return False, f"no packed/separate figure measured for {where}"
    for size, ratio in points:
        if ratio <= 1.0:
            return False, f"packs measured {ratio:.2f}x of separate trials at {size:,} parameters ({where})"
        if non_embedding <= size:
            return True, f"packs measured {ratio:.2f}x faster at {size:,} >= {non_embedding:,} parameters ({where})"
    size, _ = points[-1]
    return False, f"{non_embedding:,} parameters is above the largest size measured, {size:,} ({where})"


def choose(mode: str, *, device: str, threads: int, dtype: str, non_embedding: int, members: int) -> PackChoice:
    """Pack `members` trials of one shape or not, as `mode` says ("off": never; "on": always, at
    most MAX_MEMBERS a pack; "auto": where `measured_faster`, at most MEASURED_MEMBERS a pack)."""
    mode = check_pack(mode)
    if mode == "off":
        return PackChoice(False, 1, "--pack off")
    if mode == "on":
        return PackChoice(members > 0, MAX_MEMBERS, "--pack on")
    if members < 2:
        return PackChoice(False, 1, "auto: fewer than 2 trials of one shape to pack")
    faster, why = measured_faster(device, threads, dtype, non_embedding)
    return PackChoice(faster, MEASURED_MEMBERS if faster else 1, f"auto: {why}")


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
