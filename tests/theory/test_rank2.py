"""Rank-2 students in the general engine (MODEL.md §8; issue 11): V̂ for a singular or ill-conditioned q
(Stein on the range of q, implicit-function derivative on its null space), the rank-1 point embedded in
r = 2, rotation invariance with a singular q, and (slow) the pinned and mixed rank-2 fixed points."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from attnphase.model import ModelParams
from attnphase.theory import channel_general as CG
from attnphase.theory import prox_general as PG
from attnphase.theory import qmc
from attnphase.theory.state import OrderParams

KNOBS = CG.Knobs(2.0, 0.3, 0.5, 0.01)
_CHANNEL = jax.jit(CG.channel)


def _points(L, r, n, seed=0):
    Z = qmc.scrambles(L * (r + 1), n, (seed,))[0]
    return jnp.asarray(Z[:, :L * r].reshape(n, L, r)), jnp.asarray(Z[:, L * r:].reshape(n, L, 1))


def _hats(x, xi, y, p=ModelParams(r=2), knobs=KNOBS):
    with jax.enable_x64(True):
        x = OrderParams(*(jnp.asarray(b, dtype=jnp.float64) for b in x))
        return _CHANNEL(x, knobs, xi, y, jnp.asarray(p.A_array), jnp.asarray(p.P_array),
                                   jnp.asarray(PG.start_offsets(p.L, x.q.shape[0])))


def _rank2(q, th=(0.14, 0.0), V=((12.0, 0.0), (0.0, 12.0)), M=(0.0, 0.0)):
    return OrderParams(np.asarray(q, float), np.asarray(M, float).reshape(2, 1),
                       np.asarray(th, float).reshape(2, 1), np.asarray(V, float))


def test_stein_and_derivative_agree_where_both_apply():
    """Small V: the Moreau problem is convex, ĥ is smooth in ω (no jump terms), so the Stein form and
    −α E[Σ ∂g/∂ω] agree column by column, for a well- and an ill-conditioned q (both on the range)."""
    for q22 in (0.05, 2e-3):
        st, de = 0.0, 0.0
        for seed in (0, 1):         # two scrambles: the Stein form is the noisier estimator
            out = _hats(_rank2([[0.09, 0.0], [0.0, q22]], V=[[3.0, 0.3], [0.3, 2.0]]), *_points(2, 2, 2048, seed))
            assert int(out.null_dim) == 0
            st, de = st + 0.5 * np.asarray(out.hats.V_hat), de + 0.5 * np.asarray(out.V_hat_deriv)
        np.testing.assert_allclose(st, de, atol=0.04 * np.abs(de).max())


def test_singular_q_embeds_the_rank1_channel():
    """q = diag(q₁, 0), θ, M on direction 1: direction 2 carries nothing (ω₂ = 0 and, ℓ being even in h₂,
    ĥ₂ = 0 while that stationary point is a minimum), so the hats' direction-1 block is the rank-1 channel
    on the same points, q̂₂₂ = θ̂₂ = V̂₁₂ = 0, and V̂₂₂ is the derivative form
    α E[tr((I + V₂₂ H₂)⁻¹ H₂)] with H₂ the L×L Hessian of ℓ in h₂ at ĥ (computed here separately)."""
    xi, y = _points(2, 2, 256)
    x2 = _rank2([[0.1, 0.0], [0.0, 0.0]], V=[[12.0, 0.0], [0.0, 6.0]])
    out2 = _hats(x2, xi, y)
    assert int(out2.null_dim) == 1
    x1 = OrderParams(np.array([[0.1]]), np.zeros((1, 1)), np.array([[0.14]]), np.array([[12.0]]))
    out1 = _hats(x1, xi[..., :1], y, ModelParams())
    h1, h2 = out1.hats, out2.hats
    np.testing.assert_allclose(float(h2.q_hat[0, 0]), float(h1.q_hat[0, 0]), rtol=1e-8)
    np.testing.assert_allclose(float(h2.theta_hat[0, 0]), float(h1.theta_hat[0, 0]), rtol=1e-8)
    np.testing.assert_allclose(float(h2.V_hat[0, 0]), float(h1.V_hat[0, 0]), rtol=1e-8)
    np.testing.assert_allclose(float(out2.EM), float(out1.EM), rtol=1e-10)
    assert abs(float(h2.q_hat[1, 1])) < 1e-18 and abs(float(h2.theta_hat[1, 0])) < 1e-8 * float(h1.theta_hat[0, 0])
    assert abs(float(h2.V_hat[0, 1])) < 1e-8 * float(h1.V_hat[0, 0])
    # V̂₂₂ from the token Hessian in direction 2 at ĥ = (ĥ₁, 0)
    with jax.enable_x64(True):
        w, hs, _ = CG.fields(OrderParams(*(jnp.asarray(b) for b in x2)), 0.5, xi, y, jnp.asarray([[1.0], [-1.0]]))
        A = jnp.asarray(ModelParams().A_array)

        def one(wi, hsi):
            T = PG.teacher(hsi, KNOBS.omega, A)
            h, _, _ = PG.prox(wi[:, :1], hsi, T, jnp.array([[12.0]]), 0.25, jnp.asarray(PG.start_offsets(2, 1)))
            H2 = jax.hessian(lambda z: PG.loss(jnp.stack([h[:, 0], z], axis=1), T, 0.25))(jnp.zeros(2))
            return jnp.trace(jnp.linalg.solve(jnp.eye(2) + 6.0 * H2, H2))
        ref = KNOBS.alpha * float(jnp.mean(jax.jit(jax.vmap(one))(w, hs)))
    assert abs(ref) > 1e-4
    np.testing.assert_allclose(float(h2.V_hat[1, 1]), ref, rtol=1e-8)


def test_vhat_continuous_as_q_becomes_singular():
    """V̂ is continuous through the switch from Stein to the derivative form: q₂₂ → 0 (convex prox)."""
    xi, y = _points(2, 2, 2048)
    V = [[12.0, 0.0], [0.0, 6.0]]
    outs = [_hats(_rank2([[0.1, 0.0], [0.0, e]], V=V), xi, y) for e in (1.5e-3, 0.0)]
    assert [int(o.null_dim) for o in outs] == [0, 1]
    vals = [np.asarray(o.hats.V_hat) for o in outs]
    np.testing.assert_allclose(vals[0], vals[1], atol=0.1 * np.abs(vals[1]).max())   # Stein noise ~7 %


def test_map_commutes_with_rotations_singular_q():
    """Q → QO with a rank-1 q whose null direction is rotated too: F(O·x) = O·F(x) (MODEL.md §8)."""
    xi, y = _points(2, 2, 256)
    O = np.array([[np.cos(0.7), -np.sin(0.7)], [np.sin(0.7), np.cos(0.7)]])
    x = _rank2([[0.1, 0.0], [0.0, 0.0]], th=(0.14, 0.0), M=(0.05, 0.0), V=[[12.0, 0.4], [0.4, 7.0]])
    xr = OrderParams(O @ x.q @ O.T, O @ x.M, O @ x.theta, O @ x.V @ O.T)
    a = _hats(x, xi, y)
    b = _hats(xr, jnp.asarray(np.asarray(xi) @ O.T), y)
    assert int(a.null_dim) == int(b.null_dim) == 1
    for name in ("q_hat", "V_hat"):
        A_, B_ = np.asarray(getattr(a.hats, name)), np.asarray(getattr(b.hats, name))
        np.testing.assert_allclose(B_, O @ A_ @ O.T, atol=1e-9)
    for name in ("M_hat", "theta_hat"):
        np.testing.assert_allclose(np.asarray(getattr(b.hats, name)), O @ np.asarray(getattr(a.hats, name)),
                                   atol=1e-9)
