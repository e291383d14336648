"""Pins of a verification's stages (`analysis/sequential_stages.py`): the calibrated history
crosses at exactly its level, checked by an independent simulation seed by seed (the uncalibrated
one, by the same simulation, does not: the check can fail); a look that nothing before it can
cross is a plain z test; a first stage of alpha 0 is refused."""

from __future__ import annotations

import numpy as np
import pytest
from analysis_fakes import seed_by_seed_t
from scipy import stats

from tlmsearch.analysis.sequential_stages import Stage, check_stages, history_table, z_continue
from tlmsearch.errors import ConfigError

LOOKS = (2, 4, 8, 12)
N_PATHS = 200_000


def test_a_calibrated_history_crosses_at_its_level() -> None:
    # a verification of 2 and 4 seeds at alpha 0.05, extended to 8 and 12 seeds with the history
    # at 0.1, two candidates: row r must cross (at any of the four looks) with probability 0.1 / r
    paths = seed_by_seed_t(LOOKS, N_PATHS, seed=7)  # seed by seed, not the module's stage-by-stage draw
    calibrated = history_table(LOOKS, (Stage(4, 0.05),), 0.1, "obf", 2, True)
    plain = history_table(LOOKS, (Stage(4, 0.05),), 0.1, "obf", 2, False)
    for r, level in ((1, 0.1), (2, 0.05)):
        se = np.sqrt(level * (1 - level) / N_PATHS)  # 0.00067 and 0.00049
        crossed = np.any(paths >= calibrated[r], axis=1).mean()
        assert crossed == pytest.approx(level, abs=3.5 * se), (r, crossed)
        # the first stage alone keeps its own level 0.05 / r
        first = np.any(paths[:, :2] >= calibrated[r, :2], axis=1).mean()
        assert first == pytest.approx(0.05 / r, abs=3.5 * np.sqrt(0.05 / r / N_PATHS))
        # without calibration the z-to-t conversion at 1 to 11 degrees of freedom is liberal:
        # 0.107 and 0.053 here, 10 and 6 standard errors above the level
        assert np.any(paths >= plain[r], axis=1).mean() > level + 5 * se


def test_a_look_nothing_before_can_cross_is_a_plain_z_test() -> None:
    # earlier looks that cannot cross (inf) leave all the mass: the last look spending 0.025 is
    # the z test at 1.959964, whatever the fractions
    for fractions in ([0.5, 1.0], [0.25, 0.5, 1.0], [0.0004, 1.0]):
        z = z_continue(fractions, [np.inf] * (len(fractions) - 1), [0.025])
        assert z[-1] == pytest.approx(stats.norm.isf(0.025), abs=1e-6)


def test_a_first_stage_must_spend_something() -> None:
    with pytest.raises(ConfigError, match=r"alpha must rise from stage to stage \(0, 0.05\)"):
        check_stages((2, 4, 8), (Stage(4, 0.0),), 0.05)
    with pytest.raises(ConfigError, match=r"alpha must rise from stage to stage \(-0.01, 0.05\)"):
        check_stages((2, 4, 8), (Stage(4, -0.01),), 0.05)
    check_stages((2, 4, 8), (Stage(4, 0.01),), 0.05)  # a small first stage is fine


def test_a_history_table_is_read_only() -> None:
    # it is cached: a caller writing into it would change every later verification's boundaries
    table = history_table((4, 8), (Stage(4, 0.05),), 0.1, "obf", 1, False)
    assert not table.flags.writeable
    with pytest.raises(ValueError):
        table[1, 1] = 0.0
