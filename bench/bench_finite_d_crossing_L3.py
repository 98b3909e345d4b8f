"""Issue 29's finite-d check of the L = 3 transition at ω = 0.3 (issue 31, item 3; docs/guides/finite_d_theory.md).

Model: L = 3, A = [[0.6,0.2,0.2],[0.2,0.6,0.2],[0.2,0.2,0.6]], P = I₃, r = r* = 1, σ = 0.5, λ = 0.01, ω = 0.3.

``--part theory``: the fixed points on a coarse α grid with the QMC engine (``engine.solve_batch``, fixed size
``--qmc-points × --scrambles``, no error control) on the semantic, positional and uninformative branches, each
converged point with its O(1/d) coefficients (``theory.finite_size.record`` at ``--d``); the crossing of the
semantic e_t with the lowest θ = 0 point's e_t (the positional branch where it exists, else the uninformative
point it collapses onto), located by linear interpolation of Δe_t between the grid points that bracket it, with
its error from the QMC errors of the two bracketing Δe_t (propagated through the interpolation). Written to
``docs/data/finite_d_L3/theory.csv``.

``--part simulate``: ``attnphase.simulate`` (L-BFGS, exact ε_g) at ``--d`` on ``--alphas``, both initialisations
(semantic, positional), ``--instances`` instances with the SAME seed for both inits (the same data and teacher:
Δe_t is paired per instance). One row per (α, init, instance) appended to ``docs/data/finite_d_L3/simulate.csv``
after each (α, init), so an interrupted run keeps what it finished.

``--part report``: per α the paired Δe_t = e_t(semantic init) − e_t(positional init) (mean ± s.e. over
instances), the same corrected to d → ∞ by each instance's own fixed point's O(1/d) term, the theory's Δe_t at
d → ∞ and at d, and the figure ``docs/figures/finite_d_crossing_L3.png``; prints the markdown table.
"""

from __future__ import annotations

import argparse
import csv
import math
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "docs" / "data" / "finite_d_L3"
A3 = [[0.6, 0.2, 0.2], [0.2, 0.6, 0.2], [0.2, 0.2, 0.6]]
SIM_COLS = ("alpha", "init", "instance", "d", "seed", "e_t", "eps_g", "m", "theta", "q", "converged", "wall_s")


def params():
    from attnphase.model import ModelParams
    return ModelParams(L=3, A=A3, omega=0.3)


def part_simulate(alphas, d, instances, seed):
    from attnphase.simulate import TrainConfig, simulate
    out = DATA / "simulate.csv"
    new = not out.exists()
    with out.open("a", newline="") as fh:
        w = csv.writer(fh)
        if new:
            w.writerow(SIM_COLS)
        for a in alphas:
            for init in ("semantic", "positional"):
                t = time.time()
                r = simulate(params(), alpha=a, d=d, config=TrainConfig(init=init, optimizer="lbfgs"),
                             instances=instances, seed=seed)
                wall = time.time() - t
                for i in range(instances):
                    w.writerow([a, init, i, d, seed] + [float(np.asarray(getattr(r, k))[i]) for k in
                                                        ("e_t", "eps_g", "m", "theta", "q")]
                               + [bool(np.asarray(r.converged)[i]), round(wall / instances, 3)])
                fh.flush()
                print(f"α={a:g} {init}: {instances} instances in {wall:.0f} s, e_t {np.mean(r.e_t):.6g}",
                      flush=True)


def part_theory(alphas, d, points, scrambles, branches):
    from attnphase.theory.engine import QMCConfig, solve_batch
    from attnphase.theory.finite_size import solution_record
    cfg = QMCConfig(points=points, scrambles=scrambles)
    out = DATA / "theory.csv"
    new = not out.exists()
    with out.open("a", newline="") as fh:
        w = None
        for b in branches:
            t = time.time()
            sols = solve_batch(params(), alphas, b, qmc_config=cfg)
            for s in sols:
                ok = s.converged
                rec = solution_record(s, d) if ok else {}
                row = dict(alpha=s.alpha, branch=b, status=s.status.value, points=points, scrambles=scrambles,
                           **{k: float(s.values[k]) if ok else math.nan for k in ("q", "m", "theta", "V", "eps_g", "e_t")},
                           **{f"{k}_err": float(s.errors[k]) if ok else math.nan for k in ("eps_g", "e_t")},
                           **{k: rec.get(k, math.nan) for k in ("d", "eps_g_coef", "eps_g_coef_err", "e_t_coef",
                                                                 "e_t_coef_err")})
                if w is None:
                    w = csv.DictWriter(fh, fieldnames=list(row))
                    if new:
                        w.writeheader()
                w.writerow(row)
                fh.flush()
                print(b, s.alpha, s.status.value, row["e_t"], row["e_t_err"], row["e_t_coef"], flush=True)
            print(f"{b}: {len(alphas)} points in {time.time() - t:.0f} s", flush=True)


def crossing(th):
    """α_c where Δe_t = e_t(semantic) − e_t(lowest θ = 0 point) changes sign (linear interpolation between the
    bracketing grid points) and its error from the QMC errors of Δe_t there; None if no sign change."""
    import pandas as pd
    sem = th[(th.branch == "semantic") & (th.status == "converged")].set_index("alpha")
    zero = th[th.branch.isin(["positional", "uninformative"]) & (th.status == "converged")]
    zero = zero.sort_values("e_t").groupby("alpha").first()
    common = sorted(set(sem.index) & set(zero.index))
    delta = pd.DataFrame({"alpha": common, "delta": [sem.e_t[a] - zero.e_t[a] for a in common],
                          "err": [math.hypot(sem.e_t_err[a], zero.e_t_err[a]) for a in common],
                          "delta_at_d_shift": [(sem.e_t_coef[a] - zero.e_t_coef[a]) for a in common]})
    for (a0, y0, e0), (a1, y1, e1) in zip(delta[["alpha", "delta", "err"]].values[:-1],
                                          delta[["alpha", "delta", "err"]].values[1:]):
        if y0 * y1 < 0:
            ac = a0 + (a1 - a0) * y0 / (y0 - y1)
            # d α_c / d y0 = (a1 - a0) (-y1) / (y0 - y1)^2, d α_c / d y1 = (a1 - a0) y0 / (y0 - y1)^2
            err = (a1 - a0) / (y0 - y1) ** 2 * math.hypot(y1 * e0, y0 * e1)
            return ac, err, delta
    return None, None, delta


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--part", choices=("theory", "simulate", "report"), required=True)
    ap.add_argument("--alphas", default="0.2,0.4,0.6,0.8,1.0")
    ap.add_argument("--d", type=int, default=1000)
    ap.add_argument("--instances", type=int, default=16)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--qmc-points", type=int, default=1024)
    ap.add_argument("--scrambles", type=int, default=4)
    ap.add_argument("--branches", default="semantic,uninformative,positional")
    a = ap.parse_args(argv)
    DATA.mkdir(parents=True, exist_ok=True)
    alphas = [float(v) for v in a.alphas.split(",")]
    if a.part == "simulate":
        part_simulate(alphas, a.d, a.instances, a.seed)
    elif a.part == "theory":
        part_theory(alphas, a.d, a.qmc_points, a.scrambles, a.branches.split(","))
    else:
        report(a.d)


def _nearest_point(th, alpha, row):
    """The converged theory fixed point at ``alpha`` nearest to a finite-d instance in (|m|, θ) (None if none)."""
    c = th[(np.isclose(th.alpha, alpha)) & (th.status == "converged")]
    if c.empty:
        return None
    dist = (c.m.abs() - abs(row.m)) ** 2 + (c.theta.abs() - abs(row.theta)) ** 2
    return c.loc[dist.idxmin()]


def report(d):
    """Paired Δe_t per α (raw, and each instance's e_t minus its nearest fixed point's O(1/d) term), the
    theory's Δe_t, the crossing; the figure; the markdown table on stdout."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import pandas as pd
    th = pd.read_csv(DATA / "theory.csv").drop_duplicates(["alpha", "branch"], keep="last")
    sim = pd.read_csv(DATA / "simulate.csv")
    sim = sim[sim.d == d].drop_duplicates(["alpha", "init", "instance"], keep="last")
    ac, ac_err, delta = crossing(th)
    rows = []
    for a, g in sim.groupby("alpha"):
        s = g[g.init == "semantic"].set_index("instance")
        p = g[g.init == "positional"].set_index("instance")
        both = sorted(set(s.index) & set(p.index))
        if not both:
            continue
        corr = {}
        for name, tab in (("semantic", s), ("positional", p)):
            pts = [_nearest_point(th, a, tab.loc[i]) for i in both]
            corr[name] = np.array([tab.loc[i].e_t - (pt.e_t_coef / d if pt is not None else np.nan)
                                   for i, pt in zip(both, pts)])
            corr[name + "_pt"] = [pt.branch if pt is not None else "none" for pt in pts]
        raw = s.loc[both].e_t.to_numpy() - p.loc[both].e_t.to_numpy()
        cd = corr["semantic"] - corr["positional"]
        n = len(both)
        tr = delta[np.isclose(delta.alpha, a)]
        rows.append(dict(alpha=a, n=n, delta_raw=raw.mean(), delta_raw_se=raw.std(ddof=1) / math.sqrt(n),
                         delta_corr=np.nanmean(cd), delta_corr_se=np.nanstd(cd, ddof=1) / math.sqrt(n),
                         pos_init_theta=float(p.loc[both].theta.abs().mean()),
                         pos_init_m=float(p.loc[both].m.abs().mean()),
                         pos_init_at_semantic=int(sum(b == "semantic" for b in corr["positional_pt"])),
                         theory_delta=float(tr.delta.iloc[0]) if len(tr) else np.nan,
                         theory_delta_err=float(tr.err.iloc[0]) if len(tr) else np.nan,
                         theory_delta_at_d=float(tr.delta.iloc[0] + tr.delta_at_d_shift.iloc[0] / d) if len(tr)
                         else np.nan))
    tab = pd.DataFrame(rows)
    tab.to_csv(DATA / "crossing_table.csv", index=False)
    fig, ax = plt.subplots(1, 2, figsize=(11, 4))
    ax[0].errorbar(tab.alpha, tab.delta_raw, yerr=tab.delta_raw_se, fmt="o", ms=4, capsize=2,
                   label=f"L-BFGS d = {d}, paired (raw)")
    ax[0].errorbar(tab.alpha + 0.01, tab.delta_corr, yerr=tab.delta_corr_se, fmt="s", ms=4, capsize=2,
                   label="minus each instance's O(1/d) term")
    ax[0].errorbar(delta.alpha, delta.delta, yerr=delta.err, fmt="-", color="k",
                   label="theory d → ∞: sem − lowest θ = 0 point")
    ax[0].plot(delta.alpha, delta.delta + delta.delta_at_d_shift / d, ":", color="k", label=f"theory at d = {d}")
    ax[0].axhline(0, color="grey", lw=0.5)
    if ac is not None:
        ax[0].axvspan(ac - ac_err, ac + ac_err, color="C3", alpha=0.2, label=f"theory α_c = {ac:.3f} ± {ac_err:.3f}")
    ax[0].set_xlabel("α")
    ax[0].set_ylabel("Δe_t = e_t(semantic) − e_t(positional)")
    ax[0].legend(fontsize=7)
    for b, st in (("semantic", "-"), ("uninformative", "--"), ("positional", "-.")):
        c = th[(th.branch == b) & (th.status == "converged")].sort_values("alpha")
        if len(c):
            ax[1].errorbar(c.alpha, c.e_t, yerr=c.e_t_err, fmt=st, label=f"theory {b} (d → ∞)")
            ax[1].plot(c.alpha, c.e_t + c.e_t_coef / d, st, lw=0.8, alpha=0.6, label=f"theory {b} at d = {d}")
    for init, mk in (("semantic", "o"), ("positional", "s")):
        g = sim[sim.init == init].groupby("alpha").e_t
        ax[1].errorbar(g.mean().index, g.mean(), yerr=g.std() / np.sqrt(g.count()), fmt=mk, ms=4, capsize=2,
                       label=f"L-BFGS d = {d}, {init} init")
    ax[1].set_xlabel("α")
    ax[1].set_ylabel("e_t")
    ax[1].legend(fontsize=6)
    fig.suptitle("L = 3, A = 0.4 I + 0.2 J, P = I, ω = 0.3, σ = 0.5, λ = 0.01")
    fig.tight_layout()
    out = ROOT / "docs" / "figures" / "finite_d_crossing_L3.png"
    fig.savefig(out, dpi=110)
    print(f"theory α_c = {ac} ± {ac_err}")
    print("| α | n | Δe_t raw (d = %d) | Δe_t − O(1/d) terms | pos. init: mean |m|, |θ|; at semantic | theory Δe_t (d → ∞) | theory Δe_t at d |" % d)
    print("|---|---|---|---|---|---|---|")
    for r in tab.itertuples():
        print(f"| {r.alpha:g} | {r.n} | {r.delta_raw:.3g} ± {r.delta_raw_se:.2g} | {r.delta_corr:.3g} ± "
              f"{r.delta_corr_se:.2g} | {r.pos_init_m:.3f}, {r.pos_init_theta:.3f}; {r.pos_init_at_semantic}/{r.n} | "
              f"{r.theory_delta:.3g} ± {r.theory_delta_err:.1g} | {r.theory_delta_at_d:.3g} |")


if __name__ == "__main__":
    sys.exit(main())
