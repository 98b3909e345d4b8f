"""Figures of the paper (one shared style). Every function takes tidy DataFrames and a matplotlib Axes (created
when ``ax`` is None) and returns the Figure. Library code never calls ``plt.show()``; the Agg backend is used.

Input conventions
-----------------
* theory tables: :func:`attnphase.theory.curve_table` columns (alpha, branch, m, theta, eps_g, e_t, sigma, …);
  several branches concatenated in one frame.
* simulation tables: one row per (α, init) with ``<col>_mean`` and ``<col>_sem`` columns (e.g. ``m_mean``,
  ``theta_over_sigma2_mean``, ``eps_g_sem``) and an ``init`` column.
* global tables: :func:`attnphase.phase.global_table` / the ``grid`` of :func:`attnphase.phase.phase_diagram`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

COLORS = {"semantic": "#1f77b4", "positional": "#d62728", "uninformative": "#7f7f7f", "global": "black",
          "linear": "#2ca02c", "random": "#9467bd"}
MARKERS = {"semantic": "o", "positional": "s", "random": "^"}
STYLE = {"figure.figsize": (5.0, 3.6), "figure.dpi": 110, "axes.grid": True, "grid.alpha": 0.3,
         "axes.spines.top": False, "axes.spines.right": False, "font.size": 10, "legend.fontsize": 8,
         "legend.frameon": False, "lines.linewidth": 1.8, "savefig.bbox": "tight"}


def _ax(ax):
    if ax is None:
        with plt.rc_context(STYLE):
            fig, ax = plt.subplots()
        return ax
    return ax


def _style_ax(ax):
    ax.grid(True, alpha=0.3)
    for s in ("top", "right"):
        ax.spines[s].set_visible(False)


def _vline(ax, x, label, color, ls):
    if x is not None and np.isfinite(x):
        ax.axvline(x, color=color, ls=ls, lw=1.0, label=f"{label} = {x:.3g}")


def _sim_points(ax, sim, col, scale=1.0, absval=True, prefix="sim"):
    if sim is None or len(sim) == 0 or f"{col}_mean" not in sim:
        return
    for init, g in sim.groupby("init") if "init" in sim else [("sim", sim)]:
        y = g[f"{col}_mean"].to_numpy(float) / scale
        if absval:
            y = np.abs(y)
        err = g[f"{col}_sem"].to_numpy(float) / scale if f"{col}_sem" in g else None
        ax.errorbar(g["alpha"], y, yerr=err, fmt=MARKERS.get(init, "o"), ms=4, capsize=2, mfc="none",
                    color=COLORS.get(init, "k"), label=f"{prefix}, {init} init")


def plot_overlaps(theory, sim=None, ax=None):
    """(a) |m|/σ² and |θ|/σ² vs α: theory lines for every branch in ``theory`` (θ solid, m dashed) and
    simulation points with error bars (columns ``m_*`` and ``theta_over_sigma2_*``)."""
    ax = _ax(ax)
    s2 = float(theory["sigma"].iloc[0]) ** 2 if "sigma" in theory else 0.25
    for b, g in theory.groupby("branch"):
        g = g.sort_values("alpha")
        ok = g["converged"].astype(bool) if "converged" in g else slice(None)
        g = g[ok]
        c = COLORS.get(b, "k")
        ax.plot(g["alpha"], np.abs(g["theta"]) / s2, "-", color=c, label=f"θ/σ², {b}")
        ax.plot(g["alpha"], np.abs(g["m"]) / s2, "--", color=c, label=f"m/σ², {b}")
    if sim is not None and len(sim):
        _sim_points(ax, sim, "theta_over_sigma2", prefix="θ/σ² sim")
        if "m_mean" in sim:
            _sim_points(ax, sim, "m", scale=s2, prefix="m/σ² sim")
    ax.set_xlabel("α = n/d")
    ax.set_ylabel("overlap / σ²")
    ax.set_title("Overlaps (theory: lines; simulation: points)")
    _style_ax(ax)
    ax.legend(ncol=2, fontsize=7, loc="upper left", bbox_to_anchor=(0.0, -0.16))
    return ax.figure


def plot_eps_g(glob, sim=None, ax=None, *, alpha_c=None, alpha_l=None, eps_lin=None):
    """(b) ε_g of the global minimum vs α with ε_lin (horizontal), α_c and α_l marked, both branches thin, and
    simulation points (global = lower training loss per α, columns ``eps_g_*``)."""
    ax = _ax(ax)
    g = glob.sort_values("alpha")
    for b, tag in (("semantic", "sem"), ("positional", "pos")):
        if f"eps_g_{tag}" in g:
            ax.plot(g["alpha"], g[f"eps_g_{tag}"], ":", lw=1.0, color=COLORS[b], label=f"{b} branch")
    ax.plot(g["alpha"], g["eps_g_global"], "-", color=COLORS["global"], label="global minimum")
    el = eps_lin if eps_lin is not None else (float(g["eps_lin"].iloc[0]) if "eps_lin" in g else None)
    if el is not None:
        ax.axhline(el, color=COLORS["linear"], ls="--", lw=1.2, label=f"ε_lin = {el:.4g}")
    _vline(ax, alpha_c, "α_c", "0.3", "-.")
    _vline(ax, alpha_l, "α_l", COLORS["linear"], ":")
    if sim is not None and len(sim):
        _sim_points(ax, sim, "eps_g", absval=False)
    ax.set_xlabel("α = n/d")
    ax.set_ylabel("ε_g")
    ax.set_title("Test error of the global minimum")
    _style_ax(ax)
    ax.legend(loc="upper right", fontsize=7)
    return ax.figure


def plot_delta_e_t(glob, ax=None, *, alpha_c=None, sim=None):
    """(c) Δe_t = e_t^sem − e_t^pos vs α (positional global where Δe_t > 0), α_c marked."""
    ax = _ax(ax)
    g = glob.sort_values("alpha")
    ax.plot(g["alpha"], g["delta_e_t"], "-", color=COLORS["global"], label="Δe_t = e_t^sem − e_t^pos")
    ax.axhline(0.0, color="0.5", lw=0.8)
    _vline(ax, alpha_c, "α_c", "0.3", "-.")
    if sim is not None and len(sim) and "delta_e_t_mean" in sim:
        ax.errorbar(sim["alpha"], sim["delta_e_t_mean"], yerr=sim.get("delta_e_t_sem"), fmt="o", ms=4,
                    mfc="none", capsize=2, color="k", label="simulation")
    ax.set_xlabel("α = n/d")
    ax.set_ylabel("Δe_t")
    ax.set_title("Training-loss gap (> 0: positional global)")
    _style_ax(ax)
    ax.legend()
    return ax.figure


def _heat(ax, grid, col, title, cmap, center=True):
    piv = grid.pivot_table(index="omega", columns="alpha", values=col)
    a, w, Z = piv.columns.to_numpy(float), piv.index.to_numpy(float), piv.to_numpy(float)
    kw: dict[str, Any] = {}
    if center and np.isfinite(Z).any():
        from matplotlib.colors import TwoSlopeNorm
        lim = float(np.nanmax(np.abs(Z))) or 1.0
        kw["norm"] = TwoSlopeNorm(0.0, -lim, lim)
    mesh = ax.pcolormesh(a, w, Z, shading="nearest", cmap=cmap, **kw)
    cb = ax.figure.colorbar(mesh, ax=ax, label=col)
    cb.formatter.set_powerlimits((0, 0))
    cb.update_ticks()
    ax.set_xlabel("α = n/d")
    ax.set_ylabel("ω")
    ax.set_title(title)
    return mesh


def _lines(ax, lines):
    if lines is None or len(lines) == 0:
        return
    lines = lines.sort_values("omega")
    for col, lab, c, ls in (("alpha_c", "α_c(ω)", "k", "-"), ("alpha_l", "α_l(ω)", COLORS["linear"], "--")):
        if col in lines:
            ok = lines[col].notna()
            ax.plot(lines.loc[ok, col], lines.loc[ok, "omega"], ls, color=c, marker=".", label=lab)
    ax.legend(loc="upper right")


def plot_phase_diagram(grid, lines=None, axes=None):
    """(d) the two (α, ω) heatmaps: Δe_t (sign = which minimum is global) and ε_lin − ε_g^global (> 0: attention
    beats the linear baseline), each with the α_c(ω) and α_l(ω) lines. ``axes``: two Axes (created if None)."""
    if axes is None:
        with plt.rc_context(STYLE):
            fig, axes = plt.subplots(1, 2, figsize=(11.5, 4.0), layout="constrained")
    _heat(axes[0], grid, "delta_e_t", "Δe_t = e_t^sem − e_t^pos", "RdBu_r")
    _lines(axes[0], lines)
    _heat(axes[1], grid, "eps_lin_minus_eps_g", "ε_lin − ε_g (global)", "PiYG")
    _lines(axes[1], lines)
    for ax in axes:
        ax.grid(False)
    return axes[0].figure


def plot_alpha_c_line(lines, ax=None):
    """α_c(ω) and α_l(ω) as lines in the (α, ω) plane (the coarse phase boundary of ``reproduce``)."""
    ax = _ax(ax)
    _lines(ax, lines)
    ax.set_xlabel("α = n/d")
    ax.set_ylabel("ω")
    ax.set_title("Phase boundary: positional (left) / semantic (right)")
    _style_ax(ax)
    return ax.figure


def save_figure(fig, path_stem) -> list[Path]:
    """Write ``<path_stem>.png`` and ``<path_stem>.pdf``; returns the paths. The figure is closed."""
    stem = Path(path_stem)
    stem.parent.mkdir(parents=True, exist_ok=True)
    out = []
    for ext in ("png", "pdf"):
        p = stem.with_name(stem.name + "." + ext)
        fig.savefig(p, bbox_inches="tight", dpi=150)
        out.append(p)
    plt.close(fig)
    return out
