"""Figures of the paper (one shared style). Every function takes tidy DataFrames and a matplotlib Axes (created
when ``ax`` is None) and returns the Figure. Library code never calls ``plt.show()``; the Agg backend is used.
Legends are placed outside the plotting area, so they never cover a curve.

Input conventions
-----------------
* theory tables: :func:`attnphase.phase.branch_table` / :func:`attnphase.theory.curve_table` columns (alpha,
  branch, m, theta, eps_g, e_t, sigma, converged, stability, state …); several branches concatenated.
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
          "linear": "#2ca02c", "random": "#9467bd", "alpha_c": "0.25"}
MARKERS = {"semantic": "o", "positional": "s", "random": "^"}
STYLE = {"figure.figsize": (6.4, 3.8), "figure.dpi": 110, "axes.grid": True, "grid.alpha": 0.3,
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


def _legend_outside(ax, **kw):
    """Legend to the right of the axes (outside the data area)."""
    ax.legend(loc="upper left", bbox_to_anchor=(1.02, 1.0), borderaxespad=0.0, frameon=False,
              fontsize=kw.pop("fontsize", 8), **kw)


def _vline(ax, x, label, color, ls):
    if x is not None and np.isfinite(x):
        ax.axvline(x, color=color, ls=ls, lw=1.0, label=f"{label} = {x:.3f}")


def _states(g):
    if "state" in g:
        return g["state"].to_numpy()
    conv = g["converged"].astype(bool).to_numpy() if "converged" in g else np.ones(len(g), bool)
    st = g["stability"].astype(float).to_numpy() if "stability" in g else np.full(len(g), np.nan)
    return np.where(~conv, "not converged", np.where(np.isfinite(st) & (st > 1), "unstable", "ok"))


def _masked(y, mask):
    y = np.asarray(y, float).copy()
    y[~mask] = np.nan
    return y


def _sim_points(ax, sim, col, scale=1.0, absval=True, label=None, marker=None, filled=False):
    if sim is None or len(sim) == 0 or f"{col}_mean" not in sim:
        return
    groups = sim.groupby("init", sort=False) if "init" in sim else [("sim", sim)]
    for init, g in groups:
        y = g[f"{col}_mean"].to_numpy(float) / scale
        if absval:
            y = np.abs(y)
        err = g[f"{col}_sem"].to_numpy(float) / scale if f"{col}_sem" in g else None
        c = COLORS.get(init, "k")
        ax.errorbar(g["alpha"], y, yerr=err, fmt=marker or MARKERS.get(init, "o"), ms=5, capsize=2,
                    mfc=c if filled else "white", mec=c, color=c, lw=1.0, zorder=5,
                    label=(label or "simulation") + f", {init} init")


def plot_overlaps(theory, sim=None, ax=None):
    """(a) θ/σ² (= Q*·Q/d) and |m| (= |u·Q|/√d) vs α, as in the paper: theory lines of the semantic branch
    (θ/σ², blue) and the positional branch (m, red) — solid where the branch is a stable fixed point, dashed
    where it exists but is unstable against the other direction — and simulation points from both
    initialisations (colour = init; circles: θ/σ², squares: m; error bars: standard error)."""
    ax = _ax(ax)
    s2 = float(theory["sigma"].iloc[0]) ** 2 if "sigma" in theory else 0.25
    for b, g in theory.groupby("branch"):
        g = g.sort_values("alpha")
        st = _states(g)
        c = COLORS.get(b, "k")
        y, name = (np.abs(g["theta"]) / s2, "θ/σ²") if b == "semantic" else (np.abs(g["m"]), "m")
        if b not in ("semantic", "positional"):
            continue
        ax.plot(g["alpha"], _masked(y, st == "ok"), "-", color=c, label=f"theory {name}, {b} branch")
        if (st == "unstable").any():
            ax.plot(g["alpha"], _masked(y, np.isin(st, ("ok", "unstable"))), "--", lw=1.0, color=c,
                    label=f"{b} branch, unstable", zorder=1)
    if sim is not None and len(sim):
        _sim_points(ax, sim, "theta_over_sigma2", label="sim θ/σ²", marker="o", filled=True)
        _sim_points(ax, sim, "m", label="sim |m|", marker="s")
    ax.set_xlabel("α = n/d")
    ax.set_ylabel("overlap")
    ax.set_title("Overlaps: theory (lines), finite-d minimisers (points)")
    ax.set_ylim(bottom=0)
    _style_ax(ax)
    _legend_outside(ax)
    return ax.figure


def _broken_global(ax, g, alpha_c):
    """The global minimum's ε_g as separate pieces, one per run of the same global branch; each piece is
    extended to α_c on its own branch (linear interpolation), so the line jumps there instead of joining."""
    a = g["alpha"].to_numpy(float)
    br = g["global_branch"].to_numpy()
    first = True
    i = 0
    while i < len(a):
        if br[i] not in ("semantic", "positional"):
            i += 1
            continue
        j = i
        while j + 1 < len(a) and br[j + 1] == br[i]:
            j += 1
        col = "eps_g_sem" if br[i] == "semantic" else "eps_g_pos"
        xs, ys = list(a[i:j + 1]), list(g[col].to_numpy(float)[i:j + 1])
        full = g[["alpha", col]].dropna()
        if alpha_c is not None and np.isfinite(alpha_c) and len(full) >= 2 and full["alpha"].min() <= alpha_c \
                <= full["alpha"].max():
            yc = float(np.interp(alpha_c, full["alpha"], full[col]))
            if i > 0 and a[i - 1] < alpha_c <= a[i]:
                xs, ys = [alpha_c] + xs, [yc] + ys
            if j + 1 < len(a) and a[j] <= alpha_c < a[j + 1]:
                xs, ys = xs + [alpha_c], ys + [yc]
        ax.plot(xs, ys, "-", color=COLORS["global"], lw=2.2, label="global minimum" if first else None, zorder=3)
        first = False
        i = j + 1


def plot_eps_g(glob, sim=None, ax=None, *, alpha_c=None, alpha_l=None, eps_lin=None):
    """(b) test error ε_g of the global minimum vs α (black; it jumps at α_c, where the global minimum
    switches branch), both branches (thin dotted), the linear baseline ε_lin (green dashed), α_c and α_l
    marked, and simulation points of both initialisations (colour = init)."""
    ax = _ax(ax)
    g = glob.sort_values("alpha").reset_index(drop=True)
    for b, tag in (("semantic", "sem"), ("positional", "pos")):
        if f"eps_g_{tag}" in g:
            ax.plot(g["alpha"], g[f"eps_g_{tag}"], ":", lw=1.2, color=COLORS[b], label=f"{b} branch")
    _broken_global(ax, g, alpha_c)
    el = eps_lin if eps_lin is not None else (float(g["eps_lin"].iloc[0]) if "eps_lin" in g else None)
    if el is not None:
        ax.axhline(el, color=COLORS["linear"], ls="--", lw=1.2, label=f"ε_lin = {el:.5f} (linear baseline)")
    _vline(ax, alpha_c, "α_c", COLORS["alpha_c"], "-.")
    _vline(ax, alpha_l, "α_l", COLORS["linear"], ":")
    if sim is not None and len(sim):
        _sim_points(ax, sim, "eps_g", absval=False)
    ax.set_xlabel("α = n/d")
    ax.set_ylabel("ε_g")
    ax.set_title("Test error of the global minimum")
    _style_ax(ax)
    _legend_outside(ax)
    return ax.figure


def plot_delta_e_t(glob, ax=None, *, alpha_c=None, sim=None):
    """(c) Δe_t = e_t^sem − e_t^pos vs α (> 0: the positional minimum is global), α_c marked; ``sim``: one row
    per α with ``delta_e_t_mean`` (and ``delta_e_t_sem``), the finite-d difference of the two inits."""
    ax = _ax(ax)
    g = glob.sort_values("alpha")
    ax.plot(g["alpha"], g["delta_e_t"], "-", color=COLORS["global"], label="theory Δe_t = e_t^sem − e_t^pos")
    ax.axhline(0.0, color="0.5", lw=0.8)
    _vline(ax, alpha_c, "α_c", COLORS["alpha_c"], "-.")
    if sim is not None and len(sim) and "delta_e_t_mean" in sim:
        err = sim["delta_e_t_sem"] if "delta_e_t_sem" in sim else None
        ax.errorbar(sim["alpha"], sim["delta_e_t_mean"], yerr=err, fmt="o", ms=5, mfc="white", capsize=2,
                    color="k", lw=1.0, label="simulation (sem. init − pos. init)")
    ax.set_xlabel("α = n/d")
    ax.set_ylabel("Δe_t")
    ax.set_title("Training-loss gap (> 0: positional global)")
    ax.ticklabel_format(axis="y", style="sci", scilimits=(0, 0))
    _style_ax(ax)
    _legend_outside(ax)
    return ax.figure


def _heat(ax, grid, col, title, cmap, label):
    from matplotlib.colors import TwoSlopeNorm
    piv = grid.pivot_table(index="omega", columns="alpha", values=col, dropna=False)
    a, w, Z = piv.columns.to_numpy(float), piv.index.to_numpy(float), piv.to_numpy(float)
    kw: dict[str, Any] = {}
    if np.isfinite(Z).any():
        lim = float(np.nanmax(np.abs(Z))) or 1.0
        kw["norm"] = TwoSlopeNorm(0.0, -lim, lim)
    cm = plt.get_cmap(cmap).with_extremes(bad="0.85")
    mesh = ax.pcolormesh(a, w, np.ma.masked_invalid(Z), shading="nearest", cmap=cm, **kw)
    cb = ax.figure.colorbar(mesh, ax=ax, label=label, shrink=0.9)
    cb.formatter.set_powerlimits((0, 0))
    cb.update_ticks()
    ax.set_xlabel("α = n/d")
    ax.set_ylabel("ω", rotation=0, labelpad=10)
    ax.set_title(title)
    return mesh


_ONE_BRANCH = (("positional", "#f3d9c4", "only the positional branch valid"),
               ("semantic", "#c9dcea", "only the semantic branch valid"))


def _one_branch(ax, grid) -> list:
    """Shade the cells where only one pinned branch is valid (Δe_t undefined there; the valid branch is the
    global minimum among the pinned ones) in a pale tint of that branch's colour; no branch valid stays grey."""
    from matplotlib.colors import ListedColormap
    from matplotlib.patches import Patch
    if not {"state_sem", "state_pos"} <= set(grid.columns):
        return []
    g = grid.assign(_one=np.where((grid["state_pos"] == "ok") & (grid["state_sem"] != "ok"), 0.0,
                                  np.where((grid["state_sem"] == "ok") & (grid["state_pos"] != "ok"), 1.0, np.nan)))
    piv = g.pivot_table(index="omega", columns="alpha", values="_one", dropna=False)
    Z = np.ma.masked_invalid(piv.to_numpy(float))
    if Z.count() == 0:
        return []
    ax.pcolormesh(piv.columns.to_numpy(float), piv.index.to_numpy(float), Z, shading="nearest", vmin=0, vmax=1,
                  cmap=ListedColormap([c for _, c, _ in _ONE_BRANCH]))
    return [Patch(color=c, label=lab) for _, c, lab in _ONE_BRANCH] + [Patch(color="0.85", label="no valid branch")]


def _lines(ax, lines):
    if lines is None or len(lines) == 0:
        return []
    lines = lines.sort_values("omega")
    out = []
    for col, lab, c, ls in (("alpha_c", "α_c(ω)", "k", "-"), ("alpha_l", "α_l(ω)", "#006400", "--")):
        if col in lines:
            ok = lines[col].notna()
            out += ax.plot(lines.loc[ok, col], lines.loc[ok, "omega"], ls, color=c, marker="o", ms=3.5, lw=1.8,
                           label=lab)
    return out


def empirical_delta(results):
    """Finite-d Δ training loss per (α, ω) cell from a sweep's results (rows with alpha, omega, init, e_t; one
    per instance or already averaged): mean e_t of the semantic init minus that of the positional init, as in
    the paper's experimental diagram. Columns: omega, alpha, delta_e_t, n_sem, n_pos."""
    import pandas as pd
    need = {"alpha", "omega", "init", "e_t"}
    if not need <= set(results.columns):
        from .errors import ParameterError
        raise ParameterError("results", f"a table with columns {sorted(need)}", sorted(results.columns))
    r = results[results["init"].isin(["semantic", "positional"])]
    m = r.groupby(["omega", "alpha", "init"])["e_t"].agg(["mean", "count"]).unstack("init")
    out = pd.DataFrame({"delta_e_t": m[("mean", "semantic")] - m[("mean", "positional")],
                        "n_sem": m[("count", "semantic")], "n_pos": m[("count", "positional")]}).reset_index()
    return out.dropna(subset=["delta_e_t"])


def plot_phase_diagram(grid, lines=None, axes=None, *, empirical=None):
    """(d) the (α, ω) heatmaps — Δe_t = e_t^sem − e_t^pos (red: positional global, blue: semantic global)
    and ε_lin − ε_g^global (green: attention beats the linear baseline) — with the α_c(ω) and α_l(ω) lines;
    with ``empirical`` (:func:`empirical_delta`) a third panel: the finite-d Δ training loss between the two
    initialisations per cell, under the theory's lines. Δe_t needs both branches valid: cells where only one
    is valid are shaded pale orange (positional) or pale blue (semantic), grey where neither is (see the grid's
    ``state_sem``/``state_pos``). ``axes``: two (three) Axes, created if None."""
    n = 2 if empirical is None or len(empirical) == 0 else 3
    if axes is None:
        with plt.rc_context(STYLE):
            fig, axes = plt.subplots(1, n, figsize=(6.0 * n, 4.4), layout="constrained")
    _heat(axes[0], grid, "delta_e_t", "Δe_t = e_t^sem − e_t^pos", "RdBu_r", "Δe_t (> 0: positional global)")
    handles = _one_branch(axes[0], grid) + _lines(axes[0], lines)
    _heat(axes[1], grid, "eps_lin_minus_eps_g", "ε_lin − ε_g of the global minimum", "PiYG",
          "ε_lin − ε_g (> 0: attention beats linear)")
    _lines(axes[1], lines)
    if n == 3:
        _heat(axes[2], empirical, "delta_e_t", "finite d: e_t(semantic init) − e_t(positional init)", "RdBu_r",
              "Δ training loss")
        _lines(axes[2], lines)
    for ax in axes:
        ax.grid(False)
    if handles:
        fig = axes[0].figure
        fig.legend(handles=handles, loc="outside lower center", ncol=min(len(handles), 5), frameon=False) \
            if fig.get_layout_engine() is not None else axes[0].legend(handles=handles, loc="upper left",
                                                                      bbox_to_anchor=(0.0, -0.15), ncol=2)
    return axes[0].figure


def plot_alpha_c_line(lines, ax=None):
    """α_c(ω) and α_l(ω) as lines in the (α, ω) plane (the coarse phase boundary of ``reproduce``)."""
    ax = _ax(ax)
    _lines(ax, lines)
    ax.set_xlabel("α = n/d")
    ax.set_ylabel("ω", rotation=0, labelpad=10)
    ax.set_title("Phase boundary: positional (left of α_c) / semantic (right)")
    _style_ax(ax)
    _legend_outside(ax)
    return ax.figure


def save_figure(fig, path_stem) -> list[Path]:
    """Write ``<path_stem>.png`` and ``<path_stem>.pdf``; returns the paths. The figure is closed."""
    stem = Path(path_stem)
    stem.parent.mkdir(parents=True, exist_ok=True)
    out = []
    for ext in ("png", "pdf"):
        p = stem.with_name(stem.name + "." + ext)
        fig.savefig(p, bbox_inches="tight", dpi=130)
        out.append(p)
    plt.close(fig)
    return out
