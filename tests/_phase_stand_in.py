"""Stand-in tables built from the paper's published ω = 0.3 curves (MODEL.md §9) — only as INPUTS for the
table→root/figure code under test, never as results."""

import pandas as pd

from attnphase.reference import FOLDER as REF  # the published tables ship with the package
EPS_LIN_03 = 0.0019714  # MODEL.md §5 (verified value), stand-in input


def have_reference() -> bool:
    """Always true: the tables ship with the package; a missing one is an error, never a skip."""
    missing = [b for b in ("semantic", "positional", "uninformative") if not (REF / f"theory_omega0.3_{b}.csv").exists()]
    if missing:
        raise FileNotFoundError(f"shipped reference tables missing in {REF}: {missing}")
    return True


def stand_in(branch: str) -> pd.DataFrame:
    d = pd.read_csv(REF / f"theory_omega0.3_{branch}.csv")
    return pd.DataFrame(dict(alpha=d["alpha"], omega=0.3, sigma=0.5, lam=d["lambda"], branch=branch, q=d["q"],
                             m=d["m"], V=d["V"], theta=d["theta"], eps_g=d["mse"] / 2, e_t=-d["Phi"],
                             converged=True, stability=float("nan"))).sort_values("alpha").reset_index(drop=True)
