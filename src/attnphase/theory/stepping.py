"""The one home of step control (MODEL.md §7, "branch ends"): how a walk in one parameter (α; the encodings'
scale) sizes its next step after a success or a failure, when it gives up, and when an end counts as located.

Two walkers use it, each a parameterisation of the same rules (:class:`StepRule`), none with a copy of them:

* :class:`.ladder.Ladder` — a START STRATEGY of ONE point solve (the split rule's ``solve_point(continuation=
  True)``, the QMC engine's ladder starts, the engine's descent :func:`.branch_end.start_by_descent`): steps are
  ratios (:data:`LADDER_RULE`: grown ×1.5 after a success up to the ladder's ``max_ratio``, square-rooted —
  the log-step halved — after a failure, giving up below 1.02); in bracket mode (the descent) the geometric
  midpoint of the bracket, located to a relative tolerance.
* :func:`attnphase.phase.continuation.follow_branch` — a BRANCH followed along requested α's, its ends found and
  named: steps are differences (:data:`FOLLOW_RULE`: after a success the full step to the next requested α,
  after a failure the arithmetic midpoint of the bracket, located to an absolute resolution ``min_step``); past
  an end that may be a failure of the iteration, the walk of :class:`WalkPast` (fixed steps, isolated failures
  tolerated).

``phase`` may import ``theory``, never the other way round, so the rules live here."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Sequence

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


@dataclass(frozen=True)
class StepRule:
    """Every step-control rule of a walk: a step's ``size`` is a ratio (``geometric``) or a difference; after a
    success it grows by ``grow`` up to ``largest`` (:meth:`grown`); after a failure it is halved (a ratio
    square-rooted), and a halved step below ``smallest`` means giving up (:meth:`halved`: None); inside a
    bracket (last value reached, nearest failure) the next value is its midpoint (:meth:`inside`), and the end
    is located once the bracket is within a tolerance (:meth:`located`: relative where ``geometric``)."""

    geometric: bool = False
    grow: float = math.inf
    largest: float = math.inf
    smallest: float = 0.0

    def grown(self, size: float) -> float:
        """The step after a success."""
        return min(self.largest, size * self.grow)

    def halved(self, size: float) -> float | None:
        """The step after a failure; None: below ``smallest``, give up."""
        half = size ** 0.5 if self.geometric else 0.5 * size
        return half if half >= self.smallest else None

    def inside(self, good: float, bad: float) -> float:
        """The next value between ``good`` (reached) and ``bad`` (failed): the bracket's midpoint."""
        return Bracket(good, bad).mid(self.geometric)

    def located(self, good: float, bad: float, tol: float) -> bool:
        """Whether the bracket (``good``, ``bad``) is within ``tol`` (relative where ``geometric``)."""
        return Bracket(good, bad).within(tol, relative=self.geometric)


LADDER_RULE = StepRule(geometric=True, grow=1.5, largest=1.5, smallest=1.02)
"""The ladder's rule (:class:`.ladder.Ladder`, which sets ``largest`` to its ``max_ratio``): ratios grown ×1.5
after a success up to 1.5, square-rooted after a failure, giving up below 1.02."""

FOLLOW_RULE = StepRule()
"""``follow_branch``'s rule: after a success the full step to the target (no growth limit), after a failure
the arithmetic midpoint, an end located to an absolute resolution (no give-up: the resolution ends it)."""


@dataclass(frozen=True)
class WalkPast:
    """The policy of a walk on past a branch's ``ended`` end (a fold as far as halving the step tells, but on QMC
    points possibly a failure of the iteration at isolated α's): the α's past the end in steps of ``step`` and
    every requested α there (:meth:`targets`), each solved with at most ``max_steps`` iterations, up to
    ``misses`` failed α's in a row tolerated; a failure is an end only where the branch does not converge again
    within the walk. Measured at L = 3, ω = 0.4 (256 × 4 points): failures at 0.7, 0.65, 0.55, 0.4 between
    valid points 0.05 apart; two in a row (0.7, 0.65); a valid point past the false fold took 44 steps from a
    start 0.15 away."""

    step: float = 0.05
    misses: int = 3
    max_steps: int = 200

    def targets(self, valid: float, invalid: float, requested: Sequence[float]) -> list[float]:
        """The α's past the end (last valid ``valid``, first invalid ``invalid``) up to the farthest requested
        one: a ladder of ``step`` from ``valid`` and the requested α's, in the walk's order."""
        sign = 1.0 if invalid > valid else -1.0
        far = max(requested, key=lambda a: sign * a)
        out = {round(a, 9) for a in requested}
        k = 1
        while sign * (valid + sign * self.step * k - far) <= 1e-9:
            out.add(round(valid + sign * self.step * k, 9))
            k += 1
        return sorted(out, key=lambda a: sign * a)
