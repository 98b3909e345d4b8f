"""Error-controlled QMC size (issue 11): grow the integrator until every reported number's relative standard
error is below a target (MODEL.md §7: the integrands jump across the basin-switching set, so the error a
given size achieves differs by an order of magnitude between branches; docs/notes/2026-12-05-theory-general.md).

The rule, used by ``engine.solve_batch`` when ``QMCConfig.target > 0``: after a point has converged, its
relative standard errors (over the independent scrambles) of the watched quantities are compared with the
target; where the worst one exceeds it, the work ``points × scrambles`` is multiplied by a power of two that
covers ``(rse / target)²`` (the error falls at least as ``(work)^{-1/2}``: plain Monte-Carlo rate, which QMC
meets or beats), scrambles first up to ``max_scrambles`` (more scrambles make the error bar itself reliable),
then points up to ``max_points``; the fixed point is continued from the converged one on the larger, nested
point sets. At the caps the point is reported with ``met = False``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable

from ..errors import check_int, check_range

WATCHED = ("q", "m", "theta", "V", "eps_g", "e_t")
"""The reported numbers whose relative standard error the rule controls (a quantity that is exactly 0 — the
pinned overlap of a branch — has no relative error and is skipped)."""
DEFAULT_TARGET = 5e-3 / 3
"""Default target of the relative standard error: a deviation within 3 s.e. is then within 5e-3 relative (the
accuracy asked of the engine against the split rule, issue 11)."""
MAX_POINTS = 65536
"""Most points per scramble at L = 2, r = 1 (the positional branch at ω = 0.3 needs it, docs/notes/2026-12-05-theory-general.md);
other structures get the same WORK (:func:`default_max_points`)."""
MAX_SCRAMBLES = 8
MARGIN = 1.2
"""The work factor covers ``MARGIN · (rse / target)²``: the error bar from a few scrambles is itself uncertain
(~35 % relative with 4), a bare factor would land half the points just above the target."""


def default_max_points(L: int, r: int) -> int:
    """The error control's cap on the points per scramble for a structure: ``MAX_POINTS`` scaled by the cost of
    one sample relative to L = 2, r = 1, modelled as ``(L r / 2)²`` (the prox's Newton system has L·r
    unknowns; measured full-map call per sample: ×4.8 at L = 2, r = 2 and at L = 3, r = 1), rounded down to a
    power of two, at least 4096: 65536 at L = 2, r = 1; 16384 at L = 2, r = 2 and at L = 3, r = 1. So a point
    that would need more (the rank-2 semantic point at α = 1, θ: MC rate from the basin-switching set,
    docs/notes/2026-12-05-theory-general.md "Rank 2 on the defaults") stops after about the work of the largest r = 1 size and
    is reported ``met = False`` instead of running for half an hour."""
    cap = MAX_POINTS * 4.0 / float(L * r) ** 2
    return max(4096, 1 << int(math.floor(math.log2(min(cap, MAX_POINTS)))))


def relative_errors(values: dict, errors: dict, names=WATCHED) -> dict[str, float]:
    """``errors[k] / |values[k]|`` for each watched scalar that is non-zero and finite."""
    out = {}
    for k in names:
        v, e = values.get(k), errors.get(k)
        if v is None or e is None or not math.isfinite(float(v)) or float(v) == 0.0:
            continue
        out[k] = float(e) / abs(float(v))
    return out


def worst(rse: dict[str, float]) -> tuple[str | None, float]:
    """The watched quantity with the largest relative error and that error (None, 0 for an empty dict)."""
    if not rse:
        return None, 0.0
    k = max(rse, key=rse.get)
    return k, rse[k]


def grown_size(points: int, scrambles: int, ratio: float, max_points: int = MAX_POINTS,
               max_scrambles: int = MAX_SCRAMBLES) -> tuple[int, int] | None:
    """The next (points, scrambles) for an error ``ratio`` = rse / target > 1: the work grows by the power of two
    covering ``MARGIN · ratio²`` (at least 2), scrambles doubled first up to ``max_scrambles``, then points up to
    ``max_points`` (both stay powers of two where they were). None at the caps (no growth possible)."""
    factor = 2 ** max(1, math.ceil(math.log2(max(MARGIN * ratio * ratio, 2.0))))
    s, n = scrambles, points
    while factor > 1 and 2 * s <= max_scrambles:
        s, factor = 2 * s, factor // 2
    while factor > 1 and 2 * n <= max_points:
        n, factor = 2 * n, factor // 2
    return None if (n, s) == (points, scrambles) else (n, s)


def deviation_p_value(deviation: float, se: float, scrambles: int) -> float:
    """Two-sided p-value of a deviation of ``deviation`` from a reference value, measured in units of the
    standard error ``se`` over ``scrambles`` independent scrambles: the studentised deviation has a Student t
    distribution with ``scrambles − 1`` degrees of freedom (the s.e. itself is estimated from the scrambles).
    So 3.1 s.e. from 4 scrambles is p ≈ 0.05, not the 0.002 of a normal 3.1σ (docs/notes/2026-12-05-theory-general.md, "Near
    the positional fold (ω = 0.1)")."""
    from scipy.stats import t as student_t
    check_int("scrambles", scrambles, 2)
    z = abs(float(deviation)) / float(se) if se > 0 else math.inf
    return float(2.0 * student_t.sf(z, scrambles - 1))


def se_quantile(p: float, scrambles: int) -> float:
    """How many standard errors (from ``scrambles`` scrambles) a deviation may reach at two-sided level ``p``:
    the ``1 − p/2`` quantile of Student t with ``scrambles − 1`` degrees of freedom (the inverse of
    :func:`deviation_p_value`; e.g. p = 0.0027, the normal 3σ level: 9.2 s.e. with 4 scrambles, 4.5 with 8)."""
    from scipy.stats import t as student_t
    check_int("scrambles", scrambles, 2)
    check_range("p", p, lo=0.0, hi=1.0, lo_open=True)
    return float(student_t.isf(p / 2.0, scrambles - 1))


@dataclass(frozen=True)
class Progress:
    """What the engine reports to a ``progress`` callback (``engine.solve_batch(progress=…)``) while it works:
    ``stage`` is ``"solve"`` (the first size, ``rse`` NaN: nothing measured yet), ``"grow"`` (a larger size is
    started for ``points_pending`` points whose worst relative s.e. ``rse`` of ``worst`` exceeds ``target``) or
    ``"done"`` (``rse``: the worst over the batch's converged points at their final sizes) or ``"continuation"``
    (a continuation in α or scale took a step: ``note`` says which, :meth:`.ladder.Ladder.report`) or ``"start"``
    (failed points are solved again from other starts: ``note``)."""

    stage: str
    points: int
    scrambles: int
    rse: float
    target: float
    worst: str | None = None
    points_pending: int = 0
    note: str | None = None

    def describe(self) -> str:
        """One line for a status display."""
        size = f"QMC {self.points} x {self.scrambles}"
        if self.stage == "solve":
            return f"{size}: solving {self.points_pending} point(s)"
        if self.stage in ("continuation", "start"):
            return f"{size}: {self.note}"
        err = f"worst relative s.e. {self.worst} {self.rse:.2g} (target {self.target:.2g})"
        if self.stage == "grow":
            return f"{size}: growing {self.points_pending} point(s), {err}"
        return f"{size}: done, {err}" if self.worst else f"{size}: done"


ProgressCallback = Callable[[Progress], None]


def final_progress(solutions, target: float) -> Progress:
    """The ``"done"`` report of a batch: the largest size reached and the worst relative s.e. over its
    converged points (``solutions``: ``engine.GeneralSolution``)."""
    done = [x for x in solutions if x.converged]
    sizes = [(x.qmc.points, x.qmc.scrambles) for x in solutions] or [(0, 0)]
    name, rse = worst({f"{k}@{i}": v for i, x in enumerate(done)
                       for k, v in relative_errors(x.values, x.errors).items()})
    return Progress("done", *max(sizes), rse if name else math.nan, target,
                    name.split("@")[0] if name else None, 0)
