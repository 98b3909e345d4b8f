"""``attnphase basins``: which minimum training reaches from random starts (docs/finite_d.md)."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from . import app
from ._common import AOpt, LamOpt, LOpt, SigmaOpt, console, emit_json, model_params, parse_linspace, print_table


@app.command()
def basins(
    alphas: str = typer.Option("0.2:2:10", "--alphas", help="α grid START:STOP:NUM or one number."),
    omegas: str = typer.Option("0.3", "--omegas", help="ω grid START:STOP:NUM or one number."),
    sigma: float = SigmaOpt, lam: float = LamOpt, L: int = LOpt, A: Optional[str] = AOpt,
    r: int = typer.Option(1, "--r", help="Student rank r >= 1 (teacher rank r* = 1)."),
    d: int = typer.Option(1000, "--d", help="Dimension d."),
    instances: int = typer.Option(16, "--instances", help="Instances per (α, ω)."),
    init: str = typer.Option("random", "--init", help="random | semantic | positional."),
    init_scale: float = typer.Option(0.1, "--init-scale", help="Std of the entries of the random start."),
    optimizer: str = typer.Option("lbfgs", "--optimizer", help="lbfgs | gd."),
    warmup_steps: int = typer.Option(60, "--warmup-steps", help="GD steps before L-BFGS."),
    steps: int = typer.Option(5000, "--steps", help="GD iterations (with --optimizer gd)."),
    seed: int = typer.Option(0, "--seed", help="Base seed."),
    figure: Optional[Path] = typer.Option(None, "--figure", help="Write the fractions-vs-α figure here."),
    out: Optional[Path] = typer.Option(None, "--out", help="Write the table as CSV."),
    as_json: bool = typer.Option(False, "--json", help="One JSON object on stdout."),
) -> None:
    """Classify trained students (semantic, positional, mixed, uninformative) against the theory's branches."""
    from ..basins import Basin, plot_basins, run_basins
    from ..errors import check_range
    from ..guards import check_grid_product, check_simulation
    from ..outputs import check_figure_path, check_output_path, write_atomic
    params = model_params(L, r, sigma, lam, 0.3, A)
    a, w = parse_linspace("--alphas", alphas), parse_linspace("--omegas", omegas)
    check_grid_product("--alphas × --omegas", f"{alphas} × {omegas}", len(a), len(w))
    for om in w:
        check_range("--omegas", om, 0.0, 1.0)
    for al in (a.min(), a.max()):
        check_simulation(params.L, params.r, params.r_star, params.k, alpha=al, d=d, instances=instances, seed=seed,
                         steps=steps, warmup_steps=warmup_steps, names={"alpha": "--alphas", "d": "--d",
                                                                        "instances": "--instances", "seed": "--seed",
                                                                        "steps": "--steps",
                                                                        "warmup_steps": "--warmup-steps"})
    out = check_output_path(out) if out is not None else None
    figure = check_figure_path(figure) if figure is not None else None
    with console.status("basins ...") as st:
        df = run_basins(params, alphas=a, omegas=w, d=d, instances=instances, init=init, init_scale=init_scale,
                        optimizer=optimizer, warmup_steps=warmup_steps, steps=steps, seed=seed, progress=lambda m: st.update(f"basins: {m}"))
    if out is not None:
        write_atomic(out, lambda tmp: df.to_csv(tmp, index=False))
        console.print(f"wrote {out}")
    if figure is not None:
        frames = {f"ω = {om:g}, r = {r}, d = {d}": g for om, g in df.groupby("omega")}
        how = f"lbfgs after {warmup_steps} GD steps" if optimizer == "lbfgs" else f"{steps} GD steps"
        plot_basins(frames, figure, title=f"{init} start (scale {init_scale:g}), {how}, {instances} instances")
        console.print(f"wrote {figure}")
    if as_json:
        emit_json({"rows": df.to_dict(orient="records"), "params": params.to_dict(),
                   "rule": "present if > 0.5 x branch value (attnphase.basins)"})
        return
    cols = ["omega", "alpha"] + [f"frac_{b.value}" for b in Basin] + ["converged", "scale_source"]
    print_table(f"basins: {init} start, r = {r}, d = {d}", cols, df[cols].values.tolist())
