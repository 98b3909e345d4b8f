"""Which minimum does training reach from a random start? (MODEL.md §4, §6, §8; docs/finite_d.md)

Each trained instance is classified by its order parameters against the theory's branches at the same
parameters: the positional branch fixes the scale of ``|m|`` (``m_pos``), the semantic branch that of
``θ/σ²`` (``θ_sem``). A component is *present* when it exceeds ``FRACTION`` of its branch's value:

- semantic: ``θ/σ² > ½ θ_sem`` and ``|m| ≤ ½ m_pos``;   positional: ``|m| > ½ m_pos`` and ``θ/σ² ≤ ½ θ_sem``;
- mixed: both present;   uninformative: neither.

For ``r > 1`` (MODEL.md §8) ``|m|`` and ``θ/σ²`` are the Frobenius norms of the overlap matrices (invariant
under ``Q → QO``), and the scales come from the rank-1 theory (the current engine covers L = 2, r = 1 only;
:func:`branch_scales` is the one place to swap in a general one). Where a branch does not exist at these
parameters (the solver does not converge), :data:`FALLBACK` scales are used and the result says so.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from enum import Enum
from typing import Any, Callable, Sequence

import numpy as np

from .errors import ParameterError, check_int, check_range
from .model import ModelParams

FRACTION = 0.5
FALLBACK = {"m": 0.25, "theta_over_sigma2": 0.4}
"""Scales used when a branch is missing: the branches' typical values at ω = 0.3, α ≈ 1 (docs/theory.md)."""


class Basin(str, Enum):
    SEMANTIC = "semantic"
    POSITIONAL = "positional"
    MIXED = "mixed"
    UNINFORMATIVE = "uninformative"


@dataclass(frozen=True)
class BranchScales:
    """``m_pos`` and ``θ_sem/σ²`` at (params, α), and where each came from ("theory" or "fallback")."""

    m_pos: float
    theta_sem: float
    m_source: str
    theta_source: str
    theory_params: dict[str, Any]

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


def branch_scales(params: ModelParams, alpha: float,
                  point: Callable[[ModelParams, float, str], dict[str, Any]] | None = None) -> BranchScales:
    """Scales of the positional and semantic branches (rank-1 theory for any r; see module docstring)."""
    from .scaling import theory_point
    point = theory_point if point is None else point
    tp = params.replace(r=1) if params.r != 1 else params
    pos, sem = point(tp, alpha, "positional"), point(tp, alpha, "semantic")

    def pick(sol: dict[str, Any], key: str) -> tuple[float, str]:
        ok = sol.get("available") and sol.get("converged") and sol.get(key, 0.0) > 1e-3
        return (float(sol[key]), "theory") if ok else (FALLBACK[key], "fallback")

    (m, ms), (th, ts) = pick(pos, "m"), pick(sem, "theta_over_sigma2")
    return BranchScales(m, th, ms, ts, tp.to_dict())


def classify(m: Sequence[float], theta_over_sigma2: Sequence[float], scales: BranchScales) -> np.ndarray:
    """:class:`Basin` value strings for each instance (rule in the module docstring)."""
    m = np.abs(np.asarray(m, dtype=float))
    th = np.abs(np.asarray(theta_over_sigma2, dtype=float))
    pm, pt = m > FRACTION * scales.m_pos, th > FRACTION * scales.theta_sem
    out = np.where(pm & pt, Basin.MIXED.value,
                   np.where(pm, Basin.POSITIONAL.value,
                            np.where(pt, Basin.SEMANTIC.value, Basin.UNINFORMATIVE.value)))
    return out.astype(object)


def run_basins(params: ModelParams, *, alphas: Sequence[float], omegas: Sequence[float], d: int, instances: int,
               init: str = "random", init_scale: float = 0.1, optimizer: str = "lbfgs", warmup_steps: int = 60,
               steps: int = 5000, seed: int = 0, progress: Callable[[str], None] | None = None):
    """Train ``instances`` students per (ω, α) from ``init`` and classify each; returns a DataFrame with one
    row per (ω, α): counts and fractions per basin, convergence, the scales used, mean e_t per basin.

    The optimiser decides what is found: from a random start L-BFGS after a short warm-up can stop on a
    higher stationary point than the one GD drifts to; ``warmup_steps`` GD steps first follow GD's path
    (docs/finite_d.md compares 60 and 1000)."""
    import pandas as pd
    from .simulate import TrainConfig, simulate
    d = check_int("d", d, 2)
    instances = check_int("instances", instances, 1)
    check_range("init_scale", init_scale, lo=0.0)
    if not len(alphas) or not len(omegas):
        raise ParameterError("alphas", "at least one α and one ω", (list(alphas), list(omegas)))
    cfg = TrainConfig(init=init, optimizer=optimizer, init_scale=init_scale, warmup_steps=warmup_steps, steps=steps)
    rows = []
    for omega in omegas:
        p = params.replace(omega=float(omega))
        for alpha in alphas:
            if progress:
                progress(f"ω = {omega:g}, α = {alpha:g}")
            r = simulate(p, alpha=float(alpha), d=d, config=cfg, instances=instances, seed=seed)
            sc = branch_scales(p, float(alpha))
            basin = classify(r.m, r.theta_over_sigma2, sc)
            row: dict[str, Any] = dict(omega=float(omega), alpha=float(alpha), r=p.r, r_star=p.r_star, d=d,
                                       instances=instances, init=init, init_scale=init_scale,
                                       optimizer=optimizer, warmup_steps=warmup_steps if optimizer == "lbfgs" else 0,
                                       steps=steps if optimizer == "gd" else 0,
                                       converged=int(r.converged.sum()), m_pos=sc.m_pos, theta_sem=sc.theta_sem,
                                       scale_source=f"m:{sc.m_source},theta:{sc.theta_source}")
            for b in Basin:
                sel = basin == b.value
                row[f"n_{b.value}"] = int(sel.sum())
                row[f"frac_{b.value}"] = float(sel.mean())
                row[f"e_t_{b.value}"] = float(r.e_t[sel].mean()) if sel.any() else math.nan
            rows.append(row)
    return pd.DataFrame(rows)


def plot_basins(frames: dict[str, Any], path, title: str = "") -> None:
    """Fractions of instances per basin against α, one panel per entry of ``frames`` (label -> DataFrame of
    :func:`run_basins` at one ω), with binomial s.e. bars."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    colours = {Basin.SEMANTIC: "C0", Basin.POSITIONAL: "C3", Basin.MIXED: "C2", Basin.UNINFORMATIVE: "0.5"}
    fig, axes = plt.subplots(1, len(frames), figsize=(4.6 * len(frames), 3.4), sharey=True, squeeze=False)
    for ax, (label, df) in zip(axes[0], frames.items()):
        df = df.sort_values("alpha")
        for b in Basin:
            f = df[f"frac_{b.value}"].to_numpy()
            se = np.sqrt(f * (1 - f) / df["instances"].to_numpy())
            ax.errorbar(df["alpha"], f, yerr=se, marker="o", ms=4, capsize=2, color=colours[b], label=b.value)
        ax.set_xlabel("α")
        ax.set_title(label, fontsize=10)
        ax.set_ylim(-0.03, 1.03)
        ax.grid(alpha=0.3)
    axes[0][0].set_ylabel("fraction of instances")
    axes[0][0].legend(fontsize=8)
    if title:
        import textwrap
        fig.suptitle("\n".join(textwrap.wrap(title, 40 * len(frames))), fontsize=9)
    fig.tight_layout()
    from .outputs import save_figure_atomic
    save_figure_atomic(fig, path, dpi=120)
    plt.close(fig)
