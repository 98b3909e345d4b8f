"""Is a free solve's "mixed" point a fixed point of its own, or the pinned one seen through the QMC noise?
(docs/guides/transitions-any-model.md, L = 3 table; phase/kinds.py.)

Mimics the survey (phase/stability.survey) at one α: the uninformative point, then the free solve from it
pushed along m and θ (L = 3, r = 1); or (``--r2``) the free solve from the model's start at r = 2, L = 2, where
a genuine mixed point exists (docs/guides/transitions-any-model.md, "r = 2"). Prints the free point's values,
its per-scramble states (q, M, θ, V flattened) and its kind by size and by size and significance.

    PYTHONPATH=src python bench/investigations/noise_floor_mixed_point.py --omega 0.3 --alpha 0.25
    PYTHONPATH=src python bench/investigations/noise_floor_mixed_point.py --r2 --omega 0.3 --alpha 2 --points 128 --scrambles 2
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from attnphase.model import ModelParams
from attnphase.phase.continuation import CURVE_RTOL, phase_qmc
from attnphase.phase.kinds import free_point_kind
from attnphase.phase.stability import SURVEY_MAX_STEPS, _kicked
from attnphase.theory.solve import point_solver

A3 = [[0.6, 0.2, 0.2], [0.2, 0.6, 0.2], [0.2, 0.2, 0.6]]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--omega", type=float, default=0.3)
    ap.add_argument("--alpha", type=float, default=0.25)
    ap.add_argument("--points", type=int, default=256)
    ap.add_argument("--scrambles", type=int, default=4)
    ap.add_argument("--r2", action="store_true")
    a = ap.parse_args()
    p = (ModelParams(r=2, omega=a.omega) if a.r2 else
         ModelParams(L=3, r=1, sigma=0.5, lam=0.01, omega=a.omega, A=A3))
    solve = point_solver(p, "auto", qmc_config=phase_qmc(a.points, a.scrambles))
    t = time.process_time()
    if a.r2:
        f = solve(p, a.alpha, "free", max_steps=SURVEY_MAX_STEPS, stability=False, rtol=CURVE_RTOL)
    else:
        uni = solve(p, a.alpha, "uninformative", max_steps=SURVEY_MAX_STEPS, stability=True, rtol=CURVE_RTOL)
        print(f"uninformative: {uni.status.value}, e_t = {uni.e_t:.7g} ± {uni.error('e_t'):.2g}, "
              f"growth {uni.stability:.3f} ± {uni.stability_err:.3f}")
        f = solve(p, a.alpha, "free", init=_kicked(uni, p.sigma, "both"), max_steps=SURVEY_MAX_STEPS,
                  stability=False, rtol=CURVE_RTOL)
    print(f"free: {f.status.value}")
    for k in ("q", "m", "theta", "V", "e_t"):
        print(f"  {k} = {f.value(k):.6g} ± {f.error(k):.2g}")
    np.set_printoptions(precision=6, suppress=True, linewidth=150)
    print("per-scramble states (q, M, θ, V flattened):")
    print(np.asarray(f.raw.scramble_x))
    k = free_point_kind(f, p.sigma)
    print(f"kind by size: {k.by_size}; by size and significance: {k.kind}" + (f" — {k.note}" if k.note else ""))
    print(f"CPU {time.process_time() - t:.1f} s")


if __name__ == "__main__":
    main()
