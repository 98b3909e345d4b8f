"""The diagram's resolution check (MODEL.md §6 "Transition"): the diagram solves every cell at the coarse outer
order :data:`~.transition.DIAGRAM_NODES`, a shortcut validated only at the paper's parameters. After the grid,
:func:`resolution_check` solves the cells that decide α_c(ω) and α_l(ω) again at :data:`FINER_NODES` (warm-started
from the coarse states, on the diagram's point solver) at a few ω, locates both crossings again the way the
diagram does (:func:`~.roots.table_root`, :func:`~.global_min.alpha_l_from_table` on the same table) and reports
the shifts. Skipped at exactly the validated parameters (docs/phase_diagram.md, "Resolution")."""

from __future__ import annotations

import math
from typing import Any, Sequence

import numpy as np

from ..model import ModelParams
from .continuation import CURVE_RTOL, MAX_STEPS, PointState, point_state
from .global_min import alpha_l_from_table
from .roots import table_root
from .transition import DIAGRAM_NODES

FINER_NODES = 8
"""The order the decisive cells are solved again at (the solver's default)."""

PROBE_OMEGAS = 6
"""At most this many ω are probed: every 8th ω of the grid and the last one."""

RESOLUTION_TOL = 2.5e-3
"""Largest accepted shift of α_c or α_l between the diagram's order and :data:`FINER_NODES`: the ~2e-3 the coarse
order moves α_c by at the paper's parameters, where it was validated (docs/notes/benchmarks-log.md), plus the
probe's own interpolation noise. A larger shift is more than the shortcut was accepted for."""

VALIDATED = ("validated at the paper's parameters (σ = 0.5, λ = 0.01, the default A, P, L = 2, r = 1, nodes = 4): "
             "docs/phase_diagram.md, Resolution")

PROBE_STEPS = MAX_STEPS
"""Iteration cap of a check's solve, the continuation's: warm-started from the coarse state a cell converges in
~10 iterations (10 at σ = 0.7, ω = 0.4, α = 0.85), but a cap of 30 left one more cell unsolved there (σ = 0.7,
ω = 0.4: Δα_l 0.0013 reported instead of 0.037) for 12 % less CPU."""

CUBIC_CELLS = 4
"""Cells around a crossing that :func:`~.roots.table_root`'s cubic passes through."""


def skip_reason(params: ModelParams, nodes: int | None, solver: Any, check: bool | None) -> str | None:
    """Why the check is not run (None: run it). ``check``: None runs it except at the validated defaults, True
    always, False never."""
    from ..theory.solve import choose

    if check is False:
        return "turned off (resolution_check=False / --no-resolution-check)"
    if nodes is None or nodes >= FINER_NODES:
        return f"nodes = {nodes or FINER_NODES} is already the finer order {FINER_NODES}"
    if getattr(solver, "integrator", None) == "qmc" or (solver is None and choose(params, "auto") == "qmc"):
        return "the QMC engine: its resolution is qmc_config, not nodes"
    if check is None and nodes == DIAGRAM_NODES and _paper_point(params):
        return VALIDATED
    return None


def _paper_point(params: ModelParams) -> bool:
    ref = ModelParams(omega=params.omega)
    return params.to_dict() == ref.to_dict()


def probe_omegas(omegas: Sequence[float]) -> list[float]:
    """Every 8th ω and the last one, at most :data:`PROBE_OMEGAS` of them (evenly spread where more)."""
    n = len(omegas)
    idx = sorted(set(range(0, n, 8)) | {n - 1})
    if len(idx) > PROBE_OMEGAS:
        idx = sorted({int(round(x)) for x in np.linspace(0, n - 1, PROBE_OMEGAS)})
    return [float(omegas[i]) for i in idx]


def cells_around(alpha, y, direction: str) -> list[float]:
    """The α's of the (finite) cells :func:`~.roots.table_root` interpolates the first ``direction`` crossing
    of ``y`` through; [] where there is none."""
    a, y = np.asarray(alpha, float), np.asarray(y, float)
    ok = np.isfinite(a) & np.isfinite(y)
    a, y = a[ok], y[ok]
    order = np.argsort(a)
    a, y = a[order], y[order]
    for i in range(1, len(a)):
        if (y[i - 1] < 0) != (y[i] < 0):
            if (direction == "down" and y[i - 1] < 0) or (direction == "up" and y[i - 1] > 0):
                continue
            lo = max(0, min(i - CUBIC_CELLS // 2, len(a) - CUBIC_CELLS))
            return [float(x) for x in a[lo:lo + CUBIC_CELLS]]
    return []


def resolution_check(params: ModelParams, grid, lines, states: dict[float, dict], *, nodes: int, solver: Any,
                     finer_nodes: int = FINER_NODES, tol: float = RESOLUTION_TOL) -> dict[str, Any]:
    """The check (module docstring) on the diagram's ``grid`` and ``lines``; ``states``: ω → {branch: {round(α, 9):
    coarse state}} (the diagram's valid points). Returns the provenance record: nodes, finer_nodes, omegas,
    per_omega (Δα_c, Δα_l, largest relative Δe_t, cells, cells that failed at the finer order, cells kept
    without a coarse state), the maxima, cells (0: no crossing on the grid at the probed ω, nothing checked),
    tol, ok and cpu_s (its CPU seconds)."""
    import time

    from .continuation import default_solver

    t0, per = time.process_time(), []
    for w in probe_omegas(sorted(grid["omega"].unique())):
        p = params.replace(omega=w)
        solve = solver or default_solver(p)
        g = grid[grid["omega"] == w].sort_values("alpha").reset_index(drop=True)
        per.append(_probe_column(p, g, states.get(w, {}), solve, nodes, finer_nodes))
    d_c = [r["d_alpha_c"] for r in per if r["d_alpha_c"] is not None]
    d_l = [r["d_alpha_l"] for r in per if r["d_alpha_l"] is not None]
    d_e = [r["max_rel_d_e_t"] for r in per if r["max_rel_d_e_t"] is not None]
    out = dict(nodes=nodes, finer_nodes=finer_nodes, omegas=[r["omega"] for r in per],
               max_d_alpha_c=max(d_c, default=None), max_d_alpha_l=max(d_l, default=None),
               max_rel_d_e_t=max(d_e, default=None), tol=tol, per_omega=per,
               cells=sum(r["cells"] for r in per), failed_cells=sum(r["failed"] for r in per), cpu_s=None)
    out["ok"] = bool(max(d_c + d_l, default=0.0) <= tol and out["failed_cells"] == 0)
    out["cpu_s"] = round(time.process_time() - t0, 2)    # this process's CPU (the check runs here)
    return out


def _probe_column(p, g, states, solve, nodes, finer) -> dict[str, Any]:
    """One ω: the cells deciding α_c and α_l solved again at ``finer``; both crossings located again."""
    a_c = table_root(g["alpha"], g["delta_e_t"], "down")
    a_l = alpha_l_from_table(g, a_c)
    fine = g.copy()
    cells = {("semantic", a) for a in cells_around(g["alpha"], g["delta_e_t"], "down")}
    cells |= {("positional", a) for a in cells_around(g["alpha"], g["delta_e_t"], "down")}
    br = _l_branch(g, a_c)
    if a_c is None:     # α_l from the global minimum's column: each cell's global branch
        glob = dict(zip(g["alpha"], g["global_branch"]))
        cells |= {("semantic" if glob[a] == "semantic" else "positional", a)
                  for a in cells_around(g["alpha"], g["eps_lin_minus_eps_g"], "up")}
    elif br is not None:
        col = "eps_g_sem" if br == "semantic" else "eps_g_pos"
        cells |= {(br, a) for a in cells_around(g["alpha"], g["eps_lin"] - g[col], "up")}
    rel, failed, kept = [], 0, 0
    for b, a in sorted(cells):
        s0, st0 = states.get(b, {}).get(round(a, 9), (None, None))
        if s0 is None:      # no coarse point to start from: kept at the coarse order
            kept += 1
            continue
        s = solve(p, a, b, nodes=finer, init=s0, max_steps=PROBE_STEPS, stability=False, rtol=CURVE_RTOL)
        if point_state(s) not in (PointState.OK, st0):      # the same kind of point as the coarse one
            failed += 1
            continue
        row, tag = fine["alpha"].round(9) == round(a, 9), "sem" if b == "semantic" else "pos"
        e0 = float(fine.loc[row, f"e_t_{tag}"].iloc[0])
        rel.append(abs(float(s.e_t) - e0) / abs(e0) if e0 else math.inf)
        fine.loc[row, f"e_t_{tag}"], fine.loc[row, f"eps_g_{tag}"] = float(s.e_t), float(s.eps_g)
    fine["delta_e_t"] = fine["e_t_sem"] - fine["e_t_pos"]
    es, ep = fine["e_t_sem"].to_numpy(float), fine["e_t_pos"].to_numpy(float)     # as global_table decides it
    sem = np.where(np.isnan(ep), True, np.where(np.isnan(es), False, es < ep))
    fine["global_branch"] = np.where(np.isnan(es) & np.isnan(ep), "none",
                                     np.where(sem, "semantic", fine["kind_pos"]))
    glob = np.where(fine["global_branch"] == "semantic", fine["eps_g_sem"], fine["eps_g_pos"])
    fine["eps_lin_minus_eps_g"] = fine["eps_lin"] - glob
    f_c = table_root(fine["alpha"], fine["delta_e_t"], "down")
    f_l = alpha_l_from_table(fine, f_c)
    return dict(omega=float(p.omega), alpha_c=a_c, alpha_c_fine=f_c, d_alpha_c=_shift(a_c, f_c),
                alpha_l=a_l, alpha_l_fine=f_l, d_alpha_l=_shift(a_l, f_l),
                max_rel_d_e_t=max(rel, default=None), cells=len(cells), failed=failed, kept=kept)


def _l_branch(g, a_c) -> str | None:
    """The branch whose ε_g decides α_l (:func:`~.global_min.alpha_l_from_table`): global just above α_c."""
    above = g[g["alpha"] > (a_c if a_c is not None else -math.inf)]
    br = above["global_branch"].iloc[0] if len(above) else None
    return br if br in ("semantic", "positional") else None


def _shift(a, b) -> float | None:
    """|a − b|; infinite where only one exists (a crossing that appears or vanishes), None where neither."""
    if a is None and b is None:
        return None
    return math.inf if a is None or b is None else abs(float(a) - float(b))


def coarse_states(branches: dict) -> dict:
    """The diagram column's points that enter its table (valid, or ``collapsed``: the uninformative point standing
    in for the positional branch, :func:`~.global_min.global_table`) as ``{branch: {round(α, 9): (state, point
    state)}}``, to warm-start the check (small to send back from a worker)."""
    from ..theory.solution import state_of
    out: dict = {}
    for b, br in branches.items():
        pts = [p for p in list(br) + br.extra if p.state.valid or p.state == PointState.COLLAPSED]
        out[b] = {round(p.alpha, 9): (state_of(p.solution), p.state) for p in pts
                  if math.isfinite(float(getattr(p.solution, "q", math.nan)))}
    return out


def warning(check: dict) -> str | None:
    """The one-line warning of a failed check (None where it passed or was skipped): the largest shift, where."""
    if check.get("skipped") or check.get("ok", True):
        return None
    shifts = [(r[f"d_alpha_{k}"], k, r["omega"]) for r in check["per_omega"] for k in ("c", "l")
              if r[f"d_alpha_{k}"] is not None]
    d, k, w = max(shifts, default=(0.0, "c", check["omegas"][0]))
    r = next(x for x in check["per_omega"] if x["omega"] == w) if shifts else {}
    what = (f"moves by {d:.3g}" if math.isfinite(d) else
            f"is found at one order only ({_g(r[f'alpha_{k}'])} → {_g(r[f'alpha_{k}_fine'])})")
    fail = f", {check['failed_cells']} cells failed at the finer order" if check["failed_cells"] else ""
    return (f"resolution: α_{k} {what} at ω = {w:g} between nodes = {check['nodes']} and "
            f"{check['finer_nodes']} (tolerance {check['tol']:g}{fail}); rerun with --nodes {check['finer_nodes']}")


def _g(a) -> str:
    return "none" if a is None else f"{a:.4g}"
