"""Warm starts of the continuation in α (and across ω), on the state (MODEL.md §8: OrderParams of any r, k, r*):
linear extrapolation of the last two valid points, or the previous ω's point plus this ω's change, kept only
where it is an admissible start of the branch (:func:`attnphase.theory.solution.admissible`)."""

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


def predict(branch: str, alpha: float, valid: Sequence, guide: dict | None = None):
    """Warm start at ``alpha`` from the valid points ``valid`` (in the order they were reached) and ``guide``
    (``round(α, 9)`` → valid solution at the previous ω), linear in the state (:class:`OrderParams`). None when
    nothing is known."""
    last = valid[-1] if valid else None
    g = guide.get(round(alpha, 9)) if guide else None
    if g is not None:
        if last is not None:
            gl = guide.get(round(last.alpha, 9))
            if gl is not None:
                xg = state_of(g)
                v = state_vector(xg) + state_vector(state_of(last)) - state_vector(state_of(gl))
                return predicted(v, xg, branch, last.params.sigma, g)
        return g
    if last is None:
        return None
    if len(valid) >= 2 and valid[-2].alpha != last.alpha:
        r = (alpha - last.alpha) / (last.alpha - valid[-2].alpha)
        if abs(r) <= 3.0:
            x1, x0 = state_of(last), state_of(valid[-2])
            v = state_vector(x1) + r * (state_vector(x1) - state_vector(x0))
            return predicted(v, x1, branch, last.params.sigma, last)
    return last
