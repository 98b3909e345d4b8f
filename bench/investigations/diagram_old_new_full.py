"""The default 40 × 40 × 2 diagram (`attnphase theory phase-diagram`, two workers) by two codes in one run, one
after the other on the same machine: the code at a base commit (a checkout given by its path) and this
working tree; each warmed up first (one ω, 3 α), then timed (wall, CPU of the process and its workers). Compares
every cell's states (state_sem, state_pos, global_branch) between the two and with a reference grid, and α_c(ω),
α_l(ω). Issue 34 item 3.

    python bench/investigations/diagram_old_new_full.py OLD_CHECKOUT OUT_DIR [REFERENCE_GRID_CSV] [--warm-full]

``--warm-full``: warm each code up on the whole default grid instead (untimed; twice the time): a code whose
source changed since its last full run otherwise traces and compiles inside its timing the shapes the small
warm-up does not reach (switch buffers grown on overflow, the nodes = 6 / 8 retries), which made a −17 % CPU
change read +7 % (docs/notes/2026-12-06-diagram-evaluation.md).
"""
from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd

NEW = Path(__file__).resolve().parents[2]


def run(src: Path, out: Path, args: list[str]) -> dict:
    env = {**os.environ, "PYTHONPATH": str(src / "src")}
    t0, before = time.time(), os.times()
    subprocess.run([sys.executable, "-m", "attnphase", "theory", "phase-diagram", "--out", str(out), *args],
                   env=env, check=True, capture_output=True)
    after = os.times()
    cpu = (after.children_user - before.children_user) + (after.children_system - before.children_system)
    return dict(wall=time.time() - t0, cpu=cpu)


def main() -> None:
    argv = [a for a in sys.argv[1:] if a != "--warm-full"]
    warm = [] if "--warm-full" in sys.argv else ["--omegas", "0.3:0.3:1", "--alphas", "1:1.2:3"]
    old, out = Path(argv[0]), Path(argv[1])
    ref = Path(argv[2]) if len(argv) > 2 else None
    out.mkdir(parents=True, exist_ok=True)
    for name, src in (("old", old), ("new", NEW)):          # warm-up: compile caches of each code
        run(src, out / f"warm_{name}", warm)
    t = {}
    print("load before:", open("/proc/loadavg").read().split()[:3], flush=True)
    for name, src in (("old", old), ("new", NEW)):
        t[name] = run(src, out / name, [])
        print(name, f"wall {t[name]['wall']:.1f} s, CPU {t[name]['cpu']:.1f} s", flush=True)
    print("load after:", open("/proc/loadavg").read().split()[:3])
    print(f"ratio old/new: wall {t['old']['wall'] / t['new']['wall']:.3f}, CPU {t['old']['cpu'] / t['new']['cpu']:.3f}")
    g = {k: pd.read_csv(out / k / "phase_grid.csv") for k in ("old", "new")}
    if ref is not None:
        g["ref"] = pd.read_csv(ref)
    cols = ["state_sem", "state_pos", "global_branch"]
    for a, b in (("old", "new"), ("ref", "new"), ("ref", "old")):
        if a not in g:
            continue
        key = [g[x][["omega", "alpha"]].round(6) for x in (a, b)]   # the files print ω, α to different digits
        m = g[a].assign(omega=key[0]["omega"], alpha=key[0]["alpha"]).merge(
            g[b].assign(omega=key[1]["omega"], alpha=key[1]["alpha"]), on=["omega", "alpha"], suffixes=("_a", "_b"))
        diff = m[(m[[c + "_a" for c in cols]].astype(str).values != m[[c + "_b" for c in cols]].astype(str).values)
                 .any(axis=1)]
        print(f"{a} vs {b}: {len(m)} cells, {len(diff)} with a different state")
        for _, r in diff.iterrows():
            print("  ", r["omega"], r["alpha"], [(r[c + "_a"], r[c + "_b"]) for c in cols])
    lines = {k: pd.read_csv(out / k / "phase_lines.csv") for k in ("old", "new")}
    for col in ("alpha_c", "alpha_l"):
        d = (lines["old"][col] - lines["new"][col]).abs()
        print(f"max |Δ{col}| old vs new: {d.max():.3g} at ω = {lines['new']['omega'][d.idxmax()] if d.notna().any() else '-'}")


if __name__ == "__main__":
    main()
