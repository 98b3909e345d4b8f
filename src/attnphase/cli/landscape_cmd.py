"""``attnphase theory point --landscape``: the RS landscape of one point at fixed overlaps, e_t(θ/σ²) and e_t(m)
profiles with their minima and barriers (:mod:`attnphase.theory.landscape`; docs/theory/beyond-rs.md); with
``--surface`` the surface e_t(m, θ) on a grid with its minima and lowest passes
(:mod:`attnphase.theory.landscape_surface`)."""

from __future__ import annotations

import numpy as np

from ..errors import ParameterError
from ..guards import check_grid, check_qmc
from ._common import console, emit_json, parse_linspace, print_table

SURFACE_MAX_POINTS = 2500
"""= :data:`attnphase.theory.landscape_surface.MAX_POINTS` (not imported: a refusal loads no JAX)."""
SURFACE_THETAS, SURFACE_MS = "0:0.6:9", "0:0.3:9"
SURFACE_CPU_S = 5.0
"""CPU seconds per grid point at 1024 × 4 QMC points, for the estimate (9 × 9 at σ = 0.7, ≤ 80 steps: 313–394 s on a
loaded machine, mostly the few points that end in a limit cycle; docs/theory/beyond-rs.md)."""


def surface_request(params, thetas: str | None, ms: str | None, qmc_points: int | None,
                    scrambles: int | None) -> tuple[np.ndarray, np.ndarray, float]:
    """The surface's grid (θ/σ² and m axes, ``START:STOP:NUM``) and its CPU estimate in seconds, refused before
    any work (no JAX): the structure, each axis, the number of points, the memory of one row of θ."""
    if (params.r, params.r_star, params.k) != (1, 1, 1):
        raise ParameterError("--surface", "r = r* = 1 and one positional direction (k = 1)",
                             f"r={params.r}, r*={params.r_star}, k={params.k}")
    axes = []
    for name, text, hi in (("--surface-thetas", thetas or SURFACE_THETAS, 1.0),
                           ("--surface-ms", ms or SURFACE_MS, float("inf"))):
        g = parse_linspace(name, text)
        if len(g) < 2 or g[0] < 0 or g[-1] >= hi or np.any(np.diff(g) <= 0):
            raise ParameterError(name, f"START:STOP:NUM with 0 <= START < STOP < {hi:g} and NUM >= 2", text)
        axes.append(g)
    th, mg = axes
    check_grid("--surface-thetas × --surface-ms", f"{len(th)} × {len(mg)}", len(th) * len(mg),
               limit=SURFACE_MAX_POINTS)
    p, s = qmc_points or 1024, scrambles or 4
    check_qmc(params.L, params.r, params.r_star, p, s, alphas=len(mg), names=("--qmc-points", "--scrambles"))
    return th, mg, SURFACE_CPU_S * len(th) * len(mg) * p * s / 4096


def surface(params, alpha: float, grid: tuple, qmc_config, json_out: bool) -> None:
    """Print the surface of ``params`` at ``alpha`` on ``grid`` (:func:`surface_request`): its minima and lowest
    passes (table), or JSON with the grid and provenance."""
    from ..progress import progress_bar
    from ..provenance import provenance
    from ..theory.landscape_surface import surface as solve_surface
    th, mg, cpu = grid
    with progress_bar() as prog:
        task = prog.add_task(f"e_t(m, θ) at α={alpha:g}: {len(th)} × {len(mg)} points (~{cpu:.0f} s CPU)",
                             total=len(th))
        surf = solve_surface(params, alpha, th, mg, qmc_config=qmc_config,
                             progress=lambda i, n: prog.update(task, completed=i))
    rec = surf.to_dict(grid=json_out)
    rec["provenance"] = provenance(dict(params=params.to_dict(), alpha=alpha, theta_over_sigma2=th.tolist(),
                                        m=mg.tolist(), qmc_points=surf.qmc.points, scrambles=surf.qmc.scrambles,
                                        qmc_seed=surf.qmc.seed), kind="theory point --landscape --surface")
    if json_out:
        emit_json(rec)
        return
    flag = lambda d: ("edge of the grid" if d["edge"] else "") + (" next to an unconverged point" if d["near_gap"]
                                                                  else "")
    print_table(f"minima of e_t(m, θ) at α={alpha:g} (RS, d → ∞; grid points)",
                ["#", "θ/σ²", "m", "e_t", "± s.e.", "θ/σ² refined", "m refined", "−∂e_t/∂(θ/σ²)", "−∂e_t/∂m", "note"],
                [[k, d["theta_over_sigma2"], d["m"], d["e_t"], d["e_t_err"], d["theta_refined"], d["m_refined"],
                  d["force_theta"], d["force_m"], flag(d)] for k, d in enumerate(rec["minima"])])
    if rec["passes"]:
        print_table("lowest passes (saddles) between the minima",
                    ["minima", "θ/σ²", "m", "e_t", "barrier from the higher minimum", "note"],
                    [[f"{d['lower_minimum']}–{d['higher_minimum']}", d["theta_over_sigma2"], d["m"], d["e_t"],
                      d["barrier"], flag(d)] for d in rec["passes"]])
    else:
        console.print("no pass: one basin on the grid (no barrier)")
    if rec["not_converged"]:
        console.print(f"[yellow]{rec['not_converged']} grid point(s) not converged (NaN, walls of the flood)[/yellow]")


def landscape(params, alpha: float, qmc_config, json_out: bool) -> None:
    """Print both profiles of ``params`` at ``alpha`` (table or JSON with provenance)."""
    from ..provenance import provenance
    from ..theory.landscape import profiles
    if (params.r, params.r_star, params.k) != (1, 1, 1):
        raise ParameterError("--landscape", "r = r* = 1 and one positional direction (k = 1)",
                             f"r={params.r}, r*={params.r_star}, k={params.k}")
    with console.status(f"landscape at α={alpha:g}: 2 profiles × 8 constrained saddle points (minutes)"):
        rec = profiles(params, alpha, qmc_config=qmc_config)
    rec["provenance"] = provenance(dict(params=params.to_dict(), alpha=alpha, qmc_points=1024 if qmc_config is None
                                        else qmc_config.points), kind="theory point --landscape")
    if json_out:
        emit_json(rec)
        return
    for key, label in (("theta", "θ/σ² fixed, m free"), ("m", "m fixed, θ free")):
        prof = rec[key]
        rows = [[r[f"{key}_imposed"], r["e_t"], r["e_t_err"], r["m"], r["theta"], r["q"], r[f"force_{key}"],
                 r["status"]] for r in prof["rows"]]
        print_table(f"e_t({key}) at α={alpha:g}, {label} (RS, d → ∞)",
                    [key, "e_t", "± s.e.", "|m|", "θ/σ²", "q", "force −de_t/dx", "status"], rows)
        st = ", ".join(f"{s['kind']} at {key} = {s['at']:.3g} (e_t {s['e_t']:.6g})" for s in prof["stationary"])
        console.print(f"stationary points along {key}: {st or 'none in the grid'}"
                      + (f"; barriers {', '.join(f'{b:.3g}' for b in prof['barriers'])}" if prof["barriers"] else "")
                      + (f"; barriers {prof['barriers_reason']}" if prof["barriers"] is None else "")
                      + (f"; [yellow]{prof['not_converged']} point(s) not converged (NaN)[/yellow]"
                         if prof["not_converged"] else ""))
    console.print("note: replica-symmetric profiles (docs/theory/beyond-rs.md says where they describe the "
                  "optimisers)")
