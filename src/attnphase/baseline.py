"""Linear positional baseline ``ŷ = B x`` (MODEL.md §5), at finite d and in the population limit.

Loss normalisation (same as the attention model): per sample ``‖y − B x‖²/(2d)``, summed over samples,
plus ``(λ_lin/2)‖B‖_F²``. ``B`` is ``L×L`` and acts on the token axis, so the normal equations are over
tokens: ``B (C_xx + λ_lin I) = C_yx`` with ``C_xx = Σ_μ X_μ X_μᵀ/d`` and ``C_yx = Σ_μ Y_μ X_μᵀ/d``.
"""

from __future__ import annotations

import numpy as np
import jax
import jax.numpy as jnp

from .errors import check_int, check_range
from .model import ModelParams
from .precision import full_precision

LAM_LIN = 1e-4


@full_precision
def fit_linear(X: jax.Array, Y: jax.Array, lam_lin: float = LAM_LIN) -> jax.Array:
    """Closed-form ridge fit of ``B`` (``L×L``) for ``X, Y`` of shape ``(n, L, d)`` (jit/vmap-safe)."""
    d = X.shape[-1]
    L = X.shape[-2]
    # per-sample Grams, then the sum over samples: a batched product that streams X and Y once each (the
    # direct contraction over (n, d) makes XLA on CPU transpose X first: ~10x slower when vmapped)
    Cxx = jnp.sum(jnp.einsum("nld,nkd->nlk", X, X), axis=0) / d
    Cyx = jnp.sum(jnp.einsum("nld,nkd->nlk", Y, X), axis=0) / d
    M = Cxx + lam_lin * jnp.eye(L, dtype=X.dtype)
    # B M = Cyx  <=>  Mᵀ Bᵀ = Cyxᵀ
    return jnp.linalg.solve(M.T, Cyx.T).T


@full_precision
def linear_sample_loss(B: jax.Array, X: jax.Array, Y: jax.Array) -> jax.Array:
    """Per-sample ``‖y − B x‖²/(2d)``: ``(..., L, d)`` -> ``(...)``."""
    diff = Y - jnp.einsum("lk,...kd->...ld", B, X)
    return jnp.sum(diff * diff, axis=(-2, -1)) / (2.0 * X.shape[-1])


@full_precision
def linear_test_error(B: jax.Array, X: jax.Array, Y: jax.Array) -> jax.Array:
    """Mean test loss ``(1/n) Σ_μ ‖y_μ − B x_μ‖²/(2d)`` of a fitted ``B``."""
    return jnp.mean(linear_sample_loss(B, X, Y))


def _attention_np(h: np.ndarray, omega: float, A: np.ndarray) -> np.ndarray:
    """``T = (1-ω) softmax(h hᵀ) + ω A`` in float64 numpy for ``h (..., L, r*)``."""
    G = np.einsum("...lr,...kr->...lk", h, h)
    G = G - G.max(axis=-1, keepdims=True)
    E = np.exp(G)
    return (1.0 - omega) * E / E.sum(axis=-1, keepdims=True) + omega * A


def eps_lin(params: ModelParams, nodes: int = 80, mc_samples: int = 400_000, seed: int = 0,
            rho: float | None = None) -> float:
    """Population test error of the optimal linear baseline (MODEL.md §5).

    ``ε_lin = ½ σ² (E‖T‖_F² − ‖E T‖_F²)`` with ``h*_l ~ N(0, σ² I_{r*})`` i.i.d. over tokens (``ρ = σ²``).
    For ``L = 2, r* = 1``: a ``nodes × nodes`` Gauss–Hermite product rule (float64). Otherwise Monte Carlo
    with ``mc_samples`` draws from a fixed ``seed`` (antithetic, deterministic).
    ``rho``: variance of the teacher pre-activations ``h*`` (default ``σ²``, its d → ∞ value; a finite
    teacher has ``ρ = σ²‖Q*‖²/d``).
    """
    sh = params.sigma if rho is None else float(np.sqrt(check_range("rho", rho, lo=0.0)))
    A = params.A_array
    s2 = params.sigma ** 2
    if params.L == 2 and params.r_star == 1:
        n = check_int("nodes", nodes, 2)
        x, w = np.polynomial.hermite_e.hermegauss(n)  # weight exp(-x²/2)
        w = w / w.sum()
        h1, h2 = np.meshgrid(x, x, indexing="ij")
        W = np.outer(w, w)
        h = sh * np.stack([h1, h2], axis=-1)[..., None]  # (n, n, 2, 1)
        T = _attention_np(h, params.omega, A)
        ET = np.einsum("ij,ijlk->lk", W, T)
        ET2 = np.einsum("ij,ij->", W, np.sum(T * T, axis=(-2, -1)))
    else:
        ns = check_int("mc_samples", mc_samples, 2)
        rng = np.random.default_rng(seed)
        z = rng.standard_normal((ns // 2, params.L, params.r_star))
        h = sh * np.concatenate([z, -z])
        T = _attention_np(h, params.omega, A)
        ET = T.mean(axis=0)
        ET2 = np.mean(np.sum(T * T, axis=(-2, -1)))
    return float(0.5 * s2 * (ET2 - np.sum(ET * ET)))


def check_lam_lin(lam_lin: float) -> float:
    return check_range("lam_lin", lam_lin, lo=0.0)
