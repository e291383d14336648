"""tlmsearch: search how a language model's MLP width should be spread over its depth.

The public API is small and imported lazily, so `import tlmsearch` pulls in neither torch,
ray nor plotly; each name is loaded from its module on first use.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

# public name -> module that defines it
_EXPORTS: dict[str, str] = {
    # errors
    "UserError": "tlmsearch.errors",
    "ConfigError": "tlmsearch.errors",
    "DataError": "tlmsearch.errors",
    # configs
    "Config": "tlmsearch.core.base",
    "ArchOptions": "tlmsearch.core.base",
    "ModelConfig": "tlmsearch.core.base",
    "TrainConfig": "tlmsearch.core.base",
    "DataConfig": "tlmsearch.core.base",
    # width profiles (pure)
    "Budget": "tlmsearch.profiles",
    "ProfileSpec": "tlmsearch.profiles",
    "FAMILIES": "tlmsearch.profiles",
    "profile": "tlmsearch.profiles",
    "project_to_budget": "tlmsearch.profiles",
    "shape_stats": "tlmsearch.profiles",
    # models
    "ARCHITECTURES": "tlmsearch.models",
    "build_model": "tlmsearch.models",
    "preset": "tlmsearch.configs.presets",
    "PRESETS": "tlmsearch.configs.presets",
    # training
    "train": "tlmsearch.api",  # training.trainer.train, or on several data-parallel workers
    "TrainResult": "tlmsearch.training.trainer",
    "TrainingDiverged": "tlmsearch.training.trainer",
    "TrainingInterrupted": "tlmsearch.training.trainer",
    # search and analysis
    "SearchConfig": "tlmsearch.configs.search",
    "search": "tlmsearch.api",
    "load": "tlmsearch.api",
    "resume": "tlmsearch.api",
    "Study": "tlmsearch.api",
    "verify": "tlmsearch.tuning.verify",
    "compare": "tlmsearch.api",
    "CompareOptions": "tlmsearch.api",
    "study": "tlmsearch.api",
    "resume_study": "tlmsearch.api",
    "StudyResult": "tlmsearch.api",
    "StudyConfig": "tlmsearch.configs.study",
    "ladder": "tlmsearch.api",
    "resume_ladder": "tlmsearch.api",
    "LadderResult": "tlmsearch.api",
    "LadderConfig": "tlmsearch.ladders.config",
    "write_report": "tlmsearch.report.run",
    "export_run": "tlmsearch.export.schedule",
    # costing a study (pure)
    "PlanConfig": "tlmsearch.costs.plan",
    "plan": "tlmsearch.costs.plan",
}

__all__ = sorted(_EXPORTS) + ["__version__"]


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'tlmsearch' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return __all__


if TYPE_CHECKING:  # pragma: no cover
    from tlmsearch.api import (  # noqa: F401
        CompareOptions,
        LadderResult,
        Study,
        StudyResult,
        compare,
        ladder,
        load,
        resume,
        resume_ladder,
        resume_study,
        search,
        study,
    )
    from tlmsearch.configs.presets import PRESETS, preset  # noqa: F401
    from tlmsearch.configs.search import SearchConfig  # noqa: F401
    from tlmsearch.configs.study import StudyConfig  # noqa: F401
    from tlmsearch.core.base import ArchOptions, Config, DataConfig, ModelConfig, TrainConfig  # noqa: F401
    from tlmsearch.costs.plan import PlanConfig, plan  # noqa: F401
    from tlmsearch.errors import ConfigError, DataError, UserError  # noqa: F401
    from tlmsearch.export.schedule import export_run  # noqa: F401
    from tlmsearch.ladders.config import LadderConfig  # noqa: F401
    from tlmsearch.models import ARCHITECTURES, build_model  # noqa: F401
    from tlmsearch.profiles import FAMILIES, Budget, ProfileSpec, profile, project_to_budget, shape_stats  # noqa: F401
    from tlmsearch.report.run import write_report  # noqa: F401
    from tlmsearch.training.trainer import TrainingDiverged, TrainingInterrupted, TrainResult, train  # noqa: F401
    from tlmsearch.tuning.verify import verify  # noqa: F401
