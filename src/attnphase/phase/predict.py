"""Warm starts of the continuation in α (and across ω), on the state (MODEL.md §8: OrderParams of any r, k, r*):
linear extrapolation of the last two valid points, or the previous ω's point plus this ω's change (extrapolated
in α), kept only where it is an admissible start of the branch (:func:`attnphase.theory.solution.admissible`)."""

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
    the difference extrapolated in α (quadratic through three points, else linear) from the last valid points
    where the guide has them (:func:`guided`). Without: the line through the last two valid points
    (:func:`extrapolated`). On a trace of the 40 × 40 diagram (docs/notes/2026-12-06-diagram-levers.md) the
    guided median start error fell from 2.4e-3 to 6.9e-5. Without a guide the quadratic through three points is
    NOT used: near a branch that collapses as θ ∝ √(α − α_0) it overshot, and the semantic branch followed down
    at σ = 0.7, ω = 0.3 stopped at a false fold (0.6504, `ended`) above its collapse (0.6409, a continuous
    onset; tests/test_phase_continuation.py)."""
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
    """``g(α) + d(α)`` with ``d(p) = x(p) − g(p.α)`` this ω's difference to the previous one, extrapolated in α
    (:func:`lagrange`) from the last valid points where the guide has them (up to three, consecutive from the
    last); a single one: ``d`` kept constant."""
    pts = []
    for p in reversed(list(valid[-3:])):
        gp = guide.get(round(p.alpha, 9))
        if gp is None or any(p.alpha == a for a, _ in pts):
            break
        pts.append((p.alpha, state_vector(state_of(p)) - state_vector(state_of(gp))))
    pts.reverse()
    d = lagrange(alpha, pts) if len(pts) >= 2 else None
    return state_vector(state_of(guide[round(alpha, 9)])) + (pts[-1][1] if d is None else d)


def extrapolated(alpha: float, valid: Sequence) -> np.ndarray | None:
    """The line in α through the last two valid points' states (:func:`lagrange`); None where it does not
    apply."""
    return lagrange(alpha, [(p.alpha, state_vector(state_of(p))) for p in valid[-2:]])


def lagrange(alpha: float, pts: Sequence) -> np.ndarray | None:
    """The polynomial through ``(α_i, v_i)`` (two or three points, the last nearest ``alpha``) at ``alpha``;
    None with fewer than two points, a repeated last α, or a step beyond :data:`MAX_RATIO` times the last
    spacing."""
    if len(pts) < 2 or pts[-2][0] == pts[-1][0]:
        return None
    if abs(alpha - pts[-1][0]) > MAX_RATIO * abs(pts[-1][0] - pts[-2][0]):
        return None
    xs = [a for a, _ in pts]
    v = 0.0
    for i, (xi, vi) in enumerate(pts):
        w = 1.0
        for j, a in enumerate(xs):
            if j != i:
                w *= (alpha - a) / (xi - a)
        v = v + w * vi
    return v
