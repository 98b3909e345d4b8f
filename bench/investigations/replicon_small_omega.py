"""Replicon at the RS positional and semantic fixed points at σ = 0.5, λ = 0.01, small ω (issue 32 follow-up;
docs/theory/beyond-rs.md "Small ω"): the smooth Λ_AT by the split rule (two outer orders) and, with "qmc", by the
engine (fixed 4096 × 4 points) with the jump term κ per gap window and the two-basin fraction (κ > 0: the strict
zero-temperature Λ_AT is infinite). Writes docs/data/beyond_rs/small_omega/replicon{_qmc}.json.
Run: OMP_NUM_THREADS=1 PYTHONPATH=src python bench/investigations/replicon_small_omega.py [qmc] [OMEGA,ALPHA ...]
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

from attnphase.model import ModelParams
from attnphase.theory import replicon as RP
from attnphase.theory.qmc_config import QMCConfig
from attnphase.theory.solve import solve

POINTS = [(0.1, 0.75), (0.1, 0.6), (0.2, 0.9), (0.3, 1.25), (0.3, 1.0)]


def main(qmc: bool, points):
    out = []
    for om, a in points:
        p = ModelParams(sigma=0.5, lam=0.01, omega=om)
        for br in ("positional", "semantic"):
            t = time.process_time()
            s = solve(p, a, br, integrator="split", stability=False)[0]
            rs = RP.replicon_split(s)
            rec = dict(omega=om, alpha=a, branch=br, m=s.values["m"], theta=s.values["theta"], e_t=s.values["e_t"],
                       Lambda_split=rs["value"], Lambda_split_err=rs["error"], orders=rs.get("orders"))
            if qmc:
                sq = solve(p, a, br, integrator="qmc", stability=False,
                           qmc_config=QMCConfig(points=4096, scrambles=4))[0]
                rq = RP.replicon(sq.raw)
                rec.update(Lambda_qmc=rq["value"], Lambda_qmc_err=rq["error"], windows=rq.get("windows"),
                           jump=rq.get("jump"), jump_err=rq.get("jump_err"), two_basin=rq.get("two_basin"),
                           m_qmc=float(sq.values.get("m")), e_t_qmc=float(sq.values.get("e_t")), reason=rq.get("reason"))
            rec["cpu_s"] = time.process_time() - t
            print(json.dumps(rec, default=float), flush=True)
            out.append(rec)
    Path(f"docs/data/beyond_rs/small_omega/replicon{'_qmc' if qmc else ''}.json").write_text(
        json.dumps(out, indent=1, default=float))


if __name__ == "__main__":
    args = sys.argv[1:]
    q = bool(args) and args[0] == "qmc"
    pts = [tuple(float(v) for v in s.split(",")) for s in args[1 if q else 0:]] or POINTS
    main(q, pts)
