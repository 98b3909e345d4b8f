"""The faster split-rule map (issue 9, speed): the compiled Newton kernel against the numpy reference, the fast
(warm-started) map against the full global search, and solves with the fast map against full solves."""

from __future__ import annotations

import numpy as np
import pytest

from attnphase.errors import ParameterError
from attnphase.model import ModelParams
from attnphase.theory import prox as P
from attnphase.theory.channel import channel, split_map
from attnphase.theory.solver import solve_point
from attnphase.theory.split_integrator import IDX, SplitMap, iterate_split
from attnphase.theory.status import Status
from attnphase.theory.switching import SplitRule

RULE = SplitRule.of(4)
HATS = ("q_hat", "m_hat", "V_hat", "theta_hat", "EM")


def _rel(a, b) -> float:
    return max(abs(getattr(a, f) - getattr(b, f)) / (abs(getattr(b, f)) + 1e-12) for f in HATS)


def test_compiled_newton_equals_numpy_reference():
    """Same algorithm, two kernels: the minimisers agree far below the prox tolerance (Hessian >= 0.1/V)."""
    rng = np.random.default_rng(3)
    n = 600
    w1, w2 = rng.normal(0, 0.4, n), rng.normal(0, 0.4, n)
    t1, t2 = rng.uniform(0.2, 0.95, n), rng.uniform(0.2, 0.95, n)
    h1, h2 = w1 + rng.normal(0, 0.1, n), w2 + rng.normal(0, 0.1, n)
    out = {}
    for k in P.NEWTON_KERNELS:
        with P.newton_kernel(k):
            out[k] = P.newton(h1, h2, w1, w2, t1, t2, 11.0, 0.25, 60, 1e-11)
    (a1, a2, Fa, ga), (b1, b2, Fb, gb) = out["xla"], out["numpy"]
    ok = (ga < 1e-9) & (gb < 1e-9)
    assert ok.mean() > 0.95
    assert np.max(np.hypot(a1 - b1, a2 - b2)[ok]) < 1e-7
    assert np.max(np.abs(Fa - Fb)[ok]) < 1e-12
    assert np.all(a1.flags.writeable)


def test_kernels_give_the_same_map():
    """The numpy split map (the reference path, where the Newton kernel is chosen per batch) with either kernel."""
    p = ModelParams(omega=0.2)
    res = {}
    for k in P.NEWTON_KERNELS:
        with P.newton_kernel(k), split_map("numpy"):
            res[k] = channel(p, 1.5, 0.06, 0.24, 11.0, 0.0, RULE)
    assert _rel(res["xla"], res["numpy"]) < 1e-6


def test_unknown_kernel_is_a_clear_error():
    with pytest.raises(ParameterError, match="newton kernel"):
        with P.newton_kernel("fortran"):
            pass


@pytest.mark.parametrize("params,alpha,x", [
    (ModelParams(), 2.0, (0.05, 0.26, 11.0, 0.0)),                  # positional, ω = 0.3
    (ModelParams(), 1.25, (0.114, 0.0, 12.3, 0.159)),               # semantic near α_c(0.3)
    (ModelParams(omega=0.02), 1.0, (0.08, 0.2, 10.0, 0.0)),
    (ModelParams(omega=0.5), 1.5, (0.1, 0.0, 12.0, 0.1)),
    (ModelParams(A=[[0.3, 0.7], [0.8, 0.2]]), 1.5, (0.08, 0.0, 12.0, 0.12)),
    (ModelParams(sigma=0.7), 1.5, (0.2, 0.3, 6.0, 0.0)),
    (ModelParams(lam=0.001), 1.5, (0.1, 0.0, 15.0, 0.12)),
])
def test_fast_map_matches_global_map_after_a_step(params, alpha, x):
    """The fast map, warm-started from the map at x, evaluated one iteration-sized step away (1 % in every
    order parameter) against the full global search there. They agree at the map's own noise floor (~3e-7,
    solver docstring: switch flags and near-flat minima), not to round-off — hence the global confirmation
    in ``split_integrator.iterate_split``."""
    x = np.array(x)
    c0 = channel(params, alpha, *x, RULE)
    x1 = x * 1.01
    full = channel(params, alpha, *x1, RULE)
    fast = channel(params, alpha, *x1, RULE, warm=c0.h, global_search=False)
    assert _rel(fast, full) < 2e-6


def test_fast_solve_equals_full_solve():
    p = ModelParams(omega=0.25)
    kw = dict(nodes=4, stability=False)
    full = solve_point(p, 1.6, "positional", fast=False, **kw)
    fast = solve_point(p, 1.6, "positional", **kw)
    assert full.converged and fast.converged and fast.fast_map and not full.fast_map
    for f in ("q", "m", "V", "e_t", "eps_g"):
        assert abs(getattr(fast, f) - getattr(full, f)) <= 3e-5 * abs(getattr(full, f)), f


def test_a_missed_basin_cannot_end_a_solve(monkeypatch):
    """A fast map that is wrong (a basin the warm starts missed, simulated: its m̂ 2 % off, far above rtol)
    may converge, but only a global evaluation can end the solve: the fixed point is the global map's."""
    import attnphase.theory.split_integrator as S
    p, a = ModelParams(omega=0.3), 1.5
    x0 = np.zeros(len(IDX))
    x0[[IDX["q"], IDX["M"], IDX["V"]]] = 0.05, 0.25, 11.0
    ref = iterate_split(SplitMap(p, a, "positional", RULE), x0.copy(), 1e-5, 200, 0.6, 4)
    xr, conv_r = ref.x[0], ref.status[0] is Status.CONVERGED
    real = S.channel

    def missing_a_basin(*args, global_search=True, **kw):
        out = real(*args, global_search=global_search, **kw)
        if not global_search:
            out.m_hat *= 1.02
        return out

    monkeypatch.setattr(S, "channel", missing_a_basin)
    F = SplitMap(p, a, "positional", RULE, fast=True)
    run = iterate_split(F, x0.copy(), 1e-5, 200, 0.6, 4)
    x, conv = run.x[0], run.status[0] is Status.CONVERGED
    assert conv_r and conv and F.last_global and F.global_evals >= 3
    assert run.full_calls[0] == F.global_evals        # two missed certifications: global from then on
    assert np.max(np.abs(x - xr) / np.abs(xr).clip(1e-9)) < 1e-4
