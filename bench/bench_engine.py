"""Benchmark of the general JAX theory engine (issue 11): one L = 2 point per branch and one L = 3 point at the
default QMC size with the current settings, the same L = 2 points with the settings before the speed work
(no coarse stage, 8 scout steps, derivatives by ``jax.hessian``) IN THE SAME RUN (ratios), and a vmapped batch
of L = 2 points against separate solves.

Appends a "Measured (run started …)" block to the section ``TITLE`` at the END of docs/benchmarks.md (the
prediction written there before measuring and earlier runs are kept).
Usage: python bench/bench_engine.py [--batch 16] [--batch-points 256] [--no-old] [--parts points,batch]
"""

from __future__ import annotations

import argparse
import os
import platform
import time
from contextlib import contextmanager, nullcontext
from pathlib import Path

import jax
import numpy as np

from attnphase.model import ModelParams
from attnphase.theory import engine
from attnphase.theory import prox_general as PG
from attnphase.theory.engine import QMCConfig, solve, solve_batch

TITLE = "## General theory engine: speed work (coarse-to-fine, short scouts, closed-form Hessian)"
DOC = Path(__file__).resolve().parents[1] / "docs" / "benchmarks.md"


def _timed(f):
    t = time.perf_counter()
    out = f()
    return out, time.perf_counter() - t


def _hessian_by_autodiff(h, w, T, Vinv, sigma2):
    f = lambda v: PG.objective(v, w, T, Vinv, sigma2)  # noqa: E731
    return f(h), jax.grad(f)(h), jax.hessian(f)(h)


@contextmanager
def _old_settings():
    """The prox as it was before the speed work (8 scout steps, jax.hessian); the map is re-traced."""
    saved = PG.SCOUT_STEPS, PG.derivatives
    PG.SCOUT_STEPS, PG.derivatives = 8, _hessian_by_autodiff
    engine._compiled_map.cache_clear()
    try:
        yield
    finally:
        PG.SCOUT_STEPS, PG.derivatives = saved
        engine._compiled_map.cache_clear()


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--batch", type=int, default=16)
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
    new, old = QMCConfig(), QMCConfig(coarse=0)
    times = {}
    for br in ("semantic", "positional") if "points" in parts else ():
        for tag, cfg in (("now", new), ("before", old)):
            if tag == "before" and a.no_old:
                continue
            ctx = _old_settings() if tag == "before" else nullcontext()
            with ctx:
                solve(p2, 2.0, br, qmc_config=QMCConfig(points=1024), max_steps=1)      # compile both sizes
                solve(p2, 2.0, br, max_steps=1)
                s, t = _timed(lambda: solve(p2, 2.0, br, qmc_config=cfg))
            times[br, tag] = t
            record(f"one point, L = 2, {br}, α = 2, 4096 x 4, settings {tag}",
                   f"{s.status.value}, {s.iterations} it., q = {s.values['q']:.5f} ± {s.errors['q']:.5f}",
                   f"{t:.1f} s")
        if (br, "before") in times:
            record(f"ratio before / now, L = 2 {br}", "", f"**{times[br, 'before'] / times[br, 'now']:.1f}x**")
    if "points" in parts:
        solve(p3, 2.0, "semantic", qmc_config=QMCConfig(points=1024), max_steps=1)
        solve(p3, 2.0, "semantic", max_steps=1)
        s, t = _timed(lambda: solve(p3, 2.0, "semantic"))
        record("one point, L = 3, r = 1, semantic, α = 2, 4096 x 4, settings now",
               f"{s.status.value}, {s.iterations} it.", f"{t:.1f} s")
    if "batch" in parts:
        _batch(p2, a, record)


def _batch(p2, a, record) -> None:
    """A vmapped batch against separate solves (same points); every row count the compacted batch can use is
    compiled before timing."""
    cfg = QMCConfig(points=a.batch_points, scrambles=2)
    alphas = np.linspace(1.2, 2.4, a.batch)
    n = a.batch
    while n >= 1:                                                                # compile every bucket
        solve_batch(p2, alphas[:n], "semantic", qmc_config=cfg, max_steps=1)
        n //= 2
    batch, tb = _timed(lambda: solve_batch(p2, alphas, "semantic", qmc_config=cfg))
    single, ts = _timed(lambda: [solve(p2, float(x), "semantic", qmc_config=cfg) for x in alphas])
    agree = max(abs(b.values["e_t"] - s.values["e_t"]) / abs(s.values["e_t"]) for b, s in zip(batch, single)
                if b.converged and s.converged)
    nb = sum(b.converged for b in batch)
    record(f"vmapped batch of {a.batch} L = 2 points (α ∈ [1.2, 2.4]), {a.batch_points} x 2 QMC",
           f"{nb}/{a.batch} converged, max {max(b.iterations for b in batch)} it.", f"{tb:.1f} s")
    record(f"{a.batch} separate solves, same points", f"max rel. e_t difference {agree:.1e}", f"{ts:.1f} s")
    record("throughput ratio batch / separate", "", f"**{ts / tb:.2f}x**")


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
