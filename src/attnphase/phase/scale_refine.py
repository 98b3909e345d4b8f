"""Scale-aware refinement of α_c and α_l (MODEL.md §6 "Transition"; the split rule's resolution,
docs/theory_general.md "Split rule: the resolution follows the student's scale").

:func:`~attnphase.phase.transition.transition` follows the branches at a coarse outer order of the split rule
(``curve_nodes``, 4) and refines at ``nodes`` (8). Both are accurate only while the student norm q is small
(order 8 to ~1e-3 for q ≤ 0.7, :data:`~attnphase.theory.solver.SCALE_NODES`); at σ = 1.5 (q ≈ 1 at the lines)
the order-4 curves and the order-8 solves disagree qualitatively about where the semantic branch exists. Here
the semantic branch is followed again near the coarse α_c at the order the scale needs
(:func:`~attnphase.theory.solver.nodes_for_scale`), its competitor solved at the same α's, and α_c is located on
those solves: the e_t crossing, or the semantic branch's own end (birth/fold) where it is born already below the
competitor. α_l follows on the semantic branch at that order.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..model import ModelParams
from .continuation import MAX_STEPS, PointSolver, PointState, follow_branch, point_state
from .roots import Unrefinable, local_root

SCALE_WINDOW = 0.05
"""The semantic branch is followed at the finer order from its first valid curve point at or above the coarse
α_c + this, downwards (to α_c − :data:`SCALE_DEPTH` or below the coarse branch's end, whichever is lower)."""

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

    def to_dict(self) -> dict[str, Any]:
        return dict(nodes=self.nodes, q=self.q, ok=self.ok, reason=self.reason, alpha_c=self.alpha_c,
                    alpha_c_kind=self.alpha_c_kind,
                    alpha_c_bracket=None if self.alpha_c_bracket is None else list(self.alpha_c_bracket),
                    alpha_l=self.alpha_l, alpha_l_kind=self.alpha_l_kind, alpha_c_coarse=self.alpha_c_coarse,
                    alpha_c_kind_coarse=self.alpha_c_kind_coarse, alpha_l_coarse=self.alpha_l_coarse,
                    semantic_end=self.semantic_end, competitor_unstable=self.competitor_unstable,
                    points=self.points)

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
        line = (f"{head}; α_c = {self.alpha_c:.4f} in [{lo:.4f}, {hi:.4f}] at nodes = {self.nodes}: {what} "
                f"(the curves' α_c {self.alpha_c_coarse:.4f}, {self.alpha_c_kind_coarse})")
        if self.alpha_l is not None:
            line += f"; α_l = {self.alpha_l:.4f} at nodes = {self.nodes} ({self.alpha_l_kind})"
        if self.competitor_unstable:
            line += ("; the competitor is unstable at nodes = " f"{self.nodes} at α = "
                     + ", ".join(f"{a:.4g}" for a in self.competitor_unstable) + " below α_c: not certified")
        return line


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


def _follow_alphas(top: float, bottom: float) -> list[float]:
    """``top``, then steps of :data:`SCALE_STEP` down to ``bottom`` (inclusive)."""
    k = max(1, int(math.ceil((top - bottom) / SCALE_STEP - 1e-9)))
    return [round(top - i * (top - bottom) / k, 6) for i in range(k + 1)]


def scale_refine(params: ModelParams, branches: dict, alpha_c: float, alpha_c_kind: str, against: str,
                 alpha_l: float | None, eps_lin: float, *, nodes: int, q: float, solver: PointSolver,
                 xtol: float, end_xtol: float, alpha_hi: float, alpha_min: float,
                 window: float = SCALE_WINDOW, depth: float = SCALE_DEPTH) -> ScaleRefinement:
    """α_c and α_l located at split-rule order ``nodes`` near the coarse α_c (module docstring).

    1. The semantic branch is followed at ``nodes`` from its first valid curve point at or above
       ``alpha_c + window`` (warm-started there) down to ``alpha_c − depth`` or 0.05 below the coarse branch's
       lowest valid point, whichever is lower; its end at that order is located to ``max(end_xtol,``
       :data:`SCALE_END_XTOL```)``.
    2. The competitor (``against``: the positional branch, else the uninformative point) is solved at that order
       at the semantic branch's lowest valid α, with its growth factor.
    3. Where the semantic e_t is already below the competitor's there, α_c is the semantic branch's end
       (``semantic branch appears``; ``continuous`` where it ends by collapsing onto the uninformative point),
       bracketed by its last valid and first invalid α; else Brent on e_t^sem − e_t^comp (``crossing``).
    4. α_l on the semantic ε_g − ε_lin at that order, from α_c up (α_c itself where ε_g^sem < ε_lin there).
    """
    from .transition import _Refiner

    out = ScaleRefinement(nodes, float(q), float(alpha_c), alpha_c_kind, alpha_l)
    coarse = branches["semantic"].valid()
    above = [p for p in coarse if p.alpha >= alpha_c + window - 1e-9]
    start = above[0] if above else (coarse[-1] if coarse and coarse[-1].alpha > alpha_c else None)
    if start is None:
        out.reason = "no valid semantic curve point above α_c to start from"
        return out
    bottom = max(alpha_min, min(alpha_c - depth, coarse[0].alpha - 0.05))
    top = float(start.alpha)
    sem = follow_branch(params, _follow_alphas(top, bottom), "semantic", nodes=nodes, init=start.solution,
                        max_steps=MAX_STEPS, rtol=SCALE_RTOL, min_step=max(end_xtol, SCALE_END_XTOL), xtol=end_xtol,
                        solver=_capped(solver, nodes))
    out.points = [_point("semantic", p, nodes) for p in sorted(list(sem) + sem.extra, key=lambda p: p.alpha)
                  if math.isfinite(float(p.e_t))]
    fine = sem.valid()
    out.semantic_end = None if sem.end is None else sem.end.to_dict()
    if not fine:
        out.reason = f"the semantic branch has no valid point at nodes = {nodes} from α = {top:g} down"
        return out
    comp = "positional" if against == "positional" else "uninformative"
    comp_ok = (PointState.OK, PointState.COLLAPSED) if comp == "positional" else (PointState.OK, PointState.UNSTABLE)
    log: list[dict[str, Any]] = []
    known = {"semantic": fine + [p for p in coarse if p.alpha > top],
             comp: [p for p in branches["positional"].valid()] if comp == "positional" else []}
    R = _Refiner(params, known, nodes, log, solver, dict(semantic=(PointState.OK,), **{comp: comp_ok}),
                 stability=(comp,), rtol=SCALE_RTOL, retry={comp: SCALE_RETRY_STEPS})
    low = fine[0]
    try:
        c_low = R.valid(comp, low.alpha)
        if low.e_t < c_low.e_t:
            if sem.end is None:
                out.reason = (f"the semantic branch is below the {comp} point down to α = {low.alpha:g} at nodes = "
                              f"{nodes} (its end not reached)")
                return _with_log(out, log, nodes)
            e = sem.end
            out.alpha_c = float(e.alpha)
            out.alpha_c_bracket = (float(min(e.alpha_valid, e.alpha_invalid)), float(max(e.alpha_valid, e.alpha_invalid)))
            birth = comp == "uninformative" and e.kind is PointState.COLLAPSED
            out.alpha_c_kind = "continuous" if birth else "semantic branch appears"
        else:
            step = max(SCALE_STEP, 20 * xtol)

            def delta(a):
                return R.valid("semantic", a).e_t - R.valid(comp, a).e_t

            r = local_root(delta, min(max(alpha_c, low.alpha), top), low.alpha, top, sign_below=+1.0, step=step,
                           xtol=xtol)
            if r is None:
                out.reason = f"no e_t crossing of the semantic branch and the {comp} point found in [{low.alpha:.4g}, {top:g}]"
                return _with_log(out, log, nodes)
            out.alpha_c, out.alpha_c_kind = float(r), "crossing"
            out.alpha_c_bracket = (max(low.alpha, r - xtol), min(top, r + xtol))
    except Unrefinable as exc:
        out.reason = str(exc)
        return _with_log(out, log, nodes)
    out.ok = True
    out.competitor_unstable = sorted(float(s.alpha) for (b, a), s in R.cache.items()
                                     if b == comp and a < out.alpha_c and point_state(s) is PointState.UNSTABLE)
    _alpha_l(out, R, fine, alpha_l, eps_lin, alpha_hi, xtol)
    return _with_log(out, log, nodes)


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
