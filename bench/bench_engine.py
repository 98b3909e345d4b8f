"""Benchmark of the general JAX theory engine (issue 11): one L = 2 point per branch and one L = 3 point at
4096 × 4 (fixed size) with the current schedule of full multi-start prox evaluations (``FULL_PROX_EVERY``:
warm prox starts, a full evaluation on the first call of a stage, then only every ``FULL_PROX_EVERY`` calls
and at certification) against the schedule before (a full evaluation every 4th call) IN THE SAME RUN,
interleaved ``--reps`` times (the minimum of each is reported: the machine is shared); the error-controlled
default size (``QMCConfig.default()``) on one positional point (part ``adaptive``); and a vmapped batch of
L = 2 points against separate solves (64 vs 64 by default).

Appends a "Measured (run started …)" block to the section ``TITLE`` at the END of docs/benchmarks.md (the
prediction written there before measuring and earlier runs are kept).
Usage: python bench/bench_engine.py [--batch 64] [--batch-points 256] [--no-old] [--reps 2]
       [--parts points,adaptive,batch]
"""

from __future__ import annotations

import argparse
import os
import platform
import time
from pathlib import Path

import jax
import numpy as np

from attnphase.model import ModelParams
from attnphase.theory import engine
from attnphase.theory.engine import QMCConfig, solve, solve_batch

TITLE = "## General theory engine: error-controlled QMC size, fewer full prox evaluations (issue 11, helper hB)"
DOC = Path(__file__).resolve().parents[1] / "docs" / "benchmarks.md"


def _timed(f):
    """(result, wall seconds); the CPU seconds of this process (all threads) go to ``_timed.cpu`` — under a
    shared machine's load the CPU time is the steadier measure."""
    t, c = time.perf_counter(), time.process_time()
    out = f()
    _timed.cpu = time.process_time() - c
    return out, time.perf_counter() - t


BEFORE_EVERY = 4
"""The schedule before this bench's section: a full multi-start prox at least every 4th evaluation."""


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--batch-points", type=int, default=256)
    ap.add_argument("--reps", type=int, default=2, help="interleaved repetitions of each timed point")
    ap.add_argument("--no-old", action="store_true", help="skip the schedule before (full every 4th call)")
    ap.add_argument("--parts", default="points,adaptive,batch", help="comma-separated: points, adaptive, batch")
    a = ap.parse_args()
    parts = set(a.parts.split(","))
    load0 = os.getloadavg()
    stamp = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    rows: list = []

    def record(*row):
        rows.append(row)
        print(" | ".join(row), flush=True)
        _write(rows, load0, stamp)

    p2 = ModelParams(omega=0.3)
    p3 = ModelParams(L=3, A=((0.6, 0.2, 0.2), (0.2, 0.6, 0.2), (0.2, 0.2, 0.6)))
    cfg = QMCConfig()
    cases = [("L = 2, " + br, p2, br) for br in ("semantic", "positional")] + [("L = 3, r = 1, semantic", p3, "semantic")]
    schedules = [("now", engine.FULL_PROX_EVERY)] + ([] if a.no_old else [("before", BEFORE_EVERY)])
    for name, p, br in cases if "points" in parts else ():
        for c in (QMCConfig(points=cfg.coarse), cfg):                                # compile every shape
            solve(p, 2.0, br, qmc_config=c, max_steps=2, full_prox_every=2)
        best: dict = {}
        for _ in range(a.reps):
            for tag, every in schedules:
                s, t = _timed(lambda: solve(p, 2.0, br, qmc_config=cfg, full_prox_every=every))
                if tag not in best or t < best[tag][1]:
                    best[tag] = (s, t, _timed.cpu)
        for tag, every in schedules:
            s, t, c = best[tag]
            record(f"one point, {name}, α = 2, 4096 x 4, {tag} (full prox every {every})",
                   f"{s.status.value}, {s.iterations} it. ({s.full_prox_calls} full), q = {s.values['q']:.5f} "
                   f"± {s.errors['q']:.5f}, e_t = {s.values['e_t']:.6f}", f"{t:.1f} s (CPU {c:.1f} s)")
        if len(best) == 2:
            (_, t1, c1), (_, t0, c0) = best["before"], best["now"]
            record(f"ratio before / now, {name} (best of {a.reps})", "", f"**{t1 / t0:.2f}x** (CPU {c1 / c0:.2f}x)")
    if "adaptive" in parts:
        _adaptive(p2, record)
    if "batch" in parts:
        _batch(p2, a, record)


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


def _batch(p2, a, record) -> None:
    """A vmapped batch against separate solves (same points); every row count the compacted batch can use is
    compiled before timing."""
    cfg = QMCConfig(points=a.batch_points, scrambles=2)
    alphas = np.linspace(1.2, 2.4, a.batch)
    n = a.batch
    while n >= 1:                                                                # compile every bucket
        solve_batch(p2, alphas[:n], "semantic", qmc_config=cfg, max_steps=3, full_prox_every=2)
        n //= 2
    batch, tb = _timed(lambda: solve_batch(p2, alphas, "semantic", qmc_config=cfg))
    cb = _timed.cpu
    single, ts = _timed(lambda: [solve(p2, float(x), "semantic", qmc_config=cfg) for x in alphas])
    cs = _timed.cpu
    agree = max(abs(b.values["e_t"] - s.values["e_t"]) / abs(s.values["e_t"]) for b, s in zip(batch, single)
                if b.converged and s.converged)
    nb = sum(b.converged for b in batch)
    record(f"vmapped batch of {a.batch} L = 2 points (α ∈ [1.2, 2.4]), {a.batch_points} x 2 QMC",
           f"{nb}/{a.batch} converged, max {max(b.iterations for b in batch)} it.", f"{tb:.1f} s (CPU {cb:.1f} s)")
    record(f"{a.batch} separate solves, same points", f"max rel. e_t difference {agree:.1e}",
           f"{ts:.1f} s (CPU {cs:.1f} s)")
    record("throughput ratio batch / separate", "", f"**{ts / tb:.2f}x** (CPU {cs / cb:.2f}x)")


def _write(rows, load0, stamp) -> None:
    load1 = os.getloadavg()
    header = f"### Measured (run started {stamp})"
    text = [header, "",
            f"Machine: {platform.machine()} {os.cpu_count()} CPUs (shared development VM), JAX {jax.__version__} "
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
