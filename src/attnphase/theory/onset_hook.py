"""The QMC engine's ``newton`` hook of :func:`.fixed_point.iterate` (MODEL.md §8): Newton steps in √q for the
rows that crawl next to an onset from q = 0 (:func:`onset_hook`), built on the split rule's
:mod:`.onset_newton`."""

from __future__ import annotations

import math

import numpy as np

from .onset_newton import crawling, newton_candidates, zero_attracts
from .qmc_map import PINNED
from .state import OrderParams, shapes, unflatten
from .zero_point import ZERO_Q


ZERO_FLOOR = 1e-2
"""Lowest q a Newton step to q = 0 goes to, in units of ``ZERO_Q·σ²`` (:func:`onset_hook`)."""


def onset_hook(job, pts: np.ndarray, S: int, F, sigma_rows: np.ndarray):
    """The ``newton`` hook of ``fixed_point.iterate`` for one stage of :meth:`Job.run` (r = 1): a (point,
    scramble) row whose residual crawls while q is small (:func:`.onset_newton.crawling`, next to an onset from
    q = 0) gets Newton steps in √q (:func:`.onset_newton.newton_candidates`, the split rule's, on the state
    (q, M, θ, V) with the branch's pinned components fixed), the forward differences of all such rows in one
    batched call of the warm map ``F``; a step may fall to q = 0 only where the closed-form q = 0 point attracts
    the branch (:func:`.onset_newton.zero_attracts`, per point, L·r* ≤ 6; else never more than half of √q).
    Measured at L = 3, λ = 0.106 (1.7 % above the positional onset: 58 steps, was ``max_steps``):
    docs/notes/2026-12-05-theory-general.md, "The engine next to a q = 0 onset"."""
    p = job.params
    n = sum(a * b for a, b in shapes(1, p.k, p.r_star))
    at = OrderParams(*(np.asarray(b).ravel() for b in unflatten(np.arange(n), 1, p.k, p.r_star)))  # positions
    iq, overlaps = int(at.q[0]), np.concatenate([at.M, at.theta])     # q; the blocks that scale like √q
    free = np.ones(n, bool)
    if "M_hat" in PINNED[job.branch]:
        free[at.M] = False
    if "theta_hat" in PINNED[job.branch]:
        free[at.theta] = False
    nfree = int(free.sum())
    total = len(pts) * S
    attracts: dict[int, bool] = {}

    def to_zero(j: int) -> bool:
        if j not in attracts:
            attracts[j] = zero_attracts(job.point_params(int(pts[j])), float(job.al[pts[j]]), job.branch)
        return attracts[j]

    def hook(X, FX, rows, hist):
        cand = np.full_like(X, np.nan)
        floor = ZERO_Q * sigma_rows ** 2
        sel = np.array([i for i in np.nonzero(rows)[0] if X[i, iq] >= floor[i]
                        and crawling(list(hist[i][np.isfinite(hist[i])]), float(X[i, iq]), float(sigma_rows[i]))], int)
        if not len(sel):
            return cand
        rep = np.repeat(sel, nfree)

        def batch(Xs):
            out = []
            for lo in range(0, len(Xs), total):
                hi = min(lo + total, len(Xs))
                fx, ok, _ = F(Xs[lo:hi], rep[lo:hi], np.zeros(hi - lo, bool))
                out.append(np.where(np.asarray(ok)[:, None], fx, np.nan))
            return np.concatenate(out)

        cand[sel] = newton_candidates(batch, X[sel], FX[sel], free, [to_zero(i // S) for i in sel],
                                      v_index=int(at.V[0]))
        # a step to q = 0 stops at ZERO_FLOOR·ZERO_Q σ² (the overlaps scaled with √q): from there the plain
        # iteration settles at its round-off floor (q ~ 1e-15), which zero_q_record reports as the q = 0 point;
        # a Newton step below it lands where the relative residual of M, θ is round-off and never converges
        low = np.nonzero(np.isfinite(cand[:, iq]) & (cand[:, iq] < ZERO_FLOOR * floor))[0]
        for i in low:
            q_new = ZERO_FLOOR * floor[i]
            cand[i, overlaps] = X[i, overlaps] * math.sqrt(q_new / X[i, iq])
            cand[i, iq] = q_new
        return cand

    return hook
