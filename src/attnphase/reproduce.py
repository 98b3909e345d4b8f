"""The science of ``attnphase reproduce`` (docs/reproduce.md): the paper's main results on its defaults
(ω = 0.3, σ = 0.5, λ = 0.01, standard A) — both branches, α_c, α_l, the mixed-fixed-point search, the α_c(ω)
and α_l(ω) lines (``full``: the 40 × 40 (α, ω) diagram), a finite-d check — written as CSV tables, figures,
provenance and ``summary.txt``. The CLI only parses, calls :func:`reproduce` and prints its summary."""

from __future__ import annotations

import json
import math
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import numpy as np

def _grid(start: float, stop: float, step: float) -> list[float]:
    return [round(float(v), 6) for v in np.arange(start, stop + step / 2, step)]


# quick (default) and --full settings. The diagram's α grid is a subset of the ω = 0.3 grid, so the ω = 0.3 row
# of the diagram reuses the ω = 0.3 curves (same resolution). 0.7 is there for small ω, where the semantic branch
# turns unstable just below α_c (ω = 0.1: at 0.605, α_c ≈ 0.75) and a 0.2 step leaves no bracket.
QUICK = dict(alphas=_grid(0.4, 2.0, 0.1), curve_nodes=4, nodes=8, xtol=1e-4,
             mixed_alphas=[1.0, "alpha_c"], omegas=[0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4],
             pd_alphas=sorted(_grid(0.6, 2.0, 0.2) + [0.7]), pd_nodes=4, pd_refine=False, sim_alphas=[0.8, 1.2, 1.6, 2.0], d=400,
             instances=5, optimizer="lbfgs", test_samples=5000)
FULL = dict(alphas=_grid(0.2, 2.5, 0.05), curve_nodes=8, nodes=8, xtol=1e-4,
            mixed_alphas=[0.8, 1.0, "alpha_c", 1.5, 2.0, 2.5],
            omegas=[round(float(w), 6) for w in np.linspace(0.02, 0.5, 40)],
            pd_alphas=[round(float(a), 6) for a in np.linspace(0.05, 2.0, 40)],
            pd_nodes=4, pd_refine=False, sim_alphas=_grid(0.2, 2.0, 0.2), d=1000, instances=24, optimizer="gd",
            test_samples=50000)
"""``--full``: the paper's (α, ω) diagram at 40 ω × 40 α (:func:`attnphase.phase.phase_diagram` defaults: two
worker processes, 178 s (library) to 187 s (CLI) measured on the idle 2-core machine on 2026-12-06:
docs/benchmarks.md, "The 40 × 40 phase diagram")."""
SIM_COLS = ("m", "theta", "theta_over_sigma2", "q", "e_t", "eps_g")


def _simulate_points(params, cfg, seed, progress) -> tuple[Any, str | None]:
    """Finite-d runs, both inits, summarised per (α, init) as mean and standard error over instances."""
    import pandas as pd

    from .simulate import TrainConfig, simulate
    rows = []
    stage = f"finite-d check (d={cfg['d']}, {cfg['optimizer']})"
    total = 2 * len(cfg["sim_alphas"])
    for k, a in enumerate(cfg["sim_alphas"]):
        for init in ("semantic", "positional"):
            r = simulate(params, alpha=float(a), d=cfg["d"], config=TrainConfig(init=init, optimizer=cfg["optimizer"]),
                         instances=cfg["instances"], seed=seed + 1000 * k + (0 if init == "semantic" else 500),
                         test_samples=cfg["test_samples"])
            row: dict[str, Any] = dict(alpha=float(a), init=init, d=cfg["d"], instances=cfg["instances"],
                                       optimizer=cfg["optimizer"])
            for c in SIM_COLS:
                v = np.asarray(getattr(r, c), float)
                if c in ("m", "theta", "theta_over_sigma2"):
                    v = np.abs(v)
                row[f"{c}_mean"] = float(np.mean(v))
                row[f"{c}_sem"] = float(np.std(v, ddof=1) / math.sqrt(len(v))) if len(v) > 1 else float("nan")
            row["e_t_values"] = json.dumps([float(x) for x in np.asarray(r.e_t, float)])
            row["converged_frac"] = float(np.mean(np.asarray(r.converged, float)))
            rows.append(row)
            progress(stage, len(rows), total)
    return pd.DataFrame(rows), None


def _sim_delta(sim):
    """Per α: finite-d Δe_t = e_t(semantic init) − e_t(positional init), mean and standard error."""
    import pandas as pd
    rows = []
    for a, g in sim.groupby("alpha"):
        s, p = g[g["init"] == "semantic"], g[g["init"] == "positional"]
        if s.empty or p.empty:
            continue
        s, p = s.iloc[0], p.iloc[0]
        se = math.hypot(s["e_t_sem"], p["e_t_sem"])
        rows.append(dict(alpha=float(a), delta_e_t_mean=s["e_t_mean"] - p["e_t_mean"], delta_e_t_sem=se,
                         lower_e_t="semantic" if s["e_t_mean"] < p["e_t_mean"] else "positional"))
    return pd.DataFrame(rows)


def _agreement(sim, sem_tab, pos_tab, params=None) -> list[dict[str, Any]]:
    """(simulation − theory)/SE per (α, init) for the branch the init starts in (semantic → semantic, …): its
    non-zero overlap (θ/σ² or m), ε_g and e_t. With ``params``, ε_g and e_t are compared with the theory at the
    run's d (:func:`_at_dimension`; ``theory`` is then that value, ``theory_d_inf`` the d → ∞ one)."""
    out = []
    if sim is None or len(sim) == 0:
        return out
    for _, row in sim.iterrows():
        tab = sem_tab if row["init"] == "semantic" else pos_tab
        ok = tab["state"].isin(["ok", "unstable"]) if "state" in tab else tab["converged"].astype(bool)
        hit = tab[np.isclose(tab["alpha"], row["alpha"]) & ok]
        if hit.empty:
            continue
        t = hit.iloc[0]
        s2 = float(t["sigma"]) ** 2
        theory = {"theta_over_sigma2": abs(t["theta"]) / s2, "m": abs(t["m"]), "eps_g": t["eps_g"],
                  "e_t": t["e_t"]}
        at_d = _at_dimension(params, t, int(row["d"])) if params is not None and "d" in row else {}
        for c, tv in theory.items():
            d_inf, tv = tv, at_d.get(c, tv)
            if c in ("theta_over_sigma2", "m") and tv == 0.0:
                continue  # the pinned overlap: |finite-d value| is biased away from 0, a z-score means nothing
            if f"{c}_mean" in row and np.isfinite(row.get(f"{c}_mean", np.nan)):
                se = row.get(f"{c}_sem", np.nan)
                z = (row[f"{c}_mean"] - tv) / se if se and np.isfinite(se) and se > 0 else float("nan")
                rel = (row[f"{c}_mean"] - tv) / abs(tv) if tv else float("nan")
                out.append(dict(alpha=row["alpha"], init=row["init"], quantity=c, simulation=row[f"{c}_mean"],
                                sem=se, theory=float(tv), z=float(z), rel_diff=float(rel), theory_d_inf=float(d_inf)))
    return out


def _at_dimension(params, t, d: int) -> dict[str, float]:
    """ε_g and e_t of the theory row ``t`` (the split rule's q, m, θ, V) at dimension ``d``: the d → ∞ values
    plus their O(1/d) terms (:func:`attnphase.theory.finite_size.record`, 4096 × 4 points)."""
    from .theory.finite_size import from_scalars, record
    x = from_scalars(*(float(t[k]) for k in ("q", "m", "theta", "V")))
    rec = record(params, float(t["alpha"]), x, d, {"eps_g": float(t["eps_g"]), "e_t": float(t["e_t"])},
                 points=2 ** 12, scrambles=4)
    return {"eps_g": rec["eps_g_at_d"], "e_t": rec["e_t_at_d"]}


def _line_value(x, bound) -> str:
    if x is not None and isinstance(x, float) and math.isfinite(x):
        return f"{x:.3f}"
    return bound.replace(" ", "") if isinstance(bound, str) and bound else "n/a"


def _end(tr, branch) -> str:
    """The branch's end as the transition words it (:meth:`TransitionResult.branch_end`: a branch that is never
    valid is not "valid on the whole range")."""
    alpha, kind = tr.branch_end(branch)
    return kind if alpha is None else f"{alpha:.4f} ({kind})"


def _fmt(x, p=4):
    if x is None or (isinstance(x, float) and not math.isfinite(x)):
        return "n/a"
    return f"{x:.{p}g}"


def _summary(tr, lines, agree, sim_delta, cfg, full, sim_note, times, out) -> str:
    def root(x):
        return "n/a" if x is None else f"{x:.4f}"

    mixed = [m for m in tr.mixed if m.get("converged")]
    if tr.mixed_found:
        found = [m for m in mixed if m.get("mixed")]
        above = all(m["e_t"] > min(_branch_e_t(tr, m["alpha"])) for m in found)
        unstable = all(m["leading_eigenvalue"] > 1 for m in found)
        mixed_txt = ("yes, at α = " + ", ".join(f"{m['alpha']:.3g}" for m in found)
                     + f" (of {len({m['alpha'] for m in tr.mixed})} searched); "
                     + ("unstable (leading eigenvalue of the map " + ", ".join(
                         f"{m['leading_eigenvalue']:.2f}" for m in found) + " > 1)" if unstable else "not all unstable")
                     + ("; e_t above the lower pure branch: never the global minimum" if above else
                        "; e_t BELOW a pure branch somewhere: check mixed_search_omega0.3.csv"))
    elif mixed:
        mixed_txt = "none (the root finder ended on " + ", ".join(sorted({m["kind"] for m in mixed})) + ")"
    else:
        mixed_txt = "not searched" if not tr.mixed else "inconclusive (root finder did not converge)"
    acl = ", ".join(f"{r.omega:g}:{_line_value(r.alpha_c, r.alpha_c_bound)}" for r in lines.itertuples())
    all_line = ", ".join(f"{r.omega:g}:{_line_value(r.alpha_l, r.alpha_l_bound)}" for r in lines.itertuples())
    s = [f"attnphase reproduce ({'full' if full else 'quick'}): ω=0.3, σ=0.5, λ=0.01, A=[[0.6,0.4],[0.4,0.6]]",
         f"  α_c   = {root(tr.alpha_c)}   (paper ≈ 1.24)  e_t^sem = e_t^pos; positional global below, semantic above",
         f"  α_l   = {root(tr.alpha_l)}   (paper ≈ 1.45)  ε_g(global) = ε_lin; attention beats the baseline above",
         f"  ε_lin = {tr.eps_lin:.7f} (paper ≈ 0.00197)",
         f"  branch ends: semantic {_end(tr, 'semantic')}, positional {_end(tr, 'positional')}",
         f"  mixed fixed point (m≠0, θ≠0): {mixed_txt}",
         f"  α_c(ω): {acl}",
         f"  α_l(ω): {all_line}"]
    if agree is not None and len(agree):
        s.append(f"  finite-d check: d={cfg['d']}, {cfg['instances']} instances/point, {cfg['optimizer']}, "
                 f"α ∈ {{{', '.join(f'{a:g}' for a in cfg['sim_alphas'])}}}; each init vs its own branch "
                 "(ε_g, e_t: theory at that d, with the O(1/d) term):")
        for q, g in agree.groupby("quantity", sort=False):
            z = g["z"].abs()
            rel = g["rel_diff"].abs()
            s.append(f"    {q:18s} median |z| {_fmt(float(z.median()), 2):>5}, max |z| {_fmt(float(z.max()), 2):>5}, "
                     f"median |rel. diff| {100 * float(rel.median()):.1f} %  ({len(g)} points)")
        if sim_delta is not None and len(sim_delta) and tr.alpha_c is not None:
            pred = np.where(sim_delta["alpha"] > tr.alpha_c, "semantic", "positional")
            agree_n = int((pred == sim_delta["lower_e_t"].to_numpy()).sum())
            s.append(f"    lower training loss at finite d = theory's global branch at {agree_n}/{len(sim_delta)} α "
                     "(" + ", ".join(f"{r.alpha:g}:{r.lower_e_t[:3]}" for r in sim_delta.itertuples()) + ")")
    elif sim_note:
        s.append(f"  {sim_note}")
    s.append(f"  run time {times['total']:.0f} s (ω=0.3 theory {times['transition']:.0f} s, α_c(ω) line "
             f"{times['diagram']:.0f} s, finite-d {times['simulation']:.0f} s, figures {times['figures']:.0f} s)")
    s.append(f"  files: {out}/ (summary.txt, *.csv, fig_*.png/pdf, provenance.json)")
    return "\n".join(s) + "\n"


def _branch_e_t(tr, alpha):
    out = []
    for tab in (tr.semantic, tr.positional):
        ok = tab[tab["state"] == "ok"]
        if len(ok) >= 2:
            out.append(float(np.interp(alpha, ok["alpha"], ok["e_t"])))
    return out or [float("inf")]


@dataclass
class ReproduceResult:
    """What :func:`reproduce` computed: the summary text, the ω = 0.3 transition, the diagram's per-ω lines,
    the run times and the files written."""

    summary: str
    transition: Any
    lines: Any
    times: dict[str, float]
    files: list[str] = field(default_factory=list)


def reproduce(out: Path, *, full: bool = False, seed: int = 0, simulate: bool = True,
              progress: Callable[[str, int, int], None] | None = None, params: Any = None) -> ReproduceResult:
    """Run the reproduction into ``out`` (created). ``progress(stage, done, total)`` after each unit of work.
    ``full``: the paper-scale configuration (:data:`FULL`), else :data:`QUICK`. ``params``: the model (L, r, r*,
    A, P, σ, λ; its ω is set to 0.3); default the paper's. Beyond L = 2, r = 1 the theory runs on the QMC
    engine (:func:`attnphase.theory.solve.choose`) and the split rule's mixed-point search is skipped."""
    import pandas as pd

    from .jsonable import to_jsonable
    from .model import ModelParams
    from .phase import mixed_at, phase_diagram, transition
    from .theory.solve import choose
    from .plots import plot_alpha_c_line, plot_delta_e_t, plot_eps_g, plot_overlaps, plot_phase_diagram, save_figure
    from .provenance import provenance

    cb = progress or (lambda stage, i, n: None)
    cfg = FULL if full else QUICK
    params = ModelParams(omega=0.3) if params is None else params.replace(omega=0.3)
    split = choose(params, "auto") == "split"
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    times: dict[str, float] = {}
    t0 = time.time()
    tr = transition(params, alphas=cfg["alphas"], nodes=cfg["nodes"], curve_nodes=cfg["curve_nodes"],
                    xtol=cfg["xtol"], progress=lambda s, i, n: cb(f"ω=0.3 theory: {s}", i, n), mixed_alphas=[],
                    extend=False)
    # mixed-fixed-point search ("alpha_c" = at the transition)
    if split:
        tr.mixed = mixed_at(params, {b: list(br) + br.extra for b, br in tr.branches.items()},
                            [tr.alpha_c if a == "alpha_c" else a for a in cfg["mixed_alphas"]
                             if a != "alpha_c" or tr.alpha_c is not None],
                            progress=lambda s, i, n: cb(f"ω=0.3 theory: {s}", i, n))
    times["transition"] = time.time() - t0
    t1 = time.time()
    n_w = len(cfg["omegas"])
    done: dict = {}

    def cb2(w, stage, i, n):
        done[(w, stage)] = i
        cb(f"(α, ω) diagram ({n_w} ω × {len(cfg['pd_alphas'])} α × 2)", sum(done.values()),
           2 * n_w * len(cfg["pd_alphas"]))

    reuse = {0.3: tr.branches} if cfg["pd_nodes"] == cfg["curve_nodes"] else None
    grid, lines = phase_diagram(params, cfg["omegas"], cfg["pd_alphas"], nodes=cfg["pd_nodes"], progress=cb2,
                                refine=cfg["pd_refine"], reuse=reuse)
    # ω = 0.3 itself: use the refined values of the main computation
    i3 = lines.index[np.isclose(lines["omega"], 0.3)]
    lines.loc[i3, ["alpha_c", "alpha_l", "refined"]] = [tr.alpha_c, tr.alpha_l, True]
    times["diagram"] = time.time() - t1
    t2 = time.time()
    sim, sim_note = (pd.DataFrame(), "finite-d check skipped (--no-sim)") if not simulate else \
        _simulate_points(params, cfg, seed, cb)
    times["simulation"] = time.time() - t2

    t3 = time.time()
    theory = pd.concat([tr.semantic, tr.positional], ignore_index=True)
    tables = {"theory_omega0.3.csv": theory, "global_omega0.3.csv": tr.global_table,
              "refinement_omega0.3.csv": pd.DataFrame(tr.refined), "mixed_search_omega0.3.csv": pd.DataFrame(tr.mixed),
              "phase_grid.csv": grid, "phase_lines.csv": lines}
    agree = pd.DataFrame(_agreement(sim, tr.semantic, tr.positional, params))
    sim_delta = _sim_delta(sim) if len(sim) else pd.DataFrame()
    if len(sim):
        tables.update({"simulation.csv": sim, "agreement.csv": agree, "simulation_delta_e_t.csv": sim_delta})
    for name, df in tables.items():
        df.to_csv(out / name, index=False)
    files = list(tables)
    figs = [save_figure(plot_overlaps(theory, sim), out / "fig_overlaps"),
            save_figure(plot_eps_g(tr.global_table, sim, alpha_c=tr.alpha_c, alpha_l=tr.alpha_l, eps_lin=tr.eps_lin),
                        out / "fig_eps_g"),
            save_figure(plot_delta_e_t(tr.global_table, alpha_c=tr.alpha_c, sim=sim_delta), out / "fig_delta_e_t"),
            save_figure(plot_phase_diagram(grid, lines), out / "fig_phase_diagram"),
            save_figure(plot_alpha_c_line(lines), out / "fig_alpha_c_line")]
    files += [p.name for f in figs for p in f]
    times["figures"] = time.time() - t3
    times["total"] = time.time() - t0

    summary = _summary(tr, lines, agree, sim_delta, cfg, full, sim_note, times, out)
    (out / "summary.txt").write_text(summary)
    prov = provenance(dict(params=params.to_dict(), full=full, seed=seed, simulate=simulate,
                           **{k: (to_jsonable(list(v)) if isinstance(v, (list, tuple, np.ndarray)) else v)
                              for k, v in cfg.items()}),
                      kind="reproduce", results=tr.to_dict() | {"provenance": tr.provenance},
                      alpha_c_line=lines.to_dict(orient="records"), run_time_s=times, simulation_note=sim_note)
    (out / "provenance.json").write_text(json.dumps(to_jsonable(prov), indent=2, default=str) + "\n")
    files += ["summary.txt", "provenance.json"]
    return ReproduceResult(summary, tr, lines, times, files)
