"""Scrambles averaged in one gauge (issue 11, helper hB; MODEL.md §8: ``Q → QO`` maps fixed points to fixed
points): ``state.align_scrambles`` and the engine's ``_collect`` give the same mean, error bars and
significance whatever gauge copy each scramble's fixed point sits on; the error rule watches gauge-invariant
numbers only; at r = 1 scramble sets that agree are left exactly as they were. Plus the fixed-point loop's
count of full evaluations (``fixed_point.FULL_TIER``)."""

from __future__ import annotations

import numpy as np
import pytest

from attnphase.model import ModelParams
from attnphase.theory import engine, fixed_point, resolution
from attnphase.theory.job import Job, collect
from attnphase.theory.restarts import restart_failed
from attnphase.theory.engine import QMCConfig
from attnphase.theory.state import (Hats, OrderParams, align_scrambles, canonical_frame, gauge_rotation, invariants,
                                    rotate, unflatten)
from attnphase.theory.status import Status

S = 4


def _flat(t):
    """numpy flatten of one state (float64 without JAX's x64 switch)."""
    return np.concatenate([np.ravel(b) for b in t])


def _orthogonal(rng, r, reflect=False):
    O = np.linalg.qr(rng.normal(size=(r, r)))[0]
    if reflect != (np.linalg.det(O) < 0):
        O[:, 0] *= -1.0
    return O


def _sym(a):
    return 0.5 * (a + np.swapaxes(a, -1, -2))


def _scrambles(branch, r=2, seed=0, noise=2e-3):
    """S noisy copies (relative noise ``noise``) of a realistic r = 2 state of ``branch`` (the measured ω = 0.3,
    α = 2 magnitudes) and of hats of matching shapes, in the canonical frame; as flattened (S, n) arrays."""
    rng = np.random.default_rng(seed)
    q = np.diag([0.08, 0.02] + [0.01] * (r - 2))
    V = np.diag([13.0, 16.0] + [14.0] * (r - 2))
    th, M = np.zeros((r, 1)), np.zeros((r, 1))
    if branch in ("semantic", "free"):
        th[0, 0] = 0.13
    if branch in ("positional", "free"):
        M[1 if branch == "free" else 0, 0] = 0.21
    base = canonical_frame(OrderParams(q, M, th, V))
    hbase = Hats(1e-4 * np.eye(r), 0.01 * M, 0.02 * th, -0.01 * np.eye(r))
    xs, hs = [], []
    for _ in range(S):
        x = OrderParams(*(b * (1 + noise * rng.normal(size=b.shape)) for b in base))
        h = Hats(*(b * (1 + noise * rng.normal(size=b.shape)) for b in hbase))
        xs.append(OrderParams(_sym(x.q), x.M, x.theta, _sym(x.V)))
        hs.append(Hats(_sym(h.q_hat), h.M_hat, h.theta_hat, _sym(h.V_hat)))
    return (np.stack([_flat(x) for x in xs]), np.stack([_flat(h) for h in hs]))


def _collect(params, branch, xs, hs, coarse=None, k_se=engine.SIGNIFICANCE_K, at_jump=None):
    """The engine's averaging (``job.collect``) on given per-scramble states: a converged Run."""
    run = fixed_point.Run(x=xs, aux={"hats": hs, "eps_g": np.full(S, 1e-3) + 1e-6 * np.arange(S),
                                     "e_t": np.full(S, 3e-3) - 1e-6 * np.arange(S), "max_grad": np.zeros(S)},
                          status=np.array([Status.CONVERGED] * S, dtype=object), iterations=np.full(S, 10),
                          residual=np.full(S, 1e-7), full_calls=np.full(S, 3), at_jump=at_jump)
    return collect(params, 2.0, branch, run, slice(0, S), QMCConfig(points=64, scrambles=S), 16, coarse,
                           k_se)


def _moved(xs, hs, j, O, r=2, k=1, rs=1):
    """Scramble j's state and hats moved along the gauge orbit by O."""
    xs, hs = xs.copy(), hs.copy()
    xs[j] = _flat(rotate(unflatten(xs[j], r, k, rs), O))
    hs[j] = _flat(rotate(unflatten(hs[j], r, k, rs, Hats), O))
    return xs, hs


def _assert_same(a, b):
    assert a.status is b.status
    for u, v in zip((*a.x, *a.hats), (*b.x, *b.hats)):
        np.testing.assert_allclose(u, v, rtol=1e-10, atol=1e-13)
    for key in resolution.WATCHED:
        np.testing.assert_allclose(a.values[key], b.values[key], rtol=1e-12, atol=1e-15)
        np.testing.assert_allclose(a.errors[key], b.errors[key], rtol=1e-9, atol=1e-15)
    assert resolution.worst(resolution.relative_errors(a.values, a.errors)) == pytest.approx(
        resolution.worst(resolution.relative_errors(b.values, b.errors)))


@pytest.mark.parametrize("branch", ["free", "semantic", "positional"])
def test_averaging_is_gauge_invariant(branch):
    """Rotating or reflecting one scramble's converged state (and hats) by an orthogonal O, any scramble, the
    first included: the same mean matrices, the same values and error bars, the same significance. Before the
    alignment a reflected scramble (e.g. −M) pulled the mean matrix towards 0."""
    p = ModelParams(r=2, omega=0.3)
    xs, hs = _scrambles(branch)
    ref = _collect(p, branch, xs, hs)
    assert ref.converged, ref.significance
    rng = np.random.default_rng(7)
    for j in range(S):
        for reflect in (False, True):
            mx, mh = _moved(xs, hs, j, _orthogonal(rng, 2, reflect))
            _assert_same(_collect(p, branch, mx, mh), ref)
    # the signal flipped in two scrambles (M → −M, θ → −θ): still the same point, not "not significant"
    flip = np.diag([-1.0, -1.0])
    mx, mh = _moved(*_moved(xs, hs, 1, flip), 3, flip)
    _assert_same(_collect(p, branch, mx, mh), ref)


def test_a_point_with_a_scramble_accepted_at_a_jump_says_so():
    """Issue 33: a point one of whose scrambles converged at a jump of its map (``fixed_point.iterate``'s
    ``jump_rtol``, a residual up to 2 %) is ``ACCEPTED_AT_JUMP``, not plain ``CONVERGED``: still a result
    (``status.ok``, ``converged``, values kept, the same numbers), but told apart."""
    p = ModelParams(r=2, omega=0.3)
    xs, hs = _scrambles("semantic")
    plain = _collect(p, "semantic", xs, hs, at_jump=np.zeros(S, bool))
    jump = _collect(p, "semantic", xs, hs, at_jump=np.arange(S) == 1)
    assert plain.status is Status.CONVERGED
    assert jump.status is Status.ACCEPTED_AT_JUMP and jump.status.ok and jump.converged
    assert jump.to_dict()["status"] == "accepted_at_jump" and jump.to_dict()["converged"] is True
    assert "2 %" in Status.ACCEPTED_AT_JUMP.message
    for key in resolution.WATCHED:
        assert jump.values[key] == plain.values[key]


def test_aligned_mean_matches_the_state_and_scrambles_that_agree_barely_move():
    """The aligned mean is the state the scrambles are copies of (to their noise), in the canonical frame; a
    scramble set already in one gauge is moved only by the small rotations that fit each copy to the mean."""
    xs, hs = _scrambles("free", noise=1e-3)
    out, _ = align_scrambles(unflatten(xs, 2, 1, 1), unflatten(hs, 2, 1, 1, Hats))
    for a, b in zip(out, unflatten(xs, 2, 1, 1)):
        np.testing.assert_allclose(a, b, atol=1e-2 * np.max(np.abs(b)))
    mean = OrderParams(*(b.mean(axis=0) for b in out))
    for a, b in zip(canonical_frame(mean), mean):
        np.testing.assert_allclose(a, b, atol=1e-12)


@pytest.mark.parametrize("r", [2, 3])
def test_gauge_rotation_recovers_a_rotation(r):
    """gauge_rotation(O·x, x) = Oᵀ where the signal fixes the gauge (r = 2, [θ, M] of rank 2); at r = 3 the
    direction the signal leaves free is matched through q: the rotated state comes back to x."""
    rng = np.random.default_rng(r)
    A = rng.normal(size=(r, r))
    x = OrderParams(A @ A.T / r + 0.1 * np.eye(r), rng.normal(size=(r, 1)), rng.normal(size=(r, 1)),
                    np.diag(np.arange(1.0, r + 1)) + 0.1)
    for reflect in (False, True):
        O = _orthogonal(rng, r, reflect)
        back = rotate(rotate(x, O), gauge_rotation(rotate(x, O), x))
        for a, b in zip(back, x):
            np.testing.assert_allclose(a, b, atol=1e-10)


def test_error_rule_watches_gauge_invariant_numbers_only():
    """Every quantity the error control watches is unchanged by Q → QO (the rest, eps_g and e_t, are not
    matrices); so no gauge copy can make a point grow."""
    rng = np.random.default_rng(11)
    xs, _ = _scrambles("free")
    x = unflatten(xs[0], 2, 1, 1)
    inv = invariants(x)
    moved = invariants(rotate(x, _orthogonal(rng, 2, True)))
    matrix_free = {"eps_g", "e_t"}
    assert set(resolution.WATCHED) - matrix_free <= set(inv)
    for key in set(resolution.WATCHED) - matrix_free:
        np.testing.assert_allclose(moved[key], inv[key], rtol=1e-12)


def test_rank1_scrambles_that_agree_are_left_exactly_as_they_were():
    """r = 1: the gauge is a sign. Scrambles of one sign are not touched (bit for bit: r = 1 results do not
    move); a scramble on −(M, θ) is flipped back in the averages, whichever it is; a majority on the negative
    side keeps it. (The significance test at r = 1 still reads a sign disagreement as an unresolved overlap, as
    before: ``test_engine.test_overlap_significance_rules``; so it is switched off here.)"""
    p = ModelParams(omega=0.3)
    rng = np.random.default_rng(5)
    xs = np.column_stack([0.05 + 1e-4 * rng.normal(size=S), 0.25 + 1e-4 * rng.normal(size=S),
                          np.zeros(S), 11.0 + 1e-2 * rng.normal(size=S)])           # (q, M, θ, V) positional
    hs = xs * 1e-2
    ax, ah = engine.aligned_scrambles(xs, hs, 1, 1, 1)
    assert np.array_equal(ax, xs) and np.array_equal(ah, hs)
    ref = _collect(p, "positional", xs, hs, k_se=0.0)
    flip = np.diag([1.0, -1.0, -1.0, 1.0])
    for j in range(S):
        one = xs.copy()
        one[j] = one[j] @ flip
        two = hs.copy()
        two[j] = two[j] @ flip
        _assert_same(_collect(p, "positional", one, two, k_se=0.0), ref)
    neg = engine.aligned_scrambles(xs @ flip, None, 1, 1, 1)[0]
    assert np.array_equal(neg, xs @ flip)


def test_full_calls_counted_from_the_maps_full_tier():
    """A two-tier map that runs every row through its full tier (as the engine's padded calls do) reports
    it with ``FULL_TIER``; ``Run.full_calls`` then counts every evaluation, not only those asked for."""
    target = np.array([1.0, 2.0])

    def F(X, idx, full, report=True):
        out = {fixed_point.FULL_TIER: np.ones(len(idx), bool)} if report else {}
        return target + 0.5 * (X - target), np.ones(len(idx), bool), out

    res = lambda X, Y: np.linalg.norm(Y - X, axis=1) / np.linalg.norm(X, axis=1)  # noqa: E731
    x0 = np.array([[0.5, 0.5], [3.0, 3.0]])
    run = fixed_point.iterate(F, x0, res, anderson=0, compact=True, full_every=100, max_steps=300)
    assert all(s is Status.CONVERGED for s in run.status)
    np.testing.assert_array_equal(run.full_calls, run.iterations)
    asked = fixed_point.iterate(lambda X, i, f: F(X, i, f, report=False), x0, res, anderson=0, compact=True,
                                full_every=100, max_steps=300)
    assert np.all(asked.full_calls < asked.iterations)      # only the first and the certifying evaluations
    assert np.all(asked.full_calls >= 2)


def test_failed_scramble_restarts_from_its_points_converged_ones():
    """The safeguard's restart (``restarts.restart_failed``): a scramble that failed while the other scrambles of
    its point converged restarts once from their mean, at their damping, and converges; a point whose
    scrambles all failed is left as it was (nothing to start from)."""
    from types import SimpleNamespace
    target = np.array([0.05, 0.25, 0.1, 11.0])             # (q, M, θ, V) at r = 1

    def F(X, idx, full):
        return target + 0.5 * (X - target), np.ones(len(idx), bool), {"hats": X * 1e-2, "e_t": X[:, 0]}

    res = lambda X, Y, rows: np.linalg.norm(Y - X, axis=1) / np.linalg.norm(X, axis=1)  # noqa: E731
    n, S = 4, 2
    x = np.tile(target, (n, 1)) * 1.001
    status = np.array([Status.CONVERGED, Status.INVALID_STATE, Status.MAX_STEPS, Status.INVALID_STATE], object)
    run = fixed_point.Run(x=x.copy(), aux={"hats": x * 1e-2, "e_t": x[:, 0]}, status=status.copy(),
                          iterations=np.full(n, 7), residual=np.array([1e-7, 1.0, 1e-3, 1.0]),
                          history=([[] for _ in range(n)], [[] for _ in range(n)]), full_calls=np.full(n, 2),
                          damping=np.array([0.3, 0.0375, 0.6, 0.0375]), halvings=np.array([1, 4, 0, 4]))
    job = SimpleNamespace(rtol=1e-8, max_steps=200, anderson=0, full_prox_every=16, backtrack=4,
                          jump_rtol=fixed_point.JUMP_RTOL)
    out = restart_failed(run, F, res, None, S, ModelParams(omega=0.3), job)
    assert out.status[1] is Status.CONVERGED and list(out.restarted) == [False, True, False, False]
    assert out.status[2] is Status.MAX_STEPS and out.status[3] is Status.INVALID_STATE      # point 2: none converged
    np.testing.assert_allclose(out.x[1], target, rtol=1e-6)
    assert out.iterations[1] > 7 and out.damping[1] == 0.3


def test_stalled_row_stops_early_only_when_its_group_has_converged():
    """Safeguard (iii): row 0 contracts to its fixed point, row 1 crawls (a constant undamped step: its relative
    residual falls only like 1/steps). With row 0 in its group converged, row 1 stops as soon as that is so
    and it has run 2·STALL_WINDOW evaluations (MAX_STEPS, to be restarted by the engine); in a group of its own, or without the safeguard, it
    runs to max_steps as before."""
    shift = np.array([0.0, 1e-3])

    def F(X):
        out = X + shift
        out[0] = 1.0 + 0.5 * (X[0] - 1.0)
        return out, np.ones(len(X), bool), {}

    res = lambda X, Y: np.linalg.norm(Y - X, axis=1) / np.linalg.norm(X, axis=1)  # noqa: E731
    x0 = np.array([[2.0, 2.0], [1.0, 1.0]])
    kw = dict(anderson=0, damping=0.5, max_steps=120)
    cut = fixed_point.iterate(F, x0, res, backtrack=2, groups=np.array([0, 0]), **kw)
    assert cut.status[0] is Status.CONVERGED and cut.status[1] is Status.MAX_STEPS
    assert cut.iterations[1] == max(2 * fixed_point.STALL_WINDOW, cut.iterations[0]) < 120
    for groups, bt in ((np.array([0, 1]), 2), (np.array([0, 0]), 0)):
        run = fixed_point.iterate(F, x0, res, backtrack=bt, groups=groups, **kw)
        assert run.status[1] is Status.MAX_STEPS and run.iterations[1] == 120


def test_a_larger_size_that_fails_keeps_the_converged_point(monkeypatch):
    """Error control: where the grown size does not converge, the point keeps its last converged size and
    values (``met`` False, ``growth_failed`` True) instead of being reported unconverged with no values."""
    from dataclasses import replace as dc_replace
    real = Job.run
    calls = []

    def failing_growth(self, pts, x0, cfg, stages, *a, **kw):
        sols, xs, hist = real(self, pts, x0, cfg, stages, *a, **kw)
        calls.append(cfg.points * cfg.scrambles)
        if len(calls) > 1:                      # every larger size "fails"
            sols = [dc_replace(s, status=Status.MAX_STEPS) for s in sols]
        return sols, xs, hist

    monkeypatch.setattr(Job, "run", failing_growth)
    cfg = QMCConfig(points=64, scrambles=2, coarse=0, target=2e-2)
    sol = engine.solve(ModelParams(omega=0.3), 2.0, "semantic", qmc_config=cfg)
    assert len(calls) == 2 and sol.converged and (sol.qmc.points, sol.qmc.scrambles) == (64, 2)
    assert np.isfinite(sol.values["q"])
    res = sol.resolution
    assert not res["met"] and len(res["sizes"]) == 1 and res["sizes"][0]["status"] == "converged"
    assert res["growth_failed"]["status"] == "max_steps" and res["growth_failed"]["points"] > 64
