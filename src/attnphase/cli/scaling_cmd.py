"""``attnphase scaling``: finite-size scaling of trained students against the theory (docs/finite_d.md)."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from . import app
from ._common import AOpt, LamOpt, LOpt, OmegaOpt, ROpt, SigmaOpt, console, emit_json, model_params, print_table
from ..errors import ParameterError


def parse_ints(name: str, text: str) -> list[int]:
    try:
        vals = [int(v) for v in text.split(",") if v.strip()]
    except (ValueError, OverflowError):
        raise ParameterError(name, "comma-separated integers (e.g. 250,500,1000,2000)", text) from None
    if len(set(vals)) < 2 or min(vals) < 2:
        raise ParameterError(name, "at least two distinct integers >= 2", text)
    return vals


@app.command()
def scaling(
    alpha: float = typer.Option(1.0, "--alpha", help="Sample complexity α = n/d > 0."),
    omega: float = OmegaOpt, sigma: float = SigmaOpt, lam: float = LamOpt,
    L: int = LOpt, r: int = ROpt, A: Optional[str] = AOpt,
    init: str = typer.Option("semantic", "--init", help="semantic | positional | random."),
    ds: str = typer.Option("250,500,1000,2000", "--ds", help="Dimensions d, comma-separated."),
    instances: int = typer.Option(16, "--instances", help="Instances per d (>= 2)."),
    optimizer: str = typer.Option("lbfgs", "--optimizer", help="lbfgs (to ‖∇R‖ ≤ gtol) | gd."),
    steps: int = typer.Option(5000, "--steps", help="GD iterations (with --optimizer gd)."),
    seed: int = typer.Option(0, "--seed", help="Base seed."),
    no_theory: bool = typer.Option(False, "--no-theory", help="Skip the theory's branch."),
    figure: Optional[Path] = typer.Option(None, "--figure", help="Write the scaling figure (PNG/PDF) here."),
    as_json: bool = typer.Option(False, "--json", help="One JSON object on stdout."),
) -> None:
    """Mean ± s.e. of m, θ/σ², q, e_t, ε_g per d, a weighted fit in 1/d, the extrapolation vs the theory."""
    from ..scaling import plot_scaling, run_scaling
    from ..simulate import TrainConfig
    from ..guards import check_simulation
    from ..outputs import check_figure_path
    params = model_params(L, r, sigma, lam, omega, A)
    dims = parse_ints("--ds", ds)
    for d in dims:
        check_simulation(params.L, params.r, params.r_star, params.k, alpha=alpha, d=d, instances=instances,
                         seed=seed, steps=steps, names={"alpha": "--alpha", "d": "--ds", "instances": "--instances",
                                                        "seed": "--seed", "steps": "--steps"})
    cfg = TrainConfig(init=init, optimizer=optimizer, steps=steps)
    figure = check_figure_path(figure) if figure is not None else None
    with console.status("scaling ...") as st:
        res = run_scaling(params, alpha=alpha, init=init, ds=dims, instances=instances, config=cfg, seed=seed,
                          theory=not no_theory, progress=lambda m: st.update(f"scaling: {m}"))
    if figure is not None:
        plot_scaling(res, figure)
        console.print(f"wrote {figure}")
    if as_json:
        emit_json(res.to_dict())
        return
    cols = ["observable", "extrapolation", "se", "slope", "predicted_slope", "chi2", "dof", "theory", "z", "rel_diff"]
    print_table(f"scaling α={alpha:g} ω={omega:g} init={init} d∈{dims}", cols,
                [[row[c] for c in cols] for row in res.table()])
