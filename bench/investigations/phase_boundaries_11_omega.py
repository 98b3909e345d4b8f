"""α_c, α_l at the 11 default-σ/λ ω of docs/notes/2026-12-03-phase-boundaries.md (L = 2, r = 1, σ = 0.5,
λ = 0.01), as the CLI's ``theory transition --omega W`` computes them: one JSON line per ω on stdout, with
the CPU time of the row. Used to check that a refactoring of the solver leaves the lines unchanged (issue 29).

    PYTHONPATH=src python bench/investigations/phase_boundaries_11_omega.py [W ...]
"""

from __future__ import annotations

import json
import sys
import time

OMEGAS = (0.02, 0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.45, 0.5)


def main(omegas) -> None:
    from attnphase.api import model
    from attnphase.phase import transition
    for w in omegas:
        t0 = time.process_time()
        r = transition(model(sigma=0.5, lam=0.01, omega=float(w)), nodes=8, curve_nodes=4)
        d = r.to_dict()
        print(json.dumps(dict(omega=w, alpha_c=d["alpha_c"], alpha_l=d["alpha_l"],
                              cpu_s=round(time.process_time() - t0, 1))), flush=True)


if __name__ == "__main__":
    main([float(a) for a in sys.argv[1:]] or OMEGAS)
