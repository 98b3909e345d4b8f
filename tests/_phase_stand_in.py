"""Synthetic branch tables shaped like the ω = 0.3 theory (σ = 0.5, λ = 0.01): smooth curves whose e_t cross
near α ≈ 1.2537 (between grid points) and whose semantic ε_g crosses ε_lin near α ≈ 1.45 — INPUTS for the table→root/figure code under
test, never results. (They used to be read from the shared reference tables; tests must not read shared/.)"""

import numpy as np
import pandas as pd

EPS_LIN_03 = 0.0019714  # stand-in input: baseline.eps_lin at ω = 0.3 (MODEL.md §5)


def stand_in(branch: str) -> pd.DataFrame:
    a = np.round(np.linspace(0.3, 2.0, 35), 6)
    if branch == "semantic":
        e_t = 0.0028 + 0.0011 * (a - 1.2537) - 0.0002 * (a - 1.2537) ** 2
        eps_g = 0.00140 + 0.0022 * np.exp(-1.6 * (a - 1.04)) * 0.5
        q, m, th = 0.04 + 0.04 * a, 0.0 * a, 0.08 * np.sqrt(a)
    else:
        e_t = 0.0028 + 0.0016 * (a - 1.2537) - 0.0003 * (a - 1.2537) ** 2
        eps_g = 0.0033 + 0.0001 * a
        q, m, th = 0.04 + 0.005 * a, 0.24 + 0.01 * a, 0.0 * a
    return pd.DataFrame(dict(alpha=a, omega=0.3, sigma=0.5, lam=0.01, branch=branch, q=q, m=m, V=12.0, theta=th,
                             eps_g=eps_g, e_t=e_t, converged=True, stability=float("nan")))
