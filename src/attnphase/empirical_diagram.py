"""The paper's empirical phase diagram (MODEL.md §4): Δ training loss between the two initialisations.

Per (α, ω) cell, ``Δe_t = ē_t(positional start) − ē_t(semantic start)`` over the instances of each start
When both starts ran on the same instances (same ``seed`` and ``instance``: ``simulate`` gives instance i the
same teacher and data for every init) the difference is taken per instance and its s.e. is that of the paired
differences (``paired = True``), much smaller than ``√(sem_pos² + sem_sem²)`` of independent instances, which is
used otherwise.
``Δe_t > 0``: the semantic start reaches the lower training loss (the semantic minimum is the global one at
finite d); ``< 0``: the positional one. The theory's ``α_c(ω)`` (where the two branches' e_t cross) and
``α_l(ω)`` (where the global minimum beats the linear baseline) can be drawn over it.

Input: a DataFrame with one row per trained instance and columns ``alpha, omega, init, e_t`` (e.g.
``attnphase.sweeps.report.frame(sweep)`` of ``examples/sweeps/paper_phase_diagram.toml``, or
:meth:`attnphase.simulate.SimulationResult.to_frame` concatenated).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from .errors import ParameterError

REQUIRED = ("alpha", "omega", "init", "e_t")


def cell_table(df):
    """One row per (ω, α): mean, s.e. and count of e_t per start, ``delta_e_t`` and ``delta_se``; cells with
    one start missing get NaN. Unconverged instances are kept and counted (``converged_*``) when present."""
    import pandas as pd
    missing = [c for c in REQUIRED if c not in df.columns]
    if missing:
        raise ParameterError("results", f"a table with columns {', '.join(REQUIRED)}", f"missing {missing}")
    df = df[df["init"].isin(["semantic", "positional"])]
    rows: list[dict[str, Any]] = []
    for (omega, alpha), g in df.groupby(["omega", "alpha"], sort=True):
        row: dict[str, Any] = dict(omega=float(omega), alpha=float(alpha))
        for init in ("semantic", "positional"):
            v = g.loc[g["init"] == init, "e_t"].astype(float).to_numpy()
            row[f"e_t_{init}"] = float(v.mean()) if v.size else math.nan
            row[f"sem_{init}"] = float(v.std(ddof=1) / math.sqrt(v.size)) if v.size > 1 else math.nan
            row[f"n_{init}"] = int(v.size)
            if "converged" in g.columns:
                row[f"converged_{init}"] = int(g.loc[g["init"] == init, "converged"].astype(bool).sum())
        row["delta_e_t"] = row["e_t_positional"] - row["e_t_semantic"]
        row["delta_se"] = math.hypot(row["sem_positional"], row["sem_semantic"])
        row["paired"] = False
        diff = _paired_differences(g)
        if diff is not None and diff.size > 1:
            row.update(delta_e_t=float(diff.mean()), delta_se=float(diff.std(ddof=1) / math.sqrt(diff.size)),
                       paired=True)
        rows.append(row)
    return pd.DataFrame(rows)


def _paired_differences(g):
    """``e_t(positional) − e_t(semantic)`` per (seed, instance) present for both starts exactly once, or None."""
    if not {"seed", "instance"} <= set(g.columns):
        return None
    keys = ["seed", "instance"]
    sem = g[g["init"] == "semantic"].set_index(keys)["e_t"]
    pos = g[g["init"] == "positional"].set_index(keys)["e_t"]
    if not (sem.index.is_unique and pos.index.is_unique) or len(sem) != len(pos):
        return None
    both = sem.index.intersection(pos.index)
    if len(both) != len(sem):
        return None
    return (pos.loc[both].astype(float) - sem.loc[both].astype(float)).to_numpy()


def plot_empirical_diagram(table, path, theory_lines=None, title: str = "") -> None:
    """Heat map of ``Δe_t`` over (α, ω) (diverging colours centred on 0, symmetric-log scaled), the cells whose
    |Δe_t| < 2 s.e. hatched, and ``theory_lines`` (DataFrame with ``omega`` and ``alpha_c`` and/or ``alpha_l``)
    drawn over it."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.colors import SymLogNorm
    piv = table.pivot(index="omega", columns="alpha", values="delta_e_t")
    se = table.pivot(index="omega", columns="alpha", values="delta_se")
    A, W = piv.columns.to_numpy(float), piv.index.to_numpy(float)
    Z = piv.to_numpy(float)
    lim = float(np.nanmax(np.abs(Z))) if np.isfinite(Z).any() else 1.0
    fig, ax = plt.subplots(figsize=(6.4, 4.6))

    def edges(x):
        if x.size == 1:
            return np.array([x[0] - 0.05, x[0] + 0.05])
        mid = 0.5 * (x[1:] + x[:-1])
        return np.concatenate([[x[0] - (mid[0] - x[0])], mid, [x[-1] + (x[-1] - mid[-1])]])

    mesh = ax.pcolormesh(edges(A), edges(W), Z, cmap="RdBu_r",
                         norm=SymLogNorm(linthresh=max(lim * 1e-2, 1e-9), vmin=-lim, vmax=lim), shading="flat")
    fig.colorbar(mesh, ax=ax, label="Δe_t = e_t(positional start) − e_t(semantic start)")
    weak = np.abs(Z) < 2 * se.to_numpy(float)
    if weak.any():
        ax.contourf(A, W, weak.astype(float), levels=[0.5, 1.5], colors="none", hatches=["//"])
    if theory_lines is not None:
        tl = theory_lines.sort_values("omega")
        for col, style, label in (("alpha_c", "k-", "theory α_c(ω)"), ("alpha_l", "k--", "theory α_l(ω)")):
            if col in tl.columns and tl[col].notna().any():
                ax.plot(tl[col], tl["omega"], style, lw=1.5, label=label)
        ax.legend(fontsize=8, loc="upper left")
    ax.set_xlabel("α")
    ax.set_ylabel("ω")
    ax.set_title(title or "empirical phase diagram (red: semantic start lower e_t)", fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def plot_slices(table, path, theory_lines=None, title: str = "") -> None:
    """``Δe_t`` ± 2 s.e. against α, one curve per ω of ``table`` (:func:`cell_table`), with the theory's
    ``α_c`` (solid) and ``α_l`` (dashed) of each ω from ``theory_lines`` as vertical lines: one row of the
    diagram seen from the side."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(figsize=(6.0, 3.8))
    for i, (omega, g) in enumerate(table.sort_values("alpha").groupby("omega")):
        ax.errorbar(g["alpha"], g["delta_e_t"], yerr=2 * g["delta_se"], marker="o", ms=3, capsize=2,
                    color=f"C{i}", label=f"ω = {omega:g}")
        if theory_lines is not None:
            row = theory_lines[np.isclose(theory_lines["omega"], omega)]
            for col, style in (("alpha_c", "-"), ("alpha_l", "--")):
                if col in row.columns and len(row) and np.isfinite(row[col].iloc[0]):
                    ax.axvline(float(row[col].iloc[0]), color=f"C{i}", ls=style, lw=1,
                               label=f"theory {col.replace('alpha_', 'α_')}(ω = {omega:g})")
    ax.axhline(0.0, color="k", lw=0.6)
    ax.set_yscale("symlog", linthresh=1e-5)
    ax.set_xlabel("α")
    ax.set_ylabel("Δe_t = e_t(pos. start) − e_t(sem. start)")
    ax.legend(fontsize=7)
    ax.set_title(title or "empirical diagram, one ω", fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
