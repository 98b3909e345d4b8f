"""1RSB (T = 0) in the L = 3 θ = 0 sector of issue 32 by nested QMC (theory/rsb1_qmc.py): α = 1, ω = 0.3,
A = 0.4 I + 0.2 J, σ = 0.5, λ = 0.01, r = r* = 1 (``L3a1`` of best_of_starts.py), uninformative sector M = θ = 0.

One step per call (each under ~10 min of CPU on the shared machine), results appended to
docs/data/beyond_rs/rsb1_L3_qmc.json (a checkpoint between calls):

    --x X [X ...] --start q0,dq,V    the (q0, Δq, V) saddle at each x (warm-started from the previous one)
    --secant                         the saddle at the secant root of ∂e*/∂x through the two bracketing x
    --gh ORDER --at X                the functional at the saddle of x = X with inner GH order ORDER
    --rs                             the RS point on the outer points alone (Δq = 0), N_RS points per scramble
    --rs-inner                       the RS point on the rule itself (x → 0, q0 → 0, Δq = q): the shift's baseline
    --summary X                      pool every rule's saddle at x = X with its RS point: e^1RSB, the shift, ± s.e.

All on ONE rule (``--points``, ``--scrambles``, ``--order``, ``--seed``: common random numbers). Run:
XLA_FLAGS="--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1" nice -n 5 \\
PYTHONPATH=src python bench/investigations/rsb1_L3_qmc.py --x 120 --start 1e-4,0.1136,21.1
"""

from __future__ import annotations

import argparse
import json
import platform
import time
from pathlib import Path

import numpy as np

from attnphase.model import ModelParams
from attnphase.provenance import stamp
from attnphase.theory import rsb1_qmc as RQ

OUT = Path(__file__).resolve().parents[2] / "docs" / "data" / "beyond_rs" / "rsb1_L3_qmc.json"
PARAMS = ModelParams(L=3, A=((0.6, 0.2, 0.2), (0.2, 0.6, 0.2), (0.2, 0.2, 0.6)), omega=0.3, sigma=0.5, lam=0.01)
ALPHA = 1.0
RS_ENGINE = {"q": 0.1181980432319812, "V": 27.688069089618452, "e_t": 0.00708762421659373,
             "e_t_err": 7.109140881712122e-06, "source": "docs/data/beyond_rs/rs_L3_a1.json (QMC 4096 x 4)"}
FINITE_D = {"e_t": 0.007323, "e_t_err": 0.000077, "source": "docs/theory/beyond-rs.md (best of 32 starts, "
            "theta/sigma^2 < 0.3, d = 500-4000, extrapolated in 1/d)"}
N_RS = 4096


def load() -> dict:
    return json.loads(OUT.read_text()) if OUT.exists() else {}


def save(d: dict) -> None:
    OUT.write_text(json.dumps(d, indent=1) + "\n")


def header(a) -> dict:
    return {"params": PARAMS.to_dict(), "alpha": ALPHA, "sector": "uninformative (m = theta = 0), r = r* = 1",
            "points_per_scramble": a.points, "scrambles": a.scrambles, "gh_order": a.order,
            "seeds": list(range(a.seed, a.seed + a.scrambles)), "grad_tol": RQ.GRAD_TOL,
            "rs_engine": RS_ENGINE, "finite_d": FINITE_D, "machine": platform.node() + ", 2 shared cores",
            **stamp()}


def timed(f):
    t = time.process_time()
    out = f()
    return out, time.process_time() - t


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--points", type=int, default=128)
    ap.add_argument("--scrambles", type=int, default=4)
    ap.add_argument("--order", type=int, default=6)
    ap.add_argument("--seed", type=int, default=100)
    ap.add_argument("--x", type=float, nargs="*", default=[])
    ap.add_argument("--start", type=str, default="1e-4,0.1136,21.1")
    ap.add_argument("--secant", action="store_true")
    ap.add_argument("--gh", type=int, default=0)
    ap.add_argument("--at", type=float, default=0.0)
    ap.add_argument("--rs", action="store_true")
    ap.add_argument("--rs-inner", action="store_true")
    ap.add_argument("--summary", type=float, default=0.0, help="pool the rules' saddles at this x")
    a = ap.parse_args()
    d = load()
    d.setdefault("header", header(a))
    d.setdefault("saddles", [])
    rule = RQ.nested_rule(3, a.points, a.scrambles, a.order, a.seed)
    start = tuple(float(v) for v in a.start.split(","))
    xs = list(a.x)
    tag = {"seed": a.seed, "points_per_scramble": a.points, "scrambles": a.scrambles, "gh_order": a.order}
    if a.secant:
        done = sorted((s for s in d["saddles"] if s["converged"] and s["seed"] == a.seed), key=lambda s: s["x"])
        pairs = [(u, v) for u, v in zip(done, done[1:]) if u["de_dx"] > 0 > v["de_dx"]]
        u, v = pairs[0]
        xs = [u["x"] + (v["x"] - u["x"]) * u["de_dx"] / (u["de_dx"] - v["de_dx"])]
        start = tuple(0.5 * (u[k] + v[k]) for k in ("q0", "dq", "V"))
    for x in xs:
        s, cpu = timed(lambda: RQ.saddle(PARAMS, rule, ALPHA, x, start))
        row = {**s.as_dict(), **tag, "cpu_s": round(cpu, 1)}
        print(json.dumps({k: row[k] for k in ("x", "q0", "dq", "V", "e", "e_se", "de_dx", "converged",
                                              "evaluations", "cpu_s")}), flush=True)
        d["saddles"].append(row)
        save(d)
        if s.converged:
            start = (s.q0, s.dq, s.V)
    if a.gh:
        s = min((s for s in d["saddles"] if s["converged"] and s["seed"] == a.seed), key=lambda s: abs(s["x"] - a.at))
        hi = RQ.nested_rule(3, a.points, a.scrambles, a.gh, a.seed)
        v, cpu = timed(lambda: RQ.functional(PARAMS, hi, ALPHA, s["q0"], s["dq"], s["V"], s["x"]))
        base = RQ.functional(PARAMS, rule, ALPHA, s["q0"], s["dq"], s["V"], s["x"])
        diff = v.e - base.e
        row = {**tag, "x": s["x"], "order": a.gh, "base_order": a.order, "e": v.mean, "e_base": base.mean,
               "diff_mean": float(diff.mean()), "diff_se": float(diff.std(ddof=1) / np.sqrt(len(diff))),
               "cpu_s": round(cpu, 1)}
        print(json.dumps(row), flush=True)
        d.setdefault("gh_check", []).append(row)
        save(d)
    if a.rs:
        rr = RQ.nested_rule(3, N_RS, a.scrambles, 2, a.seed)
        s, cpu = timed(lambda: RQ.rs_saddle(PARAMS, rr, ALPHA, (RS_ENGINE["q"], RS_ENGINE["V"])))
        row = {**s.as_dict(), "points_per_scramble": N_RS, "cpu_s": round(cpu, 1)}
        print(json.dumps({k: row[k] for k in ("q0", "V", "e", "e_se", "converged", "cpu_s")}), flush=True)
        d["rs_outer"] = row
        save(d)
    if a.rs_inner:
        s, cpu = timed(lambda: RQ.rs_saddle(PARAMS, rule, ALPHA, (RS_ENGINE["q"], RS_ENGINE["V"]), inner=True))
        row = {**s.as_dict(), **tag, "cpu_s": round(cpu, 1)}
        print(json.dumps({k: row[k] for k in ("dq", "V", "e", "e_se", "converged", "cpu_s")}), flush=True)
        d.setdefault("rs_inner", []).append(row)
        save(d)
    if a.summary:
        d["summary"] = summary(d, a.summary)
        print(json.dumps(d["summary"], indent=1))
        save(d)


def summary(d: dict, x: float) -> dict:
    """Pool the scrambles of every rule (seed) that has a saddle at ``x`` and an RS point: the direct e^1RSB,
    the shift over the RS point of the same points, and e^RS(engine) + shift (the shift is nearly free of the y
    sampling error, which the engine's 4096 × 4 points make small)."""
    E, R, rows = [], [], []
    for r in d["rs_inner"]:
        s = [s for s in d["saddles"] if abs(s["x"] - x) < 1e-6 and s["seed"] == r["seed"] and s["converged"]]
        if s:
            E += s[0]["e_per_scramble"]
            R += r["e_per_scramble"]
            rows.append({k: s[0][k] for k in ("seed", "q0", "dq", "V", "de_dx", "e", "e_se")})
    E, R = np.array(E), np.array(R)
    se = lambda a: float(a.std(ddof=1) / np.sqrt(len(a)))  # noqa: E731
    shift = E - R
    corr = RS_ENGINE["e_t"] + shift.mean()
    corr_se = float(np.hypot(RS_ENGINE["e_t_err"], se(shift)))
    fd, fde = FINITE_D["e_t"], FINITE_D["e_t_err"]
    return {"x": x, "scrambles": len(E), "rules": rows, "e_1rsb_direct": float(E.mean()), "e_1rsb_direct_se": se(E),
            "e_rs_same_points": float(R.mean()), "e_rs_same_points_se": se(R), "shift": float(shift.mean()),
            "shift_se": se(shift), "e_1rsb": corr, "e_1rsb_se": corr_se,
            "finite_d_above_1rsb": fd - corr, "finite_d_above_1rsb_in_se": (fd - corr) / float(np.hypot(fde, corr_se)),
            "converged": True}


if __name__ == "__main__":
    main()
