"""The semantic branch at L = 3, A = 0.4 I + 0.2 J, P = I, σ = 0.5, λ = 0.01, ω = 0.4 followed down in α by
hand (warm starts, a long iteration cap), printing status, iterations, residual, θ per scramble and e_t: is its
end at 0.725 (the `transition` run's fold) a turning point or a failure of the iteration?
(docs/guides/transitions-any-model.md, "L = 3", ω = 0.4.)

    PYTHONPATH=src python bench/investigations/l3_omega04_branch_down.py --start 0.8 --stop 0.5 --step 0.025
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from attnphase.model import ModelParams
from attnphase.phase.continuation import CURVE_RTOL, phase_qmc
from attnphase.phase.kinds import scramble_overlaps
from attnphase.theory.solve import point_solver
from attnphase.theory.solution import state_of

A3 = [[0.6, 0.2, 0.2], [0.2, 0.6, 0.2], [0.2, 0.2, 0.6]]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--omega", type=float, default=0.4)
    ap.add_argument("--start", type=float, default=0.8)
    ap.add_argument("--stop", type=float, default=0.5)
    ap.add_argument("--step", type=float, default=0.025)
    ap.add_argument("--points", type=int, default=256)
    ap.add_argument("--scrambles", type=int, default=4)
    ap.add_argument("--max-steps", type=int, default=600)
    ap.add_argument("--branch", default="semantic")
    ap.add_argument("--stability", action="store_true")
    ap.add_argument("--damping", type=float, default=None)
    ap.add_argument("--backtrack", type=int, default=None)
    ap.add_argument("--anderson", type=int, default=5)
    ap.add_argument("--retry-damping", type=float, default=None)
    a = ap.parse_args()
    p = ModelParams(L=3, r=1, sigma=0.5, lam=0.01, omega=a.omega, A=A3)
    solve = point_solver(p, "auto", qmc_config=phase_qmc(a.points, a.scrambles))
    t0 = time.process_time()
    init = None
    n = int(round((a.start - a.stop) / a.step)) + 1
    for al in np.linspace(a.start, a.stop, n):
        s = solve(p, float(al), a.branch, init=init, max_steps=a.max_steps, stability=a.stability, rtol=CURVE_RTOL,
                  damping=a.damping, backtrack=a.backtrack, anderson=a.anderson)
        per = scramble_overlaps(s)
        th = "" if per is None else np.array2string(per.z["theta"], precision=4)
        st = "" if s.stability is None else f" growth {s.stability:.3f} ± {s.stability_err:.3f}"
        if s.status.value != "converged" and a.retry_damping:
            s = solve(p, float(al), a.branch, init=init, max_steps=a.max_steps, stability=a.stability,
                      rtol=CURVE_RTOL, damping=a.retry_damping, backtrack=3, anderson=a.anderson)
            per = scramble_overlaps(s)
            th = "" if per is None else np.array2string(per.z["theta"], precision=4)
            st = "" if s.stability is None else f" growth {s.stability:.3f} ± {s.stability_err:.3f}"
        print(f"α = {al:.4f} {s.status.value:16s} it {s.iterations:4d} res {s.residual:.2e} q = {s.q:.5f} "
              f"θ = {abs(s.theta):.4f} θ_s = {th} e_t = {s.e_t:.7f} ± {s.error('e_t'):.1g}{st} "
              f"[{time.process_time() - t0:.0f} s]", flush=True)
        if np.isfinite(float(s.q)) and s.converged:
            init = state_of(s)


if __name__ == "__main__":
    main()
