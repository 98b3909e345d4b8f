"""The teacher and the student of MODEL.md §1–§3, as pure JAX functions over validated parameters
(:class:`attnphase.model.ModelParams`).

Conventions: a sample is an ``(L, d)`` array of tokens (rows ``x_l``); batches carry leading axes.
The student weights ``Q`` are ``(d, r)``, the teacher ``Q_star`` is ``(d, r_star)``.
Every function with a matrix product runs under :func:`attnphase.precision.full_precision`: its float32
contractions are true float32 on every backend (no TensorFloat32 on GPUs; docs/gpu.md).
"""

from __future__ import annotations

import math
from typing import NamedTuple

import jax
import jax.numpy as jnp

from .errors import check_int
from .model import ModelParams
from .precision import full_precision


# ---------------------------------------------------------------------------------------------------
# Attention maps (MODEL.md §1, §2)


@full_precision
def softmax_attention(h: jax.Array) -> jax.Array:
    """Row-wise ``softmax(h hᵀ)`` for pre-activations ``h`` of shape ``(..., L, r)`` -> ``(..., L, L)``."""
    return jax.nn.softmax(jnp.einsum("...lr,...kr->...lk", h, h), axis=-1)


@full_precision
def teacher_attention(h_star: jax.Array, omega: float, A: jax.Array) -> jax.Array:
    """``T = (1 - ω) softmax(h* h*ᵀ) + ω A`` (MODEL.md §1)."""
    return (1.0 - omega) * softmax_attention(h_star) + omega * jnp.asarray(A, dtype=h_star.dtype)


def positional_directions(d: int, k: int, dtype=jnp.float32) -> jax.Array:
    """Fixed orthonormal directions ``u_1..u_k`` in R^d as rows of a ``(k, d)`` array.

    ``u_1 = 1_d/√d`` (the paper's); further directions are the DCT-II basis vectors, orthonormal to it.
    """
    check_int("d", d, max(k, 1))
    i = jnp.arange(d, dtype=dtype)
    rows = [jnp.full((d,), 1.0 / math.sqrt(d), dtype=dtype)]
    for j in range(1, k):
        rows.append(math.sqrt(2.0 / d) * jnp.cos(math.pi * j * (i + 0.5) / d))
    return jnp.stack(rows)


@full_precision
def positional_encodings(params: ModelParams, d: int, dtype=jnp.float32) -> jax.Array:
    """``p_l = Σ_j P_lj u_j`` as an ``(L, d)`` array (MODEL.md §2; paper: ``p_1 = -p_2 = 1_d/√d``)."""
    u = positional_directions(d, params.k, dtype)
    return jnp.asarray(params.P_array, dtype=dtype) @ u


@full_precision
def teacher_preactivations(Q_star: jax.Array, x: jax.Array) -> jax.Array:
    """``h*_l = Q*ᵀ x_l / √d``: ``(..., L, d)`` tokens -> ``(..., L, r_star)``."""
    return x @ Q_star / math.sqrt(x.shape[-1])


@full_precision
def teacher_labels(Q_star: jax.Array, x: jax.Array, omega: float, A: jax.Array) -> jax.Array:
    """``y = T(x) x`` (MODEL.md §1): the teacher mixes the tokens' contents (no positional encodings)."""
    return teacher_attention(teacher_preactivations(Q_star, x), omega, A) @ x


@full_precision
def student_preactivations(Q: jax.Array, x: jax.Array, p: jax.Array) -> jax.Array:
    """``h_l = Qᵀ (x_l + p_l) / √d`` -> ``(..., L, r)`` (MODEL.md §2)."""
    return (x + p) @ Q / math.sqrt(x.shape[-1])


@full_precision
def student_output(Q: jax.Array, x: jax.Array, p: jax.Array) -> jax.Array:
    """``f_Q(x) = softmax(h hᵀ) (x + p)`` (MODEL.md §2)."""
    return softmax_attention(student_preactivations(Q, x, p)) @ (x + p)


@full_precision
def sample_loss(Q: jax.Array, x: jax.Array, y: jax.Array, p: jax.Array) -> jax.Array:
    """``ℓ = ‖y − f_Q(x)‖² / (2d)`` per sample: ``(..., L, d)`` -> ``(...)`` (MODEL.md §2)."""
    diff = y - student_output(Q, x, p)
    return jnp.sum(diff * diff, axis=(-2, -1)) / (2.0 * x.shape[-1])


@full_precision
def empirical_risk(Q: jax.Array, X: jax.Array, Y: jax.Array, p: jax.Array, lam: float) -> jax.Array:
    """``R(Q) = Σ_μ ℓ_μ + (λ/2) ‖Q‖_F²`` (MODEL.md §2)."""
    return jnp.sum(sample_loss(Q, X, Y, p)) + 0.5 * lam * jnp.sum(Q * Q)


# ---------------------------------------------------------------------------------------------------
# The same empirical risk from per-sample sufficient statistics (fast form for training)


class RiskStatistics(NamedTuple):
    """Per-sample sufficient statistics of a training set for ``R(Q)`` (MODEL.md §2).

    ``Z = X + p`` (n, L, d): tokens plus positional encodings, the only ``d``-dimensional data the
    student sees; ``G_zz = Z Zᵀ/d``, ``G_zy = Z Yᵀ/d`` (n, L, L) and ``G_yy = ‖Y‖²/d`` (n,).
    """

    Z: jax.Array
    G_zz: jax.Array
    G_zy: jax.Array
    G_yy: jax.Array


@full_precision
def risk_statistics(X: jax.Array, Y: jax.Array, p: jax.Array) -> RiskStatistics:
    """Precompute :class:`RiskStatistics` once per training set (one pass over ``X`` and ``Y``)."""
    d = X.shape[-1]
    Z = X + p
    return RiskStatistics(Z=Z, G_zz=jnp.einsum("nld,nkd->nlk", Z, Z) / d,
                          G_zy=jnp.einsum("nld,nkd->nlk", Z, Y) / d,
                          G_yy=jnp.sum(Y * Y, axis=(-2, -1)) / d)


@jax.custom_vjp
@full_precision
def _rows_times(Z2: jax.Array, Q: jax.Array) -> jax.Array:
    """``Z2 @ Q`` for row-major ``Z2 (N, d)``; its VJP ``(gᵀ Z2)ᵀ`` streams ``Z2`` row by row again.

    (Left to autodiff, XLA on CPU materialises a transposed copy of ``Z2`` at every gradient.)
    Reverse mode only (``jax.custom_vjp``): ``jax.jvp``/``jax.hessian`` of the fast risk are not supported.
    """
    return Z2 @ Q


@full_precision
def _rows_times_fwd(Z2, Q):
    return Z2 @ Q, (Z2, Q)


@full_precision
def _rows_times_bwd(res, g):
    Z2, Q = res
    return g @ Q.T, (g.T @ Z2).T


_rows_times.defvjp(_rows_times_fwd, _rows_times_bwd)


@full_precision
def sample_loss_from_statistics(h: jax.Array, stats: RiskStatistics) -> jax.Array:
    """``ℓ = ½[G_yy − 2 tr(S G_zy) + tr(S G_zz Sᵀ)]`` with ``S = softmax(h hᵀ)``: ``‖y − S z‖²/(2d)``
    of MODEL.md §2 expanded in the per-sample statistics; ``h (n, L, r)`` -> ``(n,)``."""
    S = softmax_attention(h)
    cross = jnp.einsum("nlk,nkl->n", S, stats.G_zy)
    quad = jnp.einsum("nlk,nkj,nlj->n", S, stats.G_zz, S)
    return 0.5 * (stats.G_yy - 2.0 * cross + quad)


@full_precision
def empirical_risk_from_statistics(Q: jax.Array, stats: RiskStatistics, lam) -> jax.Array:
    """``R(Q) = Σ_μ ℓ_μ + (λ/2)‖Q‖_F²`` (MODEL.md §2), equal to :func:`empirical_risk`, computed from
    :func:`risk_statistics`: each evaluation (and each gradient) reads ``Z`` once, for
    ``h = Z Q/√d`` (and once more for ``∇R = Σ_μ Z_μᵀ ∂ℓ_μ/∂h_μ /√d + λQ``), instead of streaming ``X`` and
    ``Y`` several times. In float32 it agrees with :func:`empirical_risk` to ~1e-7 relative at d = 1000.
    """
    n, L, d = stats.Z.shape
    h = _rows_times(stats.Z.reshape(n * L, d), Q).reshape(n, L, Q.shape[-1]) / math.sqrt(d)
    return jnp.sum(sample_loss_from_statistics(h, stats)) + 0.5 * lam * jnp.sum(Q * Q)


# ---------------------------------------------------------------------------------------------------
# Order parameters (MODEL.md §3)


@full_precision
def order_parameters(Q: jax.Array, Q_star: jax.Array, u: jax.Array, sigma: float) -> dict[str, jax.Array]:
    """Overlaps of MODEL.md §3 for ``Q (d, r)``, ``Q* (d, r*)``, directions ``u (k, d)``.

    ``m = u·Q/√d`` (k x r), ``theta = σ² Q*ᵀQ/d`` (r* x r), ``q = σ² QᵀQ/d`` (r x r),
    ``rho = σ² Q*ᵀQ*/d``. For r = r* = k = 1 the entries are returned as scalars.
    """
    d = Q.shape[0]
    out = {
        "m": u @ Q / math.sqrt(d),
        "theta": sigma**2 * Q_star.T @ Q / d,
        "q": sigma**2 * Q.T @ Q / d,
        "rho": sigma**2 * Q_star.T @ Q_star / d,
    }
    if Q.shape[1] == 1 and Q_star.shape[1] == 1 and u.shape[0] == 1:
        out = {k: v[0, 0] for k, v in out.items()}
    return out
