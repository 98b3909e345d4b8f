"""Collapsing pinned branches and the sign of the growth factor (issue 11, helper hD; docs/notes/2026-12-05-theory-general.md,
"Collapsing pinned branches").

A pinned branch whose overlap (θ semantic, m positional) falls onto the uninformative point used to end `not
converged` (θ crawling by ~1 % a step, the Anderson step to θ ≈ 0 refused as a jump, or the relative change of
x_p, x̂_p at x_p ~ 1e-7 being round-off); the solver now sets the overlap to 0 below the collapse scale where
x_p = 0 attracts (``split_integrator.CollapseSnap``). A growth factor below −1 is an eigenvalue of the undamped map, not
an instability (MODEL.md §7): checked against the training loss's curvature along the pinned direction.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from attnphase.model import ModelParams
from attnphase.phase.continuation import COLLAPSE_TOL, PointState, point_state
from attnphase.theory.channel import channel
from attnphase.theory.solver import make_rule, solve_point
from attnphase.theory.split_integrator import IDX, CollapseSnap, SplitMap


def _x(q, m, V, theta):
    """A split-rule state vector from named scalars."""
    x = np.zeros(len(IDX))
    x[[IDX['q'], IDX['M'], IDX['V'], IDX['theta']]] = q, m, V, theta
    return x


@pytest.mark.parametrize("omega, alpha, branch", [(0.01, 0.5, "semantic"), (0.9, 2.0, "semantic"),
                                                  (0.0, 2.0, "positional")])
def test_a_collapsing_pinned_branch_converges_onto_the_uninformative_point(omega, alpha, branch):
    """Fails on the old code: `not converged` after 300 steps (ω = 0.01, α = 0.5: residual 2.9e-3; ω = 0.9,
    α = 2: θ = 4.3e-7, residual 1.9e-3); ω = 0, α = 2 positional: the cold start at damping 0.3 did not converge
    (m = 3.9e-9, residual 3.3e-5), the retry at 0.6 converged to m = 4.1e-10 (47 s against 6.5 s now). The
    reference is the uninformative point's own solve (both overlaps pinned); its growth factor along the
    collapsed overlap is below 1 (that is what lets the solver set it to 0)."""
    params = ModelParams(omega=omega)
    s = solve_point(params, alpha, branch, stability=False)
    assert s.converged, s.status
    assert s.start == "given or model"      # the first cold start converged (no retry at another damping)
    assert point_state(s) is PointState.COLLAPSED
    assert s.m == 0.0 and s.theta == 0.0
    u = solve_point(params, alpha, "uninformative", stability=False)
    assert u.converged
    assert s.q == pytest.approx(u.q, rel=2e-5) and s.V == pytest.approx(u.V, rel=2e-5)
    assert s.e_t == pytest.approx(u.e_t, rel=2e-5)
    p = IDX["M"] if branch == "positional" else IDX["theta"]
    F = SplitMap(params, alpha, "free", make_rule(4))
    x = _x(u.q, 0.0, u.V, 0.0)
    x[p] = 1e-2 * math.sqrt(u.q)
    assert F(x)[0][p] / x[p] < 1.0


def test_the_snap_needs_an_attracting_zero():
    """At the uninformative point of ω = 0.9, α = 2 the growth factor of θ is 0.27 and that of m is 4.1 (the
    positional branch exists): an iterate below the collapse scale has θ set to 0 on the semantic branch, and
    keeps its m on the positional one."""
    params = ModelParams(omega=0.9)
    q, V = 0.1091156, 28.02253
    small = 0.1 * COLLAPSE_TOL * params.sigma * math.sqrt(q)
    sem = _x(q, 0.0, V, small)
    CollapseSnap(SplitMap(params, 2.0, "semantic", make_rule(4))).apply(sem)
    assert sem[IDX["theta"]] == 0.0
    pos = _x(q, small, V, 0.0)
    CollapseSnap(SplitMap(params, 2.0, "positional", make_rule(4))).apply(pos)
    assert pos[IDX["M"]] == small
    big = _x(q, 0.0, V, 10 * COLLAPSE_TOL * params.sigma * math.sqrt(q))   # above the scale: untouched
    CollapseSnap(SplitMap(params, 2.0, "semantic", make_rule(4))).apply(big)
    assert big[IDX["theta"]] > 0


def test_a_growth_factor_below_minus_one_is_stable():
    """Semantic, ω = 0, α = 2: growth factor g ≈ −3.69 against m, reported stable (MODEL.md §7). Independent
    checks: (i) the training loss along m at the fixed point, e_t(m) − e_t(0) = D m²/2 + α (E[M](m) − E[M](0))
    with m̂ = D m (MODEL.md §6's Φ; E[M] the expected prox value, not m̂), is convex with curvature D (1 − g) > 0:
    a local minimum in m; (ii) the undamped map multiplies a small m by g each step (an oscillation of the plain
    iteration), the map damped at 0.3 by 1 + 0.3 (g − 1), |·| < 1."""
    params = ModelParams(omega=0.0)
    s = solve_point(params, 2.0, "semantic", nodes=8)
    assert s.converged and s.stability < -1.0 and s.stable
    assert point_state(s) is PointState.OK
    g = s.stability
    R = make_rule(s.nodes)
    D = params.lam + params.sigma ** 2 * s.V_hat
    em0 = channel(params, 2.0, s.q, 0.0, s.V, s.theta, R).EM
    dm = 3e-3
    de = [D * dm ** 2 / 2 + 2.0 * (channel(params, 2.0, s.q, sg * dm, s.V, s.theta, R, use_symmetry=False).EM - em0)
          for sg in (1.0, -1.0)]
    curvature = (de[0] + de[1]) / dm ** 2
    assert curvature > 0
    assert curvature == pytest.approx(D * (1.0 - g), rel=0.02)
    F = SplitMap(params, 2.0, "free", make_rule(4))
    x = _x(s.q, 1e-3 * math.sqrt(s.q), s.V, s.theta)
    fx = F(x)[0]
    m = IDX["M"]
    assert fx[m] / x[m] == pytest.approx(g, rel=0.02)
    assert abs(1.0 + 0.3 * (fx[m] / x[m] - 1.0)) < 1.0
