"""``attnphase sweep run|status|export FILE.toml`` and ``attnphase compare FILE.toml`` (docs/sweeps.md)."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from . import app
from ..guards import CONFIRM_TASKS
from ..provenance import stamp
from ._common import JsonOpt, check_output_path, confirm_size, console, emit_json, print_table

sweep_app = typer.Typer(help="Run parameter sweeps defined in TOML files (docs/sweeps.md).",
                        no_args_is_help=True)
app.add_typer(sweep_app, name="sweep")

FileArg = typer.Argument(..., help="Sweep definition (TOML).", exists=False)


@sweep_app.command("run")
def run(file: Path = FileArg,
        executor: str = typer.Option("local", "--executor", help="local | dask"),
        workers: int = typer.Option(1, "--workers", help="Local executor: processes >= 1 (1 = in-process)."),
        dask_local: Optional[int] = typer.Option(None, "--dask-local",
                                                 help="Start a Dask LocalCluster with N workers on 127.0.0.1."),
        scheduler: Optional[str] = typer.Option(None, "--scheduler", help="Running Dask scheduler tcp://HOST:PORT."),
        retry_failed: bool = typer.Option(False, "--retry-failed", help="Run failed tasks again."),
        yes: bool = typer.Option(False, "--yes", help=f"Run sweeps of more than {CONFIRM_TASKS} tasks."),
        quiet: bool = typer.Option(False, "--quiet", help="No progress bar."),
        as_json: bool = JsonOpt) -> None:
    """Run the pending tasks of a sweep (done tasks are skipped); results go to the sweep's SQLite store.

    Exit status: 0 when every task of the file is done, 1 when any is failed (the summary names them),
    2 on bad input (nothing runs, no store is created), 130 on Ctrl-C (finished tasks are kept; rerun to
    resume). Concurrent runs of one sweep share its tasks (each is computed once).
    """
    from ..errors import ParameterError
    from ..interrupts import set_message
    from ..sweeps import load, run_sweep, status
    sw = load(file)
    if (dask_local or scheduler) and executor == "local":
        executor = "dask"
    if executor not in ("local", "dask"):
        raise ParameterError("--executor", "one of {local, dask}", executor)
    if executor == "dask" and dask_local is None and scheduler is None:
        raise ParameterError("--executor dask", "used with --dask-local N or --scheduler tcp://HOST:PORT",
                             "neither")
    if dask_local is not None and dask_local < 1:
        raise ParameterError("--dask-local", "an integer >= 1", dask_local)
    if workers < 1:
        raise ParameterError("--workers", "an integer >= 1", workers)
    confirm_size(len(sw.tasks), f"sweep {sw.name!r}", yes)
    check_output_path(sw.db_path, option="sweep.output")
    set_message(lambda: _interrupted_line(sw))
    counts = run_sweep(sw, executor=executor, workers=workers, scheduler=scheduler, dask_local=dask_local,
                       retry_failed=retry_failed, progress=not quiet and not as_json)
    set_message(None)
    st = status(sw)
    failed = _failed_tasks(sw) if st["failed"] else []
    if as_json:
        emit_json({"name": sw.name, "store": str(sw.db_path), "run": counts, "status": st, "failed": failed,
                   "provenance": stamp()})
    else:
        console.print(f"{sw.name}: ran {counts['ran']} ({counts['done']} done, {counts['failed']} failed), "
                      f"skipped {counts['skipped']}; store {sw.db_path}: "
                      f"{st['done']}/{st['total']} done, {st['failed']} failed, {st['pending']} pending")
        if counts["claimed_elsewhere"]:
            console.print(f"{counts['claimed_elsewhere']} task(s) were computed by another runner of this sweep "
                          "(this run waited for them)")
        for f in failed[:10]:
            console.print(f"failed: {f['key'][:12]} {f['kind']} {f['params']}: {f['error']}")
        if len(failed) > 10:
            console.print(f"... and {len(failed) - 10} more (`attnphase sweep export` lists them all)")
        if failed:
            console.print("failed tasks are kept in the store; rerun with --retry-failed")
    if st["failed"]:
        raise typer.Exit(1)


def _interrupted_line(sw) -> str:
    return (f"finished tasks are kept in {sw.db_path}; run `attnphase sweep run {sw.path}` again to resume")


def _failed_tasks(sw) -> list[dict]:
    """Failed tasks of the sweep file: key, kind, parameters, first line of the error."""
    from ..sweeps import Store
    with Store(sw.db_path, read_only=True) as store:
        rows = [r for r in store.rows(sw.keys) if r["status"] == "failed"]
    out = []
    for r in rows:
        cfg = r["config"] or {}
        params = {**{k: v for k, v in (cfg.get("model") or {}).items() if k not in ("A", "P")},
                  **(cfg.get("params") or {})}
        if "seed" in cfg:
            params["seed"] = cfg["seed"]
        out.append({"key": r["key"], "kind": r["kind"], "params": params,
                    "error": (r["error"] or "").splitlines()[0] if r["error"] else None})
    return out


@sweep_app.command("status")
def status_cmd(file: Path = FileArg, json_out: bool = JsonOpt) -> None:
    """Counts of done / pending / running / failed tasks (reads the store without changing it)."""
    from ..sweeps import load, status
    sw = load(file)
    st = status(sw)
    if json_out:
        emit_json({"name": sw.name, "store": str(sw.db_path), **st, "provenance": stamp()})
    else:
        print_table(f"sweep {sw.name} ({sw.db_path})", ["total", "done", "pending", "running", "failed"],
                    [[st["total"], st["done"], st["pending"], st["running"], st["failed"]]])


@sweep_app.command("export")
def export_cmd(file: Path = FileArg,
               fmt: str = typer.Option("csv", "--format", help="csv | parquet"),
               out: Optional[Path] = typer.Option(None, "--out", help="Output file "
                                                  "(default <output>/results.<format>)."),
               as_json: bool = JsonOpt) -> None:
    """Export the store as one row per simulation instance / theory point (with version and git commit)."""
    from ..errors import ParameterError
    from ..sweeps import export, frame, load
    sw = load(file)
    if fmt not in ("csv", "parquet"):
        raise ParameterError("--format", "one of {csv, parquet}", fmt)
    path = check_output_path(out if out is not None else sw.output / f"results.{fmt}")
    path = export(sw, fmt, path)
    if as_json:
        df = frame(sw)
        emit_json({"name": sw.name, "store": str(sw.db_path), "file": str(path), "rows": len(df),
                   "provenance": stamp()})
    else:
        console.print(f"wrote {path}")


@app.command("compare")
def compare_cmd(file: Path = FileArg,
                out: Optional[Path] = typer.Option(None, "--out", help="Folder (default <output>/compare)."),
                no_figures: bool = typer.Option(False, "--no-figures"),
                as_json: bool = JsonOpt) -> None:
    """Overlay a sweep's simulations on its theory (branch = initialisation): CSV table + figures."""
    from ..sweeps import compare, load
    sw = load(file)
    folder = check_output_path(out if out is not None else sw.output / "compare", directory=True)
    table, folder = compare(sw, folder, figures=not no_figures)
    if as_json:
        emit_json({"name": sw.name, "folder": str(folder), "rows": table.to_dict(orient="records"),
                   "provenance": stamp()})
        return
    cols = ["init", "omega", "alpha", "n"] + [f"{q}_dev_se" for q in ("m", "theta", "eps_g", "e_t")]
    print_table(f"simulation vs theory (deviation in standard errors); files in {folder}", cols,
                table[cols].values.tolist())
