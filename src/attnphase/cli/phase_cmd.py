"""``attnphase theory transition`` and ``attnphase theory phase-diagram`` (MODEL.md §6 "Transition"): parse,
call :mod:`attnphase.phase`, print."""

from __future__ import annotations

import json
from pathlib import Path

import typer

from ..errors import ParameterError, check_int, check_range
from ..guards import check_grid_product
from ..progress import progress_bar
from ._common import AOpt, LamOpt, LOpt, OmegaOpt, POpt, ROpt, RStarOpt, SigmaOpt, check_output_path, \
    check_theory_request, console, emit_json, model_params, parse_linspace, print_table, to_jsonable, write_atomic
from .theory_cmd import theory_app

QmcPointsOpt = typer.Option(None, "--qmc-points", help="QMC engine (L != 2, r != 1, r* != 1 or another P): Sobol "
                            "points per scramble, a power of two (default 1024, a fixed size: a transition "
                            "solves hundreds of points).")
ScramblesOpt = typer.Option(None, "--scrambles", help="QMC engine: independent scrambles >= 2 (default 4); "
                            "their spread gives the errors of α_c, α_l.")
EndXtolOpt = typer.Option(None, "--end-xtol", help="Resolution in α of a branch's end (default 1e-3; a QMC "
                          "transition may take 0.02 to save solves).")


def _model(L, r, r_star, sigma, lam, omega, A, P, nodes: int | None, qmc_points, scrambles):
    """The model, the integrator (:func:`attnphase.theory.solve.choose`: the split rule at L = 2, r = 1 with the
    paper's P, the QMC engine elsewhere) and the QMC config (None on the split rule); the split rule's checks
    run at once, and the other integrator's options are refused."""
    from ..theory.solve import choose
    params = model_params(L, r, sigma, lam, omega, A, r_star, P)
    how = choose(params, "auto")
    if how == "qmc":
        return params, how, _qmc(qmc_points, scrambles)
    for name, value in (("--qmc-points", qmc_points), ("--scrambles", scrambles)):
        if value is not None:
            raise ParameterError(name, "unset with the split rule (L = 2, r = r* = 1, P = ±(1, -1)ᵀ: its "
                                 "resolution is --nodes)", value)
    if nodes is not None:
        check_theory_request(params, nodes)
    return params, how, None


def _qmc(points, scrambles):
    """The QMC size asked for (:func:`attnphase.phase.continuation.phase_qmc`; None: the phase default)."""
    from ..phase.continuation import phase_qmc
    return None if points is None and scrambles is None else phase_qmc(points, scrambles)

_KEYS = ["alpha_c", "alpha_c_err", "alpha_c_bound", "alpha_c_against", "alpha_c_kind", "alpha_c_nodes", "alpha_l", "alpha_l_err", "alpha_l_bound",
         "alpha_l_nodes", "eps_lin",
         "alpha_range",
         "spinodal_semantic", "spinodal_semantic_kind", "spinodal_positional", "spinodal_positional_kind",
         "mixed_found", "alpha_c_grid", "alpha_l_grid", "alpha_c_1rsb", "alpha_c_1rsb_err"]


def _alphas(text: str | None, name: str = "--alphas"):
    if text is None:
        return None
    grid = parse_linspace(name, text)
    if grid.size < 2 or (grid <= 0).any():
        raise ParameterError(name, "START:STOP:NUM with values > 0 and NUM >= 2", text)
    return grid


def _nodes(name: str, v: int) -> int:
    if not 2 <= v <= 40:
        raise ParameterError(name, "an integer in [2, 40]", v)
    return v


@theory_app.command("transition")
def transition_cmd(omega: float = OmegaOpt, sigma: float = SigmaOpt, lam: float = LamOpt, A: str = AOpt,
                   L: int = LOpt, r: int = ROpt, r_star: int = RStarOpt, P: str = POpt,
                   qmc_points: int = QmcPointsOpt, scrambles: int = ScramblesOpt, end_xtol: float = EndXtolOpt,
                   nodes: int = typer.Option(8, "--nodes", help="Resolution of the Brent refinement of α_c, α_l "
                                             "(split rule, 2-40)."),
                   curve_nodes: int = typer.Option(4, "--curve-nodes", help="Resolution of the α-grid curves "
                                                   "(4: e_t within ~1e-5 of 8)."),
                   alphas: str = typer.Option(None, "--alphas", help="Starting α grid START:STOP:NUM (default "
                                              "0.3:2:18); extended up to --alpha-max / down to --alpha-min "
                                              "until α_c and α_l are found."),
                   alpha_max: float = typer.Option(6.0, "--alpha-max", help="Largest α of the extension."),
                   alpha_min: float = typer.Option(0.05, "--alpha-min", help="Smallest α of the extension."),
                   xtol: float = typer.Option(1e-4, "--xtol", help="Tolerance in α of the refinement."),
                   no_refine: bool = typer.Option(False, "--no-refine", help="Table interpolation only."),
                   no_mixed: bool = typer.Option(False, "--no-mixed", help="Skip the mixed-fixed-point search."),
                   no_survey: bool = typer.Option(False, "--no-survey", help="Skip the survey of all fixed points "
                                                  "(uninformative point, unpinned solves from saddles) that "
                                                  "decides the global minimum per α."),
                   no_rsb1: bool = typer.Option(False, "--no-rsb1", help="Skip α_c at one step of replica "
                                                "symmetry breaking (solved only where RS is in doubt: the "
                                                "competitor is the uninformative point, L = 2; minutes)."),
                   json_out: bool = typer.Option(False, "--json", help="Print JSON on stdout.")) -> None:
    """α_c (the global minimum becomes semantic), α_l (ε_g^global = ε_lin), where each branch ends and why, and
    the mixed-fixed-point search at one ω — any L, r, r*, A, P (the QMC engine beyond L = 2, r = 1, with the
    errors of α_c, α_l from its integration error)."""
    from ..phase import transition
    _nodes("--nodes", nodes)
    _nodes("--curve-nodes", curve_nodes)
    params, how, cfg = _model(L, r, r_star, sigma, lam, omega, A, P, nodes, qmc_points, scrambles)
    if how != "qmc":
        check_theory_request(params, curve_nodes, option="--curve-nodes")
    if end_xtol is not None:
        check_range("--end-xtol", end_xtol, lo=0.0, lo_open=True)
    check_range("--xtol", xtol, lo=0.0, lo_open=True)
    check_range("--alpha-min", alpha_min, lo=0.0, lo_open=True)
    check_range("--alpha-max", alpha_max, lo=alpha_min, lo_open=True)
    grid = _alphas(alphas)
    with progress_bar() as prog:
        tasks: dict[str, int] = {}

        def cb(stage, i, n):
            if stage not in tasks:
                tasks[stage] = prog.add_task(stage, total=n)
            prog.update(tasks[stage], completed=i)

        r = transition(params, alphas=grid, nodes=nodes, curve_nodes=curve_nodes, progress=cb,
                       refine=not no_refine, xtol=xtol, mixed_alphas=[] if no_mixed else None,
                       alpha_max=alpha_max, alpha_min=alpha_min, fixed_points=not no_survey, qmc_config=cfg,
                       rsb1=not no_rsb1,
                       **({} if end_xtol is None else dict(end_xtol=end_xtol)))
    d = r.to_dict()
    if json_out:
        emit_json(d)
        return
    print_table(f"transition (L={L}, r={r}, r*={r_star}, ω={omega:g}, σ={sigma:g}, λ={lam:g}; {how})",
                ["quantity", "value"], [[k, d[k]] for k in _KEYS])
    if d["global_kinds"]:
        console.print("global minimum: " + ", ".join(f"{r['kind']} on [{r['alpha_from']:g}, {r['alpha_to']:g}]"
                                                     for r in d["global_kinds"]))
    for k in ("alpha_c_reason", "alpha_l_reason"):
        if d[k]:
            console.print(f"{k[:7]} not found: {d[k]}")
    if d["caveat"]:
        console.print(f"[yellow]caveat: {d['caveat']}[/yellow]")
    for b, e in d["ends"].items():
        if e:
            console.print(f"{b} branch valid up to α ≈ {e['alpha']:.4f} (between {e['alpha_valid']:.4f} and "
                          f"{e['alpha_invalid']:.4f}): {e['kind']} — {e['reason']}")
    for m in r.mixed:
        console.print(f"mixed search at α={m['alpha']:.4g}: {m.get('kind')}, converged={m.get('converged')}, "
                      f"m={m.get('m', float('nan')):.4g}, θ={m.get('theta', float('nan')):.4g}, "
                      f"e_t={m.get('e_t', float('nan')):.6g}, "
                      f"leading eigenvalue={m.get('leading_eigenvalue', float('nan')):.3g}")
    for note in r.notes:
        console.print(f"[yellow]note: {note}[/yellow]")
    console.print("point states: " + "; ".join(f"{b}: {s}" for b, s in d["states"].items()))


@theory_app.command("phase-diagram")
def phase_diagram_cmd(out: Path = typer.Option(..., "--out", help="Output directory."),
                      omegas: str = typer.Option("0.02:0.5:40", "--omegas",
                                                 help="ω grid START:STOP:NUM, values in [0, 1]."),
                      alphas: str = typer.Option("0.05:2:40", "--alphas", help="α grid START:STOP:NUM, values > 0."),
                      sigma: float = SigmaOpt, lam: float = LamOpt, A: str = AOpt,
                      L: int = LOpt, r: int = ROpt, r_star: int = RStarOpt, P: str = POpt,
                      qmc_points: int = QmcPointsOpt, scrambles: int = ScramblesOpt,
                      nodes: int = typer.Option(4, "--nodes", help="Resolution of the split rule (2-40; 4: e_t "
                                                "within ~1e-5 of 8 at the paper's parameters, checked "
                                                "elsewhere: --resolution-check)."),
                      refine: bool = typer.Option(False, "--refine", help="Brent-refine α_c, α_l per ω "
                                                  "(to 1e-3 in α)."),
                      sweep: Path = typer.Option(None, "--sweep", help="A sweep's results table (CSV or Parquet "
                                                 "with alpha, omega, init, e_t): overlays the finite-d Δ training "
                                                 "loss between the semantic and positional inits per cell."),
                      theory: Path = typer.Option(None, "--theory", help="Folder of a previous run (its "
                                                  "phase_grid.csv and phase_lines.csv, e.g. "
                                                  "docs/data/phase_diagram_40x40): draw it, no recomputation."),
                      workers: int = typer.Option(0, "--workers", help="Worker processes (interleaved ω "
                                                  "chains); 0: 2 for ≥ 8 ω on ≥ 2 CPUs, else 1."),
                      json_out: bool = typer.Option(False, "--json", help="Print the α_c(ω), α_l(ω) lines and "
                                                    "provenance as JSON on stdout."),
                      resolution_check: bool = typer.Option(True, "--resolution-check/--no-resolution-check",
                                                            help="Solve the cells deciding α_c, α_l at a few ω "
                                                            "again at nodes = 8 and warn where they move "
                                                            "(skipped at the paper's parameters).")) -> None:
    """(α, ω) phase diagram: tidy grid CSV, per-ω α_c/α_l CSV, heatmap figures and provenance JSON."""
    import time

    from ..provenance import provenance
    w = parse_linspace("--omegas", omegas)
    for v in w:
        check_range("--omegas", v, 0.0, 1.0)
    grid_a = _alphas(alphas)
    check_grid_product("--omegas × --alphas", f"{omegas} × {alphas}", len(w), len(grid_a))
    _nodes("--nodes", nodes)
    check_int("--workers", workers, 0)
    out = check_output_path(out, directory=True)
    from ..plots import empirical_delta, plot_phase_diagram, save_figure   # matplotlib loads once accepted
    emp = None
    if sweep is not None:
        if not sweep.exists():
            raise ParameterError("--sweep", "an existing CSV or Parquet file", str(sweep))
        emp = empirical_delta(_read_table(sweep))
    params, how, cfg = _model(L, r, r_star, sigma, lam, float(w[0]), A, P, nodes, qmc_points, scrambles)
    t0 = time.time()
    if theory is not None:
        grid, lines = _read_theory(theory)
    else:
        grid, lines = _compute_diagram(params, w, grid_a, nodes, refine, workers, cfg,
                                       None if resolution_check else False)
    seconds = time.time() - t0
    out.mkdir(parents=True, exist_ok=True)
    write_atomic(out / "phase_grid.csv", lambda t: grid.to_csv(t, index=False))
    write_atomic(out / "phase_lines.csv", lambda t: lines.to_csv(t, index=False))
    figs = save_figure(plot_phase_diagram(grid, lines, empirical=emp), out / "phase_diagram")
    bad = int(((grid["state_sem"] == "not converged") | (grid["state_pos"] == "not converged")).sum())
    prov = provenance(dict(params=params.to_dict(), omegas=list(map(float, w)), alphas=list(map(float, grid_a)),
                           nodes=nodes, refine=refine, sweep=str(sweep) if sweep else None,
                           workers=int(lines["workers"].iloc[0]) if "workers" in lines else None,
                           theory=str(theory) if theory else None), kind="phase-diagram",
                      seconds=seconds, not_converged_cells=bad, solves=int(lines["solves"].sum()),
                      files=["phase_grid.csv", "phase_lines.csv"] + [p.name for p in figs],
                      resolution_check=lines.attrs.get("resolution_check"))
    (out / "provenance.json").write_text(json.dumps(to_jsonable(prov), indent=2, default=str) + "\n")
    if json_out:
        emit_json(dict(lines=lines.to_dict(orient="records"), not_converged_cells=bad, out=str(out),
                       provenance=prov))
    console.print(f"{grid['omega'].nunique()}×{grid['alpha'].nunique()} grid in {seconds:.0f} s ({bad} cells with a solver failure); wrote "
                  f"{out}/phase_grid.csv, phase_lines.csv, phase_diagram.png/.pdf, provenance.json")
    from ..phase.diagram_resolution import warning as resolution_warning   # here: a refusal loads no JAX
    warn = resolution_warning(lines.attrs.get("resolution_check") or {})
    if warn:
        console.print(f"[yellow]warning: {warn}[/yellow]", soft_wrap=True)


def _compute_diagram(params, w, grid_a, nodes, refine, workers, qmc_config=None, resolution_check=None):
    from ..phase import phase_diagram
    with progress_bar() as prog:
        task = prog.add_task(f"branches ({len(w)} ω × {len(grid_a)} α × 2)", total=2 * len(w) * len(grid_a))
        done: dict = {}

        def cb(om, stage, i, n):
            done[(om, stage)] = i
            prog.update(task, completed=sum(done.values()), description=f"ω={om:.3g} {stage}")

        extra = {} if qmc_config is None else dict(qmc_config=qmc_config)
        grid, lines = phase_diagram(params, w, grid_a, nodes=nodes, progress=cb, refine=refine,
                                    workers=workers or None, resolution_check=resolution_check, **extra)
    return grid, lines


def _read_theory(folder: Path):
    """The grid and lines of a previous ``phase-diagram`` run (``phase_grid.csv``, ``phase_lines.csv``)."""
    import pandas as pd
    files = [folder / "phase_grid.csv", folder / "phase_lines.csv"]
    if not all(f.exists() for f in files):
        raise ParameterError("--theory", "a folder with phase_grid.csv and phase_lines.csv", str(folder))
    return pd.read_csv(files[0]), pd.read_csv(files[1])


def _read_table(path: Path):
    import pandas as pd
    return pd.read_parquet(path) if path.suffix in (".parquet", ".pq") else pd.read_csv(path)
