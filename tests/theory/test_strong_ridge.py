"""Strong ridge (issue 11 audit, "the trivial point is not found"): at λ = 0.5 every branch iterates to q → 0,
where the Stein form of V̂ divides the prox's round-off by √q (the old code ended ``map failed: D ≤ 0``). The
split rule now uses the derivative form of V̂ there and reports the q = 0 point (theory/zero_point.py)."""

from __future__ import annotations

import json

import numpy as np
import pytest
from typer.testing import CliRunner

from attnphase.cli import app
from attnphase.model import ModelParams
from attnphase.phase.continuation import PointState, point_state
from attnphase.theory import prox
from attnphase.theory.channel import V_HAT_Q_FLOOR, channel, split_map
from attnphase.theory.solver import make_rule, solve_point
from attnphase.theory.zero_point import hessian_at_zero, onset_lam, zero_point

STRONG = ModelParams(omega=0.3, lam=0.5)


@pytest.mark.parametrize("q_over_s2", [1e-2, 1e-6])
@pytest.mark.parametrize("kernel", ["xla", "numpy"])
def test_stein_and_derivative_forms_of_v_hat_agree_where_both_are_well_conditioned(q_over_s2, kernel):
    """No basin switches at small V (the prox is strongly convex): the two forms are the same expectation."""
    s2 = STRONG.sigma ** 2
    q = q_over_s2 * s2
    theta = 0.6 * STRONG.sigma * np.sqrt(q)            # cosine 0.6 with the teacher
    with split_map(kernel):
        ch = channel(STRONG, 2.0, q, 0.0, 0.2, theta, make_rule(8))
    assert q >= V_HAT_Q_FLOOR * s2                      # V_hat is the Stein form here
    assert ch.V_hat == pytest.approx(ch.V_hat_deriv, rel=1e-5)
    assert ch.V_hat < -0.04


def test_below_the_floor_v_hat_is_the_derivative_form_and_finite():
    z = zero_point(STRONG, 2.0)
    ch = channel(STRONG, 2.0, 1e-20, 0.0, z.V, 0.0, make_rule(8))
    assert ch.V_hat == ch.V_hat_deriv
    assert ch.V_hat == pytest.approx(z.V_hat, rel=1e-6, abs=0)     # the prox-based sum vs the closed form


def test_closed_form_hessian_at_zero_matches_the_loss():
    rng = np.random.default_rng(1)
    hs1, hs2 = STRONG.sigma * rng.standard_normal((2, 50))
    t1, t2 = prox.teacher_diag(hs1, hs2, STRONG.omega, STRONG.A_array)
    _, _, H = prox.loss_derivs(np.zeros(50), np.zeros(50), t1, t2, STRONG.sigma ** 2)
    for a, b in zip(hessian_at_zero(STRONG, hs1, hs2), H):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-15)


def _zero_score_loss_mc(params: ModelParams, d=300, n=4000, teachers=8, seed=0):
    """Finite-d Monte Carlo of the per-sample loss ‖y − f‖²/(2d) of the student Q = 0 (all attention scores
    zero: S = ½, f = ½(x₁ + x₂) since p₁ + p₂ = 0), teacher normalised to ‖Q*‖² = d (ρ = σ²); mean, s.e."""
    rng = np.random.default_rng(seed)
    A, om, sig = params.A_array, params.omega, params.sigma
    vals = []
    for _ in range(teachers):
        Qs = rng.standard_normal(d)
        Qs *= np.sqrt(d) / np.linalg.norm(Qs)
        x = sig * rng.standard_normal((n, 2, d))
        hs = x @ Qs / np.sqrt(d)
        sc = hs[:, :, None] * hs[:, None, :]
        e = np.exp(sc - sc.max(-1, keepdims=True))
        T = (1 - om) * e / e.sum(-1, keepdims=True) + om * A
        f = 0.5 * (x[:, 0] + x[:, 1])[:, None, :]
        vals.append(np.mean(np.sum((T @ x - f) ** 2, axis=(1, 2)) / (2 * d)))
    return float(np.mean(vals)), float(np.std(vals, ddof=1) / np.sqrt(teachers))


def test_lam_half_is_the_q_zero_point_on_every_branch():
    """Fails on the old code: ``map failed: prior: D = lam + sigma^2 V_hat = -0.19 <= 0``."""
    z = zero_point(STRONG, 2.0)
    mc, se = _zero_score_loss_mc(STRONG)
    assert z.eps_g == pytest.approx(mc, abs=4 * se + 2e-3 * mc)     # MC: 0.0044134 ± 3e-5, theory 0.0044146
    assert z.e_t == pytest.approx(2.0 * z.eps_g, rel=1e-12)
    for branch, state in (("semantic", PointState.COLLAPSED), ("positional", PointState.COLLAPSED),
                          ("uninformative", PointState.OK)):
        s = solve_point(STRONG, 2.0, branch)
        assert s.converged, s.status
        assert (s.q, s.m, s.theta) == (0.0, 0.0, 0.0)
        assert point_state(s) is state
        assert s.V == pytest.approx(z.V, rel=1e-6)
        assert s.e_t == pytest.approx(z.e_t, rel=1e-6)
        assert s.eps_g == pytest.approx(z.eps_g, rel=1e-6)
        assert s.stability == pytest.approx(z.growth) and s.stable     # 0.089 (against m)


def test_growth_factors_match_the_split_map_at_small_q():
    """The closed-form factors against the prox-based map (split rule, unpinned) at q = 1e-8 σ², V at q = 0."""
    z = zero_point(STRONG, 2.0)
    s2, sig, eps = STRONG.sigma ** 2, STRONG.sigma, 1e-8
    q = eps * s2
    rule = make_rule(8)

    def step(m, theta):
        from attnphase.theory.prior import prior
        ch = channel(STRONG, 2.0, q, m, z.V, theta, rule, use_symmetry=False)
        return prior(STRONG, ch.q_hat, ch.m_hat, ch.V_hat, ch.theta_hat)

    q1, _, _, _ = step(0.0, 0.0)
    assert q1 / q == pytest.approx(z.growth_q, rel=1e-3)
    m0 = 0.5 * np.sqrt(q) / sig
    _, m1, _, _ = step(m0, 0.0)
    assert (m1 / m0) ** 2 == pytest.approx(z.growth_m, rel=1e-3)
    th0 = 0.5 * sig * np.sqrt(q)
    _, _, _, th1 = step(0.0, th0)
    assert (th1 / th0) ** 2 == pytest.approx(z.growth_theta, rel=1e-3)


def test_positional_onset_is_where_the_growth_against_m_crosses_one():
    p = ModelParams(omega=0.3)
    lam = onset_lam(p, 2.0, "m")
    assert 0.15 < lam < 0.2
    assert zero_point(p.replace(lam=lam * 0.999), 2.0).growth_m > 1.0 > zero_point(p.replace(lam=lam * 1.001),
                                                                                    2.0).growth_m


def _cli(args):
    from attnphase.cli import _register
    _register()
    res = CliRunner().invoke(app, args)
    assert res.exit_code == 0, res.output
    return res.output


def test_cli_point_at_strong_ridge_answers_q_zero():
    """Fails on the old code (warning: not converged: map failed: prior: D … <= 0)."""
    out = _cli(["theory", "point", "--lam", "0.5", "--alpha", "2", "--json"])
    d = json.loads(out[out.index("{"):out.rindex("}") + 1])
    assert d["converged"] and d["state"] == "collapsed" and d["q"] == 0.0
    assert d["e_t"] == pytest.approx(zero_point(STRONG, 2.0).e_t, rel=1e-6)
    text = " ".join(out.split())
    assert "the semantic branch collapses to q = 0 here" in text
    assert "a positional branch leaves q = 0 for λ < 0.1737" in text   # regression pin (our zero_point onset)


def test_cli_transition_at_strong_ridge_says_both_branches_collapse_to_q_zero():
    out = _cli(["theory", "transition", "--lam", "0.5", "--alphas", "1:2:2", "--alpha-max", "2", "--no-refine",
                "--no-mixed", "--no-survey", "--json"])
    d = json.loads(out[out.index("{"):out.rindex("}") + 1])
    assert d["alpha_c"] is None
    assert d["alpha_c_reason"].startswith("both branches collapse to q = 0 (the student Q = 0) wherever solved")
    # 0.1737: package output, the closed-form onset (docs/notes/2026-12-05-theory-general.md, "Strong ridge";
    # regression pin)
    assert "a positional branch leaves q = 0 for λ < 0.1737" in d["alpha_c_reason"]
    assert d["spinodal_semantic_kind"] == "never valid on the range (collapsed)"   # was "valid on the whole range"


def test_reproduce_summary_does_not_call_a_never_valid_branch_valid_on_the_whole_range():
    """``reproduce``'s branch-end line words the end as the transition does (issue 11, helper hB2). Fails on the
    old code, which said "valid on the whole range" for any branch without an end."""
    from attnphase.phase.transition import transition
    from attnphase.reproduce import _end
    tr = transition(STRONG, alphas=[1.0, 2.0], nodes=8, curve_nodes=8, refine=False, mixed_alphas=[],
                    alpha_max=2.0, fixed_points=False)
    assert _end(tr, "semantic") == "never valid on the range (collapsed)"
    assert _end(tr, "semantic") == tr.branch_end("semantic")[1]


def test_engine_reports_the_collapse_to_q_zero_with_the_closed_form_errors():
    """The QMC engine at λ = 0.5 (issue 11, helper hB2): the semantic branch falls onto q = 0; it is reported
    ``collapsed`` with the q = 0 record (values kept) and its e_t, ε_g, V agree with the closed form. Fails on
    the old code (``not_significant``, values NaN, no mention of q = 0)."""
    from attnphase.theory.engine import QMCConfig, solve
    from attnphase.theory.status import Status
    g = solve(STRONG, 2.0, "semantic", qmc_config=QMCConfig(points=1024, scrambles=4, target=0.0))
    z = zero_point(STRONG, 2.0)
    assert g.status is Status.COLLAPSED and g.significance["zero_q"]
    assert "the semantic branch collapses to q = 0 here" in g.significance["reason"]
    assert g.q < 1e-12 * STRONG.sigma ** 2 and g.theta < 1e-12
    assert g.V == pytest.approx(z.V, rel=1e-5)
    for key in ("e_t", "eps_g"):
        assert abs(getattr(g, key) - getattr(z, key)) < 4 * g.errors[key]
    assert g.e_t == pytest.approx(2.0 * g.eps_g, rel=1e-12)


def test_cli_point_qmc_at_strong_ridge_notes_q_zero():
    out = _cli(["theory", "point", "--lam", "0.5", "--alpha", "2", "--integrator", "qmc", "--qmc-points", "1024",
                "--scrambles", "4", "--json"])
    d = json.loads(out[out.index("{"):out.rindex("}") + 1])
    assert d["status"] == "collapsed" and d["e_t"] == pytest.approx(zero_point(STRONG, 2.0).e_t, rel=2e-3)
    text = " ".join(out.split())
    assert "q = 0: the semantic branch collapses to q = 0 here" in text
    assert "a positional branch leaves q = 0 for λ < 0.1737" in text   # regression pin (our zero_point onset)
