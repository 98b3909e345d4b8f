"""The positional sector at imposed m (σ = 0.5, λ = 0.01, small ω; issue 32 follow-up, docs/theory/beyond-rs.md "Small ω"):
e_t^RS(m) (Δq = 0, stationary in q, V at fixed m) and e_t^1RSB(m) (saddle in q0, Δq, V at fixed m, maximum over x)
on the 1RSB tables, at the RS positional m and at the finite-d family's m, plus the complexity along x of the free-m
1RSB saddle (Σ(x) = x² ∂e*/∂x, e_s = e* + x ∂e*/∂x, m(x)). Writes docs/data/beyond_rs/small_omega/fixed_m_omega{ω}_alpha{α}.json.
Run: OMP_NUM_THREADS=1 PYTHONPATH=src python bench/investigations/rsb1_fixed_m.py OMEGA ALPHA M1,M2,... [X1,X2,...]
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import numpy as np
from scipy.optimize import root

from attnphase.model import ModelParams
from attnphase.theory import rsb1
from attnphase.theory.rsb1_saddle import TableLattice, saddle, sector_value
from attnphase.theory.solve import solve


def rs_at_m(lat, alpha, m, q, V):
    """Δq = 0: stationary in (q, V) at fixed m (x irrelevant)."""
    def F(w):
        e, g = sector_value(lat, alpha, "positional", (np.exp(w[0]), 0.0, np.exp(w[1]), m), 1.0)
        return 1e3 * np.array([g[0] * np.exp(w[0]), g[2] * np.exp(w[1])])
    s = root(F, np.log([q, V]), method="hybr", tol=1e-12)
    q, V = np.exp(s.x)
    e, g = sector_value(lat, alpha, "positional", (q, 0.0, V, m), 1.0)
    return dict(m=m, q=float(q), V=float(V), e=float(e), force=float(-g[3]), ok=bool(s.success))


def rsb1_at_m(lat, alpha, m, start, xs):
    """Saddle in (q0, Δq, V) at fixed m along xs; the maximum over x of e*."""
    out, cur = [], tuple(start)
    for x in xs:
        def F(w):
            try:
                e, g = sector_value(lat, alpha, "positional", (*np.exp(w), m), x)
            except Exception:
                return np.full(3, 1e3)
            return 1e3 * g[:3] * np.exp(w)
        s = root(F, np.log(cur), method="hybr", tol=1e-12)
        u = np.exp(s.x)
        e, g = sector_value(lat, alpha, "positional", (*u, m), x)
        ok = bool(np.max(np.abs(g[:3])) < 1e-8 and np.sqrt(u[1]) > lat.grid.h)
        out.append(dict(x=float(x), q0=float(u[0]), dq=float(u[1]), V=float(u[2]), e=float(e), d_e_dx=float(g[4]),
                        force=float(-g[3]), ok=ok))
        if ok:
            cur = tuple(u)
    good = [r for r in out if r["ok"]]
    return (max(good, key=lambda r: r["e"]) if good else None), out


def main(omega, alpha, ms, us=(0.05, 0.1, 0.2, 0.3, 0.5, 0.7, 0.95, 1.3)):
    params = ModelParams(sigma=0.5, lam=0.01, omega=omega)
    t0 = time.process_time()
    s = solve(params, alpha, "positional", integrator="split", stability=False)[0]
    q, V, e_rs, m_rs = (float(s.values[k]) for k in ("q", "V", "e_t", "m"))
    lat = TableLattice(params, rsb1.OmegaGrid(2.0, 97), 10, V_ref=V)
    xs = [u * alpha / e_rs for u in us]
    rows = []
    for m in ms:
        rs = rs_at_m(lat, alpha, m, q, V)
        best, scan = rsb1_at_m(lat, alpha, m, (max(rs["q"] - 0.01, 1.05 * 0.25 * m * m), 0.01, 0.9 * rs["V"]), xs[::-1])
        rows.append(dict(m=m, rs=rs, rsb1=best, scan=scan))
        print(json.dumps(dict(m=m, rs=rs, rsb1=best)), flush=True)
    # complexity along x of the free-m saddle, continued downwards in x from the RS point
    cx, cur = [], (q - 0.006, 0.006, 0.87 * V, m_rs)
    for x in xs[::-1]:
        p = saddle(lat, alpha, x, cur, sector="positional")
        d = p.to_dict()
        d.update(Sigma=p.x ** 2 * p.grad[3], e_s=p.e + p.x * p.grad[3])
        cx.append(d)
        print("x", round(x), p.status.value, round(p.m, 4), round(p.dq, 5), f"{p.e:.7f}", f"Sigma {d['Sigma']:.2e} e_s {d['e_s']:.7f}", flush=True)
        if p.status.value == "converged":
            cur = p.unknowns
    out = Path("docs/data/beyond_rs/small_omega")
    out.mkdir(parents=True, exist_ok=True)
    (out / f"fixed_m_omega{omega}_alpha{alpha}.json").write_text(json.dumps(dict(
        meta=dict(sigma=0.5, lam=0.01, omega=omega, alpha=alpha, grid=dict(R=2.0, n=97, y_order=10), e_rs_split=e_rs,
                  m_rs_split=m_rs, cpu_s=time.process_time() - t0, note=__doc__.splitlines()[0]),
        rows=rows, complexity=cx), indent=1, default=float))


if __name__ == "__main__":
    np.seterr(all="ignore")
    a = sys.argv[1:]
    main(float(a[0]), float(a[1]), [float(v) for v in a[2].split(",")],
         *([tuple(float(v) for v in a[3].split(","))] if len(a) > 3 else []))
