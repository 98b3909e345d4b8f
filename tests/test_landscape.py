"""The landscape at fixed overlaps (theory/landscape.py, issue 32): the constrained profile's stationary point is the
full map's fixed point (split rule, ``theory.solve``), its Lagrange force vanishes there and changes sign across it,
and the force is −de_t/dx (envelope theorem) against finite differences of e_t."""

from __future__ import annotations

import numpy as np
import pytest

from attnphase import theory
from attnphase.errors import ParameterError
from attnphase.model import ModelParams
from attnphase.theory.landscape import Stationary, barriers, solve_landscape, stationary_points
from attnphase.theory.qmc_config import QMCConfig

CFG = QMCConfig(points=1024, scrambles=4, coarse=0)
FACTORS = np.array([0.5, 0.6, 0.85, 1.0, 1.15])


def _profile(params, alpha, branch):
    """The full fixed point (split rule) and the constrained profile through it at FACTORS × its overlap."""
    full = theory.solve(params, [alpha], branch, stability=False)[0]
    assert full.converged
    if branch == "semantic":
        pts = solve_landscape(params, alpha, "theta", thetas=FACTORS * full.theta, qmc_config=CFG)
        key = "force_theta"
        xs = FACTORS * full.theta
    else:
        # the positional branch lives on θ = 0 (invariant, MODEL.md §8; at α = 2 θ is unstable there): θ pinned
        pts = solve_landscape(params, alpha, "both", ms=FACTORS * abs(full.m), thetas=0.0, qmc_config=CFG)
        key = "force_m"
        xs = FACTORS * abs(full.m)
    assert all(p.converged for p in pts)
    return full, pts, key, xs


# envelope: check −Δe_t/Δx against the force on the first two samples. Off at σ = 0.7, α = 0.8: there the profile
# is flat (θ/σ² ≈ 0.25, 0.30: |f| ≈ 5e-4) and the QMC error of both the force and Δe_t/Δx is as large as f itself
# (512 × 2 points: f = 8.0e-4 ± 9.1e-4 at θ/σ² = 0.3; Δe_t/Δθ ± 7e-4), so their 27 % difference is resolution, not
# a kink (the free M stays in the same sector on both samples; docs/theory/beyond-rs.md).
CASES = [pytest.param(ModelParams(omega=0.3), 2.0, "semantic", True, id="defaults-semantic-a2"),
         pytest.param(ModelParams(omega=0.3), 2.0, "positional", True, id="defaults-positional-a2"),
         pytest.param(ModelParams(omega=0.3, sigma=0.7), 0.8, "semantic", False, id="sigma0.7-semantic-a0.8")]


@pytest.mark.parametrize("params, alpha, branch, envelope", CASES)
def test_stationary_point_of_the_profile_is_the_full_fixed_point(params, alpha, branch, envelope):
    full, pts, key, xs = _profile(params, alpha, branch)
    f = np.array([p.values[key] for p in pts])
    fe = np.array([p.errors[key] for p in pts])
    e = np.array([p.values["e_t"] for p in pts])
    at = pts[3]
    # the Lagrange force vanishes at the full fixed point (QMC noise: 3 s.e., plus 10 % of the force a 15 %
    # step away, the bias of 1024 × 4 points against the split rule), and changes sign across it (+ to −: a minimum)
    assert abs(f[3]) < 3 * fe[3] + 0.1 * min(abs(f[2]), abs(f[4]))
    assert f[2] > 0 > f[4]
    # the constrained point there is the full fixed point (split rule vs QMC 1024 × 4)
    assert at.values["e_t"] == pytest.approx(full.e_t, rel=0.01)
    assert at.values["q"] == pytest.approx(full.q, rel=0.02)
    assert at.values["V"] == pytest.approx(full.V, rel=0.03)
    free = "m" if branch == "semantic" else "theta"
    assert at.values[free] < 0.05 * max(full.theta, abs(full.m))           # the free overlap stays on its subspace
    # the minimum located on the profile is at the fixed point, and it is the lowest e_t of the profile
    mins = [s for s in stationary_points(xs, e, f, symmetric_origin=False) if s.kind == "min"]
    assert len(mins) == 1 and mins[0].at == pytest.approx(xs[3], rel=0.05)
    assert np.argmin(e) in (2, 3, 4)
    # envelope theorem: the force is −de_t/dx (finite difference between the first two samples, 5 %)
    if envelope:
        slope = -(e[1] - e[0]) / (xs[1] - xs[0])
        assert slope == pytest.approx(0.5 * (f[0] + f[1]), rel=0.05)


def test_stationary_points_and_barriers_of_a_double_well():
    """e(x) = (x² − 1)² − 0.2 x on a grid: minima near ±1 (the right one lower), a maximum near 0."""
    x = np.linspace(-1.6, 1.6, 33)
    e = (x ** 2 - 1) ** 2 - 0.2 * x
    f = -(4 * x * (x ** 2 - 1) - 0.2)
    pts = stationary_points(x, e, f, symmetric_origin=False)
    assert [p.kind for p in pts] == ["min", "max", "min"]
    exact = np.sort(np.roots([4, 0, -4, -0.2]).real)
    assert [p.at for p in pts] == pytest.approx(list(exact), abs=0.02)
    b = barriers(pts)
    top = (exact[1] ** 2 - 1) ** 2 - 0.2 * exact[1]
    left = (exact[0] ** 2 - 1) ** 2 - 0.2 * exact[0]
    assert b == pytest.approx([top - left], abs=0.01)
    # an even profile with f < 0 after the origin: the origin is the minimum
    y = np.linspace(0, 1, 5)
    assert stationary_points(y, y ** 2, -2 * y)[0] == Stationary("min", 0.0, 0.0)


def test_barriers_refused_across_unconverged_samples():
    """An unconverged sample (NaN) is a "gap" of the profile: a maximum may hide there, so barriers() refuses
    with an error naming ``points`` instead of measuring a barrier across it (issue 32)."""
    x = np.linspace(-1.6, 1.6, 33)
    e = (x ** 2 - 1) ** 2 - 0.2 * x
    f = -(4 * x * (x ** 2 - 1) - 0.2)
    e[15:18], f[15:18] = np.nan, np.nan            # the samples around the maximum near x = 0 did not converge
    pts = stationary_points(x, e, f, symmetric_origin=False)
    assert [p.kind for p in pts if p.kind != "gap"] == ["min", "max", "min"]   # the maximum interpolated across
    assert [p.at for p in pts if p.kind == "gap"] == pytest.approx(list(x[15:18]))
    with pytest.raises(ParameterError, match="points must be a profile with every sample converged"):
        barriers(pts)


def test_bad_input_names_the_parameter():
    p = ModelParams(omega=0.3, sigma=0.7)
    with pytest.raises(ParameterError, match="thetas"):
        solve_landscape(p, 0.5, "theta", thetas=[0.6])                   # |θ| < σ² = 0.49
    with pytest.raises(ParameterError, match="fixed"):
        solve_landscape(p, 0.5, "q", thetas=[0.1])
    with pytest.raises(ParameterError, match="alpha"):
        solve_landscape(p, -1.0, "m", ms=[0.1])
