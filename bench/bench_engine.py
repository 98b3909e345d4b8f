"""Benchmark of the general JAX theory engine (issue 11): one L = 2 point and one L = 3 point at the default QMC
size, and a vmapped batch of 64 L = 2 points against 64 separate solves (same QMC size), in the same run.

Appends (or replaces) the "## General theory engine (QMC, JAX)" section at the END of docs/benchmarks.md.
Usage: python bench/bench_engine.py [--batch 64] [--batch-points 256]
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
from attnphase.theory.engine import QMCConfig, solve, solve_batch

TITLE = "## General theory engine (QMC, JAX)"
DOC = Path(__file__).resolve().parents[1] / "docs" / "benchmarks.md"


def _timed(f):
    t = time.perf_counter()
    out = f()
    return out, time.perf_counter() - t


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--batch-points", type=int, default=256)
    a = ap.parse_args()
    load0 = os.getloadavg()
    rows: list = []

    def record(*row):
        rows.append(row)
        print(" | ".join(row), flush=True)
        _write(rows, load0)

    p2 = ModelParams(omega=0.3)
    p3 = ModelParams(L=3, A=((0.6, 0.2, 0.2), (0.2, 0.6, 0.2), (0.2, 0.2, 0.6)))
    cfg = QMCConfig(points=a.batch_points, scrambles=2)
    alphas = np.linspace(1.2, 2.4, a.batch)
    solve_batch(p2, alphas, "semantic", qmc_config=cfg, max_steps=1)                         # compile
    solve(p2, 2.0, "semantic", qmc_config=cfg, max_steps=1)
    batch, tb = _timed(lambda: solve_batch(p2, alphas, "semantic", qmc_config=cfg))
    single, ts = _timed(lambda: [solve(p2, float(x), "semantic", qmc_config=cfg) for x in alphas])
    agree = max(abs(b.values["e_t"] - s.values["e_t"]) / abs(s.values["e_t"]) for b, s in zip(batch, single)
                if b.converged and s.converged)
    nb = sum(b.converged for b in batch)
    record(f"vmapped batch of {a.batch} L = 2 points (α ∈ [1.2, 2.4]), {a.batch_points} x 2 QMC",
           f"{nb}/{a.batch} converged, max {max(b.iterations for b in batch)} it.", f"{tb:.1f} s")
    record(f"{a.batch} separate solves, same points", f"max rel. e_t difference {agree:.1e}", f"{ts:.1f} s")
    record("throughput ratio batch / separate", "", f"**{ts / tb:.2f}x**")
    for name, p in (("L = 2, r = 1, semantic, α = 2", p2), ("L = 3, r = 1, semantic, α = 2", p3)):
        solve(p, 2.0, "semantic", max_steps=1)                                                # compile
        s, t = _timed(lambda: solve(p, 2.0, "semantic"))
        record(f"one point, {name}, default QMC (4096 x 4 scrambles)", f"{s.status.value}, {s.iterations} it.",
               f"{t:.1f} s")


def _write(rows, load0) -> None:
    load1 = os.getloadavg()
    text = [f"Machine: {platform.machine()} {os.cpu_count()} CPUs (shared development VM), JAX {jax.__version__} "
            f"backend {jax.default_backend()}, load average {load0[0]:.1f} before / {load1[0]:.1f} now.",
            "", "| what | outcome | time |", "|---|---|---|"] + [f"| {w} | {o} | {t} |" for w, o, t in rows]
    doc = DOC.read_text()
    body = "\n".join(text) + "\n"
    if TITLE in doc:
        head, tail = doc.split(TITLE, 1)
        pred = tail.split("### Measured", 1)[0]
        doc = head + TITLE + pred + "### Measured\n\n" + body
    else:
        doc = doc.rstrip("\n") + "\n\n" + TITLE + "\n\n" + body
    DOC.write_text(doc)

if __name__ == "__main__":
    main()
