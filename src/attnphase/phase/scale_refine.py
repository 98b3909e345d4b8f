"""Scale-aware refinement of α_c and α_l (MODEL.md §6 "Transition"; the split rule's resolution,
docs/notes/2026-12-05-theory-general.md "Split rule: the resolution follows the student's scale").

:func:`~attnphase.phase.transition.transition` follows the branches at a coarse outer order of the split rule
(``curve_nodes``, 4) and refines at ``nodes`` (8). Both are accurate only while the student norm q is small
(order 8 to ~1e-3 for q ≤ 0.7, :data:`~attnphase.theory.solver.SCALE_NODES`); at σ = 1.5 (q ≈ 1 at the lines)
the order-4 curves and the order-8 solves disagree qualitatively about where the semantic branch exists. Here
the semantic branch is followed again near the coarse α_c at the order the scale needs
(:func:`~attnphase.theory.solver.nodes_for_scale`), its competitor solved at the same α's at the order its own q
needs, and α_c is located on those solves: the e_t crossing (the follow stops at the first α where the semantic
branch is no longer below its competitor), or the semantic branch's own end (birth/fold) where it is born already
below the competitor. α_l follows on the semantic branch at that order.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..model import ModelParams
from ..theory.solver import nodes_for_scale, resolution_note
from .continuation import MAX_STEPS, Branch, PointSolver, PointState, follow_branch, point_state
from .refine import Refiner
from .roots import Unrefinable, local_root

SCALE_WINDOW = 0.05
"""The semantic branch is followed at the finer order from its first valid curve point at or above the coarse
α_c + this, downwards (in one step to the coarse α_c, then towards α_c − :data:`SCALE_DEPTH` or below the coarse
branch's end, whichever is lower, until it is no longer below its competitor)."""

SCALE_DEPTH = 0.15
"""How far below the coarse α_c the finer-order semantic branch is followed at least."""

SCALE_STEP = 0.05
"""Spacing of the α's the semantic branch is followed on at the finer order (its end is located to
:data:`SCALE_END_XTOL` by the adaptive step in between). One order-16 solve at σ = 1.5 costs 20–60 s on the
shared cores (10–30 iterations), a failed one (``MAX_STEPS``) about two minutes: the steps are few."""

SCALE_RTOL = 1e-4
"""Relative residual of the finer-order semantic solves: at σ = 1.5 the order-16 rule's noise floor lies near the
curves' 1e-5 (α = 1.0012: not converged after 68 iterations from a start 3e-3 away, then retried at order 32 for
minutes), which declared a spurious end; e_t differences that decide α_c there are ~1e-4 relative and more."""

SCALE_COMPETITOR_RTOL = 1e-5
"""Relative residual of the competitor's solves. The uninformative point at σ = 1.5 contracts slowly (growth
factor 0.86–0.89), so a solve stops at a relative step of ``rtol`` about ``rtol/(1 − 0.89)`` ≈ 10·rtol from the
fixed point: at :data:`SCALE_RTOL` its e_t depended on the start by up to 2.6e-5 (order 16, α = 1.015: 0.0097249
through the coarse stage, 0.0097505 without; the lead's order-16 values lie ~2e-5 below this helper's), i.e.
~1e-3 in α_c on the e_t gap's slope of 0.019; at order 24, α = 1.05336, 0.0111967 (1e-4) vs 0.0112615 (1e-5)."""

SCALE_RETRY_STEPS = 240
"""A competitor solve at the finer order that is not usable after ``MAX_STEPS`` from the interpolated start is
solved once more from the model's own start with up to this many steps (σ = 1.5, α = 1.0121, order 16: the
uninformative point from the start interpolated between 1.0034 and 1.1034 ended not converged after 69
iterations, so Brent found no crossing and the coarse α_c was kept; from its own start it converges in 28)."""

SCALE_END_XTOL = 4e-3
"""Resolution in α of the finer-order semantic branch's end (the engine's adaptive step halves 0.05 four times:
a bracket of 3.1e-3), reported as α_c's bracket where α_c is that end."""


def line_scale(branches: dict, lines: list[float]) -> float | None:
    """The largest student norm q among the followed branches' valid points up to 5 % above the located lines
    (None where there is none): the scale the split rule must resolve there."""
    if not lines:
        return None
    top = max(lines) * 1.05
    qs = [float(p.q) for br in branches.values() for p in br.valid() if p.alpha <= top and np.isfinite(p.q)]
    return max(qs) if qs else None


def competitor_scale(fps, branches: dict, against: str, alpha_c: float, window: float = 0.2) -> float | None:
    """The largest q of the competitor (``against``: the positional branch, else the uninformative point) on
    the curves within ``window`` of the coarse α_c: from the fixed-point survey ``fps`` where there is one, else
    the positional branch's valid points (None where neither has one)."""
    comp = "positional" if against == "positional" else "uninformative"
    qs: list[float] = []
    if fps is not None and len(fps):
        rows = fps[(fps["kind"] == comp) & ((fps["alpha"] - alpha_c).abs() <= window)]
        qs = [float(v) for v in rows["q"] if np.isfinite(v)]
    if not qs and comp == "positional":
        qs = [float(p.q) for p in branches["positional"].valid()
              if abs(p.alpha - alpha_c) <= window and np.isfinite(p.q)]
    return max(qs) if qs else None


@dataclass
class ScaleRefinement:
    """Outcome of :func:`scale_refine`. ``ok``: α_c located at ``nodes``; else ``reason`` says why not (the
    caller keeps its values). ``alpha_c_bracket``: the interval α_c is known to lie in at ``nodes`` (the
    semantic branch's last valid and first invalid α for a birth/fold, Brent's bracket for a crossing).
    ``alpha_l_kind``: ``at alpha_c`` (ε_g^sem already below ε_lin there), ``crossing`` or ``not located``."""

    nodes: int
    q: float
    alpha_c_coarse: float
    alpha_c_kind_coarse: str
    alpha_l_coarse: float | None
    ok: bool = False
    reason: str = ""
    alpha_c: float | None = None
    alpha_c_kind: str = ""
    alpha_c_bracket: tuple[float, float] | None = None
    alpha_l: float | None = None
    alpha_l_kind: str = "not located"
    semantic_end: dict[str, Any] | None = None
    competitor_unstable: list[float] = field(default_factory=list)
    points: list[dict[str, Any]] = field(default_factory=list)
    competitor: str = ""
    """The point α_c is located against: ``uninformative`` or ``positional``."""
    competitor_nodes: int | None = None
    """The order the competitor was solved at in the end (its own scale's, :func:`_competitor`; ``nodes`` or
    more)."""

    def to_dict(self) -> dict[str, Any]:
        return dict(nodes=self.nodes, q=self.q, ok=self.ok, reason=self.reason, alpha_c=self.alpha_c,
                    alpha_c_kind=self.alpha_c_kind,
                    alpha_c_bracket=None if self.alpha_c_bracket is None else list(self.alpha_c_bracket),
                    alpha_l=self.alpha_l, alpha_l_kind=self.alpha_l_kind, alpha_c_coarse=self.alpha_c_coarse,
                    alpha_c_kind_coarse=self.alpha_c_kind_coarse, alpha_l_coarse=self.alpha_l_coarse,
                    semantic_end=self.semantic_end, competitor_unstable=self.competitor_unstable,
                    competitor=self.competitor, competitor_nodes=self.competitor_nodes, points=self.points)

    def note(self, curve_nodes: int) -> str:
        """One line for the transition's notes: what was done, at which order, and what it moved."""
        head = (f"scale-aware refinement: q = {self.q:.3g} near the lines needs the split rule at nodes ≥ "
                f"{self.nodes} (the curves are at nodes = {curve_nodes})")
        if not self.ok:
            return f"{head}; it failed ({self.reason}): α_c = {self.alpha_c_coarse:.4g} kept, not located at that order"
        lo, hi = self.alpha_c_bracket
        what = {"crossing": "the e_t crossing",
                "semantic branch appears": "the semantic branch's end (it appears already below its competitor)",
                "continuous": "the semantic branch's birth from the uninformative point"}.get(self.alpha_c_kind,
                                                                                          self.alpha_c_kind)
        against = ("" if self.competitor_nodes in (None, self.nodes) else
                   f", the {self.competitor} point at nodes = {self.competitor_nodes} (its q)")
        line = (f"{head}; α_c = {self.alpha_c:.4f} in [{lo:.4f}, {hi:.4f}] at nodes = {self.nodes}{against}: {what} "
                f"(the curves' α_c {self.alpha_c_coarse:.4f}, {self.alpha_c_kind_coarse})")
        if self.alpha_l is not None:
            line += f"; α_l = {self.alpha_l:.4f} at nodes = {self.nodes} ({self.alpha_l_kind})"
        if self.competitor_unstable:
            line += ("; the competitor is unstable at nodes = " f"{self.nodes} at α = "
                     + ", ".join(f"{a:.4g}" for a in self.competitor_unstable) + " below α_c: not certified")
        return line


def resolution(points: list[dict[str, Any]]) -> str | None:
    """The split rule's resolution note (:func:`~attnphase.theory.solver.resolution_note`) for the valid,
    not superseded point of ``points`` (the refinement's records) of largest q among those beyond their own
    order's measured range; None where every one is within it."""
    rows = [r for r in points if r.get("state") in ("ok", "unstable") and "superseded" not in r
            and math.isfinite(r.get("q", math.nan)) and r.get("nodes")]
    flagged = [(r["q"], note) for r in rows if (note := resolution_note(r["q"], r["nodes"])) is not None]
    return max(flagged)[1] if flagged else None


def _warm_fine(solver: PointSolver) -> PointSolver:
    """``solver`` with the coarse stage skipped (``coarse=False``) on every warm-started solve of the semantic
    branch: at q ≳ 1 the coarse order-4 rule's fixed point is ~1e-2 off, further than any warm start of the
    refinement (σ = 1.5, order 16: e_t agreed to 1e-7 with the solves through the coarse stage). Not for the
    competitor: the uninformative point at order 24, α = 1.01161, warm-started without it from the point at
    1.01153 gave e_t 0.0096993 in 8 iterations (twice, at rtol 1e-4 and 1e-5) against 0.0096551 at 1.01153 and
    0.0096583 at 1.01162 through the coarse stage — a jump of 4e-5 over Δα = 1e-4, not understood (open).
    (Measured without it, uninformative, order 16, α = 1.015 from 1.03: 52 iterations through the coarse stage,
    15 without, e_t 0.0097249 vs 0.0097505.) Cold solves keep it."""
    def solve(params, alpha, branch, *, init=None, **kw):
        if init is not None and branch == "semantic":
            kw.setdefault("coarse", False)
        return solver(params, alpha, branch, init=init, **kw)
    return solve


def _capped(solver: PointSolver, nodes: int) -> PointSolver:
    """``solver`` that answers a request above ``nodes`` (the engine's retry of a stalled or last failed solve at
    twice the order) with the failed start itself, unconverged, instead of solving: at σ = 1.5 one order-32
    solve near the fold took over 8 minutes on the shared cores, and a failure at the order the scale needs is
    taken as one."""
    from dataclasses import is_dataclass, replace

    def solve(params, alpha, branch, *, nodes=None, init=None, **kw):
        sol = getattr(init, "solution", init)   # (a BranchPoint wraps its solution)
        if nodes is not None and nodes > cap and sol is not None and is_dataclass(sol) and hasattr(sol, "converged"):
            return replace(sol, alpha=float(alpha), converged=False,
                           status=f"not retried at nodes = {nodes} (scale refinement)")
        return solver(params, alpha, branch, nodes=nodes, init=init, **kw)

    cap = nodes
    return solve


def _point(branch: str, s, nodes: int) -> dict[str, Any]:
    return dict(branch=branch, alpha=float(s.alpha), e_t=float(s.e_t), eps_g=float(s.eps_g), q=float(s.q),
                state=point_state(s).value, stability=None if s.stability is None else float(s.stability),
                nodes=int(getattr(s, "nodes", 0) or nodes))


def _follow_alphas(top: float, bottom: float, below: float | None = None) -> list[float]:
    """``top``, then steps of :data:`SCALE_STEP` down to ``bottom`` (inclusive) from ``below`` (where it lies
    under ``top``: one step from ``top`` to it — the semantic branch is far from its end there, and the α's in
    between would only be stepping stones: σ = 1.5, three order-16 solves of 33–79 s from 1.2 to 1.017)."""
    first = top if below is None else min(top, round(below, 6))
    k = max(1, int(math.ceil((first - bottom) / SCALE_STEP - 1e-9)))
    steps = [round(first - i * (first - bottom) / k, 6) for i in range(k + 1)]
    return steps if first == top else [top] + steps


def scale_refine(params: ModelParams, branches: dict, alpha_c: float, alpha_c_kind: str, against: str,
                 alpha_l: float | None, eps_lin: float, *, nodes: int, q: float, solver: PointSolver,
                 xtol: float, end_xtol: float, alpha_hi: float, alpha_min: float,
                 window: float = SCALE_WINDOW, depth: float = SCALE_DEPTH,
                 competitor_q: float | None = None) -> ScaleRefinement:
    """α_c and α_l located at split-rule order ``nodes`` near the coarse α_c (module docstring).

    1. The semantic branch is followed at ``nodes`` from its first valid curve point at or above
       ``alpha_c + window`` (warm-started there) down towards ``alpha_c − depth`` or 0.05 below the coarse
       branch's lowest valid point, whichever is lower, one α at a time (:func:`_follow_down`: one step from the
       start to ``alpha_c``, then steps of :data:`SCALE_STEP`). From ``alpha_c`` down, the competitor
       (``against``: the positional branch, else the uninformative point) is solved at each new α, at its own
       scale's order (:func:`_competitor`; from the start at ``nodes_for_scale(competitor_q)`` where the
       caller knows its q on the curves), and the follow stops at the first α where the semantic e_t is no
       longer below it: α_c is then bracketed by that α and the one above, and the semantic branch's end
       further down is not looked for (it cannot be α_c). Otherwise the branch is followed to its end, located
       to ``max(end_xtol,`` :data:`SCALE_END_XTOL```)``, and the competitor solved at its lowest valid α.
    2. Where the semantic e_t is below the competitor's down to the branch's end, α_c is that end
       (``semantic branch appears``; ``continuous`` where it ends by collapsing onto the uninformative point),
       bracketed by its last valid and first invalid α; else Brent on e_t^sem − e_t^comp in the bracket
       (``crossing``).
    3. α_l on the semantic ε_g − ε_lin at that order, from α_c up (α_c itself where ε_g^sem < ε_lin there).
    """

    out = ScaleRefinement(nodes, float(q), float(alpha_c), alpha_c_kind, alpha_l)
    coarse = branches["semantic"].valid()
    above = [p for p in coarse if p.alpha >= alpha_c + window - 1e-9]
    start = above[0] if above else (coarse[-1] if coarse and coarse[-1].alpha > alpha_c else None)
    if start is None:
        out.reason = "no valid semantic curve point above α_c to start from"
        return out
    bottom = max(alpha_min, min(alpha_c - depth, coarse[0].alpha - 0.05))
    top = float(start.alpha)
    comp = "positional" if against == "positional" else "uninformative"
    comp_ok = (PointState.OK, PointState.COLLAPSED) if comp == "positional" else (PointState.OK, PointState.UNSTABLE)
    out.competitor, out.competitor_nodes = comp, nodes
    log: list[dict[str, Any]] = []
    known = {"semantic": [p for p in coarse if p.alpha > top],
             comp: [p for p in branches["positional"].valid()] if comp == "positional" else []}
    solver = _warm_fine(solver)
    R = Refiner(params, known, nodes, log, solver, dict(semantic=(PointState.OK,), **{comp: comp_ok}),
                 stability=(comp,), rtol=SCALE_RTOL, retry={comp: SCALE_RETRY_STEPS},
                 rtols={comp: SCALE_COMPETITOR_RTOL})
    if competitor_q is not None and math.isfinite(competitor_q) and nodes_for_scale(competitor_q) > nodes:
        R.raise_order(comp, nodes_for_scale(competitor_q))
        out.competitor_nodes = R.order(comp)
    sem = Branch("semantic", params, [])
    try:
        bracket = _follow_down(sem, _follow_alphas(top, bottom, alpha_c), start.solution, out, R, solver,
                               end_xtol, alpha_c)
    except Unrefinable as exc:
        out.reason = str(exc)
        return _with_log(_with_branch(out, sem), log, nodes)
    _with_branch(out, sem)
    fine = sem.valid()
    if not fine:
        out.reason = f"the semantic branch has no valid point at nodes = {nodes} from α = {top:g} down"
        return _with_log(out, log, nodes)
    low = fine[0]
    try:
        if bracket[0] is None:      # followed to its end (or the last α) below the competitor at every check
            c_low = _competitor(R, comp, low.alpha, out)
            if low.e_t < c_low.e_t:
                if sem.end is None:
                    out.reason = (f"the semantic branch is below the {comp} point down to α = {low.alpha:g} at "
                                  f"nodes = {nodes} (its end not reached)")
                    return _with_log(out, log, nodes)
                e = sem.end
                out.alpha_c = float(e.alpha)
                out.alpha_c_bracket = (float(min(e.alpha_valid, e.alpha_invalid)),
                                       float(max(e.alpha_valid, e.alpha_invalid)))
                birth = comp == "uninformative" and e.kind is PointState.COLLAPSED
                out.alpha_c_kind = "continuous" if birth else "semantic branch appears"
            bracket = (float(low.alpha), bracket[1])
        if out.alpha_c is None:
            lo, hi = bracket[0], top if bracket[1] is None else bracket[1]

            def delta(a):
                return R.valid("semantic", a).e_t - _competitor(R, comp, a, out).e_t

            r = local_root(delta, lo, lo, hi, sign_below=+1.0, step=hi - lo, xtol=xtol) if lo < hi else None
            if r is None:
                out.reason = f"no e_t crossing of the semantic branch and the {comp} point found in [{lo:.4g}, {hi:g}]"
                return _with_log(out, log, nodes)
            out.alpha_c, out.alpha_c_kind = float(r), "crossing"
            out.alpha_c_bracket = (max(lo, r - xtol), min(hi, r + xtol))
    except Unrefinable as exc:
        out.reason = str(exc)
        return _with_log(out, log, nodes)
    out.ok = True
    out.competitor_unstable = sorted(float(s.alpha) for (b, a), s in R.cache.items()
                                     if b == comp and a < out.alpha_c and point_state(s) is PointState.UNSTABLE)
    _alpha_l(out, R, fine, alpha_l, eps_lin, alpha_hi, xtol)
    return _with_log(out, log, nodes)


def _below(R, out: ScaleRefinement, p) -> bool:
    """The semantic point ``p`` has a lower e_t than its competitor at the same α."""
    return p.e_t < _competitor(R, out.competitor, float(p.alpha), out).e_t


def _competitor(R, comp: str, alpha: float, out: ScaleRefinement):
    """The competitor at ``alpha``, valid, at the order its own scale needs (:func:`nodes_for_scale` of its q):
    where that exceeds the refiner's order for it, the order is raised for every later solve, the solves made
    so far at the lower order are marked ``superseded`` in the log (kept there), and the point is solved again.
    At σ = 1.5 the uninformative point has q ≈ 1.7–1.9 near α_c against q ≈ 1 on the semantic branch."""
    s = R.valid(comp, alpha)
    need = nodes_for_scale(float(s.q)) if math.isfinite(float(s.q)) else 0
    if need > R.order(comp):
        R.raise_order(comp, need)
        out.competitor_nodes = need
        s = R.valid(comp, alpha)
    return s


def _with_branch(out: ScaleRefinement, sem: Branch) -> ScaleRefinement:
    """``out`` with the finer-order semantic branch's points (as records) and end."""
    out.points = [_point("semantic", p, out.nodes) for p in sorted(list(sem) + sem.extra, key=lambda p: p.alpha)
                  if math.isfinite(float(p.e_t))]
    out.semantic_end = None if sem.end is None else sem.end.to_dict()
    return out


def _follow_down(sem: Branch, alphas: list[float], start, out: ScaleRefinement, R, solver: PointSolver,
                 end_xtol: float, check_from: float) -> tuple[float | None, float | None]:
    """The semantic branch ``sem`` (filled here) at ``out.nodes`` down ``alphas`` one α at a time (each step a
    :func:`~.continuation.follow_branch` with the points so far as its history: the same adaptive step and end
    location as one follow). Each valid point is handed to the refiner ``R``; from ``check_from`` down the
    competitor is solved at each requested α, and the follow stops at the first where the semantic e_t is not
    below it. Returns (that α, the lowest α checked below the competitor above it); (None, that lowest α)
    where the follow reached the branch's end or the last α first. The points above ``check_from`` are checked
    (upwards) only where the first check already has the semantic e_t above."""
    params = sem.params
    history: list = []
    above: list = []     # requested points not checked (above ``check_from``), lowest last
    last_below: float | None = None
    for a in alphas:
        part = follow_branch(params, [a], "semantic", nodes=out.nodes, init=None if history else start,
                             history=history, max_steps=MAX_STEPS, rtol=SCALE_RTOL,
                             min_step=max(end_xtol, SCALE_END_XTOL), xtol=end_xtol,
                             solver=_capped(solver, out.nodes))
        sem.points += part.points
        sem.extra += part.extra
        sem.solves += part.solves
        new = sorted((p for p in part.extra + part.points if p.state.valid), key=lambda p: -p.alpha)
        history += new
        for p in new:
            if p.state in R.accept["semantic"]:
                R.known["semantic"].append(p)
                R.cache[("semantic", float(p.alpha))] = p.solution
        p = part.points[-1]
        if part.end is not None or not p.state.valid:
            sem.end = part.end
            break
        if p.alpha > check_from + 1e-6:     # (the α's are rounded to 1e-6: the coarse α_c itself is checked)
            above.append(p)
            continue
        if _below(R, out, p):
            last_below = float(p.alpha)
            continue
        if last_below is not None:
            return float(p.alpha), last_below
        not_below = float(p.alpha)
        for u in above[::-1]:          # already above at the first check: look back up
            if _below(R, out, u):
                return not_below, float(u.alpha)
            not_below = float(u.alpha)
        return not_below, None
    return None, last_below


def _alpha_l(out: ScaleRefinement, R, fine: list, alpha_l: float | None, eps_lin: float, alpha_hi: float,
             xtol: float) -> None:
    """α_l on the semantic branch at the refinement's order (step 4 of :func:`scale_refine`)."""
    a_c = float(out.alpha_c)
    first = [p for p in fine if p.alpha >= a_c - 1e-9]
    if not first:
        return
    at_c = first[0] if out.alpha_c_kind != "crossing" else R.solve("semantic", a_c)
    if point_state(at_c) is PointState.OK and at_c.eps_g < eps_lin:
        out.alpha_l, out.alpha_l_kind = a_c, "at alpha_c"
        return
    if not a_c < alpha_hi:
        return
    guess = max(a_c, alpha_l if alpha_l is not None else a_c)
    try:
        r = local_root(lambda a: R.valid("semantic", a).eps_g - eps_lin, guess, a_c, alpha_hi, sign_below=+1.0,
                       step=max(SCALE_STEP, 20 * xtol), xtol=xtol)
    except Unrefinable:
        r = None
    if r is not None:
        out.alpha_l, out.alpha_l_kind = float(r), "crossing"


def _with_log(out: ScaleRefinement, log: list[dict[str, Any]], nodes: int) -> ScaleRefinement:
    out.points = sorted(out.points + [dict(r, nodes=r.get("nodes") or nodes) for r in log],
                        key=lambda r: (r["alpha"], r["branch"]))
    return out
