"""Profile of the diagram's map evaluations by kind on a slice (issue 34 item 3): N of the 40 default ω × 40 α ×
2 branches, one process, one thread. Counts and CPU of split-map evaluations: global search / fast (warm)
continuation, inside the growth factor (pinned stability), inside the collapse snap; solves and iterations.

    python bench/investigations/profile_diagram_slice.py [N]
"""
from __future__ import annotations

import os
import sys
import time
from collections import Counter, defaultdict

for _k, _v in {"OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1", "MKL_NUM_THREADS": "1",
               "XLA_FLAGS": "--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1"}.items():
    os.environ.setdefault(_k, _v)

import numpy as np  # noqa: E402

from attnphase.model import ModelParams  # noqa: E402
from attnphase.phase import phase_diagram  # noqa: E402
from attnphase.phase.diagram import DEFAULT_ALPHAS, DEFAULT_OMEGAS  # noqa: E402
from attnphase.theory import solver as solver_mod, split_integrator as si  # noqa: E402

ctx = {"kind": "iterate"}
count, cpu = Counter(), defaultdict(float)
orig_hats = si.SplitMap.hats


def hats(self, x, global_search=None):
    full = (not self.fast) if global_search is None else global_search
    t0 = time.process_time()
    try:
        return orig_hats(self, x, global_search)
    finally:
        k = (ctx["kind"], "global" if full else "fast")
        count[k] += 1
        cpu[k] += time.process_time() - t0


si.SplitMap.hats = hats
orig_stab = solver_mod.pinned_stability


def stab(*a, **kw):
    ctx["kind"] = "growth factor"
    try:
        return orig_stab(*a, **kw)
    finally:
        ctx["kind"] = "iterate"


solver_mod.pinned_stability = stab
orig_attr = si.CollapseSnap._attracts


def attracts(self, x):
    old = ctx["kind"]
    ctx["kind"] = "collapse snap"
    try:
        return orig_attr(self, x)
    finally:
        ctx["kind"] = old


si.CollapseSnap._attracts = attracts

from attnphase.phase import diagram as diagram_mod  # noqa: E402
solves = []
orig_call = diagram_mod._Counting.__call__


def counting(self, params, alpha, branch, **kw):
    s = orig_call(self, params, alpha, branch, **kw)
    solves.append(dict(omega=params.omega, alpha=alpha, branch=branch, iterations=int(s.iterations or 0),
                       stability=s.stability, converged=bool(s.converged), warm=kw.get("init") is not None))
    return s


diagram_mod._Counting.__call__ = counting

if __name__ == "__main__":
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 4
    margin = float(sys.argv[2]) if len(sys.argv) > 2 else 0.4
    omegas = np.array(DEFAULT_OMEGAS)
    omegas = omegas[np.unique(np.round(np.linspace(0, len(omegas) - 1, n)).astype(int))]
    t0, c0 = time.time(), time.process_time()
    g, ln = phase_diagram(ModelParams(), omegas, DEFAULT_ALPHAS, workers=1, stability_margin=margin)
    wall, tot = time.time() - t0, time.process_time() - c0
    print(f"omegas {list(omegas)} wall {wall:.1f} s CPU {tot:.1f} s load {os.getloadavg()}")
    print(f"solves {int(ln['solves'].sum())} iterations {int(ln['iterations'].sum())} "
          f"growth factors {int(ln['stability_evaluations'].sum())}")
    ev = sum(cpu.values())
    for k in sorted(count):
        print(f"{k[0]:>14} {k[1]:>6}: {count[k]:6d} evals {cpu[k]:7.1f} s ({100 * cpu[k] / tot:4.1f} % of CPU, "
              f"{1e3 * cpu[k] / count[k]:.1f} ms each)")
    print(f"map evaluations total {sum(count.values())}, {ev:.1f} s = {100 * ev / tot:.1f} % of CPU")
    print(g[["state_sem", "state_pos"]].value_counts().to_string())
    import pandas as pd
    sv = pd.DataFrame(solves)
    print("iterations per solve (warm / cold):", sv.groupby("warm")["iterations"].describe().to_string())
    print("iterations histogram:", np.bincount(sv["iterations"].clip(0, 30)).tolist())
    st = sv["stability"].dropna().astype(float)
    print("growth factors evaluated:", len(st), "values histogram [<0.2,<0.4,<0.6,<0.8,<1,>=1]:",
          np.histogram(st.clip(-5, 5), [-5, 0.2, 0.4, 0.6, 0.8, 1.0, 5])[0].tolist())
    sv.to_csv(os.environ.get("PROFILE_SOLVES", "/dev/null"), index=False)
    g.to_csv(os.environ.get("PROFILE_OUT", "/dev/null"), index=False, float_format="%.12g")
    ln.to_csv(os.environ.get("PROFILE_LINES", "/dev/null"), index=False, float_format="%.12g")
