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


def load_theory():
    """``theory.csv`` (this script's ``--part theory``, with O(1/d) coefficients) and, at the α it lacks,
    ``theory_branches_1024x4.csv`` (the same engine and QMC size, a first scan without V and coefficients)."""
    import pandas as pd
    th = pd.read_csv(DATA / "theory.csv").drop_duplicates(["alpha", "branch"], keep="last")
    scan = DATA / "theory_branches_1024x4.csv"
    if scan.exists():
        extra = pd.read_csv(scan)
        have = set(zip(th.alpha.round(6), th.branch))
        extra = extra[[(round(a, 6), b) not in have for a, b in zip(extra.alpha, extra.branch)]]
        th = pd.concat([th, extra], ignore_index=True)
    return th.sort_values(["branch", "alpha"]).reset_index(drop=True)


def crossing(th):
    """Δe_t = e_t(semantic) − e_t(lowest θ = 0 point: the positional branch where it exists, else the
    uninformative point it collapses onto) per α, with its QMC error; where the semantic branch has collapsed
    onto that point Δe_t = 0 (one fixed point). Returns (sign-change α by linear interpolation with its error
    from the two bracketing Δe_t, or None; the semantic onset bracket (last collapsed α, first converged α);
    the Δ table)."""
    import pandas as pd
    sem_all = th[th.branch == "semantic"].set_index("alpha")
    zero = th[th.branch.isin(["positional", "uninformative"]) & (th.status == "converged")]
    zero = zero.sort_values("e_t").groupby("alpha").first()
    rows = []
    for a in sorted(set(sem_all.index) & set(zero.index)):
        st = sem_all.status[a]
        if st == "converged":
            rows.append(dict(alpha=a, delta=sem_all.e_t[a] - zero.e_t[a],
                             err=math.hypot(sem_all.e_t_err[a], zero.e_t_err[a]),
                             delta_at_d_shift=sem_all.get("e_t_coef", pd.Series(dtype=float)).get(a, math.nan)
                             - zero.get("e_t_coef", pd.Series(dtype=float)).get(a, math.nan), semantic=st))
        elif st == "collapsed":
            rows.append(dict(alpha=a, delta=0.0, err=0.0, delta_at_d_shift=0.0, semantic=st))
    delta = pd.DataFrame(rows)
    coll = sorted(a for a in sem_all.index if sem_all.status[a] == "collapsed")
    conv = sorted(a for a in sem_all.index if sem_all.status[a] == "converged")
    onset = (max((a for a in coll if a < min(conv)), default=None), min(conv)) if conv else (None, None)
    live = delta[delta.semantic == "converged"]
    for (a0, y0, e0), (a1, y1, e1) in zip(live[["alpha", "delta", "err"]].values[:-1],
                                          live[["alpha", "delta", "err"]].values[1:]):
        if y0 * y1 < 0:
            ac = a0 + (a1 - a0) * y0 / (y0 - y1)
            err = (a1 - a0) / (y0 - y1) ** 2 * math.hypot(y1 * e0, y0 * e1)
            return (ac, err), onset, delta
    return None, onset, delta


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


def _point(th, alpha, branch):
    """The converged theory row of ``branch`` at ``alpha``; for the semantic branch where it collapsed, the
    uninformative point (the same fixed point); None if none."""
    c = th[np.isclose(th.alpha, alpha) & (th.branch == branch) & (th.status == "converged")]
    if c.empty and branch == "semantic":
        return _point(th, alpha, "uninformative")
    return None if c.empty else c.iloc[0]


def _at_d(pt, d):
    return (pt.e_t + pt.e_t_coef / d, pt.e_t_coef) if pt is not None else (np.nan, np.nan)


def report(d):
    """Per α: the paired finite-d Δe_t, each init against its fixed point at dimension d, the theory's Δe_t;
    the semantic onset and any sign change; the figure; the markdown table on stdout (and crossing_table.csv)."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import pandas as pd
    th = load_theory()
    sim = pd.read_csv(DATA / "simulate.csv")
    sim = sim[sim.d == d].drop_duplicates(["alpha", "init", "instance"], keep="last")
    cross, onset, delta = crossing(th)
    rows = []
    for a, g in sim.groupby("alpha"):
        s_ = g[g.init == "semantic"].set_index("instance")
        p_ = g[g.init == "positional"].set_index("instance")
        both = sorted(set(s_.index) & set(p_.index))
        raw = s_.loc[both].e_t.to_numpy() - p_.loc[both].e_t.to_numpy()
        n = len(both)
        sem_d, c_sem = _at_d(_point(th, a, "semantic"), d)
        zero_d, c_zero = _at_d(_point(th, a, "uninformative"), d)
        tr = delta[np.isclose(delta.alpha, a)]
        rows.append(dict(
            alpha=a, n=n, delta=raw.mean(), delta_se=raw.std(ddof=1) / math.sqrt(n),
            delta_minus_terms=raw.mean() - (c_sem - c_zero) / d,
            sem_e_t=s_.e_t.mean(), sem_e_t_se=s_.e_t.std(ddof=1) / math.sqrt(len(s_)), sem_theory_at_d=sem_d,
            sem_theta=s_.theta.abs().mean(), pos_e_t=p_.e_t.mean(), pos_e_t_se=p_.e_t.std(ddof=1) / math.sqrt(len(p_)),
            zero_theory_at_d=zero_d, pos_m=p_.m.abs().mean(), pos_theta=p_.theta.abs().mean(),
            pos_at_semantic=int((p_.theta.abs() > 0.5 * s_.theta.abs().mean()).sum())
            if s_.theta.abs().mean() > 0.05 else 0,        # positional starts that ended at the semantic minimum
            theory_delta=float(tr.delta.iloc[0]) if len(tr) else np.nan,
            theory_delta_err=float(tr.err.iloc[0]) if len(tr) else np.nan))
    tab = pd.DataFrame(rows)
    tab.to_csv(DATA / "crossing_table.csv", index=False)
    fig, ax = plt.subplots(1, 2, figsize=(12, 4.2))
    ax[0].errorbar(tab.alpha, tab.delta, yerr=tab.delta_se, fmt="o", ms=4, capsize=2,
                   label=f"L-BFGS d = {d}: e_t(sem. init) − e_t(pos. init), paired")
    ax[0].errorbar(delta.alpha, delta.delta, yerr=delta.err, fmt="-", color="k",
                   label="theory (d → ∞): semantic − uninformative (0 where one point)")
    live = delta.dropna(subset=["delta_at_d_shift"])
    ax[0].plot(live.alpha, live.delta + live.delta_at_d_shift / d, ":", color="k", label=f"theory at d = {d}")
    ax[0].axhline(0, color="grey", lw=0.5)
    if onset[1] is not None:
        lo = onset[0] if onset[0] is not None else 0.0
        ax[0].axvspan(lo, onset[1], color="C3", alpha=0.2, label=f"semantic branch leaves the uninformative point: "
                      f"α ∈ ({lo:g}, {onset[1]:g})")
    ax[0].set_xlabel("α")
    ax[0].set_ylabel("Δe_t")
    ax[0].legend(fontsize=7)
    for b, st, col in (("semantic", "-", "C0"), ("uninformative", "--", "C2")):
        c = th[(th.branch == b) & (th.status == "converged")].sort_values("alpha")
        ax[1].errorbar(c.alpha, c.e_t, yerr=c.e_t_err, fmt=st, color=col, lw=1, label=f"theory {b} (d → ∞)")
        cd = c.dropna(subset=["e_t_coef"])
        ax[1].plot(cd.alpha, cd.e_t + cd.e_t_coef / d, st, color=col, lw=2, alpha=0.5,
                   label=f"theory {b} at d = {d}")
    for init, mk, col in (("semantic", "o", "C0"), ("positional", "s", "C1")):
        g = sim[sim.init == init].groupby("alpha").e_t
        ax[1].errorbar(g.mean().index, g.mean(), yerr=g.std() / np.sqrt(g.count()), fmt=mk, color=col, ms=4,
                       capsize=2, label=f"L-BFGS d = {d}, {init} init")
    ax[1].set_xlabel("α")
    ax[1].set_ylabel("e_t")
    ax[1].legend(fontsize=7)
    fig.suptitle("L = 3, A = 0.4 I + 0.2 J, P = I, ω = 0.3, σ = 0.5, λ = 0.01 (positional branch: collapsed at "
                 "every α)", fontsize=10)
    fig.tight_layout()
    out = ROOT / "docs" / "figures" / "finite_d_crossing_L3.png"
    fig.savefig(out, dpi=110)
    print(f"sign change of the theory's Δe_t: {cross}; semantic onset bracket: {onset}")
    print(delta.to_string())
    print(f"| α | n | Δe_t, d = {d} (paired) | minus O(1/d) terms | e_t sem. init / semantic at d | θ sem. init "
          "| e_t pos. init / uninformative at d | pos. init ‖M‖, θ (at semantic) | theory Δe_t (d → ∞) |")
    print("|---|---|---|---|---|---|---|---|---|")
    f = lambda v, p=4: "—" if not np.isfinite(v) else f"{v:.{p}g}"  # noqa: E731
    for r in tab.itertuples():
        print(f"| {r.alpha:g} | {r.n} | {r.delta:.2e} ± {r.delta_se:.1e} | {f(r.delta_minus_terms, 3)} | "
              f"{r.sem_e_t:.5f} ± {r.sem_e_t_se:.1e} / {f(r.sem_theory_at_d, 5)} | {r.sem_theta:.3f} | "
              f"{r.pos_e_t:.5f} ± {r.pos_e_t_se:.1e} / {f(r.zero_theory_at_d, 5)} | {r.pos_m:.3f}, {r.pos_theta:.3f} ({r.pos_at_semantic}/{r.n}) | "
              f"{f(r.theory_delta, 2)} ± {f(r.theory_delta_err, 1)} |")


if __name__ == "__main__":
    sys.exit(main())
