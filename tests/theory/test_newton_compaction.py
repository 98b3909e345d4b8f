"""The compacted Newton loop of :mod:`attnphase.theory.newton_xla` (``COMPACT``: the slow elements gathered into
smaller buffers as soon as they fit) against the same loop without compaction: element by element the same
iterations, so the same bits — for the loop alone and for whole split-map evaluations
(docs/notes/2026-12-06-diagram-evaluation.md)."""

from __future__ import annotations

from functools import partial

import jax
import numpy as np
import pytest

from attnphase.model import ModelParams
from attnphase.theory import newton_xla, split_xla
from attnphase.theory.channel import channel
from attnphase.theory.switching import SplitRule

RULE = SplitRule.of(4)
HATS = ("q_hat", "m_hat", "V_hat", "theta_hat", "EM", "max_grad")


def _batch(n: int, seed: int):
    """Prox problems whose Newton iteration counts spread: most starts near their minimiser, 6 % far."""
    rng = np.random.default_rng(seed)
    w1, w2 = rng.normal(0, 0.4, n), rng.normal(0, 0.4, n)
    t1, t2 = rng.uniform(0.2, 0.95, n), rng.uniform(0.2, 0.95, n)
    far = rng.random(n) < 0.06
    spread = np.where(far, rng.uniform(1.0, 6.0, n), 0.02)
    h1, h2 = w1 + spread * rng.normal(size=n), w2 + spread * rng.normal(size=n)
    return h1, h2, w1, w2, t1, t2


def _solve(levels, args, V, active=None, iters=40):
    h1 = args[0]
    act = np.ones(h1.shape, bool) if active is None else active
    with jax.enable_x64(True):
        fn = jax.jit(partial(newton_xla.solve, iters=iters, gtol=1e-11, levels=levels))
        return [np.asarray(o) for o in fn(*args, act, V, 0.25)]


@pytest.mark.parametrize("per_element_V", [False, True])
def test_compacted_newton_is_bitwise_the_uncompacted_one(per_element_V):
    """4096 problems (scalar V, or one V per element as in a batch of cells), some inactive from the start: the
    default two-level compaction, a deeper one and none give the same minimisers, values and gradients to the
    last bit; the iteration counts spread far enough that both levels run with elements still active."""
    n = 4096
    args = _batch(n, 5)
    V = np.random.default_rng(6).uniform(5.0, 15.0, n) if per_element_V else np.float64(11.0)
    active = np.random.default_rng(7).random(n) > 0.02
    ref = _solve((), args, V, active)
    assert np.max(ref[3][active]) < 1e-8          # converged (to the round-off of F)
    for levels in (newton_xla.COMPACT, (8, 8, 8), (2,)):
        out = _solve(levels, args, V, active)
        for a, b in zip(out, ref):
            assert np.array_equal(a, b), levels
    # an iteration cap that stops the slow elements (7): the compacted ones stop at the same iteration
    capped = _solve((), args, V, active, iters=7)
    assert np.sum(capped[3] >= 1e-8) > 0
    for a, b in zip(_solve(newton_xla.COMPACT, args, V, active, iters=7), capped):
        assert np.array_equal(a, b)
    # the inactive elements stayed where they started
    assert np.array_equal(ref[0][~active], args[0][~active])
    # the spread that makes compaction matter: after 4 iterations more than 1/8 of the batch is still active
    # (the old fixed schedule then iterated the whole batch), and some elements need > 10 iterations
    with jax.enable_x64(True):
        fn = jax.jit(partial(newton_xla.solve, iters=4, gtol=1e-11, levels=()))
        g4 = np.asarray(fn(*args, active, V, 0.25)[3])
        fn = jax.jit(partial(newton_xla.solve, iters=10, gtol=1e-11, levels=()))
        g10 = np.asarray(fn(*args, active, V, 0.25)[3])
    assert np.sum(active & (g4 >= 1e-11)) > n // 64
    assert np.sum(active & (g10 >= 1e-11)) > 0


def _plain(G, gl, bisect, K, zmax):
    """The map's program traced afresh (not the stored one, whose key does not see ``COMPACT``)."""
    return jax.jit(partial(split_xla._program, G=G, gl=gl, bisect=bisect, K=K, zmax=zmax))


@pytest.mark.slow           # two compilations of the whole map program per point (≈ 50 s under load)
@pytest.mark.parametrize("params, alpha, x", [
    (ModelParams(), 1.5, (0.42, 0.0, 9.0, 0.55)),                              # semantic-like, defaults
    (ModelParams(), 0.75, (0.05, 0.26, 11.0, 0.0)),                           # positional-like, defaults
    (ModelParams(sigma=0.7, lam=0.001, omega=0.05), 1.0, (0.6, 0.0, 3.0, 0.5)),
])
def test_map_evaluation_is_bitwise_the_same_with_and_without_compaction(monkeypatch, params, alpha, x):
    """A global and a fast (warm) split-map evaluation: every hat, E[M] and the largest prox gradient equal
    to the last bit with the default compaction and with none."""
    monkeypatch.setattr(split_xla, "_compiled", _plain)
    out = {}
    for name, levels in (("none", ()), ("default", newton_xla.COMPACT)):
        monkeypatch.setattr(split_xla, "COMPACT", levels)
        g = channel(params, alpha, *x, RULE)
        xs = (x[0] * 1.01, x[1] * 1.01, x[2] * 0.99, x[3] * 1.02)
        f = channel(params, alpha, *xs, RULE, warm=g.h, global_search=False)
        out[name] = [getattr(r, k) for r in (g, f) for k in HATS]
    assert out["default"] == out["none"]
