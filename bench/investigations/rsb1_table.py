"""Markdown tables from docs/data/beyond_rs/rsb1_points*.json: e_t^RS against e_t^1RSB, and along each x scan the
complexity Σ(x) = x² ∂e*/∂x and the energy of the states it counts, e_s(x) = e*(x) + x ∂e*/∂x (docs/theory/one-step-rsb.md §4).

Run: PYTHONPATH=src python bench/investigations/rsb1_table.py [tag ...]
"""

from __future__ import annotations

import json
import sys
from pathlib import Path


def main(tags) -> None:
    rows, scans = [], {}
    for tag in tags:
        d = json.loads(Path(f"docs/data/beyond_rs/rsb1_points{tag}.json").read_text())
        rows += [dict(r, tag=tag) for r in d["rows"]]
        scans.update(d["scans"])
    print("| σ | λ | α | e_t^RS (split) | e_t^RS (1RSB grid) | e_t^1RSB | shift | x* | q0 | q1 | V | status |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for r in rows:
        if "e_t_1rsb" not in r:
            print(f"| {r['sigma']} | {r['lam']} | {r['alpha']} | {r['e_t_rs']:.6f} | {r['e_t_rs_grid']:.6f} | – | – | – | – | – | – "
                  f"| {r['status']} |")
            continue
        print(f"| {r['sigma']} | {r['lam']} | {r['alpha']} | {r['e_t_rs']:.6f} | {r['e_t_rs_grid']:.6f} | {r['e_t_1rsb']:.6f} "
              f"| {r['shift_vs_rs_grid']:+.6f} | {r['x_star']:.0f} | {r['q0']:.4f} | {r['q1']:.4f} | {r['V']:.1f} "
              f"| {r['status']} |")
    for name, scan in scans.items():
        print(f"\n{name}\n\n| x | status | q0 | Δq | V | e*(x) | Σ(x) | e_s(x) |\n| --- | --- | --- | --- | --- | --- | --- | --- |")
        for p in sorted(scan, key=lambda p: p["x"]):
            gx = p["grad"][3]
            print(f"| {p['x']:.0f} | {p['status']} | {p['q0']:.4f} | {p['dq']:.4f} | {p['V']:.1f} | {p['e_t']:.6f} "
                  f"| {p['x'] ** 2 * gx:+.4f} | {p['e_t'] + p['x'] * gx:.6f} |")


if __name__ == "__main__":
    main(sys.argv[1:] or [""])
