"""Rank 2 on the engine's defaults (issue 11, helper hB): the r = 2 points (L = 2, r* = 1, ω = 0.3, σ = 0.5,
λ = 0.01, default A, P) at the default, error-controlled QMC size, and the free (mixed) point against the
cached finite-d clusters of ``bench/bench_theory_vs_finite_d.py`` (no L-BFGS is rerun).

    python bench/investigations/bench_r2_defaults.py --run          # solve the 9 points (branch × α ∈ {1, 2, 2.3}), cache JSON
    python bench/investigations/bench_r2_defaults.py                # tables from the cache (docs/data/r2_defaults/)

Each point is what ``attnphase theory point --L 2 --r 2 --r-star 1 --omega 0.3 --alpha A --branch B --json``
prints (the same call, in-process), with its wall time and the load average. The comparison uses
``bench_theory_vs_finite_d.compare`` (nearest fixed point in (m, θ), tolerance max(3 s.e., 5 %), ε_g and e_t
with the O(1/d) terms of ``theory.finite_size``) with only the free point as candidate, and the d → ∞
intercepts of that bench's extrapolation (L2r2 random start, α = 2.3) against the default-size point."""

from __future__ import annotations

import os

os.environ["XLA_FLAGS"] = (os.environ.get("XLA_FLAGS", "") + " --xla_cpu_experimental_ynn_fusion_type=").strip()

import argparse  # noqa: E402
import json  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "bench"))

import bench_theory_vs_finite_d as TV  # noqa: E402

from attnphase.model import ModelParams  # noqa: E402
from attnphase.theory.engine import solve  # noqa: E402

OUT = ROOT / "docs" / "data" / "r2_defaults"
FD = ROOT / "docs" / "data" / "theory_vs_finite_d"
BRANCHES = ("semantic", "positional", "free")
ALPHAS = (1.0, 2.0, 2.3)
KEYS = ("q", "m", "theta", "V", "eps_g", "e_t")


def point_file(branch: str, alpha: float) -> Path:
    return OUT / f"point_{branch}_a{alpha:g}.json"


def run_point(branch: str, alpha: float) -> dict:
    """One default-size point (the CLI's call), with wall time and load."""
    load = os.getloadavg()
    t = time.perf_counter()
    sol = solve(ModelParams(L=2, r=2, r_star=1, omega=TV.OMEGA), alpha, branch)
    d = dict(sol.to_dict(), wall_s=time.perf_counter() - t, load_before=load, load_after=os.getloadavg())
    point_file(branch, alpha).write_text(json.dumps(d, default=float))
    return d


def size_text(d: dict) -> str:
    res = d["provenance"].get("resolution") or {}
    sizes = " → ".join(f"{e['points']} × {e['scrambles']}" for e in res.get("sizes", []))
    return f"{sizes} (met: {res.get('met')}, capped: {res.get('capped')})"


def points_table(points: dict) -> list[str]:
    lines = ["| branch | α | status | size reached (met, capped) | iterations | wall s | " + " | ".join(KEYS) + " |",
             "|---" * (6 + len(KEYS)) + "|"]
    for (b, a), d in points.items():
        vals = [f"{d[k]:.6g} ± {d[k + '_err']:.1g}" if d["converged"] else "—" for k in KEYS]
        lines.append(f"| {b} | {a:g} | {d['status']} | {size_text(d)} | {d['iterations']} | {d['wall_s']:.0f} | "
                     + " | ".join(vals) + " |")
    return lines


def finite_d_table(points: dict) -> list[str]:
    """Every cached d = 1000 L2r2 cluster whose instances lie nearest to the free point (the others are at the
    pinned positional point, bench_theory_vs_finite_d item 4), against the default-size free point."""
    lines = ["| init | α | n | " + " | ".join(TV.KEYS) + " |", "|---" * (3 + len(TV.KEYS)) + "|"]
    for f in sorted(FD.glob("fd_L2r2_*_d1000_n16.json")):
        fd = json.loads(f.read_text())
        t = points.get(("free", float(fd["alpha"])))
        if t is None or not t["converged"]:
            continue
        t = dict(t, finite_size=TV.finite_size_terms("L2r2", t, 1024 * 4))
        for row in TV.compare(fd, {"free": t}, fd["d"]):
            if row["branch"] != "free":
                continue
            cells = [f"{row[k]['fd']:.4g} ± {row[k]['se']:.1g} / {row[k]['theory']:.4g} "
                     f"{'✓' if row[k]['ok'] else '✗'}" for k in TV.KEYS]
            lines.append(f"| {fd['config']['init']} | {fd['alpha']:g} | {row['n']} | " + " | ".join(cells) + " |")
    return lines


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--run", action="store_true", help="solve the points missing from the cache")
    a = ap.parse_args(argv)
    OUT.mkdir(parents=True, exist_ok=True)
    points = {}
    for b in BRANCHES:
        for al in ALPHAS:
            f = point_file(b, al)
            if f.exists():
                points[(b, al)] = json.loads(f.read_text())
            elif a.run:
                points[(b, al)] = run_point(b, al)
    print("\n".join(points_table(points)))
    print()
    print("\n".join(finite_d_table(points)))


if __name__ == "__main__":
    main()
