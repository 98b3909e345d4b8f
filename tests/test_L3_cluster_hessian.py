"""``attnphase.simulate.risk_hessian``: gradient and Hessian of the training objective (MODEL.md §2), used by
bench/investigations/bench_L3_cluster_hessian.py to classify L-BFGS end points (issue 11, helper hB)."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from attnphase.model import ModelParams
from attnphase.attention import empirical_risk, empirical_risk_from_statistics, risk_statistics
from attnphase.simulate import TrainConfig, initial_Q, instance, risk_hessian, train

L3 = ModelParams(omega=0.3, L=3, A=[[0.6, 0.2, 0.2], [0.2, 0.6, 0.2], [0.2, 0.2, 0.6]])


def _training_risk(inst, p):
    """The objective ``train`` minimises (the fast statistics form, reverse mode only)."""
    stats = risk_statistics(inst.X, inst.Y, inst.p)
    return lambda Q: empirical_risk_from_statistics(Q, stats, p.lam)


@pytest.mark.parametrize("p, r", [(L3, 1), (ModelParams(omega=0.3, r=2, r_star=1), 2)])
def test_gradient_and_hessian_match_finite_differences(p, r):
    """On a tiny instance (d = 12) at a random Q: ∇R equals the training objective's gradient and central
    differences of R; H equals central differences of that gradient (columns), is symmetric, and equals
    ``jax.hessian`` of the reference risk :func:`attnphase.attention.empirical_risk`."""
    p = p.replace(r=r)
    d = 12
    with jax.enable_x64(True):
        inst = instance(p, alpha=1.5, d=d, seed=2, index=1, x64=True)
        Q = 0.7 * jax.random.normal(jax.random.key(5), (d, r), jnp.float64)
        g, H = risk_hessian(Q, inst, p, chunk=5)           # a chunk that does not divide d·r
        R = jax.jit(_training_risk(inst, p))
        grad = jax.jit(jax.grad(R))
        np.testing.assert_allclose(g, grad(Q).ravel(), rtol=1e-12, atol=1e-14)
        h = 1e-5
        eye = np.eye(d * r)
        fd_g = np.array([(R(Q + h * e.reshape(Q.shape)) - R(Q - h * e.reshape(Q.shape))) / (2 * h) for e in eye])
        np.testing.assert_allclose(g, fd_g, rtol=1e-6, atol=1e-9)
        fd_H = np.stack([(grad(Q + h * e.reshape(Q.shape)) - grad(Q - h * e.reshape(Q.shape))).ravel() / (2 * h)
                         for e in eye], axis=1)
        scale = float(np.abs(H).max())
        assert np.abs(np.asarray(H) - fd_H).max() < 1e-6 * scale
        assert np.abs(np.asarray(H) - np.asarray(H).T).max() < 1e-12 * scale
        ref = jax.hessian(lambda Q: empirical_risk(Q, inst.X, inst.Y, inst.p, p.lam))(Q).reshape(d * r, d * r)
        np.testing.assert_allclose(H, ref, rtol=1e-9, atol=1e-12 * scale)


def test_hessian_is_positive_at_an_lbfgs_minimum_and_negative_at_the_origin():
    """After float64 L-BFGS to ‖∇R‖ ≤ 1e-10 on a small easy instance (L = 2 defaults, α = 2, semantic start)
    the Hessian is positive definite (a strict local minimum). At Q = 0, a critical point of R (∇R = 0
    exactly), it has a negative eigenvalue, and R decreases along that eigenvector as ½λ_min t²."""
    p = ModelParams(omega=0.3)
    d = 30
    with jax.enable_x64(True):
        inst = instance(p, alpha=2.0, d=d, seed=0, index=0, x64=True)
        cfg = TrainConfig(init="semantic", optimizer="lbfgs", x64=True, gtol=1e-10, max_iter=5000)
        Q, _, gn, _ = train(inst, p, cfg, initial_Q(inst, p, cfg))
        g, H = risk_hessian(Q, inst, p)
        vals = np.linalg.eigvalsh(np.asarray(H))
        assert float(jnp.linalg.norm(g)) < 1e-8
        assert vals[0] > 1e-6 * vals[-1] > 0

        Q0 = jnp.zeros((d, 1), jnp.float64)
        g0, H0 = risk_hessian(Q0, inst, p)
        assert float(jnp.abs(g0).max()) == 0.0
        vals0, vecs0 = np.linalg.eigh(np.asarray(H0))
        assert vals0[0] < -p.lam                         # below the ridge's own curvature: the data term's
        R = _training_risk(inst, p)
        t = 1e-2
        v = jnp.asarray(vecs0[:, 0].reshape(d, 1))
        dR = float(R(t * v) - R(Q0))
        assert dR < 0 and dR == pytest.approx(0.5 * vals0[0] * t * t, rel=1e-2)


def test_rank2_hessian_has_the_rotation_zero_mode():
    """R is invariant under Q → QO (MODEL.md §8): at an r = 2 minimiser H has one eigenvalue ≈ 0 whose
    eigenvector is the rotation tangent Q J (J antisymmetric), and no negative one."""
    p = ModelParams(omega=0.3, r=2, r_star=1)
    d = 24
    with jax.enable_x64(True):
        inst = instance(p, alpha=2.0, d=d, seed=1, index=0, x64=True)
        cfg = TrainConfig(init="random", optimizer="lbfgs", x64=True, gtol=1e-11, max_iter=10000, init_scale=0.5)
        Q, _, gn, _ = train(inst, p, cfg, initial_Q(inst, p, cfg))
        g, H = risk_hessian(Q, inst, p)
        assert float(jnp.linalg.norm(g)) < 1e-8
        vals, vecs = np.linalg.eigh(np.asarray(H))
        k = int(np.argmin(np.abs(vals)))
        assert abs(vals[k]) < 1e-6 * vals[-1]
        tangent = np.asarray(Q @ jnp.array([[0.0, 1.0], [-1.0, 0.0]])).ravel()
        assert abs(vecs[:, k] @ tangent) / np.linalg.norm(tangent) > 1 - 1e-6
        others = np.delete(vals, k)
        assert others.min() > 0
