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

_KEYS = ["alpha_c", "alpha_l", "eps_lin", "spinodal_semantic", "spinodal_positional", "mixed_found"]


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
                   nodes: int = typer.Option(None, "--nodes", help="Gauss-Hermite order per dimension (default 8)."),
                   alphas: str = typer.Option(None, "--alphas", help="α grid START:STOP:NUM (default 0.6:2:15)."),
                   no_refine: bool = typer.Option(False, "--no-refine", help="Grid interpolation only."),
                   json_out: bool = typer.Option(False, "--json", help="Print JSON on stdout.")) -> None:
    """α_c (e_t^sem = e_t^pos), α_l (ε_g^global = ε_lin), spinodals and the mixed-fixed-point check at one ω."""
    from ..phase import transition
    params = model_params(2, 1, sigma, lam, omega, A)
    grid = _alphas(alphas)
    with _progress() as prog:
        tasks: dict[str, int] = {}

        def cb(stage, i, n):
            if stage not in tasks:
                tasks[stage] = prog.add_task(stage, total=n)
            prog.update(tasks[stage], completed=i)

        r = transition(params, alphas=grid, nodes=nodes, progress=cb, refine=not no_refine)
    d = r.to_dict()
    if json_out:
        emit_json(d)
    else:
        print_table(f"transition (ω={omega:g}, σ={sigma:g}, λ={lam:g})", ["quantity", "value"],
                    [[k, d[k]] for k in _KEYS])
    for name in ("semantic", "positional"):
        bad = int((~getattr(r, name)["converged"].astype(bool)).sum())
        if bad:
            console.print(f"[yellow]note: {bad} {name} point(s) did not converge (kept out of the roots)[/yellow]")


@theory_app.command("phase-diagram")
def phase_diagram_cmd(omegas: str = typer.Option(..., "--omegas", help="ω grid START:STOP:NUM, values in [0, 1]."),
                      alphas: str = typer.Option(..., "--alphas", help="α grid START:STOP:NUM, values > 0."),
                      out: Path = typer.Option(..., "--out", help="Output directory."),
                      sigma: float = SigmaOpt, lam: float = LamOpt, A: str = AOpt,
                      nodes: int = typer.Option(None, "--nodes", help="Gauss-Hermite order per dimension."),
                      refine: bool = typer.Option(False, "--refine", help="Brent-refine α_c, α_l per ω.")) -> None:
    """(α, ω) phase diagram: tidy grid CSV, per-ω α_c/α_l CSV, heatmap figures and provenance JSON."""
    from ..phase import phase_diagram
    from ..plots import plot_phase_diagram, save_figure
    from ..provenance import provenance
    w = parse_linspace("--omegas", omegas)
    for v in w:
        check_range("--omegas", v, 0.0, 1.0)
    grid_a = _alphas(alphas)
    params = model_params(2, 1, sigma, lam, float(w[0]), A)
    with _progress() as prog:
        outer = prog.add_task("ω", total=len(w))
        inner = prog.add_task("α", total=2 * len(grid_a))
        state = {"w": None, "k": 0}

        def cb(om, stage, i, n):
            if state["w"] != om:
                if state["w"] is not None:
                    prog.advance(outer)
                state.update(w=om, k=0)
                prog.reset(inner, total=2 * n, description=f"α (ω={om:.3g})")
            if stage in ("semantic", "positional"):
                prog.advance(inner)

        grid, lines = phase_diagram(params, w, grid_a, nodes=nodes, progress=cb, refine=refine)
        prog.update(outer, completed=len(w))
    out.mkdir(parents=True, exist_ok=True)
    grid.to_csv(out / "phase_grid.csv", index=False)
    lines.to_csv(out / "phase_lines.csv", index=False)
    figs = save_figure(plot_phase_diagram(grid, lines), out / "phase_diagram")
    prov = provenance(dict(params=params.to_dict(), omegas=list(map(float, w)), alphas=list(map(float, grid_a)),
                           nodes=nodes, refine=refine), kind="phase-diagram",
                      files=["phase_grid.csv", "phase_lines.csv"] + [p.name for p in figs])
    (out / "provenance.json").write_text(json.dumps(to_jsonable(prov), indent=2, default=str) + "\n")
    console.print(f"wrote {out}/phase_grid.csv, phase_lines.csv, phase_diagram.png/.pdf, provenance.json")
