"""The replicon at finite d: traces of the inverse Hessian of the training risk at L-BFGS minimisers against
the RS prediction (issue 11, helper hC; docs/notes/2026-12-05-theory-general.md, "Replicon stability").

RS prediction (derived in the docs): at the minimiser, with H the d×d Hessian of R(Q) (r = 1),
``t₁ = (σ²/d) tr H⁻¹ → V`` and ``t₂ = (σ⁴/d) tr H⁻² → V²/(1 − Λ_AT)``, so ``Λ_d = 1 − t₁²/t₂`` is a finite-d
estimate of the replicon eigenvalue (smooth part), available at ANY minimum, also one without an RS point (the
L = 3 positional-start band). Prediction written before measuring: Λ_d matches the theory's Λ_AT within a few
1e-2 on the L = 2 branches; on the L = 3 band Λ_d is closer to 1 than at the L = 3 semantic minimum.

Each case: instance ``index`` of ``simulate`` (seed 0, float32 draws), simulate's float32 L-BFGS from the case's
start, polished in float64 (L-BFGS, gtol 1e-9, no warm-up; as bench_L3_cluster_hessian), the full Hessian
(:func:`attnphase.simulate.risk_hessian`), its spectrum. Output:
docs/data/replicon/hessian_traces.json (rows kept). Usage: python bench/investigations/bench_replicon_hessian.py [--d 1000]
[--instances 2] [--cases L2a2sem,...]
"""

from __future__ import annotations

import argparse
import json
import math
import time
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np

from attnphase.model import ModelParams
from attnphase.simulate import Instance, TrainConfig, instance, observables, risk_hessian, train

ROOT = Path(__file__).resolve().parents[2]
OUT = ROOT / "docs" / "data" / "replicon" / "hessian_traces.json"
A3 = [[0.6, 0.2, 0.2], [0.2, 0.6, 0.2], [0.2, 0.2, 0.6]]
CASES = {  # name: (params, alpha, init)
    "L2a2sem": (ModelParams(), 2.0, "semantic"),
    "L2a2pos": (ModelParams(), 2.0, "positional"),
    "L2a1sem": (ModelParams(), 1.0, "semantic"),
    "L3a1sem": (ModelParams(L=3, A=A3), 1.0, "semantic"),
    "L3a1pos": (ModelParams(L=3, A=A3), 1.0, "positional"),
}


def as64(inst: Instance) -> Instance:
    return Instance(*(v.astype(jnp.float64) if jnp.issubdtype(v.dtype, jnp.floating) else v for v in inst))


INDICES = {"L3a1pos": (2, 3)}
"""Instances per case (default 0, 1); L = 3 positional start: instances 2, 3 end in the band at d = 1000
(docs/data/L3_cluster_hessian/), 0 and 1 end semantic."""


def run(name: str, d: int, index: int) -> dict:
    params, alpha, init = CASES[name]
    t0 = time.perf_counter()
    inst = instance(params, alpha=alpha, d=d, seed=0, index=index)          # as simulate draws it (float32)
    Q32, *_ = train(inst, params, TrainConfig(init=init, optimizer="lbfgs"))
    with jax.enable_x64(True):
        c = as64(inst)
        cfg = TrainConfig(init=init, optimizer="lbfgs", x64=True, gtol=1e-9, max_iter=5000, warmup_steps=0)
        Q, it, gn, status = train(c, params, cfg, Q32.astype(jnp.float64))      # polished in float64
        g, H = risk_hessian(Q, c, params)
        ev = np.linalg.eigvalsh(0.5 * (np.asarray(H) + np.asarray(H).T))
        obs = observables(Q, c, params)
        gnorm = float(np.linalg.norm(np.asarray(g)))
    s2 = params.sigma ** 2
    t1 = float(s2 * np.mean(1.0 / ev))
    t2 = float(s2 * s2 * np.mean(1.0 / ev ** 2))
    return {"case": name, "d": d, "instance": index, "status": status.value, "grad_norm": gnorm,
            **{k: float(obs[k]) for k in ("m", "theta", "q", "e_t")}, "lam_min": float(ev[0]),
            "lam_max": float(ev[-1]), "lam_lowest": [float(v) for v in ev[:20]], "t1_V": t1, "t2": t2,
            "Lambda_d": 1.0 - t1 * t1 / t2,
            "wall_s": time.perf_counter() - t0}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--d", type=int, default=1000)
    ap.add_argument("--instances", type=int, default=2)
    ap.add_argument("--cases", default=",".join(CASES))
    ap.add_argument("--indices", default=None, help="comma-separated instance indices (overrides the defaults)")
    ap.add_argument("--rerun", action="store_true", help="recompute rows already in the JSON (replacing them)")
    a = ap.parse_args()
    rows = json.loads(OUT.read_text()) if OUT.exists() else []
    done = {(r["case"], r["d"], r["instance"]) for r in rows}
    for name in a.cases.split(","):
        idx = [int(v) for v in a.indices.split(",")] if a.indices else INDICES.get(name, range(a.instances))
        for i in idx:
            if (name, a.d, i) in done and not a.rerun:
                continue
            row = run(name, a.d, i)
            rows = [r for r in rows if (r["case"], r["d"], r["instance"]) != (name, a.d, i)]
            print({k: (round(v, 6) if isinstance(v, float) else v) for k, v in row.items()}, flush=True)
            rows.append(row)
            OUT.parent.mkdir(parents=True, exist_ok=True)
            OUT.write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
