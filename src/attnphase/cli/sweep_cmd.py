"""``attnphase sweep run|status|export FILE.toml`` and ``attnphase compare FILE.toml`` (docs/sweeps.md)."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from . import app
from ._common import console, emit_json, print_table

sweep_app = typer.Typer(help="Run parameter sweeps defined in TOML files (docs/sweeps.md).",
                        no_args_is_help=True)
app.add_typer(sweep_app, name="sweep")

FileArg = typer.Argument(..., help="Sweep definition (TOML).", exists=False)


@sweep_app.command("run")
def run(file: Path = FileArg,
        executor: str = typer.Option("local", "--executor", help="local | dask"),
        workers: int = typer.Option(1, "--workers", help="Local executor: processes (1 = in-process)."),
        dask_local: Optional[int] = typer.Option(None, "--dask-local",
                                                 help="Start a Dask LocalCluster with N workers on 127.0.0.1."),
        scheduler: Optional[str] = typer.Option(None, "--scheduler", help="Running Dask scheduler tcp://HOST:PORT."),
        retry_failed: bool = typer.Option(False, "--retry-failed", help="Run failed tasks again."),
        quiet: bool = typer.Option(False, "--quiet", help="No progress bar.")) -> None:
    """Run the pending tasks of a sweep (done tasks are skipped); results go to the sweep's SQLite store."""
    from ..errors import ParameterError
    from ..sweeps import load, run_sweep, status
    sw = load(file)
    if (dask_local or scheduler) and executor == "local":
        executor = "dask"
    if executor == "dask" and dask_local is None and scheduler is None:
        raise ParameterError("--executor dask", "used with --dask-local N or --scheduler tcp://HOST:PORT",
                             "neither")
    if dask_local is not None and dask_local < 1:
        raise ParameterError("--dask-local", "an integer >= 1", dask_local)
    counts = run_sweep(sw, executor=executor, workers=workers, scheduler=scheduler, dask_local=dask_local,
                       retry_failed=retry_failed, progress=not quiet)
    st = status(sw)
    console.print(f"{sw.name}: ran {counts['ran']} ({counts['done']} done, {counts['failed']} failed), "
                  f"skipped {counts['skipped']}; store {sw.db_path}: "
                  f"{st['done']}/{st['total']} done, {st['failed']} failed, {st['pending']} pending")
    if st["failed"]:
        console.print("failed tasks are kept in the store; rerun with --retry-failed")


@sweep_app.command("status")
def status_cmd(file: Path = FileArg, json_out: bool = typer.Option(False, "--json")) -> None:
    """Counts of done / pending / failed tasks."""
    from ..sweeps import load, status
    sw = load(file)
    st = status(sw)
    if json_out:
        emit_json({"name": sw.name, "store": str(sw.db_path), **st})
    else:
        print_table(f"sweep {sw.name} ({sw.db_path})", ["total", "done", "pending", "failed"],
                    [[st["total"], st["done"], st["pending"], st["failed"]]])


@sweep_app.command("export")
def export_cmd(file: Path = FileArg,
               fmt: str = typer.Option("csv", "--format", help="csv | parquet"),
               out: Optional[Path] = typer.Option(None, "--out", help="Output file "
                                                  "(default <output>/results.<format>).")) -> None:
    """Export the store as one row per simulation instance / theory point."""
    from ..sweeps import export, load
    path = export(load(file), fmt, out)
    console.print(f"wrote {path}")


@app.command("compare")
def compare_cmd(file: Path = FileArg,
                out: Optional[Path] = typer.Option(None, "--out", help="Folder (default <output>/compare)."),
                no_figures: bool = typer.Option(False, "--no-figures")) -> None:
    """Overlay a sweep's simulations on its theory (branch = initialisation): CSV table + figures."""
    from ..sweeps import compare, load
    table, folder = compare(load(file), out, figures=not no_figures)
    cols = ["init", "omega", "alpha", "n"] + [f"{q}_dev_se" for q in ("m", "theta", "eps_g", "e_t")]
    print_table(f"simulation vs theory (deviation in standard errors); files in {folder}", cols,
                table[cols].values.tolist())
