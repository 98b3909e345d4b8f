"""The q = 0 point (the student Q = 0) beyond L = 2 (theory/zero_point.py): H = −(2σ²/L)(sym T − 11ᵀ/L) ⊗ I_r,
V = v I_r, ε_g = (σ²/2) E‖T − 11ᵀ/L‖², e_t = α ε_g, growth factors from E K. Checked against the loss's
Hessian (autodiff), a finite-d Monte Carlo of the loss of Q = 0, the L = 2 closed form, and the QMC engine."""

from __future__ import annotations

import json

import jax
import numpy as np
import pytest

from attnphase.model import ModelParams
from attnphase.theory import prox_general
from attnphase.theory.zero_point import (MAX_DIMS, hessian_at_zero, hessian_general, teacher_attention,
                                         zero_point)

A3 = ((0.6, 0.2, 0.2), (0.2, 0.6, 0.2), (0.2, 0.2, 0.6))
L3 = ModelParams(omega=0.3, lam=0.5, L=3, A=A3)


@pytest.mark.parametrize("params", [L3, ModelParams(omega=0.4, lam=0.5, L=3, A=((0.3, 0.5, 0.2), (0.1, 0.1, 0.8),
                                                                                 (0.6, 0.3, 0.1)), r=2),
                                    ModelParams(omega=0.3, lam=0.5, L=2, r_star=2)])
def test_closed_form_hessian_is_the_loss_hessian_at_zero(params):
    """Against jax.hessian of ℓ(h, h*) = (σ²/2)‖T − softmax(hhᵀ)‖² at h = 0 (h ∈ R^{L×r}), a non-symmetric A
    included."""
    rng = np.random.default_rng(3)
    hs = params.sigma * rng.standard_normal((5, params.L, params.r_star))
    T = teacher_attention(params, hs)
    Hc = hessian_general(params, hs)
    L, r = params.L, params.r
    for n in range(len(hs)):
        with jax.enable_x64(True):      # (float64 where asked for, no global switch: as the engine)
            H = jax.hessian(lambda h: prox_general.loss(h, T[n], params.sigma ** 2))(np.zeros((L, r)))
            H = np.asarray(H).reshape(L * r, L * r)
        np.testing.assert_allclose(H, np.kron(Hc[n], np.eye(r)), rtol=1e-10, atol=1e-13)


def test_L2_is_the_former_closed_form():
    """The general code at L = 2 against the former L = 2 formulas (2×2 H by its entries, checked against the
    split rule in test_strong_ridge.py): V, errors and growth factors to 1e-12."""
    p = ModelParams(omega=0.3, lam=0.5)
    h1, h2 = np.meshgrid(*[p.sigma * np.polynomial.hermite_e.hermegauss(64)[0]] * 2, indexing="ij")
    H = hessian_at_zero(p, h1.ravel(), h2.ravel())
    assert np.allclose(H[0], -p.sigma ** 2 * (teacher_attention(p, np.stack([h1.ravel(), h2.ravel()], -1)[..., None])
                                              [:, 0, 0] - 0.5))
    z = zero_point(p, 2.0)
    assert z.V == pytest.approx(0.5186994786574104, rel=1e-12)        # the former code's value
    # the former L = 2 code's value too (package output before the general code; regression pin)
    assert z.e_t == pytest.approx(0.008829118472, rel=1e-9)
    assert (z.growth_q, z.growth_m, z.growth_theta) == pytest.approx(
        (0.0011889154043783056, 0.0892865823914619, 0.00345045016450201), rel=1e-10)   # the former code's


def test_student_rank_does_not_move_the_q_zero_point():
    """V = v I_r solves the same scalar equation for every r (the loss sees h only through hhᵀ)."""
    a, b = zero_point(L3, 2.0), zero_point(L3.replace(r=2), 2.0)
    assert a == b


def test_gauss_hermite_orders_agree_at_L3():
    lo, hi = zero_point(L3, 2.0, order=20), zero_point(L3, 2.0)
    for key in ("V", "e_t", "growth_q", "growth_m", "growth_theta"):
        assert getattr(lo, key) == pytest.approx(getattr(hi, key), rel=1e-7)      # e_t: 2.7e-8


def _zero_student_loss_mc(params, d=300, n=3000, teachers=8, seed=0):
    """Finite-d Monte Carlo of ‖y − f‖²/(2d) for the student Q = 0 (S = 11ᵀ/L, f_l = mean_k x_k; the
    encodings' share ‖Σ_k p_k‖²/(2dL) is O(1/d) and left out), teacher normalised to ‖Q*‖² = d; mean, s.e."""
    rng = np.random.default_rng(seed)
    L, sig = params.L, params.sigma
    vals = []
    for _ in range(teachers):
        Qs = rng.standard_normal(d)
        Qs *= np.sqrt(d) / np.linalg.norm(Qs)
        x = sig * rng.standard_normal((n, L, d))
        T = teacher_attention(params, (x @ Qs / np.sqrt(d))[..., None])
        f = x.mean(axis=1, keepdims=True)
        vals.append(np.mean(np.sum((T @ x - f) ** 2, axis=(1, 2)) / (2 * d)))
    return float(np.mean(vals)), float(np.std(vals, ddof=1) / np.sqrt(teachers))


def test_L3_test_error_of_the_zero_student_against_finite_d():
    z = zero_point(L3, 2.0)
    mc, se = _zero_student_loss_mc(L3)
    assert z.eps_g == pytest.approx(mc, abs=4 * se + 2e-3 * mc)
    assert z.e_t == pytest.approx(2.0 * z.eps_g, rel=1e-12)


def test_too_many_teacher_coordinates_is_refused():
    L = MAX_DIMS + 1
    A = tuple(tuple(1.0 / L for _ in range(L)) for _ in range(L))
    with pytest.raises(ValueError, match="L·r"):
        zero_point(ModelParams(L=L, A=A, lam=0.5), 2.0)


@pytest.mark.slow
def test_engine_and_cli_at_L3_report_the_closed_form_q_zero_point():
    """`theory point --L 3 … --lam 0.5 --integrator qmc` (~1 min): the engine's collapsed point against the
    closed form (V to 1e-4, e_t within 4 s.e.), the record's closed form and the note's stability and onsets.
    Fails on the old code (note: "stability at q = 0 not evaluated", no closed form)."""
    from typer.testing import CliRunner

    from attnphase.cli import _register, app
    _register()
    res = CliRunner().invoke(app, ["theory", "point", "--L", "3", "--A", "0.6,0.2,0.2;0.2,0.6,0.2;0.2,0.2,0.6",
                                   "--lam", "0.5", "--alpha", "2", "--integrator", "qmc", "--qmc-points", "1024",
                                   "--scrambles", "4", "--json"])
    assert res.exit_code == 0, res.output
    out = res.output
    d = json.loads(out[out.index("{"):out.rindex("}") + 1])
    z = zero_point(L3, 2.0)
    assert d["status"] == "collapsed"
    assert d["V"] == pytest.approx(z.V, rel=1e-4)
    assert abs(d["e_t"] - z.e_t) < 4 * d["e_t_err"]
    assert d["provenance"]["significance"]["closed_form"]["V"] == pytest.approx(z.V, rel=1e-12)
    text = " ".join(out.split())
    assert f"largest growth factor {z.growth:.3g}" in text and "stable against every student direction" in text
    # regression pins of our own output (zero_point onsets at L = 3; no independent value)
    assert "a positional branch leaves q = 0 for λ < 0.1042" in text
    assert "a semantic branch leaves q = 0 for λ < 0.09237" in text


@pytest.mark.slow
def test_engine_v_at_q_zero_is_the_closed_form_at_an_intermediate_ridge():
    """λ = 0.2, α = 2 (L = 2, 1024 × 4, 30–80 s): the engine's iterate stops at q ~ 1e-17, where the Stein form of V̂
    divided the prox's error by √q. Below q = 1e-8 σ² V̂ is now the derivative form (as in the split rule).
    Fails on the old code: V = 1.38183 ± 2.2e-4 against the closed form 1.381623."""
    from attnphase.theory.engine import QMCConfig, solve
    p = ModelParams(omega=0.3, lam=0.2)
    g = solve(p, 2.0, "uninformative", qmc_config=QMCConfig(points=1024, scrambles=4, target=0))
    z = zero_point(p, 2.0)
    assert g.converged and g.q < 1e-12 * p.sigma ** 2
    assert g.V == pytest.approx(z.V, rel=3e-5)
    assert g.errors["V"] < 5e-5 * z.V
