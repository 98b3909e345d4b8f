"""What kind of fixed point a solve found — semantic, positional, mixed or uninformative — by which overlaps it
has (MODEL.md §6 "Branches"): :func:`fixed_point_kind` by size alone, :func:`free_point_kind` for a free solve on
QMC points, where an overlap at the noise floor of the points does not count (MODEL.md §8).

A free (unpinned) solve on QMC points does not keep the pinned subspaces M = 0, θ = 0: each scramble's map
pushes a small overlap of its own, so a free iterate next to the semantic or uninformative point carries an m
at the noise floor of the points. Measured at L = 3, A = 0.4 I + 0.2 J, ω = 0.3, α = 0.25 (256 × 4 points):
the free solve from the uninformative point ends at m = 0.014 (per scramble ‖M_s‖ = 0.019, 0.014, 0.0055,
0.018) and θ = 0.027 (θ_s = 0.011, 0.020, −0.039, 0.040), e_t equal to the uninformative point's — by size a
"mixed" point, which the survey took for the global minimum (a false fold α_c = 0.275 ± 0.025,
docs/guides/transitions-any-model.md). The rules are the free verdict's (:mod:`attnphase.theory.free_verdict`),
on per-scramble norms, without its pinned solve:

- an overlap is *at the noise floor* where every scramble's is within reach of its pinned subspace (rule 1:
  ``REACH`` stability steps) and the scrambles do not resolve it (rule 5a, 5b: it shrinks with the QMC size, t
  below ``SIGNIFICANCE_K`` or relative spread above ``SPREAD_LIMIT``, theory/significance.py);
- an overlap is *significant* where the scrambles resolve it (rule 5a, 5b).

A "mixed" point whose m is at the noise floor is semantic if θ is significant, else uninformative; one whose θ
is at the noise floor is positional if m is significant, else uninformative. An overlap the scrambles do not
resolve but that some scramble holds far from 0 is not noise (the scrambles found different fixed points: r = 2,
ω = 0.3, α = 2 at 128 × 2, ‖M_s‖ = 0.22 and 0.015): such a point stays mixed.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ..theory.free_verdict import REACH, Evidence, scramble_invariants, unresolved, within_reach
from ..theory.growth import STABILITY_EPS, step
from ..theory.significance import SIGNIFICANCE_K
from ..theory.status import Status

MIXED_TOL = 1e-3
"""A fixed point is *mixed* when both |m| and |θ| exceed ``MIXED_TOL·σ√q``."""

PINS = {"m": "semantic", "theta": "positional"}
"""Overlap → the pinned branch whose subspace sets it to 0 (the ``branch`` of a free verdict's evidence)."""


def kind_of(has_m: bool, has_theta: bool) -> str:
    """The kind of a fixed point with (``has_m``) or without a positional overlap and with or without a
    semantic one (MODEL.md §6 "Branches")."""
    return ("mixed" if has_m and has_theta else "semantic" if has_theta else "positional" if has_m
            else "uninformative")


def above_tol(sol, sigma: float) -> dict[str, bool]:
    """Which overlaps (m, θ) of ``sol`` exceed ``MIXED_TOL·σ√q``."""
    scale = MIXED_TOL * sigma * math.sqrt(max(float(sol.q), 0.0))
    return {"m": abs(float(sol.m)) > scale, "theta": abs(float(sol.theta)) > scale}


def fixed_point_kind(sol, sigma: float) -> str:
    """``semantic`` / ``positional`` / ``mixed`` / ``uninformative`` by which overlaps exceed
    ``MIXED_TOL·σ√q`` (MODEL.md §6 "Branches")."""
    has = above_tol(sol, sigma)
    return kind_of(has["m"], has["theta"])


@dataclass(frozen=True)
class FreeKind:
    """The kind of a free solve's fixed point: ``kind`` (by size and significance), ``by_size`` (by size alone,
    :func:`fixed_point_kind`) and, where they differ, ``note``: which overlap the scrambles do not resolve."""

    kind: str
    by_size: str
    note: str = ""

    @property
    def reclassified(self) -> bool:
        return self.kind != self.by_size


@dataclass(frozen=True)
class ScrambleOverlaps:
    """Per-scramble ‖M_s‖, ‖θ_s‖ of a QMC solution (``z``, gauge invariants), at its coarse stage's points
    (``z_coarse``, None without a coarse stage), and the stability step δ_s (``delta``, the free verdict's unit of
    reach)."""

    z: dict[str, np.ndarray]
    z_coarse: dict[str, np.ndarray] | None
    delta: np.ndarray


def scramble_overlaps(sol) -> ScrambleOverlaps | None:
    """:class:`ScrambleOverlaps` of ``sol``; None without per-scramble states (the split rule, a stand-in, one
    scramble)."""
    raw = getattr(sol, "raw", None)
    xs = getattr(raw, "scramble_x", None)
    if xs is None:
        return None
    xs = np.asarray(xs, float)
    if xs.ndim != 2 or xs.shape[0] < 2 or not np.all(np.isfinite(xs)):
        return None
    p = sol.params
    xc = getattr(raw, "coarse_scramble_x", None)
    coarse = None
    if xc is not None and np.all(np.isfinite(np.asarray(xc, float))):
        coarse = scramble_invariants(np.asarray(xc, float), p.r, p.k, p.r_star)
    return ScrambleOverlaps(scramble_invariants(xs, p.r, p.k, p.r_star), coarse, step(xs, p.r, STABILITY_EPS))


def overlap_resolved(z: np.ndarray, z_coarse: np.ndarray | None, name: str,
                     k_se: float = SIGNIFICANCE_K) -> tuple[bool, str | None]:
    """Is the overlap ``name`` (m or θ), per scramble ``z``, resolved by the scrambles (the free verdict's rule 5a,
    5b, :func:`~attnphase.theory.free_verdict.unresolved`)? Returns (resolved?, why not)."""
    ev = Evidence(PINS[name], np.asarray(z, float), np.full(np.shape(z), np.nan), Status.CONVERGED,
                  z_coarse=None if z_coarse is None else np.asarray(z_coarse, float))
    bad, why = unresolved(ev, k_se)
    return not bad, why


def _sym(name: str) -> str:
    return "θ" if name == "theta" else name


def free_point_kind(sol, sigma: float, k_se: float = SIGNIFICANCE_K) -> FreeKind:
    """The kind of a free solve's fixed point ``sol`` (module docstring): by size (:func:`fixed_point_kind`),
    and a "mixed" one whose m or θ is at the noise floor of the QMC points is the pinned point seen through the
    noise — semantic, positional or uninformative, never a distinct competitor. Without per-scramble states
    (the split rule) the kind by size stands."""
    by_size = fixed_point_kind(sol, sigma)
    per = scramble_overlaps(sol) if by_size == "mixed" else None
    if per is None:
        return FreeKind(by_size, by_size)
    test = {n: overlap_resolved(per.z[n], None if per.z_coarse is None else per.z_coarse[n], n, k_se)
            for n in ("m", "theta")}
    floor = {n: not test[n][0] and within_reach(per.z[n], per.delta) for n in ("m", "theta")}
    if not (floor["m"] or floor["theta"]):
        return FreeKind(by_size, by_size)
    kind = kind_of(test["m"][0] and not floor["m"], test["theta"][0] and not floor["theta"])
    vals = ", ".join(f"{_sym(n)} = {abs(float(getattr(sol, n))):.3g}" for n in ("m", "theta"))
    why = "; ".join(f"{_sym(n)} at the noise floor: {test[n][1]}, every scramble within {REACH:g} stability "
                    f"steps of {_sym(n)} = 0" if floor[n] else f"{_sym(n)} not significant: {test[n][1]}"
                    for n in ("m", "theta") if not test[n][0])
    return FreeKind(kind, by_size, f"{by_size} → {kind} ({vals}; {why})")
