"""Finite-d crossing of the two L-BFGS families (issue 32): at d = 1000, ω = 0.3, for σ = 0.7, σ = 1.0 (λ = 0.01)
and λ = 0.001 (σ = 0.5), a small α grid, both starts (semantic, positional), 16 instances each (seed 0), one
``attnphase simulate --optimizer lbfgs`` call per (setting, α, start), its per-instance rows in
docs/data/beyond_rs/finite_d/<setting>_a<α>_<init>.csv and its CPU time in docs/data/beyond_rs/finite_d/cpu.csv.

    nice -n 5 python bench/investigations/bench_beyond_rs_crossing_d1000.py [--only s0.7]

Each call is its own process (minutes each at d = 1000 under load). The crossing (e_t of the two starts, paired
by instance) is read off by bench/investigations/bench_beyond_rs_tables.py.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

SETTINGS = {"s0.7": (0.7, 0.01, [0.2, 0.3, 0.4]), "s1.0": (1.0, 0.01, [0.1, 0.2, 0.3, 0.4]),
            "l0.001": (0.5, 0.001, [0.35, 0.45, 0.55])}
OUT = Path("docs/data/beyond_rs/finite_d")


def run(name: str, sigma: float, lam: float, alpha: float, init: str, d: int, instances: int) -> None:
    path = OUT / f"{name}_a{alpha}_{init}.csv"
    if path.exists():
        return
    cmd = [sys.executable, "-m", "attnphase", "simulate", "--optimizer", "lbfgs", "--instances", str(instances),
           "--init", init, "--alpha", str(alpha), "--omega", "0.3", "--sigma", str(sigma), "--lam", str(lam),
           "--d", str(d), "--seed", "0", "--out", str(path)]
    t0, c0 = time.time(), os.times()
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
    c1 = os.times()
    cpu = (c1.children_user - c0.children_user) + (c1.children_system - c0.children_system)
    load = os.getloadavg()[0]
    with open(OUT / "cpu.csv", "a") as f:
        f.write(f"{name},{alpha},{init},{d},{instances},{cpu:.1f},{time.time() - t0:.1f},{load:.2f}\n")


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--only", default=",".join(SETTINGS))
    ap.add_argument("--d", type=int, default=1000)
    ap.add_argument("--instances", type=int, default=16)
    a = ap.parse_args()
    OUT.mkdir(parents=True, exist_ok=True)
    if not (OUT / "cpu.csv").exists():
        (OUT / "cpu.csv").write_text("setting,alpha,init,d,instances,cpu_s,wall_s,load1\n")
    for name in a.only.split(","):
        sigma, lam, alphas = SETTINGS[name]
        for alpha in alphas:
            for init in ("semantic", "positional"):
                run(name, sigma, lam, alpha, init, a.d, a.instances)
