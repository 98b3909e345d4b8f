"""Model and data: validation, invariances, shapes, reproducibility (MODEL.md §1-§3)."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from attnphase import ModelParams, ParameterError
from attnphase.data import sample_dataset, sample_teacher
from attnphase.attention import (empirical_risk, order_parameters, positional_directions, positional_encodings,
                                 softmax_attention, teacher_attention)


@pytest.mark.parametrize("kw, name", [
    (dict(omega=-0.1), "omega"), (dict(omega=1.01), "omega"), (dict(sigma=0.0), "sigma"),
    (dict(sigma=-1), "sigma"), (dict(lam=-0.01), "lam"), (dict(L=1), "L"), (dict(r=0), "r"),
    (dict(omega=float("nan")), "omega"), (dict(A=((0.5, 0.6), (0.4, 0.6))), "A"),
    (dict(A=((1.2, -0.2), (0.4, 0.6))), "A"), (dict(A=((1.0,),)), "A"), (dict(P=((1.0,),)), "P"),
])
def test_invalid_parameters_raise_one_line_error_naming_parameter(kw, name):
    with pytest.raises(ParameterError) as err:
        ModelParams(**kw)
    assert err.value.name == name
    assert "\n" not in str(err.value) and str(err.value).startswith(name)


def test_defaults_are_the_papers():
    p = ModelParams()
    assert (p.L, p.r, p.sigma, p.lam, p.omega) == (2, 1, 0.5, 0.01, 0.3)
    np.testing.assert_allclose(p.A_array, [[0.6, 0.4], [0.4, 0.6]])
    pe = positional_encodings(p, 64)
    np.testing.assert_allclose(pe[0], np.ones(64) / 8, rtol=1e-6)
    np.testing.assert_allclose(pe[1], -pe[0])


def test_positional_directions_orthonormal():
    u = positional_directions(50, 4, dtype=jnp.float64) if jax.config.jax_enable_x64 else \
        positional_directions(50, 4)
    u = np.asarray(u)          # the product on the host: a GPU's default float32 matmul is TF32 (~1e-3)
    np.testing.assert_allclose(u @ u.T, np.eye(4), atol=1e-5)


def test_attention_rows_are_stochastic():
    h = jax.random.normal(jax.random.key(0), (7, 3, 2))
    S = softmax_attention(h)
    np.testing.assert_allclose(S.sum(-1), 1.0, rtol=1e-6)
    T = teacher_attention(h, 0.3, jnp.full((3, 3), 1 / 3))
    np.testing.assert_allclose(T.sum(-1), 1.0, rtol=1e-6)


def test_same_key_gives_bit_identical_data():
    p = ModelParams()
    a = sample_dataset(jax.random.key(3), p, sample_teacher(jax.random.key(1), p, 40), 20)
    b = sample_dataset(jax.random.key(3), p, sample_teacher(jax.random.key(1), p, 40), 20)
    assert all(bool(jnp.array_equal(x, y)) for x, y in zip(a, b))


def test_risk_invariant_under_sign_flip_and_overlaps_flip():
    p = ModelParams()
    d = 30
    Qs = sample_teacher(jax.random.key(0), p, d)
    X, Y = sample_dataset(jax.random.key(1), p, Qs, 25)
    Q = jax.random.normal(jax.random.key(2), (d, 1))
    pe = positional_encodings(p, d)
    np.testing.assert_allclose(empirical_risk(Q, X, Y, pe, p.lam), empirical_risk(-Q, X, Y, pe, p.lam),
                               rtol=1e-6)
    u = positional_directions(d, 1)
    o1, o2 = order_parameters(Q, Qs, u, p.sigma), order_parameters(-Q, Qs, u, p.sigma)
    np.testing.assert_allclose([o1["m"], o1["theta"], o1["q"]], [-o2["m"], -o2["theta"], o2["q"]],
                               rtol=1e-6)
