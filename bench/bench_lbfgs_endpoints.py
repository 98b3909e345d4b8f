"""Where do L-BFGS runs end? Rebuild finite-d instances, polish their end points in float64, classify them.

Issue 11, item 3 (L = 2, r = 2, r* = 1, ω = 0.3, α = 1, positional start, d = 1000): the float32 L-BFGS runs of
``attnphase simulate`` (gtol 1e-6) end with scattered θ (0.006–0.07) while the semantic start gives θ ≈ 0.064.
For each instance this script

1. rebuilds it exactly as :func:`attnphase.simulate.simulate` does (same keys ``fold_in(key(seed), i)``, float32
   data, the same warm-up + L-BFGS), and checks that θ, m, e_t reproduce the cached ``simulate`` output;
2. continues from that end point in float64 (no warm-up) until ``‖∇R‖ ≤ gtol64`` (absolute) or ``max_iter``;
3. computes the lowest eigenvalues of the Hessian of R at the polished point (Lanczos, ``scipy eigsh``, on
   central finite differences of the float64 gradient) — a negative one is a saddle;
4. at a saddle: steps along the negative-curvature eigenvector (both signs) and runs L-BFGS again, to see which
   minimum it falls into.

Outcome per instance: ``unconverged`` (the polish moves it to the cluster), ``saddle`` (negative curvature;
the escape destinations are reported) or ``minimum`` (a second local minimum: positive curvature, its e_t).

Usage: ``python bench/bench_lbfgs_endpoints.py [--init positional --alpha 1 --instances 16 --d 1000]``
writes ``docs/data/theory_vs_finite_d/endpoints_<case>.json`` (cached; ``--rerun`` recomputes).
"""

from __future__ import annotations

import os

os.environ["XLA_FLAGS"] = (os.environ.get("XLA_FLAGS", "") + " --xla_cpu_experimental_ynn_fusion_type=").strip()

import argparse  # noqa: E402
import json  # noqa: E402
import math  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402

from attnphase.data import labelled_dataset, n_samples, sample_teacher  # noqa: E402
from attnphase.model import (ModelParams, empirical_risk, empirical_risk_from_statistics,  # noqa: E402
                             positional_directions, positional_encodings, risk_statistics)
from attnphase.simulate import INITS, TrainConfig, _initial_Q, _observables, _train_lbfgs, instance_keys  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "docs" / "data" / "theory_vs_finite_d"
STRUCT = dict(L2r2=dict(L=2, r=2, r_star=1),
              L3=dict(L=3, A=[[0.6, 0.2, 0.2], [0.2, 0.6, 0.2], [0.2, 0.2, 0.6]]))


def _knobs(p: ModelParams, cfg: TrainConfig, dtype, **over):
    f = lambda v: jnp.asarray(v, dtype)  # noqa: E731
    kn = dict(sigma=f(p.sigma), lam=f(p.lam), omega=f(p.omega), A=f(p.A_array), lr=f(cfg.lr), gtol=f(cfg.gtol),
              max_iter=jnp.asarray(cfg.max_iter, jnp.int32), warmup_steps=jnp.asarray(cfg.warmup_steps, jnp.int32),
              init_index=jnp.asarray(INITS.index(cfg.init), jnp.int32), init_scale=f(cfg.init_scale))
    kn.update({k: (jnp.asarray(v, jnp.int32) if isinstance(v, int) else f(v)) for k, v in over.items()})
    return kn


@jax.jit
def _lbfgs(Q0, kn, stats):
    """simulate's L-BFGS (warm-up, then optax L-BFGS) on R from the statistics (passed, not closed over)."""
    return _train_lbfgs(lambda Q: empirical_risk_from_statistics(Q, stats, kn["lam"]), Q0, kn)


def rebuild(p: ModelParams, d: int, alpha: float, key, cfg: TrainConfig):
    """One instance as ``simulate`` builds it (float32): Q*, X, Y, p, u and the float32 L-BFGS end point."""
    dt = jnp.float32
    k_teacher, k_train, _, k_init = jax.random.split(key, 4)
    structure = ModelParams(L=p.L, r=p.r, r_star=p.r_star, A=((1.0 / p.L,) * p.L,) * p.L, P=p.P)
    kn = _knobs(p, cfg, dt)
    Q_star = sample_teacher(k_teacher, structure, d, dt)
    X, Y = labelled_dataset(k_train, Q_star, n_samples(alpha, d), p.L, kn["sigma"], kn["omega"], kn["A"])
    pe = positional_encodings(structure, d, dt)
    u = positional_directions(d, structure.k, dt)
    stats = risk_statistics(X, Y, pe)
    Q0 = _initial_Q(k_init, kn["init_index"], kn["init_scale"], Q_star, p.r, d, dt)
    Q, it, gn, _ = _lbfgs(Q0, kn, stats)
    return dict(Q_star=Q_star, X=X, Y=Y, p=pe, u=u, Q=Q, iters=int(it), gn=float(gn))


def describe(Q, inst, lam, sigma) -> dict:
    m, th, _, q = _observables(Q, inst["Q_star"], inst["u"], sigma)
    R = empirical_risk(Q, inst["X"], inst["Y"], inst["p"], lam)
    return dict(m=float(m), theta=float(th), q=float(q), e_t=float(R) / Q.shape[0])


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
             max_iter64=20000, step=0.3, hessian=True) -> dict:
    p = ModelParams(omega=0.3, **STRUCT[struct])
    cfg = TrainConfig(init=init, optimizer="lbfgs")
    rows = []
    for i, key in enumerate(instance_keys(seed, instances)):
        t0 = time.perf_counter()
        with jax.enable_x64(True):
            inst = rebuild(p, d, alpha, key, cfg)
            before = describe(inst["Q"], inst, p.lam, p.sigma)
            c = {k: (v.astype(jnp.float64) if isinstance(v, jax.Array) else v) for k, v in inst.items()}
            stats = risk_statistics(c["X"], c["Y"], c["p"])
            risk = lambda Q: empirical_risk_from_statistics(Q, stats, p.lam)  # noqa: E731
            kn = _knobs(p, cfg, jnp.float64, gtol=gtol64, max_iter=max_iter64, warmup_steps=0)
            polish = lambda Q0: _lbfgs(Q0, kn, stats)  # noqa: E731
            Q1, it1, gn1, _ = polish(c["Q"])
            after = describe(Q1, c, p.lam, p.sigma)
            vals, vecs = lowest_curvatures(jax.grad(risk), Q1) if hessian else (np.array([np.nan]), None)
            Qs = _lbfgs(_initial_Q(jax.random.split(key, 4)[3], jnp.asarray(0, jnp.int32), 0.0, c["Q_star"], p.r,
                                   d, jnp.float64), kn | dict(warmup_steps=jnp.asarray(cfg.warmup_steps, jnp.int32)),
                        stats)[0]
            row = dict(instance=i, before=before, semantic_start=describe(Qs, c, p.lam, p.sigma), f32_iters=inst["iters"], f32_grad_norm=inst["gn"],
                       after=after, f64_iters=int(it1), f64_grad_norm=float(gn1),
                       hessian_lowest=[float(v) for v in vals])
            if hessian and vals[0] < 0:                    # a saddle: step off it along the negative-curvature direction
                v = jnp.asarray(vecs[:, 0].reshape(Q1.shape))
                scale = step * float(jnp.linalg.norm(Q1))
                esc = []
                for sgn in (1.0, -1.0):
                    Q2, it2, gn2, _ = polish(Q1 + sgn * scale * v)
                    esc.append(dict(sign=sgn, iters=int(it2), grad_norm=float(gn2), **describe(Q2, c, p.lam, p.sigma)))
                row["escape"] = esc
        row["wall_s"] = time.perf_counter() - t0
        rows.append(row)
        print(json.dumps(row), flush=True)
    return dict(case=dict(struct=struct, init=init, alpha=alpha, d=d, instances=instances, seed=seed,
                          gtol64=gtol64, max_iter64=max_iter64, escape_step=step, hessian=hessian),
                load=os.getloadavg(), rows=rows)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--struct", default="L2r2", choices=sorted(STRUCT))
    ap.add_argument("--init", default="positional")
    ap.add_argument("--alpha", type=float, default=1.0)
    ap.add_argument("--d", type=int, default=1000)
    ap.add_argument("--instances", type=int, default=16)
    ap.add_argument("--rerun", action="store_true")
    ap.add_argument("--no-hessian", action="store_true", help="skip the Hessian (and the saddle escape)")
    a = ap.parse_args(argv)
    f = OUT / f"endpoints_{a.struct}_{a.init}_a{a.alpha:g}_d{a.d}_n{a.instances}.json"
    if f.exists() and not a.rerun:
        print(f.read_text())
        return 0
    res = run_case(a.struct, a.init, a.alpha, a.d, a.instances, hessian=not a.no_hessian)
    OUT.mkdir(parents=True, exist_ok=True)
    f.write_text(json.dumps(res, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
