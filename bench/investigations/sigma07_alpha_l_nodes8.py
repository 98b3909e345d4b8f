"""Why do the nodes = 8 solves fail near α_l at σ = 0.7, ω = 0.3 (λ = 0.01)? The semantic branch is followed at
nodes = 4 from α = 1.0 down to 0.7; then each α of 0.70–0.85 is solved at nodes = 8 (a) warm-started from the
nodes = 4 point there (as the Brent refinement does) and (b) followed at nodes = 8 from α = 1.0 down. Every solve
is printed: state, iterations, θ, ε_g − ε_lin, residual.

Run: PYTHONPATH=src python bench/investigations/sigma07_alpha_l_nodes8.py
"""
import numpy as np

from attnphase.model import ModelParams
from attnphase.phase import follow_branch
from attnphase.phase.continuation import MAX_STEPS, default_solver, point_state
from attnphase.theory import eps_lin


def main() -> None:
    params = ModelParams(sigma=0.7, omega=0.3)
    el = float(eps_lin(params))
    solve = default_solver(params)

    def show(tag, alpha, s):
        print(f"{tag:10s} α = {alpha:.4f}  {point_state(s).value:13s} it = {s.iterations:4d}  θ = {s.theta:.4g}  "
              f"ε_g − ε_lin = {s.eps_g - el:+.3e}  residual = {s.residual:.2e}  stab = {s.stability}", flush=True)

    alphas = [round(a, 4) for a in np.arange(1.0, 0.6999, -0.025)]
    c4 = follow_branch(params, alphas, "semantic", nodes=4, solver=solve)
    for p in c4.points:
        show("nodes4", p.alpha, p.solution)
    for p in c4.points:
        s = solve(params, p.alpha, "semantic", nodes=8, init=p.solution, max_steps=MAX_STEPS, stability=True)
        show("8 from 4", p.alpha, s)
    c8 = follow_branch(params, alphas, "semantic", nodes=8, init=c4.points[0].solution, solver=solve,
                       stability_nodes=8)
    for p in c8.points:
        show("nodes8", p.alpha, p.solution)
    print("end at nodes 8:", c8.end)


if __name__ == "__main__":
    main()
