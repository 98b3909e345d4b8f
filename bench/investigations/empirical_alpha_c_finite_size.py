"""Is the empirical α_c(ω) of the d = 1000 diagram below the theory's because of finite size?

Per ω and d, students are trained from both starts (L-BFGS as in examples/sweeps/paper_empirical_diagram.toml,
24 instances, the same seed for both starts so Δe_t is paired per instance) at three α around the theory's α_c;
a weighted line through Δe_t = e_t(positional start) − e_t(semantic start) gives the finite-d crossing α_c(d)
with its s.e., and a weighted fit α_c(d) = α_c(∞) + c/d over the dimensions gives the extrapolation, to compare
with the theory's α_c (d → ∞). The O(1/d) pass-through term of the theory (attnphase.api.curve(..., d=))
is printed next to it: its shift of the crossing at d = 1000.

    python bench/investigations/empirical_alpha_c_finite_size.py --out docs/data/empirical_diagram_d1000/alpha_c_vs_d.csv
"""
from __future__ import annotations

import argparse
import json
import math
import time

import numpy as np
import pandas as pd

import attnphase
from attnphase import api

# the theory's α_c at these ω (docs/data/phase_diagram_40x40/phase_lines.csv is on a different ω grid)
def theory_alpha_c(omega: float) -> float:
    return float(api.transition(omega=omega).value.alpha_c)


def crossing(alphas, deltas, ses):
    """Weighted line Δ = a + b α; root −a/b with its s.e. (delta method)."""
    w = 1 / np.asarray(ses) ** 2
    X = np.stack([np.ones_like(alphas), alphas], 1)
    cov = np.linalg.inv(X.T @ (w[:, None] * X))
    a, b = cov @ (X.T @ (w * deltas))
    root = -a / b
    g = np.array([-1 / b, a / b ** 2])
    return float(root), float(math.sqrt(g @ cov @ g)), float(b)


def delta_at(omega, alpha, d, instances, seed):
    e = {}
    for init in ("semantic", "positional"):
        r = api.simulate(alpha=alpha, d=d, init=init, optimizer="lbfgs", gtol=1e-6, warmup_steps=60,
                         instances=instances, seed=seed, test_samples=1000, omega=omega)
        e[init] = np.asarray(r.e_t, float)
    diff = e["positional"] - e["semantic"]
    return float(diff.mean()), float(diff.std(ddof=1) / math.sqrt(len(diff)))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--omegas", default="0.1,0.3")
    ap.add_argument("--ds", default="250,500,1000,2000")
    ap.add_argument("--offsets", default="-0.1,0,0.1")
    ap.add_argument("--instances", type=int, default=24)
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    rows, t0 = [], time.time()
    for omega in [float(x) for x in a.omegas.split(",")]:
        ac = theory_alpha_c(omega)
        for d in [int(x) for x in a.ds.split(",")]:
            al = np.array([round(ac + float(o), 4) for o in a.offsets.split(",")])
            dm = [delta_at(omega, float(x), d, a.instances, seed=0) for x in al]
            root, se, slope = crossing(al, np.array([m for m, _ in dm]), np.array([s for _, s in dm]))
            rows.append(dict(omega=omega, d=d, alpha_c_theory=ac, alpha_c_d=root, alpha_c_d_se=se,
                             slope=slope, deltas=json.dumps([[float(x), m, s] for x, (m, s) in zip(al, dm)])))
            print(json.dumps(rows[-1]), f"{time.time() - t0:.0f} s", flush=True)
    df = pd.DataFrame(rows)
    for omega, g in df.groupby("omega"):
        w = 1 / g["alpha_c_d_se"] ** 2
        X = np.stack([np.ones(len(g)), 1 / g["d"]], 1)
        cov = np.linalg.inv(X.T @ (w.to_numpy()[:, None] * X))
        c0, c1 = cov @ (X.T @ (w * g["alpha_c_d"]).to_numpy())
        print(f"omega={omega}: alpha_c(inf) extrapolated {c0:.4f} ± {math.sqrt(cov[0, 0]):.4f}, slope c = {c1:.1f}"
              f" ± {math.sqrt(cov[1, 1]):.1f}; theory {g['alpha_c_theory'].iloc[0]:.4f}")
        df.loc[g.index, "alpha_c_extrapolated"] = c0
        df.loc[g.index, "alpha_c_extrapolated_se"] = math.sqrt(cov[0, 0])
    df["package_version"] = attnphase.__version__
    df.to_csv(a.out, index=False)


if __name__ == "__main__":
    main()
