"""Benchmark of a fresh process's latency (issue 11, helper hA): the CLI command
``attnphase theory point --integrator qmc --alpha 2 --omega 0.3 --branch semantic --qmc-points 4096
--scrambles 4 --json`` (L = 2, and L = 3 with A = [[0.6,0.2,0.2],[0.2,0.6,0.2],[0.2,0.2,0.6]]; ``split``: the
same L = 2 point with the default integrator, the split rule), each run in a
NEW Python process: first with an empty cache directory (``ATTNPHASE_XLA_CACHE``: JAX's compilation cache and
the stored programs of :mod:`attnphase.exported_programs`), then ``--repeats`` times with the directory the
first process filled — the code now against the code of an earlier commit (``--before REV``, its ``src`` tree)
IN THE SAME RUN, the two sides alternating. Each process's wall time and CPU time (user + system, from
``getrusage`` of the children) are measured from outside; the printed numbers of every process are compared
with the first one's (q, m, θ, V, ε_g, e_t and their errors; they must be identical).

Writes a "Measured (run started …)" block into the section ``TITLE`` of docs/notes/benchmarks-log.md, kept just before
the file's last section (bench_engine's, which stays last).
``--profile``: instead, where a fresh process with a filled cache spends its time (import times, the first and a
second solve of the point in the same process, JAX's compile-event durations during the first; printed only).
Usage: python bench/bench_fresh_process.py [--now REV] [--before dee6e1d] [--cases L2,L3,split] [--repeats 2]
                                           [--profile]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _docblock import append_to_section
from _revision import src_tree

TITLE = "## Fresh-process latency of `theory point` (issue 11, helper hA)"
DOC = Path(__file__).resolve().parents[1] / "docs" / "notes" / "benchmarks-log.md"
ROOT = Path(__file__).resolve().parents[1]
BEFORE = "dee6e1d"
"""main before this work: every process traces the engine's programs (no stored programs)."""
POINT = ["theory", "point", "--alpha", "2", "--omega", "0.3", "--branch", "semantic", "--json"]
COMMON = POINT + ["--integrator", "qmc", "--qmc-points", "4096", "--scrambles", "4"]
CASES = {"L2": ("L = 2", COMMON), "L3": ("L = 3", COMMON + ["--L", "3", "--A", "0.6,0.2,0.2;0.2,0.6,0.2;0.2,0.2,0.6"]),
         "split": ("L = 2, split rule (the default integrator)", POINT)}
KEYS = ("q", "m", "theta", "V", "eps_g", "e_t")


def _process(src: Path, case: str, cache: Path) -> dict:
    """One fresh CLI process; wall and CPU time from outside, the printed numbers."""
    env = {**os.environ, "PYTHONPATH": str(src), "ATTNPHASE_XLA_CACHE": str(cache)}
    for name in ("JAX_COMPILATION_CACHE_DIR", "ATTNPHASE_EXPORTED"):
        env.pop(name, None)
    cmd = [sys.executable, "-m", "attnphase", *CASES[case][1]]
    r0, t = resource.getrusage(resource.RUSAGE_CHILDREN), time.perf_counter()
    out = subprocess.run(cmd, env=env, check=True, capture_output=True, text=True).stdout
    wall, r1 = time.perf_counter() - t, resource.getrusage(resource.RUSAGE_CHILDREN)
    d = json.loads(out)
    values = {k: d[k] for k in KEYS} | {f"{k}_err": d.get(f"{k}_err") for k in KEYS} | {"iterations": d["iterations"]}
    return {"wall": wall, "cpu": (r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime),
            "status": d["status"], "values": values}


PROFILE_CASES = {"L2": dict(omega=0.3), "L3": dict(omega=0.3, L=3, A=((0.6, 0.2, 0.2), (0.2, 0.6, 0.2),
                                                                       (0.2, 0.2, 0.6)))}
EVENTS = {"/jax/core/compile/jaxpr_trace_duration": "tracing",
          "/jax/core/compile/jaxpr_to_mlir_module_duration": "lowering",
          "/jax/core/compile/backend_compile_duration": "XLA compile / executable load",
          "/jax/compilation_cache/cache_retrieval_time_sec": "of which: reading cache entries"}


def _profile_worker(case: str) -> None:
    """In this fresh process: import times, then the case's point (the API call of the CLI command) twice, with
    JAX's compile-event durations of the first; one JSON line."""
    t0 = time.perf_counter()
    import jax
    t_jax = time.perf_counter()
    dur: dict = {}
    jax.monitoring.register_event_duration_secs_listener(
        lambda e, d, **k: dur.__setitem__(e, [dur.get(e, [0, 0.0])[0] + 1, dur.get(e, [0, 0.0])[1] + d]))
    from attnphase.model import ModelParams
    from attnphase.theory.engine import QMCConfig, solve
    t_imp = time.perf_counter()
    times = []
    for _ in range(2):
        t = time.perf_counter()
        solve(ModelParams(**PROFILE_CASES[case]), 2.0, "semantic", qmc_config=QMCConfig())
        times.append(time.perf_counter() - t)
        if not times[1:]:
            first = {EVENTS[e]: dur.get(e, [0, 0.0]) for e in EVENTS}
    print(json.dumps({"import jax": t_jax - t0, "import attnphase (engine)": t_imp - t_jax, "first solve": times[0],
                      "second solve (same process)": times[1], "events": first}))


def _profile(sides, cases, tmp) -> list:
    rows = []
    for case in cases:
        for j, (tag, src) in enumerate(sides):
            cache = Path(tmp) / f"profile-{case}-{j}"
            env = {**os.environ, "PYTHONPATH": str(src), "ATTNPHASE_XLA_CACHE": str(cache)}
            for name in ("JAX_COMPILATION_CACHE_DIR", "ATTNPHASE_EXPORTED"):
                env.pop(name, None)
            cmd = [sys.executable, __file__, "--profile-worker", case]
            subprocess.run(cmd, env=env, check=True, capture_output=True)                 # fills the cache
            d = json.loads(subprocess.run(cmd, env=env, check=True, capture_output=True, text=True).stdout
                           .strip().splitlines()[-1])
            ev = "; ".join(f"{k} {n} × {t:.2f} s" for k, (n, t) in d.pop("events").items())
            rows.append((f"{case}, {tag}", ", ".join(f"{k} {v:.2f} s" for k, v in d.items()), ev))
            print(*rows[-1], sep="\n", flush=True)
    return rows


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--profile", action="store_true", help="instead: where a fresh process with a filled cache "
                    "spends its time (in-process timers and JAX's compile events; printed, not written)")
    ap.add_argument("--profile-worker", default=None, help=argparse.SUPPRESS)
    ap.add_argument("--before", default=BEFORE, help="git revision to compare with ('' for none)")
    ap.add_argument("--now", default="", help="git revision for the 'now' side ('': the working tree's src)")
    ap.add_argument("--cases", default=",".join(CASES))
    ap.add_argument("--repeats", type=int, default=2, help="processes with the filled cache, per side and case")
    a = ap.parse_args()
    if a.profile_worker:
        _profile_worker(a.profile_worker)
        return
    load0, stamp = os.getloadavg(), time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    rows: list = []
    same = True
    with tempfile.TemporaryDirectory() as tmp:
        for sub in ("now", "before"):
            (Path(tmp) / sub).mkdir()
        sides = [(f"now ({a.now})" if a.now else "now", src_tree(a.now, Path(tmp) / "now") if a.now else ROOT / "src")]
        if a.before:
            sides.append((f"before ({a.before})", src_tree(a.before, Path(tmp) / "before")))
        if a.profile:
            print(f"load average {os.getloadavg()[0]:.1f}")
            _profile(sides, [c for c in a.cases.split(",") if c in PROFILE_CASES], tmp)
            print(f"load average {os.getloadavg()[0]:.1f}")
            return
        for case in a.cases.split(","):
            res: dict = {tag: [] for tag, _ in sides}
            for k in range(1 + a.repeats):                  # the sides alternate (load drifts alike)
                for j, (tag, src) in enumerate(sides):
                    res[tag].append(_process(src, case, Path(tmp) / f"cache-{case}-{j}"))
                    print(case, tag, k, {x: round(res[tag][-1][x], 2) for x in ("wall", "cpu")}, flush=True)
            ref = res[sides[0][0]][0]["values"]
            for tag, _ in sides:
                ok = all(r["values"] == ref for r in res[tag])
                same &= ok
                for k, r in enumerate(res[tag]):
                    when = "empty cache" if k == 0 else f"cache filled (process {k + 1})"
                    rows.append((f"{CASES[case][0]}, {tag}, {when}", f"{r['status']}, q = {r['values']['q']:.5f}",
                                 f"{r['wall']:.1f} s", f"{r['cpu']:.1f} s"))
                filled = [r["wall"] for r in res[tag][1:]]
                rows.append((f"{CASES[case][0]}, {tag}: empty / filled (mean)",
                             "numbers identical to the first process" if ok else "**numbers differ**",
                             f"**{res[tag][0]['wall'] / (sum(filled) / len(filled)):.2f}x**" if filled else "", ""))
            if len(sides) > 1:
                for when, sl in (("filled cache (mean)", slice(1, None)), ("empty cache", slice(0, 1))):
                    now, before = ({x: sum(r[x] for r in res[t][sl]) / len(res[t][sl]) for x in ("wall", "cpu")}
                                   for t, _ in sides)
                    rows.append((f"{CASES[case][0]}, {when}: before / now", "",
                                 f"**{before['wall'] / now['wall']:.2f}x**", f"**{before['cpu'] / now['cpu']:.2f}x**"))
    _write(rows, load0, stamp, same)


def _write(rows, load0, stamp, same) -> None:
    import jax

    load1 = os.getloadavg()
    text = [f"### Measured (run started {stamp})", "",
            f"Machine: {platform.machine()} {os.cpu_count()} CPUs (shared development VM), JAX {jax.__version__} "
            f"backend {jax.default_backend()}, load average {load0[0]:.1f} before / {load1[0]:.1f} after. Command: "
            f"`python bench/bench_fresh_process.py {' '.join(sys.argv[1:])}`; each process: `python -m attnphase "
            f"{' '.join(COMMON)}` (+ `--L 3 --A ...` for L = 3; the split rule: `python -m attnphase "
            f"{' '.join(POINT)}`). Numbers of every process identical: {same}.",
            "", "| process | outcome | wall time | CPU time (user + system) |", "|---|---|---|---|"]
    text += [f"| {w} | {o} | {t} | {c} |" for w, o, t, c in rows]
    body = "\n".join(text) + "\n\n"
    append_to_section(DOC, TITLE, body)


if __name__ == "__main__":
    main()
