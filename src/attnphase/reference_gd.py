"""Comparison of finite-d runs with the paper's published GD means (``attnphase/reference/gd_d1000_omega0.3.csv``, shipped).

Column meanings (``attnphase/reference/README.md``): ``attention_gen_error`` is ``ε_g``, ``attention_train_error`` is ``R(Q)``
(so ``e_t = R/d``), ``attention_mag`` is ``m``, ``attention_theta`` is ``θ/σ² = Q*·Q/d``; ``informed = True``
is the semantic initialisation, ``False`` the positional one; ``*_std`` is the spread over instances.
The reference has α on a grid; values between grid points are interpolated linearly in α.

Agreement rule (issue 2): ``|ours − reference| ≤ max(3 s.e., 5 % of |reference|)``, with the combined standard
error ``s.e. = √(sem_ours² + (std_ref/√n_ref)²)``; the number of instances behind the reference means is not
published, so ``n_ref = 24`` (MODEL.md §4, "typically 24 instances per point") is assumed.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np

from .errors import ParameterError

COLUMNS = {"eps_g": "attention_gen_error", "e_t": "attention_train_error", "m": "attention_mag",
           "theta_over_sigma2": "attention_theta"}
INFORMED = {"semantic": True, "positional": False}
REFERENCE_INSTANCES = 24


def default_csv() -> Path:
    """The published table shipped with the package (``attnphase/reference/gd_d1000_omega0.3.csv``)."""
    from .reference import path
    return path("gd_d1000_omega0.3.csv")


def load(path: str | Path | None = None):
    import pandas as pd
    return pd.read_csv(default_csv() if path is None else path)


def reference_point(df, alpha: float, init: str) -> dict[str, tuple[float, float]]:
    """``{observable: (mean, std)}`` at ``alpha`` for ``init`` (``e_t`` already divided by d)."""
    if init not in INFORMED:
        raise ParameterError("init", "semantic or positional (the reference has no random init)", init)
    rows = df[df.informed == INFORMED[init]].sort_values("alpha")
    lo, hi = float(rows.alpha.min()), float(rows.alpha.max())
    if not lo <= alpha <= hi:
        raise ParameterError("alpha", f"in [{lo:g}, {hi:g}] (the reference's α grid)", alpha)
    d = float(rows.d.iloc[0])
    out = {}
    for ours, col in COLUMNS.items():
        scale = 1.0 / d if ours == "e_t" else 1.0
        out[ours] = tuple(scale * float(np.interp(alpha, rows.alpha, rows[f"{col}_{s}"])) for s in ("mean", "std"))
    return out


def compare(summary: dict[str, dict[str, float]], df, alpha: float, init: str) -> list[dict[str, Any]]:
    """One row per observable: ours (mean, sem), reference (mean, s.e.), z, % difference, tolerance, ok.

    ``summary`` is :meth:`attnphase.simulate.SimulationResult.summary`.
    """
    rows = []
    for k, (ref, ref_std) in reference_point(df, alpha, init).items():
        ours, sem = summary[k]["mean"], summary[k]["sem"]
        se = math.hypot(sem, ref_std / math.sqrt(REFERENCE_INSTANCES))
        tol = max(3.0 * se, 0.05 * abs(ref))
        rows.append(dict(alpha=alpha, init=init, observable=k, ours=ours, sem=sem, reference=ref,
                         ref_se=ref_std / math.sqrt(REFERENCE_INSTANCES), z=(ours - ref) / se if se > 0 else math.inf,
                         pct=100.0 * (ours - ref) / abs(ref), tol=tol, ok=bool(abs(ours - ref) <= tol)))
    return rows
