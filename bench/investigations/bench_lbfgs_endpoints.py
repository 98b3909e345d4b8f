"""Where do L-BFGS runs end? Rebuild finite-d instances, polish their end points in float64, classify them.

Issue 11, item 3 (L = 2, r = 2, r* = 1, ω = 0.3, α = 1, positional start, d = 1000): the float32 L-BFGS runs of
``attnphase simulate`` (gtol 1e-6) end with scattered θ (0.006–0.07) while the semantic start gives θ ≈ 0.064.
For each instance this script

1. rebuilds it exactly as :func:`attnphase.simulate.simulate` does (:func:`attnphase.simulate.instance` and
   :func:`attnphase.simulate.train`: same keys ``fold_in(key(seed), i)``, float32 data, the same warm-up +
   L-BFGS; θ, m, e_t reproduce the cached ``simulate`` output);
2. continues from that end point in float64 (no warm-up) until ``‖∇R‖ ≤ gtol64·max(1, ‖∇R₀‖)`` (absolute from a
   near-minimum) or ``max_iter``; and trains the same instance from the semantic start in float64 (its minimum
   is the reference ``semantic_start``: an end point with e_t above it sits in another minimum);
3. computes the lowest eigenvalues of the Hessian of R at the polished point (Lanczos, ``scipy eigsh``, on
   central finite differences of the float64 gradient) — a negative one is a saddle;
4. at a saddle: steps along the negative-curvature eigenvector (both signs) and runs L-BFGS again, to see which
   minimum it falls into.

Outcome per instance: ``unconverged`` (the polish moves it to the cluster), ``saddle`` (negative curvature;
the escape destinations are reported) or ``minimum`` (a second local minimum: positive curvature, its e_t).

Usage: ``python bench/investigations/bench_lbfgs_endpoints.py [--struct L2r2|L3 --init positional --alpha 1 --instances 16
--d 1000 --start 0 --no-hessian]`` writes ``docs/data/theory_vs_finite_d/endpoints_<case>.json`` (``_from<start>``
for a later batch of instances; cached; ``--rerun`` recomputes). Used by bench_theory_vs_finite_d.py
(``ZERO_SERIES``).
"""

from __future__ import annotations

import os

os.environ["XLA_FLAGS"] = (os.environ.get("XLA_FLAGS", "") + " --xla_cpu_experimental_ynn_fusion_type=").strip()

import argparse  # noqa: E402
import json  # noqa: E402
import math  # noqa: E402
import time  # noqa: E402
from dataclasses import replace  # noqa: E402
from pathlib import Path  # noqa: E402

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402

from attnphase.model import ModelParams
from attnphase.attention import empirical_risk_from_statistics, risk_statistics  # noqa: E402
from attnphase.simulate import Instance, TrainConfig, initial_Q, instance, observables, train  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
OUT = ROOT / "docs" / "data" / "theory_vs_finite_d"
STRUCT = dict(L2r2=dict(L=2, r=2, r_star=1),
              L3=dict(L=3, A=[[0.6, 0.2, 0.2], [0.2, 0.6, 0.2], [0.2, 0.2, 0.6]]))
KEYS = ("m", "theta", "q", "e_t")


def describe(Q, inst: Instance, p: ModelParams) -> dict:
    """m, θ, q, e_t of ``Q`` as ``simulate`` reports them."""
    o = observables(Q, inst, p)
    return {k: o[k] for k in KEYS}


def gauge_directions(Q) -> np.ndarray:
    """Orthonormal tangents ``Q J`` of the orbit ``Q → Q O`` (J antisymmetric r×r): the Hessian's exact zero
    modes (R is invariant under the rotation gauge, MODEL.md §8), as columns of a (d·r, r(r−1)/2) array."""
    r = Q.shape[1]
    cols = []
    for a in range(r):
        for b in range(a + 1, r):
            J = np.zeros((r, r))
            J[a, b], J[b, a] = 1.0, -1.0
            cols.append(np.asarray(Q @ J).ravel())
    if not cols:
        return np.zeros((Q.size, 0))
    return np.linalg.qr(np.stack(cols, axis=1))[0]


def lowest_curvatures(grad, Q, k=3, eps=1e-4, shift=1.0):
    """The ``k`` lowest eigenvalues (and vectors) of the Hessian of R at Q off the gauge orbit: Lanczos on
    central differences of the float64 gradient (``eps`` relative to ‖Q‖/√(size)), the gauge tangents
    (:func:`gauge_directions`) moved to the eigenvalue ``shift``, far above the soft modes."""
    from scipy.sparse.linalg import LinearOperator, eigsh
    shape, n = Q.shape, Q.size
    h = eps * float(jnp.linalg.norm(Q)) / math.sqrt(n)
    g = jax.jit(grad)
    G = gauge_directions(np.asarray(Q))

    def hv(v):
        w = v - G @ (G.T @ v)
        W = jnp.asarray(w.reshape(shape))
        Hw = np.asarray((g(Q + h * W) - g(Q - h * W)) / (2 * h)).ravel()
        return Hw - G @ (G.T @ Hw) + shift * (v - w)

    vals, vecs = eigsh(LinearOperator((n, n), matvec=hv, dtype=np.float64), k=k, which="SA", tol=1e-6)
    order = np.argsort(vals)
    return vals[order], vecs[:, order]


def run_case(struct: str, init: str, alpha: float, d: int, instances: int, seed=0, gtol64=1e-9,
             max_iter64=20000, step=0.3, hessian=True, start=0) -> dict:
    p = ModelParams(omega=0.3, **STRUCT[struct])
    cfg = TrainConfig(init=init, optimizer="lbfgs")
    rows = []
    cfg64 = replace(cfg, x64=True, gtol=gtol64, max_iter=max_iter64, warmup_steps=0)
    for i in range(start, start + instances):
        t0 = time.perf_counter()
        inst = instance(p, alpha=alpha, d=d, seed=seed, index=i)          # float32, as simulate draws it
        Q, it32, gn32, _ = train(inst, p, cfg)                              # simulate's own run of it
        before = describe(Q, inst, p)
        with jax.enable_x64(True):
            c = Instance(*(v.astype(jnp.float64) if jnp.issubdtype(v.dtype, jnp.floating) else v for v in inst))
            stats = risk_statistics(c.X, c.Y, c.p)
            risk = lambda Q: empirical_risk_from_statistics(Q, stats, p.lam)  # noqa: E731
            polish = lambda Q0: train(c, p, cfg64, Q0)  # noqa: E731
            Q1, it1, gn1, _ = polish(Q.astype(jnp.float64))
            after = describe(Q1, c, p)
            vals, vecs = lowest_curvatures(jax.grad(risk), Q1) if hessian else (np.array([np.nan]), None)
            sem = replace(cfg64, init="semantic", warmup_steps=cfg.warmup_steps)
            Qs = train(c, p, sem, initial_Q(c, p, sem))[0]
            row = dict(instance=i, before=before, semantic_start=describe(Qs, c, p), f32_iters=it32,
                       f32_grad_norm=gn32, after=after, f64_iters=it1, f64_grad_norm=gn1,
                       hessian_lowest=[float(v) for v in vals])
            if hessian and vals[0] < 0:                    # a saddle: step off it along the negative-curvature direction
                v = jnp.asarray(vecs[:, 0].reshape(Q1.shape))
                scale = step * float(jnp.linalg.norm(Q1))
                esc = []
                for sgn in (1.0, -1.0):
                    Q2, it2, gn2, _ = polish(Q1 + sgn * scale * v)
                    esc.append(dict(sign=sgn, iters=it2, grad_norm=gn2, **describe(Q2, c, p)))
                row["escape"] = esc
        row["wall_s"] = time.perf_counter() - t0
        rows.append(row)
        print(json.dumps(row), flush=True)
    return dict(case=dict(struct=struct, init=init, alpha=alpha, d=d, instances=instances, start=start, seed=seed,
                          gtol64=gtol64, max_iter64=max_iter64, escape_step=step, hessian=hessian),
                load=os.getloadavg(), rows=rows)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--struct", default="L2r2", choices=sorted(STRUCT))
    ap.add_argument("--init", default="positional")
    ap.add_argument("--alpha", type=float, default=1.0)
    ap.add_argument("--d", type=int, default=1000)
    ap.add_argument("--instances", type=int, default=16)
    ap.add_argument("--start", type=int, default=0, help="first instance index (a later batch of the same series)")
    ap.add_argument("--rerun", action="store_true")
    ap.add_argument("--no-hessian", action="store_true", help="skip the Hessian (and the saddle escape)")
    a = ap.parse_args(argv)
    tail = f"_from{a.start}" if a.start else ""
    f = OUT / f"endpoints_{a.struct}_{a.init}_a{a.alpha:g}_d{a.d}_n{a.instances}{tail}.json"
    if f.exists() and not a.rerun:
        print(f.read_text())
        return 0
    res = run_case(a.struct, a.init, a.alpha, a.d, a.instances, hessian=not a.no_hessian, start=a.start)
    OUT.mkdir(parents=True, exist_ok=True)
    f.write_text(json.dumps(res, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
