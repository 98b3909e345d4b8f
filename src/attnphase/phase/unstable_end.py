"""Locating an ``unstable`` end of a followed branch (MODEL.md §7): where the growth factor of the pinned
direction crosses +1 between the last valid point and the nearest saddle (used by :mod:`.continuation`).

The crossing is the linear interpolation of the factor in the bracket; it is refined by regula-falsi solves
only while the bracket is wider than ``xtol`` and the interpolation's own error — its distance to the root of
the quadratic through the bracket's two factors and the nearest third one — is above a quarter of ``xtol``. (On
the 40 × 40 diagram's 12 ends of one chain slice the linear estimate in a bracket of 0.0125 was within 2.2e-4
of the refined one: docs/benchmarks.md.)"""

from __future__ import annotations

import math
from typing import Any, Sequence

import numpy as np

from ..theory.stepping import Bracket
from .predict import predict

CROSSING_SOLVES = 2
"""At most this many extra solves locate an ``unstable`` end (regula falsi on the growth factor,
:func:`locate_crossing`) once it is bracketed to ``min_step``."""

CURVE_SPAN = 4.0
"""The third factor of :func:`crossing_error` lies within ``CURVE_SPAN`` bracket widths of the bracket."""

ERROR_SHARE = 0.25
"""The linear crossing is kept without solves where :func:`crossing_error` is below ``ERROR_SHARE·xtol`` (the
quadratic's own error: on a factor exp(200 (α_u − α)), far more curved than the diagram's, it sees 6.5e-4 of a
3.1e-3 error; on the diagram's ends it reads ≤ 1e-4 where the refined crossing moved by ≤ 2.2e-4)."""


def _factor(p) -> float | None:
    s = getattr(p, "stability", None)
    return float(s) if s is not None and math.isfinite(s) else None


def stability_crossing(a_ok, a_bad) -> float:
    """Linear crossing of +1 by the growth factor between a valid point and a saddle (the bracket's midpoint
    where the factors do not bracket +1)."""
    s0, s1 = _factor(a_ok), _factor(a_bad)
    if s0 is not None and s1 is not None and s0 <= 1.0 < s1:
        return float(a_ok.alpha + (1.0 - s0) * (a_bad.alpha - a_ok.alpha) / (s1 - s0))
    return Bracket(a_ok.alpha, a_bad.alpha).mid()


def crossing_error(lo, hi, points: Sequence) -> float:
    """Error estimate of :func:`stability_crossing` in ``[lo, hi]``: its distance to the root in the bracket of
    the quadratic through the factors of ``lo``, ``hi`` and the point of ``points`` (valid points and saddles)
    nearest the bracket, within :data:`CURVE_SPAN` bracket widths of it. ``inf`` where there is no such point
    or root."""
    s0, s1 = _factor(lo), _factor(hi)
    width = abs(hi.alpha - lo.alpha)
    if s0 is None or s1 is None or not s0 <= 1.0 < s1 or width == 0:
        return math.inf
    mid = 0.5 * (lo.alpha + hi.alpha)
    near = [p for p in points if p.alpha not in (lo.alpha, hi.alpha) and _factor(p) is not None
            and p.state.exists and abs(p.alpha - mid) <= (0.5 + CURVE_SPAN) * width]
    if not near:
        return math.inf
    third = min(near, key=lambda p: abs(p.alpha - mid))
    x = np.array([third.alpha, lo.alpha, hi.alpha]) - lo.alpha
    y = np.array([_factor(third), s0, s1]) - 1.0
    roots = np.roots(np.polyfit(x, y, 2))
    a, b = sorted((0.0, hi.alpha - lo.alpha))
    inside = [float(r.real) for r in roots if abs(r.imag) < 1e-12 and a <= r.real <= b]
    if not inside:
        return math.inf
    est = stability_crossing(lo, hi) - lo.alpha
    return min(abs(r - est) for r in inside)


def beyond(p, last, target: float) -> bool:
    """``p`` lies past the last valid point, on the way to ``target``."""
    return (p.alpha - last.alpha) * (target - last.alpha) > 0


def first_saddle(saddles: Sequence, last, target: float):
    """The saddle nearest the last valid point whose growth factor is not above that of any saddle farther
    away. Near an instability the factor grows monotonically away from the valid side; a nearer saddle with a
    larger factor is a glitch of the finite-difference factor (measured: 6.45 at ω = 0.377, α = 0.975 between
    0.93 at α = 0.981 and 1.20 at α = 0.95, while a re-solve there gave 0.98) and does not bracket the
    crossing."""
    have = sorted((p for p in saddles if beyond(p, last, target)), key=lambda p: abs(p.alpha - last.alpha))
    for i, p in enumerate(have):
        far = [x.stability for x in have[i + 1:] if x.stability is not None and math.isfinite(x.stability)]
        if p.stability is None or not math.isfinite(p.stability) or not far or p.stability <= min(far):
            return p
    return None


def locate_crossing(run, branch: str, valid: list, hi, extra: list, xtol: float,
                    saddles: Sequence = ()) -> tuple[Any, Any, float]:
    """Where the growth factor crosses +1 between the last valid point and the saddle ``hi``: linear
    interpolation, refined by at most :data:`CROSSING_SOLVES` regula-falsi solves (each at the estimate, kept
    inside the inner 80 % of the bracket) while the bracket is wider than ``xtol`` and the estimate's error
    (:func:`crossing_error` on ``valid`` and ``saddles``) is above ``ERROR_SHARE·xtol``. A solve that fails or
    has no growth factor stops the refinement; solved points are appended to ``extra`` (valid ones to ``valid``
    too). Returns ``(last valid, nearest saddle, estimate)``."""
    lo = valid[-1]
    est = stability_crossing(lo, hi)
    for _ in range(CROSSING_SOLVES):
        d = hi.alpha - lo.alpha
        if abs(d) <= xtol or lo.stability is None or hi.stability is None:
            break
        if crossing_error(lo, hi, list(valid) + list(saddles) + extra) <= ERROR_SHARE * xtol:
            break
        t = min(max((est - lo.alpha) / d, 0.1), 0.9)
        a = lo.alpha + t * d
        p = run(a, predict(branch, a, valid, None))
        if p.stability is None or not math.isfinite(p.stability) or not p.state.exists:
            break
        extra.append(p)
        if not p.state.valid and p.stability > hi.stability:
            break   # a glitch of the factor (:func:`first_saddle`): keep the bracket
        if p.state.valid:
            valid.append(p)
            lo = p
        else:
            hi = p
        est = stability_crossing(lo, hi)
    return lo, hi, est
