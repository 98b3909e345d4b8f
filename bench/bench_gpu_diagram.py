"""The paper-size empirical slice on whatever device JAX has (issue 34; part ``slice`` of bench/gpu_session.sh).

    python bench/bench_gpu_diagram.py --json OUT/slice.json                 # ω = 0.3, 25 α × 2 inits × 24, d = 1000
    python bench/bench_gpu_diagram.py --d 40 --alphas 2 --instances 2 --json s.json   # the CPU self-test's size

The α are visited in a spread order (ends first, then midpoints), so a run cut off by its time limit still spans
the range. After every (α, init) call the JSON is rewritten: backend, device, `simulate`'s group size
(`instances_per_batch`), per call the wall time (the first call of each α compiles: n = αd changes the shapes),
iterations and convergence, and per α the Δe_t = e_t(positional) − e_t(semantic) ± s.e. (paired per instance).
"""
from __future__ import annotations

import argparse
import json
import math
import os
import platform
import time

import jax
import numpy as np
import pandas as pd

from attnphase.data import n_samples
from attnphase.empirical_diagram import cell_table
from attnphase.model import ModelParams
from attnphase.simulate import TrainConfig, instances_per_batch, simulate


def spread(values: list[float]) -> list[float]:
    """``values`` reordered: both ends, then repeatedly the midpoints of the largest gaps (a cut-off prefix covers
    the range)."""
    out = sorted({0, len(values) - 1})
    seen, queue = set(out), [(0, len(values) - 1)]
    while queue:
        lo, hi = queue.pop(0)
        if hi - lo < 2:
            continue
        mid = (lo + hi) // 2
        if mid not in seen:
            seen.add(mid)
            out.append(mid)
        queue += [(lo, mid), (mid, hi)]
    out += [i for i in range(len(values)) if i not in seen]
    return [values[i] for i in out]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--d", type=int, default=1000)
    ap.add_argument("--omega", type=float, default=0.3)
    ap.add_argument("--alphas", type=int, default=25, help="α = linspace(0.01, 2, N)")
    ap.add_argument("--instances", type=int, default=24)
    ap.add_argument("--json", required=True)
    a = ap.parse_args()
    dev = jax.devices()[0]
    P = ModelParams(omega=a.omega)
    alphas = spread([float(x) for x in np.linspace(0.01, 2.0, a.alphas)])
    rec = dict(backend=jax.default_backend(), device=str(dev), host=platform.node(), cores=os.cpu_count(),
               jax=jax.__version__, d=a.d, omega=a.omega, instances=a.instances, alphas_planned=len(alphas),
               group=instances_per_batch(n_samples(1.0, a.d), P.L, a.d, 4, a.instances),
               started_utc=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), calls=[], cells=[])
    rows, t0 = [], time.perf_counter()
    for alpha in alphas:
        for init in ("semantic", "positional"):
            t = time.perf_counter()
            r = simulate(P, alpha=alpha, d=a.d, config=TrainConfig(init=init, optimizer="lbfgs"),
                         instances=a.instances, seed=0)
            wall = time.perf_counter() - t
            rec["calls"].append(dict(alpha=alpha, init=init, wall_s=round(wall, 3), compiled=init == "semantic",
                                     iterations_mean=float(r.iterations.mean()), iterations_max=int(r.iterations.max()),
                                     converged=int(r.converged.sum())))
            rows += [dict(alpha=alpha, omega=a.omega, init=init, seed=0, instance=i, e_t=float(r.e_t[i]),
                          converged=bool(r.converged[i])) for i in range(a.instances)]
        tab = cell_table(pd.DataFrame(rows))
        rec["cells"] = [dict(alpha=float(x.alpha), delta_e_t=float(x.delta_e_t), delta_se=float(x.delta_se),
                             e_t_semantic=float(x.e_t_semantic), e_t_positional=float(x.e_t_positional))
                        for _, x in tab.iterrows()]
        calls = rec["calls"]
        rec.update(alphas_done=len(rec["cells"]), students=len(rows), wall_s=round(time.perf_counter() - t0, 2),
                   compile_and_first_call_s=round(sum(c["wall_s"] for c in calls if c["compiled"]), 2),
                   compiled_calls_s=round(sum(c["wall_s"] for c in calls if not c["compiled"]), 2))
        warm = [c for c in calls if not c["compiled"]]
        rec["per_student_compiled_ms"] = (round(1e3 * sum(c["wall_s"] for c in warm) / (len(warm) * a.instances), 2)
                                          if warm else math.nan)
        with open(a.json, "w") as f:
            json.dump(rec, f, indent=1)
    print(json.dumps({k: v for k, v in rec.items() if k not in ("calls", "cells")}, indent=1))


if __name__ == "__main__":
    main()
