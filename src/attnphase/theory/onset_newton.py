"""Newton steps for the split-rule solver next to an onset from q = 0 (MODEL.md §6, §7; docs/notes/2026-12-05-theory-general.md,
"Next to an onset: Newton in √q").

Where a branch leaves the q = 0 point (a growth factor of :mod:`.zero_point` crosses 1), the pinned map's
contraction factor along the branch tends to 1 on both sides: just above the onset the iterate falls to q = 0
algebraically slowly (the cubic term of the normal form m' = √γ m − c m³ dominates), just below it it creeps to
a point of small q. The damped/Anderson iteration then ends "not converged" (ω = 0.3, α = 2, positional,
λ = 0.174: q = 1.8e-5 after 2 × 200 steps; the fixed point is q = 0).

Newton on the pinned map converges there in a few steps if it works in ``u = √q`` instead of q: near q = 0 the
map is linear in (√q, m, θ) (q ∝ m², θ² there), so both roots — q = 0 and the small-q branch — are regular
roots in u, while in q Newton overshoots to q < 0. The map is even in u (it sees q only), so a step to u < 0 is
reflected. A step may fall by more than half in u only where the closed-form q = 0 point is stable against
the branch's own directions (:func:`zero_attracts`): there q = 0 is the root the iterate is heading to; where
it is unstable the small-q point is, and a large step towards 0 is an overshoot that would land on the
(unstable, exactly invariant) q = 0 point.
"""

from __future__ import annotations

import math

import numpy as np

from ..model import ModelParams
from .zero_point import zero_point

NEWTON_AFTER = 10
"""Steps of a stage before the crawl test (:func:`crawling`) may switch it to Newton steps."""
CRAWL_WINDOW = 5
"""Steps over which the residual's contraction factor is measured (:func:`crawling`)."""
CRAWL_RATE = 0.8
"""Contraction factor per step above which the iteration crawls (the residual falls by less than ~3× over
``CRAWL_WINDOW`` steps). Measured next to the positional onset (ω = 0.3, α = 2, λ = 0.174): 0.95–0.99."""
NEWTON_Q = 1e-2
"""Newton steps are taken only where q < ``NEWTON_Q``·σ² (next to a q = 0 onset; ordinary points have
q ≳ 0.1 σ² and converge in ~15–30 steps without them)."""
FD_REL = 1e-3
"""Relative size of the forward differences of the Jacobian (the split rule's noise floor, ~3e-7 relative,
enters as ~3e-4)."""
_BRANCH_GROWTHS = {"positional": ("growth_q", "growth_m"), "semantic": ("growth_q", "growth_theta"),
                   "uninformative": ("growth_q",), "free": ("growth_q", "growth_m", "growth_theta")}


def crawling(residuals: list[float], q: float, sigma: float) -> bool:
    """Whether a stage whose residual history is ``residuals`` (newest last) crawls next to q = 0: at least
    :data:`NEWTON_AFTER` steps, contraction factor over the last :data:`CRAWL_WINDOW` above
    :data:`CRAWL_RATE`, and q below :data:`NEWTON_Q`·σ²."""
    if len(residuals) < max(NEWTON_AFTER, CRAWL_WINDOW + 1) or not q < NEWTON_Q * sigma ** 2:
        return False
    old, new = residuals[-1 - CRAWL_WINDOW], residuals[-1]
    return bool(old > 0 and math.isfinite(old) and new > CRAWL_RATE ** CRAWL_WINDOW * old)


def zero_attracts(params: ModelParams, alpha: float, branch: str) -> bool:
    """Whether the closed-form q = 0 point (:func:`.zero_point.zero_point`) exists and its growth factors in
    the directions the pinned ``branch`` iterates in are all below 1 (False where it has no admissible V)."""
    try:
        zp = zero_point(params, alpha)
    except ValueError:
        return False
    return all(getattr(zp, key) < 1.0 for key in _BRANCH_GROWTHS[branch])


def _to_u(x: np.ndarray) -> np.ndarray:
    """(…, n) states with q in component 0 → the same with u = √q there."""
    y = np.array(x, dtype=float)
    y[..., 0] = np.sqrt(np.maximum(np.asarray(x, float)[..., 0], 0.0))
    return y


def _from_u(y: np.ndarray) -> np.ndarray:
    x = np.array(y, dtype=float)
    x[..., 0] = np.asarray(y, float)[..., 0] ** 2
    return x


def newton_candidates(F, X: np.ndarray, FX: np.ndarray, free: np.ndarray, to_zero, v_index: int = 2) -> np.ndarray:
    """One Newton step per row on ``G(u) = U(F(x(u))) − u`` over the ``free`` components, u = x with √q in
    component 0 (module docstring), for a batch of states ``X`` (B, n) with map values ``FX``; ``F`` maps a
    batch (m, n) to its values (m, n) (one call for every row's forward differences, of size :data:`FD_REL`,
    one per free component). ``to_zero`` (one bool or one per row): the step may fall to u = 0 (else u falls
    by at most half). ``v_index``: the component holding V (the step must keep it in (V/2, 2V)). Returns the
    candidates (B, n); a row is NaN where its step is not usable (a failed or non-finite evaluation, a singular
    or non-finite system, V leaving (V/2, 2V)) and at q = 0 itself (there V alone converges fast, and u = 0 is
    the root). The split rule calls it on one row, the QMC engine on its crawling (point, scramble) rows."""
    X, FX = np.atleast_2d(np.asarray(X, float)), np.atleast_2d(np.asarray(FX, float))
    B = X.shape[0]
    zero = np.broadcast_to(np.asarray(to_zero, bool), (B,))
    out = np.full_like(X, np.nan)
    rows = np.nonzero(X[:, 0] > 0)[0]
    if len(rows) < B:                       # q = 0 rows: no step (and no evaluations)
        if len(rows):
            out[rows] = newton_candidates(F, X[rows], FX[rows], free, zero[rows], v_index)
        return out
    idx = np.nonzero(free)[0]
    U = _to_u(X)
    G = (_to_u(FX) - U)[:, idx]
    dU = FD_REL * np.abs(U[:, idx]) + 1e-12                                   # (B, f)
    Up = np.repeat(U[:, None, :], len(idx), axis=1)                           # (B, f, n)
    Up[:, np.arange(len(idx)), idx] += dU
    try:
        Fp = np.asarray(F(_from_u(Up.reshape(-1, X.shape[1]))), float).reshape(Up.shape)
    except FloatingPointError:
        return out
    J = np.swapaxes((_to_u(Fp) - Up)[:, :, idx] - G[:, None, :], 1, 2) / dU[:, None, :]   # (B, f, f): ∂G_a/∂u_b
    for b in range(B):
        if not np.all(np.isfinite(J[b])):
            continue
        try:
            step = np.linalg.solve(J[b], -G[b])
        except np.linalg.LinAlgError:
            continue
        if not np.all(np.isfinite(step)):
            continue
        new = U[b].copy()
        new[idx] += step
        new[0] = abs(new[0]) if zero[b] else max(abs(new[0]), 0.5 * U[b, 0])
        if 0.5 * X[b, v_index] < new[v_index] < 2.0 * X[b, v_index]:
            out[b] = _from_u(new)
    return out


def newton_candidate(F, x: np.ndarray, fx: np.ndarray, free: np.ndarray, to_zero: bool) -> np.ndarray | None:
    """:func:`newton_candidates` for one split-rule state u = (√q, m, V, θ), ``F`` returning ``(F(x), …)``; None
    where the step is not usable."""
    def batch(Xs):
        return np.stack([F(x_)[0] for x_ in Xs])
    cand = newton_candidates(batch, x, fx, free, to_zero)[0]
    return cand if np.all(np.isfinite(cand)) else None
