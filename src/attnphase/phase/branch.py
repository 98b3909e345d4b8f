"""A followed branch's data (MODEL.md §6 "Branches", §7): what one point of a pinned branch is
(:class:`PointState`, :func:`point_state`), where a branch ends (:class:`BranchEnd`), a point with its state
(:class:`BranchPoint`) and the followed branch itself (:class:`Branch`). :mod:`.continuation` fills them
(``follow_branch``); everything downstream (transition, diagram, survey) reads them."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from enum import Enum
from typing import Any

from ..model import ModelParams
from ..theory.solution import unsolved
from ..theory.status import Status

COLLAPSE_TOL = 1e-3
"""A semantic (positional) point with |θ| (|m|) below ``COLLAPSE_TOL·σ√q`` has collapsed onto the
uninformative point: the branch does not exist there."""

DIVERGE_Q = 100.0
"""A point whose q exceeds ``DIVERGE_Q·σ²`` (100 times the teacher's own norm) is running away."""


class PointState(str, Enum):
    """What a point of a pinned branch is (a ``str`` enum: ``PointState.OK == "ok"``)."""

    OK = "ok"
    UNSTABLE = "unstable"
    COLLAPSED = "collapsed"
    DIVERGED = "diverged"
    ENDED = "ended"
    NOT_CONVERGED = "not converged"
    UNKNOWN = "stability unknown"
    """A converged fixed point of the pinned map whose growth factor could not be evaluated (NaN: the perturbed
    state is inadmissible for the map, :func:`attnphase.theory.solver._growth`): not used as valid (the solver
    says ``stable=False``), not a saddle either."""

    @property
    def valid(self) -> bool:
        return self is PointState.OK

    @property
    def exists(self) -> bool:
        """A converged fixed point of the pinned map (valid, a saddle, or of unknown stability)."""
        return self in (PointState.OK, PointState.UNSTABLE, PointState.UNKNOWN)


END_REASONS = {
    PointState.UNSTABLE: "the growth factor of the pinned direction crosses +1 (a branch with m ≠ 0 and θ ≠ 0 "
                         "splits off; the pinned branch goes on as a saddle)",
    PointState.COLLAPSED: "the branch's overlap vanishes: it merges with the uninformative point",
    PointState.DIVERGED: "q grows without bound",
    PointState.ENDED: "no fixed point of the branch however small the step (a fold)",
    PointState.NOT_CONVERGED: "the solver did not converge",
    PointState.UNKNOWN: "the growth factor of the pinned direction could not be evaluated (stability unknown)",
}


@dataclass(frozen=True)
class BranchEnd:
    """Where a followed branch stops being valid: between ``alpha_valid`` (last valid α) and ``alpha_invalid``
    (first invalid α met), ``alpha`` the estimate (a linear crossing of +1 by the growth factor, or the
    midpoint), ``kind`` the state at ``alpha_invalid``."""

    alpha: float
    kind: PointState
    alpha_valid: float
    alpha_invalid: float

    @property
    def reason(self) -> str:
        return END_REASONS[self.kind]

    def to_dict(self) -> dict[str, Any]:
        return dict(alpha=self.alpha, kind=self.kind.value, reason=self.reason, alpha_valid=self.alpha_valid,
                    alpha_invalid=self.alpha_invalid)


def overlap_key(branch: str) -> str:
    """The overlap that defines a pinned branch: θ (semantic) or m (positional)."""
    return "theta" if branch == "semantic" else "m"


def point_state(sol) -> PointState:
    """Classify one solver result (:mod:`.continuation`'s docstring, step 3). A point that was never solved (``solved=False``
    attribute, set by the engine beyond a branch's end) keeps the state recorded on it."""
    st = getattr(sol, "state", None)
    if isinstance(st, PointState):
        return st
    sigma = sol.params.sigma
    status = getattr(sol, "status", None)
    if isinstance(status, Status) and status in (Status.COLLAPSED, Status.NOT_SIGNIFICANT):
        return PointState.COLLAPSED    # the engine's verdict: the pinned overlap vanished (within its noise)
    if not sol.converged:
        if math.isfinite(sol.q) and sol.q > DIVERGE_Q * sigma ** 2:
            return PointState.DIVERGED
        return PointState.NOT_CONVERGED
    b = sol.branch
    if b in ("semantic", "positional"):
        scale = COLLAPSE_TOL * sigma * math.sqrt(max(sol.q, 0.0))
        if not abs(getattr(sol, overlap_key(b))) > scale:
            return PointState.COLLAPSED
    st = sol.stability
    if st is None:   # not evaluated (skipped where it cannot exceed 1, :func:`_skip_stability`)
        return PointState.OK
    if not math.isfinite(st):   # evaluated and failed: unknown is not "ok" (the solver says stable=False)
        return PointState.UNKNOWN
    return PointState.UNSTABLE if st > 1.0 else PointState.OK


@dataclass
class BranchPoint:
    """A solver result with its state (a thin wrapper: attribute access falls through to ``solution``)."""

    solution: Any
    state: PointState

    def __getattr__(self, name):
        if name.startswith("__") or name == "solution":  # no recursion while unpickled (worker processes)
            raise AttributeError(name)
        return getattr(self.solution, name)


def unsolved_point(params, alpha: float, branch: str, nodes, state: PointState, why: str) -> BranchPoint:
    """A point that is not solved (beyond a branch's end), with the state ``state`` and the reason ``why``."""
    return BranchPoint(unsolved(params, alpha, branch, nodes, why), state)


@dataclass
class Branch:
    """A followed branch: one :class:`BranchPoint` per requested α (in the order given), the extra points
    solved by the adaptive step and the end location, ``end`` (None when valid to the last α) and ``begin``
    (where the branch starts being valid, when its first α's were not: found by following it backwards)."""

    branch: str
    params: ModelParams
    points: list[BranchPoint]
    end: BranchEnd | None = None
    extra: list[BranchPoint] = field(default_factory=list)
    begin: BranchEnd | None = None
    solves: int = 0
    walks: list = field(default_factory=list)
    """The walks past an ``ended`` end (``follow_branch``'s ``walk_past``), each a :class:`~.walk.FoldCheck`."""

    def __iter__(self):
        return iter(self.points)

    def __len__(self):
        return len(self.points)

    def __getitem__(self, i):
        return self.points[i]

    def valid(self) -> list[BranchPoint]:
        """Valid points (requested and extra), sorted by α."""
        return sorted((p for p in self.points + self.extra if p.state.valid), key=lambda p: p.alpha)

    def states(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for p in self.points:
            out[p.state.value] = out.get(p.state.value, 0) + 1
        return out


