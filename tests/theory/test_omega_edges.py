"""Edges of ω (issue 11, helper hB2; docs/notes/2026-12-05-theory-general.md "Edges of ω"): near ω = 1 the positional map has a
stiff oscillating mode (Jacobian eigenvalue −6 … −9 in the (q, m) plane), and the cold start at damping 0.6
wandered (ω = 0.98, α = 2: m = −1.23 after 300 steps) or fell onto m = 0; the positional start's q now follows ω
(``solver.positional_q_factor``) and its cold start runs at damping 0.3, retried at 0.6 where that fails
(``solver.COLD_DAMPING``)."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

from attnphase.model import ModelParams
from attnphase.theory.solver import COLD_DAMPING, solve_point, start_state

M_INF_OMEGA_1 = 0.35028
"""ω = 1, α → ∞: the population optimum over m alone (docs/notes/2026-12-05-theory-general.md, the audit's table: 0.35038 on a
2-D Gauss–Hermite rule of order 80, 0.350277 at α = 30 on the split rule)."""


def _cold(omega, alpha, **kw):
    return solve_point(ModelParams(omega=omega), alpha, "positional", max_steps=60, stability=False, **kw)


@pytest.mark.parametrize("omega, alpha", [(0.98, 2.0), (1.0, 5.0)])
def test_positional_cold_start_near_omega_one_finds_the_continued_point(omega, alpha):
    """Fails on the old code (ω = 0.98, α = 2: not converged after 60 steps, m wandering; ω = 1, α = 5:
    converged onto m ≈ 0, the uninformative point). The reference is a second route: continuation in ω from
    ω = 0.9 (whose cold start converged before too) at damping 0.15, each step warm-started."""
    s = _cold(omega, alpha)
    assert s.converged and s.start == "given or model"
    ref = None
    for om in (0.9, 0.95, omega):
        ref = solve_point(ModelParams(omega=om), alpha, "positional", init=ref, damping=0.15, stability=False,
                          max_steps=100)
    assert ref.converged
    assert abs(s.m) == pytest.approx(abs(ref.m), rel=1e-4)
    assert s.q == pytest.approx(ref.q, rel=1e-4) and s.V == pytest.approx(ref.V, rel=1e-4)
    assert s.e_t == pytest.approx(ref.e_t, rel=1e-4)


def test_positional_branch_near_omega_one_is_a_fixed_point_continuous_in_omega_and_tends_to_the_limit():
    """m(ω) at α = 2 increases smoothly to ω = 1 (no jump between cold starts at neighbouring ω); the point is a
    fixed point of the default map (a kicked copy iterates back); at ω = 1 m rises with α towards the α → ∞
    population optimum from below."""
    ms = [abs(_cold(om, 2.0).m) for om in (0.9, 0.95, 0.98, 1.0)]
    assert np.all(np.diff(ms) > 0) and np.max(np.diff(ms)) < 0.01
    s = _cold(0.98, 2.0)
    kicked = SimpleNamespace(q=s.q * 1.03, m=s.m * 0.97, V=s.V * 1.05, theta=s.theta)   # a start: any (q, m, V, θ)
    back = solve_point(s.params, 2.0, "positional", init=kicked, stability=False, max_steps=60)
    assert back.converged and back.m == pytest.approx(s.m, rel=2e-4)
    m10 = abs(_cold(1.0, 10.0).m)
    assert m10 < M_INF_OMEGA_1 and m10 == pytest.approx(M_INF_OMEGA_1, abs=1e-3)


def test_positional_retry_damping_and_start():
    """A positional cold start runs at 0.3 (not the others), retried at 0.6 where it fails or collapses; the start's q/(σ²m²) is 3 at ω = 0.3
    (the start measured there is unchanged) and 1.3 at ω = 1."""
    assert COLD_DAMPING == {"positional": 0.3}
    for om, f in ((0.3, 3.0), (1.0, 1.3)):
        s = start_state(ModelParams(omega=om), 2.0, "positional")
        q, m = s.q.item(), s.M.item()
        assert q / (0.25 * m * m) == pytest.approx(f, rel=1e-12)
