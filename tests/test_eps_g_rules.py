"""ε_g with an explicit product rule (the path the product-rule solver and the curves' fixed-order evaluations
use) against the default order-increasing evaluation and an independent Monte Carlo (issue 33; kills a
bench/mutation.py survivor in observables.eps_g's fixed-rule branch)."""
from __future__ import annotations

import pytest
from test_audit_defaults import _eps_g_monte_carlo

from attnphase.model import ModelParams
from attnphase.theory.observables import eps_g
from attnphase.theory.quadrature import ProductRule


@pytest.mark.parametrize("q, m, theta", [(0.1148, 0.0, 0.1582), (0.0511, 0.2582, 0.0)])
def test_eps_g_with_a_fixed_rule_equals_the_default(q, m, theta):
    """MODEL.md §6 magnitudes at α = 2, ω = 0.3 (semantic, positional): order 16 per dimension against the
    default (orders 12, 16 until two agree to 1e-4) within 1e-5 relative."""
    p = ModelParams(omega=0.3)
    assert eps_g(p, q, m, theta, rule=ProductRule(16)) == pytest.approx(eps_g(p, q, m, theta), rel=1e-5)


def test_eps_g_semantic_state_against_monte_carlo():
    """The semantic α = 2 state against a Monte Carlo written independently of the package (4 s.e.)."""
    p = ModelParams(omega=0.3)
    mc, se = _eps_g_monte_carlo(p.sigma, p.omega, p.A, 0.1148, 0.1582, n=400_000)
    assert abs(eps_g(p, 0.1148, 0.0, 0.1582, rule=ProductRule(16)) - mc) < 4 * se + 1e-3 * mc
