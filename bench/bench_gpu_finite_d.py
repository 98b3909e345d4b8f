"""Finite-d training at the paper's scale on whatever device JAX uses (CPU here, a GPU on a lent machine):
L-BFGS and GD at d = 1000, α = 2 (n = 2000), ω = 0.3, 24 instances, float32 (full float32 products,
``attnphase.precision``), semantic start, exact test error — the compiled program ``simulate`` runs
(``simulate._build``), with the instances vmapped in groups of each size of ``--groups`` (1 = one after
another, :func:`simulate`'s choice at d = 1000, made for a CPU's cache; 24 = all in lockstep).

Per (optimizer, group): compile time (``lower().compile()``, no persistent cache), the fastest of ``--reps``
calls on all instances (GD: also a call with 0 steps, so that the cost per GD step is separated from the
fixed cost of drawing the data and the test error), iterations, convergence, e_t; and the largest relative
e_t difference between the group sizes (the same instances: instance i draws from ``fold_in(key(0), i)``).

Writes as each measurement ends: ``--json`` (all numbers) and a block ``<!-- finite-d-device-<backend> -->``
in docs/notes/benchmarks-log.md, section "Finite-d throughput and the paper's diagram (issue 10)" (the prediction for a
GPU is the hand-written block ``<!-- finite-d-device-prediction -->`` there).

    python bench/bench_gpu_finite_d.py                       # ≈ 4 min on the 2-core VM
    python bench/bench_gpu_finite_d.py --d 60 --instances 4 --groups 2 --optimizers lbfgs --no-doc   # plumbing
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import sys
import time
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np

from attnphase.data import n_samples
from attnphase.model import ModelParams
from attnphase.simulate import TrainConfig, _build, _knobs, _structure, instance_keys, instances_per_batch

DOC = Path(__file__).resolve().parents[1] / "docs" / "notes" / "benchmarks-log.md"
SECTION = "## Finite-d throughput and the paper's diagram (issue 10)"
P = ModelParams(omega=0.3)


def _load() -> float:
    return os.getloadavg()[0]


def _best(fn, reps: int):
    """Fastest wall time of ``reps`` calls (results blocked on) and the last result."""
    best, out = None, None
    for _ in range(reps):
        t = time.perf_counter()
        out = jax.block_until_ready(fn())
        dt = time.perf_counter() - t
        best = dt if best is None else min(best, dt)
    return best, out


def measure(optimizer: str, group: int, a, n: int, keys) -> dict:
    """Compile and time the training program for one optimizer and vmapped group size."""
    kn = _knobs(P, TrainConfig(optimizer=optimizer, steps=a.gd_steps), jnp.float32)
    fn = _build(_structure(P), a.d, n, optimizer, False, 2500, group, "exact")
    t = time.perf_counter()
    compiled = fn.lower(keys, kn).compile()
    row = dict(optimizer=optimizer, group=group, compile_s=time.perf_counter() - t)
    t = time.perf_counter()
    jax.block_until_ready(compiled(keys, kn))                # first call: allocation, transfers
    row["first_call_s"] = time.perf_counter() - t
    if optimizer == "gd":
        kn0 = _knobs(P, TrainConfig(optimizer="gd", steps=0), jnp.float32)
        row["zero_steps_s"], _ = _best(lambda: compiled(keys, kn0), a.reps)
    row["call_s"], out = _best(lambda: compiled(keys, kn), a.reps)
    out = {k: np.asarray(v) for k, v in out.items()}
    row.update(per_instance_s=row["call_s"] / a.instances, iterations_mean=float(out["iterations"].mean()),
               iterations_max=int(out["iterations"].max()), converged=int(out["converged"].sum()),
               e_t=out["e_t"].astype(float).tolist(), eps_g_mean=float(out["eps_g"].mean()), load=_load())
    if optimizer == "gd":
        row["per_instance_step_s"] = (row["call_s"] - row["zero_steps_s"]) / (a.instances * a.gd_steps)
        row["per_instance_5000_steps_s"] = row["zero_steps_s"] / a.instances + 5000 * row["per_instance_step_s"]
    return row


def agreement(rows: list[dict]) -> dict[str, float]:
    """Per optimizer: max relative e_t difference between the group sizes measured (same instances)."""
    out = {}
    for opt in {r["optimizer"] for r in rows}:
        e = [np.asarray(r["e_t"]) for r in rows if r["optimizer"] == opt]
        if len(e) > 1:
            out[opt] = float(max(np.max(np.abs(x - e[0]) / np.abs(e[0])) for x in e[1:]))
    return out


def machine() -> str:
    dev = jax.devices()[0]
    what = f"a {dev.device_kind} ({dev.platform})" if dev.platform != "cpu" else "the CPU"
    return (f"{platform.machine()} {os.cpu_count()} CPUs, training on {what}; JAX {jax.__version__}, "
            f"Python {platform.python_version()}")


def command(a) -> str:
    """The command line of this run (the ``--json`` path and ``--no-doc`` left out)."""
    args, skip = [], False
    for x in sys.argv[1:]:
        if skip or x == "--no-doc" or x.startswith("--json="):
            skip = False
            continue
        if x == "--json":
            skip = True
            continue
        args.append(x)
    return " ".join(["python bench/bench_gpu_finite_d.py", *args])


def block(rows: list[dict], a, n: int, stamp: str, load0: float) -> str:
    backend = jax.default_backend()
    L = [f"<!-- finite-d-device-{backend} -->",
         f"### Finite-d training on the {backend.upper()}: d = {a.d}, α = {a.alpha:g} (n = {n}), ω = 0.3, "
         f"{a.instances} instances, float32 (measured, run started {stamp})", "",
         f"Machine: {machine()}; load average {load0:.1f} at the start, {_load():.1f} now. "
         f"`{command(a)}` (best of {a.reps} calls after compiling). "
         f"Group = instances vmapped together (the rest one group after another in the same call); "
         f"`simulate` itself picks {instances_per_batch(n, P.L, a.d, 4, a.instances)} here (device-aware: one at a time on a CPU, all of them on a device). "
         "L-BFGS = `simulate`'s default (60 GD warm-up steps, optax L-BFGS to ‖∇R‖ ≤ 1e-6). Times include drawing "
         "the data and the exact test error (GD: the call with 0 steps is that fixed cost).", "",
         "| optimizer | group | compile (s) | first call (s) | call, all instances (s) | per instance | "
         "iterations mean / max | converged | e_t (mean) |", "|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        name = "L-BFGS" if r["optimizer"] == "lbfgs" else f"GD {a.gd_steps} steps"
        per = f"{1e3 * r['per_instance_s']:.1f} ms"
        if r["optimizer"] == "gd":
            per += (f"; {1e6 * r['per_instance_step_s']:.1f} µs per instance-step (fixed cost "
                    f"{r['zero_steps_s']:.2f} s): 5000 steps ≈ {r['per_instance_5000_steps_s']:.2f} s per instance")
        L.append(f"| {name} | {r['group']} | {r['compile_s']:.1f} | {r['first_call_s']:.2f} | {r['call_s']:.3f} | "
                 f"{per} | {r['iterations_mean']:.0f} / {r['iterations_max']} | {r['converged']}/{a.instances} | "
                 f"{np.mean(r['e_t']):.7f} |")
    agree = agreement(rows)
    if agree:
        L += ["", "Same instances, different group sizes: max relative e_t difference " +
              ", ".join(f"{k} {v:.1e}" for k, v in sorted(agree.items())) + "."]
    return "\n".join(L)


def write_block(text: str) -> None:
    """Replace (or add, at the end of the issue-10 section) the block that starts with ``text``'s marker; a
    block ends at the next ``<!-- `` marker line or the next ``## `` section."""
    doc = DOC.read_text()
    mark = text.split("\n", 1)[0]
    pat = re.compile(re.escape(mark) + r"\n.*?(?=\n<!-- |\n## |\Z)", re.S)
    if mark in doc:
        doc = pat.sub(lambda _: text, doc, count=1)
    else:
        start = doc.index(SECTION) + len(SECTION)
        nxt = doc.find("\n## ", start)
        end = len(doc) if nxt < 0 else nxt
        doc = doc[:end].rstrip("\n") + "\n\n" + text + "\n" + doc[end:]
    DOC.write_text(doc)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--d", type=int, default=1000)
    ap.add_argument("--alpha", type=float, default=2.0)
    ap.add_argument("--instances", type=int, default=24)
    ap.add_argument("--groups", default="24,1", help="vmapped group sizes, in the order measured")
    ap.add_argument("--optimizers", default="lbfgs,gd", help="in the order measured")
    ap.add_argument("--gd-steps", type=int, default=500, help="GD steps timed (against a 0-step call)")
    ap.add_argument("--reps", type=int, default=2)
    ap.add_argument("--json", default=None, help="write all numbers here (rewritten after each measurement)")
    ap.add_argument("--no-doc", action="store_true", help="do not write docs/notes/benchmarks-log.md")
    a = ap.parse_args()
    n = n_samples(a.alpha, a.d)
    keys = instance_keys(0, a.instances)
    stamp, load0 = time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime()), _load()
    rows: list[dict] = []
    print(f"backend {jax.default_backend()}, devices {jax.devices()}, d = {a.d}, n = {n}", flush=True)
    for opt in a.optimizers.split(","):
        for g in (int(x) for x in a.groups.split(",")):
            rows.append(measure(opt, g, a, n, keys))
            print(json.dumps({k: v for k, v in rows[-1].items() if k != "e_t"}), flush=True)
            if a.json:
                Path(a.json).write_text(json.dumps(dict(backend=jax.default_backend(), machine=machine(), d=a.d,
                                                        n=n, alpha=a.alpha, instances=a.instances, stamp=stamp,
                                                        rows=rows, agreement=agreement(rows)), indent=1))
            if not a.no_doc:
                write_block(block(rows, a, n, stamp, load0))
    print(block(rows, a, n, stamp, load0), flush=True)


if __name__ == "__main__":
    main()
