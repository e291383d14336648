"""How many ways a search space can shape a model at a given depth: its degrees of freedom.

At n layers the MLP widths of a budget sum to a fixed total, so a profile has n - 1 free widths;
a space with p shape parameters reaches at most min(p, n - 1) of them (a smooth map of p
parameters onto n - 1 widths). At 2 layers every MLP space has one degree of freedom, the first
layer's share: cosine 1.5 -> 0.5, linear 1.5 -> 0.5 and any knots profile that ends 3x narrower
than it starts are one model there. Each built-in space's shape parameters, read from
`search_spaces/` (the budget's projection removes any overall scale):

- cosine: 1 (the start; end = 2 - start);
- families: 3 (the most of any family: sigmoid's start, steepness and midpoint; bump's centre,
  width and amplitude);
- taper: 4 (the taper's strength, times a bump's centre, width and amplitude);
- knots: 4 (5 knot values, less the scale); monotone: 4 (its 4 ratios between 5 knots);
- free: n - 1 (one logit a layer, less the scale);
- joint, joint_flops: 2, MLP and heads together (mode attention: the MLP start and the heads'
  start, each at most n - 1; mode block: the bowtie's ratio and position, which move only the
  n - 2 layers between the full-width ends), so min(2, 2 (n - 1)).

A space of the user's own (a .py file) has no count here (None). Pure.
"""

from __future__ import annotations

from tlmsearch.core.words import plural

# shape parameters of each built-in MLP space (free: one a layer, see `space_dof`)
MLP_PARAMETERS: dict[str, int] = {"cosine": 1, "families": 3, "taper": 4, "knots": 4, "monotone": 4}
JOINT_SPACES: tuple[str, ...] = ("joint", "joint_flops")


def free_widths(n_layers: int) -> int:
    """The free MLP widths of a budget of `n_layers` layers: n - 1 (they sum to its total)."""
    if n_layers < 1:
        raise ValueError(f"n_layers={n_layers} must be at least 1")
    return n_layers - 1


def space_dof(space: str, n_layers: int) -> int | None:
    """Degrees of freedom of the built-in search space `space` at `n_layers` layers (module doc);
    None for a space this module does not know (a user's file)."""
    free = free_widths(n_layers)
    if space in MLP_PARAMETERS:
        return min(MLP_PARAMETERS[space], free)
    if space == "free":
        return free
    if space in JOINT_SPACES:
        return min(2, 2 * free)
    return None


def dof_text(space: str | None, n_layers: int) -> str:
    """'2 layers: 1 free MLP width, the knots space 1 degree of freedom' (without a space, or
    with one of the user's own, the free widths alone)."""
    text = f"{plural(n_layers, 'layer')}: {plural(free_widths(n_layers), 'free MLP width')}"
    dof = space_dof(space, n_layers) if space else None
    if dof is not None:
        text += f", the {space} space {plural(dof, 'degree')} of freedom"
    return text


__all__ = ["JOINT_SPACES", "MLP_PARAMETERS", "dof_text", "free_widths", "space_dof"]
