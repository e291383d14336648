"""Per-layer MLP width profiles under an exact parameter budget (pure: no torch, no Optuna).

A *budget* fixes the number of layers and the total MLP hidden units (`n_layers * base_width`).
A *family* (cosine, linear, knots, ...) maps a few parameters to real-valued relative widths;
`project_to_budget` turns those into integer widths that are multiples of `multiple_of`, lie
within `[min_width, max_width]` and sum exactly to the total, so that every profile of one
budget has the same parameter count and FLOPs per token as the uniform model.

    >>> b = Budget(40, 14336, multiple_of=256)
    >>> w = profile("cosine", b, start=1.5, end=0.5)
    >>> w[0], w[-1], sum(w) == 40 * 14336
    (21504, 7168, True)
"""

from tlmsearch.profiles.budget import Budget, project_to_budget
from tlmsearch.profiles.families import FAMILIES, Family, Param, profile, relative_widths, resolve_params
from tlmsearch.profiles.literature import JOINT_POINTS, LITERATURE, PROFILE_SETS, expand_profile_sets
from tlmsearch.profiles.shape import ShapeStats, shape_stats, spearman
from tlmsearch.profiles.spec import ProfileSpec

__all__ = [
    "FAMILIES",
    "JOINT_POINTS",
    "LITERATURE",
    "PROFILE_SETS",
    "Budget",
    "Family",
    "Param",
    "ProfileSpec",
    "ShapeStats",
    "expand_profile_sets",
    "profile",
    "project_to_budget",
    "relative_widths",
    "resolve_params",
    "shape_stats",
    "spearman",
]
