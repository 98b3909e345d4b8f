"""``attnphase theory point`` and ``attnphase theory curve``: fixed points of MODEL.md §6."""

from __future__ import annotations

from pathlib import Path

import typer
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from ..errors import ParameterError
from ._common import AOpt, LamOpt, OmegaOpt, SigmaOpt, console, emit_json, model_params, parse_linspace, \
    parse_list, print_table
from .theory_cmd import theory_app

_KEYS = ["q", "m", "V", "theta", "q_hat", "m_hat", "V_hat", "theta_hat", "eps_g", "e_t", "converged",
         "iterations", "residual", "status", "stability", "stable", "nodes", "rule"]
NODES_HELP = ("Resolution: Gauss-Hermite order in the smooth directions of the split-line rule, 4x as many "
              "panels across the switching set (even; default 8; 4 is ~4x cheaper, ~1e-4 accurate). With --rule "
              "product: order per dimension of the plain product rule.")
RULE_HELP = "split (integration split at the basin switches, default) or product (plain Gauss-Hermite)."


@theory_app.command("point")
def point(alpha: float = typer.Option(..., "--alpha", help="Sample complexity α = n/d > 0."),
          omega: float = OmegaOpt, sigma: float = SigmaOpt, lam: float = LamOpt, A: str = AOpt,
          branch: str = typer.Option("semantic", "--branch",
                                     help="semantic, positional, uninformative or free."),
          nodes: int = typer.Option(None, "--nodes", help=NODES_HELP),
          rule: str = typer.Option("split", "--rule", help=RULE_HELP),
          json_out: bool = typer.Option(False, "--json", help="Print JSON on stdout.")) -> None:
    """Solve the fixed point at one α on one branch."""
    from ..theory import BRANCHES, solve_point
    params = model_params(2, 1, sigma, lam, omega, A)
    if branch not in BRANCHES:
        raise ParameterError("--branch", f"one of {', '.join(BRANCHES)}", branch)
    s = solve_point(params, alpha, branch, nodes=nodes, rule=rule)
    d = {"alpha": s.alpha, "branch": s.branch, "omega": params.omega, **{k: getattr(s, k) for k in _KEYS}}
    if json_out:
        emit_json(d)
    else:
        print_table(f"theory point ({branch}, α={alpha:g}, ω={omega:g})", ["quantity", "value"],
                    [[k, v] for k, v in d.items()])
    if not s.converged:
        console.print(f"[yellow]warning: not converged: {s.status}[/yellow]")


@theory_app.command("curve")
def curve(alphas: str = typer.Option(..., "--alphas", help="START:STOP:NUM (e.g. 0.5:2:20)."),
          omega: float = OmegaOpt, sigma: float = SigmaOpt, lam: float = LamOpt, A: str = AOpt,
          branch: str = typer.Option("semantic,positional", "--branch", help="Comma-separated branches."),
          nodes: int = typer.Option(None, "--nodes", help=NODES_HELP),
          rule: str = typer.Option("split", "--rule", help=RULE_HELP),
          out: Path = typer.Option(..., "--out", help="CSV file to write (tidy, one row per point).")) -> None:
    """Solve a curve in α for each branch and write a CSV (continuation: the semantic branch from large α down,
    where it exists, the positional one from small α up)."""
    import pandas as pd

    from functools import partial

    from ..phase import branch_table, follow_branch
    from ..theory import BRANCHES, solve_point
    params = model_params(2, 1, sigma, lam, omega, A)
    branches = parse_list("--branch", branch, BRANCHES)
    grid = parse_linspace("--alphas", alphas)
    if (grid <= 0).any():
        raise ParameterError("--alphas", "values > 0", alphas)
    order = sorted(grid, reverse=True)
    frames = []
    with Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                  console=console) as prog:
        for b in branches:
            task = prog.add_task(b, total=len(order))
            sols = follow_branch(params, order if b != "positional" else order[::-1], b, nodes=nodes,
                                 progress=lambda i: prog.advance(task), rtol=1e-5, max_steps=300,
                                 solver=partial(solve_point, rule=rule))
            frames.append(branch_table(sols))
    df = pd.concat(frames, ignore_index=True).sort_values(["branch", "alpha"])
    out.parent.mkdir(parents=True, exist_ok=True)
    df.to_csv(out, index=False)
    counts = df["state"].value_counts().to_dict()
    console.print(f"wrote {len(df)} points to {out} (states: {counts})")
