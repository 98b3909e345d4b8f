"""Residual histories of every point solve of a diagram chain slice (issue 34 item 3, lever (b) of
docs/notes/2026-12-06-diagram-levers.md): per solve the caller, convergence, iterations and the residual after
each step, recorded through the fixed-point loop's per-step ``newton`` callback (which sees the residual log).
Then offline: a stall test ``stop at step k >= K when min(r[k-W:k]) > DROP * min(r[:k-W])`` (no progress by the
factor DROP over the last W steps) — at which step it would stop each failed solve, and whether it would have
stopped any solve that converged (must be none).

    python bench/investigations/diagram_stall_histories.py OUT.json I0 I1 [STEP]
"""
from __future__ import annotations

import json
import os
import sys
import time

for _k, _v in {"OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1", "MKL_NUM_THREADS": "1",
               "XLA_FLAGS": "--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1"}.items():
    os.environ.setdefault(_k, _v)

import numpy as np  # noqa: E402

from attnphase.model import ModelParams  # noqa: E402
from attnphase.phase import continuation as cont, diagram as diagram_mod, phase_diagram  # noqa: E402
from attnphase.phase.diagram import DEFAULT_ALPHAS, DEFAULT_OMEGAS  # noqa: E402
from attnphase.theory import split_integrator  # noqa: E402

rows: list[dict] = []
current: list[list[float]] = []
orig_iterate = split_integrator.fixed_point.iterate
orig_call = diagram_mod._Counting.__call__


def iterate(*a, **kw):
    seen: list = []
    nt = kw.get("newton")

    def newton(X, FX, rows_, residuals):
        seen[:] = [float(r) for r in residuals[0] if not np.isnan(r)]
        return nt(X, FX, rows_, residuals) if nt is not None else np.full_like(X, np.nan)

    kw["newton"] = newton
    run = orig_iterate(*a, **kw)
    current.append(seen + [float(run.residual[0])])
    return run


def counting(self, params, alpha, branch, **kw):
    who = sys._getframe(2).f_code.co_name
    current.clear()
    t0 = time.process_time()
    s = orig_call(self, params, alpha, branch, **kw)
    rows.append(dict(omega=params.omega, alpha=alpha, branch=branch, who=who, nodes=kw.get("nodes"),
                     converged=bool(s.converged), state=cont.point_state(s).value,
                     iterations=int(s.iterations or 0), cpu=time.process_time() - t0,
                     residuals=[list(h) for h in current]))
    return s


split_integrator.fixed_point.iterate = iterate
diagram_mod._Counting.__call__ = counting


def stop_step(r: list[float], K: int, W: int, drop: float) -> int | None:
    """First step k >= K at which the last W residuals made no progress by ``drop`` on the best before."""
    for k in range(max(K, W + 1), len(r) + 1):
        if min(r[k - W:k]) > drop * min(r[:k - W]):
            return k
    return None


def evaluate(data: list[dict], K: int, W: int, drop: float) -> tuple[int, int, int]:
    """(converged solves the test would stop, failed solves it stops, steps saved on the failed ones)."""
    bad = hit = saved = 0
    for d in data:
        for h in d["residuals"]:
            k = stop_step(h, K, W, drop)
            if d["converged"] and k is not None and k < len(h):
                bad += 1
            if not d["converged"] and k is not None and k < len(h):
                hit, saved = hit + 1, saved + len(h) - k
    return bad, hit, saved


if __name__ == "__main__":
    out, i0, i1 = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    step = int(sys.argv[4]) if len(sys.argv) > 4 else 2
    omegas = np.array(DEFAULT_OMEGAS)[i0:i1 + 1:step]
    c0 = time.process_time()
    phase_diagram(ModelParams(), omegas, DEFAULT_ALPHAS, workers=1)
    print(f"omegas {list(omegas)} CPU {time.process_time() - c0:.1f} s load {os.getloadavg()}")
    with open(out, "w") as f:
        json.dump(rows, f)
