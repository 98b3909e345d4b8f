"""``attnphase simulate`` (finite-d training, MODEL.md §4) and ``attnphase baseline`` (MODEL.md §5)."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from . import app
from ._common import AOpt, LamOpt, LOpt, OmegaOpt, ROpt, SigmaOpt, console, emit_json, model_params, print_table


@app.command()
def simulate(
    alpha: float = typer.Option(2.0, "--alpha", help="Sample complexity α = n/d > 0."),
    omega: float = OmegaOpt, sigma: float = SigmaOpt, lam: float = LamOpt,
    d: int = typer.Option(200, "--d", help="Dimension d (paper: 1000)."),
    L: int = LOpt, r: int = ROpt, A: Optional[str] = AOpt,
    init: str = typer.Option("semantic", "--init", help="semantic | positional | random."),
    optimizer: str = typer.Option("gd", "--optimizer", help="gd | lbfgs."),
    instances: int = typer.Option(4, "--instances", help="Independent teacher/data instances."),
    seed: int = typer.Option(0, "--seed", help="Base seed (instance i uses fold_in(key(seed), i))."),
    test_samples: int = typer.Option(50_000, "--test-samples", help="Fresh test samples for ε_g."),
    steps: int = typer.Option(5000, "--steps", help="GD iterations."),
    lr: float = typer.Option(0.15, "--lr", help="GD step on R(Q)."),
    as_json: bool = typer.Option(False, "--json", help="One JSON object on stdout."),
    out: Optional[Path] = typer.Option(None, "--out", help="Write one row per instance to this CSV."),
) -> None:
    """Train the attention student at finite d (full-batch GD or L-BFGS) and report order parameters."""
    from ..simulate import TrainConfig, simulate as run
    params = model_params(L, r, sigma, lam, omega, A)
    cfg = TrainConfig(init=init, optimizer=optimizer, lr=lr, steps=steps)
    with console.status(f"simulate: {instances} instance(s), d={d}, α={alpha:g}, {optimizer} ...") as st:
        res = run(params, alpha=alpha, d=d, config=cfg, instances=instances, seed=seed,
                  test_samples=test_samples, progress=lambda m: st.update(f"simulate: {m}"))
    if out is not None:
        res.to_frame().to_csv(out, index=False)
        console.print(f"wrote {out}")
    if as_json:
        emit_json(res.to_dict())
        return
    s = res.summary()
    keys = ["m", "theta_over_sigma2", "q", "e_t", "eps_g", "eps_lin", "grad_norm", "converged"]
    rows = [[i] + [getattr(res, k)[i] for k in keys] for i in range(res.instances)]
    rows.append(["mean"] + [s[k]["mean"] for k in keys])
    rows.append(["sem"] + [s[k]["sem"] for k in keys])
    print_table(f"simulate d={d} α={alpha:g} ω={omega:g} init={init} {optimizer}", ["instance"] + keys, rows)


@app.command()
def baseline(
    omega: float = OmegaOpt, sigma: float = SigmaOpt, lam: float = LamOpt,
    L: int = LOpt, A: Optional[str] = AOpt,
    nodes: int = typer.Option(80, "--nodes", help="Gauss–Hermite nodes per dimension (L=2)."),
    as_json: bool = typer.Option(False, "--json", help="One JSON object on stdout."),
) -> None:
    """Population test error ε_lin of the optimal linear positional baseline (MODEL.md §5)."""
    from ..baseline import eps_lin
    from ..provenance import provenance
    params = model_params(L, 1, sigma, lam, omega, A)
    e = eps_lin(params, nodes=nodes)
    if as_json:
        emit_json({"eps_lin": e, "params": params.to_dict(),
                   "provenance": provenance({"params": params.to_dict(), "nodes": nodes})})
        return
    print_table("linear baseline", ["omega", "sigma", "L", "eps_lin"], [[omega, sigma, L, e]])
