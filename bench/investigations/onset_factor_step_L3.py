"""The uninformative point's growth factor against the semantic direction at L = 3 (A = 0.4 I + 0.2 J, P = I,
σ = 0.5, λ = 0.01, ω = 0.3) for three finite-difference steps (issue 29, docs/guides/transitions-any-model.md).

    python bench/investigations/onset_factor_step_L3.py [POINTS] [SCRAMBLES]

Prediction (written before the run): near a branch that leaves θ = 0 with θ ∝ α − α_c the map's θ response
is F(θ) = aθ + b|θ|θ, so a central difference of step δ reads a + bδ (b < 0): low by |b|δ, reaching +1 only
where the semantic branch's θ is about δ. A smaller step should move the factor up at α = 0.2–0.3, towards
and above +1, with a larger error.

Measured 2026-12-06 (1024 × 4 points, 84 s CPU at load 25–34 on the shared 2 cores): the prediction is wrong.

    alpha  eps=0.1          eps=0.03         eps=0.01
     0.15  0.690 ± 0.006    0.661 ± 0.029    0.610 ± 0.021
     0.20  0.799 ± 0.008    0.757 ± 0.028    0.749 ± 0.051
     0.25  0.893 ± 0.009    0.862 ± 0.036    0.824 ± 0.050
     0.30  0.980 ± 0.010    0.932 ± 0.035    0.889 ± 0.050

Smaller steps read *lower*: the uninformative point is stable against θ up to α ≈ 0.31 (the eps = 0.1 line's
crossing), above the α ≈ 0.2–0.25 where the semantic branch exists with θ → 0 and e_t equal within errors. The
transition's α_c is therefore the semantic branch's beginning, with this crossing as an upper bound
(phase/global_min.py ``_continuous``).
"""

from __future__ import annotations

import sys
import time

from attnphase.model import ModelParams
from attnphase.phase.continuation import phase_qmc
from attnphase.theory.engine import solve_batch
from attnphase.theory.stability_general import pinned_growth

A = [[0.6, 0.2, 0.2], [0.2, 0.6, 0.2], [0.2, 0.2, 0.6]]
ALPHAS = [0.15, 0.2, 0.25, 0.3]
EPS = (0.1, 0.03, 0.01)


def main(points: int = 1024, scrambles: int = 4) -> None:
    p = ModelParams(L=3, A=A, omega=0.3, sigma=0.5, lam=0.01)
    t = time.process_time()
    sols = solve_batch(p, ALPHAS, "uninformative", qmc_config=phase_qmc(points, scrambles), stability=False)
    print(f"solve: {time.process_time() - t:.0f} s CPU; statuses {[s.status.value for s in sols]}")
    print("alpha  " + "  ".join(f"eps={e:g}: theta block (± s.e.)" for e in EPS))
    recs = {e: pinned_growth(sols, eps=e) for e in EPS}
    for i, a in enumerate(ALPHAS):
        cells = []
        for e in EPS:
            b = recs[e][i].get("blocks", {}).get("theta", {})
            cells.append(f"{b.get('growth', float('nan')):.3f} ± {b.get('growth_err', float('nan')):.3f}")
        print(f"{a:5.2f}  " + "   ".join(cells))
    print(f"total {time.process_time() - t:.0f} s CPU ({points} × {scrambles} points)")


if __name__ == "__main__":
    main(*(int(x) for x in sys.argv[1:3]))
