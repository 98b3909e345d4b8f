"""Tables of docs/theory/beyond-rs.md (issue 32) from the data in docs/data/beyond_rs/: the finite-d families at
d = 1000 (bench_beyond_rs_crossing_d1000.py), their crossing in α (semantic − positional e_t, paired by instance,
linear interpolation), the RS fixed points (split rule, ``attnphase.theory.solve``), and the RS landscape at the
families' own overlaps: e_t^RS(θ = θ_sem, M = 0) and e_t^RS(M = m_pos, θ = 0) (``solve_landscape``, Fixed.BOTH,
QMC 512 × 2) and the α where these cross (the landscape's prediction given the families' overlaps).
Writes docs/data/beyond_rs/families.csv, rs_points.csv, crossings.csv.

    PYTHONPATH=src python bench/investigations/bench_beyond_rs_tables.py [--no-landscape]
"""

from __future__ import annotations

import argparse
import math
import time
from pathlib import Path

import numpy as np
import pandas as pd

from attnphase import theory
from attnphase.model import ModelParams
from attnphase.theory.landscape import solve_landscape
from attnphase.theory.qmc_config import QMCConfig

SETTINGS = {"s0.7": (0.7, 0.01), "s1.0": (1.0, 0.01), "l0.001": (0.5, 0.001)}
TABLE = {"s0.7": [0.3, 0.5, 0.8], "s1.0": [0.4, 0.7], "l0.001": [0.35, 0.55]}
DATA = Path("docs/data/beyond_rs")


def families() -> pd.DataFrame:
    rows = []
    for f in sorted((DATA / "finite_d").glob("*_a*_*.csv")):
        name, a, init = f.stem.rsplit("_", 2)[0], float(f.stem.rsplit("_", 2)[1][1:]), f.stem.rsplit("_", 2)[2]
        d = pd.read_csv(f, comment="#")
        n = len(d)
        row = {"setting": name, "alpha": a, "init": init, "instances": n, "converged": int(d["converged"].sum())}
        for c in ("m", "theta_over_sigma2", "e_t", "eps_g"):
            v = d[c].abs() if c in ("m", "theta_over_sigma2") else d[c]
            row[c], row[f"{c}_se"] = v.mean(), v.std(ddof=1) / math.sqrt(n)
        rows.append(row)
    return pd.DataFrame(rows).sort_values(["setting", "alpha", "init"])


def paired_gap(name: str, alpha: float) -> tuple[float, float]:
    """Mean and s.e. of e_t(semantic start) − e_t(positional start) over instances (same teacher and data)."""
    s = pd.read_csv(DATA / "finite_d" / f"{name}_a{alpha}_semantic.csv", comment="#").set_index("instance")
    p = pd.read_csv(DATA / "finite_d" / f"{name}_a{alpha}_positional.csv", comment="#").set_index("instance")
    g = (s["e_t"] - p["e_t"]).dropna()
    return float(g.mean()), float(g.std(ddof=1) / math.sqrt(len(g)))


def zero_crossing(alphas, gaps) -> float:
    """First α where the gap changes sign (linear interpolation); NaN if it does not in the grid."""
    for (a0, g0), (a1, g1) in zip(zip(alphas, gaps), zip(alphas[1:], gaps[1:])):
        if np.sign(g0) != np.sign(g1):
            return a0 + (a1 - a0) * g0 / (g0 - g1)
    return math.nan


def rs_points() -> pd.DataFrame:
    rows = []
    for name, alphas in TABLE.items():
        sigma, lam = SETTINGS[name]
        p = ModelParams(omega=0.3, sigma=sigma, lam=lam)
        for a in alphas:
            for b in ("semantic", "positional", "uninformative"):
                s = theory.solve(p, [a], b, stability=False)[0]
                rows.append({"setting": name, "alpha": a, "branch": b, "converged": s.converged, "q": s.q,
                             "m": abs(s.m), "theta_over_sigma2": s.theta / sigma ** 2, "e_t": s.e_t,
                             "eps_g": s.eps_g})
    return pd.DataFrame(rows)


def landscape_at_families(fam: pd.DataFrame) -> pd.DataFrame:
    """Per setting, one batched constrained solve (Fixed.BOTH; α per entry; QMC 512 × 2, at most 200 steps):
    (θ = θ_sem, M = 0) and (M = m_pos, θ = 0) at every α of the finite-d grid."""
    rows = []
    cfg = QMCConfig(points=512, scrambles=2, coarse=0, target=0.0)
    for name, g in fam.groupby("setting"):
        sigma, lam = SETTINGS[name]
        p = ModelParams(omega=0.3, sigma=sigma, lam=lam)
        al = sorted(g.groupby("alpha").filter(lambda h: len(h) == 2)["alpha"].unique())
        th = [float(g[(g.alpha == a) & (g.init == "semantic")]["theta_over_sigma2"].iloc[0]) for a in al]
        m = [float(g[(g.alpha == a) & (g.init == "positional")]["m"].iloc[0]) for a in al]
        t0 = time.process_time()
        pts = solve_landscape(p, al + al, "both", ms=[0.0] * len(al) + m,
                              thetas=[t * sigma ** 2 for t in th] + [0.0] * len(al), qmc_config=cfg, max_steps=200)
        cpu = round(time.process_time() - t0, 1)
        for i, a in enumerate(al):
            sem, pos = pts[i], pts[len(al) + i]
            rows.append({"setting": name, "alpha": a, "theta_sem": th[i], "m_pos": m[i],
                         "e_t_rs_at_sem": sem.values["e_t"], "e_t_rs_at_sem_err": sem.errors["e_t"],
                         "e_t_rs_at_pos": pos.values["e_t"], "e_t_rs_at_pos_err": pos.errors["e_t"],
                         "status": f"{sem.status.value}/{pos.status.value}", "cpu_s_setting": cpu})
    return pd.DataFrame(rows)


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--no-landscape", action="store_true")
    ap.add_argument("--no-rs", action="store_true")
    a = ap.parse_args()
    fam = families()
    fam.to_csv(DATA / "families.csv", index=False)
    print(fam.to_string())
    if not a.no_rs:
        rs = rs_points()
        rs.to_csv(DATA / "rs_points.csv", index=False)
        print(rs.to_string())
    cross = []
    land = landscape_at_families(fam) if not a.no_landscape else None
    if land is None and (DATA / "landscape_at_families.csv").exists():
        land = pd.read_csv(DATA / "landscape_at_families.csv")
    elif land is not None:
        land.to_csv(DATA / "landscape_at_families.csv", index=False)
        print(land.to_string())
    for name in SETTINGS:
        al = sorted(fam[(fam.setting == name)].groupby("alpha").filter(lambda g: len(g) == 2)["alpha"].unique())
        if len(al) < 2:
            continue
        gaps = [paired_gap(name, x) for x in al]
        row = {"setting": name, "alphas": " ".join(map(str, al)),
               "gap_fd": " ".join(f"{g:.3g}±{e:.1g}" for g, e in gaps),
               "alpha_cross_fd": zero_crossing(al, [g for g, _ in gaps])}
        if land is not None:
            ln = land[land.setting == name].sort_values("alpha")
            row["alpha_cross_landscape"] = zero_crossing(list(ln.alpha), list(ln.e_t_rs_at_sem - ln.e_t_rs_at_pos))
        cross.append(row)
    pd.DataFrame(cross).to_csv(DATA / "crossings.csv", index=False)
    print(pd.DataFrame(cross).to_string())
