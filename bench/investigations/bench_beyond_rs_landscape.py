"""The RS landscape at fixed overlaps (issue 32): the e_t(θ/σ²) and e_t(m) profiles of
:func:`attnphase.theory.landscape.profiles` (both sectors of the other overlap, the lower kept) at ω = 0.3 for
the settings of docs/theory/beyond-rs.md: QMC 512 × 2, at most 150 iterations per solve (the machine was loaded
to ~30; a 1024 × 4 run of the figure point did not finish in 7 CPU minutes).
One JSON file per point in docs/data/beyond_rs/landscape/ (skipped when there), CPU time and load in
docs/data/beyond_rs/landscape/cpu.csv.

    PYTHONPATH=src python bench/investigations/bench_beyond_rs_landscape.py [--only s0.7]
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path

from attnphase.jsonable import to_jsonable
from attnphase.model import ModelParams
from attnphase.provenance import stamp
from attnphase.theory.landscape import profiles
from attnphase.theory.qmc_config import QMCConfig

SETTINGS = {"s0.7": (0.7, 0.01, [0.5, 0.3, 0.8]), "s1.0": (1.0, 0.01, [0.4, 0.7]),
            "l0.001": (0.5, 0.001, [0.35, 0.55])}
OUT = Path("docs/data/beyond_rs/landscape")


def run(name: str, sigma: float, lam: float, alpha: float) -> None:
    path = OUT / f"{name}_a{alpha}.json"
    if path.exists():
        return
    fine = False                      # 1024 × 4 and 400 steps: too slow on the loaded machine (docstring)
    cfg = QMCConfig(points=1024 if fine else 512, scrambles=4 if fine else 2, coarse=0, target=0.0)
    c0 = time.process_time()
    rec = profiles(ModelParams(omega=0.3, sigma=sigma, lam=lam), alpha, qmc_config=cfg,
                   max_steps=400 if fine else 150)
    cpu = time.process_time() - c0
    rec.update(setting=name, qmc_points=cfg.points, scrambles=cfg.scrambles, cpu_s=round(cpu, 1), **stamp())
    path.write_text(json.dumps(to_jsonable(rec), indent=1))
    with open(OUT / "cpu.csv", "a") as f:
        f.write(f"{name},{alpha},{cfg.points}x{cfg.scrambles},{cpu:.1f},{os.getloadavg()[0]:.2f}\n")


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--only", default=",".join(SETTINGS))
    ap.add_argument("--skip-figure-point", action="store_true")
    a = ap.parse_args()
    OUT.mkdir(parents=True, exist_ok=True)
    if not (OUT / "cpu.csv").exists():
        (OUT / "cpu.csv").write_text("setting,alpha,qmc,cpu_s,load1\n")
    for name in a.only.split(","):
        sigma, lam, alphas = SETTINGS[name]
        for alpha in alphas:
            if not (a.skip_figure_point and (name, alpha) == ("s0.7", 0.5)):
                run(name, sigma, lam, alpha)
