"""Within-instance multiplicity of the positional-start minimisers at σ = 0.5, λ = 0.01, ω = 0.1, α = 0.75 (issue 32
follow-up; docs/notes/2026-12-06-small-omega-rsb.md): per instance, L-BFGS from the paper's positional start and from
it plus ε·‖Q₀‖·N(0, I)/√(d r) (ε = 0.3, 1.0; 4 draws each) and from the RS positional overlap (Q₀ rescaled so that
m = 0.187): do the minima differ (several states per instance) and is any lower than the positional start's?
Writes docs/data/beyond_rs/small_omega/perturbed_starts_d{d}.csv.
Run: OMP_NUM_THREADS=1 PYTHONPATH=src python bench/investigations/positional_perturbed_starts.py [d] [instances]
"""

from __future__ import annotations

import sys

import jax
import jax.numpy as jnp
import numpy as np
import pandas as pd

from attnphase.model import ModelParams
from attnphase.simulate import TrainConfig, initial_Q, instance, observables, train


def main(d: int = 1000, instances: int = 4):
    params = ModelParams(sigma=0.5, lam=0.01, omega=0.1)
    config = TrainConfig(init="positional", optimizer="lbfgs")
    rows = []
    with jax.enable_x64(True):
        for i in range(instances):
            inst = instance(params, alpha=0.75, d=d, seed=0, index=i)
            Q0 = jnp.asarray(initial_Q(inst, params, config), jnp.float64)
            m0 = observables(Q0, inst, params)["m"]
            rng = np.random.default_rng(100 + i)
            starts = [("positional", 0.0, Q0), ("rs_m", 0.0, Q0 * (0.1873 / m0))]
            for eps in (0.3, 1.0):
                for k in range(4):
                    noise = rng.standard_normal(Q0.shape) * float(jnp.linalg.norm(Q0)) / np.sqrt(Q0.size)
                    starts.append((f"perturbed{k}", eps, Q0 + eps * jnp.asarray(noise)))
            for name, eps, Qs in starts:
                Q, it, gn, status = train(inst, params, config, Q0=Qs)
                ob = observables(Q, inst, params)
                rows.append(dict(instance=i, d=d, start=name, eps=eps, iterations=it, grad_norm=gn, status=str(status),
                                 **{k: float(ob[k]) for k in ("m", "theta", "q", "e_t")}))
                print(rows[-1], flush=True)
    pd.DataFrame(rows).to_csv(f"docs/data/beyond_rs/small_omega/perturbed_starts_d{d}.csv", index=False)


if __name__ == "__main__":
    a = sys.argv[1:]
    main(int(a[0]) if a else 1000, int(a[1]) if len(a) > 1 else 4)
