"""Trace of every point solve of the diagram on a chain of the default grid (issue 34 item 3): per solve the
caller in the continuation (grid cell, halved step, end retry, crossing, saddle, first, backwards), its start
and converged state, iterations, growth factor and state. For choosing levers offline (predictor error,
growth factors far from an end).

    python bench/investigations/diagram_solves_trace.py OUT.csv I0 I1 [STEP]   # ω indices I0..I1 by STEP
"""
from __future__ import annotations

import os
import sys
import time

for _k, _v in {"OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1", "MKL_NUM_THREADS": "1",
               "XLA_FLAGS": "--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1"}.items():
    os.environ.setdefault(_k, _v)

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

from attnphase.model import ModelParams  # noqa: E402
from attnphase.phase import continuation as cont, diagram as diagram_mod, phase_diagram  # noqa: E402
from attnphase.phase.diagram import DEFAULT_ALPHAS, DEFAULT_OMEGAS  # noqa: E402
from attnphase.theory.solution import state_of, state_vector  # noqa: E402

rows = []
orig_call = diagram_mod._Counting.__call__


def counting(self, params, alpha, branch, **kw):
    f = sys._getframe(2)   # run -> caller
    who = f.f_code.co_name
    t0 = time.process_time()
    s = orig_call(self, params, alpha, branch, **kw)
    init = kw.get("init")
    x0 = state_vector(state_of(init)) if init is not None else None
    x1 = state_vector(state_of(s))
    rows.append(dict(omega=params.omega, alpha=alpha, branch=branch, who=who, iterations=int(s.iterations or 0),
                     stability=s.stability, converged=bool(s.converged), state=cont.point_state(s).value,
                     asked_stability=kw.get("stability"), nodes=kw.get("nodes"), cpu=time.process_time() - t0,
                     start=None if x0 is None else " ".join(f"{v:.12g}" for v in x0),
                     x=" ".join(f"{v:.12g}" for v in x1)))
    return s


diagram_mod._Counting.__call__ = counting

if __name__ == "__main__":
    out, i0, i1 = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    step = int(sys.argv[4]) if len(sys.argv) > 4 else 2
    omegas = np.array(DEFAULT_OMEGAS)[i0:i1 + 1:step]
    t0, c0 = time.time(), time.process_time()
    g, ln = phase_diagram(ModelParams(), omegas, DEFAULT_ALPHAS, workers=1)
    print(f"omegas {list(omegas)} wall {time.time() - t0:.1f} s CPU {time.process_time() - c0:.1f} s "
          f"load {os.getloadavg()}")
    pd.DataFrame(rows).to_csv(out, index=False)
    g.to_csv(out.replace(".csv", "_grid.csv"), index=False, float_format="%.12g")
    ln.to_csv(out.replace(".csv", "_lines.csv"), index=False, float_format="%.12g")
