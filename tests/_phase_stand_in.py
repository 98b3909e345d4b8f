"""Stand-in tables built from the paper's published ω = 0.3 curves (MODEL.md §9) — only as INPUTS for the
table→root/figure code under test, never as results."""

import os
from pathlib import Path

import pandas as pd

REF = Path(os.environ.get("ATTNPHASE_SHARED", Path(__file__).resolve().parents[2] / "shared")) / "reference"
EPS_LIN_03 = 0.0019714  # MODEL.md §5 (verified value), stand-in input


def have_reference() -> bool:
    return (REF / "theory_omega0.3_semantic.csv").exists()


def stand_in(branch: str) -> pd.DataFrame:
    d = pd.read_csv(REF / f"theory_omega0.3_{branch}.csv")
    return pd.DataFrame(dict(alpha=d["alpha"], omega=0.3, sigma=0.5, lam=d["lambda"], branch=branch, q=d["q"],
                             m=d["m"], V=d["V"], theta=d["theta"], eps_g=d["mse"] / 2, e_t=-d["Phi"],
                             converged=True, stability=float("nan"))).sort_values("alpha").reset_index(drop=True)
