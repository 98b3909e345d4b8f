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


def _edges(x):
    """Cell edges around the grid values ``x`` (midpoints; half a step beyond the ends)."""
    if x.size == 1:
        return np.array([x[0] - 0.05, x[0] + 0.05])
    mid = 0.5 * (x[1:] + x[:-1])
    return np.concatenate([[x[0] - (mid[0] - x[0])], mid, [x[-1] + (x[-1] - mid[-1])]])


def _heatmap(fig, ax, piv, se=None, label="Δe_t = e_t(positional start) − e_t(semantic start)"):
    """``piv`` (index ω, columns α) as cells in diverging colours centred on 0, symmetric-log scaled; cells with
    ``|Δ| < 2 se`` hatched when ``se`` (same shape) is given."""
    from matplotlib.colors import SymLogNorm
    A, W = piv.columns.to_numpy(float), piv.index.to_numpy(float)
    Z = piv.to_numpy(float)
    lim = float(np.nanmax(np.abs(Z))) if np.isfinite(Z).any() else 1.0
    mesh = ax.pcolormesh(_edges(A), _edges(W), Z, cmap="RdBu_r",
                         norm=SymLogNorm(linthresh=max(lim * 1e-2, 1e-9), vmin=-lim, vmax=lim), shading="flat")
    fig.colorbar(mesh, ax=ax, label=label)
    if se is not None:
        weak = np.abs(Z) < 2 * se.to_numpy(float)
        if weak.any():
            ax.contourf(A, W, weak.astype(float), levels=[0.5, 1.5], colors="none", hatches=["//"])
    ax.set_xlabel("α")
    ax.set_ylabel("ω")


def _theory_lines(ax, theory_lines) -> None:
    if theory_lines is None:
        return
    tl = theory_lines.sort_values("omega")
    for col, style, label in (("alpha_c", "k-", "theory α_c(ω)"), ("alpha_l", "k--", "theory α_l(ω)")):
        if col in tl.columns and tl[col].notna().any():
            ax.plot(tl[col], tl["omega"], style, lw=1.5, label=label)
    ax.legend(fontsize=8, loc="upper left")


def plot_empirical_diagram(table, path, theory_lines=None, title: str = "") -> None:
    """Heat map of ``Δe_t`` over (α, ω) (diverging colours centred on 0, symmetric-log scaled), the cells whose
    |Δe_t| < 2 s.e. hatched, and ``theory_lines`` (DataFrame with ``omega`` and ``alpha_c`` and/or ``alpha_l``)
    drawn over it."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(figsize=(6.4, 4.6))
    _heatmap(fig, ax, table.pivot(index="omega", columns="alpha", values="delta_e_t"),
             table.pivot(index="omega", columns="alpha", values="delta_se"))
    _theory_lines(ax, theory_lines)
    ax.set_title(title or "empirical phase diagram (red: semantic start lower e_t)", fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def alpha_c_line(table):
    """The empirical ``α_c(ω)``: per ω of ``table`` (:func:`cell_table`), where ``Δe_t`` (positional − semantic
    start) changes sign from − to + along α, linearly interpolated between the two bracketing cells, with the
    s.e. propagated from theirs (``α* = α_i − h Δ_i/D``, ``h = α_{i+1} − α_i``, ``D = Δ_{i+1} − Δ_i``:
    ``se² = (h/D²)² (Δ_{i+1}² s_i² + Δ_i² s_{i+1}²)``). Columns ``omega, alpha_c, alpha_c_se, alpha_lo, alpha_hi,
    crossings, status``: ``crossing`` (the last − to + change; ``crossings`` counts all sign changes, > 1 where
    noise makes Δ flip), ``above range`` (Δ < 0 at every α: α_c > ``alpha_lo``), ``below range`` (Δ > 0
    everywhere: α_c < ``alpha_hi``), ``no - to + change`` (Δ changes sign, only from + to −), ``no data``."""
    import pandas as pd
    rows = []
    for omega, g in table.sort_values("alpha").groupby("omega", sort=True):
        g = g[np.isfinite(g["delta_e_t"].astype(float))]
        a, D, s = (g[c].to_numpy(float) for c in ("alpha", "delta_e_t", "delta_se"))
        row = dict(omega=float(omega), alpha_c=math.nan, alpha_c_se=math.nan, alpha_lo=math.nan,
                   alpha_hi=math.nan, crossings=0, status="no data")
        if a.size:
            sign = np.sign(D)
            changes = np.flatnonzero(sign[:-1] * sign[1:] < 0)
            up = [i for i in changes if D[i] < 0 < D[i + 1]]
            row["crossings"] = int(changes.size)
            if up:
                i = up[-1]
                h, dd = a[i + 1] - a[i], D[i + 1] - D[i]
                se = h / dd ** 2 * math.hypot(D[i + 1] * s[i], D[i] * s[i + 1])
                row.update(alpha_c=float(a[i] - h * D[i] / dd), alpha_c_se=float(se), alpha_lo=float(a[i]),
                           alpha_hi=float(a[i + 1]), status="crossing")
            elif (D < 0).all():
                row.update(alpha_lo=float(a[-1]), status="above range")
            elif (D > 0).all():
                row.update(alpha_hi=float(a[0]), status="below range")
            else:
                row["status"] = "no - to + change"
        rows.append(row)
    return pd.DataFrame(rows)


def compare_alpha_c(line, theory_lines):
    """``line`` (:func:`alpha_c_line`) next to the theory's ``alpha_c`` (and ``alpha_l``) of ``theory_lines``
    interpolated linearly in ω to the empirical ω: ``difference = alpha_c − alpha_c_theory`` and its size in
    s.e. (``difference_over_se``)."""
    out = line.copy()
    tl = theory_lines.sort_values("omega")
    for col in ("alpha_c", "alpha_l"):
        ok = tl[col].notna() if col in tl.columns else None
        out[f"{col}_theory"] = (np.interp(out["omega"], tl.loc[ok, "omega"], tl.loc[ok, col], left=np.nan, right=np.nan)
                                if ok is not None and ok.any() else np.nan)
    out["difference"] = out["alpha_c"] - out["alpha_c_theory"]
    out["difference_over_se"] = out["difference"] / out["alpha_c_se"]
    return out


def plot_paired_diagram(table, path, theory_grid=None, theory_lines=None, line=None, title: str = "") -> None:
    """The paper's pair: left, the empirical ``Δe_t`` heat map (:func:`cell_table`) with the theory's α_c(ω),
    α_l(ω) over it and the empirical α_c(ω) ± s.e. (``line``, :func:`alpha_c_line`) as points; right, the
    theory's ``Δe_t = e_t^pos − e_t^sem`` of ``theory_grid`` (columns ``omega, alpha, e_t_sem, e_t_pos``, e.g.
    ``phase_grid.csv`` of ``attnphase theory phase-diagram``) on the same axes with the same lines. Red: the
    semantic start (branch) has the lower training loss, in both panels."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, axes = plt.subplots(1, 2, figsize=(12.0, 4.6), sharex=True, sharey=True)
    _heatmap(fig, axes[0], table.pivot(index="omega", columns="alpha", values="delta_e_t"),
             table.pivot(index="omega", columns="alpha", values="delta_se"))
    if line is not None and line["alpha_c"].notna().any():
        ok = line[line["alpha_c"].notna()]
        axes[0].errorbar(ok["alpha_c"], ok["omega"], xerr=ok["alpha_c_se"], fmt="o", ms=3, color="C2", capsize=2,
                         label="empirical α_c(ω) ± s.e.")
    _theory_lines(axes[0], theory_lines)
    axes[0].set_title(title or "finite d: training students (red: semantic start lower e_t)", fontsize=10)
    if theory_grid is not None:
        g = theory_grid.assign(delta=theory_grid["e_t_pos"] - theory_grid["e_t_sem"])
        _heatmap(fig, axes[1], g.pivot(index="omega", columns="alpha", values="delta"),
                 label="Δe_t = e_t(positional branch) − e_t(semantic branch)")
        _theory_lines(axes[1], theory_lines)
        axes[1].set_title("theory, d → ∞ (white: one branch missing)", fontsize=10)
        axes[1].tick_params(labelleft=True)
    axes[0].set_xlim(_edges(np.unique(table["alpha"].to_numpy(float)))[[0, -1]])
    axes[0].set_ylim(_edges(np.unique(table["omega"].to_numpy(float)))[[0, -1]])
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def report(frame, out_dir, theory_dir=None) -> dict[str, Any]:
    """From a per-instance table (``alpha, omega, init, e_t``; e.g. the done ``simulate`` rows of a sweep) write
    ``cells.csv`` (:func:`cell_table`), ``alpha_c.csv`` (:func:`alpha_c_line`, with the theory's α_c, α_l and
    the differences when ``theory_dir`` holds ``phase_grid.csv`` and ``phase_lines.csv`` of ``attnphase theory
    phase-diagram``) and ``diagram.png`` (:func:`plot_paired_diagram`) into ``out_dir``; returns the paths and
    counts (``students``, ``cells``, ``unconverged``)."""
    import pandas as pd
    from pathlib import Path
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    table = cell_table(frame)
    line = alpha_c_line(table)
    grid = lines = None
    if theory_dir is not None:
        grid = pd.read_csv(Path(theory_dir) / "phase_grid.csv")
        lines = pd.read_csv(Path(theory_dir) / "phase_lines.csv")
        line = compare_alpha_c(line, lines)
    paths = dict(cells_csv=out / "cells.csv", alpha_c_csv=out / "alpha_c.csv", figure=out / "diagram.png")
    table.to_csv(paths["cells_csv"], index=False, float_format="%.6g")
    line.to_csv(paths["alpha_c_csv"], index=False, float_format="%.6g")
    plot_paired_diagram(table, paths["figure"], grid, lines, line)
    conv = [c for c in ("converged_semantic", "converged_positional") if c in table.columns]
    students = int(table["n_semantic"].sum() + table["n_positional"].sum())
    return dict({k: str(v) for k, v in paths.items()}, students=students, cells=len(table),
                unconverged=students - int(table[conv].to_numpy().sum()) if conv else None)


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
