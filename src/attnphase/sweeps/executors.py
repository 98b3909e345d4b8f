"""Executors: run the pending tasks of a sweep and write each to the store as it finishes.

* ``local``: in this process (compiled functions are reused between tasks of equal shapes; ``simulate``
  batches a task's ``instances`` in one vmapped call), or a process pool with ``workers > 1``.
* ``dask``: a Dask distributed client (``scheduler="tcp://host:port"`` or ``dask_local=N`` for a
  LocalCluster on 127.0.0.1); results are collected with ``as_completed`` and written by the client.
"""

from __future__ import annotations

import contextlib
from typing import Any, Callable, Iterable, Iterator

from ..errors import ParameterError
from .spec import Sweep
from .store import Store
from .tasks import execute

Outcome = dict[str, Any]


def pending_tasks(sweep: Sweep, store: Store, retry_failed: bool = False) -> list[dict[str, Any]]:
    st = store.statuses()
    return [t for t in sweep.tasks
            if t["key"] not in st or (retry_failed and st[t["key"]] == "failed")]


def run_local(tasks: list[dict[str, Any]], workers: int = 1,
              initializer: Callable[[], None] | None = None) -> Iterator[Outcome]:
    """Run in this process (``workers <= 1``) or a spawn process pool; ``initializer`` runs in each worker
    (e.g. to register extra task kinds)."""
    if workers <= 1:
        for t in tasks:
            yield execute(t)
        return
    import multiprocessing as mp
    from concurrent.futures import ProcessPoolExecutor, as_completed
    with ProcessPoolExecutor(max_workers=workers, mp_context=mp.get_context("spawn"),
                             initializer=initializer) as pool:
        futs = [pool.submit(execute, t) for t in tasks]
        for f in as_completed(futs):
            yield f.result()


@contextlib.contextmanager
def dask_client(scheduler: str | None = None, dask_local: int | None = None,
                processes: bool = True) -> Iterator[Any]:
    from distributed import Client, LocalCluster
    if scheduler:
        with Client(scheduler) as client:
            yield client
        return
    n = dask_local or 1
    with LocalCluster(n_workers=n, threads_per_worker=1, processes=processes, host="127.0.0.1",
                      protocol="tcp://",
                      dashboard_address=None) as cluster, Client(cluster) as client:
        yield client


def run_dask(tasks: list[dict[str, Any]], client: Any) -> Iterator[Outcome]:
    from distributed import as_completed
    futs = [client.submit(execute, t, key=f"attnphase-task-{t['key']}", pure=False) for t in tasks]
    for fut in as_completed(futs):
        try:
            yield fut.result()
        except Exception as exc:  # noqa: BLE001 -- a worker died: record, never drop
            key = fut.key.rsplit("-", 1)[-1] if isinstance(fut.key, str) else str(fut.key)
            yield {"key": key, "status": "failed", "result": None, "wall_s": None, "converged": None,
                   "error": f"dask: {type(exc).__name__}: {exc}", "provenance": None}


def run_sweep(sweep: Sweep, *, executor: str = "local", workers: int = 1, scheduler: str | None = None,
              dask_local: int | None = None, dask_processes: bool = True, retry_failed: bool = False,
              progress: bool | Callable[[Outcome], None] = False, client: Any = None,
              initializer: Callable[[], None] | None = None) -> dict[str, int]:
    """Run what is pending (and failed ones if ``retry_failed``); returns counts of this run."""
    if executor not in ("local", "dask"):
        raise ParameterError("executor", "one of {local, dask}", executor)
    with Store(sweep.db_path) as store:
        todo = pending_tasks(sweep, store, retry_failed)
        by_key = {t["key"]: t for t in todo}
        counts = {"ran": 0, "done": 0, "failed": 0, "skipped": len(sweep.tasks) - len(todo)}
        if not todo:
            return counts
        with _progress(progress, len(todo), sweep.name) as tick:
            if executor == "local":
                outcomes: Iterable[Outcome] = run_local(todo, workers, initializer)
                _consume(outcomes, store, by_key, counts, tick)
            elif client is not None:
                _consume(run_dask(todo, client), store, by_key, counts, tick)
            else:
                with dask_client(scheduler, dask_local, dask_processes) as c:
                    _consume(run_dask(todo, c), store, by_key, counts, tick)
    return counts


def _consume(outcomes: Iterable[Outcome], store: Store, by_key: dict, counts: dict, tick) -> None:
    for out in outcomes:
        store.write(by_key[out["key"]], out)
        counts["ran"] += 1
        counts[out["status"]] += 1
        tick(out)


@contextlib.contextmanager
def _progress(progress, total: int, name: str):
    if callable(progress):
        yield progress
        return
    if not progress:
        yield lambda out: None
        return
    from rich.progress import TextColumn, TimeRemainingColumn

    from ..progress import progress_bar
    failed = [0]
    with progress_bar(TextColumn("{task.fields[failed]} failed"), TimeRemainingColumn(), bold=True) as bar:
        tid = bar.add_task(name, total=total, failed=0)

        def tick(out: Outcome) -> None:
            failed[0] += out["status"] == "failed"
            bar.update(tid, advance=1, failed=failed[0])
        yield tick


def status(sweep: Sweep) -> dict[str, int]:
    """Counts over the tasks of the sweep file: done / failed / pending (and rows not in the file)."""
    st: dict[str, str] = {}
    if sweep.db_path.exists():              # status never creates a store
        with Store(sweep.db_path) as store:
            st = store.statuses()
    keys = set(sweep.keys)
    done = sum(1 for k in keys if st.get(k) == "done")
    failed = sum(1 for k in keys if st.get(k) == "failed")
    return {"total": len(keys), "done": done, "failed": failed, "pending": len(keys) - done - failed,
            "other_rows": len(set(st) - keys)}
