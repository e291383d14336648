"""`analysis/sequential_bounds.py` pinned to independent computations (issue 51).

The group-sequential boundaries are recomputed here another way: Gauss-Legendre quadrature
(400 nodes) of the score's density below the earlier boundaries, with the crossing probability
solved by brentq to 1e-13, where the module uses a trapezoid grid and convolutions. The two
agree within 1e-5 (by 1.5e-7 to 4e-6 at the second look, up to 7e-6 at the third: the module's
grid, h = 0.01, is accurate to a few 1e-6, not to 1e-6); the 2e-3 of the published tables in
`test_sequential.py` let errors at the top of the integration grid pass.

The null t paths are checked against t statistics computed seed by seed from normal draws.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from analysis_fakes import seed_by_seed_t
from scipy import optimize, special, stats

from tlmsearch.analysis import sequential_bounds as sb
from tlmsearch.errors import ConfigError


def _nodes(a: float, b: float, n: int = 400) -> tuple[np.ndarray, np.ndarray]:
    x, w = np.polynomial.legendre.leggauss(n)
    return 0.5 * (b - a) * x + 0.5 * (b + a), 0.5 * (b - a) * w


def _spent(t: np.ndarray, a: float, spending: str) -> np.ndarray:
    if spending == "obf":
        return np.array([2.0 * stats.norm.sf(stats.norm.isf(a / 2.0) / math.sqrt(s)) for s in t])
    return a * np.log(1.0 + (math.e - 1.0) * t)


def quadrature_boundaries(t: list[float], a: float, spending: str) -> np.ndarray:
    """Upper z boundaries at up to three looks, by Gauss-Legendre quadrature of B(t) = Z sqrt(t)."""
    inc = np.diff(np.concatenate([[0.0], _spent(np.asarray(t), a, spending)]))
    out = [stats.norm.isf(inc[0])]
    b, mass = _nodes(-12.0 * math.sqrt(t[0]), out[0] * math.sqrt(t[0]))
    mass = mass * stats.norm.pdf(b / math.sqrt(t[0])) / math.sqrt(t[0])  # weight x density of B(t_1)
    for k in range(1, len(t)):
        sd = math.sqrt(t[k] - t[k - 1])

        def excess(c: float, b: np.ndarray = b, mass: np.ndarray = mass, sd: float = sd, k: int = k) -> float:
            return float(np.sum(mass * special.ndtr((b - c * math.sqrt(t[k])) / sd))) - inc[k]

        out.append(optimize.brentq(excess, 0.0, 10.0, xtol=1e-13))
        nxt, w = _nodes(-12.0 * math.sqrt(t[k]), out[k] * math.sqrt(t[k]))
        dens = (mass[None, :] * stats.norm.pdf((nxt[:, None] - b[None, :]) / sd) / sd).sum(axis=1)
        b, mass = nxt, w * dens
    return np.asarray(out)


@pytest.mark.parametrize(
    ("t", "a", "spending"),
    [
        ([0.5, 1.0], 0.025, "obf"),  # gsDesign sfLDOF: 2.9626, 1.9686
        ([0.5, 1.0], 0.025, "pocock"),  # 2.1570, 2.2010
        ([0.2, 0.4], 0.025, "obf"),
        ([1 / 3, 2 / 3, 1.0], 0.025, "obf"),
        ([1 / 3, 2 / 3, 1.0], 0.05, "pocock"),
        ([0.25, 0.5, 1.0], 0.0125, "obf"),
    ],
)
def test_z_boundaries_match_an_independent_quadrature(t: list[float], a: float, spending: str) -> None:
    z = sb.z_boundaries(t, a, spending)
    ref = quadrature_boundaries(t, a, spending)
    assert z[0] == pytest.approx(stats.norm.isf(_spent(np.asarray(t[:1]), a, spending)[0]), abs=1e-12)
    assert np.max(np.abs(z - ref)) < 1e-5


def test_a_first_look_that_spends_nothing_has_no_boundary() -> None:
    # O'Brien-Fleming spends 2 sf(2.24 / 0.01) = 0 by t = 1e-4: no boundary there, and the last
    # look then spends the whole alpha, so it is the fixed test's z
    z = sb.z_boundaries([1e-4, 1.0], 0.025, "obf")
    assert z[0] == math.inf
    assert z[1] == pytest.approx(stats.norm.isf(0.025), abs=1e-6)


def test_nominal_is_the_fixed_z_at_every_look() -> None:
    assert sb.z_boundaries([0.2, 0.5, 1.0], 0.025, "nominal").tolist() == [stats.norm.isf(0.025)] * 3


def test_spending_functions_by_hand() -> None:
    t = np.array([-0.5, 0.0, 0.25, 0.5, 1.0, 2.0])  # clipped to [0, 1]
    obf = sb.spent(t, 0.025, "obf")
    assert obf[0] == obf[1] == 0.0
    z = stats.norm.isf(0.0125)  # O'Brien-Fleming: 2 sf(z[a/2] / sqrt(t))
    np.testing.assert_allclose(obf[2:4], [2 * stats.norm.sf(z / 0.5), 2 * stats.norm.sf(z * math.sqrt(2))], rtol=1e-12)
    assert obf[4] == pytest.approx(0.025, rel=1e-12) and obf[5] == obf[4]
    pocock = sb.spent(t, 0.05, "pocock")
    np.testing.assert_allclose(
        pocock, [0.0, 0.0, 0.05 * math.log(1 + (math.e - 1) / 4), 0.05 * math.log((1 + math.e) / 2), 0.05, 0.05]
    )
    with pytest.raises(ConfigError, match="spending='haybittle' has no spending function"):
        sb.spent(t, 0.05, "haybittle")


def test_t_boundaries_convert_the_z_tail_at_n_minus_1_degrees_of_freedom() -> None:
    # looks at 2 and 4 seeds: information 0.5 and 1; 1 and 3 degrees of freedom. With 1 df the t
    # quantile is tan(pi (1/2 - p)).
    z = sb.z_boundaries([0.5, 1.0], 0.025, "obf")
    t = sb.t_boundaries((2, 4), 0.025, "obf")
    assert t[0] == pytest.approx(math.tan(math.pi * (0.5 - stats.norm.sf(z[0]))), rel=1e-9)
    assert t[1] == pytest.approx(stats.t.isf(stats.norm.sf(z[1]), 3), rel=1e-12)
    assert sb.t_boundaries((1, 10_000), 0.025, "obf")[0] == math.inf  # information 1e-4 spends nothing


# ----------------------------------------------------------------------------- the null t paths


def test_null_t_paths_have_the_law_of_seed_by_seed_t_statistics() -> None:
    looks, n = (2, 3, 6), 200_000
    paths = sb.null_t_paths(looks, n, seed=3)
    assert paths.shape == (n, 3)
    np.testing.assert_array_equal(paths, sb.null_t_paths(looks, n, seed=3))
    direct = seed_by_seed_t(looks, n, seed=4)
    for k, size in enumerate(looks):  # each look's marginal: Student t with n_k - 1 df
        for p in (0.1, 0.01):
            q = stats.t.isf(p, size - 1)
            assert abs(np.mean(paths[:, k] > q) - p) < 4.5 * math.sqrt(p * (1 - p) / n)
    # the joint law: crossing a boundary at one look and not at another, both ways
    for j, k in ((0, 1), (1, 2), (0, 2)):
        qj, qk = stats.t.isf(0.1, looks[j] - 1), stats.t.isf(0.1, looks[k] - 1)
        both = np.mean((paths[:, j] > qj) & (paths[:, k] > qk))
        expected = np.mean((direct[:, j] > qj) & (direct[:, k] > qk))
        assert abs(both - expected) < 4.5 * math.sqrt(2 * expected * (1 - expected) / n)


# ----------------------------------------------------------------------------- calibration


def test_calibration_draws_enough_paths_in_seeded_chunks(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[tuple[int, int]] = []

    def fake(looks: tuple[int, ...], n_paths: int, seed: int = 0) -> np.ndarray:
        calls.append((n_paths, seed))
        return np.full((n_paths, len(looks)), 1e9)  # every path crosses at its first look

    monkeypatch.setattr(sb, "null_t_paths", fake)
    for target, chunks in ((0.05, [400_000]), (0.00625, [400_000] * 4), (0.001, [400_000] * 10)):
        calls.clear()
        sb.calibrated_levels((2, 4), [target], "obf")
        # 10,000 crossings at the smallest target: 200,000 -> at least 400,000; 1.6 million; 10
        # million -> at most 4 million
        assert calls == [(c, sb.CALIBRATION_SEED + i) for i, c in enumerate(chunks)]
    calls.clear()
    sb.calibrated_levels((2, 4), [0.05], "obf", n_paths=500_000)
    assert calls == [(400_000, sb.CALIBRATION_SEED), (100_000, sb.CALIBRATION_SEED + 1)]


def test_critical_table_rows_are_the_holm_levels() -> None:
    table = sb.critical_table((2, 4), 0.05, "obf", 3, False)
    assert table.shape == (4, 2) and not table.flags.writeable
    assert table[0].tolist() == [math.inf, math.inf]  # nothing decided yet: no boundary
    for r in (1, 2, 3):
        np.testing.assert_array_equal(table[r], sb.t_boundaries((2, 4), 0.05 / r, "obf"))
    # one look, or calibration asked of the nominal rule, is the plain conversion
    one = sb.critical_table((6,), 0.05, "obf", 2, True)
    assert one[1:, 0].tolist() == pytest.approx([stats.t.isf(0.05, 5), stats.t.isf(0.025, 5)], rel=1e-9)
    nominal = sb.critical_table((2, 4), 0.05, "nominal", 1, True)
    assert nominal[1].tolist() == pytest.approx([stats.t.isf(0.05, 1), stats.t.isf(0.05, 3)], rel=1e-9)


def test_first_crossings_by_hand() -> None:
    # three grid levels (rows, rising level: falling boundaries; inf: the lowest cannot cross at
    # the first look), two looks; a path crosses a level where its t reaches the boundary (>=)
    crit = np.array([[np.inf, 2.5], [3.0, 2.0], [2.0, 1.5]])
    paths = np.array([[3.5, 0.0], [0.0, 2.6], [2.0, 1.0], [1.0, 1.0], [2.5, 1.9]])
    # 3.5 passes 3.0 (level 1); 2.6 passes 2.5 (level 0); 2.0 reaches 2.0 (level 2); nothing; 2.5 and 1.9 both level 2
    assert sb.first_crossings(crit, paths).tolist() == [1, 0, 2, 3, 2]


def test_level_for_by_hand() -> None:
    grid = np.array([0.01, 0.02, 0.04, 0.08])
    # no crossing at the lowest level: it is left out; 0.0212 lies between (0.015, 0.02) and (0.03, 0.04),
    # a slope of 1 in log-log: 0.02 x 0.0212 / 0.015 = 0.0282667; outside: the first and last levels used
    got = sb.level_for([0.0212, 0.001, 0.1], np.array([0.0, 0.015, 0.03, 0.06]), grid)
    assert got == pytest.approx([0.0282667, 0.02, 0.08], rel=1e-5)
    # a level that adds no crossing (a tie) is left out: between (0.02, 0.02) and (0.05, 0.08),
    # 0.02 x 4 ** (log(1.5) / log(2.5)) = 0.02 x 4 ** 0.442507 = 0.0369357 (with the tie kept, 0.0544)
    tied = sb.level_for([0.03], np.array([0.01, 0.02, 0.02, 0.05]), grid)
    assert tied == pytest.approx([0.0369357], rel=1e-5)


def test_a_two_look_design_is_calibrated_to_its_level() -> None:
    # looks at 2 and 4 seeds, alpha 0.05: 200,000 null studies drawn seed by seed (not the module's
    # stage-by-stage draw) cross the calibrated boundaries 0.0497 of the time; the plain z-to-t
    # conversion (1 and 3 degrees of freedom) crosses 0.0522, liberal
    t = seed_by_seed_t((2, 4), 200_000, seed=7)
    se = math.sqrt(0.05 * 0.95 / 200_000)
    calibrated = sb.critical_table((2, 4), 0.05, "obf", 1, True)
    plain = sb.critical_table((2, 4), 0.05, "obf", 1, False)
    assert np.any(t >= calibrated[1], axis=1).mean() == pytest.approx(0.05, abs=3 * se)
    assert np.any(t >= plain[1], axis=1).mean() > 0.05 + 3 * se
    # one look: nothing to calibrate, the plain t test
    assert sb.critical_table((4,), 0.05, "obf", 1, True)[1, 0] == pytest.approx(stats.t.isf(0.05, 3), abs=1e-9)
