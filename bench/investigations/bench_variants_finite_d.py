"""Finite-d L-BFGS minimisers at the σ, λ variants of docs/notes/2026-12-03-phase-boundaries.md ("The global minimum away from
σ = 0.5, λ = 0.01"): per variant, α and init (semantic, positional, random) the mean ± s.e. over instances of
|m|, θ/σ², q, e_t, ε_g (exact), one JSON line each on stdout.

    nice python bench/investigations/bench_variants_finite_d.py [--variants s0.7,s1.0,l0.001,s0.3,l0.1] [--d 1000] [--instances 8]
    nice python bench/investigations/bench_variants_finite_d.py --scaling 250,500,1000,2000   # σ = 0.7, α = 0.5, seed 1

(≈ 40 min of wall time for the full table at a load of 8–15 on 2 cores.)
"""

from __future__ import annotations

import argparse
import json
import time

import numpy as np

from attnphase.model import ModelParams
from attnphase.simulate import TrainConfig, simulate

VARIANTS = {"s0.7": (0.7, 0.01, [0.3, 0.5, 0.8]), "s1.0": (1.0, 0.01, [0.4, 0.7, 1.0]),
            "l0.001": (0.5, 0.001, [0.35, 0.55, 0.8]), "s0.3": (0.3, 0.01, [1.0, 2.0, 4.0]),
            "l0.1": (0.5, 0.1, [1.0, 2.0, 4.0])}


def one(sigma, lam, alpha, init, d, instances, seed, max_iter=2000) -> dict:
    t = time.time()
    r = simulate(ModelParams(omega=0.3, sigma=sigma, lam=lam), alpha=alpha, d=d, instances=instances, seed=seed,
                 config=TrainConfig(init=init, optimizer="lbfgs", max_iter=max_iter))
    s = r.summary()
    out = dict(sigma=sigma, lam=lam, alpha=alpha, init=init, d=d, instances=instances, seed=seed,
               converged=int(np.sum(r.converged)), seconds=round(time.time() - t, 1))
    for k, name in (("m", "m"), ("theta_over_sigma2", "th"), ("q", "q"), ("e_t", "e_t"), ("eps_g", "eps_g")):
        out[name], out[f"{name}_se"] = s[k]["mean"], s[k]["sem"]
    return out


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--variants", default=",".join(VARIANTS))
    ap.add_argument("--d", type=int, default=1000)
    ap.add_argument("--instances", type=int, default=8)
    ap.add_argument("--scaling", default=None, help="d values: the d-dependence at σ = 0.7, α = 0.5 instead")
    a = ap.parse_args()
    if a.scaling:
        for d in (int(x) for x in a.scaling.split(",")):
            for init in ("semantic", "positional"):
                print(json.dumps(one(0.7, 0.01, 0.5, init, d, 6, 1, max_iter=5000)), flush=True)
    else:
        for v in a.variants.split(","):
            sigma, lam, alphas = VARIANTS[v]
            for alpha in alphas:
                for init in ("semantic", "positional", "random"):
                    print(json.dumps(one(sigma, lam, alpha, init, a.d, a.instances, 0)), flush=True)
