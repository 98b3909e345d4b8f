"""The figure of docs/theory/beyond-rs.md: the RS landscape profiles e_t(θ/σ²) (M minimised over) and e_t(m) (θ
minimised over) at σ = 0.7, ω = 0.3, λ = 0.01, α = 0.5 (docs/data/beyond_rs/landscape/s0.7_a0.5.json, QMC
512 × 2), with the finite-d L-BFGS families at d = 1000 marked (8 instances, seed 0: the table "Finite d: L-BFGS
minimisers at d = 1000" of docs/notes/2026-12-03-phase-boundaries.md) and the RS uninformative point.

    PYTHONPATH=src python bench/investigations/plot_beyond_rs_figure.py
"""

from __future__ import annotations

import json
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

SRC = Path("docs/data/beyond_rs/landscape/s0.7_a0.5.json")
OUT = Path("docs/figures/beyond_rs_landscape_sigma0.7_alpha0.5.png")
# d = 1000, 8 instances (docs/notes/2026-12-03-phase-boundaries.md): (overlap, s.e., e_t, s.e.)
SEMANTIC = (0.395, 0.009, 0.001913, 0.000031)      # θ/σ² of the semantic-started family
POSITIONAL = (0.205, 0.002, 0.002186, 0.000037)    # |m| of the positional-started family
RS_UNINFORMATIVE = 0.0016798                       # docs/data/fixed_points_omega0.3_sigma0.7_lam0.01.csv


def main() -> None:
    rec = json.loads(SRC.read_text())
    fig, axes = plt.subplots(1, 2, figsize=(10, 4), sharey=True)
    for ax, key, fam, label in ((axes[0], "theta", SEMANTIC, "θ/σ²"), (axes[1], "m", POSITIONAL, "m")):
        rows = rec[key]["rows"]
        x = np.array([r[f"{key}_imposed"] for r in rows])
        e = np.array([r["e_t"] for r in rows])
        err = np.array([r["e_t_err"] for r in rows])
        other = np.array([r["e_t_other_sector"] if r["e_t_other_sector"] is not None else np.nan for r in rows],
                         dtype=float)
        ax.errorbar(x, e, yerr=err, fmt="o-", color="C0", label=f"RS landscape e_t({label}), lower sector")
        ax.plot(x, other, "x:", color="C7", label="other sector")
        ax.axhline(RS_UNINFORMATIVE, color="C2", ls="--", lw=1, label="RS global minimum (uninformative)")
        ax.errorbar([fam[0]], [fam[2]], xerr=[fam[1]], yerr=[fam[3]], fmt="s", color="C3", ms=8,
                    label=("semantic" if key == "theta" else "positional") + "-started L-BFGS, d = 1000")
        for s in rec[key]["stationary"]:
            ax.plot([s["at"]], [s["e_t"]], "v" if s["kind"] == "min" else "^", color="k", ms=7)
        ax.set_xlabel(label + (" (imposed; M minimised over)" if key == "theta" else " (imposed; θ minimised over)"))
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7, loc="upper left")
    axes[0].set_ylabel("e_t (training loss per dimension)")
    fig.suptitle("σ = 0.7, ω = 0.3, λ = 0.01, α = 0.5: RS landscape at fixed overlaps vs finite-d families "
                 "(▼ profile minimum)", fontsize=10)
    fig.tight_layout()
    fig.savefig(OUT, dpi=120)
    print("wrote", OUT)


if __name__ == "__main__":
    main()
