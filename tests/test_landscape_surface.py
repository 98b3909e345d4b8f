"""The landscape surface e_t(m, θ) (theory/landscape_surface.py, issue 32): the flood's minima and lowest passes on
synthetic grids; the surface's minimum is the full map's fixed point (forces ≈ 0, the split rule's overlaps); the
surface on its invariant lines equals the constrained profiles with the other overlap left free from 0; bad input
is refused."""

from __future__ import annotations

import numpy as np
import pytest

from attnphase import theory
from attnphase.errors import ParameterError
from attnphase.model import ModelParams
from attnphase.theory.landscape import Fixed, solve_landscape
from attnphase.theory.landscape_surface import MAX_POINTS, flood, surface
from attnphase.theory.qmc_config import QMCConfig

X, Y = np.meshgrid(np.linspace(-2, 2, 21), np.linspace(-1, 1, 11), indexing="ij")


def test_two_wells_have_their_pass_at_the_saddle():
    """e = (x² − 1)² + y² + 0.1 x: minima at x ≈ ±1, y = 0 (the left one deeper), saddle at (0, 0) with e = 1."""
    e = (X ** 2 - 1) ** 2 + Y ** 2 + 0.1 * X
    minima, passes = flood(e)
    assert [(b.i, b.j) for b in minima] == [(5, 5), (15, 5)]
    assert minima[0].e_t == pytest.approx(-0.1) and minima[1].e_t == pytest.approx(0.1)
    assert len(passes) == 1
    p = passes[0]
    assert (p.i, p.j, p.lower, p.higher) == (10, 5, 0, 1)
    assert p.barrier == pytest.approx(1.0 - 0.1) and not p.edge


def test_the_pass_is_the_lowest_of_two_routes():
    """Two wells joined by a high direct ridge (e = 2 on x = 0) with a low gap (e = 0.5) at one end: the minimax
    path goes through the gap, not over the ridge's lower-looking middle."""
    e = np.full((7, 7), 3.0)
    e[1, 3], e[5, 3] = 0.0, 0.2                # the wells
    e[2:5, 3] = 2.0                            # the direct route: over 2
    e[1:6, 1] = 1.0                            # a detour at 1.0 …
    e[1, 2], e[5, 2] = 1.0, 1.0
    e[3, 1] = 0.5                              # … whose highest point is 1.0, lower than 2
    minima, passes = flood(e, open_edges=(False, False))
    assert [(b.i, b.j) for b in minima][:2] == [(1, 3), (5, 3)]
    main = [p for p in passes if {p.lower, p.higher} == {0, 1}]
    assert len(main) == 1 and main[0].e_t == pytest.approx(1.0) and main[0].barrier == pytest.approx(0.8)


def test_one_well_and_a_slope_have_no_barrier():
    minima, passes = flood(X ** 2 + Y ** 2)
    assert [(b.i, b.j, b.edge) for b in minima] == [(10, 5, False)] and passes == []
    minima, passes = flood(X + Y)               # monotone: its lowest point is the first corner, no pass
    assert len(minima) == 1 and passes == []
    minima, passes = flood(-(X + Y))            # … or the open corner: an edge minimum
    assert len(minima) == 1 and minima[0].edge and passes == []


def test_unconverged_points_are_walls_and_flagged():
    e = (X ** 2 - 1) ** 2 + Y ** 2 + 0.1 * X
    e[10, 5] = np.nan                           # the saddle unconverged: the pass moves next to it and says so
    _, passes = flood(e)
    assert len(passes) == 1 and passes[0].near_gap and passes[0].e_t > 1.0


@pytest.mark.parametrize("bad", [np.zeros((0, 3)), np.zeros(5)])
def test_flood_refuses_a_non_grid(bad):
    with pytest.raises(ParameterError, match="e_t"):
        flood(bad)


@pytest.mark.parametrize("kw, name", [(dict(theta_grid=[]), "theta_grid"), (dict(theta_grid=[-0.1, 0.2]),
                                      "theta_grid"), (dict(m_grid=[0.1, 0.05]), "m_grid"),
                                      (dict(theta_grid=[0.0, 1.0]), "theta_grid"),
                                      (dict(theta_grid=np.linspace(0, 0.5, 60), m_grid=np.linspace(0, 1, 60)),
                                       "grid")])
def test_surface_refuses_bad_grids_before_work(kw, name):
    with pytest.raises(ParameterError, match=name):
        surface(ModelParams(omega=0.3), 1.0, **kw)


def test_cli_limit_is_the_library_limit():
    from attnphase.cli.landscape_cmd import SURFACE_MAX_POINTS
    assert SURFACE_MAX_POINTS == MAX_POINTS


SMALL = QMCConfig(points=256, scrambles=2, coarse=0)


def test_surface_on_its_invariant_lines_equals_the_profiles():
    """At m = 0 the surface is the e_t(θ) profile's M = 0 sector and at θ = 0 the e_t(m) profile's θ = 0 sector
    (the pinned solves of ``landscape.profiles``), in the right place of the grid (θ/σ² rows, m columns) with the
    forces in θ/σ² units; and where M is left free from 0 instead (Fixed.THETA, seed 0), the invariant subspace
    holds it (|m| stays at the QMC noise) and e_t agrees — the same fixed point reached by another map."""
    p = ModelParams(omega=0.3, sigma=0.7)
    s2 = p.sigma ** 2
    th, mg = np.array([0.0, 0.3, 0.5]), np.array([0.0, 0.1, 0.2])
    s = surface(p, 0.5, th, mg, qmc_config=SMALL)
    assert s.not_converged == 0 and s.status.shape == (3, 3)
    along_theta = solve_landscape(p, 0.5, Fixed.BOTH, thetas=th * s2, qmc_config=SMALL)     # ms = 0
    along_m = solve_landscape(p, 0.5, Fixed.BOTH, ms=mg, qmc_config=SMALL)                  # thetas = 0
    for k, (a, b) in enumerate(zip(along_theta, along_m)):
        assert a.converged and b.converged
        assert s.values["e_t"][k, 0] == pytest.approx(a.values["e_t"], rel=1e-5)
        assert s.values["e_t"][0, k] == pytest.approx(b.values["e_t"], rel=1e-5)
        assert s.values["force_theta"][k, 0] == pytest.approx(a.values["force_theta"] * s2, rel=1e-3, abs=1e-7)
        assert s.values["force_m"][0, k] == pytest.approx(b.values["force_m"], rel=1e-3, abs=1e-7)
    # e_t rises along m at this α (−∂e_t/∂m < 0 off m = 0), and the e_t(θ) line is not the e_t(m) line
    assert np.all(s.values["force_m"][:, 1:] < 0)
    assert s.values["e_t"][2, 0] != pytest.approx(s.values["e_t"][0, 2], rel=1e-3)
    free = solve_landscape(p, 0.5, Fixed.THETA, thetas=th[1:] * s2, seed=0.0, qmc_config=SMALL)
    for k, f in enumerate(free, start=1):
        assert f.converged and f.values["m"] < 0.02
        assert f.values["e_t"] == pytest.approx(s.values["e_t"][k, 0], rel=2e-3)


def test_surface_minimum_is_the_full_fixed_point():
    """Paper defaults (ω = 0.3), α = 2: the semantic fixed point (split rule θ/σ² = 0.6326, m = 0) is the surface's
    minimum on a grid around it; the forces there vanish within the QMC error (refined position) and point
    towards it from the neighbours (−∂e_t/∂(θ/σ²) > 0 below, < 0 above; −∂e_t/∂m < 0 off m = 0)."""
    p = ModelParams(omega=0.3)
    full = theory.solve(p, [2.0], "semantic", stability=False)[0]
    assert full.converged
    th0 = full.theta / p.sigma ** 2
    # (th0 + 0.04, m = 0) is a limit cycle of the constrained map on these QMC points (not converged in 400 steps;
    # its neighbours take 9): the grid steps over it
    th = np.round(th0 + np.array([-0.1, -0.03, 0.03, 0.1]), 4)
    s = surface(p, 2.0, th, [0.0, 0.05, 0.1], qmc_config=QMCConfig(points=1024, scrambles=4, coarse=0),
                max_steps=100)
    assert s.not_converged == 0
    interior = [b for b in s.minima if not b.edge]
    assert len(interior) == 1
    rec = s.minimum_record(interior[0])
    assert rec["m"] == 0.0 and rec["m_refined"] == 0.0
    assert rec["theta_over_sigma2"] in (th[1], th[2])
    assert rec["theta_refined"] == pytest.approx(th0, abs=0.01)
    assert rec["e_t"] == pytest.approx(full.e_t, rel=0.01)
    ft = s.values["force_theta"][:, 0]
    assert ft[0] > 0 and ft[1] > 0 > ft[2] and ft[3] < 0
    assert np.all(s.values["force_m"][:, 1:] < 0)
    # the force at the grid point nearest the fixed point is small: the linear interpolation to th0 vanishes
    k = int(np.argmin(abs(th - th0)))
    assert abs(ft[k]) < abs(ft[k] - ft[k - 1 if th[k] > th0 else k + 1]) + 3 * s.errors["force_theta"][k, 0]
