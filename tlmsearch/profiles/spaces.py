"""Search spaces: Optuna define-by-run functions that turn a trial into a `ProfileSpec`.

A space is a Python module (built in under `search_spaces/`, or a user's `.py` file) with

    NAME: str                                  # defaults to the file name
    DESCRIPTION: str                           # defaults to the module docstring
    def sample(trial, n_layers: int) -> ProfileSpec     # asks the trial, computes nothing else
                                               # (or sample(trial, n_layers, arch=None): see below)
    def dimension(n_layers: int) -> int        # number of parameters sampled (optional)
    def encode(spec: ProfileSpec, n_layers: int) -> dict | None   # optional, see below

`encode` returns the parameters that make `sample` reproduce `spec` exactly (so a search can
seed known baselines such as cosine 1.5 -> 0.5 into the sampler), or None when the space cannot
express it. A `sample` that takes a keyword `arch` is told the architecture family it samples
for (None where no family is at hand, e.g. `tlmsearch profiles --spaces`): the joint space draws
no whole-block bowties for a family that builds one residual width in every layer (Titans,
Hope-attention), so a joint search or study over those trains only what they can build. Only this
module and the search engine know about spaces; Optuna is imported
here only by `prior_fractions`, lazily, to draw from its `RandomSampler`.
"""

from __future__ import annotations

import functools
import importlib
import importlib.util
import inspect
import pkgutil
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

from tlmsearch.errors import ConfigError
from tlmsearch.profiles import Budget, ProfileSpec

SHAPES: tuple[str, ...] = ("non-increasing", "non-decreasing", "non-monotone")


@dataclass(frozen=True)
class SearchSpace:
    name: str
    description: str
    sample: Callable[[Any, int], ProfileSpec]
    _dimension: Callable[[int], int] | None = None
    _encode: Callable[[ProfileSpec, int], dict[str, Any] | None] | None = None
    source: str = ""
    takes_arch: bool = False  # `sample` takes a keyword `arch` (the family it samples for)

    def draw(self, trial: Any, n_layers: int, arch: str | None = None) -> ProfileSpec:
        """`sample(trial, n_layers)`, told `arch` when the space takes it."""
        if self.takes_arch:
            return self.sample(trial, n_layers, arch=arch)  # type: ignore[call-arg]
        return self.sample(trial, n_layers)

    def dimension(self, n_layers: int) -> int:
        return self._dimension(n_layers) if self._dimension else -1

    def encode(self, spec: ProfileSpec, n_layers: int) -> dict[str, Any] | None:
        return self._encode(spec, n_layers) if self._encode else None


def builtin_spaces() -> list[str]:
    return list(_builtin_spaces())


@functools.cache
def _builtin_spaces() -> tuple[str, ...]:  # the package's folder is listed once per process
    import search_spaces

    return tuple(sorted(m.name for m in pkgutil.iter_modules(search_spaces.__path__) if not m.name.startswith("_")))


_SPACE_FILE = (
    "a search space is a built-in name (`tlmsearch profiles --spaces`) or a Python file ending in .py that "
    "defines sample(trial, n_layers) -> ProfileSpec"
)


def load_space(name_or_path: str) -> SearchSpace:
    """A built-in space by name (see `builtin_spaces()`) or a user's space from a `.py` path."""
    names = builtin_spaces()
    local_file = name_or_path not in names and Path(name_or_path).is_file()  # e.g. three.txt, no folder
    if name_or_path.endswith(".py") or "/" in name_or_path or local_file:
        path = Path(name_or_path)
        if path.is_dir():
            raise ConfigError(f"search space {path} is a folder; {_SPACE_FILE}")
        if not path.is_file():
            raise ConfigError(f"search space file {path} does not exist; {_SPACE_FILE}")
        if path.suffix != ".py":
            raise ConfigError(f"search space file {path} is not a .py file; {_SPACE_FILE}")
        spec = importlib.util.spec_from_file_location(f"tlmsearch_user_space_{path.stem}", path)
        if spec is None or spec.loader is None:
            raise ConfigError(f"search space file {path} cannot be loaded as a Python module; {_SPACE_FILE}")
        module = importlib.util.module_from_spec(spec)
        try:
            spec.loader.exec_module(module)
        except Exception as exc:  # a user's file: report, don't crash
            raise ConfigError(f"search space file {path} failed to import: {type(exc).__name__}: {exc}") from None
        except SystemExit as exc:  # sys.exit() in a user's file would end the whole search with its status
            raise ConfigError(f"search space file {path} calls sys.exit({exc.code!r}) on import; remove it") from None
        return _from_module(module, default_name=path.stem, source=str(path.resolve()))
    if name_or_path not in names:
        raise ConfigError(
            f"unknown search space {name_or_path!r}; choose one of: {', '.join(names)} or give a path to a .py file"
        )
    module = importlib.import_module(f"search_spaces.{name_or_path}")
    return _from_module(module, default_name=name_or_path, source=name_or_path)


def _from_module(module: ModuleType, *, default_name: str, source: str) -> SearchSpace:
    sample = getattr(module, "sample", None)
    if not callable(sample):
        raise ConfigError(f"search space {source} defines no function sample(trial, n_layers) -> ProfileSpec")
    return SearchSpace(
        name=getattr(module, "NAME", default_name),
        description=getattr(module, "DESCRIPTION", (module.__doc__ or "").strip().split("\n")[0]),
        sample=sample,
        _dimension=getattr(module, "dimension", None),
        _encode=getattr(module, "encode", None),
        source=source,
        takes_arch=_takes_arch(sample),
    )


def _takes_arch(sample: Callable[..., Any]) -> bool:
    try:
        return "arch" in inspect.signature(sample).parameters
    except (TypeError, ValueError):  # a callable without a signature (a builtin): the two-argument form
        return False


RETURNS = (
    "sample(trial, n_layers) must ask the trial for its parameters and return a tlmsearch.profiles.ProfileSpec "
    "the budget can hold, e.g. ProfileSpec(family='cosine', params={'start': 1.5, 'end': 0.5})"
)


class SampleError(ConfigError):
    """A space's `sample` raised, or returned something no trial can train."""


def sampled_text(
    space: SearchSpace, trial: Any, n_layers: int, budget: Budget | None = None, arch: str | None = None
) -> str:
    """`space.sample(trial, n_layers)` (told `arch`: `SearchSpace.draw`) as the ProfileSpec text a
    trial trains, checked: a
    `SampleError` naming the space, what went wrong and what `sample` must return when it
    raises, returns no `ProfileSpec`, returns one whose text does not parse back, or (with
    `budget`) one that budget cannot hold."""
    where = f"search space {space.source or space.name}"
    try:
        spec = space.draw(trial, n_layers, arch)
    except Exception as exc:  # a user's code: report, don't crash
        raise SampleError(f"{where}: sample() raised {type(exc).__name__}: {exc}; {RETURNS}") from None
    except SystemExit as exc:  # sys.exit() in a user's sample would end the whole search
        raise SampleError(f"{where}: sample() calls sys.exit({exc.code!r}); {RETURNS}") from None
    if not isinstance(spec, ProfileSpec):
        raise SampleError(f"{where}: sample() returned {_short(spec)} ({type(spec).__name__}); {RETURNS}")
    text = str(spec)
    try:
        parsed = ProfileSpec.parse(text)
    except ConfigError as exc:
        raise SampleError(
            f"{where}: sample() returned {text!r}, which is no profile a trial can train: {exc}"
        ) from None
    if budget is not None:
        try:
            widths = parsed.widths(budget)
        except ValueError as exc:  # ConfigError included
            raise SampleError(
                f"{where}: sample() returned {text!r}, which the budget ({budget.n_layers} layers of base width "
                f"{budget.base_width}) cannot hold: {exc}"
            ) from None
        if len(widths) != budget.n_layers or sum(widths) != budget.total:
            raise SampleError(
                f"{where}: sample() returned {text!r}, whose widths {list(widths)} are not {budget.n_layers} widths "
                f"summing to the budget's {budget.total}; {RETURNS}"
            )
    return text


def check_sample(space: SearchSpace, budgets: Sequence[Budget], seed: int = 0, arch: str | None = None) -> None:
    """Call `space.sample` once per budget on a throwaway trial (an in-memory Optuna study with
    a seeded `RandomSampler`) before a search starts: a `SampleError` (one line naming the
    space, the problem and what `sample` must return) when it raises or returns something no
    trial can train (`sampled_text`)."""
    import optuna

    level = optuna.logging.get_verbosity()
    optuna.logging.set_verbosity(optuna.logging.WARNING)  # no "A new study created in memory"
    try:
        for budget in budgets:
            trial = optuna.create_study(sampler=optuna.samplers.RandomSampler(seed=seed)).ask()
            sampled_text(space, trial, budget.n_layers, budget, arch)
    finally:
        optuna.logging.set_verbosity(level)


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def monotonicity(widths: tuple[int, ...] | list[int]) -> str:
    """The shape class of integer widths: non-increasing, non-decreasing or non-monotone; a
    constant profile (both monotone kinds at once) is its own class, "constant"."""
    steps = [b - a for a, b in zip(widths, widths[1:], strict=False)]
    if all(d == 0 for d in steps):
        return "constant"
    if all(d <= 0 for d in steps):
        return "non-increasing"
    if all(d >= 0 for d in steps):
        return "non-decreasing"
    return "non-monotone"


def prior_fractions(space: SearchSpace, budget: Budget, n: int = 10_000, seed: int = 0) -> dict[str, float]:
    """How the space's prior spreads over shapes: the fraction of `n` profiles, drawn with
    Optuna's `RandomSampler` (seeded) and projected onto `budget`, that are non-increasing,
    non-decreasing, non-monotone or constant (integer widths, as trained).

    A search's first trials (TPE's and GP's start-up, all of random search) come from this
    prior, so a space that puts almost nothing on monotone tapers cannot test the taper.
    Each parameter is drawn by `RandomSampler.sample_independent`, exactly as a random
    search draws it, without the cost of a study per draw.
    """
    import optuna

    if n < 1:
        raise ConfigError(f"prior_fractions: n={n} must be >= 1")
    trial = _PriorTrial(optuna.samplers.RandomSampler(seed=seed))
    counts = dict.fromkeys((*SHAPES, "constant"), 0)
    for _ in range(n):
        trial.params = {}
        counts[monotonicity(space.sample(trial, budget.n_layers).widths(budget))] += 1
    return {k: v / n for k, v in counts.items()}


class _PriorTrial:
    """The part of Optuna's trial API a space uses, answered by a sampler's independent draws."""

    def __init__(self, sampler: Any) -> None:
        self.sampler = sampler
        self.params: dict[str, Any] = {}
        self.user_attrs: dict[str, Any] = {}
        self.number = 0

    def _draw(self, name: str, distribution: Any) -> Any:
        if name not in self.params:
            self.params[name] = self.sampler.sample_independent(None, None, name, distribution)
        return self.params[name]

    def suggest_float(
        self, name: str, low: float, high: float, *, step: float | None = None, log: bool = False
    ) -> float:
        from optuna.distributions import FloatDistribution

        return float(self._draw(name, FloatDistribution(low, high, step=step, log=log)))

    def suggest_int(self, name: str, low: int, high: int, *, step: int = 1, log: bool = False) -> int:
        from optuna.distributions import IntDistribution

        return int(self._draw(name, IntDistribution(low, high, step=step, log=log)))

    def suggest_categorical(self, name: str, choices: Any) -> Any:
        from optuna.distributions import CategoricalDistribution

        return self._draw(name, CategoricalDistribution(tuple(choices)))
