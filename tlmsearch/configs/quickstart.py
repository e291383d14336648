"""`QuickstartConfig`: what `tlmsearch quickstart` runs, one field per flag.

The quickstart is search -> verify -> report on a small model (preset `cpu-xs`, 6 layers) on the
embedded corpus; `tlmsearch.cli.quickstart` turns this config into the search's `SearchConfig`
(evaluations every third of the steps) and the verification's seeds. Its flags are derived
from these fields like every other command's (`tlmsearch.cli._config_args`), so the help and the
defaults are written once, here. Torch-free.
"""

from __future__ import annotations

import dataclasses

from tlmsearch.core.base import ARCHITECTURE_NAMES, Config, option
from tlmsearch.errors import ConfigError

# field -> (the least value, why): refused together, in one line naming only the wrong flags
MINIMUMS: dict[str, tuple[int, str]] = {
    "trials": (4, "the 4 baselines run first"),
    "steps": (3, "an evaluation every third of the steps"),
    "seeds": (2, "a paired interval needs two seeds"),
    "top_k": (1, "at least the best profile"),
}


@dataclasses.dataclass(frozen=True, kw_only=True)
class QuickstartConfig(Config):
    """The whole loop on a small model, small enough for a first look."""

    arch: str = option("transformer", "architecture", choices=ARCHITECTURE_NAMES)
    preset: str = option("cpu-xs", "model shape preset (cpu-xs: 6 layers)")
    corpus: str = option("shakespeare", "corpus (shakespeare is embedded)")
    trials: int = option(8, "search trials, the 4 baselines included")
    steps: int = option(120, "training steps per trial (not with --tokens-per-param)")
    tokens_per_param: float = option(
        0.0,
        "trial length in tokens per NON-EMBEDDING parameter instead of --steps (the steps derived and printed; "
        "20 on cpu-xs is 3,129 steps, 26x the default); 0 = --steps",
    )
    seeds: int = option(2, "fresh seeds per verified profile")
    top_k: int = option(1, "search profiles to verify")
    name: str = option("", "run name; empty = quickstart-<date>-<time>")
    runs_dir: str = option("runs", "parent folder of run directories")
    keep_checkpoints: bool = option(False, "keep each trial's checkpoints after it ends (by default deleted)")

    def __post_init__(self) -> None:
        checked = [name for name in MINIMUMS if not (name == "steps" and self.tokens_per_param)]
        wrong = [
            f"--{name.replace('_', '-')}={getattr(self, name)} must be >= {MINIMUMS[name][0]} ({MINIMUMS[name][1]})"
            for name in checked
            if getattr(self, name) < MINIMUMS[name][0]
        ]
        if wrong:
            raise ConfigError("; ".join(wrong))
        if self.tokens_per_param < 0 or self.tokens_per_param != self.tokens_per_param:
            raise ConfigError(f"--tokens-per-param={self.tokens_per_param} must be > 0 (or 0 for --steps)")
