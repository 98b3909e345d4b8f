"""The diagram's resolution check against the full finer diagram (docs/phase_diagram.md, "Resolution"): the same
grid at nodes = 4 (with the check) and at nodes = 8, in one process; prints per ω α_c, α_l at both orders, the
check's reported shifts and the CPU seconds of each.

    PYTHONPATH=src python bench/investigations/diagram_resolution_check.py --sigma 0.7 --omegas 0.1,0.5
"""

import argparse
import json
import os
import time

import numpy as np

from attnphase.model import ModelParams
from attnphase.phase import phase_diagram


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--sigma", type=float, default=0.7)
    ap.add_argument("--lam", type=float, default=0.01)
    ap.add_argument("--omegas", default="0.1,0.5")
    ap.add_argument("--alphas", default="0.3:1.5:25")
    ap.add_argument("--coarse-only", action="store_true", help="Skip the nodes-8 diagram.")
    ap.add_argument("--probe-all", action="store_true", help="Check every ω (not every 8th and the last).")
    a = ap.parse_args()
    if a.probe_all:
        import attnphase.phase.diagram_resolution as dr
        dr.probe_omegas = list
    w = [float(x) for x in a.omegas.split(",")]
    lo, hi, n = a.alphas.split(":")
    al = np.round(np.linspace(float(lo), float(hi), int(n)), 6)
    p = ModelParams(sigma=a.sigma, lam=a.lam)
    t0 = time.process_time()
    g4, l4 = phase_diagram(p, w, al, nodes=4, workers=1, resolution_check=True)
    t4 = time.process_time() - t0
    chk = l4.attrs["resolution_check"]
    t0 = time.process_time()
    g8, l8 = (g4, l4) if a.coarse_only else phase_diagram(p, w, al, nodes=8, workers=1)
    t8 = time.process_time() - t0
    print(f"sigma={a.sigma} lam={a.lam} load={os.getloadavg()}")
    print(f"CPU: nodes-4 diagram incl. check {t4:.1f} s (check {chk['cpu_s']} s), nodes-8 diagram {t8:.1f} s")
    for (_, x4), (_, x8) in zip(l4.iterrows(), l8.iterrows()):
        print(f"ω={x4['omega']:g}: α_c 4→8 {x4['alpha_c']} → {x8['alpha_c']}, α_l {x4['alpha_l']} → {x8['alpha_l']}")
    for r in chk["per_omega"]:
        print("check:", json.dumps(r, default=str))
    print("check summary:", json.dumps({k: v for k, v in chk.items() if k != "per_omega"}, default=str))


if __name__ == "__main__":
    main()
