"""The one continuation engine: a pinned branch followed in α (and across ω), with its ends found and named, for
every integrator (the point solver is :func:`attnphase.theory.solve.point_solver`'s one-point form of
``theory.solve``: the split rule at L = 2, r = 1, QMC elsewhere).

Every command that follows a branch (``theory curve``, ``transition``, ``phase-diagram``, ``reproduce``) goes
through :func:`follow_branch`. The ladders inside ``theory`` (the split rule's and the QMC engine's ladder
starts, the engine's descent: ``theory/ladder_starts.py``, ``theory/branch_end.py``) are start strategies of
ONE point solve — reaching a point that failed from the model's start from a solved neighbour — and run only
for cold starts; the step control after a failure (halve the step, locate an end to a resolution) is one
rule, :class:`attnphase.theory.stepping.Bracket`, shared with the engine's descent. Per α it

1. predicts a start (:func:`.predict.predict`): the quadratic in α through the last three valid points of
   this branch, or — across ω — the previous ω's solution at the same α plus the current ω's difference to
   it, extrapolated in α (``guide``); before the branch
   has a valid point, the model-derived start of the solver (:func:`attnphase.theory.solver.start_state`),
   then that start with a 1.6× larger overlap;
2. corrects it with the point solver (any callable with :class:`PointSolver`'s signature; default
   :func:`default_solver`, the integrator :func:`attnphase.theory.solve.choose` picks);
3. classifies the result (:class:`PointState`, MODEL.md §6 "Branches", §7): ``ok``; ``unstable`` (the growth
   factor of the pinned direction is above +1 — an eigenvalue below −1 is no instability, §7); ``collapsed``
   (the branch's overlap, θ on the semantic, m on the positional branch, vanished: the pinned iteration fell
   onto the uninformative point); ``diverged`` (q grows without bound); ``not converged``; ``stability unknown``
   (converged, but the growth factor is NaN: not used as valid);
4. on anything but ``ok`` after a valid point, **halves the step** (adaptive step: the target α is retried from
   the nearer valid point) until the interval between the last valid α and the first invalid one (a
   :class:`~attnphase.theory.stepping.Bracket`) is below ``min_step``: the branch ends there (:class:`BranchEnd`,
   located to ``min_step`` in α), and the end's kind is the evidence next to it (MODEL.md §7): ``unstable`` where
   the growth factor crosses +1 (also when a failed solve lies between the last valid point and a converged
   saddle: the branch goes on; located to ``xtol``, by regula falsi on the factor where the interpolation is
   not that accurate), ``collapsed`` where the overlap
   vanishes (also when the failed iterate lost its overlap and the overlap² extrapolates to 0 there: critical
   slowing down), ``diverged``, or ``ended`` (no fixed point of the branch however small the step, overlap kept: a
   fold).
   A solve that stalls at the integration rule's noise floor (residual within ``STALL_FACTOR·rtol``) is
   repeated at a finer outer order (1.5×, then 2× where that fails: :func:`finer_orders`), and so is the last
   failed solve before an end is declared: a stall
   of the coarse rule is no end. Every α beyond the end gets that kind as its
   state, without a solve — except past an
   ``unstable`` end, where the pinned branch still exists (a saddle): it is followed on, state ``unstable``,
   until its pinned iteration fails too (then that state, e.g. ``collapsed``, for the rest).

A point is ``not converged`` only when the solver failed and no smaller step helped before the branch had a
valid point, or the failure was isolated — never because it lies beyond a branch's end.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, is_dataclass, replace
from enum import Enum
from typing import Any, Callable, Protocol, Sequence

import numpy as np

from ..errors import ParameterError
from ..model import ModelParams
from ..theory.solution import unsolved
from ..theory.state import OrderParams
from .predict import predict, start_from
from .unstable_end import first_saddle, locate_crossing
from ..theory.status import Status
from ..theory.stepping import Bracket

MAX_STEPS = 60
"""Iteration cap of the continuation solves: a warm-started point converges in 6–15 iterations (≤ 40 near the
end of a branch); a point at or past a branch's end does not converge at all, and it is the expensive one."""

COLLAPSE_TOL = 1e-3
"""A semantic (positional) point with |θ| (|m|) below ``COLLAPSE_TOL·σ√q`` has collapsed onto the
uninformative point: the branch does not exist there."""

DIVERGE_Q = 100.0
"""A point whose q exceeds ``DIVERGE_Q·σ²`` (100 times the teacher's own norm) is running away."""

CURVE_RTOL = 1e-5
"""Solver tolerance of the continuation (relative change of the eight order parameters; the split rule's
integration error is ~1e-5, docs/theory.md)."""

END_XTOL = 1e-3
"""Default resolution in α to which :func:`follow_branch` locates a branch's end."""

STALL_FACTOR = 10.0
"""A solve that stopped with its residual above ``rtol`` but within ``STALL_FACTOR·rtol`` has stalled at the
integration rule's noise floor (MODEL.md §7: the split rule's map is piecewise smooth; at the diagram's outer
order 4 its floor is ~1e-5, the default ``rtol``): the iterate has stopped moving, the branch has not ended.
Such a solve is repeated at a finer outer order (:func:`_resolve_stall`, :func:`finer_orders`). A fold or a collapse leaves
the residual orders of magnitude higher (measured 2.5e-4 … 1 at the failures next to the diagram's ends)."""

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


class PointSolver(Protocol):
    """The seam to the theory: solve one branch at one α, returning a :class:`~attnphase.theory.solution.Solution`
    (or any object with its scalar attributes: q, m, V, θ, e_t, ε_g, converged, stability, params, alpha, branch).
    :func:`attnphase.theory.solve.point_solver` gives it for every integrator; ``nodes`` is the split rule's
    resolution (the QMC engine ignores it: its resolution is its ``QMCConfig``)."""

    def __call__(self, params: ModelParams, alpha: float, branch: str, *, nodes: int | None = ...,
                 init: Any = ..., max_steps: int = ..., stability: bool = ..., rtol: float = ...) -> Any: ...


QMC_POINTS, QMC_SCRAMBLES, QMC_COARSE = 1024, 4, 256
"""Default QMC size of a followed branch, a transition or a diagram (MODEL.md §8): a fixed size (no error control
per point: a transition solves hundreds of points); 4 scrambles give the standard errors of α_c, α_l."""


def phase_qmc(points: int | None = None, scrambles: int | None = None):
    """The QMC config of the continuation: :data:`QMC_POINTS` × :data:`QMC_SCRAMBLES` unless given."""
    from ..theory.engine import QMCConfig
    n = QMC_POINTS if points is None else int(points)
    return QMCConfig(points=n, scrambles=QMC_SCRAMBLES if scrambles is None else int(scrambles),
                     coarse=QMC_COARSE if n >= 4 * QMC_COARSE else 0)


def default_solver(params: ModelParams | None = None, qmc_config=None) -> PointSolver:
    """The one-point solve of ``params`` on the integrator :func:`attnphase.theory.solve.choose` picks ("auto":
    the split rule at L = 2, r = r* = 1 with the paper's P, the QMC engine elsewhere, at ``qmc_config``,
    default :func:`phase_qmc`)."""
    from ..theory.solve import choose, point_solver
    params = params if params is not None else ModelParams()
    if choose(params, "auto") == "qmc" and qmc_config is None:
        qmc_config = phase_qmc()
    return point_solver(params, qmc_config=qmc_config)


@dataclass
class SolveSettings:
    """Settings passed to the point solver by the engine."""

    nodes: int | None = None
    max_steps: int = MAX_STEPS
    rtol: float = CURVE_RTOL
    stability: bool = True
    stability_nodes: int | None = None
    """Rule of the growth factor (``solve_point``'s ``stability_nodes``); None: the solver's default."""

    def extra(self) -> dict[str, int]:
        """The keyword for the solver, only when set (stand-in solvers need not know it)."""
        return {} if self.stability_nodes is None else dict(stability_nodes=self.stability_nodes)


def overlap_key(branch: str) -> str:
    """The overlap that defines a pinned branch: θ (semantic) or m (positional)."""
    return "theta" if branch == "semantic" else "m"


def point_state(sol) -> PointState:
    """Classify one solver result (module docstring, step 3). A point that was never solved (``solved=False``
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


def follow_branch(params: ModelParams, alphas: Sequence[float], branch: str, *, nodes: int | None = None,
                  init=None, guide: dict | None = None, history: Sequence | None = None,
                  max_steps: int = MAX_STEPS, rtol: float = CURVE_RTOL, stability: bool = True,
                  min_step: float = END_XTOL, solver: PointSolver | None = None, saddles: bool = True,
                  progress: Callable[[int], None] | None = None, stability_margin: float | None = None,
                  xtol: float = END_XTOL, stability_nodes: int | None = None) -> Branch:
    """Follow one branch (pinned: ``semantic``, ``positional``, ``uninformative``; or ``free``) along ``alphas`` in the
    given order (module docstring). ``init`` warm-starts the first α; ``guide`` maps ``round(α, 9)`` to the
    previous ω's valid solutions; ``history``: valid points already known on this branch (extending a
    branch beyond its previous range), the last one nearest the first α. ``min_step``: the adaptive step's
    smallest step, i.e. the resolution in α of a branch's end. ``saddles``: follow the pinned branch past an
    ``unstable`` end (else the α's beyond get the state ``unstable`` without a solve, as for the other kinds, and so
    does the α whose step met the end unless a saddle was already solved there).
    ``progress(i)`` after each requested α. ``stability_margin``: skip the growth factor's map evaluation
    (``stability=None`` on the point) where it cannot make the point ``unstable`` (:func:`_skip_stability`);
    None (default): evaluate it at every point. ``xtol``: resolution in α of an ``unstable`` end (the growth
    factor's crossing of +1, located by at most :data:`~.unstable_end.CROSSING_SOLVES` extra solves once
    bracketed to ``min_step``, none where the interpolation is accurate to ``xtol``). ``stability_nodes``: the
    rule the growth factor is evaluated on (None: the solver's default, ``min(nodes, 4)``);
    :func:`~.transition.transition` passes the branch's ``nodes`` where they are finer, so that an ``unstable``
    end is located at the branch's own resolution.

    With a ``guide``, an α before the branch's first valid point that the guide does not hold either (the
    branch began later at the previous ω) gets no cold starts: it is solved when the branch is followed back
    from its first valid point (cold starts only if no α gives a valid point)."""
    if branch not in ("semantic", "positional", "uninformative", "free"):
        raise ParameterError("branch", "semantic, positional, uninformative or free", branch)
    if not min_step > 0:
        raise ParameterError("min_step", "> 0", min_step)
    if not xtol > 0:
        raise ParameterError("xtol", "> 0", xtol)
    solve = solver or default_solver(params)
    cfg = SolveSettings(nodes, max_steps, rtol, stability, stability_nodes)
    out = Branch(branch, params, [])
    valid: list = [p for p in (history or []) if point_state(p).valid]
    guide = {k: v for k, v in (guide or {}).items() if point_state(v).valid} or None

    def run(a: float, start, nodes: int | None = None) -> BranchPoint:
        """One solve at ``a`` (at ``nodes`` instead of the branch's resolution when given: a finer retry)."""
        out.solves += 1
        stab = cfg.stability and not _skip_stability(a, computed, guide, stability_margin)
        s = solve(params, float(a), branch, nodes=nodes or cfg.nodes, init=start, max_steps=cfg.max_steps,
                  stability=stab, rtol=cfg.rtol, **cfg.extra())
        if stalled(s, cfg.rtol) and nodes is None:
            out.solves += 1
            s = _resolve_stall(solve, params, float(a), branch, s, cfg, stab)
        p = BranchPoint(s, point_state(s))
        if p.state.valid:
            computed.append(p)
        return p

    def first(a: float) -> BranchPoint:
        """Before any valid point: the previous ω's point, the given start, the model's start, and (at the first
        α only) the model's start with a 1.6× larger overlap."""
        starts = [init] if init is not None else []
        g = guide.get(round(a, 9)) if guide else None
        if g is not None:
            starts.insert(0, g)
        starts.append(None)
        if not out.points:
            starts.append(scaled_start(params, a, branch, 1.6))
        tried = []
        for st in starts:
            p = run(a, st)
            if p.state.valid:
                return p
            tried.append(p)
        return min(tried, key=lambda p: _RANK[p.state])  # a saddle, else a collapse, … over a failure

    computed: list = []   # valid points in the order solved (the growth factor's history)
    deferred: list[int] = []
    past: list = []   # past an "unstable" end the pinned branch goes on as a saddle: followed, not used
    stop: BranchPoint | None = None
    for i, a in enumerate(float(x) for x in alphas):
        if out.end is not None and out.end.kind is PointState.UNSTABLE and stop is None and saddles:
            p = run(a, predict(branch, a, valid + past, None))
            if p.state.exists:
                past.append(p)
            else:
                stop = p
                if p.state is PointState.NOT_CONVERGED:
                    p = BranchPoint(p.solution, PointState.ENDED)
            out.points.append(p)
        elif out.end is not None:
            kind = out.end.kind if stop is None else stop.state
            if kind is PointState.NOT_CONVERGED:
                kind = PointState.ENDED
            out.points.append(unsolved_point(params, a, branch, nodes, kind, f"beyond the branch's end near "
                                        f"α={out.end.alpha:.4g}: {END_REASONS[kind]}"))
        elif not valid and _later(guide, a, alphas[i + 1:]):
            deferred.append(i)
            out.points.append(unsolved_point(params, a, branch, nodes, PointState.NOT_CONVERGED,
                                        "deferred: the branch began later at the previous ω"))
        elif not valid:
            out.points.append(first(a))
            if out.points[-1].state.valid:
                valid.append(out.points[-1])
        else:
            p = _advance(run, branch, a, valid, guide, min_step, out, xtol, saddles)
            out.points.append(p)
        if progress is not None:
            progress(i)
    if not any(p.state.valid for p in out.points):   # nothing to follow back from: the cold starts after all
        for i in deferred:
            out.points[i] = first(out.points[i].alpha)
    _backwards(run, out, guide, min_step, xtol, saddles)
    return out


def stalled(sol, rtol: float) -> bool:
    """Whether an unconverged solve stalled at the rule's noise floor (:data:`STALL_FACTOR`): its residual is
    finite, above ``rtol`` and within ``STALL_FACTOR·rtol``, with a finite, non-runaway q."""
    r = getattr(sol, "residual", None)
    if sol.converged or r is None or not math.isfinite(r) or not math.isfinite(sol.q):
        return False
    return rtol < r <= STALL_FACTOR * rtol and sol.q <= DIVERGE_Q * sol.params.sigma ** 2


def finer_orders(n: int) -> tuple[int, ...]:
    """The outer orders a stall or an end retry tries after ``n``, cheapest first: ``n`` + ``n``/2 (rounded to
    an even step, the split rule's orders are even), then ``2n`` (the old cure) where the first does not
    converge. A split-rule evaluation costs ∝ nodes³ (``nodes`` in ξ_v and y_v, ``4·nodes`` panels in y_u): at
    the diagram's order 4 the first retry is nodes = 6 at ≈ 3.4× a nodes = 4 solve instead of 8× at nodes = 8,
    and it cured all four stalls of the trace ω = 0.069–0.192 (docs/notes/2026-12-06-diagram-levers.md)."""
    if n <= 0:
        return ()
    mid = n + max(2, 2 * (n // 4))
    return (mid, 2 * n) if mid < 2 * n else (2 * n,)


def _resolve_stall(solve, params, alpha: float, branch: str, sol, cfg: SolveSettings, stab: bool):
    """The stalled solve ``sol`` repeated from its own last iterate at the finer orders of
    :func:`finer_orders` (a finer rule has a lower noise floor; the cheaper one first, each from ``sol``). The
    converged result says so in its ``status`` (its ``nodes`` is the order it was solved at); if none
    converges, ``sol`` is returned unchanged (a real failure)."""
    n = int(getattr(sol, "nodes", 0) or 0)
    for fine in finer_orders(n):
        s2 = solve(params, alpha, branch, nodes=fine, init=sol, max_steps=cfg.max_steps, stability=stab,
                   rtol=cfg.rtol, **cfg.extra())
        if s2.converged:
            break
    else:
        return sol
    note = (f"converged at nodes={fine} after a stall at the nodes={n} noise floor "
            f"(residual {sol.residual:.2e}, rtol {cfg.rtol:.0e})")
    if hasattr(s2, "with_note"):
        return s2.with_note(note)
    return replace(s2, status=note) if is_dataclass(s2) else s2


def _later(guide: dict | None, alpha: float, rest: Sequence[float]) -> bool:
    """The guide (previous ω) has no valid point at ``alpha`` but one at a later α of the order."""
    return bool(guide) and round(alpha, 9) not in guide and any(round(float(a), 9) in guide for a in rest)


SKIP_RUN = 2
""":func:`_skip_stability` evaluates the growth factor at least at every ``SKIP_RUN + 1``-th point."""


def _skip_stability(alpha: float, computed: Sequence, guide: dict | None, margin: float | None) -> bool:
    """Whether the growth factor at ``alpha`` may be left out: its linear extrapolation from the last two
    valid points with an evaluated factor (at most ``SKIP_RUN`` points ago, over at most twice their
    distance) and the previous ω's value at
    ``alpha`` (when the guide has one) are both below ``1 − margin``. A point whose factor is left out cannot
    be classified ``unstable``; the margin (0.4 in the diagram) is several times the largest change of the
    factor between neighbouring grid points measured near a branch's end (docs/notes/benchmarks-log.md)."""
    if margin is None:
        return False
    have = [p for p in computed if p.stability is not None and math.isfinite(p.stability)]
    if len(have) < 2 or all(p.stability is None for p in computed[-SKIP_RUN:]):
        return False
    p0, p1 = have[-2], have[-1]
    if p1.alpha == p0.alpha or abs(alpha - p1.alpha) > 2.0 * abs(p1.alpha - p0.alpha) + 1e-12:
        return False   # extrapolate over at most two steps (e.g. not from a branch's top to its beginning)
    pred = p1.stability + (alpha - p1.alpha) * (p1.stability - p0.stability) / (p1.alpha - p0.alpha)
    g = guide.get(round(alpha, 9)) if guide else None
    gs = getattr(g, "stability", None)
    if gs is not None and math.isfinite(gs):
        pred = max(pred, gs)
    return bool(pred < 1.0 - margin)


def _backwards(run, out: Branch, guide, min_step: float, xtol: float = END_XTOL, follow: bool = True) -> None:
    """When the first α's gave no valid point and a later one did, follow the branch back from its first
    valid point over them (same adaptive step): they get the state of the branch's beginning (``begin``)
    instead of a failure of a cold start."""
    lead = next((i for i, p in enumerate(out.points) if p.state.valid), None)
    if not lead:
        return
    back = [p for p in out.points[lead + 1:lead + 2] if p.state.valid] + [out.points[lead]]
    tmp = Branch(out.branch, out.params, [])
    for j in range(lead - 1, -1, -1):
        a = out.points[j].alpha
        if tmp.end is not None:
            out.points[j] = unsolved_point(out.params, a, out.branch, out.points[lead].nodes, tmp.end.kind,
                                      f"before the branch's beginning near α={tmp.end.alpha:.4g}: {tmp.end.reason}")
            continue
        out.points[j] = _advance(run, out.branch, a, back, guide, min_step, tmp, xtol, follow)
    out.begin = tmp.end
    out.extra.extend(tmp.extra)


_RANK = {PointState.OK: 0, PointState.UNSTABLE: 1, PointState.UNKNOWN: 2, PointState.COLLAPSED: 3,
         PointState.DIVERGED: 4, PointState.ENDED: 5, PointState.NOT_CONVERGED: 6}


def scaled_start(params, alpha, branch, scale):
    """The model's start with its overlaps scaled by ``scale`` (the split rule's own start at L = 2, r = 1; the
    engine's model start, M and θ scaled, elsewhere)."""
    from ..theory.routing import is_small
    if is_small(params):
        from ..theory.solver import start_state
        return start_from(start_state(params, alpha, branch, scale), branch)
    from ..theory.starts import model_start
    x = OrderParams(*(np.asarray(b, float) for b in model_start(params, branch, alpha)))
    return start_from(x._replace(M=scale * x.M, theta=scale * x.theta), branch)


def _advance(run, branch: str, target: float, valid: list, guide, min_step: float, out: Branch,
             xtol: float = END_XTOL, follow: bool = True) -> BranchPoint:
    """Reach ``target`` from the last valid point, halving the step on failure (adaptive step); sets
    ``out.end`` when the interval to the first invalid α falls below ``min_step``.

    An invalid α is retried (from the closer start the halving has reached) once the last valid point is
    within ``min_step`` of it, not after every successful half step: a retry from a far start fails like the
    first try, and a failed solve costs the full ``max_steps`` (measured: half the time of a diagram column
    went into such retries, docs/notes/benchmarks-log.md).

    The end's kind is the evidence next to it: a failure (``not converged``) with a converged saddle of the
    branch beyond it (state ``unstable``, met on the way) is no fold — the branch exists on both sides — so
    the end is ``unstable``; an ``unstable`` end is then located to ``xtol`` on the growth factor
    (:func:`~.unstable_end.locate_crossing`)."""
    a_try = target
    bad: BranchPoint | None = None
    bad_from = math.inf   # distance in α of the start that the invalid point ``bad`` was last solved from
    at_target: BranchPoint | None = None
    plain_for: float | None = None   # the invalid α already retried from the last valid point itself
    saddles: list[BranchPoint] = []   # converged saddles (state unstable) met on the way to the target
    while True:
        p = run(a_try, predict(branch, a_try, valid, guide))
        dist = abs(a_try - valid[-1].alpha)
        if a_try == target:
            at_target = p
        if p.state.valid:
            valid.append(p)
            if a_try == target:
                return p
            out.extra.append(p)
            if bad is not None and a_try == bad.alpha:
                bad, bad_from = None, math.inf
            if bad is None:
                a_try = target
                continue
        else:
            bad, bad_from = p, dist  # always the invalid α nearest the last valid one: steps only shrink to it
            if p.state is PointState.UNSTABLE:
                saddles.append(p)
            if a_try != target:
                out.extra.append(p)
        last = valid[-1]
        if Bracket(last.alpha, bad.alpha).within(min_step):   # the end is located to min_step
            if bad_from > abs(bad.alpha - last.alpha) + 1e-12:   # retry once from the nearest valid start
                a_try = bad.alpha
                continue
            if bad.state is PointState.NOT_CONVERGED and plain_for != bad.alpha:
                # a failure from an extrapolated start is not yet a fold: once more from the last valid point
                # itself (the 40 × 40 diagram had 3 false "ended" ends, e.g. ω = 0.1185, α = 0.7 positional,
                # which converges in 8 steps from the valid point at α = 0.6875)
                # — and if that fails too, at a finer outer order: near a branch's end the nodes = 4 map can
                # fail with its iterate no longer moving (ω = 0.1185, α = 0.65 semantic: residual 1e-3 after 300
                # steps at q, θ fixed to 1e-6; converges in 34 steps at nodes = 8, in 37 at nodes = 6 at half
                # the CPU, growth factor 0.65: valid)
                plain_for = bad.alpha
                p = run(bad.alpha, last)
                # (the finer orders of a failed plain solve, at the branch's order: the cheaper one first)
                for fine in finer_orders(int(getattr(p, "nodes", 0) or 0)):
                    if p.state is not PointState.NOT_CONVERGED:
                        break
                    p = run(bad.alpha, last, nodes=fine)
                    if p.state is PointState.UNSTABLE:
                        saddles.append(p)
                if p.state.valid:
                    valid.append(p)
                    if bad.alpha == target:
                        return p
                    out.extra.append(p)
                    bad, bad_from, a_try = None, math.inf, target
                    continue
                bad = p
            return _end_at(run, branch, target, valid, bad, saddles, at_target, out, xtol, follow)
        a_try = Bracket(last.alpha, bad.alpha).mid()   # a halved step


def _end_at(run, branch: str, target: float, valid: list, bad: BranchPoint, saddles: Sequence[BranchPoint],
            at_target: BranchPoint | None, out: Branch, xtol: float, follow: bool = True) -> BranchPoint:
    """Set ``out.end`` from the first invalid point ``bad`` next to the last valid one (see :func:`_advance`)
    and return the point at ``target`` (past an ``unstable`` end a saddle solved there, else, and always
    where saddles are not followed (``follow=False``) and none was solved, the end's reason)."""
    last = valid[-1]
    kind = bad.state if bad.state is not PointState.NOT_CONVERGED else PointState.ENDED
    saddle = first_saddle(saddles, last, target)
    if kind is PointState.ENDED and saddle is not None:
        kind = PointState.UNSTABLE   # the pinned branch goes on past the failure: it did not end there
    zero = _collapse_point(valid, bad, branch) if kind in (PointState.ENDED, PointState.COLLAPSED) else None
    if zero is not None:   # a continuous end onto the uninformative point (also when the solve there failed)
        kind, est = PointState.COLLAPSED, zero
        out.end = BranchEnd(float(est), kind, float(last.alpha), float(bad.alpha))
    elif kind is PointState.UNSTABLE:
        lo, hi, est = locate_crossing(run, branch, valid, saddle or bad, out.extra, xtol, saddles)
        out.end = BranchEnd(float(est), kind, float(lo.alpha), float(hi.alpha))
    else:
        est = Bracket(last.alpha, bad.alpha).mid()
        out.end = BranchEnd(float(est), kind, float(last.alpha), float(bad.alpha))
    if bad.alpha == target and (bad.state is kind or kind is PointState.ENDED):
        return BranchPoint(bad.solution, kind)   # (an unconverged one only as `ended`: never used)
    if kind is PointState.UNSTABLE:
        # the saddle at the target itself: kept where already solved; solved here only where saddles are
        # followed. Without them the cell has the end's reason like every cell beyond: a solve there would not
        # be used, and its outcome next to the saddle's own collapse is fragile (ω = 0.0938, α = 0.55 semantic:
        # the end at 0.599, θ² of the saddles extrapolates to 0 at 0.553; the solve from the extrapolated
        # start fell onto the uninformative point and the cell read `collapsed` between `unstable` cells)
        t = at_target if at_target is not None and at_target.state.exists else None
        if t is None and follow:
            t = run(target, predict(branch, target, valid + [hi], None))
        if t is not None and t.state in (PointState.OK, PointState.UNSTABLE):
            return BranchPoint(t.solution, PointState.UNSTABLE)
        if t is not None and follow and t.state is not PointState.NOT_CONVERGED:
            return BranchPoint(t.solution, t.state)
        kind = PointState.UNSTABLE   # the saddle not solved here: the cell has the end's reason, as all beyond
    return unsolved_point(out.params, target, branch, bad.nodes, kind,
                     f"beyond the branch's end near α={est:.4g}: {END_REASONS[kind]}")


COLLAPSE_DROP = 0.1
"""An unconverged iterate whose overlap fell below ``COLLAPSE_DROP`` times the last valid point's is falling
onto the uninformative point (:func:`_collapse_point`)."""

COLLAPSE_NEAR = 0.1
"""A last valid point whose overlap is below ``COLLAPSE_NEAR·σ√q`` (θ) or ``COLLAPSE_NEAR·√q`` (m) is already
close to the uninformative point: a failed iterate next to it need only have lost overlap (not fallen by
:data:`COLLAPSE_DROP`) to count as collapsing — its start, extrapolated from that point, is itself small, and
the slowed-down iteration cannot shrink it tenfold in ``max_steps`` (σ = 0.7, ω = 0.45: θ = 0.0145 at the
last valid α = 0.8875, the failed iterate 0.0022 after 60 steps at α = 0.8869; θ² vanishes at 0.8873)."""


def _collapse_point(valid: list, bad: BranchPoint, branch: str) -> float | None:
    """Where the branch merges continuously with the uninformative point, when the evidence says so: the
    failed iterate at ``bad`` lost its overlap (|overlap| below :data:`COLLAPSE_DROP` times the last valid
    point's, or just below it where that point is already near the uninformative one, :data:`COLLAPSE_NEAR`:
    the pinned iteration falls onto the uninformative point, slowly — critical slowing down, e.g. the
    positional branch at ω = 0.3, α = 0.056: m = 4e-5 after 60 steps from 0.023 at α = 0.0625) and the squared
    overlap of the last two valid points, linear in α near a continuous end, extrapolates to 0 within one
    bracket width of [last valid, ``bad``]. Returns that zero (clamped into the bracket), else None (a fold)."""
    if branch not in ("semantic", "positional") or len(valid) < 2:
        return None
    key = overlap_key(branch)
    p1, p0 = valid[-1], valid[-2]
    y1, y0, yb = (float(getattr(p, key)) for p in (p1, p0, bad))
    scale = math.sqrt(max(float(p1.q), 0.0)) * (p1.params.sigma if branch == "semantic" else 1.0)
    drop = 1.0 if abs(y1) < COLLAPSE_NEAR * scale else COLLAPSE_DROP
    if not (math.isfinite(yb) and abs(yb) < drop * abs(y1)) or p1.alpha == p0.alpha:
        return None
    y1, y0 = y1 * y1, y0 * y0
    if not y0 > y1 > 0:
        return None   # the overlap does not shrink toward the end
    zero = p1.alpha - y1 * (p0.alpha - p1.alpha) / (y0 - y1)
    lo, hi = sorted((p1.alpha, bad.alpha))
    width = hi - lo
    if not lo - width <= zero <= hi + width:
        return None
    return min(max(zero, lo), hi)


def branch_table(branch_or_points):
    """Tidy table of a followed branch (:func:`attnphase.theory.curve_table` columns plus ``state``), sorted by
    α. Accepts a :class:`Branch` or a list of points / solutions."""
    from ..theory.solution import solution_table
    pts = list(branch_or_points)
    sols = [p.solution if isinstance(p, BranchPoint) else p for p in pts]
    df = solution_table(sols)
    df["state"] = [point_state(p).value for p in pts]
    return df.sort_values("alpha").reset_index(drop=True)
