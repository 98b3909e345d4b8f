"""The public per-instance helpers of ``attnphase.simulate`` reproduce ``simulate`` (issue 11, bench_lbfgs_endpoints)."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from attnphase.errors import ParameterError
from attnphase.model import ModelParams
from attnphase.simulate import TrainConfig, instance, observables, simulate, train


def test_instance_and_train_reproduce_simulate():
    """Instance 1 rebuilt alone, trained and described, equals simulate's instance 1 of a batch of 2 (float32);
    the float64 polish of it stays at the same minimum."""
    p = ModelParams(L=2, r=2, r_star=1, omega=0.3)
    cfg = TrainConfig(init="positional", optimizer="lbfgs")
    res = simulate(p, alpha=1.0, d=40, config=cfg, instances=2, seed=3, test_error="sampled", test_samples=10)
    inst = instance(p, alpha=1.0, d=40, seed=3, index=1)
    assert inst.X.shape == (40, 2, 40) and inst.X.dtype == jnp.float32
    Q, it, gn, status = train(inst, p, cfg)
    o = observables(Q, inst, p)
    for k in ("m", "theta", "q", "e_t"):
        assert o[k] == pytest.approx(getattr(res, k)[1], rel=1e-4, abs=1e-6), k
    assert it >= 1 and np.isfinite(gn)   # iteration counts of float32 L-BFGS near gtol are not reproducible batched vs alone
    with jax.enable_x64(True):
        c = type(inst)(*(v.astype(jnp.float64) if jnp.issubdtype(v.dtype, jnp.floating) else v for v in inst))
        Q1, _, gn1, _ = train(c, p, TrainConfig(optimizer="lbfgs", x64=True, gtol=1e-9, warmup_steps=0),
                              Q.astype(jnp.float64))
        o1 = observables(Q1, c, p)
    assert Q1.dtype == jnp.float64 and gn1 < gn
    assert o1["e_t"] <= o["e_t"] + 1e-6 and abs(o1["theta"] - o["theta"]) < 1e-2


def test_instance_bad_input():
    p = ModelParams()
    with pytest.raises(ParameterError, match="index"):
        instance(p, alpha=1.0, d=20, index=-1)
    with pytest.raises(ParameterError, match="alpha"):
        instance(p, alpha=0.0, d=20)
