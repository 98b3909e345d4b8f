"""The one status vocabulary of the theory (issues 11, 29): how a point's solve, a branch's continuation and a
ladder ended — an enum with its message, never free text."""

from __future__ import annotations

from enum import Enum


class Status(str, Enum):
    """Why a solve, a continuation or a ladder stopped. Point outcomes: only ``CONVERGED`` and
    ``ACCEPTED_AT_JUMP`` are results (:attr:`ok`); every other point status is reported as such. Ladder and
    branch outcomes (``RUNNING`` … ``NOT_TRIED``) say where a continuation stopped (:class:`.ladder.Ladder`,
    :mod:`.branch_end`). :attr:`message` is the sentence for users."""

    # --- points
    CONVERGED = "converged"
    ACCEPTED_AT_JUMP = "accepted_at_jump"  # converged, but at least one scramble was accepted at a jump of its
    #                                        piecewise-smooth QMC map with a residual up to
    #                                        ``fixed_point.JUMP_RTOL`` (2 %) instead of rtol
    MAX_STEPS = "max_steps"
    DIVERGED = "diverged"
    INVALID_STATE = "invalid_state"
    NOT_SIGNIFICANT = "not_significant"
    COLLAPSED = "collapsed"
    ON_PINNED = "on_pinned"
    # --- ladders (a continuation's schedule) and branches
    RUNNING = "running"
    NOT_STARTED = "not_started"
    REACHED = "reached"
    BRACKETED = "bracketed"
    GAVE_UP = "gave_up"
    STEP_CAP = "step_cap"
    WALL_CAP = "wall_cap"
    NOT_TRIED = "not_tried"

    def __str__(self) -> str:
        """The value (``converged``, ``max_steps`` …), also in f-strings, on every Python version."""
        return str(self.value)

    def __format__(self, spec: str) -> str:
        return format(str(self.value), spec)

    @property
    def ok(self) -> bool:
        """A point that is a result (a fixed point): converged, or accepted at a jump of its map."""
        return self in (Status.CONVERGED, Status.ACCEPTED_AT_JUMP)

    @property
    def message(self) -> str:
        return MESSAGES[self]


MESSAGES = {
    Status.CONVERGED: "converged: the residual of the undamped map is below rtol on every scramble",
    Status.ACCEPTED_AT_JUMP: ("converged at a jump of the QMC map: at least one scramble stopped with a residual "
                              "up to 2 % (fixed_point.JUMP_RTOL) where its map jumps between two minimisers"),
    Status.MAX_STEPS: "not converged: the residual of the undamped map stayed above rtol",
    Status.DIVERGED: "diverged: a non-finite map value",
    Status.INVALID_STATE: ("invalid state: q or V left the positive-definite cone, or D = λ + σ²V̂ is not "
                           "positive"),
    Status.NOT_SIGNIFICANT: ("not significant: converged, but the pinned branch's defining overlap (m, resp. θ) "
                             "is not significantly non-zero — an integration artefact "
                             "(significance.overlap_significance)"),
    Status.COLLAPSED: ("collapsed: the pinned branch's defining overlap vanished — the iteration fell onto the "
                       "uninformative point, or onto q = 0 (collapse.py)"),
    Status.ON_PINNED: ("on a pinned branch: the free iteration sits on a pinned branch's stable fixed point; its "
                       "pinned overlap is an integration artefact (free_verdict.decide)"),
    Status.RUNNING: "running: the continuation has steps left",
    Status.NOT_STARTED: "not started: the solve at the continuation's origin failed, no step taken",
    Status.REACHED: "reached: the continuation got to its target",
    Status.BRACKETED: "bracketed: the branch's end lies between the last success and the failure (within the tolerance)",
    Status.GAVE_UP: "gave up: the step ratio fell below its smallest value",
    Status.STEP_CAP: "stopped at the step cap",
    Status.WALL_CAP: "stopped at the wall-clock cap",
    Status.NOT_TRIED: "not tried: no continuation was run for this point",
}


def worst_of(statuses) -> Status:
    """The status of a point from its rows (scrambles): the first of DIVERGED, INVALID_STATE, MAX_STEPS that
    any row has, else CONVERGED."""
    sts = list(statuses)
    return next((s for s in (Status.DIVERGED, Status.INVALID_STATE, Status.MAX_STEPS) if s in sts),
                Status.CONVERGED)
