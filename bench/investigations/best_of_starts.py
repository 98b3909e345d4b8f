"""Lowest training loss finite-d students reach: best of ≥ 32 L-BFGS starts per instance (issue 32, acceptance 1).

For each point (L = 2, r = 1, paper A, ω = 0.3, λ = 0.01 unless said), each d and each instance the instance
is built once (:func:`attnphase.simulate.instance`: key ``fold_in(key(seed), i)``, float32 data, exactly the
instance ``simulate(..., seed, instances > i)`` trains) and trained by :func:`attnphase.simulate.train`
(``TrainConfig(optimizer="lbfgs")``: 60 GD warm-up steps, then L-BFGS to ``‖∇R‖ ≤ 1e-6·max(1, ‖∇R₀‖)``) from
32 starts; only the start differs, the data are shared:

- ``semantic`` (Q₀ = Q*), ``positional`` (Q₀ = 1/√d), as simulate's inits;
- ``mixed`` (the sum of those two), ``positional_x5`` (5× the positional start), ``semantic_half`` (0.5·Q*);
- 11 random starts, ``init_scale`` cycling 0.1, 0.3, 1.0 (keys ``fold_in(key_init, j)``);
- 16 perturbed restarts around the best end point so far (basin hopping): ``Q_best + s·rms(Q_best)·N(0,1)``,
  s cycling 0.1, 0.3, 0.6, 1.0; the best is updated after each.

Per (point, d, instance) a row of ``docs/data/beyond_rs/best_of_starts.csv``: best e_t and its m, θ, θ/σ², the
start that won, how many starts ended within 1e-6 (relative) and within 1e-4 (relative) of the best, the e_t of the
semantic and positional starts, and how many starts did not converge. ``--fit`` then writes the weighted fit
e_t(d) = e_∞ + c/d of the per-d means (weights 1/s.e.²) to ``best_of_starts_extrapolated.csv``.

Usage (from the repository root, PYTHONPATH=src):
``python bench/investigations/best_of_starts.py --point s07a05 --d 500 1000 2000 4000 --instances 12 8 6 4``
(rows already in the CSV are skipped: rerun to continue); ``python bench/investigations/best_of_starts.py --fit``.
The point ``L3a1`` (L = 3, A = 0.4 I + 0.2 J, α = 1; :data:`SECTOR`) perturbs from the θ = 0 sector's best and
writes ``best_of_starts_L3_theta0.csv`` (and its ``_extrapolated`` fit of both bests; ``--table`` prints it).
"""

from __future__ import annotations

import os

os.environ["XLA_FLAGS"] = (os.environ.get("XLA_FLAGS", "") + " --xla_cpu_experimental_ynn_fusion_type=").strip()

import argparse  # noqa: E402
import csv  # noqa: E402
import math  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402

from attnphase.model import ModelParams  # noqa: E402
from attnphase.simulate import TrainConfig, TrainStatus, initial_Q, instance, observables, train  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
OUT = ROOT / "docs" / "data" / "beyond_rs"
CSV = OUT / "best_of_starts.csv"
FIT = OUT / "best_of_starts_extrapolated.csv"
L3_A = ((0.6, 0.2, 0.2), (0.2, 0.6, 0.2), (0.2, 0.2, 0.6))
POINTS = {  # name: (ModelParams kwargs, alpha)
    "s07a05": (dict(sigma=0.7), 0.5),
    "lam001a055": (dict(lam=0.001), 0.55),
    "s07a03": (dict(sigma=0.7), 0.3),
    "s10a04": (dict(sigma=1.0), 0.4),
    "s07a08": (dict(sigma=0.7), 0.8),
    "lam001a035": (dict(lam=0.001), 0.35),
    "s10a07": (dict(sigma=1.0), 0.7),
    "L3a1": (dict(L=3, A=L3_A), 1.0),
}
SECTOR = {"L3a1": 0.3}
"""θ/σ² below which an end point belongs to the θ = 0 sector the point is about (L = 3, α = 1: the glassy band
has θ/σ² ≈ 0.01–0.2, the semantic minimum ≈ 0.6). There the 16 perturbed restarts start from the best end point
*of the sector* so far, the row also records the sector's best, and the rows go to their own CSV
(``SECTOR_CSV``)."""
SECTOR_CSV = {"L3a1": OUT / "best_of_starts_L3_theta0.csv"}
SECTOR_FIELDS = ("sector_best_e_t", "sector_m", "sector_theta_over_sigma2", "sector_q", "sector_winner",
                 "sector_n_within_1e-6", "n_in_sector")
MAX_ITER = {"lam001a055": 500, "lam001a035": 500}
"""L-BFGS iteration cap where it is not the default 2000: at λ = 0.001 a quarter of the starts run to 2000
iterations without reaching gtol (flat directions; 20 s per instance at d = 500): capped at 500, their e_t is still
a training loss reached (an upper bound on the lowest); ``n_unconverged`` counts them."""
N_RANDOM, N_PERTURB = 11, 16
RANDOM_SCALES = (0.1, 0.3, 1.0)
PERTURB_SCALES = (0.1, 0.3, 0.6, 1.0)
FIELDS = ("point", "sigma", "lam", "omega", "L", "alpha", "d", "n", "seed", "instance", "starts", "best_e_t", "m",
          "theta", "theta_over_sigma2", "q", "family", "winner", "n_within_1e-6", "n_within_1e-4",
          "e_t_semantic", "e_t_positional", "n_unconverged", "cpu_s")


def family(m: float, tos: float) -> str:
    """θ ≠ 0 semantic / m ≠ 0 positional / neither (uninformative-like) / both, at threshold 0.1."""
    s, p = tos > 0.1, m > 0.1
    return {(True, False): "semantic", (False, True): "positional", (False, False): "uninformative"}.get((s, p), "mixed")


def starts(inst, params):
    """The informed and random starts (name, Q₀) for one instance; all share the instance's data."""
    sem = initial_Q(inst, params, TrainConfig(init="semantic"))
    pos = initial_Q(inst, params, TrainConfig(init="positional"))
    out = [("semantic", sem), ("positional", pos),
           ("mixed", sem + pos), ("positional_x5", 5.0 * pos), ("semantic_half", 0.5 * sem)]
    for j in range(N_RANDOM):
        s = RANDOM_SCALES[j % len(RANDOM_SCALES)]
        out.append((f"random{j}_s{s}", s * jax.random.normal(jax.random.fold_in(inst.key_init, 1000 + j),
                                                               sem.shape, sem.dtype)))
    return out


def run_instance(params, alpha, d, seed, i, cfg, sector=None):
    inst = instance(params, alpha=alpha, d=d, seed=seed, index=i)
    res = []  # (name, e_t, obs, Q, status)

    def go(name, Q0):
        Q, _, _, st = train(inst, params, cfg, Q0=Q0)
        o = observables(Q, inst, params)
        e = o["e_t"] if math.isfinite(o["e_t"]) else math.inf
        res.append((name, e, o, Q, st))

    for name, Q0 in starts(inst, params):
        go(name, Q0)
    key = jax.random.fold_in(inst.key_init, 2000)
    def in_sector(r):
        return sector is None or r[2]["theta_over_sigma2"] < sector

    for j in range(N_PERTURB):
        b = min((r for r in res if in_sector(r)), key=lambda r: r[1], default=min(res, key=lambda r: r[1]))
        s = PERTURB_SCALES[j % len(PERTURB_SCALES)]
        Qb = b[3]
        rms = float(jnp.sqrt(jnp.mean(Qb * Qb)))
        go(f"perturb{j}_s{s}", Qb + s * max(rms, 0.1) * jax.random.normal(jax.random.fold_in(key, j), Qb.shape, Qb.dtype))
    best = min(res, key=lambda r: r[1])
    e0 = best[1]
    o = best[2]
    extra = {}
    if sector is not None:
        sec = [r for r in res if in_sector(r)]
        sb = min(sec, key=lambda r: r[1], default=None)
        es = math.nan if sb is None else sb[1]
        extra = dict(sector_best_e_t=es, sector_m=math.nan if sb is None else sb[2]["m"],
                     sector_theta_over_sigma2=math.nan if sb is None else sb[2]["theta_over_sigma2"],
                     sector_q=math.nan if sb is None else sb[2]["q"], sector_winner="" if sb is None else sb[0],
                     **{"sector_n_within_1e-6": sum(r[1] <= es * (1 + 1e-6) for r in sec)}, n_in_sector=len(sec))
    return dict(**extra,best_e_t=e0, m=o["m"], theta=o["theta"], theta_over_sigma2=o["theta_over_sigma2"], q=o["q"],
                family=family(o["m"], o["theta_over_sigma2"]), winner=best[0], starts=len(res),
                **{"n_within_1e-6": sum(r[1] <= e0 * (1 + 1e-6) for r in res),
                   "n_within_1e-4": sum(r[1] <= e0 * (1 + 1e-4) for r in res)},
                e_t_semantic=res[0][1], e_t_positional=res[1][1],
                n_unconverged=sum(r[4] != TrainStatus.CONVERGED for r in res))


def done_rows(path=CSV):
    if not path.exists():
        return set()
    with path.open() as f:
        return {(r["point"], int(r["d"]), int(r["instance"])) for r in csv.DictReader(f)}


def run_point(name, ds, ns, seed, budget_s):
    kw, alpha = POINTS[name]
    params = ModelParams(**kw)
    cfg = TrainConfig(optimizer="lbfgs", max_iter=MAX_ITER.get(name, 2000))
    path = SECTOR_CSV.get(name, CSV)
    have = done_rows(path)
    new = not path.exists()
    t_start = time.time()
    with path.open("a", newline="") as f:
        w = csv.DictWriter(f, fieldnames=FIELDS + (SECTOR_FIELDS if name in SECTOR else ()))
        if new:
            w.writeheader()
        for d, n in zip(ds, ns):
            for i in range(n):
                if (name, d, i) in have:
                    continue
                if time.time() - t_start > budget_s:
                    print(f"budget reached before d={d} i={i}", flush=True)
                    return
                c0 = time.process_time()
                r = run_instance(params, alpha, d, seed, i, cfg, SECTOR.get(name))
                cpu = time.process_time() - c0
                row = dict(point=name, sigma=params.sigma, lam=params.lam, omega=params.omega, L=params.L,
                           alpha=alpha, d=d, n=round(alpha * d), seed=seed, instance=i, cpu_s=round(cpu, 2), **r)
                w.writerow(row)
                f.flush()
                print(f"{name} d={d} i={i} best={r['best_e_t']:.7f} {r['family']} m={r['m']:.3f} "
                      f"tos={r['theta_over_sigma2']:.3f} by {r['winner']} n1e-6={r['n_within_1e-6']} "
                      f"sem={r['e_t_semantic']:.7f} pos={r['e_t_positional']:.7f} cpu={cpu:.1f}s"
                      + (f" sector={r['sector_best_e_t']:.7f} by {r['sector_winner']} ({r['n_in_sector']} in sector)"
                         if name in SECTOR else ""), flush=True)


def fit(src=CSV, dst=FIT, columns=("best_e_t",)):
    """Per point (and per column: the θ = 0 sector's best as well where there is one) the per-d means and the
    weighted fit e_t(d) = e_∞ + c/d, written to ``dst``."""
    import pandas as pd
    df = pd.read_csv(src)
    rows = []
    for (name, g), col in ((ng, c) for ng in df.groupby("point", sort=False) for c in columns):
        per = g.groupby("d")[col].agg(["mean", "std", "count"]).reset_index()
        per["se"] = per["std"] / np.sqrt(per["count"])
        ok = per[per["count"] >= 2]
        out = dict(point=name if col == "best_e_t" else f"{name} ({col})", alpha=g["alpha"].iloc[0],
                   sigma=g["sigma"].iloc[0], lam=g["lam"].iloc[0])
        for _, r in per.iterrows():
            out[f"d{int(r['d'])}_mean"], out[f"d{int(r['d'])}_se"], out[f"d{int(r['d'])}_n"] = r["mean"], r["se"], int(r["count"])
        if len(ok) >= 2:
            x, y, s = 1.0 / ok["d"].to_numpy(float), ok["mean"].to_numpy(), ok["se"].to_numpy()
            X = np.stack([np.ones_like(x), x], axis=1)
            W = np.diag(1 / s ** 2)
            cov = np.linalg.inv(X.T @ W @ X)
            beta = cov @ X.T @ W @ y
            chi2 = float(((y - X @ beta) / s) @ ((y - X @ beta) / s))
            out.update(e_inf=beta[0], e_inf_se=math.sqrt(cov[0, 0]), c=beta[1], c_se=math.sqrt(cov[1, 1]),
                       chi2=chi2, dof=len(ok) - 2, ds=" ".join(str(int(v)) for v in ok["d"]))
        out["family_counts"] = "; ".join(f"{k}: {v}" for k, v in g["family"].value_counts().items())
        rows.append(out)
    pd.DataFrame(rows).to_csv(dst, index=False)
    print(pd.DataFrame(rows).to_string())


# RS global minimum e_t and 1RSB ground state e_t quoted from docs/theory/beyond-rs.md (RS: "RS global min" column of
# the families table; 1RSB: the lower of e_gs^unin, e_gs^sem of the α-grid scans, docs/data/beyond_rs/
# rsb1_crossing_*.json) and docs/theory/one-step-rsb.md (uninformative sector, rsb1_points.csv) where the scan has no α.
REFERENCE = {
    "s07a05": ("σ = 0.7, α = 0.5", "0.001682 (unin.)", "0.001772 (sem.; unin. 0.001797)"),
    "lam001a055": ("λ = 0.001, α = 0.55", "0.000262 (unin.)", "0.000292 (unin.; sem. not at 0.55: 0.000257 at 0.5, 0.000316 at 0.6)"),
    "s07a03": ("σ = 0.7, α = 0.3", "0.001015 (unin.)", "0.001058 (unin.; sem. 0.001060)"),
    "s10a04": ("σ = 1.0, α = 0.4", "0.001319 (unin.)", "0.001440 (sem.; unin. 0.001445)"),
    "s07a08": ("σ = 0.7, α = 0.8", "0.002712 (sem.)", "– (RS semantic confirmed; unin. 1RSB 0.003136)"),
    "lam001a035": ("λ = 0.001, α = 0.35", "0.000160 (pos.)", "0.000171 (unin.; pos. sector not at 0.35)"),
    "s10a07": ("σ = 1.0, α = 0.7", "0.002819 (unin.)", "0.002882 (sem.; unin. 0.003514)"),
}


def table():
    """The note's markdown table from the two CSVs."""
    import pandas as pd
    df, fx = pd.read_csv(CSV), pd.read_csv(FIT)
    ds = (500, 1000, 2000, 4000)
    print("| point | " + " | ".join(f"d = {d}" for d in ds) + " | e_∞ (fit ± s.e.; χ²/dof) | RS e_t | 1RSB e_t | winning family (instances) |")
    print("| --- " * (len(ds) + 5) + "|")
    for _, r in fx.iterrows():
        cells = []
        for d in ds:
            n = r.get(f"d{d}_n")
            cells.append("–" if pd.isna(n) else f"{r[f'd{d}_mean']:.6f} ± {r[f'd{d}_se']:.6f} ({int(n)})")
        e = "–" if pd.isna(r.get("e_inf")) else f"**{r['e_inf']:.6f} ± {r['e_inf_se']:.6f}** ({r['chi2']:.1f}/{int(r['dof'])})"
        lab, rs, rsb = REFERENCE[r["point"]]
        print(f"| {lab} | " + " | ".join(cells) + f" | {e} | {rs} | {rsb} | {r['family_counts']} |")


def gains():
    """Per point and d: mean relative gain of the best over the better informed start, mean number of starts
    within 1e-6 of the best, mean θ/σ² and m of the best, how often each kind of start won."""
    import pandas as pd
    df = pd.read_csv(CSV)
    df["gain"] = 1 - df["best_e_t"] / df[["e_t_semantic", "e_t_positional"]].min(axis=1)
    df["rank"] = df["point"].map({k: i for i, k in enumerate(POINTS)})
    df = df.sort_values(["rank", "d", "instance"])
    df["kind"] = df["winner"].str.extract(r"^([a-z_]+?)(?:\d|$)")[0]
    print("| point | d | instances | gain over best informed start | starts within 1e-6 | θ/σ² | m | winners |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- |")
    for (pt, d), g in df.groupby(["point", "d"], sort=False):
        kinds = ", ".join(f"{k} {v}" for k, v in g["kind"].value_counts().items())
        print(f"| {REFERENCE[pt][0]} | {d} | {len(g)} | {100 * g['gain'].mean():.2f} % | {g['n_within_1e-6'].mean():.1f} "
              f"| {g['theta_over_sigma2'].mean():.3f} | {g['m'].mean():.3f} | {kinds} |")


def table_sector():
    """Per d of each sector point: the best e_t overall and in the sector (mean ± s.e.), the sector best's θ/σ²
    and m, how many of the 32 end points fell in the sector, and which starts won."""
    import pandas as pd
    for name, path in SECTOR_CSV.items():
        if not path.exists():
            continue
        df = pd.read_csv(path)
        df["kind"] = df["winner"].str.extract(r"^([a-z_]+?)(?:\d|$)")[0]
        df["sector_kind"] = df["sector_winner"].str.extract(r"^([a-z_]+?)(?:\d|$)")[0]
        print(f"{name}: | d | n | best e_t (all 32) | won by | best e_t, θ = 0 sector | θ/σ² | m | won by | "
              "end points in the sector | CPU s per instance |")
        for d, g in df.groupby("d"):
            se = lambda c: f"{g[c].mean():.6f} ± {g[c].std() / np.sqrt(len(g)):.6f}"  # noqa: E731
            won = lambda c: ", ".join(f"{k} {v}" for k, v in g[c].value_counts().items())  # noqa: E731
            print(f"| {d} | {len(g)} | {se('best_e_t')} | {won('kind')} | {se('sector_best_e_t')} | "
                  f"{g['sector_theta_over_sigma2'].mean():.3f} | {g['sector_m'].mean():.3f} | {won('sector_kind')} | "
                  f"{g['n_in_sector'].mean():.1f} | {g['cpu_s'].mean():.1f} |")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--point", choices=sorted(POINTS))
    ap.add_argument("--d", type=int, nargs="+", default=[500, 1000, 2000, 4000])
    ap.add_argument("--instances", type=int, nargs="+", default=[12, 8, 6, 4])
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--budget-s", type=float, default=540.0, help="stop starting new instances after this wall time")
    ap.add_argument("--fit", action="store_true")
    ap.add_argument("--table", action="store_true", help="print the note's markdown table (after --fit)")
    a = ap.parse_args()
    if a.point:
        run_point(a.point, a.d, a.instances, a.seed, a.budget_s)
    if a.fit:
        fit()
        for path in SECTOR_CSV.values():
            if path.exists():
                fit(path, path.with_name(path.stem + "_extrapolated.csv"), ("best_e_t", "sector_best_e_t"))
    if a.table:
        table()
        gains()
        table_sector()


if __name__ == "__main__":
    main()
