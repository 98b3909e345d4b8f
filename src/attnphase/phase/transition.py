"""α_c and α_l (MODEL.md §6 "Transition", §5): root finding on the continued branches, with an α range that
follows the physics.

* ``α_c(ω)``: root of ``e_t^sem(α) − e_t^pos(α)``; below it the positional fixed point is the global minimum,
  above it the semantic one. Where the positional branch has collapsed onto the uninformative point (m = 0;
  e.g. σ ≥ 0.7) the uninformative point is the competitor (``alpha_c_against``).
* ``α_l(ω)`` (≥ α_c): root of ``ε_g^global(α) − ε_lin``, global = branch with the lower ``e_t``.
* :func:`transition` extends the α range beyond the requested grid — up to :data:`ALPHA_MAX`, down to
  :data:`ALPHA_MIN` — until both are found; a root beyond those limits is reported as ``"> α_max"`` /
  ``"< α_min"`` (``alpha_c_bound``, ``alpha_l_bound``), with the reason.
"""

from __future__ import annotations

import math
from typing import Any, Callable, Sequence

import numpy as np

from ..errors import ParameterError
from ..model import ModelParams
from ..theory.solve import choose, point_solver
from ..theory.solver import nodes_for_scale, resolution_note
from ..theory.stepping import WalkPast
from .continuation import (END_XTOL, MAX_STEPS, Branch, BranchEnd, PointSolver, PointState, branch_table,
                           follow_branch, phase_qmc, unsolved_point)
from .alpha_l_order import alpha_l_error, fallback_notes
from .birth import BIRTH_ERROR, BIRTH_METHOD, relocate_birth
from .crossing import growth_crossing, precise_crossing
from .walk import FoldCheck
from .global_min import (Switch, alpha_l_from_table, alpha_l_global, decided, global_switch, global_table,
                         mark_ties, reclassification_notes, resolved_crossing, unknown_gap)
from .refine import L_REFINE_FAILED, refine_alpha_l, refine_lines
from .result import TransitionResult, global_reason, reasons
from .rsb1_crossing import NOT_REQUESTED, Rsb1Crossing, report as rsb1_report
from .roots import table_root
from .scale_refine import competitor_scale, line_scale, resolution, scale_refine
from .stability import global_minimum, mixed_at, survey
from .uncertainty import transition_errors


DEFAULT_ALPHAS = tuple(np.round(np.arange(0.3, 2.0001, 0.1), 6))
"""Default α grid of :func:`transition` (extended as needed, see :data:`ALPHA_MAX`)."""


ALPHA_MAX = 6.0
"""Largest α :func:`transition` extends to in search of α_c or α_l (the paper's diagram stops at 2; α_c(0.5)
at the default σ, λ is about 2.3)."""


ALPHA_MIN = 0.05
"""Smallest α :func:`transition` extends to (α_c below the default grid: σ ≥ 0.7, GD sees ~0.3)."""


DIAGRAM_NODES = 4
"""Default resolution of the diagram and of the α-grid curves (the solver's coarse split rule: e_t within
~1e-5 of the default ``nodes = 8``, which moves α_c by ~2e-3; see docs/notes/benchmarks-log.md)."""


def _extension(lo: float, hi: float, direction: str, alpha_max: float, alpha_min: float) -> list[float]:
    """The next block of α's beyond ``[lo, hi]``: steps of 0.1 up to α = 3 and 0.25 above, at most a doubling
    of the range (upwards); steps of 0.05 (downwards, to ``alpha_min``)."""
    if direction == "up":
        top = min(alpha_max, max(2.0 * hi, hi + 0.5))
        out, a = [], hi
        while a < top - 1e-9:
            a = round(a + (0.1 if a < 3.0 - 1e-9 else 0.25), 6)
            out.append(min(a, alpha_max))
        return sorted(set(out))
    out, a = [], lo
    while a > alpha_min + 1e-9:
        a = round(max(a - 0.05, alpha_min), 6)
        out.append(a)
    return out


def semantic_everywhere(gm) -> bool:
    """The global minimum is semantic at every α of the table where one is known and not tied
    (:func:`~.global_min.mark_ties`; α_c, if any, lies below)."""
    known = decided(gm) if gm is not None else None
    return bool(known is not None and len(known) and (known["global_kind"] == "semantic").all())


def _semantic_above_lin(gm, el: float) -> bool:
    """The global minimum is semantic at the top of the table with ε_g above ε_lin."""
    top = gm[gm["global_kind"] != "none"].sort_values("alpha")
    return bool(len(top) and top["global_kind"].iloc[-1] == "semantic" and top["eps_g_global"].iloc[-1] > el)


def _concat(a, b):
    import pandas as pd
    return pd.concat([a, b], ignore_index=True).sort_values(["alpha", "kind"], kind="stable").reset_index(drop=True)


def tables(branches, el):
    sem, pos = branch_table(branches["semantic"]), branch_table(branches["positional"])
    g = global_table(sem, pos, el)
    alpha_c = table_root(g["alpha"], g["delta_e_t"], "down")
    return sem, pos, g, alpha_c, alpha_l_from_table(g, alpha_c)


def _direction(g, branches, alpha_c, alpha_l) -> str | None:
    """Where to look for what is missing: "up", "down" or None (the reason is then in the tables)."""
    both = g.dropna(subset=["delta_e_t"])
    if alpha_c is None:
        if not branches["semantic"].valid():
            return "up"  # the semantic branch may appear at larger α
        if both.empty:
            sem_end = branches["semantic"].end
            return "up" if sem_end is None else None
        if both["delta_e_t"].iloc[-1] > 0:
            return "up"
        if both["delta_e_t"].iloc[0] < 0 and branches["semantic"].end is None:
            return "down"  # the semantic branch is global down to the bottom and still valid there
        return None
    if alpha_l is None:
        top = g.dropna(subset=["eps_lin_minus_eps_g"])
        if len(top) and top["eps_lin_minus_eps_g"].iloc[-1] < 0:
            return "up"
    return None


def _extend(params, branches, direction, block, kw):
    """Follow both branches onto the new α's of ``block`` (ordered away from the old range), each continued
    from its valid points; a branch that already ended on that side keeps its end's state there."""
    for b, br in branches.items():
        ended_this_side = br.end is not None and (direction == "down") == (b == "semantic")
        if ended_this_side:
            br.points.extend(unsolved_point(params, a, b, kw.get("nodes"), br.end.kind,
                                       f"beyond the branch's end near α={br.end.alpha:.4g}: {br.end.reason}")
                             for a in block)
            continue
        hist = br.valid()
        new = follow_branch(params, block, b, history=hist if direction == "up" else hist[::-1], **kw)
        old = br.points
        br.points = old + new.points
        br.extra.extend(new.extra)
        br.solves += new.solves
        if not hist and any(p.state.valid for p in new.points):
            _locate_start(params, br, old, new, direction, kw)
        else:
            br.end = br.end or new.end


def _locate_start(params, br: Branch, old: list, new: Branch, direction: str, kw) -> None:
    """The branch ``br`` had no valid point on its old α's and has some in the new block ``new``: follow it
    back from its valid points nearest the old range over the old α's (same adaptive step, so its end there
    is located to ``min_step``) — the old points get the state of that end instead of the failures of cold
    starts. The end found is the branch's ``end`` where the branch is followed towards the old range
    (semantic: downwards), else its ``begin``; ``new.end`` is the other one."""
    first = sorted(new.valid(), key=lambda p: p.alpha, reverse=(direction == "down"))
    hist = first[:2][::-1]   # the last one nearest the old range
    order = sorted((p.alpha for p in old), reverse=(direction == "up"))
    if new.begin is not None:   # already followed back to its end inside the block: the old α's lie beyond it
        e = new.begin
        back = Branch(br.branch, params, [unsolved_point(params, a, br.branch, kw.get("nodes"), e.kind,
                                                    f"beyond the branch's end near α={e.alpha:.4g}: {e.reason}")
                                          for a in order], end=e)
        new.begin = None
    else:
        back = follow_branch(params, order, br.branch, history=hist, **kw)
    at = {round(p.alpha, 9): p for p in back.points}
    br.points = [at.get(round(p.alpha, 9), p) for p in old] + new.points
    br.extra.extend(back.extra)
    br.solves += back.solves
    followed_down = br.branch == "semantic"   # its ``end`` is then the low side's, else the high side's
    if (direction == "up") == followed_down:
        br.end, br.begin = back.end, new.end or br.begin
    else:
        br.end, br.begin = new.end or br.end, back.end


def _scale_note(branches: dict, lines: list[float], nodes: int) -> str | None:
    """A note where the valid points up to the located lines have a student norm q beyond the range in which
    the split rule at order ``nodes`` was measured accurate (:func:`solver.resolution_note`)."""
    q = line_scale(branches, lines)
    note = resolution_note(q, nodes) if q is not None else None
    return None if note is None else f"α_c, α_l located with the split rule at nodes = {nodes}: {note}"


def transition(params: ModelParams, *, alphas: Sequence[float] | None = None, nodes: int | None = None,
               curve_nodes: int | None = DIAGRAM_NODES, progress: Callable[[str, int, int], None] | None = None,
               refine: bool = True, xtol: float = 1e-4, mixed_alphas: Sequence[float] | None = None,
               mixed_nodes: int = DIAGRAM_NODES, init: dict[str, Any] | None = None,
               max_steps: int = MAX_STEPS, extend: bool = True, alpha_max: float = ALPHA_MAX,
               alpha_min: float = ALPHA_MIN, end_xtol: float = END_XTOL,
               solver: PointSolver | None = None, fixed_points: bool = True, integrator: str = "auto",
               qmc_config: Any = None, rsb1: bool = False, fold_check: bool | None = None) -> TransitionResult:
    """α_c, α_l, the branches' ends and the mixed-fixed-point search at one parameter point.

    1. Both branches by continuation (:func:`~attnphase.phase.continuation.follow_branch`; semantic from the
       largest α down, positional from the smallest up) at resolution ``curve_nodes``, ends located to
       ``end_xtol`` in α.
    2. α_c, α_l bracketed on the tables; while one is missing and the tables say on which side it lies, the
       range is extended (``extend``) block by block up to ``alpha_max`` or down to ``alpha_min``.
    3. ``refine``: Brent to ``xtol`` in α with warm-started solves at resolution ``nodes`` (default: the
       solver's, 8): α_c from ``e_t^sem − e_t^pos``, α_l from the ε_g of the branch global just above α_c.
    4. ``fixed_points``: every fixed point that decides the global minimum per α (:func:`~.stability.survey`:
       pinned branches, the uninformative point, unpinned solves from saddles); where the lowest stable one
       changes kind into semantic at another place than the e_t crossing (a continuous birth of the semantic
       branch from the uninformative point, a competitor that loses stability, a mixed competitor), α_c is
       that change (:func:`global_switch`; where the competitor turns unstable, located by solves:
       :func:`growth_crossing`), ``alpha_c_against`` the kind below it; α_l is then refined on the semantic
       branch, and if it lies above the range (the global minimum semantic at the top with ε_g > ε_lin) the
       range is extended for it too, up to ``alpha_max``.
    5. Mixed fixed points at ``mixed_alphas`` (default: α_c; ``[]`` skips; the split rule's Newton search on
       its map — with another integrator the free solves of the survey are the mixed-point search).
    6. With QMC points (any L, r, r*, A, P: ``integrator``, ``qmc_config``), α_c and α_l carry an uncertainty
       from the integration error (:func:`~.uncertainty.line_uncertainty`): ``alpha_c_err``, ``alpha_l_err``.
    7. ``rsb1``: where RS is in doubt (competitor the uninformative point, L = 2), α_c at one step of replica
       symmetry breaking (:func:`~.rsb1_crossing.alpha_c_1rsb`; minutes of CPU); nothing is solved elsewhere.

    ``solver``: a stand-in :class:`~.continuation.PointSolver`; default the one-point solve of
    :func:`attnphase.theory.solve.point_solver` on ``integrator`` (``auto``: the split rule at L = 2, r = 1,
    the QMC engine elsewhere; ``nodes``, ``curve_nodes`` are the split rule's resolution, ``qmc_config`` the
    engine's).
    """
    from ..provenance import provenance as _prov
    from ..theory import DEFAULT_NODES, eps_lin as _eps_lin
    from ..theory.solver import STABILITY_NODES

    nodes = DEFAULT_NODES if nodes is None else nodes
    curve_nodes = nodes if curve_nodes is None else curve_nodes
    grid = np.array(sorted(DEFAULT_ALPHAS if alphas is None else alphas), float)
    if grid.size < 2 or (grid <= 0).any() or not np.isfinite(grid).all():
        raise ParameterError("alphas", "at least two finite values > 0", list(grid))
    if not xtol > 0:
        raise ParameterError("xtol", "> 0", xtol)
    if not alpha_min > 0 or not alpha_max > alpha_min:
        raise ParameterError("alpha_min, alpha_max", "0 < alpha_min < alpha_max", (alpha_min, alpha_max))
    if solver is None:
        if qmc_config is None and choose(params, integrator) == "qmc":
            qmc_config = phase_qmc()
        solver = point_solver(params, integrator, qmc_config=qmc_config)
    how = getattr(solver, "integrator", "stand-in")
    split_rule = how == "split"                  # the split rule at ``nodes``: its scale-aware refinement
    if how == "qmc":                             # one resolution (the QMC config's): no second order
        curve_nodes = nodes
    init = init or {}
    el = float(_eps_lin(params))
    # an unstable branch end and the survey's factors on the branch's own rule where it is finer than the default
    stab_nodes = curve_nodes if curve_nodes > STABILITY_NODES else None
    kw = dict(nodes=curve_nodes, max_steps=max_steps, min_step=end_xtol, solver=solver)
    if stab_nodes is not None:
        kw["stability_nodes"] = stab_nodes
    if fold_check is None:
        fold_check = how == "qmc"
    walk = WalkPast() if fold_check else None      # a failure at isolated α's is no branch end (QMC points)
    branches: dict[str, Branch] = {}
    folds: list[FoldCheck] = []
    walked: set = set()     # (branch, end, α's past it) already walked: the same walk again would repeat its solves
    for b in ("semantic", "positional"):
        order = list(grid[::-1]) if b == "semantic" else list(grid)
        cb = (lambda i, b=b: progress(b, i + 1, len(grid))) if progress else None
        branches[b] = follow_branch(params, order, b, init=init.get(b), progress=cb, **kw)
    if walk is not None:
        folds.extend(_walk_ends(params, branches, walk, kw, progress, walked))
    sem, pos, g, alpha_c, alpha_l = tables(branches, el)
    lo, hi = float(grid[0]), float(grid[-1])
    while extend:
        d = _direction(g, branches, alpha_c, alpha_l)
        if d is None or (d == "up" and hi >= alpha_max - 1e-9) or (d == "down" and lo <= alpha_min + 1e-9):
            break
        block = _extension(lo, hi, d, alpha_max, alpha_min)
        if progress:
            progress(f"extend {d} to α={block[-1]:g}", 0, 1)
        _extend(params, branches, d, block, kw)
        if walk is not None:
            folds.extend(_walk_ends(params, branches, walk, kw, progress, walked))
        lo, hi = min(lo, min(block)), max(hi, max(block))
        sem, pos, g, alpha_c, alpha_l = tables(branches, el)
    against = _against(g, alpha_c, branches)
    a_c_grid, a_l_grid = alpha_c, alpha_l
    a_c_ref = a_l_ref = None
    l_at = curve_nodes      # the order α_l was located at (the tables' until a refinement locates it)
    l_failed = False        # the first refinement tried α_l and kept the table value
    notes: list[str] = [fc.note for fc in folds]
    refined: list[dict[str, Any]] = []
    # the order the student's scale near the lines needs (the split rule only): where it exceeds ``nodes``, α_c
    # and α_l are located at that order at the end (scale_refine), not by the refinement at ``nodes``
    q_lines = line_scale(branches, [a for a in (alpha_c, alpha_l) if a is not None]) if split_rule else None
    scale_nodes = nodes_for_scale(q_lines) if q_lines is not None and refine and alpha_c is not None else None
    # (only beyond the default order: an explicit coarser ``nodes`` asks for speed and keeps its note)
    scale_nodes = scale_nodes if scale_nodes is not None and scale_nodes > max(nodes, DEFAULT_NODES) else None
    if refine and scale_nodes is None and (alpha_c is not None or alpha_l is not None):
        if progress:
            progress("refine", 0, 1)
        step = min(0.25 * float(np.min(np.diff(grid))), max(0.005, 20 * xtol))
        alpha_c, alpha_l, refined_at, more = refine_lines(params, branches, g, alpha_c, alpha_l, against, nodes, lo, hi,
                                                     xtol, step, refined, solver)
        l_failed = alpha_l is not None and refined_at is None
        l_at = refined_at or l_at
        a_c_ref = alpha_c if alpha_c != a_c_grid else None
        a_l_ref = alpha_l if alpha_l != a_l_grid else None
        notes.extend(more)
        if progress:
            progress("refine", 1, 1)
    fps = gm = None
    c_kind = "crossing" if alpha_c is not None else ""
    c_location: dict[str, Any] = {}
    if fixed_points:
        survey_kw = dict(nodes=curve_nodes, solver=solver, stability_nodes=stab_nodes)
        # the table α's and those where a walk past a false fold found the branch (the global minimum there)
        walked = {round(a, 9) for fc in folds if not fc.real for a in fc.solved}
        fps = survey(params, branches, sorted({round(p.alpha, 9) for p in branches["semantic"]} | walked),
                     progress=progress, **survey_kw)
        gm = mark_ties(global_minimum(fps), fps)
        def loc(kind, a0, a1):
            return growth_crossing(params, kind, a0, a1, fps, nodes=curve_nodes, solver=solver, xtol=end_xtol,
                                   stability_nodes=stab_nodes)
        sw = global_switch(gm, fps, branches, alpha_c, locate=loc)
        if sw is not None and sw.kind == "competitor loses stability" and sw.alpha_c is not None:
            sw, c_location = precise_crossing(params, sw, fps, nodes=nodes, curve_nodes=curve_nodes, solver=solver,
                                              xtol=end_xtol, notes=notes)
        if sw is None and alpha_c is not None and not resolved_crossing(fps, alpha_c, against):
            notes.append(f"the e_t crossing at {alpha_c:.4g} is dropped: e_t of the semantic point and the "
                         f"{against} point are within their errors next to it (no crossing is located there)")
            alpha_c = None
        if sw is not None:
            c_location.update(_switch_record(sw))
            if sw.alpha_c is not None and (alpha_c is None or sw.kind != "crossing" or sw.tied):
                notes.append(f"α_c from the global minimum's change of kind ({sw.kind}) "
                             f"{sw.against} → semantic" + ("" if alpha_c is None else
                                                           f"; the e_t crossing at {alpha_c:.4g} is not it"))
                alpha_c = sw.alpha_c
                a_l_table = alpha_l_global(gm, alpha_c, alpha_l, el, branches["semantic"])
                if a_l_table != alpha_l:
                    l_at = curve_nodes      # the global minimum's table
                if a_l_table is not None and a_l_table != alpha_l and a_l_table > alpha_c and refine:
                    a_l_table, at = refine_alpha_l(params, branches, a_l_table, alpha_c, hi, (nodes, curve_nodes), xtol,
                                              refined, solver, el, notes)
                    l_at = at or curve_nodes
                alpha_l = a_l_table
            against, c_kind = sw.against, sw.kind
        while (extend and alpha_c is not None and alpha_l is None and hi < alpha_max - 1e-9
               and _semantic_above_lin(gm, el)):
            # α_l lies above the range: the global minimum is semantic at the top with ε_g > ε_lin
            lo, hi, fps, gm, (sem, pos, g) = _extend_surveyed(params, branches, "up", (lo, hi), fps, kw, survey_kw,
                                                              el, (alpha_min, alpha_max), progress, "α_l")
            alpha_l, l_at = alpha_l_global(gm, alpha_c, None, el, branches["semantic"]), curve_nodes
            if alpha_l is not None and refine:
                alpha_l, at = refine_alpha_l(params, branches, alpha_l, alpha_c, hi, (nodes, curve_nodes), xtol, refined,
                                        solver, el, notes)
                l_at = at or curve_nodes
        while extend and alpha_c is None and lo > alpha_min + 1e-9 and semantic_everywhere(gm):
            # the semantic point is the global minimum down to the bottom of the range: α_c lies below it
            lo, hi, fps, gm, (sem, pos, g) = _extend_surveyed(params, branches, "down", (lo, hi), fps, kw,
                                                              survey_kw, el, (alpha_min, alpha_max), progress, "α_c")
            sw = global_switch(gm, fps, branches, None, locate=loc)
            if sw is not None and sw.alpha_c is not None:
                alpha_c, against, c_kind = sw.alpha_c, sw.against, sw.kind
                c_location.update(_switch_record(sw))
                notes.append(f"α_c from the global minimum's change of kind ({sw.kind}) {sw.against} → semantic, "
                             "below the starting range")
        above = gm[(gm["alpha"] > (alpha_c or 0.0)) & (gm["global_kind"] != "none")]
        if (refine and alpha_l is not None and alpha_c is not None and l_failed and alpha_l > alpha_c
                and len(above) and above["global_kind"].iloc[0] == "semantic"):
            # on the semantic branch, at ``nodes`` first: the first refinement may have failed on the branch the
            # table called global (σ = 0.7: the collapsed positional one), not on the solves (alpha_l_order)
            notes.remove(L_REFINE_FAILED)
            more: list[str] = []
            alpha_l, at = refine_alpha_l(params, branches, alpha_l, alpha_c, hi, (nodes, curve_nodes), xtol, refined,
                                         solver, el, more)
            notes.extend(fallback_notes(at, nodes, more, at_alpha_c=alpha_l == alpha_c))
            l_at = at or curve_nodes
    scaled = None
    born = None
    birth = birth_order(split_rule, refine, scale_nodes, c_kind, alpha_c, nodes, curve_nodes)
    if birth is not None:           # a continuous birth located on the curves: located again at ``nodes``
        if progress:
            progress(f"birth at nodes = {birth}", 0, 1)
        born = relocate_birth(params, branches["semantic"], alpha_c, nodes=birth, solver=solver, end_xtol=end_xtol,
                              max_steps=max_steps)
        notes.append(born.note(curve_nodes))
        if born.alpha is not None:
            alpha_c = born.alpha
            c_location.update(method=BIRTH_METHOD, err=None, nodes=birth, bracket=list(born.bracket),
                              alpha_curve_nodes=born.alpha_coarse, curve_nodes=curve_nodes)
    if scale_nodes is not None and alpha_c is not None:
        if progress:
            progress(f"refine at nodes = {scale_nodes}", 0, 1)
        scaled = scale_refine(params, branches, alpha_c, c_kind, against, alpha_l, el, nodes=scale_nodes,
                              q=q_lines, solver=solver, xtol=xtol, end_xtol=end_xtol, alpha_hi=hi,
                              alpha_min=alpha_min, competitor_q=competitor_scale(fps, branches, against, alpha_c))
        notes.append(scaled.note(curve_nodes))
        if scaled.ok:
            alpha_c, c_kind = scaled.alpha_c, scaled.alpha_c_kind
            if scaled.alpha_l is not None:
                alpha_l = scaled.alpha_l
            elif alpha_l is not None and alpha_l < alpha_c:
                notes.append(f"α_l not located at nodes = {scale_nodes}; the curves' α_l {alpha_l:.4g} lies below "
                             "the refined α_c and is dropped")
                alpha_l = None
            c_location = dict(nodes=scale_nodes, bracket=list(scaled.alpha_c_bracket), alpha_curve_nodes=a_c_grid,
                              curve_nodes=curve_nodes, kind=c_kind)
        if progress:
            progress(f"refine at nodes = {scale_nodes}", 1, 1)
    gap = unknown_gap(gm, alpha_c, alpha_l, el, branches["semantic"])
    if gap is not None:
        notes.append(gap.note)
        alpha_l = None
    c_bound, c_reason, l_bound, l_reason = reasons(g, branches, alpha_c, alpha_l, lo, hi, alpha_min, alpha_max)
    if gap is not None:
        l_bound, l_reason = gap.bound, gap.reason
    if alpha_c is None and gm is not None:
        if semantic_everywhere(gm):
            c_bound = f"< {lo:g}"
        c_reason = global_reason(gm, lo, hi) + "; " + c_reason
    zero = zero_point_note(params, branches)      # any solver (the split rule, the engine, a stand-in)
    if zero is not None:
        notes.append(zero)
        if alpha_c is None and not any(br.valid() for br in branches.values()):
            c_reason = zero + "; " + c_reason
    notes.extend(reclassification_notes(fps))
    if mixed_alphas is None:
        mixed_alphas = [round(alpha_c, 4)] if alpha_c is not None else []
    if scaled is not None and scaled.ok:
        scale = resolution(scaled.points)       # each point against its own order (the competitor's may be finer)
        scale = None if scale is None else f"α_c located with the split rule at nodes = {scale_nodes}: {scale}"
    else:
        scale = _scale_note(branches, [a for a in (alpha_c, alpha_l) if a is not None], nodes) if split_rule else None
    if scale is not None:
        notes.append(scale)
    if how in ("split", "stand-in"):
        mixed = mixed_at(params, {b: list(br) + br.extra for b, br in branches.items()}, mixed_alphas,
                         nodes=mixed_nodes, progress=progress)
    else:
        mixed = [dict(alpha=float(a), converged=False, mixed=False,
                      kind=f"not searched by Newton ({how}): the survey's free solves are the mixed-point search")
                 for a in mixed_alphas]
    prov = _prov(dict(params=params.to_dict(), alphas=list(map(float, grid)), nodes=nodes, curve_nodes=curve_nodes,
                      xtol=xtol, refine=refine, mixed_alphas=list(map(float, mixed_alphas)), mixed_nodes=mixed_nodes,
                      max_steps=max_steps, extend=extend, alpha_min=alpha_min, alpha_max=alpha_max,
                      end_xtol=end_xtol, alpha_range=[lo, hi], alpha_c_location=c_location,
                      scale_refinement=None if scaled is None else scaled.to_dict(), fold_check=fold_check,
                      fold_checks=[fc.to_dict() for fc in folds]),
                 kind="transition", states={b: br.states() for b, br in branches.items()},
                 solves={b: br.solves for b, br in branches.items()})
    if scaled is not None and scaled.ok:
        c_nodes = scale_nodes
        l_nodes = scale_nodes if scaled.alpha_l is not None else l_at
    else:
        c_nodes = born.nodes if born is not None and born.alpha is not None else _c_order(
            c_kind, c_location, alpha_c, a_c_ref, nodes, curve_nodes)
        l_nodes = c_nodes if alpha_l is not None and alpha_l == alpha_c else l_at
    above = gm[(gm["alpha"] > alpha_c) & (gm["global_kind"] != "none")] if gm is not None and alpha_c else None
    end = branches["semantic"].end
    if scaled is not None and scaled.ok and scaled.alpha_c_bracket is not None:   # the end at the finer order
        end = BranchEnd(scaled.alpha_c, end.kind if end is not None else PointState.COLLAPSED,
                        *scaled.alpha_c_bracket)
    errs = transition_errors(fps, alpha_c, c_kind, against, alpha_l,
                             str(above["global_kind"].iloc[0]) if above is not None and len(above) else None,
                             end, c_location)
    if born is not None and born.alpha is not None:
        errs.update(alpha_c_err=born.error, alpha_c_err_reason=BIRTH_ERROR)
    errs["alpha_l_err"], errs["alpha_l_err_reason"] = alpha_l_error(
        alpha_l, l_nodes, nodes, split_rule, errs["alpha_l_err"], errs["alpha_l_err_reason"])
    r1 = rsb1_report(params, alpha_c, against, progress=progress) if rsb1 else Rsb1Crossing(None, None, NOT_REQUESTED)
    return TransitionResult(params, alpha_c, alpha_l, el, sem, pos, g, branches, against, c_bound, l_bound,
                            c_reason, l_reason, (lo, hi), a_c_grid, a_l_grid, pinned_crossing(sem, g), mixed,
                            refined, notes, prov, fixed_points=fps, global_minimum=gm, alpha_c_kind=c_kind,
                            alpha_c_location=c_location, alpha_c_nodes=None if alpha_c is None else c_nodes,
                            alpha_l_nodes=None if alpha_l is None else l_nodes,
                            scale_refinement={} if scaled is None else scaled.to_dict(), integrator=how,
                            rsb1=r1, **errs)


def _walk_key(br: Branch) -> tuple:
    """What identifies a walk past ``br``'s end: the branch, the end and the requested α's past it."""
    e = br.end
    sign = 1.0 if e.alpha_invalid > e.alpha_valid else -1.0
    return (br.branch, e, tuple(round(float(p.alpha), 9) for p in br.points if sign * (p.alpha - e.alpha_valid) > 1e-9))


def _walk_ends(params, branches, walk: WalkPast, kw, progress, walked: set) -> list[FoldCheck]:
    """After following (and after every extension): every branch whose end is ``ended`` followed on past it by
    :func:`~.continuation.follow_branch` with the ``walk`` policy (from its valid points before the end, over
    its α's past it), except where the same end with the same α's past it was walked before (``walked``,
    updated here). Returns the walks' records."""
    out = []
    for b, br in branches.items():
        if br.end is None or br.end.kind is not PointState.ENDED:
            continue
        key = _walk_key(br)
        if key in walked or not key[2]:
            continue
        walked.add(key)
        if progress:
            progress(f"{b} past its end at α={br.end.alpha:.4g}", 0, 1)
        e = br.end
        sign = 1.0 if e.alpha_invalid > e.alpha_valid else -1.0
        hist = sorted((p for p in br.valid() if sign * (p.alpha - e.alpha_valid) <= 1e-9), key=lambda p: sign * p.alpha)
        new = follow_branch(params, list(key[2]), b, history=hist, end=e, walk_past=walk, **kw)
        br.solves += new.solves
        out.extend(new.walks)
        if not new.walks or new.walks[-1].real:
            continue                        # the end stands: the branch as it was
        at = {round(float(p.alpha), 9): p for p in new.points}
        br.points = [at.get(round(float(p.alpha), 9), p) for p in br.points]
        br.extra.extend(new.extra)
        br.end = new.end
    return out


def _extend_surveyed(params, branches, direction: str, span: tuple[float, float], fps, kw, survey_kw, el: float,
                     limits: tuple[float, float], progress, line: str):
    """One block of α's beyond ``span`` on ``direction`` (:func:`_extension`, within ``limits`` = (α_min,
    α_max)) for the ``line`` the survey still misses (α_c below the range, α_l above): both branches followed
    onto it, the survey of every fixed point extended to it. Returns the new range's (lo, hi), the survey, its
    global-minimum table (ties marked) and the branch tables (sem, pos, g)."""
    lo, hi = span
    block = _extension(lo, hi, direction, limits[1], limits[0])
    if progress:
        progress(f"extend {direction} to α={block[-1]:g} ({line})", 0, 1)
    _extend(params, branches, direction, block, kw)
    fps = _concat(fps, survey(params, branches, block, **survey_kw))
    sem, pos, g, _, _ = tables(branches, el)
    return min(lo, min(block)), max(hi, max(block)), fps, mark_ties(global_minimum(fps), fps), (sem, pos, g)


def _switch_record(sw: Switch) -> dict[str, Any]:
    """What ``alpha_c_location`` says of the global minimum's change (:class:`~.global_min.Switch`): the table
    bracket, the tied rows inside it, how a continuous onset was located (and its upper bound)."""
    rec: dict[str, Any] = dict(switch_bracket=[float(x) for x in sw.bracket])
    if sw.tied:
        rec["tied"] = list(sw.tied)
    if sw.method:
        rec["method"] = sw.method
    if sw.err is not None:
        rec.update(err=sw.err, rows=list(sw.rows))
    if sw.upper is not None:
        rec.update(upper=sw.upper[0], upper_err=sw.upper[1])
    return rec


def birth_order(split_rule: bool, refine: bool, scale_nodes: int | None, kind: str, alpha_c: float | None,
                nodes: int, curve_nodes: int) -> int | None:
    """The order a ``continuous`` α_c (the semantic branch's birth from the uninformative point) is located at
    again: ``nodes`` where the split-rule curves (``curve_nodes`` < ``nodes``) located it and no scale-aware order
    is asked for. The birth is the end of the branch followed on the curves, which the Brent refinement at
    ``nodes`` never touches; the coarse order's error there is not the ~2e-3 of an e_t crossing at the paper's
    σ = 0.5: at σ = 0.7, ω = 0.3 the birth lies at 0.6409 at nodes = 4, 0.6502 at 6 and 0.6500 at 8
    (docs/notes/2026-12-06-birth-resolution.md; α_l there 0.7567 at nodes = 4, 0.7764 located at nodes = 8:
    docs/notes/2026-12-06-alpha-l-resolution.md). None: nothing to do."""
    if not (split_rule and refine and kind == "continuous" and alpha_c is not None and scale_nodes is None):
        return None
    return nodes if curve_nodes < nodes else None


def _c_order(kind: str, location: dict, alpha_c, refined, nodes: int, curve_nodes: int) -> int:
    """The order α_c was located at without a scale-aware refinement: the growth factor's crossing at its
    location's order; a crossing at ``nodes`` where the Brent refinement gave it; else the curves' order (a branch
    end, a table interpolation)."""
    if kind == "competitor loses stability":
        return int(location.get("nodes", curve_nodes))
    return nodes if refined is not None and alpha_c == refined else curve_nodes


def at_zero_q(sol, sigma: float) -> bool:
    """Whether a solved point is the q = 0 point: q = 0 exactly (the split rule reports it so) or below the
    floor ``ZERO_Q·σ²`` (the QMC engine's q there is round-off, ~1e-22: ``engine.zero_q_record``)."""
    from ..theory.zero_point import ZERO_Q
    q = getattr(sol, "q", None)
    return q is not None and math.isfinite(q) and abs(q) < ZERO_Q * sigma ** 2


def zero_point_note(params: ModelParams, branches) -> str | None:
    """Where the followed branches sit at the q = 0 point (:mod:`attnphase.theory.zero_point`, a strong ridge;
    :func:`at_zero_q`), one line saying so, with the point's stability and the λ below which a positional
    (semantic) branch leaves it at the largest such α (growth factor 1 against m, θ; it falls with α); None
    where no solved point is at q = 0. Any point solver (was: the split rule's only, so a transition through
    another solver never quoted the onsets) and any L, A, P; the stability and onsets where L·r* ≤ 6 (the
    closed form's range)."""
    from ..theory.zero_point import MAX_DIMS, branch_onsets, largest_growth
    at = {b: sorted(p.alpha for p in list(br) + br.extra if at_zero_q(p, params.sigma))
          for b, br in branches.items()}
    if not any(at.values()):
        return None
    both = all(at.values()) and not any(br.valid() for br in branches.values())
    alphas = sorted({a for v in at.values() for a in v})
    top = alphas[-1]
    where = "; ".join(f"{b} at {len(v)} α's in [{min(v):g}, {max(v):g}]" for b, v in at.items() if v)
    head = ("both branches collapse to q = 0 (the student Q = 0) wherever solved" if both
            else "q = 0 (the student Q = 0) reached") + f" ({where}); there e_t = α ε_g"
    small = params.L * params.r_star <= MAX_DIMS
    growth = largest_growth(params, top) if small else math.nan
    stab = (f"; the q = 0 point at α = {top:g} is " + ("stable" if growth <= 1 else "unstable")
            + f" (largest growth factor {growth:.3g})") if math.isfinite(growth) else ""
    onsets = [f"a {name} branch leaves q = 0 for λ < {lam:.4g}"
              for name, lam in (branch_onsets(params, top) if small else {}).items()]
    return head + stab + (f"; at α = {top:g} " + ", ".join(onsets) + f" (here λ = {params.lam:g})"
                          if onsets else "")


def _against(g, alpha_c, branches) -> str:
    """The semantic branch's competitor: the positional branch, or the uninformative point where the
    positional branch collapsed onto it (just below α_c; anywhere when there is no α_c)."""
    if not branches["positional"].valid():
        return "uninformative"
    rows = g[g["e_t_pos"].notna()]
    if alpha_c is not None:
        rows = rows[rows["alpha"] < alpha_c]
    return str(rows["kind_pos"].iloc[-1]) if len(rows) and alpha_c is not None else "positional"


def pinned_crossing(sem, g) -> float | None:
    """α where the *pinned* semantic branch, its unstable (saddle) part included, crosses the competitor's
    e_t: the transition a dynamics confined to m = 0 would see. Only reported next to α_c (never as it)."""
    s = sem[sem["state"].isin(["ok", "unstable"])][["alpha", "e_t"]]
    m = s.merge(g[["alpha", "e_t_pos"]].dropna(), on="alpha")
    return table_root(m["alpha"], m["e_t"] - m["e_t_pos"], "down") if len(m) >= 2 else None
