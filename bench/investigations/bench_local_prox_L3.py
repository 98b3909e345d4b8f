"""L = 3 positional state: a fixed point of the map with a LOCAL prox? (issue 11, item B; experiment)

The finite-d L = 3 positional state (q ≈ 0.105, m ≈ 0.22, θ ≈ 0.02; docs/notes/2026-12-05-theory-general.md) has no fixed point of
the §8 map with the GLOBAL prox. A local minimum of the training loss is described (if at all) by the same
equations with the Moreau minimiser restricted to the basin the minimiser's samples sit in. Here the prox is
replaced by the local minimum reached by modified Newton from the student's own field ω (the basin of the
"positional attention" h ≈ ω; no −ω, permutation, teacher or random starts), and the map is iterated
(:func:`attnphase.theory.engine.solve_batch`, global-prox call sites patched to the local one for this process
only, ``full_prox_every=1``) from finite-d-like states, unpinned (``free``) and pinned (θ̂ = 0, ``positional``).

The patch: ``prox_general.prox_pair`` (what ``channel_general.channel`` calls without a warm start) is swapped
for :func:`local_pair` before the engine compiles its map. Not a library option: an experiment.

Usage: ``python bench/investigations/bench_local_prox_L3.py [--points 1024 --scrambles 4 --alpha 1]``.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np

from attnphase.model import ModelParams
from attnphase.theory import prox_general as PG
from attnphase.theory.engine import QMCConfig, solve_batch
from attnphase.theory.state import OrderParams

P3 = ModelParams(L=3, A=[[0.6, 0.2, 0.2], [0.2, 0.6, 0.2], [0.2, 0.2, 0.6]], omega=0.3)
LOCAL_STEPS = 40


def local_pair(w, h_star, T, V, sigma2, offsets):
    """Local Moreau minimiser: modified Newton from ω (``LOCAL_STEPS`` steps, stopped at GTOL); the "second"
    minimiser returned is its mirror image (unused with ``full_prox_every=1``)."""
    h, F, gn = PG._newton(w, w, T, jnp.linalg.inv(V), sigma2, LOCAL_STEPS, PG.GTOL)
    return h, F, gn, -h


def start(direction, q=0.105, m=0.22, theta=0.02, V=16.0) -> OrderParams:
    u = np.asarray(direction, float) / np.linalg.norm(direction)
    return OrderParams(np.array([[q]]), m * u[None, :], np.array([[theta]]), np.array([[V]]))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--alpha", type=float, default=1.0)
    ap.add_argument("--points", type=int, default=1024)
    ap.add_argument("--scrambles", type=int, default=4)
    ap.add_argument("--damping", type=float, default=0.5)
    ap.add_argument("--out", type=Path, default=None)
    a = ap.parse_args(argv)
    PG.prox_pair = local_pair          # the experiment (module docstring); this process only
    cfg = QMCConfig(points=a.points, scrambles=a.scrambles, coarse=0)
    rows = []
    for branch in ("free", "positional"):
        for name, u in (("(2,-1,-1)", (2, -1, -1)), ("e1", (1, 0, 0))):
            for V in (16.0, 27.0):
                t = time.perf_counter()
                x0 = start(u, V=V, theta=0.02 if branch == "free" else 0.0)
                s = solve_batch(P3, [a.alpha], branch, init=x0, qmc_config=cfg, max_steps=300, damping=a.damping,
                                anderson=0, full_prox_every=1, significance=0.0)[0]
                d = s.to_dict()
                last = s.x if s.converged else s.last
                row = dict(branch=branch, M_start=name, V_start=V, status=d["status"], iterations=d["iterations"],
                           residual=d["residual"], **{k: d.get(k) for k in ("q", "m", "theta", "V", "eps_g", "e_t")},
                           **{f"{k}_err": d.get(f"{k}_err") for k in ("q", "m", "theta", "e_t")},
                           M=np.asarray(last.M).tolist() if last is not None else None,
                           wall_s=time.perf_counter() - t)
                rows.append(row)
                print(json.dumps(row, default=float), flush=True)
    if a.out:
        a.out.write_text(json.dumps(dict(alpha=a.alpha, points=a.points, scrambles=a.scrambles, rows=rows),
                                    indent=1, default=float))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
