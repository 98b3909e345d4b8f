"""1RSB at zero temperature in the uninformative sector (L = 2): e*(x) scanned and maximised over the Parisi
parameter x at the points of issue 32, against the RS e_t of `theory.solve` (split rule).

Reads the RS reference docs/data/beyond_rs/rsb1_rs_reference.json (theory.solve, split rule); writes
docs/data/beyond_rs/rsb1_points{tag}.json (every scanned saddle) and rsb1_points{tag}.csv (one row per point),
after every point.
Run: PYTHONPATH=src python bench/investigations/rsb1_points.py [n_grid] [y_order] [tag] [lam (only those points)]
"""

from __future__ import annotations

import json
import platform
import sys
import time
from pathlib import Path

import numpy as np

from attnphase.model import ModelParams
from attnphase.theory import rsb1
from attnphase.theory.rsb1_saddle import Rsb1Status, TableLattice, maximise_x

POINTS = [  # (sigma, lam, alpha)
    (0.7, 0.01, 0.5), (0.7, 0.01, 0.3), (0.7, 0.01, 0.8), (0.5, 0.001, 0.35), (0.5, 0.001, 0.55)]
U_SCAN = (0.35, 0.5, 0.7, 0.95, 1.3, 1.8)
"""x in units of α/e_RS (x* ≈ 0.8 α/e_RS at σ = 0.7, α = 0.5 in a first coarse run)."""


def main(n_grid: int = 109, y_order: int = 8, tag: str = "", lam_only: float | None = None) -> None:
    out = Path("docs/data/beyond_rs")
    rows, scans = [], {}
    lattices = {}
    ref = json.loads((out / "rsb1_rs_reference.json").read_text())   # theory.solve (split rule), see its "source"
    for sigma, lam, alpha in POINTS:
        if lam_only is not None and lam != lam_only:
            continue
        t0 = time.process_time()
        params = ModelParams(sigma=sigma, lam=lam, omega=0.3)
        rs = next(r for r in ref["points"] if (r["sigma"], r["lam"], r["alpha"]) == (sigma, lam, alpha))
        q, V, e_rs = rs["q"], rs["V"], rs["e_t"]
        key = (sigma, lam)
        if key not in lattices:
            lattices[key] = TableLattice(params, rsb1.OmegaGrid(2.7, n_grid), y_order, V_ref=V)
        lat = lattices[key]
        e_rs_grid = rsb1.functional(lat.at(V), alpha, q, 0.0, 0.0).e
        xs = [u * alpha / e_rs for u in U_SCAN]
        best, scan = maximise_x(lat, alpha, xs, (0.002, q, 0.7 * V))
        name = f"sigma{sigma}_lam{lam}_alpha{alpha}"
        scans[name] = [p.to_dict() for p in scan]
        at_end = best is not None and best.x in (scan[0].x, scan[-1].x)
        row = dict(sigma=sigma, lam=lam, omega=0.3, alpha=alpha, rs_status=rs["status"], q_rs=q, V_rs=V, e_t_rs=e_rs,
                   e_t_rs_grid=e_rs_grid, n_grid=n_grid, y_order=y_order, cpu_s=time.process_time() - t0)
        if best is None:
            row.update(status="no converged 1RSB saddle in the scan")
        else:
            row.update(status=best.status.value + (" (maximum at the end of the x scan)" if at_end else ""),
                       x_star=best.x, q0=best.q0, dq=best.dq, q1=best.q1, V=best.V, e_t_1rsb=best.e,
                       d_e_dx=best.grad[3], shift_vs_rs_grid=best.e - e_rs_grid)
        rows.append(row)
        print(json.dumps(row), flush=True)
        for p in scan:
            print("   ", p.x, p.status.value, f"q0={p.q0:.5f} dq={p.dq:.5f} V={p.V:.3f} e={p.e:.7f} gx={p.grad[3]:.2e}",
                  flush=True)
        _write(out, tag, n_grid, y_order, rows, scans)


def _write(out, tag, n_grid, y_order, rows, scans):
    meta = dict(machine=platform.node(), n_grid=n_grid, y_order=y_order, R=2.7, note=__doc__.splitlines()[0])
    (out / f"rsb1_points{tag}.json").write_text(json.dumps(dict(meta=meta, rows=rows, scans=scans), indent=1))
    import pandas as pd
    pd.DataFrame(rows).to_csv(out / f"rsb1_points{tag}.csv", index=False)


if __name__ == "__main__":
    a = sys.argv[1:]
    main(int(a[0]) if a else 109, int(a[1]) if len(a) > 1 else 8, a[2] if len(a) > 2 else "",
         float(a[3]) if len(a) > 3 else None)
