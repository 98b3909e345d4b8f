"""``attnphase theory transition`` and ``attnphase theory phase-diagram`` (MODEL.md §6 "Transition")."""

from __future__ import annotations

import json
from pathlib import Path

import typer
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from ..errors import ParameterError, check_range
from ._common import AOpt, LamOpt, OmegaOpt, SigmaOpt, console, emit_json, model_params, parse_linspace, \
    print_table, to_jsonable
from .theory_cmd import theory_app

_KEYS = ["alpha_c", "alpha_l", "eps_lin", "spinodal_semantic", "spinodal_semantic_kind", "spinodal_positional",
         "spinodal_positional_kind", "mixed_found", "alpha_c_grid", "alpha_l_grid"]


def _progress() -> Progress:
    return Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                    console=console, transient=False)


def _alphas(text: str | None):
    if text is None:
        return None
    grid = parse_linspace("--alphas", text)
    if grid.size < 2 or (grid <= 0).any():
        raise ParameterError("--alphas", "START:STOP:NUM with values > 0 and NUM >= 2", text)
    return grid


@theory_app.command("transition")
def transition_cmd(omega: float = OmegaOpt, sigma: float = SigmaOpt, lam: float = LamOpt, A: str = AOpt,
                   nodes: int = typer.Option(8, "--nodes", help="Resolution of the Brent refinement of α_c, α_l "
                                             "(split rule, 2-40)."),
                   curve_nodes: int = typer.Option(4, "--curve-nodes", help="Resolution of the α-grid curves "
                                                   "(4: e_t within ~1e-5 of 8)."),
                   alphas: str = typer.Option(None, "--alphas", help="α grid START:STOP:NUM (default 0.5:2:16)."),
                   xtol: float = typer.Option(1e-4, "--xtol", help="Tolerance in α of the refinement."),
                   no_refine: bool = typer.Option(False, "--no-refine", help="Table interpolation only."),
                   no_mixed: bool = typer.Option(False, "--no-mixed", help="Skip the mixed-fixed-point search."),
                   json_out: bool = typer.Option(False, "--json", help="Print JSON on stdout.")) -> None:
    """α_c (e_t^sem = e_t^pos), α_l (ε_g^global = ε_lin), spinodals and the mixed-fixed-point search at one ω."""
    from ..phase import transition
    params = model_params(2, 1, sigma, lam, omega, A)
    for name, v in (("--nodes", nodes), ("--curve-nodes", curve_nodes)):
        if not 2 <= v <= 40:
            raise ParameterError(name, "an integer in [2, 40]", v)
    check_range("--xtol", xtol, lo=0.0, lo_open=True)
    grid = _alphas(alphas)
    with _progress() as prog:
        tasks: dict[str, int] = {}

        def cb(stage, i, n):
            if stage not in tasks:
                tasks[stage] = prog.add_task(stage, total=n)
            prog.update(tasks[stage], completed=i)

        r = transition(params, alphas=grid, nodes=nodes, curve_nodes=curve_nodes, progress=cb,
                       refine=not no_refine, xtol=xtol, mixed_alphas=[] if no_mixed else None)
    d = r.to_dict()
    if json_out:
        emit_json(d)
    else:
        print_table(f"transition (ω={omega:g}, σ={sigma:g}, λ={lam:g})", ["quantity", "value"],
                    [[k, d[k]] for k in _KEYS])
        for m in r.mixed:
            console.print(f"mixed search at α={m['alpha']:.4g}: {m.get('kind')}, converged={m.get('converged')}, "
                          f"m={m.get('m', float('nan')):.4g}, θ={m.get('theta', float('nan')):.4g}, "
                          f"e_t={m.get('e_t', float('nan')):.6g}, "
                          f"leading eigenvalue={m.get('leading_eigenvalue', float('nan')):.3g}")
    for note in r.notes:
        console.print(f"[yellow]note: {note}[/yellow]")
    for name in ("semantic", "positional"):
        counts = getattr(r, name)["state"].value_counts().to_dict()
        bad = {k: v for k, v in counts.items() if k != "ok"}
        if bad:
            console.print(f"note: {name} branch points not used: {bad}")


@theory_app.command("phase-diagram")
def phase_diagram_cmd(omegas: str = typer.Option(..., "--omegas", help="ω grid START:STOP:NUM, values in [0, 1]."),
                      alphas: str = typer.Option(..., "--alphas", help="α grid START:STOP:NUM, values > 0."),
                      out: Path = typer.Option(..., "--out", help="Output directory."),
                      sigma: float = SigmaOpt, lam: float = LamOpt, A: str = AOpt,
                      nodes: int = typer.Option(4, "--nodes", help="Resolution of the split rule (2-40; 4: e_t "
                                                "within ~1e-5 of the default 8)."),
                      refine: bool = typer.Option(False, "--refine", help="Brent-refine α_c, α_l per ω "
                                                  "(to 1e-3 in α).")) -> None:
    """(α, ω) phase diagram: tidy grid CSV, per-ω α_c/α_l CSV, heatmap figures and provenance JSON."""
    import time

    from ..phase import phase_diagram
    from ..plots import plot_phase_diagram, save_figure
    from ..provenance import provenance
    w = parse_linspace("--omegas", omegas)
    for v in w:
        check_range("--omegas", v, 0.0, 1.0)
    grid_a = _alphas(alphas)
    if not 2 <= nodes <= 40:
        raise ParameterError("--nodes", "an integer in [2, 40]", nodes)
    params = model_params(2, 1, sigma, lam, float(w[0]), A)
    t0 = time.time()
    with _progress() as prog:
        task = prog.add_task(f"branches ({len(w)} ω × {len(grid_a)} α × 2)", total=2 * len(w) * len(grid_a))
        done: dict = {}

        def cb(om, stage, i, n):
            done[(om, stage)] = i
            prog.update(task, completed=sum(done.values()), description=f"ω={om:.3g} {stage}")

        grid, lines = phase_diagram(params, w, grid_a, nodes=nodes, progress=cb, refine=refine)
    seconds = time.time() - t0
    out.mkdir(parents=True, exist_ok=True)
    grid.to_csv(out / "phase_grid.csv", index=False)
    lines.to_csv(out / "phase_lines.csv", index=False)
    figs = save_figure(plot_phase_diagram(grid, lines), out / "phase_diagram")
    prov = provenance(dict(params=params.to_dict(), omegas=list(map(float, w)), alphas=list(map(float, grid_a)),
                           nodes=nodes, refine=refine), kind="phase-diagram", seconds=seconds,
                      files=["phase_grid.csv", "phase_lines.csv"] + [p.name for p in figs])
    (out / "provenance.json").write_text(json.dumps(to_jsonable(prov), indent=2, default=str) + "\n")
    console.print(f"{len(w)}×{len(grid_a)} grid in {seconds:.0f} s; wrote {out}/phase_grid.csv, phase_lines.csv, "
                  "phase_diagram.png/.pdf, provenance.json")
