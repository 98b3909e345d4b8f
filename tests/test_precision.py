"""Matmul precision (docs/gpu.md): every float32 contraction the package traces asks for true float32
(``Precision.HIGHEST``), so that a GPU does not compute it in TensorFloat32; the setting stays inside the
package; the theory contracts in float64 only.

Checked on the CPU, where the precision does not change a number, by recording every ``lax.dot_general``
that JAX binds (traces, or runs eagerly) while the package computes, after clearing JAX's caches so that
its compiled programs are traced again.
"""

from __future__ import annotations

import contextlib

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from attnphase.baseline import fit_linear, linear_sample_loss
from attnphase.data import sample_dataset, sample_teacher
from attnphase.model import ModelParams
from attnphase.attention import (empirical_risk, empirical_risk_from_statistics, order_parameters,
                                 positional_directions, positional_encodings, risk_statistics)
from attnphase.simulate import (TrainConfig, _build, _knobs, _structure, instance, instance_keys, observables,
                                risk_hessian, simulate, train)

HIGHEST = (jax.lax.Precision.HIGHEST, jax.lax.Precision.HIGHEST)
P = ModelParams()


@contextlib.contextmanager
def recorded_dots():
    """Yield a list that receives ``(precision, operand dtypes, operand shapes)`` of every ``dot_general``
    bound inside."""
    prim = jax.lax.dot_general_p
    records: list[tuple] = []
    bind = prim.bind

    def recording_bind(*args, **params):
        records.append((params.get("precision"), tuple(str(np.dtype(a.dtype)) for a in args),
                        tuple(tuple(np.shape(a)) for a in args)))
        return bind(*args, **params)

    jax.clear_caches()                      # compiled programs are traced (and their contractions bound) again
    try:
        prim.bind = recording_bind
    except (AttributeError, TypeError):     # a JAX whose primitives cannot be instrumented this way
        pytest.skip(f"jax {jax.__version__}: lax.dot_general_p.bind cannot be replaced")
    try:
        yield records
    finally:
        del prim.bind                       # back to the class's method
        jax.clear_caches()                  # nothing traced under the recorder is reused


def not_highest_float32(records):
    return [r for r in records if "float32" in r[1] and r[0] != HIGHEST]


def _float32_work():
    """A little of everything the package computes in float32: training (GD, L-BFGS), the exact and the
    sampled test error, the model functions eagerly and under grad, the baseline, the instance tools."""
    kw = dict(alpha=1.0, d=12, instances=2, seed=0)
    simulate(P, config=TrainConfig(optimizer="gd", steps=3), qmc_points=64, qmc_scrambles=2, **kw)
    simulate(ModelParams(L=3, r=2, A=[[0.5, 0.25, 0.25]] * 3), config=TrainConfig(optimizer="lbfgs", max_iter=3,
             warmup_steps=2), test_error="sampled", test_samples=50, **kw)
    inst = instance(P, alpha=1.0, d=12)
    Q, *_ = train(inst, P, TrainConfig(optimizer="lbfgs", max_iter=2, warmup_steps=1))
    observables(Q, inst, P)
    risk_hessian(Q, inst, P)
    k1, k2 = jax.random.split(jax.random.key(0))
    Qs = sample_teacher(k1, P, 12)
    X, Y = sample_dataset(k2, P, Qs, 10)
    p = positional_encodings(P, 12)
    jax.grad(empirical_risk)(Qs, X, Y, p, P.lam)
    jax.grad(empirical_risk_from_statistics)(Qs, risk_statistics(X, Y, p), P.lam)
    order_parameters(Qs, Qs, positional_directions(12, 1), P.sigma)
    B = fit_linear(X, Y)
    jax.grad(lambda B: jnp.sum(linear_sample_loss(B, X, Y)))(B)


def test_float32_contractions_are_traced_at_highest_precision():
    with recorded_dots() as rec:
        _float32_work()
    f32 = [r for r in rec if "float32" in r[1]]
    assert len(f32) > 50                                     # the recorder saw the package's contractions
    assert not not_highest_float32(rec), sorted(set(map(str, not_highest_float32(rec))))[:5]


def test_precision_is_scoped_to_the_package():
    """The caller's own products keep the caller's setting (here: JAX's default), before and after a package
    call, and a caller's own lower default (tensorfloat32) does not reach into the package."""
    def mine(n):                                   # a product of the caller's, recognisable by its size
        return jnp.ones((n, n), jnp.float32) @ jnp.ones((n, n), jnp.float32)

    with recorded_dots() as rec:
        mine(29)
        with jax.default_matmul_precision("tensorfloat32"):
            simulate(P, alpha=1.0, d=12, config=TrainConfig(optimizer="gd", steps=3), qmc_points=64,
                     qmc_scrambles=2)
            mine(31)
        mine(37)
    by_size = {r[2][0]: r[0] for r in rec if r[2] and r[2][0] in ((29, 29), (31, 31), (37, 37))}
    assert by_size[(29, 29)] is None and by_size[(37, 37)] is None     # JAX's default: TF32 on a GPU
    assert by_size[(31, 31)] == (jax.lax.Precision.HIGH,) * 2           # the caller's tensorfloat32
    package = [r for r in rec if not (r[2] and r[2][0] in by_size)]
    assert len(package) > 10 and not not_highest_float32(package)


def test_training_program_lowers_with_highest_precision():
    """What XLA receives: every dot_general of simulate's compiled training program says HIGHEST."""
    cfg = TrainConfig(optimizer="lbfgs", max_iter=3)
    fn = _build(_structure(P), 12, 12, "lbfgs", False, 50, 2, "exact")
    text = fn.lower(instance_keys(0, 2), _knobs(P, cfg, jnp.float32, "exact", 64, 2)).as_text()
    dots = [ln for ln in text.splitlines() if "dot_general" in ln]
    assert len(dots) > 5
    assert all("HIGHEST" in ln for ln in dots), [ln for ln in dots if "HIGHEST" not in ln][:3]


def test_the_theory_contracts_in_float64(monkeypatch):
    """The theory (split rule and QMC engine, MODEL.md §6, §8) asks for float64 explicitly: no contraction of
    its maps is float32, so TensorFloat32 cannot reach it on any backend. The maps are traced here (a stored
    program, attnphase.exported_programs, would be loaded without binding its contractions)."""
    from attnphase import exported_programs
    from attnphase.theory import solve_point, split_xla
    from attnphase.theory.engine import QMCConfig, _compiled_map, solve
    monkeypatch.setenv(exported_programs.ENV, "off")
    stored = (_compiled_map, split_xla._compiled)
    for cached in stored:
        cached.cache_clear()
    try:
        with recorded_dots() as rec:
            solve_point(ModelParams(omega=0.25), 1.6, "positional", nodes=4)          # with its growth factor
            solve(P, 2.0, "semantic", qmc_config=QMCConfig(points=64, scrambles=2, coarse=0), max_steps=5)
    finally:
        for cached in stored:          # later tests get stored programs again
            cached.cache_clear()
    assert len(rec) > 10
    assert all(set(r[1]) == {"float64"} for r in rec), sorted(set(r[1] for r in rec))



def test_float32_results_agree_with_float64_to_round_off():
    """What the precision is for, on whatever backend runs the tests: the float32 risk, its gradient (the
    hand-written VJP), the baseline fit and the exact test error equal their float64 values to float32
    round-off (measured on the CPU: ≤ 7e-7 of the largest entry). Only rounding the *inputs* to TF32's 10-bit
    mantissa already moves R by 8e-6 and ∇R by 8e-4 (docs/gpu.md), beyond the 5e-6 allowed."""
    from attnphase.finite_d_error import exact_errors, qmc_normals
    k1, k2, k3 = jax.random.split(jax.random.key(7), 3)
    d, n = 300, 600
    Qs = sample_teacher(k1, P, d)
    X, Y = sample_dataset(k2, P, Qs, n)
    p = positional_encodings(P, d)
    Q = 0.7 * Qs + 0.3 * jax.random.normal(k3, Qs.shape)
    u = positional_directions(d, 1)
    xi = qmc_normals(P.L, 3, 256, 2)

    def quantities(Q, Qs, X, Y, p, u):
        R, g = jax.value_and_grad(empirical_risk_from_statistics)(Q, risk_statistics(X, Y, p), P.lam)
        B = fit_linear(X, Y)
        ex = exact_errors(Q, Qs, B, p, u, P.sigma, P.omega, jnp.asarray(P.A_array, Q.dtype), xi.astype(Q.dtype))
        return R, g, B, ex.eps_g, ex.eps_lin

    f32 = quantities(Q, Qs, X, Y, p, u)
    with jax.enable_x64(True):
        f64 = quantities(*(jnp.asarray(a, jnp.float64) for a in (Q, Qs, X, Y, p, u)))
    for name, a, b in zip(("R", "grad R", "B_lin", "eps_g", "eps_lin"), f32, f64):
        a, b = np.asarray(a, np.float64), np.asarray(b)
        assert a.dtype == np.float64 and np.asarray(f32[0]).dtype == np.float32
        scale = np.max(np.abs(b))
        assert np.max(np.abs(a - b)) <= 5e-6 * scale, (name, np.max(np.abs(a - b)) / scale)
