"""The L = 3 positional-start state at a FIXED positional overlap M (issue 11, helper hA): the constrained replica
theory (``attnphase.theory.constrained``) along the finite-d direction, at the cluster's own M, and at α = 2.

Model: L = 3, A = 0.4 I + 0.2 J, P = I, ω = 0.3, σ = 0.5, λ = 0.01, r = r* = 1. For m on a grid along
u = (2, −1, −1)/√6 (the S₃-fixed direction near which the finite-d cluster's M lies) and along e₁ (the
finite-d start's direction) the constrained point is solved with θ pinned to 0 (the positional state) and with
θ free from the semantic start (θ/σ² = 0.6; the constrained minimum over θ too); with θ pinned, the growth factor
of θ at fixed M (``constrained.theta_growth``) says whether the free iteration leaves θ = 0. With θ free from a
small seed (θ/σ² = 0.02) the plain damped iteration (no Anderson: it follows the map's own dynamics) is run
along u at α = 1. At the cluster's M (its mean m along u, and the three d = 1000 instances whose M is recorded in
docs/notes/2026-12-05-theory-general.md) the constrained point gets the O(1/d) terms of ``theory.finite_size`` and is compared
with the finite-d instances (cached JSON in docs/data/theory_vs_finite_d/; no L-BFGS is run here).

Results: docs/data/constrained_L3/*.json (``--rerun`` recomputes), figure docs/figures/constrained_L3.png, the
tables in the generated block ``constrained_L3`` of docs/notes/2026-12-05-theory-general.md.

Usage: ``python bench/investigations/bench_constrained_L3.py [--points 1024 --scrambles 4 --rerun]`` (~40 min of CPU at
1024 × 4 on the 2 shared cores); ``--quick``: 128 × 2, 3 m values, results under /tmp, no docs written.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import time
from pathlib import Path

import numpy as np

from attnphase.model import ModelParams
from attnphase.theory.constrained import ThetaMode, solve_constrained, theta_growth
from attnphase.theory.engine import QMCConfig
from attnphase.theory.finite_size import coefficients, passthrough
from attnphase.theory.state import OrderParams

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))     # bench/ (_docblock)
from _docblock import write_block  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "docs" / "data" / "constrained_L3"
FD = ROOT / "docs" / "data" / "theory_vs_finite_d"
DOC = ROOT / "docs" / "notes" / "2026-12-05-theory-general.md"
FIG = ROOT / "docs" / "figures" / "constrained_L3.png"
P3 = ModelParams(L=3, A=[[0.6, 0.2, 0.2], [0.2, 0.6, 0.2], [0.2, 0.2, 0.6]], omega=0.3)
DIRS = {"u": np.array([2.0, -1.0, -1.0]) / math.sqrt(6.0), "e1": np.array([1.0, 0.0, 0.0])}
M_GRID = (0.0, 0.05, 0.1, 0.15, 0.2, 0.22, 0.25, 0.3)
INSTANCES = {7: (0.165, -0.017, -0.114), 10: (0.191, -0.111, -0.078), 13: (0.201, -0.078, -0.100)}
"""M of three d = 1000 positional-start instances (docs/notes/2026-12-05-theory-general.md, reading item 5)."""
POSITIONAL_M = 0.1
"""A finite-d instance with m above this is in the positional cluster (the others are semantic, m < 0.07)."""
SEMANTIC_SEED = 0.6
SMALL_SEED = 0.02
BACKTRACK = 4
"""The iteration's safeguard (``fixed_point.iterate``): up to 4 halvings of a row's damping."""
MODE_LABEL = {"pinned": "0", "free": "free (sem. seed)", "free_small": "free (small seed)"}


def _row(sol, extra=None) -> dict:
    d = sol.to_dict()
    d["per_scramble"] = {k: np.asarray(v).tolist() for k, v in sol.per_scramble.items()}
    d.update(extra or {})
    return d


def _growth(g: np.ndarray) -> dict:
    """Mean and standard error of the per-scramble growth factors (NaN entries, where the difference never
    settled, are left out and counted)."""
    ok = g[np.isfinite(g)]
    return {"theta_growth": float(ok.mean()) if ok.size else float("nan"),
            "theta_growth_err": float(ok.std(ddof=1) / math.sqrt(ok.size)) if ok.size > 1 else float("nan"),
            "theta_growth_per_scramble": [float(v) for v in g], "theta_growth_unsettled": int(g.size - ok.size)}


def run_curve(alpha, direction, mode, cfg, ms, out: Path, rerun: bool) -> list[dict]:
    """One curve: the constrained points at m·direction for m in ``ms`` (one batch). Modes: ``pinned`` (with
    θ's growth factor), ``free`` (semantic seed), ``free_small`` (small seed, plain damped iteration)."""
    f = out / f"curve_{direction}_{mode}_a{alpha:g}_N{cfg.points}x{cfg.scrambles}.json"
    if f.exists() and not rerun:
        return json.loads(f.read_text())
    Ms = [m * DIRS[direction][None, :] for m in ms]
    t0 = time.time()
    if mode == "pinned":
        sols = solve_constrained(P3, alpha, Ms, theta=ThetaMode.PINNED, qmc_config=cfg, backtrack=BACKTRACK)
    elif mode == "free":
        sols = solve_constrained(P3, alpha, Ms, theta=ThetaMode.FREE, theta_seed=SEMANTIC_SEED, qmc_config=cfg,
                                 backtrack=BACKTRACK)
    else:
        sols = solve_constrained(P3, alpha, Ms, theta=ThetaMode.FREE, theta_seed=SMALL_SEED, qmc_config=cfg,
                                 anderson=0, max_steps=200)
    rows = []
    for m, s in zip(ms, sols):
        extra = {"m_imposed": m, "direction": direction, "mode": mode}
        if mode == "pinned" and s.converged:
            g = theta_growth(s)
            extra.update(_growth(g))
        rows.append(_row(s, extra))
    out.mkdir(parents=True, exist_ok=True)
    f.write_text(json.dumps({"rows": rows, "wall_s": time.time() - t0, "load": os.getloadavg()}, indent=1))
    return {"rows": rows}


def add_passthrough(curves: dict, cfg, out: Path, rerun: bool) -> None:
    """The O(1/d) term of e_t, ``α E‖S(ĥ)P‖²/(2d)`` (``theory.finite_size``), at every converged curve point
    (cached in passthrough_N*.json): whether finite d could turn e_t(m) into a potential with a minimum."""
    f = out / f"passthrough_N{cfg.points}x{cfg.scrambles}.json"
    cache = json.loads(f.read_text()) if f.exists() and not rerun else {}
    for (alpha, direction, mode), data in curves.items():
        for r in data["rows"]:
            key = f"{alpha:g}_{direction}_{mode}_{r['m_imposed']:g}"
            if r["status"] != "converged":
                continue
            if key not in cache:
                x = OrderParams(*(np.asarray(r["matrices"][k], dtype=float) for k in ("q", "M", "theta", "V")))
                cache[key] = alpha * passthrough(P3, alpha, x, points=cfg.points)["S_hhat_P"] / 2
            r["e_t_coef"] = cache[key]
    out.mkdir(parents=True, exist_ok=True)
    f.write_text(json.dumps(cache, indent=1))


def finite_d_cluster(d: int) -> dict:
    """The positional instances (m > POSITIONAL_M) of the cached finite-d runs at dimension ``d``: per instance
    m, θ, q, e_t (and ε_g at d = 1000), and their means with standard errors."""
    if d == 1000:
        fd = json.loads((FD / "fd_L3_positional_a1_d1000_n16.json").read_text())
        inst = [{k: fd[k][i] for k in ("m", "theta", "q", "e_t", "eps_g")} | {"instance": i}
                for i in range(len(fd["m"]))]
    else:
        n = 16 if d == 2000 else 8
        fd = json.loads((FD / f"endpoints_L3_positional_a1_d{d}_n{n}.json").read_text())
        inst = [r["after"] | {"instance": r["instance"]} for r in fd["rows"]]
    pos = [r for r in inst if r["m"] > POSITIONAL_M]
    keys = [k for k in ("m", "theta", "q", "e_t", "eps_g") if k in pos[0]]
    mean = {k: float(np.mean([r[k] for r in pos])) for k in keys}
    se = {k: float(np.std([r[k] for r in pos], ddof=1) / math.sqrt(len(pos))) for k in keys}
    return {"d": d, "n": len(pos), "of": len(inst), "mean": mean, "se": se, "instances": pos}


def run_cluster(cfg, out: Path, rerun: bool) -> dict:
    """The constrained points (θ pinned and θ free from the semantic seed) at the cluster's mean m along u and
    at the three recorded instances' M, with the O(1/d) coefficients of ``theory.finite_size``."""
    f = out / f"cluster_a1_N{cfg.points}x{cfg.scrambles}.json"
    if f.exists() and not rerun:
        return json.loads(f.read_text())
    clusters = {d: finite_d_cluster(d) for d in (1000, 2000, 4000)}
    m_mean = clusters[1000]["mean"]["m"]
    labels = ["mean"] + [f"instance {i}" for i in INSTANCES]
    Ms = [m_mean * DIRS["u"][None, :]] + [np.asarray(v)[None, :] for v in INSTANCES.values()]
    res = {"clusters": {str(d): c for d, c in clusters.items()}, "labels": labels, "points": {}}
    for mode in ("pinned", "free"):
        kw = {"theta": ThetaMode.PINNED} if mode == "pinned" else {"theta": ThetaMode.FREE,
                                                                   "theta_seed": SEMANTIC_SEED}
        sols = solve_constrained(P3, 1.0, Ms, qmc_config=cfg, backtrack=BACKTRACK, **kw)
        rows = []
        for lab, s in zip(labels, sols):
            extra = {"label": lab, "mode": mode}
            if s.converged:
                extra["finite_size"] = coefficients(P3, 1.0, s.x, points=cfg.points * cfg.scrambles)
                if mode == "pinned":
                    g = theta_growth(s)
                    extra.update(_growth(g))
            rows.append(_row(s, extra))
        res["points"][mode] = rows
    out.mkdir(parents=True, exist_ok=True)
    res["load"] = os.getloadavg()
    f.write_text(json.dumps(res, indent=1))
    return res


def _f(v, e=None, digits=4):
    if v is None or not np.isfinite(v):
        return "—"
    s = f"{v:.{digits}g}"
    return s if e is None or not np.isfinite(e) else f"{s} ± {e:.1g}"


def curve_table(curves: dict) -> list[str]:
    lines = ["| α | direction | θ | m | status | q | θ (value) | ε_g | e_t (d → ∞) | e_t at d = 1000 | force along M "
             "| θ growth |", "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for (alpha, direction, mode), data in curves.items():
        for r in data["rows"]:
            ok = r["status"] == "converged"
            lines.append("| " + " | ".join([
                f"{alpha:g}", direction, MODE_LABEL[mode],
                f"{r['m_imposed']:g}", r["status"] + ("" if ok else f" ({r['iterations']} it.)"),
                _f(r.get("q"), r.get("q_err")) if ok else "—", _f(r.get("theta"), r.get("theta_err"), 3) if ok else "—",
                _f(r.get("eps_g"), r.get("eps_g_err")) if ok else "—",
                _f(r.get("e_t"), r.get("e_t_err")) if ok else "—",
                _f(r["e_t"] + r["e_t_coef"] / 1000) if ok and "e_t_coef" in r else "—",
                _f(r.get("force_along"), r.get("force_along_err"), 3) if ok else "—",
                _f(r.get("theta_growth"), r.get("theta_growth_err"), 3)]) + " |")
    return lines


def _within(fd, se, th, th_err):
    tol = max(3 * math.hypot(se, th_err), 0.05 * abs(th))
    return abs(fd - th) <= tol, tol


def cluster_table(cl: dict) -> list[str]:
    """Finite-d cluster (d = 1000 mean, and per recorded instance) against the constrained point at its M, with
    the O(1/d) terms; the rule of the bench_theory_vs_finite_d tables, max(3 s.e., 5 %)."""
    fd = cl["clusters"]["1000"]
    byinst = {f"instance {r['instance']}": r for r in fd["instances"]}
    lines = ["| M | θ mode | quantity | finite d (d = 1000) | constrained theory at d = 1000 (d → ∞) "
             "| within max(3 s.e., 5 %) |",
             "|---|---|---|---|---|---|"]
    for mode, rows in cl["points"].items():
        for r in rows:
            if r["status"] != "converged":
                lines.append(f"| {r['label']} | {mode} | — | — | {r['status']} | — |")
                continue
            ref = ({k: (fd["mean"][k], fd["se"][k]) for k in fd["mean"]} if r["label"] == "mean"
                   else {k: (byinst[r["label"]][k], 0.0) for k in ("q", "theta", "eps_g", "e_t")})
            for key in ("q", "theta", "eps_g", "e_t"):
                th, te = r[key], r[f"{key}_err"]
                th_d = th + (r["finite_size"][key] / 1000 if key in ("eps_g", "e_t") else 0.0)
                v, se = ref[key]
                if key == "theta" and mode == "pinned":     # 0 in theory: the finite-d floor (bench_theory_vs_finite_d)
                    ok = abs(v) <= 3 * math.sqrt(ref["q"][0] / (P3.sigma ** 2 * 1000)) * P3.sigma ** 2
                else:
                    ok, _ = _within(v, se, th_d, te)
                lines.append(f"| {r['label']} (m = {np.linalg.norm(r['M']):.3f}) | {mode} | {key} | "
                             f"{_f(v, se if se else None)} | "
                             f"{_f(th_d, te)} ({_f(th)}) | {'yes' if ok else '**no**'} |")
    return lines


def series_table(cl: dict) -> list[str]:
    """The cluster's q and e_t at d = 1000, 2000, 4000 against the pinned constrained point at the mean M."""
    pin = next(r for r in cl["points"]["pinned"] if r["label"] == "mean")
    lines = ["| d | positional instances | m | θ | q | e_t | constrained (θ = 0) e_t at d, at m = "
             f"{np.linalg.norm(pin['M']):.3f} |", "|---|---|---|---|---|---|---|"]
    for d, c in cl["clusters"].items():
        mu, se = c["mean"], c["se"]
        et = pin["e_t"] + pin["finite_size"]["e_t"] / int(d)
        lines.append(f"| {d} | {c['n']}/{c['of']} | {_f(mu['m'], se['m'])} | {_f(mu['theta'], se['theta'], 3)} | "
                     f"{_f(mu['q'], se['q'])} | {_f(mu['e_t'], se['e_t'])} | {_f(et, pin['e_t_err'])} |")
    return lines


def plot(curves: dict, cl: dict, path: Path) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(2, 3, figsize=(14, 7.5))
    style = {("u", "pinned"): ("C0", "-o", "along u, θ = 0"),
             ("u", "free"): ("C1", "-s", "along u, θ free (sem. seed)"),
             ("e1", "pinned"): ("C2", "--o", "along e₁, θ = 0"), ("e1", "free"): ("C3", "--s", "along e₁, θ free")}
    panels = [("e_t", "e_t (d → ∞)"), ("force_along", "force along M, −de_t/dm"), ("q", "q"),
              ("theta", "θ"), ("eps_g", "ε_g (d → ∞)"), ("theta_growth", "growth factor of θ at θ = 0")]
    for (alpha, direction, mode), data in curves.items():
        if alpha != 1.0 or (direction, mode) not in style:
            continue
        c, ls, lab = style[(direction, mode)]
        rows = [r for r in data["rows"] if r["status"] == "converged"]
        m = [r["m_imposed"] for r in rows]
        for a, (key, title) in zip(ax.flat, panels):
            if not rows or key not in rows[0]:
                continue
            y = [r.get(key, np.nan) for r in rows]
            e = [r.get(f"{key}_err", 0.0) for r in rows]
            a.errorbar(m, y, yerr=e, fmt=ls, color=c, ms=4, label=lab, capsize=2)
            a.set_title(title)
    fd = cl["clusters"]["1000"]
    for a, key in zip(ax.flat, ("e_t", None, "q", "theta", "eps_g", None)):
        if key is None:
            continue
        for r in fd["instances"]:
            v = r[key]
            if key in ("e_t", "eps_g"):     # move the finite-d value to d → ∞ with the pinned point's O(1/d) term
                pin = next(p for p in cl["points"]["pinned"] if p["label"] == "mean")
                v = v - pin["finite_size"][key] / 1000
            a.plot(r["m"], v, "kx", ms=6)
        a.plot([], [], "kx", label="finite d = 1000 (e_t, ε_g minus the O(1/d) term)")
    ax[1, 2].axhline(1.0, color="gray", lw=0.8)
    ax[0, 1].axhline(0.0, color="gray", lw=0.8)
    for a in ax.flat:
        a.set_xlabel("m = ‖M‖ (imposed)")
    ax[1, 0].legend(fontsize=7, loc="center right")
    fig.suptitle("L = 3, A = 0.4I + 0.2J, ω = 0.3, α = 1: the replica theory at fixed positional overlap M")
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--points", type=int, default=1024)
    ap.add_argument("--scrambles", type=int, default=4)
    ap.add_argument("--rerun", action="store_true")
    ap.add_argument("--quick", action="store_true")
    a = ap.parse_args(argv)
    cfg = QMCConfig(points=128 if a.quick else a.points, scrambles=2 if a.quick else a.scrambles, coarse=0)
    out = Path("/tmp/bench_constrained_L3") if a.quick else DATA
    ms = (0.0, 0.1, 0.22) if a.quick else M_GRID
    plan = [(1.0, "u", "pinned"), (1.0, "u", "free"), (1.0, "e1", "pinned"), (1.0, "e1", "free"),
            (1.0, "u", "free_small"), (2.0, "u", "pinned"), (2.0, "u", "free")]
    curves = {}
    for alpha, direction, mode in plan:
        t0 = time.time()
        curves[(alpha, direction, mode)] = run_curve(alpha, direction, mode, cfg, ms, out, a.rerun)
        print(f"α={alpha:g} {direction} {mode}: {time.time() - t0:.0f} s", flush=True)
    add_passthrough(curves, cfg, out, a.rerun)
    cl = run_cluster(cfg, out, a.rerun)
    body = ["### Curves (QMC %d × %d)" % (cfg.points, cfg.scrambles), "", *curve_table(curves), "",
            "### The cluster against the constrained point at its own M (α = 1)", "", *cluster_table(cl), "",
            "### The cluster over d (positional-start instances with m > %g)" % POSITIONAL_M, "", *series_table(cl)]
    print("\n".join(body))
    if not a.quick:
        plot(curves, cl, FIG)
        text = "\n".join([f"<!-- constrained_L3:begin (generated by bench/investigations/bench_constrained_L3.py; "
                          f"QMC {cfg.points} × {cfg.scrambles}) -->", *body, "<!-- constrained_L3:end -->"])
        write_block(DOC, "constrained_L3", text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
