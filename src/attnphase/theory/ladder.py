"""The ladder: a START STRATEGY of one point solve (issue 11 audit, "Cold starts fail at large α"), not a
continuation of a branch (that is ``phase.continuation.follow_branch``). The starts derived from the model
(:func:`attnphase.theory.solver.start_state`, :func:`attnphase.theory.starts.model_start`) are fitted at α ≤ 2
and are far off at α = 10 (V, and q off the signal direction), so a cold start there may fail; the point is
then solved at ``LADDER_FROM`` and reached by a short ladder of solves, each warm-started from the last. One
schedule (:class:`Ladder`) and one driver (:func:`run_ladders`) for both integrators: the split rule's
``solver.solve_point(continuation=True)`` and the QMC engine's ladder starts (:mod:`.ladder_starts`: points of
a batch climb together, each with its own schedule).

With ``bracket_tol`` the ladder searches for the END of a branch instead (the engine's descent in α towards a
failed semantic point, ``branch_end.start_by_descent``; docs/notes/2026-12-05-theory-general.md, "The descent in α near a
branch end"): a failed value is never stepped past nor tried again (except the target, once, from the first
rung that converged after it), the steps after a failure bisect (geometric mean) between the last success and
the nearest failure, and the ladder stops once that bracket is within ``bracket_tol`` (relative).

Every step rule (grow, halve, bisect, locate, give up) is :data:`.stepping.LADDER_RULE`, the ladder's
parameters of the one :class:`.stepping.StepRule` that ``follow_branch`` uses too (:data:`.stepping.FOLLOW_RULE`)."""

from __future__ import annotations

import time
from dataclasses import dataclass, field, replace
from typing import Callable, Sequence

from .status import Status
from .stepping import LADDER_RULE, Bracket

LADDER_FROM = 2.0
"""Largest α at which the model's start is trusted; above it a failed cold start may be rescued by
continuation from here."""
LADDER_RATIO = LADDER_RULE.largest
"""Largest ratio between successive α of that continuation (square-rooted where a step fails)."""
LADDER_MIN_RATIO = LADDER_RULE.smallest
"""Smallest ratio tried before the continuation gives up."""
LADDER_MAX_STEPS = 60
"""Most solves one continuation may take (successful and failed steps together)."""


@dataclass
class Ladder:
    """The schedule of one point's continuation from ``origin`` (default ``LADDER_FROM``) up to ``target`` in
    the parameter ``name`` (α; or the encodings' scale c, :func:`attnphase.theory.engine`'s scale ladder):
    ``a`` the last value reached, ``ratio`` the next step's ratio (grown by 1.5 after a success, up to
    ``max_ratio``; square-rooted after a failure, giving up below ``LADDER_MIN_RATIO``), ``steps`` the solves
    after the first, ``started`` whether the solve at ``origin`` converged. A ``target`` below ``origin``
    descends (steps divide by the ratio: the engine follows the semantic branch down towards its end,
    ``branch_end.start_by_descent``); ``failed`` keeps the last value whose step failed.

    ``bracket_tol`` (the branch-end search, module docstring): after a failure no regrowth and no step past
    ``failed``; the next value is the geometric midpoint of (``failed``, ``a``), except that a failed target
    is tried once more from the first rung that converged after it (measured at r = 2, r* = 3: 4.5 → 3 failed,
    3.674 → 3 converged); stops (``BRACKETED``) once max/min of the bracket − 1 ≤ ``bracket_tol``.
    ``max_steps`` and ``max_wall`` (seconds since construction, ``clock``) cap the work (``STEP_CAP``,
    ``WALL_CAP``). ``progress`` (a callable of one string) is told every step's outcome and the next one."""

    target: float
    origin: float = LADDER_FROM
    max_ratio: float = LADDER_RATIO
    name: str = "α"
    started: bool = False
    steps: int = 0
    gave_up: bool = False
    failed: float | None = None
    """The last value whose step failed (after a give-up: the nearest beyond ``a`` that was tried)."""
    bracket_tol: float | None = None
    max_steps: int = LADDER_MAX_STEPS
    max_wall: float | None = None
    progress: Callable[[str], None] | None = field(default=None, repr=False, compare=False)
    clock: Callable[[], float] = field(default=time.monotonic, repr=False, compare=False)
    tried: list = field(default_factory=list)
    """Every step as (value, converged), in order."""
    details: dict = field(default_factory=dict)
    """How the failed steps failed (value → words, where the caller said)."""
    partial: set = field(default_factory=set)
    """Failed values where the caller judged the failure partial (some of its runs converged: the step may have
    lost the branch without the branch ending there)."""

    def __post_init__(self) -> None:
        self.a, self.ratio = self.origin, self.max_ratio
        self.rule = replace(LADDER_RULE, largest=self.max_ratio)
        self.t0 = self.clock()

    @property
    def down(self) -> bool:
        """Whether the ladder descends (``target`` below ``origin``: steps divide by the ratio)."""
        return self.target < self.origin

    @property
    def reached(self) -> bool:
        return self.started and (self.a <= self.target if self.down else self.a >= self.target)

    @property
    def bracket(self) -> tuple[float, float] | None:
        """(failed, a) ordered as (lower, upper), or None before a failure."""
        b = self.between()
        return None if b is None else (b.lower, b.upper)

    def between(self) -> Bracket | None:
        """The :class:`.stepping.Bracket` from ``a`` (reached) to ``failed``, or None before a failure."""
        return None if self.failed is None else Bracket(self.a, self.failed)

    @property
    def bracketed(self) -> bool:
        """Bracket mode: the bracket (``failed``, ``a``) is within ``bracket_tol`` (relative) and no retry is due."""
        b = self.between()
        return (self.bracket_tol is not None and b is not None and not self._retry_due()
                and self.rule.located(b.good, b.bad, self.bracket_tol))

    @property
    def end(self) -> Status:
        """Why the ladder stops (``RUNNING`` while it does not)."""
        if not self.started:
            return Status.NOT_STARTED
        if self.reached:
            return Status.REACHED
        if self.gave_up:
            return Status.GAVE_UP
        if self.bracketed:
            return Status.BRACKETED
        if self.steps >= self.max_steps:
            return Status.STEP_CAP
        if self.max_wall is not None and self.clock() - self.t0 >= self.max_wall:
            return Status.WALL_CAP
        return Status.RUNNING

    @property
    def climbing(self) -> bool:
        """Whether another step is to be taken."""
        return self.end is Status.RUNNING

    def _retry_due(self) -> bool:
        """Bracket mode: the target failed once, and the step after it converged (try the target again)."""
        fails = sum(1 for v, ok in self.tried if v == self.target and not ok)
        return (self.failed == self.target and fails == 1 and bool(self.tried) and self.tried[-1][1])

    def next_value(self) -> float:
        if self.bracket_tol is not None and self.failed is not None:
            return self.target if self._retry_due() else self.rule.inside(self.a, self.failed)
        return max(self.target, self.a / self.ratio) if self.down else min(self.target, self.a * self.ratio)

    def record(self, value: float, converged: bool, detail: str | None = None, partial: bool = False) -> None:
        """The outcome of the step to ``value`` (``detail``: how it failed, kept in ``details``, reported;
        ``partial``: the failure was partial, kept in ``partial``)."""
        self.steps += 1
        if partial and not converged:
            self.partial.add(float(value))
        self.tried.append((float(value), bool(converged)))
        if detail is not None:
            self.details[float(value)] = detail
        if not converged:
            self.failed = value
        if converged:
            self.a, self.ratio = value, self.rule.grown(self.ratio)
        elif self.bracket_tol is None:          # (in bracket mode the bracket shrinks: no ratio)
            half = self.rule.halved(self.ratio)
            if half is None:
                self.gave_up = True
            else:
                self.ratio = half
        self.report(f"{self.name} = {value:.4g} {'converged' if converged else 'failed'}"
                    + (f" ({detail})" if detail else ""))

    def report(self, what: str = "") -> None:
        """Tell ``progress`` where the ladder stands: ``what`` just happened, the bracket, the next step."""
        if self.progress is None:
            return
        head = f"continuation from {self.name} = {self.origin:g} to {self.target:g}: "
        parts = [what] if what else []
        if self.failed is not None and self.bracket_tol is not None and not self.reached:
            lo, hi = self.bracket
            what_ = "lost" if self.failed in self.partial else "end"     # partial: the path broke, not the branch
            parts.append(f"{what_} between {lo:.4g} and {hi:.4g}")
        end = self.end
        parts.append(f"step {self.steps + 1}: {self.name} = {self.next_value():.4g}" if end is Status.RUNNING
                     else end.value.replace("_", " "))
        self.progress(head + "; ".join(parts))

    def start_note(self) -> str:
        """The solution's start where the target was reached."""
        return f"continuation from {self.name} = {self.origin:g} ({self.steps} steps)"

    def stop_note(self) -> str:
        """Where a continuation that did not reach the target stopped."""
        where = f"at {self.name} = {self.a:g}" if self.started else f"at its start {self.name} = {self.origin:g}"
        end = self.end
        cap = (f" (step cap {self.max_steps})" if end is Status.STEP_CAP else
               f" (wall cap {self.max_wall:g} s)" if end is Status.WALL_CAP else "")
        return f"continuation from {self.name} = {self.origin:g} stopped {where}{cap}"


def run_ladders(lads: Sequence[Ladder], step: Callable[[float, bool, list[int]], list[tuple]]) -> None:
    """The one driver of every ladder (the split rule's :func:`.solver.solve_point` ``continuation``, the QMC
    engine's ladder starts and its descent, :func:`.ladder_starts.climb`): while a ladder climbs, its next
    value; ladders at the same value (and the same finality: the value is their target) take that step
    together, ``step(value, final, indices)`` returning one ``(converged, detail, partial)`` per index
    (:meth:`Ladder.record`'s arguments) in the order given."""
    while climbing := [j for j, lad in enumerate(lads) if lad.climbing]:
        groups: dict = {}
        for j in climbing:
            v = lads[j].next_value()
            groups.setdefault((v, v == lads[j].target), []).append(j)
        for (v, final), grp in groups.items():
            for j, (ok, detail, partial) in zip(grp, step(v, final, grp)):
                lads[j].record(v, ok, detail, partial=partial)
