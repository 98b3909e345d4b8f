"""1RSB at zero temperature (theory/rsb1.py, rsb1_saddle.py; docs/theory/one-step-rsb.md).

The RS reduction is checked against a live `theory.solve` (split rule) at σ = 0.5, λ = 0.001, α = 0.35 (the
cheapest of the issue-32 points); the channel average against an independent nested rule (QMC outside, product
Gauss–Hermite inside, prox solved per node); the gradients against central finite differences.
"""

from __future__ import annotations

import numpy as np
import pytest

from attnphase.errors import ParameterError
from attnphase.model import ModelParams
from attnphase.theory import prox as P
from attnphase.theory import rsb1
from attnphase.theory.qmc import normal_points
from attnphase.theory.quadrature import gauss_hermite
from attnphase.theory.rsb1_saddle import TableLattice, value
from attnphase.theory.solve import solve

PARAMS = ModelParams(sigma=0.5, lam=0.001, omega=0.3)
ALPHA = 0.35
GRID = rsb1.OmegaGrid(2.7, 55)


@pytest.fixture(scope="module")
def rs_point():
    sol = solve(PARAMS, ALPHA, "uninformative", stability=False)[0]
    assert sol.converged
    return sol.values["q"], sol.values["V"], sol.values["e_t"]


@pytest.fixture(scope="module")
def table(rs_point):
    return rsb1.tabulate(PARAMS, rs_point[1], GRID, y_order=10)


def test_delta_q_zero_is_rs_for_every_x(rs_point, table):
    """Δq = 0: one state, e is the RS functional at any x, and equals the split rule's e_t (grid + GH error,
    measured 0.2 % at this grid) where the RS functional is stationary."""
    q, V, e_t = rs_point
    vals = [rsb1.functional(table, ALPHA, q, 0.0, x) for x in (0.0, 3.0, 300.0, 3000.0)]
    for v in vals[1:]:
        assert v.e == pytest.approx(vals[0].e, rel=1e-12, abs=1e-15)
    assert vals[0].e == pytest.approx(e_t, rel=5e-3)
    # stationary at the RS fixed point: ∂q and ∂V small against their separate terms (1/(2V), q/(2V²))
    g = vals[0].grad
    assert abs(g[0]) < 0.02 / (2 * V)
    assert abs(g[2]) < 0.02 * q / (2 * V * V)


def test_x_to_zero_is_rs_at_q1(rs_point, table):
    """x → 0 with Δq > 0: the functional is the RS one at q = q1 = q0 + Δq (the blur is a Gaussian semigroup,
    up to its discretisation)."""
    q, V, _ = rs_point
    e_rs_q1 = rsb1.functional(table, ALPHA, q, 0.0, 0.0).e
    for x in (0.0, 1e-7, 1e-4):
        e = rsb1.functional(table, ALPHA, q - 0.03, 0.03, x).e
        assert e == pytest.approx(e_rs_q1, rel=2e-4)
    e_small = rsb1.functional(table, ALPHA, q - 0.03, 0.03, 1e-7).e
    assert e_small == pytest.approx(rsb1.functional(table, ALPHA, q - 0.03, 0.03, 0.0).e, rel=1e-9)


def test_breaking_changes_e_when_both_x_and_dq_positive(rs_point, table):
    """The converse: with x > 0 and Δq > 0 the value moves away from RS (the x-weighting matters)."""
    q, V, _ = rs_point
    e0 = rsb1.functional(table, ALPHA, q - 0.05, 0.05, 0.0).e
    e1 = rsb1.functional(table, ALPHA, q - 0.05, 0.05, 3000.0).e
    assert abs(e1 - e0) > 1e-3 * abs(e0)


@pytest.mark.parametrize("q0,dq,x", [(0.05, 0.04, 2000.0), (0.05, 0.04, 0.3), (0.004, 0.07, 1500.0)])
def test_gradient_against_finite_differences(rs_point, table, q0, dq, x):
    """Analytic (∂q0, ∂Δq, ∂x) against central differences: large-x, small-x (log1p) and interpolated-outer
    (√q0 < 2 grid spacings) paths."""
    g = rsb1.functional(table, ALPHA, q0, dq, x).grad
    steps = (1e-6, 1e-6, 1e-5 * x)
    for k, (i, hstep) in enumerate(zip((0, 1, 3), steps)):
        arg = np.array([q0, dq, x])
        up, dn = arg.copy(), arg.copy()
        up[k] += hstep
        dn[k] -= hstep
        fd = (rsb1.functional(table, ALPHA, *up).e - rsb1.functional(table, ALPHA, *dn).e) / (2 * hstep)
        assert g[i] == pytest.approx(fd, rel=1e-5, abs=1e-11)


def test_entropic_gradient_and_limits():
    """The prior term: its gradient against finite differences, its x → 0 limit λq1/(2σ²) − q1/(2V)."""
    p = ModelParams(sigma=0.7, lam=0.01, omega=0.3)
    arg = np.array([0.06, 0.05, 40.0, 200.0])
    _, g = rsb1.entropic(p, *arg)
    for k in range(4):
        hstep = 1e-7 * max(1.0, arg[k])
        up, dn = arg.copy(), arg.copy()
        up[k] += hstep
        dn[k] -= hstep
        fd = (rsb1.entropic(p, *up)[0] - rsb1.entropic(p, *dn)[0]) / (2 * hstep)
        assert g[k] == pytest.approx(fd, rel=1e-6, abs=1e-14)
    q1, V = 0.11, 40.0
    assert rsb1.entropic(p, 0.06, 0.05, V, 0.0)[0] == pytest.approx(0.01 * q1 / (2 * 0.49) - q1 / (2 * V), rel=1e-14)
    assert rsb1.entropic(p, 0.06, 0.05, V, 1e-9)[0] == pytest.approx(rsb1.entropic(p, 0.06, 0.05, V, 0.0)[0], rel=1e-8)


def test_channel_average_against_nested_qmc(rs_point, table):
    """E_y E_ξ0 [−(1/x) log E_ξ1 e^{−xM}] on the grid against an independent nested rule: scrambled Sobol over
    (ξ0, y), product Gauss–Hermite (order 12) over ξ1, the prox solved at every node; 4 scrambles give the error
    bar. Agreement within 4 s.e. + the grid's 0.2 %."""
    q, V, _ = rs_point
    q0, dq, x = 0.03, 0.06, 2000.0
    grid_val = rsb1.energetic(table, q0, dq, x).value
    Xi, Wi = gauss_hermite(12, 2)
    s2 = PARAMS.sigma ** 2
    ests = []
    for seed in range(4):
        pts = normal_points(4, 256, 1000 + seed)
        w1 = np.sqrt(q0) * pts[:, 0, None] + np.sqrt(dq) * Xi[None, :, 0]
        w2 = np.sqrt(q0) * pts[:, 1, None] + np.sqrt(dq) * Xi[None, :, 1]
        t1, t2 = P.teacher_diag(PARAMS.sigma * pts[:, 2], PARAMS.sigma * pts[:, 3], PARAMS.omega, PARAMS.A_array)
        _, _, M, _ = P.prox(w1, w2, np.broadcast_to(t1[:, None], w1.shape), np.broadcast_to(t2[:, None], w1.shape),
                            V, s2)
        c = M.min(axis=1, keepdims=True)
        phi = c[:, 0] - np.log(np.exp(-x * (M - c)) @ Wi) / x
        ests.append(phi.mean())
    mean, se = np.mean(ests), np.std(ests, ddof=1) / 2
    assert abs(grid_val - mean) < 4 * se + 2e-3 * abs(mean)
    # and the x-weighting is visible at this resolution: the RS average E M differs by more than that
    rs_val = rsb1.energetic(table, q0, dq, 0.0).value
    assert abs(rs_val - mean) > 4 * se + 2e-3 * abs(mean)


def test_lattice_interpolation_is_exact_at_nodes_and_v_gradient_consistent(rs_point):
    """Between lattice nodes, ∂e/∂V of the interpolated table matches finite differences in V; at a node the
    interpolated table is the tabulated one."""
    q, V, _ = rs_point
    lat = TableLattice(PARAMS, rsb1.OmegaGrid(2.7, 37), y_order=4, V_ref=V, ratio=1.2)
    node = lat.at(V)
    assert node.M is lat.node(0).M
    Vm = V * 1.2 ** 0.4
    g = value(lat, ALPHA, 0.04, 0.03, Vm, 500.0).grad[2]
    hstep = 1e-5 * Vm
    fd = (value(lat, ALPHA, 0.04, 0.03, Vm + hstep, 500.0).e - value(lat, ALPHA, 0.04, 0.03, Vm - hstep, 500.0).e) \
        / (2 * hstep)
    assert g == pytest.approx(fd, rel=1e-5)


def test_bad_input_is_refused(table):
    with pytest.raises(ParameterError, match="q0, dq, x"):
        rsb1.energetic(table, -0.1, 0.02, 10.0)
    with pytest.raises(ParameterError, match="n"):
        rsb1.OmegaGrid(2.0, 50)
    with pytest.raises(ParameterError, match="params"):
        rsb1.tabulate(ModelParams(L=3, A=((0.4, 0.3, 0.3),) * 3), 10.0)


def test_folded_y_rule_equals_the_full_rule():
    """y → −y (always) and y1 ↔ y2 (only with A_11 = A_22) fold the Gauss–Hermite rule: same integral of a
    function with those symmetries; the exchange fold changes the integral of one without it."""
    Y, W = gauss_hermite(8, 2)
    sym = lambda y: np.exp(-(y[:, 0] - y[:, 1]) ** 2) * (1 + y[:, 0] ** 2 * y[:, 1] ** 2)  # noqa: E731
    for ex in (False, True):
        Yf, Wf = rsb1.y_rule(8, exchange=ex)
        assert Wf.sum() == pytest.approx(1.0, rel=1e-14)
        assert Wf @ sym(Yf) == pytest.approx(W @ sym(Y), rel=1e-13)
    lop = lambda y: np.exp(-(y[:, 0] - y[:, 1]) ** 2) * (1 + y[:, 0] ** 2)  # noqa: E731  even, not exchange-symmetric
    Yf, Wf = rsb1.y_rule(8, exchange=False)
    assert Wf @ lop(Yf) == pytest.approx(W @ lop(Y), rel=1e-13)
    Yf, Wf = rsb1.y_rule(8, exchange=True)
    assert abs(Wf @ lop(Yf) - W @ lop(Y)) > 1e-3


def test_exchange_fold_only_where_a_is_symmetric():
    """The alternative A (A_11 ≠ A_22) keeps both members of every y1 ↔ y2 pair (MODEL.md §8)."""
    alt = ModelParams(sigma=0.5, lam=0.001, omega=0.3, A=((0.3, 0.7), (0.8, 0.2)))
    small = rsb1.OmegaGrid(1.0, 5)
    assert len(rsb1.tabulate(alt, 50.0, small, y_order=4).y_weights) == len(rsb1.y_rule(4)[1]) == 8
    assert len(rsb1.tabulate(PARAMS, 50.0, small, y_order=4).y_weights) == len(rsb1.y_rule(4, exchange=True)[1]) == 6


def test_saddle_and_parisi_maximum_on_a_coarse_lattice():
    """σ = 0.7, α = 0.5 (RS q = 0.1293, V = 46.7 from theory.solve, docs/data/beyond_rs/rsb1_rs_reference.json) on
    a coarse grid: the saddle is stationary with Δq > 0, and at the maximum over x, ∂e*/∂x = 0 and e* lies above
    the RS value of the same grid (breaking raises the minimal loss, docs §4)."""
    from attnphase.theory.rsb1_saddle import Rsb1Status, maximise_x, saddle
    p = ModelParams(sigma=0.7, lam=0.01, omega=0.3)
    q, V = 0.1293247, 46.73383
    lat = TableLattice(p, rsb1.OmegaGrid(2.7, 45), y_order=6, V_ref=V)
    pt = saddle(lat, 0.5, 250.0, (0.002, q, 0.7 * V))
    assert pt.status is Rsb1Status.CONVERGED and pt.dq > 0.05
    assert np.max(np.abs(pt.grad[:3])) < 1e-8
    best, scan = maximise_x(lat, 0.5, [150.0, 250.0, 400.0], (0.002, q, 0.7 * V))
    assert best is not None and best.status is Rsb1Status.CONVERGED
    assert abs(best.grad[3]) * best.x < 1e-6 * best.e
    e_rs = rsb1.functional(lat.at(V), 0.5, q, 0.0, 0.0).e
    assert best.e > e_rs + 1e-5
    assert all(best.e >= s.e - 1e-12 for s in scan if s.status is Rsb1Status.CONVERGED)
