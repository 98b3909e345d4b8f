"""Sampling of teachers and data sets (MODEL.md §1) with explicit JAX random keys.

The same key always gives bit-identical arrays.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from .errors import check_int, check_range
from .guards import MAX_ALPHA
from .model import ModelParams
from .attention import teacher_labels


def sample_teacher(key: jax.Array, params: ModelParams, d: int, dtype=jnp.float32) -> jax.Array:
    """Teacher weights ``Q* ∈ R^{d×r*}`` with i.i.d. N(0, 1) entries."""
    check_int("d", d, 1)
    return jax.random.normal(key, (d, params.r_star), dtype=dtype)


def gaussian_tokens(key: jax.Array, n: int, L: int, d: int, sigma, dtype=jnp.float32) -> jax.Array:
    """``n`` sequences of ``L`` tokens i.i.d. ``N(0, σ² I_d)``; ``sigma`` may be a traced scalar."""
    return sigma * jax.random.normal(key, (n, L, d), dtype=dtype)


def sample_tokens(key: jax.Array, n: int, params: ModelParams, d: int, dtype=jnp.float32) -> jax.Array:
    """``n`` sequences of ``L`` tokens, i.i.d. ``N(0, σ² I_d)``: an ``(n, L, d)`` array."""
    check_int("n", n, 1)
    check_int("d", d, 1)
    return gaussian_tokens(key, n, params.L, d, params.sigma, dtype)


def labelled_dataset(key: jax.Array, Q_star: jax.Array, n: int, L: int, sigma, omega, A
                     ) -> tuple[jax.Array, jax.Array]:
    """:func:`sample_dataset` with ``σ, ω, A`` passed as (possibly traced) arrays, for compiled callers
    that must not recompile when they change."""
    X = gaussian_tokens(key, n, L, Q_star.shape[0], sigma, Q_star.dtype)
    return X, teacher_labels(Q_star, X, omega, A)


def sample_dataset(key: jax.Array, params: ModelParams, Q_star: jax.Array, n: int
                   ) -> tuple[jax.Array, jax.Array]:
    """``(X, Y)`` with ``X (n, L, d)`` Gaussian tokens and labels ``Y = T(X) X`` (MODEL.md §1)."""
    check_int("n", n, 1)
    A = jnp.asarray(params.A_array, dtype=Q_star.dtype)
    return labelled_dataset(key, Q_star, n, params.L, params.sigma, params.omega, A)


def n_samples(alpha: float, d: int) -> int:
    """``n = round(α d)``, at least 1 (MODEL.md §2: ``α = n/d``); α in (0, :data:`~attnphase.guards.MAX_ALPHA`],
    d an integer >= 1 (a one-line :class:`~attnphase.errors.ParameterError` otherwise)."""
    alpha = check_range("alpha", alpha, lo=0.0, hi=MAX_ALPHA, lo_open=True)
    return max(1, int(round(alpha * check_int("d", d, 1))))
