"""Tests of the asymptotic-theory solver (MODEL.md §6, §7; issue 3)."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy.integrate import quad

from attnphase import reference
from attnphase.errors import ParameterError
from attnphase.model import ModelParams
from attnphase.theory import curve_table, eps_lin, solve_point
from attnphase.theory import prox as P
from attnphase.theory import switching as S
from attnphase.theory.channel import channel, channel_derivative_forms, prox_inputs
from attnphase.theory.prior import prior
from attnphase.theory.quadrature import gauss_hermite
from attnphase.theory.solver import make_rule
from attnphase.theory.status import Status

REF = str(Path(reference.FOLDER) / "theory_omega0.3_{}.csv")  # published tables shipped with the package
PAR = ModelParams(omega=0.3)
# order parameters near the two branches at α = 2, ω = 0.3 (MODEL.md §6 magnitudes)
SEM2 = (0.1148, 0.0, 12.67, 0.1582)
POS2 = (0.0511, 0.2582, 11.37, 0.0)


# ------------------------------------------------------------------------------------------ quadrature
def test_quadrature_exact_on_polynomials():
    for k in (3, 5, 8):
        x, w = gauss_hermite(k, 1)
        for deg in range(2 * k):
            exact = 0.0 if deg % 2 else float(np.prod(np.arange(deg - 1, 0, -2))) if deg else 1.0
            assert abs(w @ x[:, 0] ** deg - exact) < 1e-9 * max(1.0, exact)
    x, w = gauss_hermite(4, 4)
    assert x.shape == (256, 4) and abs(w.sum() - 1) < 1e-13
    assert abs(w @ (x[:, 0] ** 2 * x[:, 1] ** 4 * x[:, 3] ** 6) - 3 * 15) < 1e-9


def test_composite_gauss_legendre_exact_per_panel():
    x, w = S.composite_gauss_legendre(-1.0, 2.0, 5, 3)
    for deg in range(6):  # 3 nodes per panel: exact up to degree 5
        assert abs(w @ x ** deg - (2.0 ** (deg + 1) - (-1.0) ** (deg + 1)) / (deg + 1)) < 1e-12


def test_split_rule_integrates_smooth_gaussian_moments():
    """With the prox switched off (tiny V: ĥ = ω, no switches) the rule is a plain Gaussian rule."""
    f = prox_inputs(PAR, 0.05, 0.2, 0.0)
    ln = S.line_nodes(f, PAR.sigma ** 2, 1e-6, S.SplitRule(nodes=6, panels=18))
    W = ln.weights
    assert ln.switches == 0
    assert abs(W.sum() - 1.0) < 1e-7
    for v, mom in ((ln.xi1 ** 2, 1.0), (ln.y2 ** 2, 1.0), (ln.xi1 * ln.xi2, 0.0), (ln.y1 ** 4, 3.0),
                   (ln.xi1 ** 2 * ln.y2 ** 2, 1.0)):
        assert abs(W @ v - mom) < 1e-6


# ------------------------------------------------------------------------------------------------ prox
def test_prox_stationary_and_global():
    rng = np.random.default_rng(0)
    n = 40
    w1, w2 = rng.normal(size=n) * 0.4 + 0.2, rng.normal(size=n) * 0.4 - 0.2
    t1, t2 = rng.uniform(0.2, 0.9, n), rng.uniform(0.2, 0.9, n)
    V, s2 = 12.0, 0.25
    h1, h2, M, gn = P.prox(w1, w2, t1, t2, V, s2)
    assert np.all(gn < 1e-8)
    g = np.linspace(-5, 5, 801)
    G1, G2 = np.meshgrid(g, g, indexing="ij")
    for i in range(n):
        Fg = P.objective(G1, G2, w1[i], w2[i], t1[i], t2[i], V, s2)
        assert M[i] <= Fg.min() + 1e-12
        assert abs(M[i] - P.objective(h1[i], h2[i], w1[i], w2[i], t1[i], t2[i], V, s2)) < 1e-15


def test_loss_gradient_and_hessian_against_finite_differences():
    rng = np.random.default_rng(3)
    h1, h2 = rng.normal(size=6), rng.normal(size=6)
    t1, t2 = rng.uniform(0.3, 0.9, 6), rng.uniform(0.3, 0.9, 6)
    _, (g1, g2), (H11, H12, H22) = P.loss_derivs(h1, h2, t1, t2, 0.25)
    e = 1e-6
    fd = lambda a, b: (P.loss(h1 + a, h2 + b, t1, t2, 0.25) - P.loss(h1 - a, h2 - b, t1, t2, 0.25)) / (2 * e)  # noqa
    np.testing.assert_allclose(g1, fd(e, 0), rtol=1e-6, atol=1e-10)
    np.testing.assert_allclose(g2, fd(0, e), rtol=1e-6, atol=1e-10)
    gg = lambda a, b: P.loss_derivs(h1 + a, h2 + b, t1, t2, 0.25)[1]  # noqa: E731
    np.testing.assert_allclose(H11, (gg(e, 0)[0] - gg(-e, 0)[0]) / (2 * e), rtol=1e-5, atol=1e-9)
    np.testing.assert_allclose(H12, (gg(0, e)[0] - gg(0, -e)[0]) / (2 * e), rtol=1e-5, atol=1e-9)
    np.testing.assert_allclose(H22, (gg(0, e)[1] - gg(0, -e)[1]) / (2 * e), rtol=1e-5, atol=1e-9)


# ------------------------------------------------------------------------------ split-line integration
def _line_reference(q, m, V, theta, xv, yu, yv):
    """∫ (g1 − g2) φ(z) dz along one line by adaptive quadrature (QUADPACK) of the global prox."""
    f = prox_inputs(PAR, q, m, theta)

    def g(z):
        c = S.to_tokens(np.array([z]), np.array([xv]), np.array([yu]), np.array([yv]))
        w1, w2, t1, t2 = f(*c)
        h1, h2, _, _ = P.prox(w1, w2, t1, t2, V, PAR.sigma ** 2, grid=25)
        return float(((h1 - w1) - (h2 - w2))[0] / V * math.exp(-0.5 * z * z) / math.sqrt(2 * math.pi))
    return quad(g, -6, 6, limit=400, epsabs=1e-12, epsrel=1e-10)[0]


def test_split_rule_line_integral_with_basin_switch_matches_adaptive_quadrature(monkeypatch):
    lines = (np.array([0.539, 1.6, 0.2]), np.array([-2.8, 2.1, 2.5]), np.array([1.64, 1.6, -0.7]))
    monkeypatch.setattr(S, "outer_nodes", lambda *a: (*lines, np.ones(3)))
    q, m, V, th = POS2
    f = prox_inputs(PAR, q, m, th)
    ln = S.line_nodes(f, PAR.sigma ** 2, V, S.SplitRule(nodes=2, panels=2))
    assert ln.switches >= 3  # every line crosses the switching set
    w1, w2, _, _ = f(ln.xi1, ln.xi2, ln.y1, ln.y2)
    per_line = (ln.weights * ((ln.h1 - w1) - (ln.h2 - w2)) / V).reshape(3, -1).sum(1)
    # line 1 passes near a cusp (end of the switching set), where ĥ steepens next to the switch and the
    # 3-node Gauss–Legendre piece is less accurate; the others are integrated to ~1e-7
    for i, tol in enumerate((1e-6, 3e-4, 1e-6)):
        ref = _line_reference(q, m, V, th, lines[0][i], lines[1][i], lines[2][i])
        assert abs(per_line[i] - ref) < tol * abs(ref)


def test_split_rule_converges_where_product_rule_does_not():
    """Positional branch: split rule at two resolutions agrees to 1e-3 on the hats (product rule: ±2–5 %)."""
    a = channel(PAR, 2.0, *POS2, make_rule(6))
    b = channel(PAR, 2.0, *POS2, make_rule(10))
    for k in ("q_hat", "m_hat", "V_hat", "EM"):
        assert abs(getattr(a, k) - getattr(b, k)) < 1e-3 * abs(getattr(b, k))


def test_symmetric_half_rule_equals_full_rule():
    for pt in (SEM2, POS2):
        h = channel(PAR, 2.0, *pt, make_rule(4))
        f = channel(PAR, 2.0, *pt, make_rule(4), use_symmetry=False)
        for k in ("q_hat", "V_hat", "EM"):
            assert abs(getattr(h, k) - getattr(f, k)) < 1e-8 * abs(getattr(f, k))
        pinned = "m_hat" if pt[1] == 0 else "theta_hat"
        assert getattr(h, pinned) == 0.0 and abs(getattr(f, pinned)) < 1e-9


# ------------------------------------------------------------------------------------- channel identities
def test_stein_equals_derivative_forms():
    """Where the switching set carries little weight the Stein forms of V̂, θ̂ equal the derivative
    (implicit-function) forms: α = 2 semantic point, and a point with a weak quadratic (V = 5)."""
    for pt in (SEM2, (0.2, 0.0, 5.0, 0.2)):
        ch = channel(PAR, 2.0, *pt, make_rule(6), use_symmetry=False)
        Vd, thd = channel_derivative_forms(PAR, 2.0, *pt, make_rule(6))
        assert abs(ch.V_hat - Vd) < 2e-4 * abs(Vd)
        assert abs(ch.theta_hat - thd) < 2e-4 * abs(thd)


def test_omega_one_kills_theta_hat_and_semantic_branch():
    """A constant teacher (ω = 1) carries no semantic signal: θ̂ = 0, and the semantic iteration collapses onto
    the uninformative fixed point (θ at the rule's noise level, ~1e-4, instead of 0.16 at ω = 0.3).
    θ̂ vanishes by the y → −y pairing of the nodes: to round-off (~1e-13) in the numpy map; the compiled map
    (theory/split_xla.py) may stop a mirrored Newton solve one step apart (|∇F| ≤ 1e-9), ~1e-10 (θ̂ ≈ 0.03 at ω = 0.3)."""
    p = PAR.replace(omega=1.0)
    for us in (True, False):
        assert abs(channel(p, 2.0, *SEM2, make_rule(4), use_symmetry=us).theta_hat) < 1e-9
    s = solve_point(p, 2.0, "semantic", nodes=4, max_steps=40, stability=False)
    u = solve_point(p, 2.0, "uninformative", nodes=4, stability=False)
    assert abs(s.theta) < 1e-3 and abs(s.q - u.q) < 1e-3 * u.q


def test_small_alpha_limit():
    s = solve_point(PAR, 0.02, "semantic", nodes=4, stability=False)
    assert s.converged
    assert s.q < 2e-3 and s.theta < 2e-2 and s.m == 0
    x, w = gauss_hermite(40, 2)
    hs = PAR.sigma * x
    t1, t2 = P.teacher_diag(hs[:, 0], hs[:, 1], PAR.omega, PAR.A_array)
    eg_uniform = PAR.sigma ** 2 * float(w @ ((t1 - 0.5) ** 2 + (t2 - 0.5) ** 2))
    assert abs(s.eps_g - eg_uniform) < 0.05 * eg_uniform


# --------------------------------------------------------------------------------------------- solver
@pytest.fixture(scope="module")
def branches_alpha2():
    return {b: solve_point(PAR, 2.0, b, nodes=6) for b in ("semantic", "positional")}


def test_pinned_branches_are_fixed_points_of_full_map(branches_alpha2):
    for b, s in branches_alpha2.items():
        assert s.converged, s.status
        ch = channel(PAR, 2.0, s.q, s.m, s.V, s.theta, make_rule(6), use_symmetry=False)
        pinned = ch.m_hat if b == "semantic" else ch.theta_hat
        assert abs(pinned) < 1e-9
        x = prior(PAR, ch.q_hat, ch.m_hat, ch.V_hat, ch.theta_hat)
        for new, old in zip(x, (s.q, s.m, s.V, s.theta)):
            assert abs(new - old) < 1e-4 * max(abs(old), 1e-3)


def test_stability_reported_and_semantic_branch_stable_at_alpha2(branches_alpha2):
    sem = branches_alpha2["semantic"]
    assert sem.stability is not None and sem.stable
    assert branches_alpha2["positional"].stability is not None


def test_anderson_and_plain_damping_reach_the_same_fixed_point():
    # rtol 1e-6 (tighter than the default): a damped iteration stops ~rtol/(1 − contraction) from the point
    a = solve_point(PAR, 2.0, "semantic", nodes=4, stability=False, coarse=False, rtol=1e-6)
    b = solve_point(PAR, 2.0, "semantic", nodes=4, stability=False, coarse=False, anderson=0, damping=0.5,
                    max_steps=400, rtol=1e-6)
    assert a.converged and b.converged
    for k in ("q", "V", "theta", "e_t"):
        assert abs(getattr(a, k) - getattr(b, k)) < 1e-5 * abs(getattr(b, k))


def test_unconverged_point_is_reported_not_silent():
    s = solve_point(PAR, 1.5, "positional", nodes=4, max_steps=2, stability=False)
    assert not s.converged and s.status is Status.MAX_STEPS and "not converged" in s.note and s.residual > 1e-6


def test_reference_agreement():
    """The paper's (coarse) tables at α ∈ {1, 1.5, 2}: q, m, θ, ε_g, e_t within 3 % (MODEL.md §9) — except
    semantic α = 1, where the table's coarse product rule is off: there θ is 7 % and ε_g 5 % from the
    converged solution, and product-rule solutions of growing order move from the table to it
    (docs/theory.md, "Against the paper's table"; `test_product_rule_drifts_to_split_rule_at_alpha1`)."""
    for branch in ("semantic", "positional"):
        ref = pd.read_csv(REF.format(branch)).sort_values("alpha")
        init = None
        for a in (2.0, 1.5, 1.0):
            s = solve_point(PAR, a, branch, nodes=6, init=init, stability=False)
            init = s
            assert s.converged, s.status
            r = {c: float(np.interp(a, ref["alpha"], ref[c])) for c in ("q", "m", "V", "theta", "mse", "Phi")}
            tol = 0.09 if (branch, a) == ("semantic", 1.0) else 0.03
            assert abs(s.q - r["q"]) < 0.03 * r["q"]
            assert abs(s.eps_g - r["mse"] / 2) < tol * r["mse"] / 2
            assert abs(s.e_t + r["Phi"]) < 0.03 * abs(r["Phi"])
            if branch == "semantic":
                assert abs(s.theta - r["theta"]) < tol * r["theta"]
            else:
                assert abs(abs(s.m) - abs(r["m"])) < 0.03 * abs(r["m"])
            # V within 5 % (measured +2.7 %, +3.9 % semantic; +3.0 %, +3.5 % positional at α = 2, 1.5; docs/theory.md);
            # semantic α = 1, the table's coarse-rule exception above: +8.7 % (within 10 %)
            vtol = 0.10 if (branch, a) == ("semantic", 1.0) else 0.05
            assert abs(s.V - r["V"]) < vtol * r["V"], (branch, a, s.V, r["V"])
            # the pinned overlap is zero in both (the table's is round-off, < 1e-7) and the table's λ is ours
            pinned = "m" if branch == "semantic" else "theta"
            assert getattr(s, pinned) == 0.0 and abs(r[pinned]) < 1e-7
        assert np.allclose(ref["lambda"], PAR.lam)


@pytest.mark.slow
def test_product_rule_drifts_to_split_rule_at_alpha1():
    """Semantic α = 1.016 (a row of the paper's table): product-rule solutions of order 6, 8, 12 move θ away from
    the table's value, monotonically towards the split-rule solution (the table used a coarse product rule)."""
    a = 1.0163636363636364
    split = solve_point(PAR, a, "semantic", stability=False)
    # even orders (an odd order puts a node row on ξ = 0, next to the switching set, and jumps about)
    th = [solve_point(PAR, a, "semantic", nodes=k, rule="product", stability=False).theta for k in (6, 8, 12)]
    ref = pd.read_csv(REF.format("semantic"))
    table = float(ref.loc[np.isclose(ref["alpha"], a), "theta"].iloc[0])
    chain = [table, *th, split.theta]
    assert all(u > v for u, v in zip(chain, chain[1:])), chain


def test_validation_and_table():
    with pytest.raises(ParameterError):
        solve_point(PAR, 0.0)
    with pytest.raises(ParameterError):
        solve_point(PAR, 1.0, "mixed")
    with pytest.raises(ParameterError):
        solve_point(PAR, 1.0, nodes=1)
    with pytest.raises(ParameterError):
        solve_point(PAR, 1.0, rule="simpson")
    with pytest.raises(ParameterError):
        solve_point(ModelParams(L=3), 1.0)
    sols = [solve_point(PAR, a, "positional", nodes=4, stability=False) for a in (2.0, 1.9)]
    df = curve_table(sols)
    assert list(df["alpha"]) == [2.0, 1.9]
    for c in ("q", "m", "V", "theta", "q_hat", "eps_g", "e_t", "converged", "status", "stable", "rule"):
        assert c in df.columns
    assert set(sols[0].to_dict()) >= {"q", "m", "converged", "residual"}


def test_eps_lin_value():
    # regression pin of attnphase.baseline.eps_lin (80² Gauss–Hermite); independent checks: the Monte Carlo of
    # MODEL.md §5 (0.0019704 ± 0.0000028) and the paper's d = 1000 runs (tests/test_real_runs.py)
    assert abs(eps_lin(PAR) - 0.0019714) < 2e-6


UNINF_ALPHAS = (2.033333333333333, 1.5499999999999998)      # rows of the paper's uninformative table


@pytest.fixture(scope="module")
def uninformative():
    """Our uninformative fixed point (m = θ = 0) at two rows of the paper's table, nodes 6, with the rows."""
    ref = pd.read_csv(REF.format("uninformative")).sort_values("alpha")
    out, init = [], None
    for a in UNINF_ALPHAS:
        s = solve_point(PAR, a, "uninformative", nodes=6, init=init, stability=False)
        init = s
        assert s.converged, s.status
        row = ref.loc[np.isclose(ref["alpha"], a)].iloc[0]
        out.append((s, row))
    return out


def test_uninformative_table_eps_g_and_pinned_columns(uninformative):
    """The paper's uninformative table (every column): ε_g within 2 % (measured +1.3 %, +0.3 %), m = θ = 0
    (table: round-off < 1e-7), λ = 0.01. q, V, e_t differ by a known, unexplained amount (next tests)."""
    for s, row in uninformative:
        assert abs(s.eps_g - row["mse"] / 2) < 0.02 * row["mse"] / 2, (s.alpha, s.eps_g, row["mse"] / 2)
        assert s.m == 0.0 and s.theta == 0.0 and abs(row["m"]) < 1e-7 and abs(row["theta"]) < 1e-7
        assert row["lambda"] == PAR.lam


# the known difference on the uninformative branch (docs/theory.md, "Uninformative branch (open)"): measured on
# 2026-12-06 at α = 2.033, 1.55: q +16 %, +20 %; V −14 %, −12 %; e_t +6.4 %, +5.9 % (relative to the table)
UNINF_KNOWN = {"q": (0.03, (0.10, 0.25)), "V": (0.05, (-0.20, -0.08)), "e_t": (0.03, (0.03, 0.10))}


def _uninf_rel(s, row, col):
    ours = {"q": s.q, "V": s.V, "e_t": s.e_t}[col]
    ref = {"q": row["q"], "V": row["V"], "e_t": -row["Phi"]}[col]
    return (ours - ref) / abs(ref)


@pytest.mark.parametrize("col", list(UNINF_KNOWN))
@pytest.mark.xfail(strict=True, reason="uninformative branch: our q, V, e_t differ from the paper's table by ~16 %, "
                   "~14 %, ~6 % — not a quadrature effect (also with the product rule); at the table's own (q, V) "
                   "the channel gives V̂ < 0; unexplained (docs/theory.md, 'Uninformative branch (open)')")
def test_uninformative_table_q_V_e_t_within_the_branches_tolerance(uninformative, col):
    tol = UNINF_KNOWN[col][0]
    for s, row in uninformative:
        assert abs(_uninf_rel(s, row, col)) < tol, (col, s.alpha, _uninf_rel(s, row, col))


@pytest.mark.parametrize("col", list(UNINF_KNOWN))
def test_uninformative_table_known_difference_is_stable(uninformative, col):
    """Regression pin of the known difference (our own output, bands around the measured offsets): a change of
    the uninformative solution shows here, in either direction."""
    lo, hi = UNINF_KNOWN[col][1]
    for s, row in uninformative:
        assert lo < _uninf_rel(s, row, col) < hi, (col, s.alpha, _uninf_rel(s, row, col))


def test_cli_point_json_and_bad_input(capsys):
    from attnphase.cli import main
    with pytest.raises(SystemExit) as e:
        main(["theory", "point", "--alpha", "1.5", "--branch", "positional", "--nodes", "4", "--json"])
    assert e.value.code in (0, None)
    d = json.loads(capsys.readouterr().out)
    for k in ("q", "m", "V", "theta", "q_hat", "m_hat", "V_hat", "theta_hat", "eps_g", "e_t", "converged",
              "iterations", "residual"):
        assert k in d
    with pytest.raises(SystemExit) as e:
        main(["theory", "point", "--alpha", "1", "--omega", "2"])
    assert e.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "omega" in err[0]


@pytest.mark.slow
def test_default_resolution_converged():
    """Doubling the default resolution moves q, m, θ, ε_g, e_t by < 1e-4 relative on both branches at α = 2
    (docs/theory.md has the full study; `python bench/bench_theory.py --study`)."""
    for b in ("semantic", "positional"):
        a = solve_point(PAR, 2.0, b, stability=False)
        d = solve_point(PAR, 2.0, b, nodes=2 * a.nodes, stability=False, init=a)
        for c in ("q", "m", "theta", "eps_g", "e_t"):
            ref = abs(getattr(d, c))
            if ref > 0:
                assert abs(getattr(a, c) - getattr(d, c)) < 1e-4 * ref, (b, c)


def test_growth_factor_does_not_depend_on_the_difference_step():
    """The pinned direction's growth factor (MODEL.md §7) is a derivative of a map that is odd in the pinned
    overlap: the default step and a 3x larger one must agree (at ω = 0.377, α = 1.2 the old step 1e-4·√q gave
    +0.02 against −0.20, the rule's noise floor divided by a tiny step)."""
    from attnphase.theory import split_integrator as SI
    p = ModelParams(omega=0.377)
    s = solve_point(p, 1.2, "semantic", nodes=4, stability=False)
    assert s.converged
    x = SI.to_vector(s.x)
    F = SI.SplitMap(p, 1.2, "semantic", make_rule(4, "split"))
    g_default = SI.stability(F, x, "semantic")
    g_large = SI.stability(F, x, "semantic", eps=3.0 * SI.STABILITY_EPS)
    assert abs(g_default - g_large) < 0.02
    assert g_default < 0.0  # the semantic branch is far inside its stable range there


def test_growth_factor_shrinks_its_step_where_the_perturbed_map_is_inadmissible():
    """σ = 0.3, ω = 0.02: the map of the perturbed state raised (D ≤ 0 in the prior) out of a whole transition.
    The step is divided by 10 until the map accepts it (the factor of a linear map is then exact); where no step
    is accepted the factor is NaN, never a number."""
    from contextlib import contextmanager

    from attnphase.theory import split_integrator as SI
    m = SI.IDX["M"]
    pinned = SI.pin_mask("semantic")

    class Fake:
        pins = pinned.copy()

        def __init__(self, limit):
            self.limit = limit

        @contextmanager
        def unpinned(self):
            saved, self.pins = self.pins, np.zeros_like(pinned)
            try:
                yield self
            finally:
                self.pins = saved

        def __call__(self, x):
            if abs(x[m]) > self.limit:
                raise FloatingPointError("prior: D = lam + sigma^2 V_hat = -1 <= 0")
            return 0.7 * x, None, None
    x = SI.to_vector(SI.scalar_state(q=0.04, m=0.0, V=10.0, theta=0.1))
    d = SI.STABILITY_EPS * math.sqrt(x[SI.Q])
    assert SI.stability(Fake(0.5 * d), x, "semantic") == pytest.approx(0.7, rel=1e-12)
    assert math.isnan(SI.stability(Fake(1e-3 * d), x, "semantic"))
    F = Fake(0.5 * d)
    SI.stability(F, x, "semantic")
    assert (F.pins == pinned).all()
