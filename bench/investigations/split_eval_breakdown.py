"""Where one split-map evaluation's time goes (issue 34 item 3): the whole ``SplitMap.hats`` call against the
compiled XLA program alone on fixed arguments, for the fast (warm) and the global evaluation, at converged
diagram points (nodes = 4, one thread). Optionally (``--variants``) the program re-jitted with one fixed
iteration count changed (module constants of :mod:`attnphase.theory.split_xla`), its CPU and the change of
the sums against the default.

    python bench/investigations/split_eval_breakdown.py [--reps N] [--variants]
"""
from __future__ import annotations

import argparse
import os
import time

for _k, _v in {"OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1", "MKL_NUM_THREADS": "1",
               "XLA_FLAGS": "--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1"}.items():
    os.environ.setdefault(_k, _v)

import jax  # noqa: E402
import numpy as np  # noqa: E402

from attnphase.model import ModelParams  # noqa: E402
from attnphase.theory import split_integrator as si, split_xla  # noqa: E402
from attnphase.theory.solver import solve_point  # noqa: E402

POINTS = [(0.18, 1.5, "semantic"), (0.18, 0.75, "positional"), (0.34, 1.2, "semantic"), (0.02, 0.5, "positional")]
captured: list = []
_orig = split_xla._compiled


def _spy(*key):
    prog = _orig(*key)

    def call(*args):
        captured.append((key, args))
        return prog(*args)
    return call


def cpu(f, reps):
    f()
    t0 = time.process_time()
    for _ in range(reps):
        f()
    return (time.process_time() - t0) / reps * 1e3


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--reps", type=int, default=40)
    ap.add_argument("--variants", action="store_true")
    a = ap.parse_args()
    rule = si.make_rule(4)
    cases = []
    for om, al, br in POINTS:
        p = ModelParams(omega=om)
        sol = solve_point(p, al, br, nodes=4, stability=False)
        x = si.to_vector(sol.x)
        F = si.SplitMap(p, al, br, rule, fast=True)
        F.hats(x)
        split_xla._compiled = _spy
        captured.clear()
        F.hats(x, global_search=True)
        g_args = captured[-1]
        F.hats(x, global_search=False)
        f_args = captured[-1]
        split_xla._compiled = _orig
        cases.append((om, al, br, F, x, g_args, f_args))
        t_hg = cpu(lambda: F.hats(x, global_search=True), a.reps)
        t_hf = cpu(lambda: F.hats(x, global_search=False), a.reps)
        t_call = cpu(lambda: F(x), a.reps)
        out = []
        for key, args in (g_args, f_args):
            fn = _orig(*key)
            with jax.enable_x64(True):
                dev = jax.device_put(args)
                out.append(cpu(lambda: jax.block_until_ready(fn(*dev)), a.reps))
                r = fn(*dev)
                cnt = int(r[1])
        print(f"ω={om} α={al} {br}: K={g_args[0][3]} flagged={cnt} lines={g_args[1][0].size} | hats global "
              f"{t_hg:.2f} ms, fast {t_hf:.2f} ms, F(x) fast {t_call:.2f} ms | program alone global {out[0]:.2f} ms,"
              f" fast {out[1]:.2f} ms", flush=True)
    if not a.variants:
        return
    variants = [("default", {}), ("LINE_ITERS=20", {"LINE_ITERS": 20}), ("SWITCH_ITERS=8", {"SWITCH_ITERS": 8}),
                ("PROX_ITERS=25", {"PROX_ITERS": 25}), ("PROX_GRID=7", {"PROX_GRID": 7}),
                ("REPAIR_PASSES=1", {"REPAIR_PASSES": 1}), ("bisect=6", {"bisect": 6}),
                ("gl=2", {"gl": 2}), ("COMPACT none", {"COMPACT": ()})]
    base = {}
    for name, ch in variants:
        saved = {k: getattr(split_xla, k) for k in ch if hasattr(split_xla, k)}
        for k, v in ch.items():
            if hasattr(split_xla, k):
                setattr(split_xla, k, v)
        line = [name]
        try:
            for om, al, br, F, x, g_args, f_args in cases:
                for tag, (key, args) in (("G", g_args), ("f", f_args)):
                    G, gl, bisect, K, zmax = key
                    gl, bisect = ch.get("gl", gl), ch.get("bisect", bisect)
                    fn = jax.jit(lambda *aa: split_xla._program(*aa, G=G, gl=gl, bisect=bisect, K=K, zmax=zmax))
                    with jax.enable_x64(True):
                        dev = jax.device_put(args)
                        t0 = time.process_time()
                        jax.block_until_ready(fn(*dev))
                        tc = time.process_time() - t0
                        t = cpu(lambda: jax.block_until_ready(fn(*dev)), a.reps)
                        s = np.asarray(fn(*dev)[0])
                    b = base.setdefault((om, tag), s)
                    rel = np.max(np.abs(s - b)[[0, 1, 2, 3, 4, 6]] / (np.abs(b)[[0, 1, 2, 3, 4, 6]] + 1e-12))
                    line.append(f"{tag}{om}/{br[:3]} {t:.2f}ms d={rel:.1e}")
        finally:
            for k, v in saved.items():
                setattr(split_xla, k, v)
        print(" | ".join(line), f"(compile {tc:.1f}s)", flush=True)


if __name__ == "__main__":
    main()
