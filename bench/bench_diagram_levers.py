"""Old against new diagram code in one run (issue 34 item 3): the same chain slice of the default 40 × 40 grid
solved by the code of a base commit and by this working tree, one process each, one thread, one after the other,
after a warm-up of each (one ω, 3 α and one solve at nodes = 6 and 8, the stall retries' orders: the exported programs and XLA's cache are keyed by the package's source,
so a code edited since its last run would otherwise pay the tracing inside the timing).

    python bench/bench_diagram_levers.py [--base COMMIT] [--chain 0] [--count 5] [--first I] [--repeat 1]

The slice is the first ``count`` columns of the diagram's chain ``chain`` (ω indices chain, chain + 2, …): the
same columns, guided by the same previous ω, as in the full two-worker diagram, so the committed grid
(docs/data/phase_diagram_40x40) is a third reference. Prints CPU and wall of each code, their ratio, the load,
solves / iterations / growth factors, the cells whose state differs (old, new, committed) and the largest
difference of α_c, α_l; the markdown rows for docs/benchmarks.md.
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

ROOT = Path(__file__).resolve().parents[1]
THREADS = {"OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1", "MKL_NUM_THREADS": "1",
           "XLA_FLAGS": "--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1"}

CHILD = r"""
import json, sys, time
import numpy as np
from attnphase.model import ModelParams
from attnphase.phase import phase_diagram
from attnphase.phase.diagram import DEFAULT_ALPHAS, DEFAULT_OMEGAS
idx, out, n_a = json.loads(sys.argv[1]), sys.argv[2], int(sys.argv[3])
omegas = [DEFAULT_OMEGAS[i] for i in idx]
t0, c0 = time.time(), time.process_time()
if n_a < 40:   # the warm-up: also the finer orders of the stall / end retries (their programs compiled here)
    from attnphase.phase.continuation import default_solver
    for n in (6, 8):
        default_solver(ModelParams())(ModelParams(), 1.0, "semantic", nodes=n, max_steps=3, rtol=1e-5)
    t0, c0 = time.time(), time.process_time()
g, ln = phase_diagram(ModelParams(), omegas, DEFAULT_ALPHAS[-n_a:], workers=1)
g.to_csv(out + "_grid.csv", index=False, float_format="%.12g")
ln.to_csv(out + "_lines.csv", index=False, float_format="%.12g")
print(json.dumps(dict(wall=time.time() - t0, cpu=time.process_time() - c0, solves=int(ln["solves"].sum()),
                      iterations=int(ln["iterations"].sum()), factors=int(ln["stability_evaluations"].sum()))))
"""


def _run(src: Path, idx: list[int], out: str, n_alphas: int = 40) -> dict:
    env = {**os.environ, **THREADS, "PYTHONPATH": str(src)}
    t0, before = time.time(), os.times()
    p = subprocess.run([sys.executable, "-c", CHILD, json.dumps(idx), out, str(n_alphas)], env=env,
                       capture_output=True, text=True, check=True)
    after = os.times()
    res = json.loads(p.stdout.strip().splitlines()[-1])
    res["cpu_total"] = (after.children_user - before.children_user) + (after.children_system - before.children_system)
    res["wall_total"] = time.time() - t0
    return res


def _compare(a, b, la, lb) -> tuple[list, float]:
    import numpy as np
    diff = [(w, al, c, a_, b_) for c in ("state_sem", "state_pos")
            for w, al, a_, b_ in zip(a["omega"], a["alpha"], a[c], b[c]) if a_ != b_]
    d = 0.0
    for c in ("alpha_c", "alpha_l"):
        x, y = la[c].to_numpy(float), lb[c].to_numpy(float)
        both = np.isfinite(x) & np.isfinite(y)
        if (np.isfinite(x) != np.isfinite(y)).any():
            d = float("inf")
        if both.any():
            d = max(d, float(np.max(np.abs(x[both] - y[both]))))
    return diff, d


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--base", default=None, help="commit of the old code (default: merge-base with main)")
    ap.add_argument("--chain", type=int, default=0)
    ap.add_argument("--count", type=int, default=5)
    ap.add_argument("--first", type=int, default=None, help="first ω index (default: the chain's first; a later "
                    "one starts unguided, unlike the full diagram: then old and new compare, not the committed grid)")
    ap.add_argument("--repeat", type=int, default=1)
    args = ap.parse_args()
    import pandas as pd
    base = args.base or subprocess.run(["git", "merge-base", "HEAD", "main"], cwd=ROOT, capture_output=True,
                                       text=True, check=True).stdout.strip()
    idx = list(range(args.chain if args.first is None else args.first, 40, 2))[:args.count]
    tmp = Path(tempfile.mkdtemp(prefix="bench_levers_"))
    old_src = tmp / "old"
    old_src.mkdir()
    arch = subprocess.run(["git", "archive", base, "src"], cwd=ROOT, capture_output=True, check=True).stdout
    subprocess.run(["tar", "-x", "-C", str(old_src)], input=arch, check=True)
    codes = {"old": old_src / "src", "new": ROOT / "src"}
    print(f"base {base[:10]}, ω indices {idx}, {platform.machine()} {os.cpu_count()} cores, "
          f"Python {platform.python_version()}, load {os.getloadavg()}", flush=True)
    for k in codes:   # the exported-program / XLA caches are keyed by the package's source: fill both first
        print("warm-up", k, _run(codes[k], idx[:1], str(tmp / f"warm_{k}"), 3), flush=True)
    res = {k: [] for k in codes}
    for r in range(args.repeat):
        for k in (("old", "new") if r % 2 == 0 else ("new", "old")):
            res[k].append(_run(codes[k], idx, str(tmp / f"{k}{r}")))
            print(k, res[k][-1], "load", os.getloadavg(), flush=True)
    grids = {k: pd.read_csv(tmp / f"{k}0_grid.csv") for k in codes}
    lines = {k: pd.read_csv(tmp / f"{k}0_lines.csv") for k in codes}
    ref = pd.read_csv(ROOT / "docs/data/phase_diagram_40x40/phase_grid.csv")
    ref_l = pd.read_csv(ROOT / "docs/data/phase_diagram_40x40/phase_lines.csv")
    ws = set(grids["old"]["omega"].round(6))
    ref = ref[ref["omega"].round(6).isin(ws)].reset_index(drop=True)
    ref_l = ref_l[ref_l["omega"].round(6).isin(ws)].reset_index(drop=True)
    for a, b in (("old", "new"), ("old", "committed"), ("new", "committed")):
        ga, la = (grids[a], lines[a])
        gb, lb = (ref, ref_l) if b == "committed" else (grids[b], lines[b])
        diff, d = _compare(ga, gb, la, lb)
        print(f"{a} vs {b}: {len(diff)} of {2 * len(ga)} cells differ {diff}; max |Δα_c|, |Δα_l| {d:.2e}")
    cpu = {k: sum(x["cpu_total"] for x in v) for k, v in res.items()}
    wall = {k: sum(x["wall_total"] for x in v) for k, v in res.items()}
    print(f"| {len(idx)} ω (indices {idx[0]}…{idx[-1]} step 2) × 40 α × 2, one process "
          f"| old {cpu['old']:.1f} s CPU / {wall['old']:.0f} s wall | new {cpu['new']:.1f} s CPU / {wall['new']:.0f} s "
          f"wall | CPU ratio old/new **{cpu['old'] / cpu['new']:.3f}** ({100 * (cpu['new'] / cpu['old'] - 1):+.1f} %) "
          f"| load {os.getloadavg()} |")
    for k in codes:
        r0 = res[k][0]
        print(f"{k}: solves {r0['solves']} iterations {r0['iterations']} growth factors {r0['factors']}")


if __name__ == "__main__":
    main()
