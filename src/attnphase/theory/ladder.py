"""Continuation in α from ``LADDER_FROM`` up to a large target α (issue 11 audit, "Cold starts fail at large
α"): the starts derived from the model (:func:`attnphase.theory.solver.start_state`,
:func:`attnphase.theory.starts.model_start`) are fitted at α ≤ 2 and are far off at α = 10 (V, and q off the
signal direction), so a cold start there may fail; the branch is then solved at ``LADDER_FROM`` and followed up
in α, each step warm-started from the last. One schedule (:class:`Ladder`) for both solvers: the split rule's
``solver.solve_point(continuation=True)`` and the QMC engine's ``engine.solve_batch`` (points of a batch climb
together, each with its own schedule)."""

from __future__ import annotations

from dataclasses import dataclass

LADDER_FROM = 2.0
"""Largest α at which the model's start is trusted; above it a failed cold start may be rescued by
continuation from here."""
LADDER_RATIO = 1.5
"""Largest ratio between successive α of that continuation (square-rooted where a step fails)."""
LADDER_MIN_RATIO = 1.02
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
    ``engine._continue_down_in_alpha``); ``failed`` keeps the last value whose step failed."""

    target: float
    origin: float = LADDER_FROM
    max_ratio: float = LADDER_RATIO
    name: str = "α"
    started: bool = False
    steps: int = 0
    gave_up: bool = False
    failed: float | None = None
    """The last value whose step failed (after a give-up: the nearest beyond ``a`` that was tried)."""

    def __post_init__(self) -> None:
        self.a, self.ratio = self.origin, self.max_ratio

    @property
    def down(self) -> bool:
        """Whether the ladder descends (``target`` below ``origin``: steps divide by the ratio)."""
        return self.target < self.origin

    @property
    def reached(self) -> bool:
        return self.started and (self.a <= self.target if self.down else self.a >= self.target)

    @property
    def climbing(self) -> bool:
        """Whether another step is to be taken."""
        return self.started and not self.reached and not self.gave_up and self.steps < LADDER_MAX_STEPS

    def next_value(self) -> float:
        return max(self.target, self.a / self.ratio) if self.down else min(self.target, self.a * self.ratio)

    def record(self, value: float, converged: bool) -> None:
        """The outcome of the step to ``value``."""
        self.steps += 1
        if not converged:
            self.failed = value
        if converged:
            self.a, self.ratio = value, min(self.max_ratio, self.ratio * 1.5)
        elif self.ratio ** 0.5 >= LADDER_MIN_RATIO:
            self.ratio = self.ratio ** 0.5
        else:
            self.gave_up = True

    def start_note(self) -> str:
        """The solution's start where the target was reached."""
        return f"continuation from {self.name} = {self.origin:g} ({self.steps} steps)"

    def stop_note(self) -> str:
        """Where a continuation that did not reach the target stopped."""
        where = f"at {self.name} = {self.a:g}" if self.started else f"at its start {self.name} = {self.origin:g}"
        return f"continuation from {self.name} = {self.origin:g} stopped {where}"
