"""Is a pinned branch's defining overlap really non-zero (MODEL.md §8)? The scrambles' significance, agreement
and resolution trend (:func:`overlap_significance`; a point that fails is ``Status.NOT_SIGNIFICANT``)."""

from __future__ import annotations

import math

import numpy as np

from .scrambles import aligned_scrambles
from .state import unflatten


SIGNIFICANCE_K = 3.0
"""Default of ``solve_batch(significance=…)``: a pinned branch's defining overlap within this many standard
errors (over the scrambles) of zero is not significantly non-zero (``Status.NOT_SIGNIFICANT``)."""


SPREAD_LIMIT = 0.25
"""Largest relative spread over the scrambles, ``std_s(Z)/‖Z̄‖_F``, of a pinned branch's defining overlap that
counts as resolved (equivalently ``t ≥ √S / SPREAD_LIMIT``). Measured: genuine branch points 0.02–0.03 (L = 2
positional, ω = 0.3, 256–1024 points); the collapsed positional branch at ω = 0.1, α = 2: 0.34–0.66."""


RESOLUTION_SHRINK = 0.5
"""A defining overlap that falls below this fraction of its coarse-stage value when the QMC points are refined
is not a fixed point of the N → ∞ map (``Status.NOT_SIGNIFICANT``; measured: genuine branch points move by
the coarse integration error, ~1e-2 relative; the collapsed positional branch at ω = 0.1, α = 2 falls to 0.3
of it from 1024 to 4096 points, docs/notes/2026-12-05-theory-general.md)."""


DEFINING = {"positional": "M", "semantic": "theta"}
"""The overlap that defines a pinned branch (the other one is pinned to zero)."""


def overlap_significance(branch: str, xs: np.ndarray, xs_coarse: np.ndarray | None, r: int, k: int, rs: int,
                         k_se: float = SIGNIFICANCE_K) -> dict | None:
    """Is the pinned branch's defining overlap Z (M on the positional branch, θ on the semantic one) really
    non-zero? ``xs``: the converged per-scramble states (S, n) (r > 1: all in the canonical gauge, so their
    matrices are comparable); ``xs_coarse``: the same rows converged on the coarse stage's points, or None.
    Three tests, any one makes the point ``NOT_SIGNIFICANT``:

    - scramble significance: ``t = ‖Z̄‖_F / ‖se(Z)‖_F < k_se`` (mean and element-wise standard error over the
      independent scrambles; r = k = 1: |m̄|/s.e.);
    - scramble agreement: the relative spread ``√S / t`` (std over scrambles / ‖Z̄‖) above ``SPREAD_LIMIT``:
      the scrambles do not agree on the overlap's size (with S = 2–4 scrambles the s.e. itself is too
      uncertain for a t of 3 to mean much);
    - resolution trend (where a coarse stage converged on every scramble): ``‖Z̄‖_F < RESOLUTION_SHRINK ×
      ‖Z̄_coarse‖_F``. Needed because a collapsed branch's artefact need not change sign between scrambles:
      at positional ω = 0.1, α = 2 every scramble's discretised map has its own small m > 0 (1024 × 4:
      0.037, 0.062, 0.014, 0.018, t = 3.0), and m shrinks as the points are refined.

    ``per_scramble``: each scramble's ‖Z_s‖_F (in the reason of a point that fails: which scrambles found a
    large overlap and which one near 0). Returns None for branches without a defining overlap (uninformative,
    free) or ``k_se = 0``."""
    name = DEFINING.get(branch)
    if name is None or k_se <= 0:
        return None
    S = xs.shape[0]
    if r > 1:    # one gauge (a scramble on a rotated or reflected copy is the same point); at r = 1 a sign
        xs = aligned_scrambles(xs, None, r, k, rs)[0]    # disagreement stays evidence of an unresolved overlap

    Z = np.asarray(getattr(unflatten(xs, r, k, rs), name))                      # (S, a, b)
    value = float(np.linalg.norm(Z.mean(axis=0)))
    se = float(np.linalg.norm(Z.std(axis=0, ddof=1) / math.sqrt(S)))
    t = value / se if se > 0 else (math.inf if value > 0 else 0.0)
    out = {"overlap": "m" if name == "M" else "theta", "value": value, "se": se, "t": t, "k": k_se,
           "coarse_value": None, "shrink": None, "shrink_limit": RESOLUTION_SHRINK, "reason": None}
    out["spread"] = math.sqrt(S) / t if t > 0 else math.inf
    out["spread_limit"] = SPREAD_LIMIT
    if t < k_se:
        out["reason"] = f"|{out['overlap']}| = {value:.3g} is within {k_se:g} s.e. ({se:.2g}) of 0"
    elif out["spread"] > SPREAD_LIMIT:
        out["reason"] = (f"the scrambles disagree on |{out['overlap']}| = {value:.3g} by {out['spread']:.0%} "
                         f"(limit {SPREAD_LIMIT:.0%})")
    if xs_coarse is not None:
        if r > 1:
            xs_coarse = aligned_scrambles(xs_coarse, None, r, k, rs)[0]
        vc = float(np.linalg.norm(np.asarray(getattr(unflatten(xs_coarse, r, k, rs), name)).mean(axis=0)))
        out["coarse_value"] = vc
        out["shrink"] = value / vc if vc > 0 else math.inf
        if out["reason"] is None and value < RESOLUTION_SHRINK * vc:
            out["reason"] = (f"|{out['overlap']}| falls from {vc:.3g} (coarse points) to {value:.3g}: "
                             "it shrinks with the QMC size")
    out["per_scramble"] = [float(v) for v in np.linalg.norm(Z.reshape(S, -1), axis=1)]
    if out["reason"] is not None:      # which scrambles found what (e.g. L = 4 positional: some on a large
        out["reason"] += " (per scramble ‖{}‖ = {})".format(   # overlap, some near 0; docs/notes/2026-12-05-theory-general.md)
            out["overlap"], ", ".join(f"{v:.3g}" for v in out["per_scramble"]))
    out["significant"] = out["reason"] is None
    return out
