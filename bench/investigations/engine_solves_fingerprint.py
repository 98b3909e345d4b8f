"""A fingerprint of a few QMC engine solves, to compare two versions of the code to full precision (issue 29:
the engine's job routed through the QMC integrator, the ladders on one driver — results must not move).

Run it once per version (``PYTHONPATH=<that version's src> python bench/investigations/engine_solves_fingerprint.py
> out.json``) and compare the files: every state block, value and error is printed with ``repr`` (17
significant digits), with the status, iterations, residual and how the point was started.

Points: L = 3 (A = 0.6 I + 0.2 (J − I)), ω = 0.3, semantic and positional at α = 1, 2; r = 2 semantic at
α = 1.5 and free at α = 2; L = 2, r = 1 semantic at α = 10 from a cold start (the α-ladder start); all at
1024 × 4 QMC points (coarse 256). ``--ladders``: instead, points whose cold start fails so that the α-ladder
start runs (L = 2, ω = 0.3, positional, α = 10: the engine at 1024 × 4, and the split rule's
``solve_point(continuation=True)``)."""

from __future__ import annotations

import json
import sys

import numpy as np

from attnphase.model import ModelParams
from attnphase.theory.engine import QMCConfig, solve_batch

L3_A = ((0.6, 0.2, 0.2), (0.2, 0.6, 0.2), (0.2, 0.2, 0.6))
CFG = QMCConfig(points=1024, scrambles=4, coarse=256)


def fingerprint(sol) -> dict:
    it = sol.iteration or {}
    return {"alpha": repr(float(sol.alpha)), "branch": sol.branch, "status": sol.status.value,
            "iterations": int(sol.iterations), "residual": repr(float(sol.residual)),
            "x": [[repr(float(v)) for v in np.ravel(b)] for b in sol.x],
            "hats": [[repr(float(v)) for v in np.ravel(b)] for b in sol.hats],
            "values": {k: repr(float(np.ravel(v)[0])) for k, v in sorted(sol.values.items())},
            "start": it.get("start"), "continuation": it.get("continuation")}


def ladders() -> list:
    from attnphase.theory.solver import solve_point
    p = ModelParams(omega=0.3)
    g = solve_batch(p, [10.0], "positional", qmc_config=QMCConfig(points=1024, scrambles=4), stability=False)
    s = solve_point(p, 10.0, "positional", stability=False, continuation=True)
    split = {"start": s.start, "status": s.status.value, "iterations": int(s.iterations),
             "x": [[repr(float(v)) for v in np.ravel(b)] for b in s.x]}
    return [fingerprint(g[0]), split]


def main() -> None:
    if "--ladders" in sys.argv:
        print(json.dumps(ladders(), indent=1))
        return
    cases = [(ModelParams(L=3, A=L3_A, omega=0.3), [1.0, 2.0], "semantic"),
             (ModelParams(L=3, A=L3_A, omega=0.3), [1.0, 2.0], "positional"),
             (ModelParams(r=2, omega=0.3), [1.5], "semantic"),
             (ModelParams(r=2, omega=0.3), [2.0], "free"),
             (ModelParams(omega=0.3), [10.0], "semantic")]
    out = []
    for params, alphas, branch in cases:
        out += [fingerprint(s) for s in solve_batch(params, alphas, branch, qmc_config=CFG, stability=False)]
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
