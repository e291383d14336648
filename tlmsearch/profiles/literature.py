"""The width profiles the literature argues for besides TLM's cosine, as families (pure math).

Each family is a shape function (a layer count and checked parameters -> relative widths) and
the check of its own parameters (`CHECKS`: one `ConfigError` naming the allowed range, run by
`resolve_params`, so a `ProfileSpec` with bad parameters is refused when it is parsed). Widths
are relative: `project_to_budget` scales them to the budget's total, so "normalised to the
budget" is the projection, and every profile here has exactly the parameters and FLOPs of the
uniform model. Only the MLP is shaped here: OpenELM and the Crown/Frame/Reverse variants also
scale attention heads with depth, which these families keep uniform (their question is the
MLP's width over depth); the `joint` family (`profiles.joint`) moves heads and block widths too.

`LITERATURE` names them, with the bowtie, as one set that `tlmsearch verify --controls literature`,
`tlmsearch compare --families literature` and `tlmsearch profiles --family literature` expand;
`JOINT_POINTS` (the set `joint`) names the joint baselines the same way.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from typing import Any

from tlmsearch.errors import ConfigError
from tlmsearch.profiles.interp import depths, mix


def openelm(n: int, p: Mapping[str, Any]) -> list[float]:
    """OpenELM's layer-wise scaling (Mehta et al. 2024, arXiv 2404.14619): layer i's FFN
    hidden size is beta_i * d_model with beta_i = beta_min + (beta_max - beta_min) i / (N - 1),
    beta_min = `start` = 0.5, beta_max = `end` = 4.0, a straight line in the layer index rising 8x.

    Normalised to the budget: the projection gives layer i base_width * beta_i / mean(beta), i.e.
    0.22x -> 1.78x the uniform width at the paper's values (before rounding and the budget's bounds).
    Any positive start and end are allowed (start > end is the Reverse variant; see `reverse`)."""
    s, e = p["start"], p["end"]
    return [mix(s, e, x) for x in depths(n)]


def reverse(n: int, p: Mapping[str, Any]) -> list[float]:
    """Reverse layer-wise scaling (Baroian & Notebomer 2025, "Crown, Frame, Reverse", arXiv
    2509.06518): OpenELM's straight line turned around, so that early layers are the widest:
    beta_i from `start` = 4.0 at the first layer down to `end` = 0.5 at the last. `start` must
    exceed `end` (a widening line is `openelm`)."""
    s, e = p["start"], p["end"]
    return [mix(s, e, x) for x in depths(n)]


def frame(n: int, p: Mapping[str, Any]) -> list[float]:
    """Framed layer-wise scaling (Baroian & Notebomer 2025, arXiv 2509.06518): OpenELM's line
    from `start` = 0.5 to `end` = 4.0 over all layers, with the first and the last layer (those
    the pruning literature it builds on finds least removable) replaced by a "frame" of `frame` =
    4.0. As in the authors' code (github.com/baroian/OLMo-custom,
    olmo_core/nn/transformer/model.py: `np.linspace(0.5, 4.0, n_layers)`, then `layer_freeze`
    sets the first and last FFN multipliers to 4.0; configs/LWS_freeze.yaml). All three are
    multipliers in one unit (the projection normalises them): at 12 layers the ends get 1.6x
    the uniform width and the second layer 0.3x (before rounding). `frame` > 0."""
    line = openelm(n, p)
    return _framed(line, p["frame"])


def crown(n: int, p: Mapping[str, Any]) -> list[float]:
    """Crown layer-wise scaling (arXiv 2509.06518): the paper's three-point linear interpolation,
    rising from `start` = 0.5 at the first layer to `peak` = 4.0 at the central layer (both
    central layers for an even count) and falling to `end` = 0.5 at the last, framed like
    `frame`: the first and last layer at `frame` = 4.0 ("largest middle layers; framed at both
    ends", the authors' summary). Three wide points, at both ends and in the middle, with thin
    layers between: a crown. The interpolation is the authors' (`np.interp` over the knots
    [0, ceil(L/2) - 1, (ceil(L/2) for even L,) L - 1]); whether the paper's Crown run kept the
    frame is our reading of that summary: `frame` = `start` (= `end`) gives the unframed
    three-point profile. `peak` must exceed both `start` and `end`; `frame` > 0."""
    s, top, e = p["start"], p["peak"], p["end"]
    if n <= 2:
        return [p["frame"]] * n  # nothing between the frame
    k = -(-n // 2) - 1  # the (first) central layer, ceil(L/2) - 1
    # from integers, so that mirror layers get exactly the same width when start = end
    out = [mix(s, top, i / k) if i <= k else mix(e, top, min(1.0, (n - 1 - i) / k)) for i in range(n)]
    return _framed(out, p["frame"])


def _framed(widths: list[float], f: float) -> list[float]:
    """`widths` with the first and the last layer set to the frame `f` (every layer when L <= 2)."""
    if widths:
        widths[0] = widths[-1] = f
    return widths


def middle(n: int, p: Mapping[str, Any]) -> list[float]:
    """Middle-heavy with thin ends ("Layerwise Importance Analysis of Feed-Forward Networks in
    Transformer-based Language Models", arXiv 2508.17734, COLM 2025): the MLP lives
    in `fraction` = 0.7 of the layers, consecutive and centred (round(fraction * L) of them, at
    least one; an odd remainder puts the extra thin layer at the end), and the other layers get
    `ends` = 0 times their width. The paper removes those layers' FFNs entirely; a budget keeps
    every width >= its smallest usable one, so `ends` = 0 makes them as thin as the budget allows
    (`min_width`, else `multiple_of`). fraction in (0, 1], ends in [0, 1)."""
    frac, low = p["fraction"], p["ends"]
    k = min(n, max(1, math.floor(frac * n + 0.5)))
    lead = (n - k) // 2
    return [1.0 if lead <= i < lead + k else low for i in range(n)]


def _check_reverse(p: Mapping[str, Any]) -> None:
    if not p["start"] > p["end"]:
        raise ConfigError(f"reverse: start={p['start']} must be > end={p['end']} (narrowing; openelm widens)")


def _check_frame(p: Mapping[str, Any], family: str = "frame") -> None:
    if not p["frame"] > 0:
        raise ConfigError(f"{family}: frame={p['frame']} must be > 0 (relative width of the first and last layer)")


def _check_crown(p: Mapping[str, Any]) -> None:
    top, ends = p["peak"], max(p["start"], p["end"])
    if not top > ends:
        raise ConfigError(f"crown: peak={top} must be > max(start, end) = {ends} (a crown is widest at mid-depth)")
    _check_frame(p, "crown")


def _check_middle(p: Mapping[str, Any]) -> None:
    if not 0.0 < p["fraction"] <= 1.0:
        raise ConfigError(f"middle: fraction={p['fraction']} must lie in (0, 1] (share of the layers carrying the MLP)")
    if not 0.0 <= p["ends"] < 1.0:
        raise ConfigError(f"middle: ends={p['ends']} must lie in [0, 1) (width of the thin layers / the carrying ones)")


# each family's own check of its (resolved, numeric) parameters, beyond start, end > 0
CHECKS = {"reverse": _check_reverse, "frame": _check_frame, "crown": _check_crown, "middle": _check_middle}

# the shapes the literature argues for besides cosine, written out in full (stable labels and
# markers whatever the defaults): a set `expand_profile_sets` expands
LITERATURE: tuple[str, ...] = (
    "openelm:start=0.5,end=4",
    "reverse:start=4,end=0.5",
    "frame:start=0.5,end=4,frame=4",
    "crown:start=0.5,peak=4,end=0.5,frame=4",
    "middle:fraction=0.7,ends=0",
    "bowtie:ratio=0.3,position=0.75",
)
# named points of the joint space (`joint` family, `search_spaces/joint.py`), one per question of
# issue 30, each a profile text any command takes (`verify --controls joint` expands the set):
# the uniform model; TLM's MLP-only cosine 1.5 -> 0.5; the ><former / Variable-Width Transformer
# bowtie of the whole block width (0.3 x d_model at 0.75 of the depth, its published point); and
# query heads tapered like TLM's MLP (1.5 -> 0.5 x n_heads) at uniform MLP shape
JOINT_POINTS: tuple[str, ...] = (
    "joint:mode=mlp",
    "joint:mode=mlp,start=1.5,end=0.5",
    "joint:mode=block,ratio=0.3,position=0.75",
    "joint:mode=attention,heads_start=1.5,heads_end=0.5",
)
PROFILE_SETS: dict[str, tuple[str, ...]] = {"literature": LITERATURE, "joint": JOINT_POINTS}


def expand_profile_sets(texts: Iterable[str]) -> tuple[str, ...]:
    """`texts` with every set name (`PROFILE_SETS`: "literature") replaced by its profiles, in
    order, a profile that a set and the user both name once. Profile texts pass through unchecked
    (`ProfileSpec.parse` checks them), and one the user repeats stays repeated, so that a command
    refusing a profile given twice still sees it."""
    out: list[str] = []
    from_sets: set[str] = set()
    for text in texts:
        if text.strip() in PROFILE_SETS:
            items = [item for item in PROFILE_SETS[text.strip()] if item not in out]
            out.extend(items)
            from_sets.update(items)
        elif text not in from_sets:
            out.append(text)
    return tuple(out)
