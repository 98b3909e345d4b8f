import matplotlib
import numpy as np
import pandas as pd
import pytest

from attnphase.phase import global_table, transition_from_tables
from attnphase.plots import (plot_alpha_c_line, plot_delta_e_t, plot_eps_g, plot_overlaps, plot_phase_diagram,
                             save_figure)

from _phase_stand_in import EPS_LIN_03, stand_in



def _sim():
    rows = []
    for init in ("semantic", "positional"):
        for a in (0.8, 1.6):
            rows.append(dict(alpha=a, init=init, m_mean=0.1, m_sem=0.01, theta_over_sigma2_mean=0.5,
                             theta_over_sigma2_sem=0.02, eps_g_mean=0.002, eps_g_sem=1e-4, e_t_mean=0.003,
                             e_t_sem=1e-4))
    return pd.DataFrame(rows)


def test_backend_is_agg():
    assert matplotlib.get_backend().lower() == "agg"


def test_overlaps_lines_and_errorbars():
    th = pd.concat([stand_in("semantic"), stand_in("positional")], ignore_index=True)
    fig = plot_overlaps(th, _sim())
    ax = fig.axes[0]
    assert len(ax.lines) >= 4  # θ and m for two branches (+ errorbar lines)
    assert len(ax.containers) == 4  # 2 inits × (θ, m)
    assert ax.get_xlabel().startswith("α")


def test_eps_g_marks_alpha_c_alpha_l_and_baseline(tmp_path):
    r = transition_from_tables(stand_in("semantic"), stand_in("positional"), EPS_LIN_03)
    fig = plot_eps_g(r["global_table"], _sim(), alpha_c=r["alpha_c"], alpha_l=r["alpha_l"], eps_lin=EPS_LIN_03)
    ax = fig.axes[0]
    labels = [l.get_label() for l in ax.lines]
    assert any(s.startswith("α_c") for s in labels) and any(s.startswith("α_l") for s in labels)
    assert any(s.startswith("ε_lin") for s in labels) and "global minimum" in labels
    assert len(ax.containers) == 2
    paths = save_figure(fig, tmp_path / "sub" / "eps_g")
    assert [p.suffix for p in paths] == [".png", ".pdf"] and all(p.stat().st_size > 1000 for p in paths)


def test_delta_e_t_given_axes():
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots()
    g = global_table(stand_in("semantic"), stand_in("positional"), EPS_LIN_03)
    assert plot_delta_e_t(g, ax, alpha_c=1.26) is fig
    assert len(ax.lines) == 3  # curve, zero line, α_c
    plt.close(fig)


def test_phase_diagram_heatmaps_with_lines():
    frames = []
    for w, shift in ((0.2, -0.1), (0.3, 0.0), (0.4, 0.1)):
        sem, pos = stand_in("semantic"), stand_in("positional")
        sem["alpha"] = sem["alpha"] + shift
        pos["alpha"] = pos["alpha"] + shift
        # put both on a common grid
        a = np.linspace(0.3, 2.0, 12)
        si = pd.DataFrame({c: np.interp(a, sem.alpha, sem[c]) for c in ("e_t", "eps_g")} | {"alpha": a})
        pi = pd.DataFrame({c: np.interp(a, pos.alpha, pos[c]) for c in ("e_t", "eps_g")} | {"alpha": a})
        g = global_table(si, pi, EPS_LIN_03)
        g.insert(0, "omega", w)
        frames.append(g)
    grid = pd.concat(frames, ignore_index=True)
    lines = pd.DataFrame(dict(omega=[0.2, 0.3, 0.4], alpha_c=[1.15, 1.25, 1.35], alpha_l=[1.35, 1.45, 1.55]))
    fig = plot_phase_diagram(grid, lines)
    heat = [ax for ax in fig.axes if ax.collections and ax.get_title()]
    assert len(heat) == 2
    for ax in heat:
        assert len(ax.lines) == 2  # α_c(ω), α_l(ω)
    fig2 = plot_alpha_c_line(lines)
    assert len(fig2.axes[0].lines) == 2


def _legend_outside_axes(ax):
    fig = ax.figure
    fig.canvas.draw()
    leg = ax.get_legend()
    assert leg is not None
    lb = leg.get_window_extent()
    axb = ax.get_window_extent()
    return lb.x0 >= axb.x1 - 1 or lb.y1 <= axb.y0 + 1


def test_eps_g_global_curve_breaks_at_alpha_c():
    r = transition_from_tables(stand_in("semantic"), stand_in("positional"), EPS_LIN_03)
    ac = r["alpha_c"]
    fig = plot_eps_g(r["global_table"], alpha_c=ac, alpha_l=r["alpha_l"], eps_lin=EPS_LIN_03)
    ax = fig.axes[0]
    glob = [l for l in ax.lines if l.get_color() == "black" and l.get_linestyle() == "-"]
    # no piece crosses α_c: the global curve is broken there
    assert not any(min(l.get_xdata()) < ac - 1e-9 and max(l.get_xdata()) > ac + 1e-9 for l in glob)
    left = [l for l in glob if abs(l.get_xdata()[-1] - ac) < 1e-12]
    right = [l for l in glob if abs(l.get_xdata()[0] - ac) < 1e-12]
    assert len(left) == 1 and len(right) == 1
    left, right = left[0], right[0]
    assert abs(left.get_xdata()[-1] - ac) < 1e-12 and abs(right.get_xdata()[0] - ac) < 1e-12
    # the left piece (positional) ends above the right one (semantic): ε_g jumps down at α_c
    assert left.get_ydata()[-1] > right.get_ydata()[0]
    assert _legend_outside_axes(ax)


def test_legends_do_not_cover_the_data():
    th = pd.concat([stand_in("semantic"), stand_in("positional")], ignore_index=True)
    for fig in (plot_overlaps(th, _sim()), plot_delta_e_t(global_table(stand_in("semantic"),
                                                                      stand_in("positional"), EPS_LIN_03))):
        assert _legend_outside_axes(fig.axes[0])


def test_empirical_delta_and_third_panel():
    from attnphase.errors import ParameterError
    from attnphase.plots import empirical_delta
    rows = []
    for w in (0.2, 0.3):
        for a in (1.0, 1.5):
            for init, e in (("semantic", 0.003), ("positional", 0.0028), ("random", 0.1)):
                for k in range(3):  # per-instance rows; their mean enters
                    rows.append(dict(omega=w, alpha=a, init=init, e_t=e + 1e-4 * k + (a - 1.0) * 1e-3 * (init == "positional")))
    emp = empirical_delta(pd.DataFrame(rows))
    assert len(emp) == 4 and set(emp["n_sem"]) == {3}
    cell = emp[(emp.omega == 0.3) & (emp.alpha == 1.5)].iloc[0]
    assert abs(cell["delta_e_t"] - (0.003 - 0.0033)) < 1e-12  # sem mean − pos mean
    with pytest.raises(ParameterError):
        empirical_delta(pd.DataFrame(dict(alpha=[1.0], omega=[0.3])))
    grid = pd.DataFrame([dict(omega=w, alpha=a, delta_e_t=1e-4 * (1.2 - a), eps_lin_minus_eps_g=1e-4 * (a - 1.4))
                         for w in (0.2, 0.3) for a in (1.0, 1.5)])
    lines = pd.DataFrame(dict(omega=[0.2, 0.3], alpha_c=[1.1, None], alpha_l=[1.3, None]))
    fig = plot_phase_diagram(grid, lines, empirical=emp)
    titled = [ax for ax in fig.axes if ax.get_title()]
    assert len(titled) == 3 and "finite d" in titled[2].get_title()
