"""Old code against new code in one run (issue 34): throughput of ``simulate`` at d = 1000, α = 1 and one slice
of the paper's diagram, each variant in its own process (``PYTHONPATH`` = the variant's ``src``), interleaved
and repeated; the slice's Δe_t per cell compared between the two (same instances: same keys).

    python bench/bench_simulate_compare.py --old /path/to/old/src [--reps 2] [--alphas 0.01,0.5,1,1.5,2]

Writes the block ``<!-- issue34-measured -->`` of docs/notes/benchmarks-log.md ("Finite-d throughput for the paper-size
empirical diagram") and prints it. Throughput: a 24-instance call after a compiling call of the same shape;
wall and CPU time (all threads of the process). ``--xla-single-thread`` runs every variant with one XLA thread
(what each worker of a 2-process sweep should use on 2 cores).
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "notes" / "benchmarks-log.md"
MARK = "<!-- issue34-measured -->"
SINGLE = "--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1"


def worker(task: str, alphas: list[float], instances: int, d: int) -> dict:
    """In the variant's process: the timed calls, as JSON."""
    import numpy as np
    from attnphase.model import ModelParams
    from attnphase.simulate import TrainConfig, simulate
    P = ModelParams(omega=0.3)

    def call(alpha, init, k, seed=0):
        t, c = time.perf_counter(), time.process_time()
        r = simulate(P, alpha=alpha, d=d, config=TrainConfig(init=init, optimizer="lbfgs"), instances=k, seed=seed)
        return time.perf_counter() - t, time.process_time() - c, r

    if task == "throughput":
        first = call(1.0, "semantic", instances, seed=7)[0]
        wall, cpu, r = call(1.0, "semantic", instances)
        return dict(first=first, wall=wall, cpu=cpu, instances=instances, load=os.getloadavg()[0],
                    iterations=float(np.mean(r.iterations)), converged=int(r.converged.sum()))
    rows, t0, c0 = [], time.perf_counter(), time.process_time()
    for a in alphas:
        for init in ("semantic", "positional"):
            wall, cpu, r = call(a, init, instances)
            rows += [dict(alpha=a, omega=0.3, init=init, seed=0, instance=i, e_t=float(r.e_t[i]),
                          converged=bool(r.converged[i]), iterations=int(r.iterations[i])) for i in range(instances)]
    return dict(rows=rows, wall=time.perf_counter() - t0, cpu=time.process_time() - c0, load=os.getloadavg()[0])


def run_variant(src: str, task: str, a) -> dict:
    env = dict(os.environ, PYTHONPATH=src)
    if a.xla_single_thread:
        env["XLA_FLAGS"] = SINGLE
    cmd = [sys.executable, __file__, "--worker", task, "--alphas", a.alphas, "--instances",
           str(a.instances if task == "throughput" else a.slice_instances), "--d", str(a.d)]
    out = subprocess.run(cmd, env=env, capture_output=True, text=True, check=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def section(tp: dict, sl: dict, a, started: str) -> str:
    import pandas as pd
    sys.path.insert(0, str(ROOT / "src"))
    from attnphase.empirical_diagram import cell_table
    L = [MARK, f"### Measured: old against new, one run (started {started} UTC)", "",
         f"`python bench/bench_simulate_compare.py --old <old src> --reps {a.reps} --alphas {a.alphas}"
         f"{' --xla-single-thread' if a.xla_single_thread else ''}`; old = the main branch before the change "
         f"(vmapped groups by the 16 MiB cache rule), new = one instance at a time on the CPU. Each variant in "
         f"its own process, interleaved; machine: x86_64, {os.cpu_count()} cores shared with other jobs "
         f"(load average in the table); XLA threads: {'one per process' if a.xla_single_thread else 'default'}.", "",
         f"**Throughput at d = {a.d}, α = 1, ω = 0.3, semantic start, L-BFGS, {a.instances} instances per call "
         "(compiled beforehand):**", "",
         "| rep | variant | wall (s) | **instances/s (wall)** | CPU (s) | instances/CPU-s | L-BFGS its | load avg |",
         "|---|---|---|---|---|---|---|---|"]
    for rep, pair in enumerate(tp):
        for name in ("old", "new"):
            x = pair[name]
            L.append(f"| {rep} | {name} | {x['wall']:.2f} | **{x['instances'] / x['wall']:.2f}** | {x['cpu']:.2f} | "
                     f"{x['instances'] / x['cpu']:.2f} | {x['iterations']:.0f} | {x['load']:.1f} |")
    rw = [p["old"]["wall"] / p["new"]["wall"] for p in tp]
    rc = [p["old"]["cpu"] / p["new"]["cpu"] for p in tp]
    L += ["", f"Speed-up new/old per repeat: wall {', '.join(f'{r:.2f}×' for r in rw)}; CPU "
          f"{', '.join(f'{r:.2f}×' for r in rc)}.", ""]
    tabs = {k: cell_table(pd.DataFrame(sl[k]["rows"])) for k in ("old", "new")}
    m = tabs["old"].merge(tabs["new"], on=["omega", "alpha"], suffixes=("_old", "_new"))
    n_st = len(sl["new"]["rows"])
    L += [f"**Slice ω = 0.3, α ∈ {{{a.alphas}}}, both inits, {a.slice_instances} instances (same keys in both), "
          f"compilation included:** old {sl['old']['wall']:.0f} s wall / {sl['old']['cpu']:.0f} CPU-s, new "
          f"{sl['new']['wall']:.0f} s / {sl['new']['cpu']:.0f} CPU-s for {n_st} students (ratio wall "
          f"{sl['old']['wall'] / sl['new']['wall']:.2f}×, CPU {sl['old']['cpu'] / sl['new']['cpu']:.2f}×; load "
          f"{sl['old']['load']:.1f} / {sl['new']['load']:.1f}).", "",
          "| α | Δe_t old (± s.e.) | Δe_t new (± s.e.) | abs(new − old) / s.e. | max over instances of abs(e_t new / e_t old − 1) | converged old / new |",
          "|---|---|---|---|---|---|"]
    old = pd.DataFrame(sl["old"]["rows"]).set_index(["alpha", "init", "instance"])["e_t"]
    new = pd.DataFrame(sl["new"]["rows"]).set_index(["alpha", "init", "instance"])["e_t"]
    rel = (new / old - 1).abs()
    for _, x in m.iterrows():
        r = float(rel.xs(x.alpha, level="alpha").max())
        conv = lambda s: int(x[f"converged_semantic_{s}"] + x[f"converged_positional_{s}"])  # noqa: E731
        L.append(f"| {x.alpha:g} | {x.delta_e_t_old:+.3e} ± {x.delta_se_old:.1e} | {x.delta_e_t_new:+.3e} ± "
                 f"{x.delta_se_new:.1e} | {abs(x.delta_e_t_new - x.delta_e_t_old) / x.delta_se_old:.3f} | {r:.1e} | "
                 f"{conv('old')} / {conv('new')} of {2 * a.slice_instances} |")
    return "\n".join(L)


def write(text: str) -> None:
    body = DOC.read_text()
    pat = re.compile(re.escape(MARK) + r"\n.*?(?=\n<!-- |\n## |\Z)", re.S)
    body = pat.sub(lambda _: text, body) if MARK in body else body.rstrip() + "\n\n" + text + "\n"
    DOC.write_text(body)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--old", help="src directory of the old code")
    ap.add_argument("--new", default=str(ROOT / "src"))
    ap.add_argument("--reps", type=int, default=2)
    ap.add_argument("--instances", type=int, default=24)
    ap.add_argument("--slice-instances", type=int, default=16)
    ap.add_argument("--alphas", default="0.01,0.5,1,1.5,2")
    ap.add_argument("--d", type=int, default=1000)
    ap.add_argument("--xla-single-thread", action="store_true")
    ap.add_argument("--no-write", action="store_true")
    ap.add_argument("--worker", choices=("throughput", "slice"), help=argparse.SUPPRESS)
    a = ap.parse_args()
    alphas = [float(x) for x in a.alphas.split(",")]
    if a.worker:
        print(json.dumps(worker(a.worker, alphas, a.instances, a.d)))
        return
    started = f"{dt.datetime.now(dt.timezone.utc):%Y-%m-%d %H:%M}"
    srcs = dict(old=a.old, new=a.new)
    tp = []
    for rep in range(a.reps):
        order = ("old", "new") if rep % 2 == 0 else ("new", "old")
        tp.append({k: run_variant(srcs[k], "throughput", a) for k in order})
        print(json.dumps(tp[-1]), flush=True)
    sl = {k: run_variant(srcs[k], "slice", a) for k in ("old", "new")}
    text = section(tp, sl, a, started)
    print(text, flush=True)
    if not a.no_write:
        write(text)


if __name__ == "__main__":
    main()
