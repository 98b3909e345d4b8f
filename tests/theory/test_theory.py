"""Tests of the asymptotic-theory solver (MODEL.md §6, issue 3)."""

from __future__ import annotations

import os
from pathlib import Path
import json
import math

import numpy as np
import pandas as pd
import pytest

from attnphase.errors import ParameterError
from attnphase.model import ModelParams
from attnphase.theory import curve_table, eps_lin, solve_curve, solve_point
from attnphase.theory import prox as P
from attnphase.theory.channel import channel, channel_derivative_forms
from attnphase.theory.prior import prior
from attnphase.theory.quadrature import gauss_hermite

REF = str(Path(os.environ.get("ATTNPHASE_SHARED", Path(__file__).resolve().parents[3] / "shared"))
          / "reference" / "theory_omega0.3_{}.csv")
PAR = ModelParams(omega=0.3)


def test_quadrature_exact_on_polynomials():
    for k in (3, 5, 8):
        x, w = gauss_hermite(k, 1)
        for deg in range(2 * k):
            exact = 0.0 if deg % 2 else float(np.prod(np.arange(deg - 1, 0, -2))) if deg else 1.0
            assert abs(w @ x[:, 0] ** deg - exact) < 1e-9 * max(1.0, exact)
    x, w = gauss_hermite(4, 4)
    assert x.shape == (256, 4) and abs(w.sum() - 1) < 1e-13
    assert abs(w @ (x[:, 0] ** 2 * x[:, 1] ** 4 * x[:, 3] ** 6) - 3 * 15) < 1e-9


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


def test_stein_equals_derivative_forms():
    X, W = gauss_hermite(8, 4)
    # a point with few basin switches; where ĝ jumps between basins (positional side) the derivative form
    # misses the jump (delta) contribution that the Stein form contains, so they differ there by design.
    for (q, m, V, th) in [(0.1, 0.0, 12.0, 0.15), (0.2, 0.0, 5.0, 0.2)]:
        ch = channel(PAR, 2.0, q, m, V, th, X, W)
        Vd, thd = channel_derivative_forms(PAR, 2.0, q, m, V, th, X, W)
        # equal in the continuum; the difference is the quadrature error of the discontinuous g (MODEL.md §7)
        assert abs(ch.V_hat - Vd) < 0.05 * abs(Vd)
        assert abs(ch.theta_hat - thd) < 0.05 * abs(thd)


def test_omega_one_kills_theta_hat_and_semantic_branch():
    p = PAR.replace(omega=1.0)
    X, W = gauss_hermite(6, 4)
    ch = channel(p, 2.0, 0.1, 0.0, 12.0, 0.15, X, W)
    assert abs(ch.theta_hat) < 1e-12
    s = solve_point(p, 2.0, "semantic", nodes=6, max_steps=200, stability=False)
    assert abs(s.theta) < 1e-10


def test_small_alpha_limit():
    s = solve_point(PAR, 0.02, "semantic", nodes=6, stability=False)
    assert s.converged
    assert s.q < 2e-3 and s.theta < 2e-2 and s.m == 0
    x, w = gauss_hermite(40, 2)
    hs = PAR.sigma * x
    t1, t2 = P.teacher_diag(hs[:, 0], hs[:, 1], PAR.omega, PAR.A_array)
    eg_uniform = PAR.sigma ** 2 * float(w @ ((t1 - 0.5) ** 2 + (t2 - 0.5) ** 2))
    assert abs(s.eps_g - eg_uniform) < 0.05 * eg_uniform


def test_pinned_branches_are_fixed_points_of_full_map():
    X, W = gauss_hermite(6, 4)
    s = solve_point(PAR, 2.0, "semantic", nodes=6, stability=False)
    ch = channel(PAR, 2.0, s.q, 0.0, s.V, s.theta, X, W)
    assert abs(ch.m_hat) < 1e-12
    s = solve_point(PAR, 2.0, "positional", nodes=6, stability=False)
    ch = channel(PAR, 2.0, s.q, s.m, s.V, 0.0, X, W)
    assert abs(ch.theta_hat) < 1e-12
    q, m, V, th = prior(PAR, ch.q_hat, ch.m_hat, ch.V_hat, 0.0)
    assert abs(q - s.q) < 1e-6 * s.q and abs(m - s.m) < 1e-6 * abs(s.m)


def test_reference_agreement():
    for branch in ("semantic", "positional"):
        ref = pd.read_csv(REF.format(branch)).sort_values("alpha")
        init = None
        for a in (2.0, 1.5, 1.0):
            s = solve_point(PAR, a, branch, nodes=8, init=init, stability=False)
            init = s
            assert s.converged, s.status
            r = {c: float(np.interp(a, ref["alpha"], ref[c])) for c in ("q", "m", "V", "theta", "mse", "Phi")}
            assert abs(s.q - r["q"]) < 0.03 * r["q"]
            assert abs(s.eps_g - r["mse"] / 2) < 0.03 * r["mse"] / 2
            assert abs(s.e_t + r["Phi"]) < 0.03 * abs(r["Phi"])
            # V converges slowest in the quadrature (MODEL.md §7: tables are coarse); 5 %
            assert abs(s.V - r["V"]) < 0.05 * r["V"]
            if branch == "semantic":
                # at α = 1 the reference is linearly interpolated between α = 0.904 and 1.016 on a curved
                # branch and θ converges away from it with nodes (0.0999, 0.0985, 0.0979, 0.0977 for
                # k = 6..12 vs 0.1022): 6 % there, 3 % elsewhere
                tol = 0.06 if a == 1.0 else 0.03
                assert abs(s.theta - r["theta"]) < tol * r["theta"]
            else:
                assert abs(abs(s.m) - abs(r["m"])) < 0.03 * abs(r["m"])


def test_validation_and_table():
    with pytest.raises(ParameterError):
        solve_point(PAR, 0.0)
    with pytest.raises(ParameterError):
        solve_point(PAR, 1.0, "mixed")
    with pytest.raises(ParameterError):
        solve_point(PAR, 1.0, nodes=1)
    sols = solve_curve(PAR, [2.0, 1.9], "positional", nodes=4, stability=False)
    df = curve_table(sols)
    assert list(df["alpha"]) == [2.0, 1.9]
    for c in ("q", "m", "V", "theta", "q_hat", "eps_g", "e_t", "converged", "status", "stable"):
        assert c in df.columns
    assert set(sols[0].to_dict()) >= {"q", "m", "converged", "residual"}


def test_eps_lin_value():
    assert abs(eps_lin(PAR) - 0.0019714) < 2e-6


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
def test_semantic_quadrature_convergence():
    """Doubling-ish the resolution (k = 8 -> 12) moves the semantic α = 2 point by < 1e-3 (docs/theory.md)."""
    a = solve_point(PAR, 2.0, "semantic", nodes=8, stability=False)
    b = solve_point(PAR, 2.0, "semantic", nodes=12, stability=False, init=a)
    for c in ("q", "theta", "eps_g", "e_t"):
        assert abs(getattr(a, c) - getattr(b, c)) < 1e-3 * abs(getattr(b, c))


@pytest.mark.slow
def test_curve_both_branches_converge():
    alphas = np.linspace(2.0, 0.8, 7)
    for b in ("semantic", "positional"):
        sols = solve_curve(PAR, alphas, b, stability=False)
        assert all(s.converged for s in sols)
    # transition: positional lower e_t at small α, semantic at α = 2 (MODEL.md §6: α_c ≈ 1.24)
    sem = solve_point(PAR, 2.0, "semantic", stability=False)
    pos = solve_point(PAR, 2.0, "positional", stability=False)
    assert sem.e_t < pos.e_t
