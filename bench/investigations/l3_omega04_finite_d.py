"""Finite-d check of the L = 3, ω = 0.4 global minimum on [0.25, 0.7] (docs/guides/transitions-any-model.md):
L-BFGS students at d = 1000 from semantic, positional and random starts (8 instances each, the same data per
instance across starts), α = 0.4 and 0.55. Reads the CSVs of

    attnphase simulate --L 3 --A "0.6,0.2,0.2;0.2,0.6,0.2;0.2,0.2,0.6" --omega 0.4 --alpha A --d 1000 \\
        --init INIT --optimizer lbfgs --instances 8 --out docs/data/l3_omega04_finite_d/fd_A_INIT.csv

and prints, per α and start, the mean ± s.e. of m, θ, q, e_t, ε_g, and per instance which start ends lowest
(e_t: the training loss) with the paired differences e_t(start) − e_t(semantic start).

    python bench/investigations/l3_omega04_finite_d.py docs/data/l3_omega04_finite_d
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pandas as pd


def main() -> None:
    root = Path(sys.argv[1] if len(sys.argv) > 1 else "docs/data/l3_omega04_finite_d")
    df = pd.concat([pd.read_csv(f) for f in sorted(root.glob("fd_*.csv"))], ignore_index=True)
    for a, g in df.groupby("alpha"):
        print(f"α = {a:g} (d = {int(g['d'].iloc[0])}, {g['instance'].nunique()} instances, "
              f"converged {int(g['converged'].sum())}/{len(g)})")
        for init, h in g.groupby("init"):
            cells = []
            for c in ("m", "theta", "q", "e_t", "eps_g"):
                v = h[c].to_numpy(float)
                cells.append(f"{c} = {v.mean():.5g} ± {v.std(ddof=1) / np.sqrt(len(v)):.2g}")
            print(f"  {init:10s} " + ", ".join(cells))
        w = g.pivot(index="instance", columns="init", values="e_t")
        lowest = w.idxmin(axis=1).value_counts().to_dict()
        print(f"  lowest e_t per instance: {lowest}")
        for init in w.columns:
            if init == "semantic":
                continue
            d = (w[init] - w["semantic"]).to_numpy(float)
            print(f"  e_t({init}) − e_t(semantic) = {d.mean():.3g} ± {d.std(ddof=1) / np.sqrt(len(d)):.2g} "
                  f"(> 0 in {int((d > 0).sum())}/{len(d)})")


if __name__ == "__main__":
    main()
