"""The walk past a false fold on the real theory: the semantic branch at L = 3, A = 0.4 I + 0.2 J, P = I,
σ = 0.5, λ = 0.01, ω = 0.4 on QMC points (256 × 4, as the transition of docs/guides/transitions-any-model.md,
"L = 3"), followed down over a short α list around the failures (0.7, 0.65 reach ``max_steps``). Run on a tree
with ``follow_branch``'s ``walk_past`` policy it walks with it; on an older tree (``phase/fold_check.py``) it
follows the branch and then calls ``check_fold`` — the same walk, to compare in one run:

    PYTHONPATH=src python bench/investigations/walk_past_l3.py
    PYTHONPATH=<older tree>/src python bench/investigations/walk_past_l3.py
"""

from __future__ import annotations

import argparse
import json
import time

from attnphase.model import ModelParams
from attnphase.phase.continuation import follow_branch, phase_qmc
from attnphase.theory.solve import point_solver

A3 = [[0.6, 0.2, 0.2], [0.2, 0.6, 0.2], [0.2, 0.2, 0.6]]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--alphas", default="0.75,0.7,0.65,0.6")
    ap.add_argument("--points", type=int, default=256)
    ap.add_argument("--scrambles", type=int, default=4)
    ap.add_argument("--min-step", type=float, default=0.05)
    a = ap.parse_args()
    p = ModelParams(L=3, r=1, sigma=0.5, lam=0.01, omega=0.4, A=A3)
    solve = point_solver(p, "auto", qmc_config=phase_qmc(a.points, a.scrambles))
    alphas = [float(x) for x in a.alphas.split(",")]
    t0 = time.process_time()
    try:
        from attnphase.theory.stepping import WalkPast
        br = follow_branch(p, alphas, "semantic", nodes=8, solver=solve, min_step=a.min_step, walk_past=WalkPast())
        walks, how = br.walks, "follow_branch(walk_past=WalkPast())"
    except ImportError:
        from attnphase.phase.fold_check import check_fold
        br = follow_branch(p, alphas, "semantic", nodes=8, solver=solve, min_step=a.min_step)
        fc = check_fold(p, br, solve, nodes=8)
        walks, how = [] if fc is None else [fc], "follow_branch, then check_fold"
    cpu = time.process_time() - t0
    print(how)
    for q in sorted(list(br.points) + list(br.extra), key=lambda q: -q.alpha):
        print(f"  α = {q.alpha:.4f} {q.state.value:14s} θ = {abs(q.theta):.5f} e_t = {q.e_t:.7f}")
    print("  end:", None if br.end is None else br.end.to_dict())
    print("  walks:", json.dumps([w.to_dict() for w in walks]))
    print(f"  solves {br.solves}, {cpu:.0f} s CPU")


if __name__ == "__main__":
    main()
