"""Two levers of the diagram's CPU tried on single points (issue 34 item 3; docs/notes/2026-12-06-diagram-profile.md).

1. Iterations of a nodes = 4 point solve (rtol 1e-5, the diagram's settings) against the relative error of its
   start (the converged point with each of q, m, θ, V off by ±err): how much a tighter predictor can save.
2. The growth factor of the pinned direction evaluated as today (a fresh map: global prox search at the
   perturbed, unpinned state) against the warm continuation from the certified evaluation at the fixed point
   (``SplitMap(fast=True)``, as the iteration's own map ends): values and CPU per evaluation.

    python bench/investigations/diagram_levers.py
"""
from __future__ import annotations

import time
from types import SimpleNamespace

import numpy as np

from attnphase.model import ModelParams
from attnphase.theory import split_integrator as si
from attnphase.theory.solver import solve_point
from attnphase.theory.split_integrator import SplitMap, make_rule

POINTS = [(0.02, 1.2, "semantic"), (0.02, 0.575, "semantic"), (0.02, 0.6, "positional"), (0.18, 1.5, "semantic"),
          (0.18, 0.75, "semantic"), (0.18, 0.5, "positional"), (0.18, 1.35, "positional"), (0.34, 0.9, "semantic"),
          (0.34, 1.05, "positional"), (0.5, 1.375, "semantic"), (0.5, 0.75, "positional")]


def iterations_vs_start() -> None:
    for w, a, br in POINTS[3:7]:
        p = ModelParams().replace(omega=w)
        s = solve_point(p, a, br, nodes=4, stability=False, rtol=1e-5)
        its = []
        for e in (1e-1, 1e-2, 1e-3, 1e-4, 1e-5, 0.0):
            f = 1 + e * np.random.default_rng(0).choice([-1, 1], 4)
            init = SimpleNamespace(q=s.q * f[0], m=s.m * f[1], theta=s.theta * f[2], V=s.V * f[3])
            its.append(solve_point(p, a, br, nodes=4, stability=False, rtol=1e-5, init=init).iterations)
        print(f"ω={w} α={a} {br}: iterations from start error 1e-1, 1e-2, 1e-3, 1e-4, 1e-5, 0 = {its}")


def growth_warm() -> None:
    diff, tg, tw = [], [], []
    for w, a, br in POINTS:
        p = ModelParams().replace(omega=w)
        s = solve_point(p, a, br, nodes=4, stability=False, rtol=1e-5)
        x = si.to_vector(s.x)
        si.stability(SplitMap(p, a, br, make_rule(4, "split")), x, br)   # first call of this shape
        t0 = time.process_time()
        g0 = si.stability(SplitMap(p, a, br, make_rule(4, "split")), x, br)
        t1 = time.process_time()
        G = SplitMap(p, a, br, make_rule(4, "split"), fast=True)
        G(x)                                       # the certifying global evaluation at the fixed point
        t2 = time.process_time()
        g1 = si.stability(G, x, br)
        t3 = time.process_time()
        diff.append(abs(g0 - g1))
        tg.append(t1 - t0)
        tw.append(t3 - t2)
        print(f"ω={w} α={a} {br}: growth {g0:.6f} (global, {1e3 * (t1 - t0):.1f} ms) / {g1:.6f} (warm, "
              f"{1e3 * (t3 - t2):.1f} ms)")
    print(f"max |difference| {max(diff):.1e}; mean CPU global {1e3 * np.mean(tg):.1f} ms, warm {1e3 * np.mean(tw):.1f} ms")


if __name__ == "__main__":
    iterations_vs_start()
    growth_warm()
