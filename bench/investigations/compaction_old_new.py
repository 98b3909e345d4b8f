"""The split-map program with the Newton loops' old compaction (``newton_xla`` of a base checkout: one
compaction after iteration 4, only if the active elements fit) against this tree's (compaction as soon as they
fit, two levels), in ONE process, interleaved (old, new, old, new, …) so that the load of a shared machine hits
both alike; on the 4 points of ``split_eval_breakdown.py``, global and fast evaluations; checks the outputs are
bitwise equal. Issue 34 item 3, docs/notes/2026-12-06-diagram-evaluation.md.

    python bench/investigations/compaction_old_new.py OLD_CHECKOUT [--rounds 10] [--reps 5]
"""
from __future__ import annotations

import argparse
import importlib.util
import os
import sys
import time
from functools import partial
from pathlib import Path

for _k, _v in {"OMP_NUM_THREADS": "1", "XLA_FLAGS": "--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1"}.items():
    os.environ.setdefault(_k, _v)

import jax  # noqa: E402
import numpy as np  # noqa: E402

from attnphase.model import ModelParams  # noqa: E402
from attnphase.theory import newton_xla, split_integrator as si, split_xla  # noqa: E402
from attnphase.theory.solver import solve_point  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
from split_eval_breakdown import POINTS, _orig, _spy, captured  # noqa: E402




def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("old", type=Path)
    ap.add_argument("--rounds", type=int, default=10)
    ap.add_argument("--reps", type=int, default=5)
    a = ap.parse_args()
    spec = importlib.util.spec_from_file_location("attnphase.theory._newton_xla_old",
                                                  a.old / "src/attnphase/theory/newton_xla.py")
    old = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(old)
    rule = si.make_rule(4)
    tot = {(c, t): 0.0 for c in ("old", "new") for t in ("global", "fast")}
    for om, al, br in POINTS:
        p = ModelParams(omega=om)
        x = si.to_vector(solve_point(p, al, br, nodes=4, stability=False).x)
        F = si.SplitMap(p, al, br, rule, fast=True)
        F.hats(x)
        split_xla._compiled = _spy
        captured.clear()
        F.hats(x, global_search=True)
        F.hats(x * (1 + 3e-3), global_search=False)      # a fast evaluation one small step away
        split_xla._compiled = _orig
        row = []
        for tag, (key, args) in zip(("global", "fast"), captured[-2:]):
            fns, outs = {}, {}
            with jax.enable_x64(True):
                dev = jax.device_put(args)
                for name, mod in (("old", old), ("new", newton_xla)):
                    saved = split_xla._newton_solve, split_xla.COMPACT
                    split_xla._newton_solve, split_xla.COMPACT = mod.solve, mod.COMPACT
                    G, gl, bisect, K, zmax = key
                    fn = jax.jit(partial(split_xla._program, G=G, gl=gl, bisect=bisect, K=K, zmax=zmax))
                    outs[name] = [np.asarray(o) for o in fn(*dev)]     # traced and compiled under the patch
                    split_xla._newton_solve, split_xla.COMPACT = saved
                    fns[name] = fn
                t = {"old": 0.0, "new": 0.0}
                for _ in range(a.rounds):
                    for name in ("old", "new"):
                        t0 = time.process_time()
                        for _ in range(a.reps):
                            jax.block_until_ready(fns[name](*dev))
                        t[name] += time.process_time() - t0
            same = all(np.array_equal(u, v) for u, v in zip(outs["old"], outs["new"]))
            n = a.rounds * a.reps
            for name in t:
                tot[(name, tag)] += t[name] / n
            row.append(f"{tag} {t['old'] / n * 1e3:.2f} → {t['new'] / n * 1e3:.2f} ms "
                       f"({t['old'] / t['new']:.2f}×) bitwise equal: {same}")
        print(f"ω = {om}, α = {al} {br}: " + "; ".join(row), flush=True)
    for tag in ("global", "fast"):
        print(f"sum over the points, {tag}: old / new = {tot[('old', tag)] / tot[('new', tag)]:.3f}")
    print("load:", open("/proc/loadavg").read().split()[:3])


if __name__ == "__main__":
    main()
