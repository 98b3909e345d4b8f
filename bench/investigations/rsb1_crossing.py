"""α_c^1RSB (issue 32): the crossing of the semantic and the uninformative sectors' 1RSB ground states at ω = 0.3,
by regula falsi (phase.rsb1_crossing.alpha_c_1rsb, with its integration-error estimate) and by a scan on a fixed
α grid (scan_crossing), on the same lattice. Writes docs/data/beyond_rs/rsb1_crossing_{name}.json.
Run: OMP_NUM_THREADS=1 PYTHONPATH=src python bench/investigations/rsb1_crossing.py NAME [root]
(NAME: s0.7, s1.0, l0.001; single-threaded BLAS: 12x faster on a loaded machine).
"""

from __future__ import annotations

import json
import platform
import sys
import time
from pathlib import Path

import numpy as np

from attnphase.model import ModelParams
from attnphase.phase.rsb1_crossing import Sectors, alpha_c_1rsb, grids_for, scan_crossing

SETTINGS = {  # name: (sigma, lam, RS alpha_c from `theory transition --json`, scan grid)
    "s0.7": (0.7, 0.01, 0.6408, (0.3, 0.35, 0.4, 0.45, 0.5)),
    "s1.0": (1.0, 0.01, 0.7633, (0.3, 0.4, 0.5, 0.6, 0.7)),
    "l0.001": (0.5, 0.001, 0.7549, (0.4, 0.5, 0.6, 0.7)),
}


def main(name: str, scan: bool = True) -> None:
    sigma, lam, a_rs, grid = SETTINGS[name]
    params = ModelParams(sigma=sigma, lam=lam, omega=0.3)
    t0 = time.process_time()
    res = alpha_c_1rsb(params, a_rs)
    t1 = time.process_time()
    print(name, "root", res.alpha_c, "+-", res.err, res.reason, f"cpu {t1 - t0:.0f} s", flush=True)
    for p in sorted(res.pairs, key=lambda p: p.alpha):
        print("   ", json.dumps(p.to_dict()), flush=True)
    scan_root, pairs = scan_crossing(Sectors(params, grids_for(params)[0]), grid) if scan else (None, [])
    t2 = time.process_time()
    print(name, "scan", scan_root, f"cpu {t2 - t1:.0f} s", flush=True)
    for p in pairs:
        print("   ", json.dumps(p.to_dict()), flush=True)
    out = dict(meta=dict(machine=platform.node(), sigma=sigma, lam=lam, omega=0.3, alpha_c_rs=a_rs,
                         note=__doc__.splitlines()[0]),
               root=res.to_dict(), root_cpu_s=t1 - t0, scan=dict(alpha_c=scan_root, alphas=list(grid),
                                                              rows=[p.to_dict() for p in pairs], cpu_s=t2 - t1))
    Path(f"docs/data/beyond_rs/rsb1_crossing_{name}{'' if scan else '_root'}.json").write_text(json.dumps(out, indent=1, default=float))


if __name__ == "__main__":
    np.seterr(all="ignore")
    main(sys.argv[1], scan=len(sys.argv) < 3 or sys.argv[2] != "root")
