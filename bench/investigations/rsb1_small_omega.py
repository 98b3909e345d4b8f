"""1RSB in the positional sector at the paper's σ = 0.5, λ = 0.01 and small ω (issue 32 follow-up; docs/theory/beyond-rs.md,
"Small ω"): does a Δq > 0 saddle exist near the RS positional fixed point, and its e_t, m against RS and finite d.
Starts: the RS positional fixed point (split rule) with q0 = q − Δq_start, Δq = Δq_start, V = 0.85 V_RS; x scanned in
units of α/e_RS. Writes docs/data/beyond_rs/small_omega/rsb1_{sector}_omega{ω}[_R{R}_n{n}_y{order}].json (one record per α, every saddle).
N_STARTS (environment) keeps the first N starts only.
Run: OMP_NUM_THREADS=1 PYTHONPATH=src python bench/investigations/rsb1_small_omega.py OMEGA ALPHAS [SECTOR] [R n y_order]
"""

from __future__ import annotations

import json
import os
import platform
import sys
import time
from pathlib import Path

import numpy as np

from attnphase.model import ModelParams
from attnphase.theory import rsb1
from attnphase.theory.rsb1_saddle import Rsb1Status, TableLattice, maximise_x, sector_value
from attnphase.theory.solve import solve

U_SCAN = (0.3, 0.5, 0.7, 0.95, 1.3, 1.8, 2.5)
STARTS = ((0.02, 1.0), (0.005, 1.0), (0.04, 1.0), (0.02, 1.15))
"""(Δq of the start, its overlap m or θ in units of the RS one): near RS, a wide Δq (q0 at its floor σ²m²), a larger m
(the finite-d positional family at ω = 0.1 has m 15 % above RS)."""


def rs_point(params, alpha, sector):
    s = solve(params, alpha, sector, integrator="split", stability=False)[0]
    return {k: float(s.values[k]) for k in ("q", "m", "V", "theta", "e_t")} | dict(status=s.status.value)


def main(omega: float, alphas, sector: str = "positional", R: float = 2.0, n: int = 97, y_order: int = 10):
    params = ModelParams(sigma=0.5, lam=0.01, omega=omega)
    s2 = params.sigma ** 2
    out = Path("docs/data/beyond_rs/small_omega")
    out.mkdir(parents=True, exist_ok=True)
    lat, recs = None, []
    for alpha in alphas:
        t0 = time.process_time()
        rs = rs_point(params, alpha, sector)
        if lat is None:
            lat = TableLattice(params, rsb1.OmegaGrid(R, n), y_order, V_ref=rs["V"])
        ov = rs["m"] if sector == "positional" else rs["theta"]
        p0 = rs["q"] - (rs["theta"] ** 2 / s2)
        e_grid, g = sector_value(lat, alpha, sector, (p0, 1e-12, rs["V"], ov), 1.0)
        xs = [u * alpha / rs["e_t"] for u in U_SCAN]
        best, scans = None, []
        for dq0, f in STARTS[:int(os.environ.get("N_STARTS", len(STARTS)))]:
            o = f * ov
            start = (max(p0 - dq0, 1.05 * s2 * o * o if sector == "positional" else 1e-4), dq0, 0.85 * rs["V"], o)
            b, scan = maximise_x(lat, alpha, xs, start, sector)
            scans.append([p.to_dict() for p in scan])
            print(alpha, "start", dq0, f, [(round(p.x), p.status.value[:9], round(p.m if sector == "positional" else p.theta, 4),
                                           round(p.dq, 5), round(p.V, 2), f"{p.e:.7f}") for p in scan], flush=True)
            if b is not None and (best is None or b.e > best.e):
                best = b
        rec = dict(omega=omega, alpha=alpha, sector=sector, rs=rs, e_rs_grid=float(e_grid), rs_grad_grid=list(map(float, g)),
                   best=None if best is None else best.to_dict(), scans=scans, grid=dict(R=R, n=n, y_order=y_order),
                   cpu_s=time.process_time() - t0)
        recs.append(rec)
        print(json.dumps({k: v for k, v in rec.items() if k != "scans"}), flush=True)
        tag = "" if (R, n, y_order) == (2.0, 97, 10) else f"_R{R}_n{n}_y{y_order}"
        meta = dict(machine=platform.node(), sigma=0.5, lam=0.01, omega=omega, note=__doc__.splitlines()[0])
        (out / f"rsb1_{sector}_omega{omega}{tag}.json").write_text(json.dumps(dict(meta=meta, rows=recs), indent=1, default=float))


if __name__ == "__main__":
    np.seterr(all="ignore")
    a = sys.argv[1:]
    main(float(a[0]), [float(v) for v in a[1].split(",")], a[2] if len(a) > 2 else "positional",
         *(float(a[3]), int(a[4]), int(a[5])) if len(a) > 5 else ())
