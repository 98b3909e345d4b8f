"""The RS landscape at fixed overlaps (issue 32): e_t(θ) (M free) and e_t(m) (θ free) from
:func:`attnphase.theory.landscape.solve_landscape` (QMC 1024 × 4) at ω = 0.3 for the settings of
docs/theory/beyond-rs.md, and e_t(m, θ) on a coarse grid at σ = 0.7, α = 0.5. One CSV row per imposed overlap in
docs/data/beyond_rs/landscape.csv (appended; points already there are skipped), the CPU time per curve in
docs/data/beyond_rs/landscape_cpu.csv.

    PYTHONPATH=src python bench/investigations/bench_beyond_rs_landscape.py [--only s0.7] [--grid]
"""

from __future__ import annotations

import argparse
import csv
import os
import time
from pathlib import Path

import numpy as np

from attnphase.model import ModelParams
from attnphase.theory.landscape import solve_landscape

SETTINGS = {"s0.7": (0.7, 0.01, [0.5, 0.3, 0.8]), "s1.0": (1.0, 0.01, [0.4, 0.7]),
            "l0.001": (0.5, 0.001, [0.35, 0.55])}
THETA_GRID = np.round(np.arange(0.0, 0.71, 0.1), 3)          # θ/σ², 8 values (one compiled batch)
M_GRID = np.round(np.arange(0.0, 0.351, 0.05), 3)            # m, 8 values
OUT = Path("docs/data/beyond_rs")
FIELDS = ["setting", "sigma", "lam", "alpha", "fixed", "m_imposed", "theta_over_sigma2_imposed", "status",
          "iterations", "q", "m", "theta_over_sigma2", "V", "e_t", "e_t_err", "eps_g", "force_theta",
          "force_theta_err", "force_m", "force_m_err"]


def done() -> set:
    path = OUT / "landscape.csv"
    if not path.exists():
        return set()
    with open(path) as f:
        return {(r["setting"], float(r["alpha"]), r["fixed"]) for r in csv.DictReader(f)}


def write(rows: list[dict]) -> None:
    path = OUT / "landscape.csv"
    new = not path.exists()
    with open(path, "a", newline="") as f:
        w = csv.DictWriter(f, FIELDS)
        if new:
            w.writeheader()
        w.writerows(rows)


def curve(name, sigma, lam, alpha, fixed, ms, ths) -> None:
    p = ModelParams(omega=0.3, sigma=sigma, lam=lam)
    c0 = time.process_time()
    pts = solve_landscape(p, alpha, fixed, ms=ms, thetas=np.asarray(ths) * sigma ** 2)
    rows = []
    for pt in pts:
        v, e = pt.values, pt.errors
        rows.append({"setting": name, "sigma": sigma, "lam": lam, "alpha": alpha, "fixed": fixed,
                     "m_imposed": pt.m, "theta_over_sigma2_imposed": pt.theta / sigma ** 2,
                     "status": pt.status.value, "iterations": pt.iterations, "q": v["q"], "m": v["m"],
                     "theta_over_sigma2": v["theta"] / sigma ** 2, "V": v["V"], "e_t": v["e_t"],
                     "e_t_err": e["e_t"], "eps_g": v["eps_g"], "force_theta": v["force_theta"],
                     "force_theta_err": e["force_theta"], "force_m": v["force_m"], "force_m_err": e["force_m"]})
    write(rows)
    with open(OUT / "landscape_cpu.csv", "a") as f:
        f.write(f"{name},{alpha},{fixed},{len(pts)},{time.process_time() - c0:.1f},{os.getloadavg()[0]:.2f}\n")


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--only", default=",".join(SETTINGS))
    ap.add_argument("--grid", action="store_true", help="the (m, θ) grid at σ = 0.7, α = 0.5 instead")
    a = ap.parse_args()
    OUT.mkdir(parents=True, exist_ok=True)
    have = done()
    if a.grid:
        mm, tt = np.meshgrid([0.0, 0.1, 0.2, 0.3], [0.0, 0.2, 0.4, 0.6])
        for half in (slice(0, 8), slice(8, 16)):
            curve("s0.7", 0.7, 0.01, 0.5, "both", mm.ravel()[half], tt.ravel()[half])
    else:
        for name in a.only.split(","):
            sigma, lam, alphas = SETTINGS[name]
            for alpha in alphas:
                for fixed, ms, ths in (("theta", 0.0, THETA_GRID), ("m", M_GRID, 0.0)):
                    if (name, alpha, fixed) not in have:
                        curve(name, sigma, lam, alpha, fixed, ms, ths)
