"""The step control every continuation shares (MODEL.md §7, "branch ends"): after a failed step, the next value
lies inside the bracket between the last value reached and the nearest one that failed, and an end is located
once that bracket is narrower than the resolution asked for.

Two continuations use it: :func:`attnphase.phase.continuation.follow_branch` (the continuation in α of every
integrator: arithmetic halving to an absolute resolution ``min_step`` in α) and :class:`.ladder.Ladder` in
bracket mode (the QMC engine's descent towards a failed semantic point, :func:`.branch_end.start_by_descent`:
geometric bisection to a relative bracket). ``phase`` may import ``theory``, never the other way round, so the
rule lives here."""

from __future__ import annotations

import math
from dataclasses import dataclass

SLACK = 1e-9
"""Relative slack of an absolute resolution: a step halved k times is not exactly ``min_step``."""


@dataclass(frozen=True)
class Bracket:
    """The interval between ``good`` (the last value a step reached) and ``bad`` (the nearest value whose step
    failed), in either order."""

    good: float
    bad: float

    @property
    def lower(self) -> float:
        return min(self.good, self.bad)

    @property
    def upper(self) -> float:
        return max(self.good, self.bad)

    def mid(self, geometric: bool = False) -> float:
        """The next value to try: the arithmetic midpoint (a halved step), or the geometric one (a halved ratio;
        for a parameter such as α > 0 followed over decades)."""
        return math.sqrt(self.good * self.bad) if geometric else 0.5 * (self.good + self.bad)

    def within(self, tol: float, relative: bool = False) -> bool:
        """Whether the end is located: the bracket's width is at most ``tol`` (absolute, with :data:`SLACK`), or
        ``upper / lower − 1 ≤ tol`` (relative)."""
        if relative:
            return self.upper / self.lower - 1.0 <= tol
        return abs(self.bad - self.good) <= tol * (1.0 + SLACK)
