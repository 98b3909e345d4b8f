"""The free branch's verdict (issue 11, helper hB; :mod:`attnphase.theory.free_verdict`): what it says on the
cases that motivated it and on the defaults.

    python bench/investigations/bench_free_verdict.py --run CASE [CASE …]    # solve, cache JSON in docs/data/free_verdict/
    python bench/investigations/bench_free_verdict.py                        # the table from the cache

Cases (L = 2, r = 2, r* = 1, ω = 0.3, λ = 0.01, default A, P; ``engine.solve(..., "free")`` from the default
start unless named, max_steps 200):

- ``s07a1``, ``s07a2``: σ = 0.7, α = 1 and 2, QMC 1024 × 4, no coarse stage;
- ``s07a1c``, ``s07a2c``: the same with a coarse stage of 256 points (the trend in N is available);
- ``s07a2fd``: σ = 0.7, α = 2 from the finite-d semantic-init mean (``bench_r2_sigma07.informed_starts``: the
  start from which hD's 1024 × 4 mixed point converged); ``s07a2v10``: from the lowest-e_t instances' mean with
  V/10 (hD: max_steps, per-scramble m 0.02–0.07, between the semantic and the mixed point);
- ``s05a23``: σ = 0.5, α = 2.3, 1024 × 4 (docs "Rank 2 on the defaults"); ``s05a23d``: the same at the default,
  error-controlled size;
- ``s07a1d``: σ = 0.7, α = 1 at the default size (4096 × 4, coarse 1024, error control).

Each record: the free solve's status, iterations, per-scramble ‖M‖, ‖θ‖ of its last states, the verdict record
(``GeneralSolution.verdict``), wall time and load average."""

from __future__ import annotations

import os

os.environ["XLA_FLAGS"] = (os.environ.get("XLA_FLAGS", "") + " --xla_cpu_experimental_ynn_fusion_type=").strip()

import argparse  # noqa: E402
import json  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "bench"))

from attnphase.model import ModelParams  # noqa: E402
from attnphase.theory.engine import QMCConfig, solve  # noqa: E402
from attnphase.theory.free_verdict import scramble_invariants  # noqa: E402

OUT = ROOT / "docs" / "data" / "free_verdict"
FIXED = QMCConfig(points=1024, scrambles=4, coarse=0)
COARSE = QMCConfig(points=1024, scrambles=4, coarse=256)
CASES = {   # name: (σ, α, QMC config or None for the default, start)
    "s07a1": (0.7, 1.0, FIXED, None), "s07a1c": (0.7, 1.0, COARSE, None), "s07a1d": (0.7, 1.0, None, None),
    "s07a2": (0.7, 2.0, FIXED, None), "s07a2c": (0.7, 2.0, COARSE, None), "s07a2fd": (0.7, 2.0, FIXED, "fd semantic"),
    "s07a2v10": (0.7, 2.0, FIXED, "fd best, V/10"),
    "s05a23": (0.5, 2.3, FIXED, None), "s05a23d": (0.5, 2.3, None, None),
}


def params(sigma: float) -> ModelParams:
    return ModelParams(L=2, r=2, r_star=1, omega=0.3, sigma=sigma, lam=0.01)


def start(name: str | None, alpha: float):
    if name is None:
        return None
    import bench_r2_sigma07 as R7
    return dict(R7.informed_starts(alpha, 1000, 8))[name]


def run(case: str) -> dict:
    sigma, alpha, cfg, st = CASES[case]
    p = params(sigma)
    t = time.perf_counter()
    g = solve(p, alpha, "free", qmc_config=cfg, init=start(st, alpha), max_steps=200)
    wall = time.perf_counter() - t
    inv = scramble_invariants(g.scramble_x, p.r, p.k, p.r_star)
    d = g.to_dict()
    rec = {"case": case, "sigma": sigma, "alpha": alpha, "start": st or "default",
           "qmc": f"{g.qmc.points} x {g.qmc.scrambles}"
           + (f", coarse {g.qmc.stages[0]}" if len(g.qmc.stages) > 1 else ""),
           "status": g.status.value, "iterations": g.iterations, "wall_s": wall, "load": os.getloadavg(),
           "m_scrambles": inv["m"].tolist(), "theta_scrambles": inv["theta"].tolist(),
           "values": {k: d.get(k) for k in ("q", "m", "theta", "e_t")}, "verdict": g.verdict,
           "resolution": g.resolution}
    OUT.mkdir(parents=True, exist_ok=True)
    (OUT / f"{case}.json").write_text(json.dumps(rec, indent=1, default=float))
    return rec


def fmt(v, spec=".2g"):
    return "—" if v is None else ", ".join(format(float(a), spec) for a in np.atleast_1d(v))


def table() -> str:
    rows = ["| case | σ | α | start | QMC | status | iterations | wall s | ‖M‖ per scramble | ‖θ‖ per scramble "
            "| candidate: growth | artefact/(1−g) per scramble | coarse ‖M‖ | verdict (reason) |",
            "|" + "---|" * 14]
    for case in CASES:
        f = OUT / f"{case}.json"
        if not f.exists():
            continue
        r = json.loads(f.read_text())
        v = r["verdict"]
        if v is None:
            cand, art, coarse, why = "—", "—", "—", "none (converged, out of reach of a pinned subspace)"
        else:
            pin = v["pinned"]
            g = None if pin is None else pin.get("growth")
            grow = f", {g:.2f} ± {pin['growth_err']:.2f})" if g is not None and np.isfinite(g) else ")"
            cand = v["branch"] + ("" if pin is None else f" ({pin['status']}" + grow)
            art = fmt(v["per_scramble"]["artefact"]) if v["per_scramble"]["artefact"] else "—"
            coarse = fmt(v["per_scramble"]["coarse_overlap"]) if v["per_scramble"]["coarse_overlap"] else "—"
            why = f"{v['verdict']}: {v['reason']}".replace("|", "\\|")   # |m| inside a table cell
        vals = "" if r["status"] != "converged" else f" (m = {r['values']['m']:.4f}, θ = {r['values']['theta']:.4f})"
        rows.append(f"| {case} | {r['sigma']} | {r['alpha']:g} | {r['start']} | {r['qmc']} | {r['status']}{vals} | "
                    f"{r['iterations']} | {r['wall_s']:.0f} | {fmt(r['m_scrambles'])} | "
                    f"{fmt(r['theta_scrambles'], '.3g')} | {cand} | {art} | {coarse} | {why} |")
    return "\n".join(rows)


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--run", nargs="*", choices=list(CASES), default=[])
    a = ap.parse_args()
    for c in a.run:
        r = run(c)
        print(c, r["status"], r["iterations"], f"{r['wall_s']:.0f} s", r["m_scrambles"],
              (r["verdict"] or {}).get("reason"), flush=True)
    print(table())
