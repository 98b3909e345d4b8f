"""Where a fixed point's growth factor crosses +1 (MODEL.md §7), located by solves: regula falsi on
warm-started solves (:func:`growth_crossing`), a local least-squares fit (:func:`fit_crossing`), and α_c of kind
``competitor loses stability`` located again at the transition's resolution (:func:`precise_crossing`)."""

from __future__ import annotations

import math
from dataclasses import replace
from types import SimpleNamespace
from typing import Any

import numpy as np

from ..model import ModelParams
from .continuation import CURVE_RTOL, END_XTOL, PointSolver
from .global_min import Switch, factor_bracket


CROSSING_WIDEN = 2
"""How many neighbouring table rows :func:`growth_crossing` tries on each side when the table's bracket of
+1 (its factors were evaluated at the survey's resolution) does not bracket +1 at ``stability_nodes``."""


def growth_crossing(params: ModelParams, kind: str, a0: float, a1: float, fps, *, nodes: int | None,
                    solver: PointSolver, xtol: float = END_XTOL, max_solves: int = 8,
                    stability_nodes: int | None = None, info: dict[str, Any] | None = None) -> float | None:
    """Where the growth factor of the fixed point ``kind`` (``uninformative`` or a pinned branch) crosses +1
    between ``a0`` (factor ≤ 1 in the table ``fps``) and ``a1`` (> 1): Illinois regula falsi on warm-started
    solves at resolution ``nodes`` until the bracket is below ``xtol`` or ``max_solves`` solves are spent.

    ``stability_nodes`` (MODEL.md §7, :func:`attnphase.theory.solve_point`): the rule the factor is evaluated
    on; None keeps the solver's default and trusts the table's factors at ``a0``, ``a1``. Given, the two ends
    are solved again at that resolution (the table's factors, from the survey's cheaper rule, may not bracket
    +1 there: σ = 1, ω = 0.02 crosses at 0.499 on nodes 4, 0.513 on nodes 8) and, if they do not bracket +1,
    the bracket is widened to the neighbouring table rows of ``kind`` (:data:`CROSSING_WIDEN` per side).
    None when no bracket is found or a solve fails (the caller falls back); ``info`` (a dict) is filled with
    the resolution, the final bracket, the number of solves and, on None, the reason (``note``)."""
    from .stability import SURVEY_MAX_STEPS

    info = {} if info is None else info
    info.update(kind=kind, nodes=nodes, stability_nodes=stability_nodes, table_bracket=[float(a0), float(a1)],
                solves=0, note="")
    rows = fps[fps["kind"] == kind].sort_values("alpha")
    at = {float(a): r for a, (_, r) in zip(rows["alpha"], rows.iterrows())}
    if a0 not in at or a1 not in at:
        info["note"] = "no table row at an end of the bracket"
        return None
    extra = {} if stability_nodes is None else dict(stability_nodes=stability_nodes)

    def start_of(r):
        return SimpleNamespace(q=float(r["q"]), m=float(r["m"]), V=float(r["V"]), theta=float(r["theta"]),
                               branch=kind)

    def solve(a, start):
        info["solves"] += 1
        s = solver(params, float(a), kind, nodes=nodes, init=start, max_steps=SURVEY_MAX_STEPS, stability=True,
                   rtol=CURVE_RTOL, **extra)
        if not s.converged or s.stability is None or not math.isfinite(s.stability):
            return None
        return s

    if stability_nodes is None:
        f0, f1 = (float(at[a]["stability"]) - 1.0 for a in (a0, a1))
        starts = {a0: start_of(at[a0]), a1: start_of(at[a1])}
        if not (math.isfinite(f0) and math.isfinite(f1) and f0 <= 0.0 < f1):
            info["note"] = "the table's factors do not bracket +1"
            return None
    else:
        b = _rebracket(at, a0, a1, lambda a: solve(a, start_of(at[a])), info)
        if b is None:
            return None
        (a0, f0, s0), (a1, f1, s1) = b
        starts = {a0: s0, a1: s1}
    info["bracket"] = [float(a0), float(a1)]
    lo, hi, side = a0, a1, 0
    tol = xtol if stability_nodes is None else max(xtol, 2.0 * CROSSING_FIT[1])   # (the fit does the rest)
    for _ in range(max_solves):
        if hi - lo <= tol:
            break
        a = lo - f0 * (hi - lo) / (f1 - f0)
        a = min(max(a, lo + 0.05 * (hi - lo)), hi - 0.05 * (hi - lo))
        st = starts[lo] if a - lo < hi - a else starts[hi]
        s = solve(a, st)
        if s is None:
            info["note"] = f"solve failed at α = {a:.4g}"
            return None
        f = float(s.stability) - 1.0
        if f <= 0.0:
            lo, f0 = a, f
            f1 = f1 * 0.5 if side == -1 else f1
            side = -1
        else:
            hi, f1 = a, f
            f0 = f0 * 0.5 if side == 1 else f0
            side = 1
        starts[a] = s if stability_nodes is not None else st   # (the table's rows: same resolution as before)
    info["final_bracket"] = [float(lo), float(hi)]
    r = float(lo - f0 * (hi - lo) / (f1 - f0))
    if stability_nodes is None:
        return r
    return _fit_crossing(r, lambda a: solve(a, min(starts.items(), key=lambda kv: abs(kv[0] - a))[1]), info)


CROSSING_FIT = (9, 0.005)
"""Points and spacing in α of the local fit of :func:`_fit_crossing`."""


def _fit_crossing(guess: float, solve, info: dict, fit: tuple[int, float] = CROSSING_FIT) -> float | None:
    """The growth factor's crossing of +1 as the root of a least-squares line through ``fit[0]`` evaluations
    spaced ``fit[1]`` around ``guess`` (recentred once if the root falls outside), outliers beyond 3 MADs
    (at least 1e-3) dropped. The factor carries isolated glitches of up to ~0.015 at nodes 8 (σ = 1, ω = 0.02,
    λ = 0.01: 0.985 at α = 0.53 between 0.998 at 0.52 and 1.005 at 0.535), which led the regula falsi to
    0.534 instead of ≈ 0.523. ``info`` gets the fit's points, the dropped ones and the root's standard error
    (``fit_stderr``). None when fewer than four evaluations succeed."""
    k, h = fit
    centre = float(guess)
    for attempt in range(2):
        a = centre + h * (np.arange(k) - (k - 1) / 2)
        sols = [solve(x) for x in a]
        ok = np.array([s is not None for s in sols])
        a = a[ok]
        y = np.array([float(s.stability) - 1.0 for s in sols if s is not None])
        if a.size < 4:
            info["note"] = f"the local fit's solves failed ({int((~ok).sum())} of {k})"
            return None
        keep = np.ones(a.size, bool)
        for _ in range(2):
            c = np.polyfit(a[keep], y[keep], 1)
            res = y - np.polyval(c, a)
            mad = float(np.median(np.abs(res[keep] - np.median(res[keep]))))
            keep = np.abs(res) <= max(3.0 * 1.4826 * mad, 1e-3)
        c = np.polyfit(a[keep], y[keep], 1)
        if not c[0] > 0:
            info["note"] = "the local fit of the growth factor is not increasing"
            return None
        root = float(-c[1] / c[0])
        n = int(keep.sum())
        s_res = float(np.sqrt(np.sum((y[keep] - np.polyval(c, a[keep])) ** 2) / max(n - 2, 1)))
        info.update(fit_alphas=[float(x) for x in a], fit_factors=[float(v + 1.0) for v in y],
                    fit_dropped=[float(x) for x in a[~keep]], fit_slope=float(c[0]),
                    fit_stderr=float(s_res / c[0] / math.sqrt(n)), regula_falsi=float(guess))
        if a.min() - h <= root <= a.max() + h:
            return root
        centre = root
    info["note"] = f"the local fit's root {root:.4g} stays outside its window"
    return None


def _rebracket(at: dict, a0: float, a1: float, solve, info: dict):
    """``((α, factor − 1, solution), …)`` for a pair of table α's (``a0``, ``a1`` or up to
    :data:`CROSSING_WIDEN` neighbours beyond them) whose factors, solved again by ``solve``, go from ≤ 0 to > 0;
    None (with ``info["note"]``) when none is found or a solve fails."""
    alphas = sorted(at)
    i0, i1 = alphas.index(a0), alphas.index(a1)
    cache: dict[float, Any] = {}

    def f(a):
        if a not in cache:
            cache[a] = solve(a)
        s = cache[a]
        return None if s is None else float(s.stability) - 1.0

    widened = []
    for _ in range(CROSSING_WIDEN + 1):
        v0, v1 = f(alphas[i0]), f(alphas[i1])
        if v0 is None or v1 is None:
            info["note"] = f"solve failed at α = {alphas[i0] if v0 is None else alphas[i1]:g}"
            return None
        if v0 <= 0.0 < v1:
            info["widened"] = widened
            return ((alphas[i0], v0, cache[alphas[i0]]), (alphas[i1], v1, cache[alphas[i1]]))
        if v0 > 0.0 and i0 > 0:          # already above +1 at the lower end: one row further down
            i0 -= 1
            widened.append(alphas[i0])
        elif v1 <= 0.0 and i1 < len(alphas) - 1:   # still at or below +1 at the upper end: one row up
            i1 += 1
            widened.append(alphas[i1])
        else:
            break
    info["widened"] = widened
    info["note"] = (f"the factors at nodes {info['stability_nodes']} do not bracket +1 on the table rows "
                    f"{alphas[i0]:g}–{alphas[i1]:g}")
    return None


def precise_crossing(params: ModelParams, sw: Switch, fps, *, nodes: int, curve_nodes: int, solver: PointSolver,
                     xtol: float, notes: list[str]) -> tuple[Switch, dict[str, Any]]:
    """α_c of kind ``competitor loses stability`` located again at the transition's resolution: the competitor's
    growth factor solved and evaluated at ``nodes`` (:func:`growth_crossing` with ``stability_nodes = nodes``),
    started from the table's bracket of +1. :func:`global_switch` decides the kind on the survey's resolution
    (``curve_nodes``: the table, the semantic branch's fold and the crossing compared on one rule); the
    reported α must not carry that rule's bias (σ = 1, ω = 0.02: the factor runs ~0.01 high on nodes 4, which
    moved the crossing by ~0.014). Returns the switch (unchanged when the precise location fails: a note says
    so) and the location record (``alpha_curve_nodes``, ``difference`` = precise − survey's)."""
    loc: dict[str, Any] = dict(alpha_curve_nodes=float(sw.alpha_c), curve_nodes=curve_nodes)
    if curve_nodes == nodes:   # the survey's factors are on this rule already (transition: stability_nodes)
        loc.update(nodes=nodes, stability_nodes=nodes, difference=0.0)
        return sw, loc
    b = factor_bracket(fps, sw.against, *sw.bracket)
    if b is None:
        loc.update(nodes=curve_nodes, note="the table's factors do not bracket +1")
    else:
        r = growth_crossing(params, sw.against, b[0][0], b[1][0], fps, nodes=nodes, solver=solver, xtol=xtol,
                            stability_nodes=nodes, info=loc)
        if r is not None:
            loc.update(alpha=r, difference=r - float(sw.alpha_c))
            return replace(sw, alpha_c=r), loc
    notes.append(f"α_c (the {sw.against} point's growth factor crossing +1) left at the survey's resolution "
                 f"nodes = {curve_nodes}: not located at nodes = {nodes} ({loc.get('note', '')})")
    loc.update(nodes=curve_nodes, stability_nodes=curve_nodes)
    return sw, loc
