"""Does the end of the semantic branch at σ = 0.7, ω = 0.3 (followed down from α = 0.7, 0.65, 0.6 at nodes = 4,
min_step = 1e-3: tests/test_phase_continuation.py) depend on round-off? The split map's sums are multiplied by
1 + eps·N(0, 1) (seeded) before the solver sees them; every solve of the continuation is printed, then the end.

Measured 2026-12-06 (2-core VM): eps = 0 → collapsed at 0.6409; eps = 1e-14, seed 2 → collapsed at 0.6504;
eps = 1e-12, seed 1 → ended at 0.6504. Run: PYTHONPATH=src python bench/investigations/sigma07_end_round_off.py
--eps 1e-14 --seed 2
"""
import argparse

import numpy as np

from attnphase.model import ModelParams
from attnphase.phase import follow_branch
from attnphase.phase.continuation import default_solver, point_state
from attnphase.theory import split_xla


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--eps", type=float, default=0.0, help="relative change of the map's sums (0: none)")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    rng, exact = np.random.default_rng(args.seed), split_xla.map_sums

    def noisy(*a, **k):
        sums, count, state = exact(*a, **k)
        return [s * (1.0 + args.eps * rng.standard_normal()) for s in sums], count, state
    split_xla.map_sums = noisy
    params = ModelParams(sigma=0.7, omega=0.3)
    solve = default_solver(params)

    def traced(params, alpha, branch, **kw):
        s = solve(params, alpha, branch, **kw)
        print(f"α = {alpha:.7f}  nodes = {kw.get('nodes')}  {point_state(s).value:13s}  θ = {s.theta:.5g}  "
              f"residual = {s.residual:.2e}", flush=True)
        return s
    br = follow_branch(params, [0.7, 0.65, 0.6], "semantic", nodes=4, min_step=1e-3, solver=traced)
    print(f"end: {br.end.kind.value} at {br.end.alpha:.4f} (last valid {br.end.alpha_valid:.4f}, first invalid "
          f"{br.end.alpha_invalid:.4f})")


if __name__ == "__main__":
    main()
