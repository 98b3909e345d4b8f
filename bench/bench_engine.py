"""Benchmark of the general JAX theory engine (issue 11): one L = 2 point per branch and one L = 3 point at
4096 × 4 (fixed size), the code now against the code of an earlier commit (``--before REV``: its ``src`` tree,
extracted with ``git archive``) IN THE SAME RUN: each side runs in its own worker process (compilation done
before timing, ``--reps`` timed solves, the minimum reported), the two sides alternating; their values are
compared in units of the integration standard error. Part ``batch``: a vmapped batch of L = 2 points against
separate solves, at each QMC size of ``--batch-sizes`` (a tiny one, where per-call overhead is visible, and the
default). Part ``adaptive``: the error-controlled default size on one positional point (slow, ~20 min).

Appends a "Measured (run started …)" block to the section ``TITLE`` at the END of docs/notes/benchmarks-log.md (the
prediction written there before measuring and earlier runs are kept).
Usage: python bench/bench_engine.py [--before b8b6d31] [--reps 2] [--batch 64] [--batch-sizes 64x2,4096x4]
       [--parts points,batch,adaptive] [--cases L2-semantic,L2-positional,L3-semantic]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import jax
import numpy as np

from attnphase.model import ModelParams
from attnphase.theory.engine import QMCConfig, solve, solve_batch
from _revision import src_tree

TITLE = "## General theory engine: the unrolled prox (issue 11, helper hA)"
DOC = Path(__file__).resolve().parents[1] / "docs" / "notes" / "benchmarks-log.md"
ROOT = Path(__file__).resolve().parents[1]
BEFORE = "b8b6d31"
"""The commit before the unrolled prox (main at the start of helper hA's work)."""
QUANTITIES = ("q", "m", "theta", "V", "eps_g", "e_t")
L3_A = ((0.6, 0.2, 0.2), (0.2, 0.6, 0.2), (0.2, 0.2, 0.6))
CASES = {"L2-semantic": ("L = 2, semantic", dict(omega=0.3), "semantic"),
         "L2-positional": ("L = 2, positional", dict(omega=0.3), "positional"),
         "L3-semantic": ("L = 3, r = 1, semantic", dict(L=3, A=L3_A), "semantic")}


def _timed(f):
    """(result, wall seconds); the CPU seconds of this process (all threads) go to ``_timed.cpu``."""
    t, c = time.perf_counter(), time.process_time()
    out = f()
    _timed.cpu = time.process_time() - c
    return out, time.perf_counter() - t


def _worker(case: str, reps: int) -> None:
    """One side of the comparison (run in its own process, with the tree under test first on the path):
    compile every shape of the case, then ``reps`` timed solves at 4096 × 4; prints one JSON line."""
    _, kw, br = CASES[case]
    p, cfg = ModelParams(**kw), QMCConfig()
    for c in (QMCConfig(points=cfg.coarse), cfg):
        solve(p, 2.0, br, qmc_config=c, max_steps=2, full_prox_every=2)
    best = None
    for _ in range(reps):
        s, t = _timed(lambda: solve(p, 2.0, br, qmc_config=cfg))
        if best is None or t < best[1]:
            best = (s, t, _timed.cpu)
    s, t, c = best
    print(json.dumps({"wall": t, "cpu": c, "status": s.status.value, "iterations": s.iterations,
                      "full": s.full_prox_calls, "values": {k: float(s.values[k]) for k in QUANTITIES},
                      "errors": {k: float(s.errors[k]) for k in QUANTITIES}}))


def _run_worker(src: Path, case: str, reps: int) -> dict:
    env = {**os.environ, "PYTHONPATH": str(src)}
    out = subprocess.run([sys.executable, __file__, "--worker", case, "--reps", str(reps)], env=env,
                         check=True, capture_output=True, text=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def _points(a, record) -> None:
    """Each case, the code now against ``--before``, in alternating worker processes."""
    with tempfile.TemporaryDirectory() as tmp:
        sides = {"now": ROOT / "src"}
        if a.before:
            sides["before"] = src_tree(a.before, Path(tmp))
        for case, (name, _, _) in CASES.items():
            if case not in a.cases.split(","):
                continue
            res = {tag: _run_worker(src, case, a.reps) for tag, src in sides.items()}
            for tag, r in res.items():
                v, e = r["values"], r["errors"]
                record(f"one point, {name}, α = 2, 4096 x 4, {tag}" + (f" ({a.before})" if tag == "before" else ""),
                       f"{r['status']}, {r['iterations']} it. ({r['full']} full), q = {v['q']:.5f} ± {e['q']:.5f}, "
                       f"e_t = {v['e_t']:.6f}", f"{r['wall']:.2f} s (CPU {r['cpu']:.2f} s)")
            if len(res) == 2:
                n, b = res["now"], res["before"]
                dev = max(abs(n["values"][k] - b["values"][k]) / b["errors"][k] for k in QUANTITIES
                          if b["errors"][k] > 0)
                record(f"ratio before / now, {name} (best of {a.reps})",
                       f"values: max abs(now − before) = {dev:.1e} s.e. (q, m, θ, V, ε_g, e_t)",
                       f"**{b['wall'] / n['wall']:.2f}x** (CPU {b['cpu'] / n['cpu']:.2f}x)")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--batch-sizes", default="64x2,4096x4", help="QMC sizes (points x scrambles) of the batch part")
    ap.add_argument("--reps", type=int, default=2, help="timed repetitions of each point (the minimum is kept)")
    ap.add_argument("--before", default=BEFORE, help="git revision to compare with ('' for none)")
    ap.add_argument("--parts", default="points,batch", help="comma-separated: points, batch, adaptive")
    ap.add_argument("--cases", default=",".join(CASES), help=f"comma-separated cases of part points: {', '.join(CASES)}")
    ap.add_argument("--worker", default=None, help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.worker:
        _worker(a.worker, a.reps)
        return
    parts = set(a.parts.split(","))
    load0 = os.getloadavg()
    # to the second: two runs started in the same minute (bench/gpu_session.sh runs two in a row) would
    # otherwise share a header, and the second would overwrite the first's block
    stamp = time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime())
    rows: list = []

    def record(*row):
        rows.append(row)
        print(" | ".join(row), flush=True)
        _write(rows, load0, stamp)

    if "points" in parts:
        _points(a, record)
    p2 = ModelParams(omega=0.3)
    if "batch" in parts:
        for size in a.batch_sizes.split(","):
            n, S = (int(v) for v in size.split("x"))
            _batch(p2, a.batch, QMCConfig(points=n, scrambles=S), record)
    if "adaptive" in parts:
        _adaptive(p2, record)


def _adaptive(p2, record) -> None:
    """The error-controlled default size on the positional point (ω = 0.3, α = 2) whose relative s.e. at 4096 × 4
    is ~8e-3 (q, V), against the fixed default size in the same run."""
    fixed, tf = _timed(lambda: solve(p2, 2.0, "positional", qmc_config=QMCConfig()))
    cf = _timed.cpu
    s, t = _timed(lambda: solve(p2, 2.0, "positional"))
    sizes = ", ".join(f"{e['points']} x {e['scrambles']} ({e['worst']} {e['rse']:.1e}, {e['iterations']} it.)"
                      for e in s.resolution["sizes"])
    record("one point, L = 2, positional, α = 2, fixed 4096 x 4",
           f"{fixed.status.value}, q = {fixed.values['q']:.5f} ± {fixed.errors['q']:.5f}, "
           f"V = {fixed.values['V']:.4f} ± {fixed.errors['V']:.4f}", f"{tf:.1f} s (CPU {cf:.1f} s)")
    record("the same point, default rule (target 5e-3/3)",
           f"{s.status.value}, met {s.resolution['met']}: {sizes}; q = {s.values['q']:.5f} ± {s.errors['q']:.5f}, "
           f"V = {s.values['V']:.4f} ± {s.errors['V']:.4f}", f"{t:.1f} s (CPU {_timed.cpu:.1f} s)")


def _batch(p2, n_points, cfg, record) -> None:
    """A vmapped batch against separate solves (same points) at the QMC size ``cfg``, compiled before timing:
    the batch runs once untimed (its first call, which compiles every row count its compaction meets, is
    reported on its own) and one separate solve compiles the separate solves' shapes. Before 2026-12-04 the
    warm-up was a 3-step batch per power of two, which missed shapes the full run meets: the "batch" times
    measured before then include compilation (~5 s at 64 × 2 on the CPU, and on the GPU)."""
    alphas = np.linspace(1.2, 2.4, n_points)
    _, t_cold = _timed(lambda: solve_batch(p2, alphas, "semantic", qmc_config=cfg))   # compiles what it meets
    solve(p2, float(alphas[0]), "semantic", qmc_config=cfg)                          # the separate solves' shapes
    batch, tb = _timed(lambda: solve_batch(p2, alphas, "semantic", qmc_config=cfg))
    cb = _timed.cpu
    single, ts = _timed(lambda: [solve(p2, float(x), "semantic", qmc_config=cfg) for x in alphas])
    cs = _timed.cpu
    agree = max(abs(b.values["e_t"] - s.values["e_t"]) / abs(s.values["e_t"]) for b, s in zip(batch, single)
                if b.converged and s.converged)
    nb = sum(b.converged for b in batch)
    size = f"{cfg.points} x {cfg.scrambles} QMC"
    record(f"vmapped batch of {n_points} L = 2 points (α ∈ [1.2, 2.4]), {size}, first call (compiles its shapes)",
           "", f"{t_cold:.1f} s")
    record(f"vmapped batch of {n_points} L = 2 points (α ∈ [1.2, 2.4]), {size}",
           f"{nb}/{n_points} converged, max {max(b.iterations for b in batch)} it.", f"{tb:.2f} s (CPU {cb:.2f} s)")
    record(f"{n_points} separate solves, same points, {size}", f"max rel. e_t difference {agree:.1e}",
           f"{ts:.2f} s (CPU {cs:.2f} s)")
    record(f"throughput ratio batch / separate, {size}", "", f"**{ts / tb:.2f}x** (CPU {cs / cb:.2f}x)")


def _accelerator() -> str:
    """`` and a <device kind>`` for an accelerator JAX runs on, else the development VM's description."""
    dev = jax.devices()[0]
    return " (shared development VM)" if dev.platform == "cpu" else f" and a {dev.device_kind} ({dev.platform})"


def _write(rows, load0, stamp) -> None:
    load1 = os.getloadavg()
    header = f"### Measured (run started {stamp})"
    text = [header, "",
            f"Machine: {platform.machine()} {os.cpu_count()} CPUs{_accelerator()}, JAX {jax.__version__} "
            f"backend {jax.default_backend()}, load average {load0[0]:.1f} before / {load1[0]:.1f} now.",
            "", "| what | outcome | time |", "|---|---|---|"] + [f"| {w} | {o} | {t} |" for w, o, t in rows]
    doc = DOC.read_text()
    body = "\n".join(text) + "\n"
    if header in doc:                                   # this run's block (the section is the file's last)
        doc = doc[:doc.index(header)] + body
    elif TITLE in doc:
        doc = doc.rstrip("\n") + "\n\n" + body
    else:
        doc = doc.rstrip("\n") + "\n\n" + TITLE + "\n\n" + body
    DOC.write_text(doc)


if __name__ == "__main__":
    main()
