import math
import os
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from attnphase.data import n_samples, sample_dataset, sample_teacher
from attnphase.errors import ParameterError
from attnphase.model import ModelParams, empirical_risk, positional_encodings
from attnphase.simulate import SimulationResult, TrainConfig, _build, instance_keys, simulate

P = ModelParams()


def _problem(d=8, n=12, seed=0, dtype=jnp.float64):
    k1, k2, k3 = jax.random.split(jax.random.key(seed), 3)
    Qs = sample_teacher(k1, P, d, dtype)
    X, Y = sample_dataset(k2, P, Qs, n)
    p = positional_encodings(P, d, dtype)
    Q = 0.5 * jax.random.normal(k3, (d, 1), dtype)
    return Q, X, Y, p


def test_gradient_matches_finite_differences():
    with jax.enable_x64(True):
        Q, X, Y, p = _problem()
        R = lambda Q: empirical_risk(Q, X, Y, p, P.lam)  # noqa: E731
        g = jax.grad(R)(Q)
        v = jax.random.normal(jax.random.key(5), Q.shape, jnp.float64)
        eps = 1e-5
        fd = (R(Q + eps * v) - R(Q - eps * v)) / (2 * eps)
        assert float(jnp.sum(g * v)) == pytest.approx(float(fd), rel=1e-7, abs=1e-10)
        for i in (0, 3):
            e = jnp.zeros_like(Q).at[i, 0].set(1.0)
            fdi = (R(Q + eps * e) - R(Q - eps * e)) / (2 * eps)
            assert float(g[i, 0]) == pytest.approx(float(fdi), rel=1e-6, abs=1e-10)
    assert jnp.zeros(1).dtype == jnp.float32  # x64 did not leak


def test_risk_invariant_under_sign_flip():
    with jax.enable_x64(True):
        Q, X, Y, p = _problem(seed=3)
        R = lambda Q: empirical_risk(Q, X, Y, p, P.lam)  # noqa: E731
        assert float(R(-Q)) == pytest.approx(float(R(Q)), rel=1e-12)


@pytest.fixture(scope="module")
def gd_lbfgs():
    kw = dict(alpha=2.0, d=30, instances=2, seed=1, test_samples=2000)
    gd = simulate(P, config=TrainConfig(init="semantic", optimizer="gd", steps=4000), **kw)
    lb = simulate(P, config=TrainConfig(init="semantic", optimizer="lbfgs"), **kw)
    return gd, lb


def test_gd_and_lbfgs_reach_same_minimum(gd_lbfgs):
    gd, lb = gd_lbfgs
    assert lb.converged.all() and gd.converged.all()
    np.testing.assert_allclose(gd.e_t, lb.e_t, rtol=1e-3)
    np.testing.assert_allclose(gd.theta_over_sigma2, lb.theta_over_sigma2, rtol=0.02, atol=2e-3)
    np.testing.assert_allclose(gd.m, lb.m, atol=5e-3)
    np.testing.assert_allclose(gd.eps_g, lb.eps_g, rtol=0.02)
    assert np.all(lb.e_t <= gd.e_t * (1 + 1e-5))
    assert np.all(lb.iterations < 2000)
    np.testing.assert_array_equal(gd.eps_lin, lb.eps_lin)  # same data, same baseline


def test_result_containers(gd_lbfgs):
    gd, _ = gd_lbfgs
    assert isinstance(gd, SimulationResult)
    for k in ("m", "theta", "theta_over_sigma2", "q", "e_t", "eps_g", "eps_lin", "grad_norm",
              "iterations", "converged"):
        assert getattr(gd, k).shape == (2,)
    assert np.all(gd.m >= 0) and np.all(gd.theta >= 0)
    np.testing.assert_allclose(gd.theta, P.sigma ** 2 * gd.theta_over_sigma2, rtol=1e-6)
    s = gd.summary()
    assert s["e_t"]["mean"] == pytest.approx(gd.e_t.mean())
    assert s["e_t"]["sem"] == pytest.approx(gd.e_t.std(ddof=1) / math.sqrt(2))
    d = gd.to_dict()
    import json
    json.dumps(d)
    assert {"mean", "std", "params", "provenance", "eps_g"} <= set(d)
    df = gd.to_frame()
    assert len(df) == 2 and {"alpha", "d", "omega", "init", "eps_g"} <= set(df.columns)
    assert gd.provenance["config"]["d"] == 30 and "convergence" in gd.provenance
    # semantic start at alpha = 2: the student keeps a strong teacher overlap and beats nothing-learned
    assert np.all(gd.theta_over_sigma2 > 0.2)


def test_batched_equals_one_at_a_time():
    cfg = TrainConfig(init="positional", optimizer="gd", steps=200)
    kw = dict(alpha=1.0, d=20, seed=7, test_samples=500)
    batch = simulate(P, config=cfg, instances=3, **kw)
    alone = simulate(P, config=cfg, instances=1, **kw)  # same compiled shape as the call below
    fn = _build(P, 20, n_samples(1.0, 20), cfg, 500)
    third = fn(instance_keys(7, 1, start=2))
    for k in ("e_t", "m", "theta", "eps_g", "eps_lin"):
        np.testing.assert_allclose(getattr(alone, k)[0], getattr(batch, k)[0], rtol=1e-5, atol=1e-7)
        np.testing.assert_allclose(np.asarray(third[k])[0], getattr(batch, k)[2], rtol=1e-5, atol=1e-7)
    assert len(set(np.round(batch.e_t, 8))) == 3  # different instances differ


@pytest.mark.slow
def test_x64_run_and_no_leak():
    r = simulate(P, alpha=0.5, d=10, config=TrainConfig(steps=20, x64=True), test_samples=100)
    assert np.isfinite(r.e_t).all()
    assert jnp.zeros(1).dtype == jnp.float32


@pytest.mark.parametrize("kw", [dict(init="bogus"), dict(optimizer="adam"), dict(lr=0.0), dict(steps=-1),
                                dict(gtol=-1.0), dict(max_iter=0), dict(lr=float("nan"))])
def test_bad_config(kw):
    with pytest.raises(ParameterError):
        TrainConfig(**kw)


@pytest.mark.parametrize("kw", [dict(alpha=0.0), dict(alpha=-1.0), dict(d=1), dict(instances=0),
                                dict(seed=-1), dict(test_samples=0), dict(d=10.5)])
def test_bad_simulate_args(kw):
    args = dict(alpha=1.0, d=10, instances=1, seed=0, test_samples=10)
    args.update(kw)
    with pytest.raises(ParameterError):
        simulate(P, **args)


REF_CSV = str(Path(os.environ.get("ATTNPHASE_SHARED", Path(__file__).resolve().parents[2] / "shared"))
              / "reference" / "gd_d1000_omega0.3.csv")


@pytest.mark.slow
@pytest.mark.parametrize("alpha", [0.5, 1.0, 2.0])
@pytest.mark.parametrize("init,informed", [("semantic", True), ("positional", False)])
def test_reproduces_reference_gd_d1000(alpha, init, informed):
    """MODEL.md §4/§9: L-BFGS at d=1000 matches the paper's GD means within max(3 s.e., 5 %)."""
    import os
    import pandas as pd
    if not os.path.exists(REF_CSV):
        pytest.skip("reference data not available")
    ref = pd.read_csv(REF_CSV)
    ref = ref[ref.informed == informed].sort_values("alpha")
    r = simulate(P, alpha=alpha, d=1000, config=TrainConfig(init=init, optimizer="lbfgs"), instances=8, seed=100)
    assert r.converged.all()
    s = r.summary()
    for ours, col, scale in (("eps_g", "attention_gen_error", 1.0), ("e_t", "attention_train_error", 1e-3),
                             ("m", "attention_mag", 1.0), ("theta_over_sigma2", "attention_theta", 1.0)):
        want = scale * float(np.interp(alpha, ref.alpha, ref[col + "_mean"]))
        ref_se = scale * float(np.interp(alpha, ref.alpha, ref[col + "_std"])) / math.sqrt(24)
        se = math.hypot(s[ours]["sem"], ref_se)
        assert abs(s[ours]["mean"] - want) <= max(3 * se, 0.05 * abs(want)), (ours, s[ours], want)
