"""Where a followed branch may leave out its growth factor (MODEL.md §7): the factor of the pinned direction
decides only whether a point is ``unstable`` (above +1), and it moves slowly in α where it is far below 1.

The rule bounds the factor's rate of change in α by :data:`FACTOR_RATES`, the largest rate measured between
neighbouring valid points of both branches on the default 40 × 40 diagram (2592 solves with the factor at
every one, by the larger factor of the pair, in each direction; docs/notes/2026-12-06-diagram-cli.md), times
:data:`SAFETY`. A factor is left out where it cannot climb from the branch's last evaluated factor to 1 over
the α distance between the two at that rate. On those solves the rule leaves out no factor above 0.885."""

from __future__ import annotations

import math
from typing import Sequence

FACTOR_EDGES = (-2.0, -1.0, -0.5, 0.0, 0.2, 0.4, 0.6, 0.8, 1.0)
"""Upper edges of the factor's value bins of :data:`FACTOR_RATES`."""

FACTOR_RATES = {
    "up": (0.24, 0.24, 0.24, 0.24, 0.24, 0.57, 1.00, 1.34, 1.88),
    "down": (2.51, 4.00, 4.85, 7.01, 7.11, 8.72, 9.94, 11.42, 12.09),
}
"""Largest rise of the growth factor per unit α while it is at most the bin's edge (:data:`FACTOR_EDGES`), as α
increases ("up": the positional branch's rise to its end; below 0.2 no rise was measured, the 0.2 bin's rate
stands in) and as α decreases ("down": the semantic branch's convex rise to its end; the positional branch's
largest is 2.95). Measured on the default 40 × 40 diagram (module docstring)."""

SAFETY = 2.0
"""The measured rates are multiplied by this before they bound the factor's climb."""


def climb_distance(factor: float, up: bool, safety: float = SAFETY) -> float:
    """The shortest α distance over which a growth factor at ``factor`` can reach 1 when it rises at
    ``safety`` × :data:`FACTOR_RATES` (``up``: as α increases). 0 at or above 1."""
    rates = FACTOR_RATES["up" if up else "down"]
    dist, lo = 0.0, factor
    for edge, rate in zip(FACTOR_EDGES, rates):
        if lo >= 1.0:
            break
        if lo < edge:
            hi = min(edge, 1.0)
            dist += (hi - lo) / (safety * rate)
            lo = hi
    return dist


def skip_growth_factor(alpha: float, computed: Sequence, guide: dict | None, margin: float | None) -> bool:
    """Whether the growth factor at ``alpha`` may be left out (``stability=None`` on the point): the α distance
    from the last point of ``computed`` (the branch's valid points in the order solved) whose factor was
    evaluated is below :func:`climb_distance` of that factor, and the previous ω's factor at ``alpha``
    (``guide``, when it has one) is below ``1 − margin``. ``margin`` None: never (the factor everywhere). A point
    whose factor is left out cannot be classified ``unstable``."""
    if margin is None:
        return False
    last = next((p for p in reversed(computed) if p.stability is not None and math.isfinite(p.stability)), None)
    if last is None:
        return False
    g = guide.get(round(alpha, 9)) if guide else None
    gs = getattr(g, "stability", None)
    if gs is not None and math.isfinite(gs) and gs >= 1.0 - margin:
        return False
    return abs(alpha - last.alpha) < climb_distance(float(last.stability), up=alpha > last.alpha)
