"""Benchmark of the general JAX theory engine (issue 11): one L = 2 point per branch and one L = 3 point at the
default QMC size with the current settings (warm prox starts, a full multi-start prox every
``FULL_PROX_EVERY`` evaluations and at certification), the same points with the full prox at EVERY evaluation
(``full_prox_every=1``, the scheme before) IN THE SAME RUN (ratios), and a vmapped batch of L = 2 points
against separate solves (64 vs 64 by default).

Appends a "Measured (run started …)" block to the section ``TITLE`` at the END of docs/benchmarks.md (the
prediction written there before measuring and earlier runs are kept).
Usage: python bench/bench_engine.py [--batch 64] [--batch-points 256] [--no-old] [--parts points,batch]
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

TITLE = "## General theory engine: warm prox starts, certified by the full prox (issue 11, speed)"
DOC = Path(__file__).resolve().parents[1] / "docs" / "benchmarks.md"


def _timed(f):
    """(result, wall seconds); the CPU seconds of this process (all threads) go to ``_timed.cpu`` — under a
    shared machine's load the CPU time is the steadier measure."""
    t, c = time.perf_counter(), time.process_time()
    out = f()
    _timed.cpu = time.process_time() - c
    return out, time.perf_counter() - t


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--batch-points", type=int, default=256)
    ap.add_argument("--no-old", action="store_true", help="skip the before-the-speed-work settings")
    ap.add_argument("--parts", default="points,batch", help="comma-separated: points, batch")
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
    times = {}
    cases = [("L = 2, " + br, p2, br) for br in ("semantic", "positional")] + [("L = 3, r = 1, semantic", p3, "semantic")]
    for name, p, br in cases if "points" in parts else ():
        for tag, every in (("now", engine.FULL_PROX_EVERY), ("full prox every call", 1)):
            if every == 1 and a.no_old:
                continue
            for c in (QMCConfig(points=cfg.coarse), cfg):                            # compile every shape
                solve(p, 2.0, br, qmc_config=c, max_steps=2, full_prox_every=2)
            s, t = _timed(lambda: solve(p, 2.0, br, qmc_config=cfg, full_prox_every=every))
            times[name, tag] = t, _timed.cpu
            record(f"one point, {name}, α = 2, 4096 x 4, {tag}",
                   f"{s.status.value}, {s.iterations} it. ({s.full_prox_calls} full), q = {s.values['q']:.5f} "
                   f"± {s.errors['q']:.5f}, e_t = {s.values['e_t']:.6f}", f"{t:.1f} s (CPU {_timed.cpu:.1f} s)")
        if (name, "full prox every call") in times:
            (t1, c1), (t0, c0) = times[name, 'full prox every call'], times[name, 'now']
            record(f"ratio full-every-call / now, {name}", "", f"**{t1 / t0:.1f}x** (CPU {c1 / c0:.1f}x)")
    if "batch" in parts:
        _batch(p2, a, record)


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
