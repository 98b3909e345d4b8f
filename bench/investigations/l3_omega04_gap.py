"""What is the stable fixed point at L = 3, A = 0.4 I + 0.2 J, P = I, σ = 0.5, λ = 0.01, ω = 0.4 between the
uninformative point's loss of stability (α ≈ 0.225) and the followed semantic branch's fold (0.725)?
(docs/guides/transitions-any-model.md, "L = 3", ω = 0.4.)

At each α: the uninformative point (and its θ growth factor), the pinned semantic solve from several starts
(the uninformative point pushed along θ by a fraction of σ√q; a given semantic state) and the free solve
from the uninformative point pushed along θ only. Prints θ, m, e_t ± error, the growth factor, per-scramble θ.

    PYTHONPATH=src python bench/investigations/l3_omega04_gap.py --alphas 0.4 0.55 --points 256 --scrambles 4
"""

from __future__ import annotations

import argparse
import math
import time

import numpy as np

from attnphase.model import ModelParams
from attnphase.phase.continuation import CURVE_RTOL, phase_qmc
from attnphase.phase.kinds import free_point_kind, scramble_overlaps
from attnphase.theory.solve import point_solver
from attnphase.theory.solution import state_of
from attnphase.theory.state import OrderParams

A3 = [[0.6, 0.2, 0.2], [0.2, 0.6, 0.2], [0.2, 0.2, 0.6]]


def show(tag, s, sigma):
    if not s.converged:
        print(f"  {tag}: {s.status.value} ({s.note[:300]})")
        if not np.isfinite(float(s.q)):
            return
    per = scramble_overlaps(s)
    th = "" if per is None else " θ_s = " + np.array2string(per.z["theta"], precision=4)
    mm = "" if per is None else " m_s = " + np.array2string(per.z["m"], precision=4)
    st = "" if s.stability is None else f" growth {s.stability:.3f} ± {s.stability_err:.3f}"
    print(f"  {tag}: q = {s.q:.5f} m = {abs(s.m):.4f} θ = {abs(s.theta):.4f} ± {s.error('theta'):.2g} "
          f"e_t = {s.e_t:.7f} ± {s.error('e_t'):.2g} eps_g = {s.eps_g:.6f}{st}{th}{mm}", flush=True)


def kicked_theta(x: OrderParams, dt: float) -> OrderParams:
    q, M, T, V = (np.array(b, float) for b in x)
    T[0, 0] += dt
    return OrderParams(q, M, T, V)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--omega", type=float, default=0.4)
    ap.add_argument("--alphas", type=float, nargs="+", default=[0.4, 0.55])
    ap.add_argument("--points", type=int, default=256)
    ap.add_argument("--scrambles", type=int, default=4)
    ap.add_argument("--kicks", type=float, nargs="+", default=[0.1, 0.5, 1.0])
    ap.add_argument("--from-alpha", type=float, default=None, help="also start from the semantic point here")
    ap.add_argument("--free", action="store_true")
    a = ap.parse_args()
    p = ModelParams(L=3, r=1, sigma=0.5, lam=0.01, omega=a.omega, A=A3)
    solve = point_solver(p, "auto", qmc_config=phase_qmc(a.points, a.scrambles))
    t0 = time.process_time()
    sem_hi = None
    if a.from_alpha is not None:
        sem_hi = solve(p, a.from_alpha, "semantic", max_steps=300, stability=True, rtol=CURVE_RTOL)
        print(f"α = {a.from_alpha} semantic (model start):")
        show("semantic", sem_hi, p.sigma)
    for al in a.alphas:
        print(f"α = {al}:")
        uni = solve(p, al, "uninformative", max_steps=300, stability=True, rtol=CURVE_RTOL)
        show("uninformative", uni, p.sigma)
        x = state_of(uni)
        scale = p.sigma * math.sqrt(max(float(uni.q), 1e-12))
        for k in a.kicks:
            s = solve(p, al, "semantic", init=kicked_theta(x, k * scale), max_steps=300, stability=True,
                      rtol=CURVE_RTOL)
            show(f"semantic from uninf + {k} σ√q θ", s, p.sigma)
        if sem_hi is not None and sem_hi.converged:
            s = solve(p, al, "semantic", init=state_of(sem_hi), max_steps=300, stability=True, rtol=CURVE_RTOL)
            show(f"semantic from α = {a.from_alpha}", s, p.sigma)
        if a.free:
            f = solve(p, al, "free", init=kicked_theta(x, 0.1 * scale), max_steps=300, stability=False,
                      rtol=CURVE_RTOL)
            show("free from uninf + 0.1 σ√q θ", f, p.sigma)
            if f.converged:
                k = free_point_kind(f, p.sigma)
                print(f"    kind {k.by_size} → {k.kind} {k.note}")
        print(f"  CPU so far {time.process_time() - t0:.0f} s", flush=True)


if __name__ == "__main__":
    main()
