"""A short tour of the attnphase Python API (runs in well under a minute on a laptop at these sizes).

    python examples/tour.py            # or paste the cells into a notebook

Each result carries ``.to_frame()`` (pandas) and ``.provenance`` (parameters, seeds, versions, git commit
and dirty flag, integrator, convergence). The sizes here are small to keep the tour fast; the paper's
protocol is d = 1000, 5000 GD steps, 24 instances (docs/model.md §4).
"""

import attnphase

# 1. Finite-d training of the attention student (MODEL.md §4), from the semantic and positional starts.
for init in ("semantic", "positional"):
    sim = attnphase.simulate(alpha=1.5, d=60, omega=0.3, init=init, steps=3000, instances=2,
                             test_samples=2000, seed=1)
    s = sim.summary()
    print(f"simulate init={init:10s}  |m| = {s['m']['mean']:.3f}  θ/σ² = {s['theta_over_sigma2']['mean']:.3f}  "
          f"e_t = {s['e_t']['mean']:.5f}  ε_g = {s['eps_g']['mean']:.5f}  converged = {bool(sim.converged.all())}")
frame = sim.to_frame()
print("per-instance table:", list(frame.columns)[:8], "...")

# 2. Any sequence length and rank: L = 3, student rank 2.
sim3 = attnphase.simulate(alpha=1.0, d=30, L=3, r=2, A=[[0.5, 0.25, 0.25], [0.25, 0.5, 0.25], [0.25, 0.25, 0.5]],
                          steps=200, instances=1, test_samples=500)
print(f"L=3, r=2: e_t = {sim3.e_t[0]:.5f}, ε_g = {sim3.eps_g[0]:.5f}")

# 3. The linear positional baseline in the population limit (MODEL.md §5).
bl = attnphase.baseline(omega=0.3)
print(f"ε_lin(ω=0.3) = {bl.eps_lin:.7f}  (integrator: {bl.provenance['integrator']['method']})")

# 4. The asymptotic theory (MODEL.md §6): one fixed point per branch at α = 2 (coarse resolution for speed).
for branch in ("semantic", "positional"):
    pt = attnphase.solve(2.0, branch, omega=0.3, nodes=4)
    print(f"theory {branch:10s} q = {pt.q:.4f}  m = {pt.m:.4f}  θ = {pt.theta:.4f}  e_t = {pt.e_t:.5f}  "
          f"ε_g = {pt.eps_g:.5f}  status = {pt.status}")
print(pt.to_frame().T.head(6))

# 5. Next steps (minutes each): attnphase.curve(alphas, branch), attnphase.transition(omega=0.3) for α_c and α_l,
#    attnphase.phase_diagram(omegas, alphas); on the command line `attnphase reproduce`.
