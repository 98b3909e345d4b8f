"""Benchmark of the persistent compilation cache in fresh processes (issue 11, helper hB): one L = 2 point and
one L = 3 point (4096 × 4, fixed size, α = 2, semantic), each solved in a NEW process, first with an empty cache
directory, then in a second new process with the directory the first one filled — the code now against the
code of an earlier commit (``--before REV``: its ``src`` tree, extracted with ``git archive``) IN THE SAME RUN.
Each process's wall time is measured from outside (interpreter start, imports, compilation, solve) and inside
(the solve call alone); the cache directory's entries and bytes are counted after each process.
``--min-compile S,...``: extra "now" runs with ``jax_persistent_cache_min_compile_time_secs`` set to S (JAX's
default 1 s: faster compilations are not written) — what lowering the threshold would give.

Writes a "Measured (run started …)" block into the section ``TITLE`` of docs/notes/benchmarks-log.md, which is kept
just before the file's last section (bench_engine's, which stays last).
Usage: python bench/bench_xla_cache.py [--before 0590fcd] [--cases L2,L3] [--min-compile 0]
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

from _docblock import append_to_section
from _revision import src_tree

TITLE = "## Persistent compilation cache in every process (issue 11, helper hB)"
DOC = Path(__file__).resolve().parents[1] / "docs" / "notes" / "benchmarks-log.md"
ROOT = Path(__file__).resolve().parents[1]
BEFORE = "0590fcd"
"""main at the start of this work: only the split-rule program set the cache up."""
L3_A = ((0.6, 0.2, 0.2), (0.2, 0.6, 0.2), (0.2, 0.2, 0.6))
CASES = {"L2": ("one L = 2 point", dict(omega=0.3)), "L3": ("one L = 3 point", dict(L=3, A=L3_A))}


def _worker(case: str, min_compile: float | None) -> None:
    """Solve the case once in this (fresh) process; print one JSON line (solve time, status)."""
    import jax

    from attnphase.model import ModelParams
    from attnphase.theory.engine import QMCConfig, solve

    if min_compile is not None:
        jax.config.update("jax_persistent_cache_min_compile_time_secs", min_compile)
    t = time.perf_counter()
    s = solve(ModelParams(**CASES[case][1]), 2.0, "semantic", qmc_config=QMCConfig())
    print(json.dumps({"solve": time.perf_counter() - t, "status": s.status.value, "q": float(s.values["q"]),
                      "iterations": s.iterations}))


def _entries(cache: Path) -> tuple[int, int]:
    files = list(cache.glob("*-cache")) if cache.exists() else []
    return len(files), sum(f.stat().st_size for f in files)


def _process(src: Path, case: str, cache: Path, min_compile: float | None) -> dict:
    """One fresh process; its wall time from outside and the cache directory afterwards."""
    env = {**os.environ, "PYTHONPATH": str(src), "ATTNPHASE_XLA_CACHE": str(cache)}
    env.pop("JAX_COMPILATION_CACHE_DIR", None)
    cmd = [sys.executable, __file__, "--worker", case] + ([] if min_compile is None else
                                                          ["--min-compile", str(min_compile)])
    t = time.perf_counter()
    out = subprocess.run(cmd, env=env, check=True, capture_output=True, text=True).stdout
    wall = time.perf_counter() - t
    n, size = _entries(cache)
    return {"wall": wall, **json.loads(out.strip().splitlines()[-1]), "entries": n, "bytes": size}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--before", default=BEFORE, help="git revision to compare with ('' for none)")
    ap.add_argument("--cases", default=",".join(CASES))
    ap.add_argument("--min-compile", default="", help="comma-separated thresholds (s) for extra 'now' runs")
    ap.add_argument("--worker", default=None, help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.worker:
        mc = float(a.min_compile) if a.min_compile else None
        _worker(a.worker, mc)
        return
    load0, stamp = os.getloadavg(), time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    rows: list = []
    with tempfile.TemporaryDirectory() as tmp:
        sides = [("now", ROOT / "src", None)]
        if a.before:
            sides.append((f"before ({a.before})", src_tree(a.before, Path(tmp)), None))
        sides += [(f"now, min compile time {s} s", ROOT / "src", float(s)) for s in a.min_compile.split(",") if s]
        for case in a.cases.split(","):
            for k, (tag, src, mc) in enumerate(sides):
                cache = Path(tmp) / f"cache-{case}-{k}"
                cold = _process(src, case, cache, mc)
                warm = _process(src, case, cache, mc)
                for when, r in (("empty cache", cold), ("cache filled by the previous process", warm)):
                    rows.append((f"{CASES[case][0]}, {tag}, {when}",
                                 f"{r['status']}, q = {r['q']:.5f}; cache after: {r['entries']} entries, "
                                 f"{r['bytes'] / 2 ** 20:.1f} MiB",
                                 f"{r['wall']:.1f} s (solve {r['solve']:.1f} s)"))
                rows.append((f"{CASES[case][0]}, {tag}: empty / filled", "", f"**{cold['wall'] / warm['wall']:.2f}x**"))
                print(*rows[-3:], sep="\n", flush=True)
    _write(rows, load0, stamp)


def _write(rows, load0, stamp) -> None:
    import jax

    load1 = os.getloadavg()
    header = f"### Measured (run started {stamp})"
    text = [header, "", f"Machine: {platform.machine()} {os.cpu_count()} CPUs (shared development VM), "
            f"JAX {jax.__version__} backend {jax.default_backend()}, load average {load0[0]:.1f} before / "
            f"{load1[0]:.1f} now. Command: `python bench/bench_xla_cache.py {' '.join(sys.argv[1:])}`.",
            "", "| process | outcome | wall time of the process |", "|---|---|---|"]
    text += [f"| {w} | {o} | {t} |" for w, o, t in rows]
    body = "\n".join(text) + "\n\n"
    append_to_section(DOC, TITLE, body)


if __name__ == "__main__":
    main()
