"""Executors: run the pending tasks of a sweep and write each to the store as it finishes.

* ``local``: in this process (compiled functions are reused between tasks of equal shapes; ``simulate``
  batches a task's ``instances`` in one vmapped call), or a process pool with ``workers > 1``.
* ``dask``: a Dask distributed client (``scheduler="tcp://host:port"`` or ``dask_local=N`` for a
  LocalCluster on 127.0.0.1); results are collected with ``as_completed`` and written by the client.
"""

from __future__ import annotations

import contextlib
import os
from typing import Any, Callable, Iterable, Iterator, Mapping

from ..errors import ParameterError
from ..interrupts import critical
from .spec import Sweep
from .store import Store
from .tasks import execute

Outcome = dict[str, Any]


def pending_tasks(sweep: Sweep, store: Store, retry_failed: bool = False) -> list[dict[str, Any]]:
    st = store.statuses()
    return [t for t in sweep.tasks
            if t["key"] not in st or (retry_failed and st[t["key"]] == "failed")]


def claimed(tasks: Iterable[dict[str, Any]], store: Store, retry_failed: bool, left: list) -> Iterator[dict]:
    """The tasks this runner claims, lazily (one transaction each); the others are appended to ``left``."""
    for t in tasks:
        if store.claim(t["key"], retry_failed):
            yield t
        else:
            left.append(t)


DEVICE_MEMORY_ENV = ("XLA_PYTHON_CLIENT_PREALLOCATE", "XLA_PYTHON_CLIENT_MEM_FRACTION", "XLA_CLIENT_MEM_FRACTION",
                     "XLA_PYTHON_CLIENT_ALLOCATOR")
"""JAX's settings of how a process takes an accelerator's memory (docs/gpu.md)."""


def worker_environment(environ: Mapping[str, str] = os.environ) -> dict[str, str]:
    """Environment variables for worker processes that share this machine's accelerator. On a GPU, JAX
    preallocates 75 % of the device's memory in every process at its first operation, so the second worker
    would run out of memory; workers therefore allocate as they need (``XLA_PYTHON_CLIENT_PREALLOCATE=false``)
    unless the user chose a memory setting (any of :data:`DEVICE_MEMORY_ENV` set). No effect on a CPU."""
    if any(k in environ for k in DEVICE_MEMORY_ENV):
        return {}
    return {"XLA_PYTHON_CLIENT_PREALLOCATE": "false"}


def _worker_init(initializer: Callable[[], None] | None, env: Mapping[str, str] | None = None) -> None:
    """Pool workers ignore SIGINT: the parent handles Ctrl-C (attnphase.interrupts) and they end with it.
    ``env`` (:func:`worker_environment`) is set before the worker's first JAX operation."""
    import signal
    os.environ.update(env or {})
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    if initializer is not None:
        initializer()


def run_local(tasks: Iterable[dict[str, Any]], workers: int = 1,
              initializer: Callable[[], None] | None = None) -> Iterator[Outcome]:
    """Run in this process (``workers <= 1``) or a spawn process pool; ``initializer`` runs in each worker
    (e.g. to register extra task kinds). ``tasks`` is consumed lazily: at most ``2·workers`` are in flight."""
    if workers <= 1:
        for t in tasks:
            yield execute(t)
        return
    import multiprocessing as mp
    from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
    it = iter(tasks)
    with ProcessPoolExecutor(max_workers=workers, mp_context=mp.get_context("spawn"),
                             initializer=_worker_init, initargs=(initializer, worker_environment())) as pool:
        running: set = set()
        exhausted = False
        while True:
            while not exhausted and len(running) < 2 * workers:
                t = next(it, None)
                if t is None:
                    exhausted = True
                else:
                    with critical():        # a submit may spawn a worker: an interrupt waits until it
                        running.add(pool.submit(execute, t))   # has its start data (else: EOFError)
            if not running:
                return
            finished, running = wait(running, return_when=FIRST_COMPLETED)
            for f in finished:
                yield f.result()


@contextlib.contextmanager
def dask_client(scheduler: str | None = None, dask_local: int | None = None,
                processes: bool = True) -> Iterator[Any]:
    from distributed import Client, LocalCluster
    if scheduler:
        try:
            client = Client(scheduler, timeout="10s")
        except (OSError, TimeoutError, ValueError, TypeError) as exc:
            raise ParameterError("--scheduler", "a reachable Dask scheduler address tcp://HOST:PORT",
                                 f"{scheduler} ({type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''})"
                                 ) from None
        with client:
            yield client
        return
    n = dask_local or 1
    env = {"env": worker_environment()} if processes else {}     # worker processes share the accelerator
    with LocalCluster(n_workers=n, threads_per_worker=1, processes=processes, host="127.0.0.1",
                      protocol="tcp://", dashboard_address=None, **env) as cluster, Client(cluster) as client:
        yield client


def run_dask(tasks: Iterable[dict[str, Any]], client: Any) -> Iterator[Outcome]:
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
              initializer: Callable[[], None] | None = None) -> dict[str, Any]:
    """Run what is pending (and failed ones if ``retry_failed``); returns counts of this run.

    Each task is claimed in the store before it runs (:meth:`Store.claim`), so concurrent runners on one
    sweep share the work; ``counts["claimed_elsewhere"]`` is what another live runner was computing.
    ``counts["failed_keys"]`` lists the keys of the tasks that failed in this run.
    """
    if executor not in ("local", "dask"):
        raise ParameterError("executor", "one of {local, dask}", executor)
    if isinstance(workers, bool) or not isinstance(workers, int) or workers < 1:
        raise ParameterError("workers", "an integer >= 1", workers)
    if executor == "dask" and client is None:
        if not scheduler and not dask_local:
            raise ParameterError("executor dask", "used with a scheduler address or dask_local >= 1", "neither")
        if not _has_pending(sweep, retry_failed):
            return run_sweep(sweep, executor="local", retry_failed=retry_failed, progress=progress)
        # connect first: an unreachable scheduler is an error before any store is created
        with dask_client(scheduler, dask_local, dask_processes) as c:
            return run_sweep(sweep, executor="dask", retry_failed=retry_failed, progress=progress, client=c)
    with Store(sweep.db_path) as store:
        todo = pending_tasks(sweep, store, retry_failed)
        by_key = {t["key"]: t for t in todo}
        counts: dict[str, Any] = {"ran": 0, "done": 0, "failed": 0, "skipped": len(sweep.tasks) - len(todo),
                                  "claimed_elsewhere": 0, "failed_keys": []}
        if not todo:
            return counts
        left: list = []
        mine = claimed(todo, store, retry_failed, left)
        with _progress(progress, len(todo), sweep.name) as tick:
            if executor == "local":
                _consume(run_local(mine, workers, initializer), store, by_key, counts, tick)
            else:
                batch = list(mine)        # Dask gets everything at once: claim it all first
                _consume(run_dask(batch, client), store, by_key, counts, tick)
            if left:
                _follow_others(left, store, by_key, counts, tick, workers if executor == "local" else 1,
                               initializer, retry_failed)
        counts["claimed_elsewhere"] = len(left)
    return counts


def _follow_others(left: list, store: Store, by_key: dict, counts: dict, tick, workers: int,
                   initializer: Callable[[], None] | None, retry_failed: bool, poll_s: float = 0.2) -> None:
    """Tasks another live runner was computing when this one reached them: wait until each has a result, taking
    over (claiming and running here) any whose runner is gone. So a runner returns only when every task it
    was asked to run has a result (exit 0 of ``sweep run`` means the whole file is done), except tasks claimed
    by a runner on another host, which cannot be checked for life and are left to it."""
    import time
    waiting = list(left)
    while waiting:
        st, cl = store.statuses(), store.claims()
        # a claim from another host cannot be checked for life: its task is left to that runner
        waiting = [t for t in waiting if t["key"] not in st and cl.get(t["key"], {}).get("host", store.host) == store.host]
        mine = list(claimed(waiting, store, retry_failed, []))     # a claim is taken over when its runner is gone
        if mine:
            _consume(run_local(mine, workers, initializer), store, by_key, counts, tick)
        elif waiting:
            time.sleep(poll_s)


def _has_pending(sweep: Sweep, retry_failed: bool) -> bool:
    if not sweep.db_path.exists() or sweep.db_path.stat().st_size == 0:
        return bool(sweep.tasks)
    with Store(sweep.db_path, read_only=True) as store:
        st = store.statuses()
    return any(t["key"] not in st or (retry_failed and st[t["key"]] == "failed") for t in sweep.tasks)


def _consume(outcomes: Iterable[Outcome], store: Store, by_key: dict, counts: dict, tick) -> None:
    for out in outcomes:
        store.write(by_key[out["key"]], out)
        counts["ran"] += 1
        counts[out["status"]] += 1
        if out["status"] == "failed":
            counts["failed_keys"].append(out["key"])
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
    """Counts over the tasks of the sweep file: done / failed / pending / running (claimed by a live
    runner), and rows not in the file. Reads the store read-only; never creates one."""
    st: dict[str, str] = {}
    cl: dict[str, dict] = {}
    if sweep.db_path.exists():
        with Store(sweep.db_path, read_only=True) as store:
            st = store.statuses()
            cl = store.claims()
    keys = set(sweep.keys)
    done = sum(1 for k in keys if st.get(k) == "done")
    failed = sum(1 for k in keys if st.get(k) == "failed")
    running = sum(1 for k in keys if k not in st and cl.get(k, {}).get("alive"))
    return {"total": len(keys), "done": done, "failed": failed, "pending": len(keys) - done - failed,
            "running": running, "other_rows": len(set(st) - keys)}
