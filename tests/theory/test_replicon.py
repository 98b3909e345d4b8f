"""Replicon (AT) eigenvalue of the RS fixed point (theory.replicon; MODEL.md §6, §8; issue 11, helper hC): the
prox Jacobian against finite differences of the prox, the split rule against QMC at L = 2, invariance under
Q → QO at r = 2, the ridge-regression limit through the same operator, and the strong-ridge (convex) limit."""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from attnphase.model import ModelParams
from attnphase.theory import channel_general as CG
from attnphase.theory import prox_general as PG
from attnphase.theory import replicon as RP
from attnphase.theory.engine import QMCConfig
from attnphase.theory.qmc_map import qmc_points
from attnphase.theory.state import OrderParams

A3 = [[0.6, 0.2, 0.2], [0.2, 0.6, 0.2], [0.2, 0.2, 0.6]]


def _state(r, k, rs, q, m, theta, V):
    """A state with q = q I, M = m e₁ (first row), θ = θ e₁, V = V I (r×r)."""
    M = np.zeros((r, k))
    M[0, 0] = m
    th = np.zeros((r, rs))
    th[0, 0] = theta
    return OrderParams(q * np.eye(r), M, th, V * np.eye(r))


def _prox_batch(params, x, xi, y):
    """ω, T and the global prox (ĥ, runner-up, Hessian) at every point, float64."""
    kn = CG.Knobs(*(jnp.asarray(float(v)) for v in (1.0, params.omega, params.sigma, params.lam)))
    xj = OrderParams(*(jnp.asarray(b) for b in x))
    w, hs, R, T, out = CG.minimisers(xj, kn, jnp.asarray(xi), jnp.asarray(y), np.asarray(params.A),
                                     np.asarray(params.P), PG.start_offsets(params.L, params.r))
    return w, hs, T, out


@pytest.mark.slow
@pytest.mark.parametrize("params,state", [
    (ModelParams(L=3, A=A3), (0.11, 0.2, 0.03, 20.0)),
    (ModelParams(r=2), (0.06, 0.22, 0.05, 30.0)),
])
def test_prox_jacobian_equals_finite_differences_of_the_prox(params, state):
    """∂ĥ/∂ω from the implicit-function theorem (dg_full: ∂ĥ/∂ω = I + V ∂g/∂ω per token) against central
    differences of the global prox in each entry of ω, at samples that have a single basin (no switch within
    ±δ); L = 3, r = 1 and L = 2, r = 2 (off-diagonal token and rank blocks included)."""
    x = _state(params.r, params.k, params.r_star, *state)
    xi, y = (a[0, :64] for a in qmc_points(params, QMCConfig(points=64, scrambles=2)))
    L, r = params.L, params.r
    n, delta = L * r, 1e-5
    with jax.enable_x64(True):
        w, hs, T, out = _prox_batch(params, x, xi, y)
        Vinv = jnp.linalg.inv(jnp.asarray(x.V))
        dg = np.asarray(jax.vmap(CG.dg_full, in_axes=(0, None))(out.hess, Vinv))
        Dh = np.eye(n) + np.kron(np.eye(L), x.V) @ dg                     # (N, n, n)
        prox = jax.vmap(PG.prox_pair, in_axes=(0, 0, 0, None, None, None))
        fd = np.zeros_like(Dh)
        for j in range(n):
            e = np.zeros(n)
            e[j] = delta
            E = jnp.asarray(e.reshape(L, r))
            hp = np.asarray(prox(w + E, hs, T, jnp.asarray(x.V), params.sigma ** 2, PG.start_offsets(L, r)).h)
            hm = np.asarray(prox(w - E, hs, T, jnp.asarray(x.V), params.sigma ** 2, PG.start_offsets(L, r)).h)
            fd[:, :, j] = ((hp - hm) / (2 * delta)).reshape(-1, n)
    err = np.abs(fd - Dh).max(axis=(1, 2))
    smooth = err < 1.0                      # a basin switch within ±δ gives a jump of O(|ĥ₁ − ĥ₂|/δ) ≫ 1
    assert smooth.mean() > 0.9
    assert np.max(err[smooth]) < 1e-5
    # the Jacobian is not trivially the identity (the loss acts): ∂ĥ/∂ω − I is O(1) somewhere
    assert np.max(np.abs(Dh - np.eye(n))) > 0.1


def test_split_rule_and_qmc_agree_at_L2():
    """Λ_AT at one L = 2, r = 1 state with m ≠ 0 and θ ≠ 0 (no symmetry used): the split rule (orders 6 and 12)
    against QMC (2048 points × 4 scrambles) within 4 standard errors plus the split rule's order difference."""
    p = ModelParams()
    q, m, theta, V, alpha = 0.08, 0.15, 0.08, 12.0, 1.5
    split = [RP.replicon_split_at(p, alpha, q, m, V, theta, n) for n in (6, 12)]
    cfg = QMCConfig(points=2048, scrambles=4)
    xi, y = qmc_points(p, cfg)
    x = _state(1, 1, 1, q, m, theta, V)
    vals = [RP.replicon_at(p, alpha, x, xi[s], y[s])["value"] for s in range(cfg.scrambles)]
    mean, se = float(np.mean(vals)), float(np.std(vals, ddof=1) / 2)
    assert 0.05 < split[1] < 5.0
    assert abs(mean - split[1]) <= 4 * se + abs(split[1] - split[0]) + 1e-3 * split[1], (mean, se, split)


@pytest.mark.slow
def test_rank2_replicon_is_invariant_under_rotations():
    """Q → QO (r = 2): the state rotates (q → OqOᵀ, M → OM, θ → Oθ, V → OVOᵀ) and the points with it
    (ξ_l → O ξ_l); the replicon matrix is conjugated by O ⊗ O (so Λ_AT is unchanged). The prox's teacher-informed
    and random starts are not rotated along, so a sample whose multi-start finds a different global minimum in
    the two frames (min values differ) is left out of both; they are < 1 %."""
    p = ModelParams(r=2)
    x = OrderParams(np.array([[0.07, 0.01], [0.01, 0.03]]), np.array([[0.2], [0.05]]), np.array([[0.06], [0.02]]),
                    np.array([[25.0, 3.0], [3.0, 15.0]]))
    c, s = math.cos(0.7), math.sin(0.7)
    O = np.array([[c, -s], [s, c]])
    xr = OrderParams(O @ x.q @ O.T, O @ x.M, O @ x.theta, O @ x.V @ O.T)
    xi, y = (a[0] for a in qmc_points(p, QMCConfig(points=1024, scrambles=2)))
    with jax.enable_x64(True):
        outs, dgs = [], []
        for st, pts in ((x, xi), (xr, xi @ O.T)):
            out = _prox_batch(p, st, pts, y)[3]
            outs.append(out)
            dgs.append(jax.vmap(CG.dg_full, in_axes=(0, None))(out.hess, jnp.linalg.inv(jnp.asarray(st.V))))
        same = np.abs(np.asarray(outs[0].F) - np.asarray(outs[1].F)) < 1e-10
        assert same.mean() > 0.99
        K = [np.asarray(RP.replicon_operator(dg[same], jnp.asarray(st.V), 1.5)) for dg, st in zip(dgs, (x, xr))]
    OO = np.kron(O, O)
    assert np.allclose(OO @ K[0] @ OO.T, K[1], rtol=1e-8, atol=1e-10 * np.abs(K[0]).max())
    lam = [RP.leading(k)[0] for k in K]
    assert lam[0] == pytest.approx(lam[1], rel=1e-9)
    # the leading eigenvector is positive semi-definite (complete positivity of the operator), not a multiple
    # of the identity (the state is anisotropic)
    v = RP.leading(K[0])[1]
    assert np.linalg.eigvalsh(0.5 * (v + v.T)).min() > -1e-8


@pytest.mark.parametrize("alpha,lam", [(0.5, 1e-3), (1.0, 1e-3), (3.0, 1e-2), (2.0, 1.0)])
def test_ridge_regression_limit_through_the_same_operator(alpha, lam):
    """Square loss ½(h − y)², one token, r = 1, σ = 1: the prox Hessian is V⁻¹ + 1, so dg_full gives
    ∂g/∂ω = −1/(1 + V), and with V from the ridge fixed point V = 1/(λ + α/(1 + V)) the replicon operator
    gives the known Λ = αV²/(1 + V)² = (1 − λV) V/(1 + V) < 1."""
    V = 1.0
    for _ in range(2000):
        V = 1.0 / (lam + alpha / (1.0 + V))
    with jax.enable_x64(True):
        Vinv = jnp.array([[1.0 / V]])
        dg = CG.dg_full([[Vinv[0, 0] + 1.0]], Vinv)[None]
        lam_at, _ = RP.leading(RP.replicon_operator(dg, jnp.array([[V]]), alpha))
    assert lam_at == pytest.approx(alpha * V ** 2 / (1 + V) ** 2, rel=1e-12)
    assert lam_at == pytest.approx((1 - lam * V) * V / (1 + V), rel=1e-9)
    assert lam_at < 1.0


def test_strong_ridge_is_stable_and_scales_as_V_squared():
    """The convex end: V ≤ σ²/λ small, the prox is the single basin near ω, ∂g/∂ω ≈ −∇²ℓ, so Λ_AT ≈
    α V² E‖∇²ℓ‖² → 0: at λ = 2 and 4 (V = σ²/λ) Λ_AT < 1 and halving V divides it by ≈ 4."""
    p = ModelParams()
    xi, y = (a[0] for a in qmc_points(p, QMCConfig(points=2048, scrambles=2)))      # the shape of the test above
    vals = []
    for lam in (2.0, 4.0):
        V = p.sigma ** 2 / lam
        rec = RP.replicon_at(p, 1.0, _state(1, 1, 1, 0.01, 0.05, 0.02, V), xi, y)
        assert rec["two_basin"] == 0.0
        vals.append(rec["value"])
    assert vals[0] < 1e-2
    assert vals[0] / vals[1] == pytest.approx(4.0, rel=0.1)


@pytest.mark.slow
def test_cli_point_replicon_json(capsys):
    """``theory point --replicon`` (QMC engine) adds ``replicon`` = value, error, stable; the value is the
    engine's own Λ_AT at the reported fixed point (each scramble's state on its points)."""
    import json

    from attnphase.cli import main
    with pytest.raises(SystemExit) as e:
        main(["theory", "point", "--alpha", "2", "--branch", "semantic", "--integrator", "qmc", "--qmc-points",
              "512", "--scrambles", "2", "--replicon", "--json"])
    assert e.value.code in (0, None)
    rec = json.loads(capsys.readouterr().out)["replicon"]
    assert rec["integrator"] == "qmc" and rec["reason"] is None
    assert 0.0 < rec["value"] < 1.0 and rec["error"] >= 0.0
    assert rec["stable"] in (True, None)
