"""Warm starts of the continuation in α (and across ω), on the state (MODEL.md §8: OrderParams of any r, k, r*):
extrapolation of the last valid points (quadratic through three), or the previous ω's point plus this ω's change
(extrapolated linearly in α), kept only where it is an admissible start of the branch (:func:`attnphase.theory.solution.admissible`)."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Sequence

import numpy as np

from ..theory.solution import admissible, state_from_vector, state_of, state_vector
from ..theory.state import OrderParams


def start_from(x: OrderParams, branch: str):
    """A warm start carrying the state ``x`` (any solver reads ``.x``; a scalar stand-in reads q, m, V, θ: the
    traces and, at r = k = r* = 1, the signed overlaps)."""
    q, M, th, V = (np.asarray(b, float) for b in x)
    scal = M.size == 1 and th.size == 1
    return SimpleNamespace(x=x, q=float(np.trace(q)), V=float(np.trace(V)), branch=branch,
                           m=float(M.item()) if scal else float(np.linalg.norm(M)),
                           theta=float(th.item()) if scal else float(np.linalg.norm(th)))


def predicted(v: np.ndarray, like, branch: str, sigma: float, fallback):
    """The start at the flat state ``v`` (blocks shaped like the state ``like``; :func:`state_vector`) if it is
    admissible for ``branch`` (:func:`attnphase.theory.solution.admissible`), else ``fallback``."""
    x = admissible(state_from_vector(v, like), branch, sigma)
    return fallback if x is None else start_from(x, branch)


def interpolate(s0, s1, t: float, branch: str, sigma: float, fallback):
    """The start ``(1 − t)·s0 + t·s1`` on the states (an extrapolation for t outside [0, 1]); ``fallback`` where
    it is not admissible."""
    x0, x1 = state_of(s0), state_of(s1)
    return predicted((1 - t) * state_vector(x0) + t * state_vector(x1), x0, branch, sigma, fallback)


MAX_RATIO = 3.0
"""A predictor extrapolates over at most ``MAX_RATIO`` times the spacing of the points it is built on."""


def predict(branch: str, alpha: float, valid: Sequence, guide: dict | None = None):
    """Warm start at ``alpha`` from the valid points ``valid`` (in the order they were reached) and ``guide``
    (``round(α, 9)`` → valid solution at the previous ω), on the state (:class:`OrderParams`). None when
    nothing is known.

    With a guide at ``alpha`` and at the last valid α: the previous ω's point plus this ω's difference to it,
    the difference extrapolated linearly in α from the last two valid points where the guide has both
    (:func:`guided`). Without: the quadratic through the last three valid points (:func:`extrapolated`), else
    the line through the last two. On a trace of the 40 × 40 diagram (docs/benchmarks.md) the median start
    error fell from 2.4e-3 to 2.7e-4 (guided) and from 6.5e-3 to 1.1e-3 (without a guide)."""
    last = valid[-1] if valid else None
    g = guide.get(round(alpha, 9)) if guide else None
    if g is not None:
        if last is not None and guide.get(round(last.alpha, 9)) is not None:
            return predicted(guided(alpha, valid, guide), state_of(g), branch, last.params.sigma, g)
        return g
    if last is None:
        return None
    v = extrapolated(alpha, valid)
    return last if v is None else predicted(v, state_of(last), branch, last.params.sigma, last)


def guided(alpha: float, valid: Sequence, guide: dict) -> np.ndarray:
    """``g(α) + d(last) + r·(d(last) − d(prev))`` with ``d(p) = x(p) − g(p.α)`` the difference to the previous
    ω and ``r`` the step ratio; without the guide at the previous valid α (or beyond :data:`MAX_RATIO`), the
    difference is kept constant."""
    last = valid[-1]
    d = state_vector(state_of(last)) - state_vector(state_of(guide[round(last.alpha, 9)]))
    v = state_vector(state_of(guide[round(alpha, 9)])) + d
    prev = valid[-2] if len(valid) >= 2 else None
    gp = guide.get(round(prev.alpha, 9)) if prev is not None else None
    if gp is not None and prev.alpha != last.alpha:
        r = (alpha - last.alpha) / (last.alpha - prev.alpha)
        if abs(r) <= MAX_RATIO:
            v = v + r * (d - (state_vector(state_of(prev)) - state_vector(state_of(gp))))
    return v


def extrapolated(alpha: float, valid: Sequence) -> np.ndarray | None:
    """Lagrange extrapolation in α of the last three valid points (two where only two, or where the three α's
    are not distinct); None when the step exceeds :data:`MAX_RATIO` times the last spacing."""
    pts = list(valid[-3:])
    if len(pts) < 2 or pts[-2].alpha == pts[-1].alpha:
        return None
    if abs(alpha - pts[-1].alpha) > MAX_RATIO * abs(pts[-1].alpha - pts[-2].alpha):
        return None
    if len(pts) == 3 and len({p.alpha for p in pts}) < 3:
        pts = pts[1:]
    xs = [p.alpha for p in pts]
    v = 0.0
    for i, p in enumerate(pts):
        w = 1.0
        for j, a in enumerate(xs):
            if j != i:
                w *= (alpha - a) / (xs[i] - a)
        v = v + w * state_vector(state_of(p))
    return v
