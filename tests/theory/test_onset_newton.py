"""Next to an onset from q = 0 (a growth factor of the closed-form q = 0 point crosses 1) the damped/Anderson
iteration crawls; the split-rule solver switches to Newton steps in √q there (theory/onset_newton.py). The
answer must be right on both sides: q = 0 above the onset (closed form, theory/zero_point.py), a point of small
q > 0 below it, with q ∝ λ_onset − λ."""

from __future__ import annotations

import math

import numpy as np
import pytest

from attnphase.model import ModelParams
from attnphase.theory.onset_newton import crawling, newton_candidate
from attnphase.theory.solver import solve_point
from attnphase.theory.zero_point import onset_lam, zero_point

P = ModelParams(omega=0.3)


@pytest.mark.parametrize("branch, lam", [("positional", 0.175), ("semantic", 0.081)])
def test_just_above_the_onset_the_solve_reaches_the_closed_form_q_zero_point(branch, lam):
    """Fails on the old code: ``not converged after 200 steps`` (q = 2.0e-5 positional, 2.8e-8 semantic).
    λ is 0.8 % (positional) and 0.4 % (semantic) above the closed-form onset; the old iteration needed 9089
    steps at λ = 0.174 (0.2 % above) to reach the same q = 0 point."""
    params = P.replace(lam=lam)
    assert onset_lam(P, 2.0, "m" if branch == "positional" else "theta") < lam
    sol = solve_point(params, 2.0, branch, max_steps=200, stability=False)
    assert sol.converged, sol.status
    assert sol.q == 0.0 and sol.m == 0.0 and sol.theta == 0.0
    zp = zero_point(params, 2.0)
    assert sol.V == pytest.approx(zp.V, rel=2e-5)
    assert sol.e_t == pytest.approx(zp.e_t, rel=1e-6)


def test_just_below_the_onset_the_small_q_point_vanishes_linearly_at_the_closed_form_onset():
    """Two points 0.11 % and 0.005 % below the positional onset: both converge to q > 0 with the same
    q/(λ_onset − λ) (a branch leaving q = 0 continuously at the closed-form onset), where the closed-form q = 0
    point is unstable (growth against m > 1), so the solve must not fall onto it."""
    lam_c = onset_lam(P, 2.0, "m")
    slopes = []
    for lam in (lam_c - 2e-4, lam_c - 1e-5):
        params = P.replace(lam=lam)
        assert zero_point(params, 2.0).growth_m > 1.0
        sol = solve_point(params, 2.0, "positional", max_steps=200, stability=False)
        assert sol.converged and sol.q > 0 and abs(sol.m) > 0, sol.status
        slopes.append(sol.q / (lam_c - lam))
    assert slopes[1] == pytest.approx(slopes[0], rel=0.03)


def _toy_map(eps, c=5.0):
    """A pitchfork in normal form, shaped like the pinned positional map near q = 0: m' = (1 + eps) m − c m³,
    q' = 2 m'² + 0.5 q (q follows m²), V' = 1 + q (V is slaved). Its roots: m = 0, q = 0, V = 1, and for
    eps > 0 m² = eps/c."""
    def F(x):
        q, m, V, th = x
        m1 = (1.0 + eps) * m - c * m ** 3
        return np.array([2.0 * m1 ** 2 + 0.5 * q, m1, 1.0 + q, 0.0]), None, None
    return F


@pytest.mark.parametrize("eps", [-1e-3, 1e-3])
def test_newton_in_sqrt_q_reaches_either_root_of_a_pitchfork_in_a_few_steps(eps):
    """On the toy pitchfork the damped iteration needs thousands of steps (rate 1 − |eps|); Newton in √q
    reaches q = 0 (eps < 0, ``to_zero``) or m² = eps/c (eps > 0, steps towards 0 capped) within 12 steps."""
    F = _toy_map(eps)
    free = np.array([True, True, True, False])
    x = np.array([2.0 * 0.05 ** 2, 0.05, 1.0, 0.0])
    for _ in range(12):
        x = newton_candidate(F, x, F(x)[0], free, to_zero=eps < 0)
        if x[0] < 1e-24:
            break
    if eps < 0:
        assert x[0] < 1e-20 and abs(x[1]) < 1e-9
    else:
        assert x[1] ** 2 == pytest.approx(eps / 5.0, rel=1e-6)
        assert x[0] == pytest.approx(4.0 * eps / 5.0, rel=1e-6)


def test_a_capped_newton_step_never_falls_below_half_of_sqrt_q():
    F = _toy_map(-1e-3)
    x = np.array([2.0 * 0.05 ** 2, 0.05, 1.0, 0.0])
    cand = newton_candidate(F, x, F(x)[0], np.array([True, True, True, False]), to_zero=False)
    assert math.sqrt(cand[0]) >= 0.5 * math.sqrt(x[0]) * (1 - 1e-12)


def test_crawling_needs_a_slow_residual_and_small_q():
    slow = [1e-2 * 0.97 ** k for k in range(12)]
    fast = [1e-2 * 0.5 ** k for k in range(12)]
    assert crawling(slow, q=1e-5, sigma=0.5)
    assert not crawling(fast, q=1e-5, sigma=0.5)
    assert not crawling(slow, q=0.05, sigma=0.5)       # an ordinary point (q ≳ 0.1 σ²)
    assert not crawling(slow[:5], q=1e-5, sigma=0.5)   # too early to tell
