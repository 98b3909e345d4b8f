"""Every growth factor of one ω chain of the default 40 × 40 diagram, with the factor evaluated at every valid
point (``stability_margin=None``) — the data behind the skip rule's slope bound (issue 34 item 3,
docs/notes/2026-12-06-diagram-cli.md). Per solve: ω, α, branch, the caller in the continuation, the factor,
the state, nodes, CPU (the recorder of ``diagram_solves_trace.py``, which also keeps each solve's start and
end state).

    python bench/investigations/diagram_factors.py OUT.csv CHAIN [MARGIN]   # CHAIN 0 or 1 of the 2 chains
"""
from __future__ import annotations

import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
# the per-solve recorder (and the one-thread environment, set before numpy/JAX load): the trace script's
from diagram_solves_trace import rows  # noqa: E402

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

from attnphase.model import ModelParams  # noqa: E402
from attnphase.phase import phase_diagram  # noqa: E402
from attnphase.phase.diagram import DEFAULT_ALPHAS, DEFAULT_OMEGAS  # noqa: E402


if __name__ == "__main__":
    out, chain = sys.argv[1], int(sys.argv[2])
    margin = None if len(sys.argv) < 4 or sys.argv[3] == "none" else float(sys.argv[3])
    omegas = np.array(DEFAULT_OMEGAS)[chain::2]
    t0, c0 = time.time(), time.process_time()
    g, ln = phase_diagram(ModelParams(), omegas, DEFAULT_ALPHAS, workers=1, stability_margin=margin)
    print(f"chain {chain} margin {margin} wall {time.time() - t0:.1f} s CPU {time.process_time() - c0:.1f} s "
          f"load {os.getloadavg()}")
    pd.DataFrame(rows).to_csv(out, index=False)
    g.to_csv(out.replace(".csv", "_grid.csv"), index=False, float_format="%.12g")
    ln.to_csv(out.replace(".csv", "_lines.csv"), index=False, float_format="%.12g")
