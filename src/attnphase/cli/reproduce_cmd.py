"""``attnphase reproduce``: the paper's main results on its defaults, in one command (docs/reproduce.md)."""

from __future__ import annotations

import json
import math
import time
from pathlib import Path
from typing import Any

import numpy as np
import typer
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from ._common import console, to_jsonable
from . import app

# quick (default) and --full settings
QUICK = dict(alphas=np.round(np.linspace(0.6, 2.0, 15), 6), omegas=[0.05, 0.1, 0.15, 0.2, 0.25, 0.3],
             pd_alphas=np.round(np.linspace(0.5, 1.9, 15), 6), sim_alphas=[0.8, 1.2, 1.6, 2.0], d=250,
             instances=3, optimizer="lbfgs", test_samples=5000)
FULL = dict(alphas=np.round(np.linspace(0.2, 2.0, 37), 6),
            omegas=[0.02, 0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.45, 0.5],
            pd_alphas=np.round(np.linspace(0.1, 2.5, 25), 6),
            sim_alphas=[0.2, 0.4, 0.6, 0.8, 1.0, 1.2, 1.4, 1.6, 1.8, 2.0], d=1000, instances=24,
            optimizer="gd", test_samples=50000)
SIM_COLS = ("m", "theta", "theta_over_sigma2", "q", "e_t", "eps_g")


def _simulate_points(params, cfg, seed, prog) -> tuple[Any, str | None]:
    """Finite-d runs, both inits, summarised per (α, init) as mean and standard error over instances."""
    import pandas as pd
    try:
        from ..simulate import TrainConfig, simulate
    except ImportError as exc:  # the simulation module is developed in parallel
        return pd.DataFrame(), f"simulation skipped: attnphase.simulate not available ({exc})"
    rows = []
    task = prog.add_task(f"simulate d={cfg['d']}", total=2 * len(cfg["sim_alphas"]))
    for init in ("semantic", "positional"):
        for k, a in enumerate(cfg["sim_alphas"]):
            r = simulate(params, alpha=float(a), d=cfg["d"], config=TrainConfig(init=init, optimizer=cfg["optimizer"]),
                         instances=cfg["instances"], seed=seed + 1000 * k + (0 if init == "semantic" else 500),
                         test_samples=cfg["test_samples"])
            row: dict[str, Any] = dict(alpha=float(a), init=init, d=cfg["d"], instances=cfg["instances"])
            for c in SIM_COLS:
                if hasattr(r, c):
                    v = np.asarray(getattr(r, c), float)
                    if c in ("m", "theta", "theta_over_sigma2"):
                        v = np.abs(v)
                    row[f"{c}_mean"] = float(np.mean(v))
                    row[f"{c}_sem"] = float(np.std(v, ddof=1) / math.sqrt(len(v))) if len(v) > 1 else float("nan")
            if hasattr(r, "converged"):
                row["converged_frac"] = float(np.mean(np.asarray(r.converged, float)))
            rows.append(row)
            prog.advance(task)
    return pd.DataFrame(rows), None


def _agreement(sim, sem_tab, pos_tab) -> list[dict[str, Any]]:
    """(simulation − theory)/SE per (α, init) for the branch the init starts in (semantic → semantic, …)."""
    out = []
    if sim is None or len(sim) == 0:
        return out
    for _, row in sim.iterrows():
        tab = sem_tab if row["init"] == "semantic" else pos_tab
        hit = tab[np.isclose(tab["alpha"], row["alpha"]) & tab["converged"].astype(bool)]
        if hit.empty:
            continue
        t = hit.iloc[0]
        s2 = float(t["sigma"]) ** 2
        theory = {"theta_over_sigma2": abs(t["theta"]) / s2, "m": abs(t["m"]), "eps_g": t["eps_g"],
                  "e_t": t["e_t"]}
        for c, tv in theory.items():
            if f"{c}_mean" in row and np.isfinite(row.get(f"{c}_mean", np.nan)):
                se = row.get(f"{c}_sem", np.nan)
                z = (row[f"{c}_mean"] - tv) / se if se and np.isfinite(se) and se > 0 else float("nan")
                out.append(dict(alpha=row["alpha"], init=row["init"], quantity=c, simulation=row[f"{c}_mean"],
                                sem=se, theory=float(tv), z=float(z)))
    return out


@app.command("reproduce")
def reproduce(out: Path = typer.Option(Path("attnphase-reproduce"), "--out", help="Output directory."),
              full: bool = typer.Option(False, "--full", help="Paper-scale run: d=1000, 24 instances, GD "
                                        "(hours; see docs/reproduce.md)."),
              seed: int = typer.Option(0, "--seed", help="Base seed of the finite-d runs."),
              no_sim: bool = typer.Option(False, "--no-sim", help="Theory only (skip the finite-d check).")) -> None:
    """Reproduce the paper on its defaults (ω = 0.3, σ = 0.5, λ = 0.01, standard A): theory curves of both
    branches, α_c, α_l, the α_c(ω) line, a finite-d check; figures, CSV tables, provenance and summary.txt."""
    import pandas as pd

    from ..model import ModelParams
    from ..phase import phase_diagram, transition
    from ..plots import plot_delta_e_t, plot_eps_g, plot_overlaps, plot_phase_diagram, save_figure
    from ..provenance import provenance

    cfg = FULL if full else QUICK
    params = ModelParams(omega=0.3)
    out.mkdir(parents=True, exist_ok=True)
    t0 = time.time()
    with Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                  console=console) as prog:
        tasks: dict[str, int] = {}

        def cb(stage, i, n):
            key = f"ω=0.3 {stage}"
            if key not in tasks:
                tasks[key] = prog.add_task(key, total=n)
            prog.update(tasks[key], completed=i)

        tr = transition(params, alphas=cfg["alphas"], progress=cb)
        pd_task = prog.add_task("α_c(ω) line", total=len(cfg["omegas"]))
        seen: set = set()

        def cb2(w, stage, i, n):
            if w not in seen:
                seen.add(w)
                prog.update(pd_task, completed=len(seen) - 1)

        grid, lines = phase_diagram(params, cfg["omegas"], cfg["pd_alphas"], progress=cb2)
        prog.update(pd_task, completed=len(cfg["omegas"]))
        t_theory = time.time() - t0
        sim, sim_note = (pd.DataFrame(), "simulation skipped (--no-sim)") if no_sim else \
            _simulate_points(params, cfg, seed, prog)
    t_total = time.time() - t0

    theory = pd.concat([tr.semantic, tr.positional], ignore_index=True)
    theory.to_csv(out / "theory_omega0.3.csv", index=False)
    tr.global_table.to_csv(out / "global_omega0.3.csv", index=False)
    grid.to_csv(out / "phase_grid.csv", index=False)
    lines.to_csv(out / "phase_lines.csv", index=False)
    if len(sim):
        sim.to_csv(out / "simulation.csv", index=False)
    agree = pd.DataFrame(_agreement(sim, tr.semantic, tr.positional))
    if len(agree):
        agree.to_csv(out / "agreement.csv", index=False)

    save_figure(plot_overlaps(theory, sim), out / "fig_overlaps")
    sim_glob = None
    if len(sim) and "e_t_mean" in sim:  # finite-d global minimum = init with the lower training loss
        sim_glob = sim.loc[sim.groupby("alpha")["e_t_mean"].idxmin()].assign(init="global (lower e_t)")
    save_figure(plot_eps_g(tr.global_table, sim_glob, alpha_c=tr.alpha_c, alpha_l=tr.alpha_l, eps_lin=tr.eps_lin),
                out / "fig_eps_g")
    save_figure(plot_delta_e_t(tr.global_table, alpha_c=tr.alpha_c), out / "fig_delta_e_t")
    save_figure(plot_phase_diagram(grid, lines), out / "fig_phase_diagram")

    def f(x, p=4):
        return "n/a" if x is None or (isinstance(x, float) and not math.isfinite(x)) else f"{x:.{p}g}"

    lines_txt = [
        f"attnphase reproduce ({'full' if full else 'quick'}) — ω=0.3, σ=0.5, λ=0.01, A=[[0.6,0.4],[0.4,0.6]]",
        f"  α_c  = {f(tr.alpha_c)}   (paper ≈ 1.24)   e_t^sem = e_t^pos",
        f"  α_l  = {f(tr.alpha_l)}   (paper ≈ 1.45)   ε_g(global) = ε_lin",
        f"  ε_lin = {f(tr.eps_lin, 5)}   (paper ≈ 0.00197)",
        f"  spinodals: semantic {f(tr.spinodal_semantic)}, positional {f(tr.spinodal_positional)}"
        f" (n/a = branch valid on the whole grid)",
        f"  mixed fixed point found: {tr.mixed_found}",
        "  α_c(ω): " + ", ".join(f"ω={r.omega:g}:{f(r.alpha_c, 3)}" for r in lines.itertuples()),
    ]
    if len(agree):
        lines_txt.append(f"  finite-d check (d={cfg['d']}, {cfg['instances']} inst., {cfg['optimizer']}), "
                         "(sim − theory)/SE, same-branch init:")
        for q, g in agree.groupby("quantity"):
            z = g["z"].abs()
            lines_txt.append(f"    {q:18s} median |z| = {f(float(z.median()), 3)}, max |z| = {f(float(z.max()), 3)}"
                             f"  ({len(g)} points)")
    elif sim_note:
        lines_txt.append(f"  {sim_note}")
    lines_txt.append(f"  run time: theory {t_theory:.0f} s, total {t_total:.0f} s; files in {out}/")
    summary = "\n".join(lines_txt) + "\n"
    (out / "summary.txt").write_text(summary)
    prov = provenance(dict(params=params.to_dict(), full=full, seed=seed, no_sim=no_sim,
                           **{k: (list(map(float, v)) if isinstance(v, (list, np.ndarray)) else v)
                              for k, v in cfg.items()}),
                      kind="reproduce", results=tr.to_dict() | {"provenance": None},
                      alpha_c_line=lines.to_dict(orient="records"), run_time_s=t_total, simulation_note=sim_note)
    (out / "provenance.json").write_text(json.dumps(to_jsonable(prov), indent=2, default=str) + "\n")
    typer.echo(summary, nl=False)
