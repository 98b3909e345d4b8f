"""The one fixed-point loop's options for the split rule (issue 29; ``fixed_point.iterate``): certification of a
cheap map at the same iterate, a second residual from the map's auxiliary output, a projection after each step,
an Anderson step guard. Toy maps with known fixed points."""

from __future__ import annotations

import numpy as np

from attnphase.theory import fixed_point as FP
from attnphase.theory.status import Status


def _two_tier(bias: float, calls: list):
    """x ↦ 0.5 x + 1 (fixed point 2) on the full tier; the cheap tier is off by ``bias`` (a missed basin)."""
    def F(X, idx, full):
        calls.append(np.array(full, bool))
        FX = 0.5 * X + 1.0 + np.where(np.asarray(full)[:, None], 0.0, bias)
        return FX, np.ones(len(X), bool), {"h": FX.copy(), FP.FULL_TIER: np.array(full, bool)}
    return F


def _res(X, Y):
    return np.max(np.abs(X - Y) / np.maximum(np.abs(X), 1e-12), axis=1)


def test_certification_at_the_same_iterate_ends_on_the_full_map():
    calls: list = []
    run = FP.iterate(_two_tier(1e-2, calls), np.array([[0.5, 3.0]]), _res, rtol=1e-8, max_steps=200, damping=0.6,
                     anderson=0, compact=True, full_every=10_000, certify_same=True, miss_limit=2, creep=False)
    assert run.status[0] is Status.CONVERGED
    assert np.allclose(run.x[0], 2.0, rtol=1e-7)               # the full map's fixed point, not the cheap one's
    assert calls[0].all() and run.full_calls[0] >= 3            # first evaluation, two failed certifications, …
    # without certification the cheap map's fixed point (2 + 2·bias) is returned
    plain = FP.iterate(_two_tier(1e-2, []), np.array([[0.5, 3.0]]), _res, rtol=1e-8, max_steps=200,
                       damping=0.6, anderson=0, compact=True, full_every=10_000, certify=False, creep=False)
    assert np.allclose(plain.x[0], 2.02, rtol=1e-6)


def test_aux_residual_keeps_a_row_from_converging_on_its_first_evaluation():
    def F(X):
        return X.copy(), np.ones(len(X), bool), {"h": X.copy()}
    x0 = np.array([[2.0, 1.0]])
    plain = FP.iterate(F, x0, _res, rtol=1e-6, creep=False)
    both = FP.iterate(F, x0, _res, rtol=1e-6, creep=False,
                      aux_residual=lambda aux, prev: _res(prev["h"], aux["h"]))
    assert plain.iterations[0] == 1 and both.iterations[0] == 2 and both.status[0] is Status.CONVERGED


def test_projection_and_step_guard():
    def F(X):
        return np.stack([0.5 * X[:, 0] + 1.0, 0.9 * X[:, 1]], axis=1), np.ones(len(X), bool), {}
    seen = []

    def guard(cand, x, row):
        seen.append(row)
        return False                      # every Anderson candidate refused: the damped step
    run = FP.iterate(F, np.array([[1.0, 0.3]]), _res, rtol=1e-9, max_steps=500, damping=0.5, anderson=3,
                     project=lambda X, rows: np.where(np.arange(2) == 1, 0.0, X), step_guard=guard, creep=False)
    assert run.status[0] is Status.CONVERGED and run.x[0, 1] == 0.0 and abs(run.x[0, 0] - 2.0) < 1e-8
    assert seen and set(seen) == {0}
