"""Channel and prior sides of the general fixed point (MODEL.md §8) in JAX, for ONE point (vmap to batch).

Model numbers that a batch may vary — ``Knobs(alpha, omega, sigma, lam)`` — are traced; the structure (L, r,
r*, A, P) is fixed per batch. Expectations are means over QMC points ``xi (N, L, r)``, ``y (N, L, r*)``.
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp

from . import prox_general as PG
from .channel import V_HAT_Q_FLOOR
from .state import Hats, OrderParams

_EIG_FLOOR = 1e-14
RANGE_RTOL = 1e-2
"""Eigen-directions of q below ``RANGE_RTOL · λ_max(q)`` count as its null space (a student direction that
carries (almost) nothing): there q^{-1/2} is replaced by the pseudo-inverse and V̂ by the derivative form
(MODEL.md §8). The Stein column of a direction of variance w carries QMC noise ∝ w^{-1/2} (measured at 2048
points: ~10 % of V̂ at w/λ_max = 5e-3); the derivative form has none and is exact as w → 0 (see :func:`v_hat`).
A fixed point cannot sit below the cut with a broken h₂ → −h₂ symmetry (q̂₂₂ would then be O(1)), so the
cut moves the iteration's path, not its fixed points."""


class Knobs(NamedTuple):
    """The continuous model numbers of one point: α, ω, σ, λ."""

    alpha: jnp.ndarray
    omega: jnp.ndarray
    sigma: jnp.ndarray
    lam: jnp.ndarray


class ChannelOut(NamedTuple):
    hats: Hats
    EM: jnp.ndarray          # E[min value] (Moreau envelope)
    eps_g: jnp.ndarray       # E ℓ(ω, h*) at the student means (MODEL.md §8)
    max_grad: jnp.ndarray    # worst |∇F| at the returned minimisers
    V_hat_deriv: jnp.ndarray  # −α E[Σ_l ∂g_l/∂ω_l] (implicit-function form, all columns; for checks)
    null_dim: jnp.ndarray    # number of directions of q treated as null (derivative form used there)
    h: jnp.ndarray           # the minimisers ĥ and runner-ups ĥ₂ (N, 2, L, r) (warm starts of the next call)


def sym_power(S, p):
    """``S^p`` for a symmetric positive semi-definite S (eigenvalues floored at 1e-14)."""
    w, U = jnp.linalg.eigh(0.5 * (S + S.T))
    return (U * jnp.maximum(w, _EIG_FLOOR) ** p) @ U.T


def range_mask(S, rtol=RANGE_RTOL):
    """Eigen-decomposition ``S = U diag(w) Uᵀ`` of a symmetric PSD S and the mask of its range
    (``w > rtol · max(w)``)."""
    w, U = jnp.linalg.eigh(0.5 * (S + S.T))
    return w, U, w > rtol * jnp.maximum(jnp.max(w), _EIG_FLOOR)


def pinv_power(S, p, rtol=RANGE_RTOL):
    """``S^p`` on the range of a symmetric PSD S and 0 on its null space (p < 0: pseudo-inverse powers;
    the range as in :func:`range_mask`)."""
    w, U, keep = range_mask(S, rtol)
    return (U * jnp.where(keep, jnp.maximum(w, _EIG_FLOOR) ** p, 0.0)) @ U.T


def null_projector(S, rtol=RANGE_RTOL):
    """Orthogonal projector on the null space of a symmetric PSD S (complement of :func:`range_mask`)."""
    _, U, keep = range_mask(S, rtol)
    return (U * jnp.where(keep, 0.0, 1.0)) @ U.T


def fields(x: OrderParams, sigma, xi, y, P):
    """Student means ``ω = ξ q^{1/2} + P Mᵀ`` (N, L, r) and teacher pre-activations
    ``h* = ξ q^{-1/2} θ + y (ρ − θᵀ q⁻¹ θ)^{1/2}`` (N, L, r*), ρ = σ² I (MODEL.md §8). θ lies in the range of q
    (the token covariance is PSD), so q^{-1/2}, q⁻¹ are pseudo-inverses: a singular q (unused direction) is fine."""
    rs = x.theta.shape[1]
    qh, qmh = pinv_power(x.q, 0.5), pinv_power(x.q, -0.5)
    res = sigma ** 2 * jnp.eye(rs) - x.theta.T @ pinv_power(x.q, -1.0) @ x.theta
    R = sym_power(res, 0.5)
    w = xi @ qh + (P @ x.M.T)[None]
    hs = xi @ (qmh @ x.theta) + y @ R
    return w, hs, R


def dg_full(hess, Vinv):
    """The whole Jacobian ``∂g/∂ω`` (n × n, n = L r, row-major in (l, i): entry ((l, a), (l', b)) =
    ∂g_{l,a}/∂ω_{l',b}) at the minimiser ĥ of one sample, by the implicit-function theorem:
    ``∂ĥ/∂ω = H⁻¹K``, ``K = I_L ⊗ V⁻¹``, ``H = K + ∇²ℓ`` the Hessian of the Moreau objective at ĥ (``hess``:
    n × n nested list, as the prox returns it, :class:`prox_general.ProxOut`), ``∂g/∂ω = K(∂ĥ/∂ω − I)``
    (symmetric: ``K H⁻¹ K − K``). A pivoted solve (LU): H may be indefinite where the Newton stopped off a
    strict minimum (a collapsing branch), where an unpivoted LDLᵀ could meet a zero pivot."""
    r = Vinv.shape[0]
    H = jnp.stack([jnp.stack(row) for row in hess])
    n = H.shape[0]
    K = jnp.kron(jnp.eye(n // r), Vinv)
    return K @ (jnp.linalg.solve(H, K) - jnp.eye(n))


def dg_domega(hess, Vinv):
    """``Σ_l ∂g_l/∂ω_l`` (r×r, entry (a, b) = ∂g_{l,a}/∂ω_{l,b}): the diagonal token blocks of
    :func:`dg_full`."""
    r = Vinv.shape[0]
    dg = dg_full(hess, Vinv)
    return sum(dg[l * r:(l + 1) * r, l * r:(l + 1) * r] for l in range(dg.shape[0] // r))


def v_hat(x: OrderParams, alpha, theta_hat, g, xi, dg):
    """``V̂ = −α E[Σ_l ∂g_l/∂ω_l]`` (MODEL.md §8), symmetrised. On the range of q by Stein in ξ,
    ``−α E[gᵀξ] q^{-1/2} + θ̂ θᵀ q⁻¹`` (it keeps the jump terms of a discontinuous ĥ); on the null space of q
    (where ω does not move with ξ and Stein says nothing) by the derivative form from ``dg`` (N, r, r). The
    null columns are exact there: ℓ is even in every student direction (h hᵀ), so at ω_b = 0 a basin boundary
    has no normal component along b and there are no jump terms."""
    mean = lambda a: jnp.mean(a, axis=0)  # noqa: E731
    stein = -alpha * mean(jnp.einsum("nlr,nls->nrs", g, xi)) @ pinv_power(x.q, -0.5) \
        + theta_hat @ x.theta.T @ pinv_power(x.q, -1.0)
    deriv = -alpha * mean(dg)
    V_hat = stein + deriv @ null_projector(x.q)
    return 0.5 * (V_hat + V_hat.T), 0.5 * (deriv + deriv.T)


def minimisers(x: OrderParams, knobs: Knobs, xi, y, A, P, offsets, h_prev=None):
    """Fields ω, h*, R (:func:`fields`), the teacher T per sample and the prox at every QMC point: the global
    multi-start :func:`prox_general.prox_pair`, or with ``h_prev`` (N, 2, L, r) the warm
    :func:`prox_general.prox_warm` (a :class:`prox_general.ProxOut` batched over the N points)."""
    sigma2 = knobs.sigma ** 2
    w, hs, R = fields(x, knobs.sigma, xi, y, P)
    T = jax.vmap(PG.teacher, in_axes=(0, None, None))(hs, knobs.omega, A)
    if h_prev is None:
        out = jax.vmap(PG.prox_pair, in_axes=(0, 0, 0, None, None, None))(w, hs, T, x.V, sigma2, offsets)
    else:
        out = jax.vmap(PG.prox_warm, in_axes=(0, 0, 0, None, None))(h_prev, w, T, x.V, sigma2)
    return w, hs, R, T, out


def channel(x: OrderParams, knobs: Knobs, xi, y, A, P, offsets, h_prev=None) -> ChannelOut:
    """Hats (MODEL.md §8): ``q̂ = α E[gᵀg]``, ``M̂ = α E[gᵀP]``, ``θ̂ = α E[gᵀy] R⁻¹`` and V̂ by :func:`v_hat`
    (Stein on the range of q, derivative form on its null space), with ``g = (ĥ − ω) V⁻¹``. ĥ is the global
    multi-start prox, or with ``h_prev`` (N, 2, L, r) the warm one (:func:`prox_general.prox_warm`)."""
    alpha, sigma2 = knobs.alpha, knobs.sigma ** 2
    w, hs, R, T, (h, Fmin, gn, h2, hess) = minimisers(x, knobs, xi, y, A, P, offsets, h_prev)
    Vinv = jnp.linalg.inv(x.V)
    g = (h - w) @ Vinv
    mean = lambda a: jnp.mean(a, axis=0)  # noqa: E731
    q_hat = alpha * mean(jnp.einsum("nlr,nls->nrs", g, g))
    M_hat = alpha * mean(jnp.einsum("nlr,lk->nrk", g, P))
    Rinv = sym_power(R @ R, -0.5)
    theta_hat = alpha * mean(jnp.einsum("nlr,nls->nrs", g, y)) @ Rinv
    dg = jax.vmap(dg_domega, in_axes=(0, None))(hess, Vinv)
    V_hat, V_hat_deriv = v_hat(x, alpha, theta_hat, g, xi, dg)
    # a student of norm below the split rule's floor: the derivative form in every direction (Stein divides the
    # prox's error by √q there; at r = 1 the relative null-space cut of ``v_hat`` only acts below q = 1e-16)
    V_hat = jnp.where(jnp.trace(x.q) < V_HAT_Q_FLOOR * sigma2, V_hat_deriv, V_hat)
    eg = mean(jax.vmap(PG.loss, in_axes=(0, 0, None))(w, T, sigma2))
    null_dim = jnp.sum(~range_mask(x.q)[2])
    return ChannelOut(Hats(0.5 * (q_hat + q_hat.T), M_hat, theta_hat, V_hat), mean(Fmin), eg, jnp.max(gn),
                      V_hat_deriv, null_dim, jnp.stack([h, h2], axis=1))


def prior(hats: Hats, knobs: Knobs) -> OrderParams:
    """Ridge prior (MODEL.md §8), ``D = λ I + σ² V̂``: ``V = σ² D⁻¹``, ``M = D⁻¹ M̂``, ``θ = σ² D⁻¹ θ̂ ρ``,
    ``q = σ² D⁻¹ (σ² q̂ + M̂M̂ᵀ + σ² θ̂ρθ̂ᵀ) D⁻¹`` with ρ = σ² I."""
    s2 = knobs.sigma ** 2
    r = hats.q_hat.shape[0]
    Di = jnp.linalg.inv(knobs.lam * jnp.eye(r) + s2 * hats.V_hat)
    Di = 0.5 * (Di + Di.T)
    inner = s2 * hats.q_hat + hats.M_hat @ hats.M_hat.T + s2 * s2 * hats.theta_hat @ hats.theta_hat.T
    q = s2 * Di @ inner @ Di
    return OrderParams(0.5 * (q + q.T), Di @ hats.M_hat, s2 * s2 * Di @ hats.theta_hat, s2 * Di)


def free_energy(x: OrderParams, hats: Hats, EM, knobs: Knobs):
    """``Φ = ½ tr(V̂q) − ½ tr(q̂V) − tr(MᵀM̂) − tr(θᵀθ̂) + ½ tr[D⁻¹(σ²q̂ + M̂M̂ᵀ + σ²θ̂ρθ̂ᵀ)] − α E[min]``
    (MODEL.md §8); ``e_t = −Φ``."""
    s2 = knobs.sigma ** 2
    r = hats.q_hat.shape[0]
    Di = jnp.linalg.inv(knobs.lam * jnp.eye(r) + s2 * hats.V_hat)
    inner = s2 * hats.q_hat + hats.M_hat @ hats.M_hat.T + s2 * s2 * hats.theta_hat @ hats.theta_hat.T
    return (0.5 * jnp.trace(hats.V_hat @ x.q) - 0.5 * jnp.trace(hats.q_hat @ x.V) - jnp.sum(x.M * hats.M_hat)
            - jnp.sum(x.theta * hats.theta_hat) + 0.5 * jnp.trace(Di @ inner) - knobs.alpha * EM)


def valid(x: OrderParams, hats: Hats, knobs: Knobs):
    """q and V positive definite, D = λ + σ²V̂ positive definite, everything finite."""
    r = x.q.shape[0]
    finite = jnp.all(jnp.array([jnp.all(jnp.isfinite(b)) for b in (*x, *hats)]))
    D = knobs.lam * jnp.eye(r) + knobs.sigma ** 2 * hats.V_hat
    pd = lambda S: jnp.linalg.eigvalsh(0.5 * (S + S.T))[0] > 0  # noqa: E731
    return finite & pd(x.q) & pd(x.V) & pd(D)
