"""The RS landscape surface e_t(m, θ) (issue 32; :func:`attnphase.theory.landscape_surface.surface`) at σ = 0.7,
ω = 0.3 (other parameters the defaults) on θ/σ² ∈ [0, 0.6] × m ∈ [0, 0.3] (9 × 9), QMC 1024 × 4 (seed 0; at 512 × 2 two of the 81 points did not converge in 400 steps), with
the constrained point and its forces at the two finite-d families' mean overlaps (L-BFGS, d = 1000, 8 instances:
docs/notes/2026-12-03-phase-boundaries.md). One JSON per α in docs/data/beyond_rs/landscape_surface/ (skipped when
there), and the figure docs/figures/beyond_rs_surface_sigma0.7_alpha{α}.png from the JSON.

    PYTHONPATH=src python bench/investigations/bench_beyond_rs_surface.py [--alphas 0.5,0.8] [--plot-only]
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path

import numpy as np

OUT = Path("docs/data/beyond_rs/landscape_surface")
FIG = Path("docs/figures")
SIGMA = 0.7
MAX_STEPS = 80          # converged points take 12-30 steps; a limit cycle (the prox between basins) never ends
# finite-d families at d = 1000 (mean ± s.e. of 8 instances; docs/notes/2026-12-03-phase-boundaries.md):
# (m, θ/σ², e_t) of the semantic-started and positional-started L-BFGS minimisers
FAMILIES = {0.5: {"semantic": (0.009, 0.395, 0.001913), "positional": (0.205, 0.027, 0.002186)},
            0.8: {"semantic": (0.008, 0.542, 0.002782), "positional": (0.205, 0.034, 0.003909)}}


def compute(alpha: float) -> Path:
    from attnphase.jsonable import to_jsonable
    from attnphase.model import ModelParams
    from attnphase.provenance import provenance, stamp
    from attnphase.theory.landscape import Fixed, solve_landscape
    from attnphase.theory.landscape_surface import M_GRID, THETA_GRID, surface
    from attnphase.theory.qmc_config import QMCConfig

    path = OUT / f"s{SIGMA}_a{alpha}.json"
    if path.exists():
        return path
    params = ModelParams(omega=0.3, sigma=SIGMA)
    cfg = QMCConfig(points=1024, scrambles=4, seed=0, coarse=0, target=0.0)
    c0, w0 = time.process_time(), time.time()
    surf = surface(params, alpha, THETA_GRID, M_GRID, qmc_config=cfg, max_steps=MAX_STEPS,
                   progress=lambda i, n: print(f"  row {i}/{n} ({time.process_time() - c0:.0f} s CPU)", flush=True))
    cpu = time.process_time() - c0
    rec = surf.to_dict()
    fams = FAMILIES.get(alpha, {})
    s2 = SIGMA ** 2
    at = solve_landscape(params, alpha, Fixed.BOTH, ms=[f[0] for f in fams.values()],
                         thetas=[f[1] * s2 for f in fams.values()], qmc_config=cfg) if fams else []
    rec["families"] = {}
    for (name, (m, t, e)), p in zip(fams.items(), at):
        d = p.to_dict()
        rec["families"][name] = {
            "m_finite_d": m, "theta_over_sigma2_finite_d": t, "e_t_finite_d_1000": e, "status": d["status"],
            "e_t_rs": d["e_t"], "e_t_rs_err": d["e_t_err"],
            "force_theta": d["force_theta"] * s2, "force_theta_err": d["force_theta_err"] * s2,
            "force_m": d["force_m"], "force_m_err": d["force_m_err"]}
    rec["cpu_s"] = round(cpu, 1)
    rec["cpu_s_families"] = round(time.process_time() - c0 - cpu, 1)
    rec["load1"] = round(os.getloadavg()[0], 2)
    rec["provenance"] = provenance({"params": params.to_dict(), "alpha": alpha, "theta_over_sigma2": list(THETA_GRID),
                                    "m": list(M_GRID), "qmc_points": cfg.points, "scrambles": cfg.scrambles,
                                    "qmc_seed": cfg.seed, "max_steps": MAX_STEPS},
                                   kind="bench_beyond_rs_surface", wall_s=round(time.time() - w0, 1), **stamp())
    path.write_text(json.dumps(to_jsonable(rec), indent=1))
    return path


def plot(path: Path) -> Path:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rec = json.loads(path.read_text())
    th, m = np.array(rec["theta_over_sigma2"]), np.array(rec["m"])
    e = np.array([[np.nan if v is None else v for v in row] for row in rec["grid"]["e_t"]])
    bad = ~np.isfinite(e)
    shown = e.copy()                  # for the contour only: an unconverged point gets its neighbours' mean
    for i, j in zip(*np.nonzero(bad)):
        nb = e[max(i - 1, 0):i + 2, max(j - 1, 0):j + 2]
        shown[i, j] = np.nanmean(nb)
    fig, ax = plt.subplots(figsize=(6.4, 5.0))
    cs = ax.contourf(m, th, shown * 1e3, levels=20, cmap="viridis")
    ax.contour(m, th, shown * 1e3, levels=20, colors="k", linewidths=0.3)
    fig.colorbar(cs, ax=ax, label="RS e_t(m, θ) × 10³ (d → ∞)")
    if bad.any():
        ii, jj = np.nonzero(bad)
        ax.plot(m[jj], th[ii], "x", color="red", label="not converged (contour: neighbours' mean)")
    for k, mn in enumerate(rec["minima"]):
        ax.plot(mn["m"], mn["theta_over_sigma2"], "v", color="white", mec="k", ms=10,
                label="grid minimum" + (" (edge)" if mn["edge"] else "") if k == 0 else None)
        ax.annotate(f"{mn['e_t'] * 1e3:.4f}", (mn["m"], mn["theta_over_sigma2"]), textcoords="offset points",
                    xytext=(8, -14), color="white", fontsize=8)
    for k, p in enumerate(rec["passes"]):
        ax.plot(p["m"], p["theta_over_sigma2"], "X", color="orange", mec="k", ms=10,
                label="lowest pass" if k == 0 else None)
    for name, f in rec.get("families", {}).items():
        ax.plot(f["m_finite_d"], f["theta_over_sigma2_finite_d"], "o" if name == "semantic" else "s",
                color="red", mec="white", ms=9, label=f"{name}-started family, d = 1000 (e_t {f['e_t_finite_d_1000'] * 1e3:.3f})")
        ax.annotate(f"RS {f['e_t_rs'] * 1e3:.4f}", (f["m_finite_d"], f["theta_over_sigma2_finite_d"]),
                    textcoords="offset points", xytext=(-20, 10), color="red", fontsize=8,
                    bbox=dict(boxstyle="round,pad=0.15", fc="white", alpha=0.7, lw=0))
    ax.set_xlim(m[0] - 0.01, m[-1])
    ax.set_ylim(th[0] - 0.02, th[-1])
    ax.set_xlabel("m (positional overlap)")
    ax.set_ylabel("θ/σ² (semantic overlap)")
    p = rec["params"]
    ax.set_title(f"RS landscape e_t(m, θ): σ = {p['sigma']}, ω = {p['omega']}, α = {rec['alpha']} "
                 f"(QMC {rec['qmc_points']} × {rec['scrambles']})", fontsize=9)
    ax.legend(fontsize=7, loc="upper right", framealpha=0.8)
    out = FIG / f"beyond_rs_surface_sigma{SIGMA}_alpha{rec['alpha']}.png"
    fig.tight_layout()
    fig.savefig(out, dpi=130)
    return out


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--alphas", default="0.5,0.8")
    ap.add_argument("--plot-only", action="store_true")
    a = ap.parse_args()
    OUT.mkdir(parents=True, exist_ok=True)
    for alpha in (float(v) for v in a.alphas.split(",")):
        path = OUT / f"s{SIGMA}_a{alpha}.json"
        if not a.plot_only:
            path = compute(alpha)
        print(plot(path))
