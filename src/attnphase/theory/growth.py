"""The growth factor of a pinned direction (MODEL.md §7): finite-difference primitives on flattened states
(:func:`block_slice`, :func:`step`, :func:`perturbed`, :func:`jacobian`, :func:`leading`) and the verdict on
a growth factor ± its error (:class:`Stability`, :func:`verdict`). Shared by the pinned-stability verdict
(:mod:`.stability_general`), the collapse rules (:mod:`.collapse`) and the free verdict."""

from __future__ import annotations

import math
from enum import Enum

import numpy as np

from ..errors import ParameterError
from .state import shapes


STABILITY_EPS = 0.1
"""Relative step of the central difference (``δ = eps·√(tr q / r)``). The discretised map is piecewise smooth:
a sample whose global minimiser switches basin between x − δE and x + δE adds a jump, and only such samples
carry the motion of the switching set, which the true map's derivative contains (the split rule integrates it
exactly). Too small a δ sees few of them on a QMC set: a noisy factor, or one that misses that part altogether
(a bias the scrambles' spread does not show); too large a δ adds the O(δ²) curvature. Measured at 4096 × 4
points (docs/notes/2026-12-05-theory-general.md, "Stability of pinned branches in the engine"), eps = 0.01, 0.03, 0.1, 0.2:
L = 2 positional, ω = 0.3, α = 2 (split rule 0.475): 0.442, 0.442, 0.460, — (± 0.009; at 16384 × 4: 0.477 ±
0.011, 0.483 ± 0.008, 0.493 ± 0.005 for 0.01, 0.03, 0.1); the M block at the uninformative point, ω = 0.3,
α = 1 (split 2.29): 3.07 ± 0.41, 2.40 ± 0.35, 2.23 ± 0.13, 2.13 ± 0.04; semantic α = 1 (split −0.13): −0.27 ±
0.02, −0.09 ± 0.04, −0.135 ± 0.044, −0.15 ± 0.03; the θ block at the uninformative point, α = 2 (split 1.705):
1.654 ± 0.060, 1.677 ± 0.056, 1.662 ± 0.024, 1.484 ± 0.008 (0.2: the curvature shows)."""
STABLE_K = 3.0
"""A growth factor counts as decided when it is more than this many standard errors (over the scrambles) from
+1 (:func:`verdict`)."""
SHRINK = (1.0, 0.1, 0.01)
"""Step factors tried in turn for a scramble whose perturbed states the map rejects (q, V or D = λ + σ²V̂ not
positive definite, or not finite), as the split rule's ``split_integrator.growth``; after the last, NaN."""
PINNED_BLOCKS = {"semantic": ("M",), "positional": ("theta",), "uninformative": ("M", "theta")}
"""The pinned blocks of each branch (MODEL.md §8); ``free`` has none."""


class Stability(str, Enum):
    """Verdict on a pinned branch point (:func:`verdict`)."""

    STABLE = "stable"          # growth below +1 by more than STABLE_K s.e.: a minimum along the pinned block
    UNSTABLE = "unstable"      # above +1 by more than STABLE_K s.e.: a saddle of the free problem
    UNDECIDED = "undecided"    # within STABLE_K s.e. of +1 (near a spinodal, or too few scrambles)
    UNKNOWN = "unknown"        # no number: not converged, or the finite difference failed

    @property
    def stable(self) -> bool | None:
        """True, False, or None where undecided or unknown (the JSON key ``stable``)."""
        return {Stability.STABLE: True, Stability.UNSTABLE: False}.get(self)


def pinned_blocks(branch: str) -> tuple[str, ...]:
    """Names of the pinned blocks (``"M"``, ``"theta"``) of a pinned branch; ParameterError for ``free`` (no
    pinned direction: nothing to test) or an unknown name."""
    if branch not in PINNED_BLOCKS:
        raise ParameterError("branch", "a pinned branch (semantic, positional or uninformative): the free "
                             "branch has no pinned direction", branch)
    return PINNED_BLOCKS[branch]


def block_slice(name: str, r: int, k: int, rs: int) -> slice:
    """Position of block ``name`` in the flattened state (:func:`state.flatten` order q, M, θ, V)."""
    sizes = {f: a * b for f, (a, b) in zip(shapes(r, k, rs)._fields, shapes(r, k, rs))}
    start = 0
    for f in ("q", "M", "theta", "V"):
        if f == name:
            return slice(start, start + sizes[f])
        start += sizes[f]
    raise ParameterError("block", "q, M, theta or V", name)


def step(xs: np.ndarray, r: int, eps: float) -> np.ndarray:
    """The finite-difference step per scramble, ``eps·√(tr q / r)`` (xs: flattened states (S, n))."""
    trq = np.trace(xs[:, :r * r].reshape(-1, r, r), axis1=1, axis2=2)
    return eps * np.sqrt(np.maximum(trq / r, 1e-24))


def perturbed(xs: np.ndarray, sl: slice, delta: np.ndarray) -> np.ndarray:
    """States ``x_s ± δ_s E_j`` for every entry j of the block at ``sl``: shape (S, 2, nb, n), [:, 0] the plus
    side."""
    S, n = xs.shape
    nb = sl.stop - sl.start
    E = np.zeros((nb, n))
    E[np.arange(nb), np.arange(sl.start, sl.stop)] = 1.0
    d = delta[:, None, None, None] * np.array([1.0, -1.0])[None, :, None, None] * E[None, None]
    return xs[:, None, None, :] + d


def jacobian(f: np.ndarray, sl: slice, delta: np.ndarray) -> np.ndarray:
    """J_pp per scramble (S, nb, nb), column j = (F_p(x + δE_j) − F_p(x − δE_j)) / 2δ, from the map values
    ``f`` (S, 2, nb, n) at :func:`perturbed`'s states."""
    fp = f[..., sl]                                             # (S, 2, nb_in, nb_out)
    return np.swapaxes(fp[:, 0] - fp[:, 1], 1, 2) / (2.0 * delta[:, None, None])


def leading(J: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per scramble: the leading eigenvalue's real part (the growth factor, MODEL.md §7) and the spectral
    radius; NaN where J is not finite."""
    ok = np.all(np.isfinite(J), axis=(1, 2))
    ev = np.linalg.eigvals(np.where(ok[:, None, None], J, 0.0))
    g = np.where(ok, ev.real.max(axis=1), np.nan)
    rad = np.where(ok, np.abs(ev).max(axis=1), np.nan)
    return g, rad


def verdict(growth: float, err: float, k_se: float = STABLE_K) -> tuple[Stability, str | None]:
    """The verdict on a growth factor ``growth`` ± ``err`` and its reason (None when decided)."""
    if not (math.isfinite(growth) and math.isfinite(err)):
        return Stability.UNKNOWN, "the growth factor is not finite (finite difference failed)"
    if growth + k_se * err < 1.0:
        return Stability.STABLE, None
    if growth - k_se * err > 1.0:
        return Stability.UNSTABLE, None
    return Stability.UNDECIDED, (f"growth {growth:.3g} is within {k_se:g} s.e. ({err:.2g}) of +1")


def unknown(reason: str, k_se: float = STABLE_K, eps: float = STABILITY_EPS) -> dict:
    """The record of a point without a growth factor (never a silent NaN: ``reason`` says why)."""
    nan = float("nan")
    return {"growth": nan, "growth_err": nan, "spectral_radius": nan, "spectral_radius_err": nan,
            "stable": None, "verdict": Stability.UNKNOWN.value, "reason": reason, "k": k_se, "eps": eps,
            "blocks": {}, "per_scramble": [], "delta": [], "evaluations": 0}
