"""Accuracy of the general JAX engine's numerics (issue 11): closed-form prox derivatives, the prox against the
numpy prox of MODEL.md §6 at the positional fixed point, short scouts against long ones, the coarse-to-fine
stages, and the QMC engine against the split rule over ω (slow)."""

from __future__ import annotations

from dataclasses import replace

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from attnphase.errors import ParameterError
from attnphase.model import ModelParams
from attnphase.theory import channel_general as CG
from attnphase.theory import prox as NP
from attnphase.theory import prox_general as PG
from attnphase.theory import qmc
from attnphase.theory.engine import QMCConfig, bucket, default_init, solve, solve_batch
from attnphase.theory.solver import solve_point
from attnphase.theory.state import OrderParams

L3 = ModelParams(L=3, A=((0.6, 0.2, 0.2), (0.2, 0.6, 0.2), (0.2, 0.2, 0.6)))


@pytest.mark.parametrize("L,r", [(2, 1), (3, 1), (2, 2), (3, 2)])
def test_closed_form_derivatives_equal_autodiff(L, r):
    rng = np.random.default_rng(10 * L + r)
    h, w, T, B = rng.normal(size=(L, r)), rng.normal(size=(L, r)), rng.dirichlet(np.ones(L), size=L), \
        rng.normal(size=(r, r))
    with jax.enable_x64(True):
        h, w, T, Vi = (jnp.asarray(a) for a in (h, w, T, B @ B.T + 0.5 * np.eye(r)))
        F, g, H = PG.derivatives(h, w, T, Vi, 0.3)
        f = lambda v: PG.objective(v.reshape(L, r), w, T, Vi, 0.3)  # noqa: E731
        v = h.ravel()
        np.testing.assert_allclose(F, f(v), rtol=1e-13)
        np.testing.assert_allclose(np.ravel(g), jax.grad(f)(v), atol=1e-13)
        np.testing.assert_allclose(np.reshape(H, (L * r, L * r)), jax.hessian(f)(v), atol=1e-12)


@pytest.mark.parametrize("L,r", [(3, 1), (2, 2)])
def test_dg_domega_from_the_prox_hessian_equals_the_implicit_function_form(L, r):
    """``dg_domega`` (Σ_l ∂g_l/∂ω_l from the Moreau Hessian H the prox returns, via H⁻¹'s diagonal blocks)
    equals ``K((K + ∇²ℓ)⁻¹K − I)`` summed over the diagonal blocks, ∇²ℓ by autodiff, K = I_L ⊗ V⁻¹."""
    rng = np.random.default_rng(7 * L + r)
    h, w, T, B = rng.normal(size=(L, r)), rng.normal(size=(L, r)), rng.dirichlet(np.ones(L), size=L), \
        rng.normal(size=(r, r))
    with jax.enable_x64(True):
        h, w, T, Vi = (jnp.asarray(a) for a in (h, w, T, B @ B.T + 0.5 * np.eye(r)))
        hess = PG.moreau_terms(PG.split(h), PG.split(w), PG.split(T), PG.split(Vi), 0.3)[2]
        got = CG.dg_domega(hess, Vi)
        Hl = jax.hessian(lambda v: PG.loss(v.reshape(L, r), T, 0.3))(h.ravel())
        K = jnp.kron(jnp.eye(L), Vi)
        dg = K @ (jnp.linalg.solve(K + Hl, K) - jnp.eye(L * r))
        ref = sum(dg[l * r:(l + 1) * r, l * r:(l + 1) * r] for l in range(L))
    np.testing.assert_allclose(np.asarray(got), np.asarray(ref), rtol=1e-10, atol=1e-12)


def _prox_inputs(p: ModelParams, x: OrderParams, n: int, seed: int):
    L = p.L
    Z = qmc.normal_points(2 * L, n, seed)
    xi, y = jnp.asarray(Z[:, :L].reshape(n, L, 1)), jnp.asarray(Z[:, L:].reshape(n, L, 1))
    w, hs, _ = CG.fields(x, p.sigma, xi, y, np.asarray(p.P))
    T = jax.vmap(PG.teacher, in_axes=(0, None, None))(hs, p.omega, np.asarray(p.A))
    return w, hs, T


def _jax_prox(p, x, w, hs, T):
    f = jax.jit(jax.vmap(PG.prox, in_axes=(0, 0, 0, None, None, None)))
    return f(w, hs, T, x.V, p.sigma ** 2, PG.start_offsets(p.L, p.r))


def test_jax_prox_equals_numpy_prox_at_the_positional_fixed_point():
    """The positional deviation of the QMC engine is not a missed basin: at the split rule's positional fixed
    point, on QMC points, the JAX prox and the numpy prox of §6 (its own starts: ω, −ω, exchange, best of a
    9 × 9 grid) find the same minimum values."""
    p = ModelParams(omega=0.3)
    ref = solve_point(p, 2.0, "positional", nodes=4, stability=False)
    with jax.enable_x64(True):
        x = OrderParams(*(jnp.full((1, 1), v) for v in (ref.q, ref.m, 0.0, ref.V)))
        w, hs, T = _prox_inputs(p, x, 2048, 3)
        _, F, gn = _jax_prox(p, x, w, hs, T)
        t1, t2 = (np.asarray(T[:, i, i]) for i in range(2))
        *_, M, gnp = NP.prox(np.asarray(w[:, 0, 0]), np.asarray(w[:, 1, 0]), t1, t2, ref.V, p.sigma ** 2)
    assert np.max(np.asarray(gn)) < 1e-8 and np.max(gnp) < 1e-8
    np.testing.assert_allclose(np.asarray(F), M, rtol=0, atol=1e-12)


@pytest.mark.parametrize("p,branch", [(ModelParams(), "positional"), (L3, "semantic")])
def test_short_scouts_pick_the_same_global_minimum_as_long_ones(p, branch, monkeypatch):
    """SCOUT_STEPS Newton steps per start rank the basins as well as 8 do (on 512 QMC problems)."""
    with jax.enable_x64(True):
        x = OrderParams(*(jnp.asarray(b) for b in default_init(p, branch)))
        w, hs, T = _prox_inputs(p, x, 512, 5)
        _, F_short, _ = _jax_prox(p, x, w, hs, T)
        monkeypatch.setattr(PG, "SCOUT_STEPS", 8)
        _, F_long, _ = _jax_prox(p, x, w, hs, T)
    assert PG.SCOUT_STEPS == 8 and np.max(np.asarray(F_short) - np.asarray(F_long)) < 1e-12


def test_coarse_stage_does_not_change_the_fixed_point():
    """Coarse-to-fine ends on the same fixed point as the full-size iteration alone (the final stage is the
    full map, converged to rtol), and the provenance records the stage."""
    p = ModelParams(omega=0.3)
    a = solve(p, 2.0, "semantic", qmc_config=QMCConfig(points=1024, scrambles=2, coarse=256), rtol=1e-7)
    b = solve(p, 2.0, "semantic", qmc_config=QMCConfig(points=1024, scrambles=2, coarse=0), rtol=1e-7)
    assert a.converged and b.converged
    for k in ("q", "theta", "V", "e_t"):
        np.testing.assert_allclose(a.values[k], b.values[k], rtol=1e-5)
    prov = a.to_dict()["provenance"]
    assert prov["coarse_points"] == 256 and prov["newton"]["scout"] == PG.SCOUT_STEPS


def test_compacted_batch_equals_separate_solves():
    """A batch of 12 rows (6 points × 2 scrambles) whose points converge at different iterations: the compacted
    map (rows drop out, buckets of 8) gives each point what its own solve gives, status included."""
    p = ModelParams(omega=0.3)
    cfg = QMCConfig(points=256, scrambles=2)
    alphas = [0.9, 1.2, 1.6, 2.0, 2.5, 3.0]
    batch = solve_batch(p, alphas, "semantic", qmc_config=cfg, max_steps=60)
    assert len({b.iterations for b in batch}) > 1           # the rows really leave at different times
    for a, b in zip(alphas, batch):
        s = solve(p, a, "semantic", qmc_config=cfg, max_steps=60)
        assert s.status is b.status and s.iterations == b.iterations
        for k in ("q", "theta", "V", "e_t"):       # round-off of differently shaped vmaps, iterated: ~1e-9
            np.testing.assert_allclose(b.values[k], s.values[k], rtol=1e-7)
    assert bucket(3, 12) == 8 and bucket(9, 12) == 12 and bucket(9, 40) == 16 and bucket(1, 4) == 4


def test_coarse_stage_bad_input():
    with pytest.raises(ParameterError, match="coarse"):
        QMCConfig(coarse=1000)
    assert QMCConfig(points=512).stages == (512,) and QMCConfig().stages == (1024, 4096)


# --- error-controlled QMC size (issue 11, accuracy): engine._refine, theory.resolution ---------------------

def test_grown_size_rule():
    """The work grows by the power of two covering MARGIN · (rse/target)², scrambles first, then points; None
    at the caps."""
    from attnphase.theory.resolution import MARGIN, grown_size
    assert grown_size(4096, 4, 1.1) == (4096, 8)                 # 1.45 → ×2
    assert grown_size(4096, 4, 4.8) == (65536, 8)                # 27.6 → ×32
    assert grown_size(4096, 8, 2.0) == (32768, 8)                # 4.8 → ×8, all in points
    assert grown_size(32768, 8, 3.0) == (65536, 8)               # capped at max_points
    assert grown_size(65536, 8, 5.0) is None
    assert grown_size(128, 2, 1.0 / MARGIN ** 0.5, max_points=256, max_scrambles=4) == (128, 4)   # at least ×2
    assert QMCConfig().target == 0 and QMCConfig.default().target > 0
    assert QMCConfig(points=512, scrambles=2, target=1e-3).grown(1.1) == QMCConfig(
        points=512, scrambles=4, target=1e-3, coarse=0)
    with pytest.raises(ParameterError, match="max_points"):
        QMCConfig(max_points=1000)
    with pytest.raises(ParameterError, match="target"):
        QMCConfig(target=-1.0)


def test_error_control_continues_to_the_fixed_point_of_the_larger_size():
    """A point above the target is continued on more scrambles and points (nested) up to the caps; the point
    it ends on is the fixed point a cold solve at that size finds (same deterministic maps), the record says
    which sizes ran and whether the target was met; a point below its target is left as it is."""
    p = ModelParams(omega=0.3)
    small = QMCConfig(points=128, scrambles=2, coarse=0, max_points=256, max_scrambles=4)
    grown = solve(p, 2.0, "semantic", qmc_config=replace(small, target=1e-4), rtol=1e-7)
    res = grown.resolution
    assert grown.converged and [(e["points"], e["scrambles"]) for e in res["sizes"]] == [(128, 2), (256, 4)]
    assert res["capped"] and not res["met"] and res["sizes"][-1]["rse"] > 1e-4
    assert (grown.qmc.points, grown.qmc.scrambles) == (256, 4)
    assert grown.to_dict()["provenance"]["resolution"]["sizes"][0]["points"] == 128
    cold = solve(p, 2.0, "semantic", qmc_config=QMCConfig(points=256, scrambles=4, coarse=0), rtol=1e-7)
    assert cold.resolution is None
    for k in ("q", "theta", "V", "eps_g", "e_t"):
        np.testing.assert_allclose(grown.values[k], cold.values[k], rtol=2e-5)
        np.testing.assert_allclose(grown.errors[k], cold.errors[k], rtol=2e-2)
    loose = solve(p, 2.0, "semantic", qmc_config=replace(small, target=0.5), rtol=1e-7)
    assert loose.resolution["met"] and not loose.resolution["capped"] and len(loose.resolution["sizes"]) == 1
    assert (loose.qmc.points, loose.qmc.scrambles) == (128, 2)


# --- warm prox starts (issue 11, speed): the warm map, the certification, the creeping iterate -------------

ALT_A = ((0.3, 0.7), (0.8, 0.2))


def _path_maps(p, branch, steps, points=256):
    """Along the engine's own damped iteration from the default start (2 scrambles), yield per step: the
    state's previous minimiser pairs, the cold map and the warm map (warm-started from the previous state's
    pairs) at the new state, and the new cold pairs."""
    from attnphase.theory.qmc_map import compiled_map, qmc_points
    from attnphase.theory.state import flatten
    cfg = QMCConfig(points=points, scrambles=2, coarse=0)
    with jax.enable_x64(True):
        xi, y = (jnp.asarray(a) for a in qmc_points(p, cfg))
        full, warm = (compiled_map(p.L, p.r, p.r_star, p.k, p.A, p.P, branch, w) for w in (False, True))
        X = np.repeat(np.asarray(flatten(OrderParams(*(np.asarray(b, float)
                                                       for b in default_init(p, branch)))))[None], 2, 0)
        knobs = CG.Knobs(*(jnp.full(2, v) for v in (2.0, p.omega, p.sigma, p.lam)))
        s = jnp.arange(2)
        fx, _, _, h = full(jnp.asarray(X), knobs, s, xi, y, None)
        for _ in range(steps):
            X = X + 0.6 * (np.asarray(fx) - X)
            cold = full(jnp.asarray(X), knobs, s, xi, y, None)
            hot = warm(jnp.asarray(X), knobs, s, xi, y, h)
            yield np.asarray(h), cold, hot
            fx, h = cold[0], cold[3]


@pytest.mark.parametrize("p,branch", [
    *[(ModelParams(omega=o), b) for o in (0.1, 0.3, 0.5) for b in ("semantic", "positional")],
    pytest.param(ModelParams(omega=0.3, A=ALT_A), "semantic", marks=pytest.mark.slow),
    pytest.param(ModelParams(omega=0.3, A=ALT_A), "positional", marks=[pytest.mark.slow, pytest.mark.xfail(
        strict=True, reason="measured: a jump to a third basin on the 2nd step from the default start (map "
                            "differs by 1e-2); the certification by the full map is the guarantee there")]),
    pytest.param(L3.replace(omega=0.3), "semantic", marks=pytest.mark.slow),
    pytest.param(ModelParams(r=2, omega=0.3), "free", marks=pytest.mark.slow)])
def test_warm_map_equals_cold_map_where_the_global_basin_switches(p, branch):
    """On the first two steps of the iteration (where the state moves most), some samples' global minimum
    jumps to another basin (at positional ω = 0.1: to the mirror image, asserted); the warm map (Newton from
    the previous best and runner-up/mirror) still equals the cold multi-start map to 1e-10 (relative, every
    block), minimisers and min values included. (Farther from the fixed point a jump to a third basin can
    happen; then the engine's certification by the full map, tested below, is the guarantee.)"""
    from attnphase.theory.state import block_residual, shapes
    switched = 0
    for h_prev, cold, hot in _path_maps(p, branch, 2):
        hc, hw = np.asarray(cold[3]), np.asarray(hot[3])
        best = hc[:, :, 0]
        jump = np.linalg.norm((best - h_prev[:, :, 0]).reshape(*best.shape[:2], -1), axis=-1)
        switched += int(np.sum(jump > 0.5 * np.linalg.norm(h_prev[:, :, 0].reshape(*best.shape[:2], -1), axis=-1)))
        rel = block_residual(np.asarray(cold[0]), np.asarray(hot[0]), shapes(p.r, p.k, p.r_star), p.sigma)
        tol = 1e-10 if p.r == 1 else 3e-10         # r = 2: round-off of the gauge fixing, measured 1.3e-10
        assert np.max(rel) < tol, (np.max(rel), branch)
        np.testing.assert_allclose(hw[:, :, 0], best, rtol=0, atol=1e-9)
        np.testing.assert_allclose(np.asarray(hot[2]["EM"]), np.asarray(cold[2]["EM"]), rtol=1e-10)
    if (p.omega, branch) == (0.1, "positional"):
        assert switched > 0, "no basin switch exercised"


def test_warm_scheme_solve_equals_full_prox_solve():
    """The default scheme (warm prox, full every 4th evaluation and at certification) ends on the same fixed
    point as a full multi-start prox at every evaluation: within 1e-4 relative (both converge to rtol 1e-6
    on the same deterministic map) and far inside the QMC error bars."""
    p = ModelParams(omega=0.3)
    kw = dict(qmc_config=QMCConfig(points=256, scrambles=2), rtol=1e-6)
    for branch in ("semantic", "positional"):
        a = solve(p, 2.0, branch, full_prox_every=4, **kw)
        b = solve(p, 2.0, branch, full_prox_every=1, **kw)
        assert a.converged and b.converged and 1 <= a.full_prox_calls < a.iterations
        assert b.full_prox_calls == b.iterations
        for k in ("q", "m", "theta", "V", "e_t"):
            assert abs(a.values[k] - b.values[k]) <= 1e-4 * abs(b.values[k]) + 1e-12
            assert abs(a.values[k] - b.values[k]) <= 0.1 * b.errors[k] + 1e-12
        assert a.to_dict()["provenance"]["newton"]["full_prox_every"] == 4


def test_two_tier_iteration_converges_only_on_the_full_map():
    """A cheap tier that is wrong (a shifted fixed point) never certifies: the loop ends on the FULL map's
    fixed point (after a failed certification the row takes the full tier only), counting full evaluations; a slowly contracting iterate is not reported converged when
    its residual first drops below rtol, only once the estimated remaining distance is below rtol too."""
    from attnphase.theory import fixed_point
    from attnphase.theory.status import Status

    def F(X, idx, full):
        return 0.5 * X + np.where(full[:, None], 1.0, 1.1), np.ones(len(idx), bool), {}

    res = lambda X, Y: np.max(np.abs(Y - X) / np.abs(X), axis=1)  # noqa: E731
    run = fixed_point.iterate(F, np.zeros((3, 2)) + 5.0, res, rtol=1e-8, max_steps=100, compact=True,
                              full_every=4)
    assert all(s is Status.CONVERGED for s in run.status)
    np.testing.assert_allclose(run.x, 2.0, rtol=1e-7)
    assert np.all(run.full_calls >= 2) and np.all(run.full_calls < run.iterations)   # the cheap tier was used
    np.testing.assert_allclose(run.residual, 0.0, atol=1e-8)
    # a slow contraction (ρ = 0.97): the residual falls below rtol while the iterate is still ~30 rtol away
    lin = lambda rho: lambda X: (1.0 + rho * (X - 1.0), np.ones(len(X), bool), {})  # noqa: E731
    kw = dict(rtol=1e-6, max_steps=120, anderson=0)
    slow = fixed_point.iterate(lin(0.97), np.ones((1, 1)) + 1e-4, res, **kw)
    assert slow.status[0] is Status.MAX_STEPS and slow.residual[0] < 1e-6 and abs(slow.x[0, 0] - 1) > 1e-6
    fast = fixed_point.iterate(lin(0.3), np.ones((1, 1)) + 1e-4, res, **kw)
    assert fast.status[0] is Status.CONVERGED and abs(fast.x[0, 0] - 1) < 1e-6
