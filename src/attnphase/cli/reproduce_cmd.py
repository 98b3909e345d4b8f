"""``attnphase reproduce``: the paper's main results on its defaults, in one command (docs/reproduce.md). The
science is :func:`attnphase.reproduce.reproduce`; this parses, shows progress and prints the summary."""

from __future__ import annotations

from pathlib import Path

import typer

from ..progress import progress_bar
from . import app
from ._common import AOpt, LOpt, POpt, ROpt, RStarOpt, check_output_path, emit_json, model_params


@app.command("reproduce")
def reproduce(out: Path = typer.Option(Path("attnphase-reproduce"), "--out", help="Output directory."),
              full: bool = typer.Option(False, "--full", help="Paper-scale run: d=1000, 24 instances, GD, the "
                                        "40 ω × 40 α diagram (36 min measured on 2 shared cores; "
                                        "see docs/reproduce.md)."),
              seed: int = typer.Option(0, "--seed", min=0, help="Base seed of the finite-d runs."),
              no_sim: bool = typer.Option(False, "--no-sim", help="Theory only (skip the finite-d check)."),
              L: int = LOpt, r: int = ROpt, r_star: int = RStarOpt, A: str = AOpt, P: str = POpt,
              json_out: bool = typer.Option(False, "--json", help="Print the summary and provenance as JSON on "
                                            "stdout instead of the text summary.")) -> None:
    """Reproduce the paper on its defaults (ω = 0.3, σ = 0.5, λ = 0.01, standard A): theory curves of both
    branches, α_c, α_l, the α_c(ω) line, a finite-d check; figures, CSV tables, provenance and summary.txt.
    --L --r --r-star --A --P run the same on another model (the QMC engine beyond L = 2, r = 1: slow)."""
    from ..reproduce import reproduce as run
    params = model_params(L, r, 0.5, 0.01, 0.3, A, r_star, P)
    out = check_output_path(out, directory=True)

    with progress_bar() as prog:
        tasks: dict[str, int] = {}

        def cb(stage, i, n):
            if stage not in tasks:
                tasks[stage] = prog.add_task(stage, total=n)
            prog.update(tasks[stage], completed=i, total=n)

        res = run(out, full=full, seed=seed, simulate=not no_sim, progress=cb, params=params)
    if json_out:
        emit_json(dict(summary=res.summary, out=str(out), times=res.times, files=res.files))
    else:
        typer.echo(res.summary, nl=False)
