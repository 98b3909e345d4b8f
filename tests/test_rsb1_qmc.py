"""1RSB by nested QMC at any L (theory/rsb1_qmc.py; docs/theory/one-step-rsb.md, "Nested QMC at any L").

At L = 2 the nested rule is checked against the tabulated grid integrator of :mod:`attnphase.theory.rsb1` (an
independent discretisation: ω grid + Gaussian blurs + folded y rule, the L = 2 prox); at L = 3 its Δq = 0 value at
the RS uninformative point against the engine's e_t (docs/data/beyond_rs/rs_L3_a1.json: QMC 4096 × 4,
e_t = 0.0070876 ± 0.0000071 at q = 0.118198, V = 27.68807).
"""

from __future__ import annotations

import numpy as np
import pytest

from attnphase.errors import ParameterError
from attnphase.model import ModelParams
from attnphase.theory import rsb1, rsb1_qmc as RQ

P2 = ModelParams(sigma=0.5, lam=0.001, omega=0.3)
P3 = ModelParams(L=3, A=((0.6, 0.2, 0.2), (0.2, 0.6, 0.2), (0.2, 0.2, 0.6)), omega=0.3, sigma=0.5, lam=0.01)
RS_L3 = (0.1181980432319812, 27.688069089618452, 0.00708762421659373, 7.109140881712122e-06)
"""q, V, e_t, e_t's s.e. of the uninformative RS point at L = 3, α = 1 (docs/data/beyond_rs/rs_L3_a1.json)."""


@pytest.fixture(scope="module")
def rule2():
    return RQ.nested_rule(2, 256, 4, 12, seed=1000)


def test_nested_rule_matches_the_l2_grid_table(rule2):
    """E_{y, ξ0}[−(1/x) log E_ξ1 e^{−xM}] at L = 2 against rsb1.energetic on a 55-point ω grid (y order 10), at
    the point of tests/test_rsb1.py's nested check (q0 = 0.03, Δq = 0.06, x = 2000) and at small x: within
    4 s.e. + the grid's 0.2 %; and the x-weighting is resolved (the x = 0 value differs by more)."""
    V = 150.0
    table = rsb1.tabulate(P2, V, rsb1.OmegaGrid(2.7, 55), y_order=10)
    tol = {}
    for x in (5.0, 2000.0):
        grid_val = rsb1.energetic(table, 0.03, 0.06, x).value
        en = RQ.energetic(P2, rule2, 0.03, 0.06, V, x)
        mean, se = en.value.mean(), en.value.std(ddof=1) / 2
        tol[x] = 4 * se + 2e-3 * abs(mean)
        assert abs(grid_val - mean) < tol[x]
    x0 = RQ.energetic(P2, rule2, 0.03, 0.06, V, 0.0).value.mean()
    assert abs(x0 - grid_val) > 5 * tol[2000.0]


def test_gradient_is_the_derivative_of_the_estimate():
    """The analytic (∂q0, ∂Δq, ∂V, ∂x) (envelope theorem, tilted weights) against central differences of the
    same fixed-point estimate (common random numbers)."""
    rule2 = RQ.nested_rule(2, 64, 2, 8, seed=5)
    arg = np.array([0.03, 0.06, 150.0, 300.0])
    g = RQ.functional(P2, rule2, 0.35, *arg).grad
    for k in range(4):
        h = 1e-5 * arg[k]
        up, dn = arg.copy(), arg.copy()
        up[k] += h
        dn[k] -= h
        fd = (RQ.functional(P2, rule2, 0.35, *up).e.mean() - RQ.functional(P2, rule2, 0.35, *dn).e.mean()) / (2 * h)
        assert g[k] == pytest.approx(fd, rel=2e-4, abs=1e-10)


def test_delta_q_zero_and_x_zero_are_rs(rule2):
    """Δq = 0: the functional does not depend on x (one state). x → 0 with Δq > 0: the RS functional at
    q1 = q0 + Δq (the two Gaussians merge), up to the two rules' integration errors; the small-x (log1p) path
    is continuous at x = 0."""
    rs = [RQ.functional(P2, rule2, 0.35, 0.09, 0.0, 150.0, x).e for x in (0.0, 3.0, 3000.0)]
    for v in rs[1:]:
        np.testing.assert_allclose(v, rs[0], rtol=1e-13)
    nested0 = RQ.functional(P2, rule2, 0.35, 0.03, 0.06, 150.0, 0.0)
    tiny = RQ.functional(P2, rule2, 0.35, 0.03, 0.06, 150.0, 1e-8)
    np.testing.assert_allclose(tiny.e, nested0.e, rtol=1e-8)
    rs_q1 = RQ.functional(P2, rule2, 0.35, 0.09, 0.0, 150.0, 0.0)
    assert abs(nested0.mean - rs_q1.mean) < 4 * np.hypot(nested0.se, rs_q1.se)


def test_l3_delta_q_zero_is_the_engine_rs_point():
    """L = 3, α = 1, the uninformative RS point: the Δq = 0 functional equals the engine's e_t within the two
    error bars (4 s.e.) and is stationary in q and V within its noise."""
    q, V, e_t, e_se = RS_L3
    rule = RQ.nested_rule(3, 2048, 4, 2, seed=7)
    v = RQ.functional(P3, rule, 1.0, q, 0.0, V, 50.0)
    assert abs(v.mean - e_t) < 4 * np.hypot(v.se, e_se)
    assert abs(q * v.grad[0]) < 2e-4 * q / (2 * V) * 100 and abs(V * v.grad[2]) < 0.02 * q / (2 * V)


def test_bad_input_is_refused(rule2):
    for args, name in [((0.03, 0.06, 150.0, -1.0), "q0, dq, x"), ((0.03, -0.01, 150.0, 5.0), "q0, dq, x"),
                       ((0.03, 0.06, 0.0, 5.0), "V"), ((0.0, 0.0, 150.0, 5.0), "q0, dq")]:
        with pytest.raises(ParameterError, match=name):
            RQ.functional(P2, rule2, 0.35, *args)
    with pytest.raises(ParameterError, match="r = r"):
        RQ.functional(ModelParams(r=2), rule2, 0.35, 0.03, 0.06, 150.0, 5.0)
    with pytest.raises(ParameterError, match="rule"):
        RQ.functional(P3, rule2, 1.0, 0.03, 0.06, 150.0, 5.0)
    with pytest.raises(ParameterError, match="order"):
        RQ.nested_rule(3, 64, 2, 5)
    with pytest.raises(ParameterError, match="alpha"):
        RQ.functional(P2, rule2, 0.0, 0.03, 0.06, 150.0, 5.0)
    with pytest.raises(ParameterError, match="x"):
        RQ.saddle(P2, rule2, 0.35, -2.0, (0.01, 0.05, 100.0))


@pytest.mark.slow
def test_l3_saddle_above_rs_and_x_stationary_on_a_small_rule():
    """L = 3 (N = 64 × 2, GH 4): the saddle at x = 120 is stationary with Δq > 0.1 and lies above the RS point of
    the same rule (x → 0), as docs/theory/one-step-rsb.md §4 says the ground state must; the RS point of the rule
    is the engine's within its QMC error (docs/data/beyond_rs/rs_L3_a1.json)."""
    rule = RQ.nested_rule(3, 64, 2, 4, seed=3)
    s = RQ.saddle(P3, rule, 1.0, 120.0, (1e-4, 0.114, 21.0))
    assert s.converged and s.dq > 0.1
    rs = RQ.rs_saddle(P3, rule, 1.0, RS_L3[:2], inner=True)
    assert rs.converged and rs.dq == pytest.approx(RS_L3[0], rel=0.05) and rs.V == pytest.approx(RS_L3[1], rel=0.05)
    assert np.all(s.value.e > rs.value.e + 5e-5)
