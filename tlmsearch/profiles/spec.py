"""`ProfileSpec`: a family and its parameters, the unit a search samples and a trial trains."""

from __future__ import annotations

import dataclasses

from tlmsearch.config import Config
from tlmsearch.errors import ConfigError
from tlmsearch.profiles.budget import Budget
from tlmsearch.profiles.families import FAMILIES, Param, profile, resolve_params


@dataclasses.dataclass(frozen=True, kw_only=True)
class ProfileSpec(Config):
    """A family and its parameters: the unit a search samples and a trial trains.

    Text form: ``family[:param=value,...]`` e.g. ``cosine:start=1.5,end=0.5``; a family with
    a categorical first parameter also takes a bare value: ``groups:early``.
    """

    family: str = "uniform"
    params: dict[str, Param] = dataclasses.field(default_factory=dict)

    def __post_init__(self) -> None:
        resolve_params(self.family, self.params)

    def widths(self, budget: Budget) -> tuple[int, ...]:
        return profile(self.family, budget, **self.params)

    def resolved(self) -> ProfileSpec:
        """The same spec with every default written out."""
        return ProfileSpec(family=self.family, params=resolve_params(self.family, self.params))

    def __str__(self) -> str:
        if not self.params:
            return self.family
        items = ",".join(f"{k}={_fmt(v)}" for k, v in self.params.items())
        return f"{self.family}:{items}"

    @classmethod
    def parse(cls, text: str) -> ProfileSpec:
        family, _, rest = text.strip().partition(":")
        if family not in FAMILIES:
            raise ConfigError(f"unknown profile family {family!r} in {text!r}; choose one of: {', '.join(FAMILIES)}")
        params: dict[str, Param] = {}
        for i, item in enumerate(filter(None, (s.strip() for s in rest.split(",")))):
            key, eq, value = item.partition("=")
            if not eq:
                fam = FAMILIES[family]
                if i == 0 and fam.choices:
                    key, value = next(iter(fam.choices)), item
                else:
                    raise ConfigError(
                        f"malformed profile parameter {item!r} in {text!r}; write name=value, "
                        f"e.g. {family}:{','.join(f'{k}={_fmt(v)}' for k, v in FAMILIES[family].defaults.items())}"
                    )
            params[key.strip()] = _parse_value(value.strip())
        return cls(family=family, params=params)


def _parse_value(text: str) -> Param:
    try:
        return float(text)
    except ValueError:
        return text


def _fmt(v: Param) -> str:
    return f"{v:g}" if isinstance(v, float) else str(v)
