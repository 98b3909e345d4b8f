"""Exact test error of a finite-d student, without sampling d-dimensional tokens (MODEL.md §2–§3).

Derivation (docs/finite_d.md): let ``B`` (d×w) be an orthonormal basis of a subspace ``W`` that contains the
columns of ``Q``, ``Q*`` and the positional directions ``u_1..u_k`` (so every ``p_l ∈ W``;
``w = r + r* + k``). Split each fresh token ``x_l = B a_l + x_l^⊥`` with ``a_l = Bᵀx_l ~ N(0, σ² I_w)`` and
``x_l^⊥`` independent of ``a``. ``h_l = Q_Wᵀ(a_l + c_l)/√d`` and ``h*_l = Q*_Wᵀ a_l/√d`` (``Q_W = BᵀQ``,
``c_l = Bᵀp_l``), so ``T`` and ``S`` are functions of ``a`` alone. With ``Δ = T − S``,

    y − f_Q(x) = Δ x − S p = (Δ a − S c) Bᵀ + Δ x^⊥,

and the two terms are orthogonal. Given ``a``, ``E‖Δ x^⊥‖_F² = σ² (d − w) ‖Δ‖_F²``, hence

    ε_g = E_a[ ‖Δ a − S c‖_F² + σ² (d − w) ‖Δ‖_F² ] / (2d),

an expectation over the ``L·w``-dimensional Gaussian ``a``. The linear baseline ``ŷ = B_lin x`` gives the same
formula with ``Δ = T − B_lin`` and no positional term. Both are integrated with scrambled Sobol points
(randomised QMC); independent scrambles give the error estimate. Exact for any ``d ≥ w``: nothing concentrates.
"""

from __future__ import annotations

import math
from functools import lru_cache
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from .errors import ParameterError, check_int
from .attention import softmax_attention, teacher_attention
from .precision import full_precision

DEFAULT_POINTS = 2 ** 14
DEFAULT_SCRAMBLES = 8


class ExactErrors(NamedTuple):
    """``ε_g`` and ``ε_lin`` with their integration errors (standard error over the scrambles)."""

    eps_g: jax.Array
    eps_g_se: jax.Array
    eps_lin: jax.Array
    eps_lin_se: jax.Array


def subspace_dim(r: int, r_star: int, k: int) -> int:
    """``w = r + r* + k``: the dimension of the span of ``Q, Q*, u_1..u_k`` (at most)."""
    return r + r_star + k


@lru_cache(maxsize=16)
def _sobol_normals(dim: int, points: int, scrambles: int, seed: int) -> np.ndarray:
    from scipy.special import ndtri
    from scipy.stats import qmc
    out = np.empty((scrambles, points, dim))
    for s in range(scrambles):
        u = qmc.Sobol(d=dim, scramble=True, seed=np.random.default_rng([seed, s])).random(points)
        out[s] = ndtri(np.clip(u, 1e-12, 1 - 1e-12))
    out.setflags(write=False)
    return out


def qmc_normals(L: int, w: int, points: int = DEFAULT_POINTS, scrambles: int = DEFAULT_SCRAMBLES,
                seed: int = 0) -> np.ndarray:
    """Standard normal QMC points of shape ``(scrambles, points, L, w)``: ``scrambles`` independent Owen
    scrambles of a Sobol sequence in ``L·w`` dimensions (``points`` a power of 2), mapped by ``Φ⁻¹``."""
    points = check_int("points", points, 2)
    if points & (points - 1):
        raise ParameterError("points", "a power of 2 (Sobol balance)", points)
    scrambles = check_int("scrambles", scrambles, 2)
    return _sobol_normals(L * w, points, scrambles, seed).reshape(scrambles, points, L, w)


@full_precision
def span_basis(Q: jax.Array, Q_star: jax.Array, u: jax.Array) -> jax.Array:
    """An orthonormal ``(d, w)`` basis whose span contains ``Q``, ``Q*`` and ``u_1..u_k`` (Householder QR:
    orthonormal even when the columns are dependent, e.g. ``Q = Q*``)."""
    M = jnp.concatenate([Q, Q_star, u.T], axis=1)
    return jnp.linalg.qr(M, mode="reduced")[0]


class Projection(NamedTuple):
    """What the test error needs of a student: ``Q_W = BᵀQ`` (w×r), ``Q*_W = BᵀQ*`` (w×r*), ``c = p B``
    (L×w) for an orthonormal basis ``B`` of ``W`` (:func:`span_basis`), and ``d``."""

    Qw: jax.Array
    Qsw: jax.Array
    c: jax.Array
    d: jax.Array


@full_precision
def project(Q: jax.Array, Q_star: jax.Array, p: jax.Array, u: jax.Array) -> Projection:
    """The ``d``-dimensional part of the computation: project ``Q, Q*, p`` on ``W`` (jit/vmap-safe)."""
    B = span_basis(Q, Q_star, u)
    return Projection(B.T @ Q, B.T @ Q_star, p @ B, jnp.asarray(Q.shape[0], Q.dtype))


@full_precision
def integrate(proj: Projection, B_lin: jax.Array, sigma, omega, A, xi: jax.Array) -> ExactErrors:
    """The low-dimensional part: ``ε_g`` and ``ε_lin`` (module docstring) over the QMC normals ``xi``
    ``(scrambles, points, L, w)``, one scramble at a time; the standard error is over the scrambles."""
    Qw, Qsw, c, d = proj
    w = Qw.shape[0]
    perp = sigma ** 2 * (d - w)
    sq = jnp.sqrt(d)

    def loss(D, inside):
        return (jnp.sum(inside * inside, axis=(-2, -1)) + perp * jnp.sum(D * D, axis=(-2, -1))) / (2.0 * d)

    def per_scramble(z):                                       # z: (N, L, w)
        a = sigma * z.astype(Qw.dtype)
        S = softmax_attention((a + c) @ Qw / sq)
        T = teacher_attention(a @ Qsw / sq, omega, A)
        D, Dl = T - S, T - B_lin
        return jnp.mean(loss(D, D @ a - S @ c)), jnp.mean(loss(Dl, Dl @ a))

    att, lin = jax.lax.map(per_scramble, xi)

    def mean_se(per):
        return jnp.mean(per), jnp.std(per, ddof=1) / math.sqrt(per.shape[0])

    return ExactErrors(*mean_se(att), *mean_se(lin))


@full_precision
def exact_errors(Q: jax.Array, Q_star: jax.Array, B_lin: jax.Array, p: jax.Array, u: jax.Array,
                 sigma, omega, A, xi: jax.Array) -> ExactErrors:
    """``ε_g`` of the student ``Q`` and ``ε_lin`` of the linear map ``B_lin`` (L×L), exact in ``d``
    (module docstring), integrated over the normals ``xi`` of :func:`qmc_normals`. jit/vmap-safe;
    ``sigma, omega, A`` may be traced. (:func:`project` then :func:`integrate`.)"""
    return integrate(project(Q, Q_star, p, u), B_lin, sigma, omega, A, xi)
