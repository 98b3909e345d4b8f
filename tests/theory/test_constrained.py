"""The theory at a fixed positional overlap M (theory.constrained; MODEL.md §8; issue 11, helper hA): at a free
fixed point's M the constrained point is that fixed point and the force vanishes; the force is −de_t/dM; the
symmetries M → −M and token permutations hold exactly on correspondingly transformed point sets."""

from __future__ import annotations

import numpy as np
import pytest

from attnphase.model import ModelParams
from attnphase.theory.constrained import ThetaMode, solve_constrained
from attnphase.theory.engine import QMCConfig, solve
from attnphase.theory.qmc_map import qmc_points
from attnphase.theory.status import Status

CFG = QMCConfig(points=256, scrambles=4, coarse=0)
TIGHT = 1e-9


@pytest.fixture(scope="module")
def positional():
    """The L = 2, r = 1 positional fixed point at α = 2 (paper defaults) on CFG's points."""
    s = solve(ModelParams(), 2.0, "positional", qmc_config=CFG, rtol=TIGHT, full_prox_every=1)
    assert s.converged
    return s


def _close(a, b, ea, eb, k=3.0):
    return abs(a - b) <= k * np.hypot(ea, eb)


def test_constrained_at_the_positional_fixed_point_is_that_point_and_the_force_vanishes(positional):
    s = positional
    c = solve_constrained(ModelParams(), 2.0, np.asarray(s.x.M), theta=ThetaMode.PINNED, qmc_config=CFG,
                          rtol=TIGHT)[0]
    assert c.status is Status.CONVERGED
    for key in ("q", "V", "eps_g", "e_t"):
        assert _close(c.values[key], s.values[key], c.errors[key], s.errors[key]), key
    assert c.values["theta"] == 0.0
    # the force at the fixed point's M is zero within its QMC error, and much smaller than off it
    assert abs(c.values["force_along"]) <= 3 * c.errors["force_along"]
    off = solve_constrained(ModelParams(), 2.0, [0.6 * np.asarray(s.x.M), 1.4 * np.asarray(s.x.M)],
                            qmc_config=CFG, rtol=TIGHT)
    # a minimum of e_t(M) along M: the force points back to the fixed point from both sides and e_t is higher on
    # both (paired differences on the same points); significantly on the outer side, where the potential is
    # steep — the inner side is flat and noisy at 256 points (one scramble's e_t difference −9e-6, measured)
    assert off[0].values["force_along"] > 0
    assert off[1].values["force_along"] < -3 * off[1].errors["force_along"]
    inner, outer = (o.per_scramble["e_t"] - c.per_scramble["e_t"] for o in off)
    assert inner.mean() > 0
    assert outer.mean() > 3 * outer.std(ddof=1) / np.sqrt(outer.size)


def test_constrained_at_M_zero_with_free_theta_is_the_semantic_fixed_point():
    """Per scramble the same equations (M̂ pinned to 0 in the engine, M = 0 imposed here): equal to the
    iteration's tolerance, not only within the QMC error."""
    p = ModelParams()
    s = solve(p, 2.0, "semantic", qmc_config=CFG, rtol=TIGHT, full_prox_every=1)
    c = solve_constrained(p, 2.0, np.zeros((1, 1)), theta=ThetaMode.FREE, theta_seed=0.6, qmc_config=CFG,
                          rtol=TIGHT)[0]
    assert s.converged and c.converged
    for key in ("q", "theta", "V", "eps_g", "e_t"):
        np.testing.assert_allclose(c.values[key], s.values[key], rtol=1e-6, err_msg=key)
    assert c.values["theta"] > 0.1
    assert np.all(np.abs(c.values["force"]) <= 3 * c.errors["force"])


def test_force_is_minus_the_derivative_of_the_training_loss(positional):
    """f = −de_t/dM (envelope theorem) by a central difference along M and across it, on the same points.
    The channel's Stein hats make Φ stationary in (q, θ, V) only up to the QMC error, hence the tolerance."""
    p = ModelParams()
    M0 = 1.3 * np.asarray(positional.x.M)
    eps = 2e-3
    sols = solve_constrained(p, 2.0, [M0, M0 * (1 + eps), M0 * (1 - eps)], qmc_config=CFG, rtol=1e-11)
    assert all(s.converged for s in sols)
    per = [s.per_scramble for s in sols]
    fd = -(per[1]["e_t"] - per[2]["e_t"]) / (2 * eps * np.linalg.norm(M0))
    f = per[0]["force_along"]
    assert np.all(np.abs(f) > 1e-3)                        # a point where the force is large
    np.testing.assert_allclose(fd, f, rtol=0.03)


def _antithetic(params, cfg):
    xi, y = qmc_points(params, cfg)
    return (xi, y), (-xi, -y)


def test_sign_flip_of_M_is_exact_on_the_reflected_points():
    """(ξ, y) → −(ξ, y) maps ω → −ω and h* → −h* at −M; ℓ is even in h and h* (MODEL.md §8)."""
    p = ModelParams()
    cfg = QMCConfig(points=256, scrambles=2, coarse=0)
    pts, neg = _antithetic(p, cfg)
    M = np.array([[0.2]])
    a = solve_constrained(p, 1.5, M, qmc_config=cfg, points=pts, rtol=TIGHT)[0]
    b = solve_constrained(p, 1.5, -M, qmc_config=cfg, points=neg, rtol=TIGHT)[0]
    c = solve_constrained(p, 1.5, -M, qmc_config=cfg, rtol=TIGHT)[0]        # the ordinary points
    for key in ("q", "V", "eps_g", "e_t"):
        np.testing.assert_allclose(b.per_scramble[key], a.per_scramble[key], rtol=1e-7, err_msg=key)
        assert _close(c.values[key], a.values[key], c.errors[key], a.errors[key]), key
    np.testing.assert_allclose(b.per_scramble["force"], -a.per_scramble["force"], rtol=1e-6, atol=1e-12)


def test_token_permutation_is_exact_where_it_maps_A_and_P_to_themselves():
    """L = 3, A = 0.4 I + 0.2 J, P = I: permuting the tokens maps M → M Π (and the point sets along)."""
    p = ModelParams(L=3, A=[[0.6, 0.2, 0.2], [0.2, 0.6, 0.2], [0.2, 0.2, 0.6]])
    cfg = QMCConfig(points=128, scrambles=2, coarse=0)
    xi, y = qmc_points(p, cfg)
    perm = np.array([2, 0, 1])
    M = np.array([[0.15, -0.05, -0.08]])
    a = solve_constrained(p, 1.0, M, qmc_config=cfg, points=(xi, y), rtol=TIGHT)[0]
    # token l of the permuted sample is token perm[l] of the original: its encoding is row perm[l] of P = I
    b = solve_constrained(p, 1.0, M[:, perm], qmc_config=cfg, points=(xi[:, :, perm], y[:, :, perm]),
                          rtol=TIGHT)[0]
    assert a.converged and b.converged
    for key in ("q", "V", "eps_g", "e_t"):
        np.testing.assert_allclose(b.per_scramble[key], a.per_scramble[key], rtol=1e-7, err_msg=key)
    np.testing.assert_allclose(b.per_scramble["force"], a.per_scramble["force"][:, :, perm], rtol=1e-6,
                               atol=1e-12)
