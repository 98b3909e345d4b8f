"""Table of the small-ω 1RSB check (issue 32 follow-up; docs/theory/beyond-rs.md "Small ω"): per ω, the RS and 1RSB
e_t and overlaps of both sectors from docs/data/beyond_rs/small_omega/rsb1_{sector}_omega{ω}.json, the 1RSB shift
(e^1RSB − e^RS on the same grid), and α_c^1RSB to first order in the shifts:

    α_c^1RSB = α_c^RS − [δ_sem(α_c) − δ_pos(α_c)] / s,   s = d(e_sem^RS − e_pos^RS)/dα at α_c^RS (split rule),

δ linearly interpolated in α between the computed points (the shifts are 1e-6–1e-5, the RS gap's slope ~5e-4).
Writes docs/data/beyond_rs/small_omega/summary.json and prints markdown rows.
Run: PYTHONPATH=src python bench/investigations/rsb1_small_omega_table.py
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from attnphase.model import ModelParams
from attnphase.theory.solve import solve

DATA = Path("docs/data/beyond_rs/small_omega")
ALPHA_C_RS = {0.1: 0.7507868938507647, 0.2: 0.9480, 0.3: 1.2515}
"""RS α_c at σ = 0.5, λ = 0.01 (docs/data/empirical_diagram_d1000/alpha_c_vs_d.csv, alpha_c_theory)."""
EMPIRICAL = {0.1: (0.691, 0.009), 0.2: (0.912, 0.010), 0.3: (1.235, 0.012)}
"""α_c(∞) extrapolated in 1/d (docs/phase_diagram.md, alpha_c_vs_d.csv)."""


def shifts(omega, sector):
    f = DATA / f"rsb1_{sector}_omega{omega}.json"
    if not f.exists():
        return {}
    out = {}
    for r in json.loads(f.read_text())["rows"]:
        b = r["best"]
        out[r["alpha"]] = dict(e_rs=r["rs"]["e_t"], e_rs_grid=r["e_rs_grid"], m_rs=r["rs"]["m"], theta_rs=r["rs"]["theta"],
                               e_1rsb=None if b is None else b["e_t"], m_1rsb=None if b is None else b["m"],
                               theta_1rsb=None if b is None else b["theta"], dq=None if b is None else b["dq"],
                               x=None if b is None else b["x"],
                               shift=0.0 if b is None else b["e_t"] - r["e_rs_grid"], status=None if b is None else b["status"])
    return out


def interp(d, a):
    al = sorted(d)
    return float(np.interp(a, al, [d[x]["shift"] for x in al]))


def main():
    summary = {}
    for om, ac in ALPHA_C_RS.items():
        pos, sem = shifts(om, "positional"), shifts(om, "semantic")
        if not pos or not sem:
            continue
        p = ModelParams(sigma=0.5, lam=0.01, omega=om)
        h = 0.02
        gap = [solve(p, a, "semantic", integrator="split", stability=False)[0].values["e_t"]
               - solve(p, a, "positional", integrator="split", stability=False)[0].values["e_t"] for a in (ac - h, ac + h)]
        s = (gap[1] - gap[0]) / (2 * h)
        d_sem, d_pos = interp(sem, ac), interp(pos, ac)
        a1 = ac - (d_sem - d_pos) / s
        summary[om] = dict(alpha_c_rs=ac, slope_rs=s, shift_sem=d_sem, shift_pos=d_pos, alpha_c_1rsb=a1,
                           empirical=EMPIRICAL[om], positional=pos, semantic=sem)
        print(f"| {om} | {ac:.4f} | {a1:.4f} | {EMPIRICAL[om][0]:.3f} ± {EMPIRICAL[om][1]:.3f} | "
              f"shift sem {d_sem:+.2e}, pos {d_pos:+.2e}, RS slope {s:.3e} |")
        for a, r in sorted(pos.items()):
            print(f"   pos α={a}: m RS {r['m_rs']:.4f} 1RSB {r['m_1rsb']}, e RS {r['e_rs']:.7f} grid {r['e_rs_grid']:.7f} "
                  f"1RSB {r['e_1rsb']} Δq {r['dq']} x {r['x']}")
        for a, r in sorted(sem.items()):
            print(f"   sem α={a}: θ RS {r['theta_rs']:.4f} 1RSB {r['theta_1rsb']}, e RS {r['e_rs']:.7f} grid "
                  f"{r['e_rs_grid']:.7f} 1RSB {r['e_1rsb']} Δq {r['dq']} x {r['x']} {r['status']}")
    (DATA / "summary.json").write_text(json.dumps(summary, indent=1, default=float))


if __name__ == "__main__":
    main()
