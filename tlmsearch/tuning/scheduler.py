"""Early stopping that never stops a baseline.

The baselines (uniform, cosine, ...) are the references every profile is judged against, so
they always train to full fidelity; their results still fill ASHA's rungs, so they also set
the bar the sampled trials must clear. Imported only when a search runs (it imports Ray).
"""

from __future__ import annotations

from typing import Any

from ray.tune.schedulers import AsyncHyperBandScheduler, TrialScheduler


class BaselineKeepingASHA(AsyncHyperBandScheduler):
    """`AsyncHyperBandScheduler` whose stop decisions skip trials with a `baseline` config."""

    def on_trial_result(self, tune_controller: Any, trial: Any, result: dict[str, Any]) -> str:
        decision = super().on_trial_result(tune_controller, trial, result)
        if trial.config.get("baseline"):
            return TrialScheduler.CONTINUE
        return str(decision)
