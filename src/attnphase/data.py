"""Sampling of teachers and data sets (MODEL.md §1) with explicit JAX random keys.

The same key always gives bit-identical arrays.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from .errors import check_int
from .model import ModelParams, teacher_labels


def sample_teacher(key: jax.Array, params: ModelParams, d: int, dtype=jnp.float32) -> jax.Array:
    """Teacher weights ``Q* ∈ R^{d×r*}`` with i.i.d. N(0, 1) entries."""
    check_int("d", d, 1)
    return jax.random.normal(key, (d, params.r_star), dtype=dtype)


def sample_tokens(key: jax.Array, n: int, params: ModelParams, d: int, dtype=jnp.float32) -> jax.Array:
    """``n`` sequences of ``L`` tokens, i.i.d. ``N(0, σ² I_d)``: an ``(n, L, d)`` array."""
    check_int("n", n, 1)
    check_int("d", d, 1)
    return params.sigma * jax.random.normal(key, (n, params.L, d), dtype=dtype)


def sample_dataset(key: jax.Array, params: ModelParams, Q_star: jax.Array, n: int
                   ) -> tuple[jax.Array, jax.Array]:
    """``(X, Y)`` with ``X (n, L, d)`` Gaussian tokens and labels ``Y = T(X) X`` (MODEL.md §1)."""
    d = Q_star.shape[0]
    X = sample_tokens(key, n, params, d, dtype=Q_star.dtype)
    return X, teacher_labels(Q_star, X, params.omega, jnp.asarray(params.A_array, dtype=X.dtype))


def n_samples(alpha: float, d: int) -> int:
    """``n = round(α d)``, at least 1 (MODEL.md §2: ``α = n/d``)."""
    return max(1, int(round(alpha * d)))
