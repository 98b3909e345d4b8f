"""The tables of docs/theory/beyond-rs.md as Markdown, from docs/data/beyond_rs/ (families.csv, rs_points.csv,
crossings.csv, landscape/*.json, landscape_at_families.csv where present). Finite-d rows at α not on the 16-instance
grid come from the 8-instance table at d = 1000 of docs/notes/2026-12-03-phase-boundaries.md (marked "8").

    PYTHONPATH=src python bench/investigations/bench_beyond_rs_markdown.py > /tmp/tables.md
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import pandas as pd

DATA = Path("docs/data/beyond_rs")
TABLE = {"s0.7": [0.3, 0.5, 0.8], "s1.0": [0.4, 0.7], "l0.001": [0.35, 0.55]}
LABEL = {"s0.7": "σ = 0.7", "s1.0": "σ = 1.0", "l0.001": "λ = 0.001"}
# d = 1000, 8 instances, seed 0 (docs/notes/2026-12-03-phase-boundaries.md): (θ/σ², e_t, s.e.) and (m, e_t, s.e.)
NOTE8 = {("s0.7", 0.5): ((0.395, 0.001913, 0.000031), (0.205, 0.002186, 0.000037)),
         ("s0.7", 0.8): ((0.542, 0.002782, 0.000050), (0.205, 0.003909, 0.000056)),
         ("s1.0", 0.7): ((0.600, 0.003120, 0.000051), (0.173, 0.006287, 0.000118))}


def fam(f, name, a):
    g = f[(f.setting == name) & (f.alpha == a)]
    if len(g) == 2:
        s, p = g[g.init == "semantic"].iloc[0], g[g.init == "positional"].iloc[0]
        return ((s.theta_over_sigma2, s.e_t, s.e_t_se), (p.m, p.e_t, p.e_t_se)), "16"
    return NOTE8.get((name, a)), "8"


def minima(name, a):
    path = DATA / "landscape" / f"{name}_a{a}.json"
    if not path.exists():
        return "not computed"
    rec = json.loads(path.read_text())
    out = []
    for key, lab in (("theta", "θ/σ²"), ("m", "m")):
        mins = [s for s in rec[key]["stationary"] if s["kind"] == "min"]
        nc = rec[key]["not_converged"]
        txt = "; ".join(f"{lab} = {s['at']:.2f}, e_t {s['e_t']:.6f}" for s in mins) or "none"
        out.append(f"along {lab}: {txt}" + (f" ({nc} of 8 unconverged)" if nc else ""))
    return "<br>".join(out)


def main():
    f = pd.read_csv(DATA / "families.csv")
    rs = pd.read_csv(DATA / "rs_points.csv")
    land = pd.read_csv(DATA / "landscape_at_families.csv") if (DATA / "landscape_at_families.csv").exists() else None
    print("| setting | α | finite d, semantic start: θ/σ², e_t | positional start: m, e_t | RS global min: kind, e_t "
          "| RS landscape minima | n |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    for name, alphas in TABLE.items():
        for a in alphas:
            fm, n = fam(f, name, a)
            g = rs[(rs.setting == name) & (rs.alpha == a) & rs.converged]
            best = g.loc[g.e_t.idxmin()]
            kind = "uninformative" if best.m < 1e-6 and best.theta_over_sigma2 < 1e-6 else best.branch
            sem = f"{fm[0][0]:.3f}, {fm[0][1]:.6f} ± {fm[0][2]:.6f}" if fm else "—"
            pos = f"{fm[1][0]:.3f}, {fm[1][1]:.6f} ± {fm[1][2]:.6f}" if fm else "—"
            print(f"| {LABEL[name]} | {a} | {sem} | {pos} | {kind}, {best.e_t:.6f} | {minima(name, a)} | {n} |")
    print()
    if land is not None:
        print("| setting | α | θ/σ² (semantic family) | e_t^RS(θ, M = 0) | finite d | m (positional family) "
              "| e_t^RS(m, θ = 0) | finite d |")
        print("| --- | --- | --- | --- | --- | --- | --- | --- |")
        for _, r in land.sort_values(["setting", "alpha"]).iterrows():
            g = f[(f.setting == r.setting) & (f.alpha == r.alpha)]
            es, ep = (g[g.init == i].e_t.iloc[0] for i in ("semantic", "positional"))
            print(f"| {LABEL[r.setting]} | {r.alpha} | {r.theta_sem:.3f} | {r.e_t_rs_at_sem:.6f} ± "
                  f"{r.e_t_rs_at_sem_err:.1g} | {es:.6f} | {r.m_pos:.3f} | {r.e_t_rs_at_pos:.6f} ± "
                  f"{r.e_t_rs_at_pos_err:.1g} | {ep:.6f} |")
        print()
    c = pd.read_csv(DATA / "crossings.csv")
    print("| setting | α grid | e_t(sem) − e_t(pos) at d = 1000 (paired, ± s.e.) | finite-d crossing | "
          "landscape at the families' overlaps |")
    print("| --- | --- | --- | --- | --- |")
    for _, r in c.iterrows():
        land_c = r.get("alpha_cross_landscape", math.nan)
        print(f"| {LABEL[r.setting]} | {r.alphas} | {r.gap_fd} | "
              f"{'%.3f' % r.alpha_cross_fd if r.alpha_cross_fd == r.alpha_cross_fd else 'outside the grid'} | "
              f"{'%.3f' % land_c if land_c == land_c else 'none in the grid (positional lower at every α)'} |")


if __name__ == "__main__":
    main()
