"""Throughput of a 200-task simulate sweep (d = 200) with the sweep's local executor vs naive loops.

    python bench/bench_sweep.py [--steps 20] [--instances 4] [--subprocess-sample 4]

* ``sweep``: ``run_sweep`` in this process: each task's instances in one vmapped call, compiled functions
  reused across tasks of equal shapes, every result committed to SQLite.
* ``naive``: a Python loop, one task at a time, one ``simulate(instances=1)`` call per instance, results
  kept in a list (no store).
* ``subprocess`` (sampled): one fresh ``python`` process per task (what a shell loop over a CLI does),
  timed on a few tasks and extrapolated to 200.

Grid: 5 α × 5 ω × 2 inits × 4 seeds = 200 tasks. Prints one JSON line per mode and a summary.
"""

from __future__ import annotations

import argparse
import json
import platform
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

import os


def sweep_toml(steps: int, instances: int, test_samples: int, layout: str = "grid") -> str:
    if layout == "seeds":   # 2 distinct compiled configurations only: executor throughput without recompiles
        return textwrap.dedent(f"""
        [sweep]
        name = "bench"
        output = "out"
        [[task]]
        kind = "simulate"
        seeds = 100
        instances = {instances}
        params = {{ d = 200, steps = {steps}, test_samples = {test_samples}, alpha = 1.0, omega = 0.3 }}
        grid = {{ init = ["semantic", "positional"] }}
        """)
    return textwrap.dedent(f"""
    [sweep]
    name = "bench"
    output = "out"
    [[task]]
    kind = "simulate"
    seeds = 4
    instances = {instances}
    params = {{ d = 200, steps = {steps}, test_samples = {test_samples} }}
    grid = {{ alpha = [0.2, 0.5, 1.0, 1.5, 2.0], omega = [0.1, 0.2, 0.3, 0.4, 0.5], init = ["semantic", "positional"] }}
    """)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--instances", type=int, default=4)
    ap.add_argument("--test-samples", type=int, default=2000)
    ap.add_argument("--subprocess-sample", type=int, default=4)
    ap.add_argument("--layout", choices=["grid", "seeds"], default="grid",
                    help="grid: 5 α × 5 ω × 2 inits × 4 seeds; seeds: 1 α × 1 ω × 2 inits × 100 seeds")
    ap.add_argument("--naive-tasks", type=int, default=200,
                    help="time the naive loop on this many tasks (spread over the sweep) and extrapolate")
    a = ap.parse_args()
    from attnphase.simulate import TrainConfig, simulate  # noqa: F401  (fails clearly if absent)
    from attnphase.sweeps import load, run_sweep
    from attnphase.sweeps.tasks import model_params

    tmp = Path(tempfile.mkdtemp(prefix="bench_sweep_"))
    f = tmp / "bench.toml"
    f.write_text(sweep_toml(a.steps, a.instances, a.test_samples, a.layout))
    sw = load(f)
    assert len(sw.tasks) == 200
    machine = f"{platform.machine()} {platform.processor()}, {os.cpu_count()} cpus, python {platform.python_version()}"
    out = {}

    t0 = time.perf_counter()
    counts = run_sweep(sw)
    t_sweep = time.perf_counter() - t0
    out["sweep"] = {"tasks": counts["ran"], "failed": counts["failed"], "seconds": t_sweep,
                    "tasks_per_s": counts["ran"] / t_sweep}
    print(json.dumps({"mode": "sweep", **out["sweep"]}), flush=True)

    t0 = time.perf_counter()
    results = []
    step = max(1, len(sw.tasks) // max(1, a.naive_tasks))
    naive_tasks = sw.tasks[::step][:a.naive_tasks]
    for cfg in naive_tasks:
        p = cfg["params"]
        tc = TrainConfig(init=p["init"], optimizer=p["optimizer"], lr=p["lr"], steps=p["steps"])
        for i in range(cfg["instances"]):
            r = simulate(model_params(cfg), alpha=p["alpha"], d=p["d"], config=tc, instances=1,
                         seed=cfg["seed"] * 1000 + i, test_samples=p["test_samples"])
            results.append(float(r.e_t[0]))
    t_naive = (time.perf_counter() - t0) * 200 / len(naive_tasks)
    out["naive"] = {"tasks_timed": len(naive_tasks), "seconds_extrapolated_to_200": t_naive,
                    "tasks_per_s": 200 / t_naive}
    print(json.dumps({"mode": "naive", **out["naive"]}), flush=True)

    k = a.subprocess_sample
    if k > 0:
        code = ("import json,sys; from attnphase.sweeps.tasks import execute; "
                "execute(json.loads(sys.argv[1]))")
        t0 = time.perf_counter()
        for cfg in sw.tasks[:k]:
            subprocess.run([sys.executable, "-c", code, json.dumps(cfg)], check=True)
        per = (time.perf_counter() - t0) / k
        out["subprocess"] = {"tasks_timed": k, "seconds_per_task": per, "extrapolated_seconds": 200 * per,
                             "tasks_per_s": 1 / per}
        print(json.dumps({"mode": "subprocess", **out["subprocess"]}), flush=True)

    print(f"machine: {machine}; layout={a.layout}, d=200, steps={a.steps}, instances={a.instances}, test_samples={a.test_samples}")
    print(f"sweep executor: {out['sweep']['tasks_per_s']:.2f} tasks/s; naive loop: "
          f"{out['naive']['tasks_per_s']:.2f} tasks/s; speed-up {t_naive / t_sweep:.2f}x")
    if "subprocess" in out:
        print(f"one process per task: {out['subprocess']['tasks_per_s']:.2f} tasks/s; speed-up "
              f"{out['subprocess']['extrapolated_seconds'] / t_sweep:.1f}x")


if __name__ == "__main__":
    main()
