"""Timeline of one `attnphase theory phase-diagram` run, per process (issue 34 item 3): when each process
started, imported the heavy modules (the plots, the theory solver, the diagram), when the worker pool was
created, each branch job's start and end in its worker (wall and CPU), the figures, the end. An import hook
(this file runs again as ``__mp_main__`` in every spawned worker) wraps the diagram's jobs and the figure
calls; every event is a line ``pid, event, wall, cpu`` in TIMELINE.csv. Prints the summary.

    python bench/investigations/diagram_cli_timeline.py TIMELINE.csv OUT_DIR [CLI OPTIONS ...]
"""
from __future__ import annotations

import functools
import importlib.abc
import os
import sys
import time

LOG = os.environ.setdefault("DIAGRAM_TIMELINE", os.path.abspath(sys.argv[1]) if len(sys.argv) > 1 else "")


def event(name: str) -> None:
    with open(LOG, "a") as f:
        f.write(f"{os.getpid()},{name},{time.time():.4f},{time.process_time():.4f}\n")


def _started() -> float:
    """Wall time this process was created (/proc: clock ticks after boot)."""
    ticks = int(open(f"/proc/{os.getpid()}/stat").read().rsplit(")", 1)[1].split()[19])
    boot = next(float(x.split()[1]) for x in open("/proc/stat") if x.startswith("btime"))
    return boot + ticks / os.sysconf("SC_CLK_TCK")


if __name__ == "__main__":
    open(LOG, "w").close()
with open(LOG, "a") as _f:
    _f.write(f"{os.getpid()},process created,{_started():.4f},0\n")
event("script start")

WATCH = {"attnphase.plots", "attnphase.theory.solve", "attnphase.phase.diagram", "jax", "matplotlib.pyplot"}


def _wrap(mod) -> None:
    """The diagram's jobs and the figure calls, timed."""
    def timed(fn, name):
        @functools.wraps(fn)
        def inner(*a, **k):
            event(f"{name} start")
            try:
                return fn(*a, **k)
            finally:
                event(f"{name} end")
        return inner
    if mod.__name__ == "attnphase.phase.diagram":
        mod._branch_job = timed(mod._branch_job, "branch job")
        mod._assemble = timed(mod._assemble, "assemble")
        mod._run_parallel = timed(mod._run_parallel, "parallel")
    if mod.__name__ == "attnphase.plots":
        mod.plot_phase_diagram = timed(mod.plot_phase_diagram, "plot")
        mod.save_figure = timed(mod.save_figure, "save figure")


class _Hook(importlib.abc.MetaPathFinder):
    """Times the import of the modules in WATCH and wraps :func:`_wrap`'s functions once they are loaded."""

    def find_spec(self, name, path, target=None):
        if name not in WATCH:
            return None
        sys.meta_path.remove(self)
        try:
            spec = importlib.util.find_spec(name)
        finally:
            sys.meta_path.insert(0, self)
        if spec is None or spec.loader is None:
            return None
        load = spec.loader.exec_module

        def exec_module(module):
            event(f"import {name} start")
            load(module)
            _wrap(module)
            event(f"import {name} end")
        spec.loader.exec_module = exec_module
        return spec


import importlib.util  # noqa: E402

sys.meta_path.insert(0, _Hook())

if __name__ == "__main__":
    import concurrent.futures as cf

    init = cf.ProcessPoolExecutor.__init__

    def pool_init(self, *a, **k):
        event("pool created")
        init(self, *a, **k)
    cf.ProcessPoolExecutor.__init__ = pool_init
    out = sys.argv[2]
    from attnphase.cli import main   # noqa: E402
    event("cli imported")
    sys.argv = ["attnphase", "theory", "phase-diagram", "--out", out, *sys.argv[3:]]
    try:
        main()
    except SystemExit:
        pass
    event("end")
    import pandas as pd
    t = pd.read_csv(LOG, names=["pid", "event", "wall", "cpu"])
    t0 = t["wall"].min()
    t["t"] = (t["wall"] - t0).round(2)
    parent = os.getpid()
    for pid, g in t.groupby("pid", sort=False):
        who = "parent" if pid == parent else f"worker {pid}"
        jobs = g[g["event"] == "branch job end"]
        starts = g[g["event"] == "branch job start"]
        print(f"{who}: created {g['t'].min():.2f} s, CPU at end {g['cpu'].max():.2f} s")
        for _, r in g[~g["event"].str.startswith(("branch job", "assemble"))].iterrows():
            print(f"   {r['t']:8.2f} s  cpu {r['cpu']:7.2f}  {r['event']}")
        if len(jobs):
            print(f"   branch jobs: {len(jobs)}, first start {starts['t'].min():.2f} s (cpu {starts['cpu'].min():.2f}),"
                  f" first end {jobs['t'].min():.2f} s, last end {jobs['t'].max():.2f} s")
