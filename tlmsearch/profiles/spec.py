"""`ProfileSpec`: a family and its parameters, the unit a search samples and a trial trains."""

from __future__ import annotations

import dataclasses
import math
import re

from tlmsearch.core.base import Config
from tlmsearch.errors import ConfigError
from tlmsearch.profiles.budget import Budget
from tlmsearch.profiles.families import FAMILIES, Param, profile, resolve_params


@dataclasses.dataclass(frozen=True, kw_only=True)
class ProfileSpec(Config):
    """A family and its parameters: the unit a search samples and a trial trains.

    Text form: ``family[:param=value,...]`` e.g. ``cosine:start=1.5,end=0.5``; a family with
    a categorical first parameter also takes a bare value: ``groups:early``. Each parameter
    may be given once, and numbers must be finite (``1e400`` overflows to inf and is refused)
    and plain ASCII decimals (``1.5``, ``-2``, ``3e-2``): Python's float() also reads ``1_0`` as 10
    and full-width digits, which a profile text refuses.
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
            key = key.strip()
            if key in params:
                raise ConfigError(f"profile parameter {key!r} is given twice in {text!r}; give each parameter once")
            params[key] = _parse_value(key, value.strip(), text)
        return cls(family=family, params=params)


# a plain decimal number: optional sign, ASCII digits with at most one dot, optional exponent
_NUMBER = re.compile(r"[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?", re.ASCII)


def _parse_value(key: str, value: str, text: str) -> Param:
    try:
        number = float(value)
    except ValueError:
        return value
    if not math.isfinite(number):
        raise ConfigError(f"profile parameter {key}={value!r} in {text!r} must be a finite number")
    if not _NUMBER.fullmatch(value):  # float() also reads 1_0 as 10 and full-width digits
        raise ConfigError(
            f"profile parameter {key}={value!r} in {text!r} is not a plain decimal number; write ASCII digits "
            "with at most one '.', an optional sign and exponent, e.g. 1.5, -2 or 3e-2"
        )
    return number


def _fmt(v: Param) -> str:
    """Short text for a parameter (`1.5`, not `1.5000`), exact whenever the short form is not:
    the text of a spec must rebuild the same widths (a search space's logits land on rounding
    ties otherwise)."""
    if not isinstance(v, float):
        return str(v)
    short = f"{v:g}"
    return short if float(short) == v else repr(v)


def display_name(text: str, digits: int = 3) -> str:
    """A profile text for people: its real-valued parameters to `digits` significant digits
    ("knots:k0=0.783,k1=1.11,..."), for tables, headlines, legends and status lines. Display only:
    the record keeps the exact spec (two sampled profiles may share a display name), and a text
    that is no profile comes back as it is."""
    try:
        spec = ProfileSpec.parse(text)
    except ValueError:  # ConfigError, or a value the family refuses
        return text
    if not spec.params:
        return spec.family
    items = ",".join(f"{k}={f'{v:.{digits}g}' if isinstance(v, float) else v}" for k, v in spec.params.items())
    return f"{spec.family}:{items}"
