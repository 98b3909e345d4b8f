"""Exact finite-d test error (attnphase.finite_d_error, docs/finite_d.md) against sampled d-dimensional tokens."""

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from attnphase.baseline import linear_sample_loss
from attnphase.data import sample_dataset, sample_teacher
from attnphase.errors import ParameterError
from attnphase.finite_d_error import exact_errors, qmc_normals, span_basis, subspace_dim
from attnphase.model import ModelParams
from attnphase.attention import positional_directions, positional_encodings, sample_loss
from attnphase.simulate import TrainConfig, simulate

A3 = ((0.5, 0.3, 0.2), (0.2, 0.5, 0.3), (0.3, 0.2, 0.5))


def _student(params, d, seed):
    """A student with teacher, positional and random components (all terms of ε_g are non-trivial)."""
    k1, k2 = jax.random.split(jax.random.key(seed))
    Qs = sample_teacher(k1, params, d, jnp.float64)
    Q = 0.5 * jax.random.normal(k2, (d, params.r), jnp.float64)
    Q = Q.at[:, 0].add(0.8 * Qs[:, 0] + 3.0 / math.sqrt(d))
    return Q, Qs


@pytest.mark.parametrize("L,r", [(2, 1), (2, 2), (3, 1), (3, 2)])
def test_exact_equals_sampled_within_3_se(L, r):
    with jax.enable_x64(True):
        params = ModelParams(L=L, r=r, A=A3) if L == 3 else ModelParams(L=L, r=r)
        d = 24
        Q, Qs = _student(params, d, seed=10 * L + r)
        p, u = positional_encodings(params, d, jnp.float64), positional_directions(d, params.k, jnp.float64)
        A = jnp.asarray(params.A_array)
        B_lin = 0.9 * A + 0.05 / L
        xi = jnp.asarray(qmc_normals(L, subspace_dim(r, 1, params.k), 2 ** 13, 8))
        ex = exact_errors(Q, Qs, B_lin, p, u, params.sigma, params.omega, A, xi)
        X, Y = sample_dataset(jax.random.key(99 + L + r), params, Qs, 200_000)
        for exact, se, v in ((ex.eps_g, ex.eps_g_se, sample_loss(Q, X, Y, p)),
                             (ex.eps_lin, ex.eps_lin_se, linear_sample_loss(B_lin, X, Y))):
            mc, mc_se = float(v.mean()), float(v.std() / math.sqrt(v.size))
            assert abs(float(exact) - mc) <= 3 * math.hypot(mc_se, float(se)), (L, r, float(exact), mc, mc_se)
            assert float(se) < 0.5 * mc_se  # 65 536 QMC points beat 200 000 sampled d-dim tokens


def test_span_basis_is_orthonormal_and_contains_the_columns_even_when_degenerate():
    with jax.enable_x64(True):
        d = 12
        Qs = jax.random.normal(jax.random.key(0), (d, 1), jnp.float64)
        u = positional_directions(d, 1, jnp.float64)
        for Q in (Qs, jnp.zeros((d, 1)), 2.0 * u.T):  # Q = Q*, Q = 0, Q ∥ u: rank-deficient
            B = span_basis(Q, Qs, u)
            np.testing.assert_allclose(B.T @ B, np.eye(3), atol=1e-12)
            for M in (Q, Qs, u.T):
                np.testing.assert_allclose(B @ (B.T @ M), M, atol=1e-12)


def test_qmc_points_are_validated():
    with pytest.raises(ParameterError, match="points"):
        qmc_normals(2, 3, points=1000)
    with pytest.raises(ParameterError, match="scrambles"):
        qmc_normals(2, 3, scrambles=1)


def test_simulate_exact_and_sampled_agree_on_the_same_students():
    """Same instances (training does not depend on the test method): exact vs 20 000 sampled test points."""
    kw = dict(alpha=2.0, d=30, seed=1, instances=2, config=TrainConfig(optimizer="lbfgs"))
    ex = simulate(ModelParams(), test_samples=2000, **kw)
    sa = simulate(ModelParams(), test_samples=20_000, test_error="sampled", **kw)
    np.testing.assert_array_equal(ex.e_t, sa.e_t)
    for k in ("eps_g", "eps_lin"):
        a, b = getattr(ex, k), getattr(sa, k)
        se = np.hypot(getattr(ex, k + "_se"), getattr(sa, k + "_se"))
        assert np.all(np.abs(a - b) <= 3 * se), (k, a, b, se)
    assert ex.provenance["test_error"]["dimension"] == 6 and sa.test_error == "sampled"
    with pytest.raises(ParameterError, match="test_error"):
        simulate(ModelParams(), alpha=1.0, d=10, test_error="bogus")
    with pytest.raises(ParameterError, match="d must be"):
        simulate(ModelParams(r=2), alpha=1.0, d=3)
