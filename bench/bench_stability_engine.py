"""Growth factor of the pinned direction in the general engine (issue 11 item 4, helper hA;
``attnphase.theory.stability_general``): the engine against the split rule at L = 2, r = 1, and the factor on the
L = 3 and L = 2, r = 2 branches of the acceptance, with its cost relative to the solve.

Cases (ω = 0.3, σ = 0.5, λ = 0.01 unless said):
- ``L2``: L = 2, r = 1, ω ∈ {0.1, 0.3}, semantic / positional / uninformative, α ∈ {1, 2}; the split rule's
  ``stability`` (outer order 8) beside the engine's growth;
- ``L3``: L = 3, A = [[0.6,0.2,0.2],[0.2,0.6,0.2],[0.2,0.2,0.6]], default P, semantic / positional, α ∈ {1, 2};
- ``r2``: L = 2, r = 2, r* = 1, semantic / positional, α ∈ {1, 2}.
Each (case, ω, branch) is one ``solve_batch`` at a fixed QMC size (``--points`` × ``--scrambles``, no error
control) with ``stability=False``, then ``pinned_growth`` twice: the first call includes the compilation of the
free map, the second is the steady cost. Times are wall seconds on whatever load the machine has (noted in the
block by the caller).

Results: docs/data/stability_engine/<case>.json (``--rerun`` recomputes), the generated block
``stability_engine`` of docs/notes/2026-12-05-theory-general.md (from every case's JSON present).

Usage: ``python bench/bench_stability_engine.py --case L2|L3|r2 [--points 4096 --scrambles 4 --rerun]``;
``--quick``: 256 × 2, results under /tmp, no docs written.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import time
from dataclasses import replace
from pathlib import Path

import numpy as np

from attnphase.model import ModelParams
from attnphase.theory.engine import QMCConfig, solve_batch
from attnphase.theory.solver import solve_point
from attnphase.theory.stability_general import pinned_growth
from attnphase.theory.state import OrderParams, flatten, rotate, unflatten

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _docblock import write_block  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
A3 = ((0.6, 0.2, 0.2), (0.2, 0.6, 0.2), (0.2, 0.2, 0.6))
CASES = {
    "L2": [(ModelParams(omega=om), om, b) for om in (0.1, 0.3) for b in ("semantic", "positional", "uninformative")],
    "L3": [(ModelParams(L=3, A=A3, omega=0.3), 0.3, b) for b in ("semantic", "positional")],
    "r2": [(ModelParams(L=2, r=2, r_star=1, omega=0.3), 0.3, b) for b in ("semantic", "positional")],
}
ALPHAS = (1.0, 2.0)


def run_case(case: str, cfg: QMCConfig) -> list[dict]:
    rows = []
    for params, om, branch in CASES[case]:
        t0 = time.perf_counter()
        sols = solve_batch(params, list(ALPHAS), branch, qmc_config=cfg, stability=False)
        t_solve = time.perf_counter() - t0
        t0 = time.perf_counter()
        pinned_growth(sols)
        t_first = time.perf_counter() - t0
        t0 = time.perf_counter()
        recs = pinned_growth(sols)
        t_growth = time.perf_counter() - t0
        rot = [None] * len(sols)
        if params.r > 1:     # gauge check at the real fixed points: every scramble's state rotated by O
            rot = pinned_growth([replace(s, scramble_x=_rotated(s.scramble_x, params)) for s in sols])
        for s, rec, rrec in zip(sols, recs, rot):
            split = None
            if case == "L2":
                ref = solve_point(params, s.alpha, branch, stability_nodes=8)
                split = ref.stability if ref.converged else None
            rows.append({"case": case, "omega": om, "branch": branch, "alpha": s.alpha, "status": s.status.value,
                         "q": float(s.values["q"]), "m": float(s.values["m"]), "theta": float(s.values["theta"]),
                         "growth": rec["growth"], "growth_err": rec["growth_err"], "verdict": rec["verdict"],
                         "reason": rec["reason"], "spectral_radius": rec["spectral_radius"],
                         "blocks": rec["blocks"], "split": split, "evaluations": rec["evaluations"],
                         "points": cfg.points, "scrambles": cfg.scrambles, "t_solve_batch": t_solve,
                         "t_growth_batch": t_growth, "t_growth_first_batch": t_first, "batch": len(sols),
                         "rotated": None if rrec is None else {k: rrec[k] for k in ("growth", "growth_err")}})
            print(json.dumps({k: rows[-1][k] for k in ("case", "omega", "branch", "alpha", "status", "growth",
                                                     "growth_err", "verdict", "split", "t_solve_batch",
                                                     "t_growth_batch", "t_growth_first_batch")}), flush=True)
    return rows


def _rotated(xs, params):
    """Per-scramble flattened states rotated by a fixed O (rotation by 1 rad in the first two directions)."""
    r, k, rs = params.r, params.k, params.r_star
    O = np.eye(r)
    O[:2, :2] = [[math.cos(1.0), -math.sin(1.0)], [math.sin(1.0), math.cos(1.0)]]
    x = unflatten(np.asarray(xs), r, k, rs)
    return np.asarray(flatten(OrderParams(*(np.asarray(b) for b in rotate(x, O)))))


def _f(v, fmt="{:.3f}"):
    return "—" if v is None or (isinstance(v, float) and not math.isfinite(v)) else fmt.format(v)


def table(rows: list[dict]) -> str:
    head = ("| case | ω | branch | α | status | growth ± s.e. | verdict | split rule | QMC size | "
            "solve (batch) s | growth s (first) | growth / solve |\n|---|---|---|---|---|---|---|---|---|---|---|---|\n")
    out = []
    for r in rows:
        g = "—" if not math.isfinite(r["growth"]) else f"{r['growth']:.3f} ± {r['growth_err']:.3f}"
        if len(r["blocks"]) > 1:
            g += " (" + ", ".join(f"{k}: {_f(v['growth'])}" for k, v in r["blocks"].items()) + ")"
        if r.get("rotated") and math.isfinite(r["rotated"]["growth"]):
            g += f"; rotated: {r['rotated']['growth']:.3f} ± {r['rotated']['growth_err']:.3f}"
        out.append(f"| {r['case']} | {r['omega']:g} | {r['branch']} | {r['alpha']:g} | {r['status']} | {g} | "
                   f"{r['verdict']} | {_f(r['split'])} | {r['points']} × {r['scrambles']} | "
                   f"{r['t_solve_batch']:.1f} | {r['t_growth_batch']:.1f} ({r['t_growth_first_batch']:.1f}) | "
                   f"{r['t_growth_batch'] / r['t_solve_batch']:.2f} |")
    return head + "\n".join(out)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--case", choices=sorted(CASES), required=True)
    ap.add_argument("--points", type=int, default=4096)
    ap.add_argument("--scrambles", type=int, default=4)
    ap.add_argument("--rerun", action="store_true")
    ap.add_argument("--quick", action="store_true")
    a = ap.parse_args()
    cfg = QMCConfig(points=256 if a.quick else a.points, scrambles=2 if a.quick else a.scrambles, coarse=0)
    data = Path("/tmp/stability_engine") if a.quick else ROOT / "docs" / "data" / "stability_engine"
    data.mkdir(parents=True, exist_ok=True)
    path = data / f"{a.case}.json"
    if a.rerun or a.quick or not path.exists():
        rows = run_case(a.case, cfg)
        path.write_text(json.dumps({"rows": rows, "load": os.getloadavg()}, indent=1))
    if a.quick:
        return
    rows, loads = [], []
    for c in ("L2", "L3", "r2"):
        p = data / f"{c}.json"
        if p.exists():
            d = json.loads(p.read_text())
            rows += d["rows"]
            loads.append(f"{c}: {d['load'][0]:.1f}")
    text = ("<!-- stability_engine:begin (generated by bench/bench_stability_engine.py; do not edit) -->\n"
            + table(rows) + f"\n\nLoad average at the end of each case (2 shared cores): {', '.join(loads)}.\n"
            + "<!-- stability_engine:end -->")
    write_block(ROOT / "docs" / "notes" / "2026-12-05-theory-general.md", "stability_engine", text)


if __name__ == "__main__":
    main()
