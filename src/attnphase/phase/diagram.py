"""The (α, ω) phase diagram (MODEL.md §6 "Transition"): both pinned branches on a grid, by continuation in α
within each ω and across ω from the previous ω's solutions (one engine: :mod:`.continuation`).

Speed (docs/notes/benchmarks-log.md, "40 × 40 diagram"): the ω columns are split into ``workers`` interleaved chains
(chain k holds ω_k, ω_{k+n}, …, each column guided by its chain's previous ω) run in worker processes with one
BLAS/XLA thread each; the growth factor of the pinned direction is evaluated only where it can make a point
``unstable`` (``stability_margin``). With ``lockstep`` (:mod:`.diagram_batch`) the chains of a process and both
branches of each column run at once, their split-rule map evaluations batched into one compiled call (the
issue-34 path for an accelerator; on the 2-core CPU it is no faster, docs/benchmarks.md)."""

from __future__ import annotations

import os
import threading
from contextlib import contextmanager
from dataclasses import dataclass
from functools import partial
from typing import Any, Callable, Sequence

import numpy as np

from ..errors import ParameterError
from ..interrupts import critical
from ..model import ModelParams
from .continuation import MAX_STEPS, PointSolver, default_solver, follow_branch
from .diagram_batch import run_jobs
from .diagram_resolution import coarse_states, resolution_check as check_resolution, skip_reason
from .refine import refine_lines
from .result import reasons
from .transition import DIAGRAM_NODES, tables

DEFAULT_OMEGAS = tuple(np.round(np.linspace(0.02, 0.5, 40), 6))
"""The paper's ω range at ≥ 40 values."""
DEFAULT_ALPHAS = tuple(np.round(np.linspace(0.05, 2.0, 40), 6))
"""The paper's α range at 40 values."""

GRID_COLUMNS = ["omega", "alpha", "e_t_sem", "e_t_pos", "delta_e_t", "eps_g_global", "eps_lin",
                "eps_lin_minus_eps_g", "global_branch", "eps_g_sem", "eps_g_pos", "kind_pos", "state_sem",
                "state_pos"]


STABILITY_MARGIN = 0.4
"""Default ``stability_margin`` of the diagram (:func:`attnphase.phase.continuation._skip_stability`)."""

_THREAD_VARS = {"OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1", "MKL_NUM_THREADS": "1",
                "XLA_FLAGS": "--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1"}


@dataclass(frozen=True)
class _Settings:
    """What every column needs besides its ω and guides (picklable, sent to the workers)."""

    params: ModelParams
    grid_a: tuple[float, ...]
    nodes: int | None
    refine: bool
    xtol: float
    max_steps: int
    min_step: float
    solver: Any
    stability_margin: float | None
    lockstep: bool = False


def phase_diagram(params: ModelParams, omegas: Sequence[float] = DEFAULT_OMEGAS,
                  alphas: Sequence[float] = DEFAULT_ALPHAS, *, nodes: int | None = DIAGRAM_NODES,
                  progress: Callable[[float, str, int, int], None] | None = None, refine: bool = False,
                  xtol: float = 1e-3, max_steps: int = MAX_STEPS, min_step: float | None = None,
                  reuse: dict[float, dict[str, object]] | None = None, solver: PointSolver | None = None,
                  workers: int | None = None, stability_margin: float | None = STABILITY_MARGIN,
                  qmc_config: Any = None, lockstep: bool | None = None, chains: int | None = None,
                  resolution_check: bool | None = None):
    """Tidy (α, ω) phase diagram.

    Returns ``(grid, lines)``: ``grid`` one row per (ω, α) (:data:`GRID_COLUMNS`; ``state_sem``/``state_pos``
    are :class:`~attnphase.phase.continuation.PointState` values — a cell beyond a branch's end carries the
    end's kind, ``not converged`` only where the solver failed; saddles past an ``unstable`` end are not
    solved, they are not used); ``lines`` one row per ω with alpha_c, alpha_l
    (grid interpolation, or Brent to ``xtol`` with ``refine``), their bounds (``"> 2"``) and reasons, and both
    branches' ends. ``min_step``: resolution of the ends (default: a quarter of the α spacing). ``reuse``:
    ω → {branch: :class:`~.continuation.Branch`} already computed on the same α grid (e.g.
    ``transition(...).branches``).
    ``workers``: number of worker processes; None: 2 when there are at least 8 ω, the default solver and 2
    CPUs, else 1 (in this process). ``chains``: number of interleaved ω chains (chain k holds ω_k, ω_{k+n}, …,
    each column guided by its chain's previous ω; module docstring); None: ``workers`` (1: ω in increasing
    order), or 2 for ≥ 8 ω with the lockstep by default (then in one process: the default grid's guides). Without lockstep each worker runs one chain at a time (``chains`` > ``workers`` is refused); with
    ``lockstep`` (:mod:`.diagram_batch`) worker k runs the chains k, k + workers, … together, both branches of
    each, their map evaluations batched into one compiled call — the same cells, states and values (the chains
    decide the guides, not the workers). None: lockstep where JAX's default backend is not the CPU (on the
    2-core CPU the batched map is no cheaper per cell: docs/benchmarks.md). The workers are spawned (they
    import the calling script again): a script that calls this with more than one worker needs the usual
    ``if __name__ == "__main__":`` guard.
    ``stability_margin``: see :func:`~.continuation.follow_branch` (None: the growth factor at every point).
    ``progress(ω, branch, done, total)``: per α in this process, per finished column with workers.
    ``qmc_config``: the QMC engine's size where the model is not the split rule's (default
    :func:`~.continuation.phase_qmc`); the default ``solver`` is :func:`~.continuation.default_solver`.
    ``resolution_check``: the cells deciding α_c, α_l at a few ω solved again at nodes = 8
    (:mod:`.diagram_resolution`; None: except at the validated defaults, True: always, False: never); its record
    is ``lines.attrs["resolution_check"]``.
    """
    import pandas as pd

    omegas = sorted(float(w) for w in omegas)
    for w in omegas:
        if not 0.0 <= w <= 1.0:
            raise ParameterError("omegas", "values in [0, 1]", w)
    grid_a = np.array(sorted(float(a) for a in alphas))
    if grid_a.size < 2 or (grid_a <= 0).any() or not np.isfinite(grid_a).all():
        raise ParameterError("alphas", "at least two finite values > 0", list(grid_a))
    if lockstep is None:
        lockstep = solver is None and _accelerator()
    many = solver is None and len(omegas) >= 8
    if workers is None and lockstep:     # one process feeding the device, the default grid's 2 chains
        workers, chains = 1, (2 if many else 1) if chains is None else chains
    if workers is None:
        workers = 2 if (many and (os.cpu_count() or 1) >= 2) else 1
    if not (isinstance(workers, int) and workers >= 1):
        raise ParameterError("workers", "an integer >= 1", workers)
    chains = workers if chains is None else chains
    if not (isinstance(chains, int) and chains >= 1):
        raise ParameterError("chains", "an integer >= 1", chains)
    if chains < workers or (chains > workers and not lockstep):
        raise ParameterError("chains", f"an integer >= workers = {workers} (more only with lockstep)", chains)
    chains = min(chains, len(omegas))
    workers = min(workers, chains)
    if solver is None and qmc_config is not None:
        solver = default_solver(params, qmc_config)
    cfg = _Settings(params, tuple(float(a) for a in grid_a), nodes, bool(refine), xtol, max_steps,
                    0.25 * float(np.min(np.diff(grid_a))) if min_step is None else min_step,
                    solver, stability_margin, bool(lockstep))
    chain_list = [omegas[k::chains] for k in range(chains)]
    if lockstep:
        results = _run_lockstep(cfg, chain_list, workers, reuse or {}, progress)
    elif workers == 1:
        results = _run_chain(cfg, omegas, reuse or {}, progress)
    else:
        results = _run_parallel(cfg, chain_list, reuse or {}, progress)
    results.sort(key=lambda r: r[1]["omega"])
    for frame, row in results:
        row["workers"] = workers
        row["chains"] = chains
        row["lockstep"] = bool(lockstep)
    states = {r["omega"]: r.pop("coarse_states") for _, r in results}
    grid = pd.concat([f for f, _ in results], ignore_index=True)[GRID_COLUMNS]
    lines = pd.DataFrame([r for _, r in results])
    why = skip_reason(params, nodes, solver, resolution_check)
    lines.attrs["resolution_check"] = dict(skipped=why) if why else check_resolution(
        params, grid, lines, states, nodes=int(nodes), solver=solver)
    return grid, lines


def _accelerator() -> bool:
    import jax
    return jax.default_backend() != "cpu"


def _run_lockstep(cfg: _Settings, chains, workers: int, reuse, progress) -> list:
    """The chains in lockstep (:mod:`.diagram_batch`): in this process, or ``workers`` spawned processes each
    holding every ``workers``-th chain."""
    if workers == 1:
        return _lockstep_chains(cfg, chains, reuse, progress)
    import multiprocessing as mp
    from concurrent.futures import ProcessPoolExecutor

    with _one_thread_env():
        pool = ProcessPoolExecutor(max_workers=workers, mp_context=mp.get_context("spawn"))
    with pool:
        with critical():    # a submit may spawn a worker: an interrupt waits until it has its start data
            futs = [pool.submit(_lockstep_chains, cfg, chains[k::workers], reuse, None) for k in range(workers)]
        out = [r for f in futs for r in f.result()]
    if progress:
        for _, row in out:
            for b in ("semantic", "positional"):
                progress(row["omega"], b, len(cfg.grid_a), len(cfg.grid_a))
    return out


def _lockstep_chains(cfg: _Settings, chains, reuse, progress) -> list:
    """Every chain a thread, their columns' branches in one lockstep; the batching counts on each line row."""
    from .diagram_batch import run_lockstep
    res, counts = run_lockstep([lambda c=c: _run_chain(cfg, c, reuse, progress) for c in chains])
    out = [r for chain in res for r in chain]
    for _, row in out:
        row["batched_calls"], row["batched_requests"] = counts["calls"], counts["requests"]
    return out


def _run_chain(cfg: _Settings, omegas, reuse, progress) -> list:
    """Columns of one chain in this process, each guided by the previous one."""
    guides: dict[str, dict] = {"semantic": {}, "positional": {}}
    out = []
    for w in omegas:
        frame, row, guides = _column(cfg, w, guides, reuse.get(w), progress)
        out.append((frame, row))
    return out


@contextmanager
def _one_thread_env():
    """Environment of the worker processes (inherited at spawn): one BLAS / OpenMP / XLA thread each."""
    saved = {k: os.environ.get(k) for k in _THREAD_VARS}
    os.environ.update(_THREAD_VARS)
    try:
        yield
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def _run_parallel(cfg: _Settings, chains, reuse, progress) -> list:
    """Interleaved chains in worker processes (spawned: the parent has JAX loaded). Each column's two branches
    are separate jobs: a branch is guided only by the same branch at its chain's previous ω, so the
    ``2 × chains`` branch chains are sent as they become ready (a branch's next column when its previous one is
    back) and a worker that finishes early takes the other chain's work instead of idling at the end. Once
    both branches of a column are back, the column is put together (:func:`_assemble`, with ``refine`` its
    Brent solves) as one more job. What a branch is given (ω, guide) is fixed by the chains, not by which
    worker runs it or when: the results are those of :func:`_run_chain`."""
    import multiprocessing as mp
    from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait

    n_a = len(cfg.grid_a)
    out, back = [], {}
    with _one_thread_env():
        pool = ProcessPoolExecutor(max_workers=len(chains), mp_context=mp.get_context("spawn"))
    with pool:
        running = {}

        def send(key: tuple, fn, *args) -> None:
            with _one_thread_env(), critical():   # a submit may spawn a worker (see _run_lockstep)
                running[pool.submit(fn, cfg, *args)] = key

        for k in range(len(chains)):
            for b in BRANCHES:
                send((k, 0, b), _branch_job, chains[k][0], b, {}, reuse.get(chains[k][0]))
        while running:
            done, _ = wait(running, return_when=FIRST_COMPLETED)
            for fut in sorted(done, key=lambda f: str(running[f])):
                k, i, b = running.pop(fut)
                if b is None:                      # a column put together
                    frame, row, _ = fut.result()
                    out.append((frame, row))
                    continue
                back[(k, i, b)] = fut.result()
                w = chains[k][i]
                if progress:
                    progress(w, b, n_a, n_a)
                if i + 1 < len(chains[k]):
                    nxt = chains[k][i + 1]
                    send((k, i + 1, b), _branch_job, nxt, b, _guide(back[(k, i, b)][0]), reuse.get(nxt))
                if all((k, i, x) in back for x in BRANCHES):
                    send((k, i, None), _assemble, w, *zip(*(back.pop((k, i, x)) for x in BRANCHES)))
    return out


def _column(cfg: _Settings, w: float, guides: dict, have: dict | None, progress):
    """One ω: both branches followed over the α grid (guided by ``guides``, the previous ω's valid points),
    α_c, α_l and the ends. Returns ``(grid rows, line row, guides for the next ω)``."""
    jobs = {b: partial(_branch_job, cfg, w, b, guides[b], (have or {}), progress) for b in BRANCHES}
    if cfg.lockstep:     # both branches at once, in the lockstep of this process's chains
        res = dict(zip(jobs, run_jobs(list(jobs.values()))))
    else:
        res = {b: job() for b, job in jobs.items()}
    return _assemble(cfg, w, *zip(*(res[b] for b in BRANCHES)))


BRANCHES = ("semantic", "positional")
"""The diagram's two pinned branches, in the order a column follows them."""


def _branch_job(cfg: _Settings, w: float, b: str, guide: dict, have: dict | None, progress=None):
    """Branch ``b`` at ``ω = w`` over the α grid (descending for the semantic branch, ascending for the
    positional one), guided by ``guide`` (the previous ω's valid points of ``b``); ``have``: branches already
    computed at ``w`` (used where they cover the grid). Returns ``(branch, map iterations, growth factors)``."""
    grid_a = np.array(cfg.grid_a)
    p = cfg.params.replace(omega=w)
    order = list(grid_a[::-1]) if b == "semantic" else list(grid_a)
    br = (have or {}).get(b)
    if br is not None and {round(x.alpha, 9) for x in br} >= {round(a, 9) for a in order}:
        if progress:
            progress(w, b, len(order), len(order))
        return br, 0, 0
    solver = _Counting(cfg.solver or default_solver(p))
    cb = (lambda i: progress(w, b, i + 1, len(grid_a))) if progress else None
    br = follow_branch(p, order, b, nodes=cfg.nodes, guide=guide or None, progress=cb, max_steps=cfg.max_steps,
                       min_step=cfg.min_step, solver=solver, saddles=False, stability_margin=cfg.stability_margin)
    return br, solver.iterations, solver.stability


def _guide(branch) -> dict:
    """The next ω's guide from a followed branch: its valid points by ``round(α, 9)``."""
    return {round(x.alpha, 9): x.solution for x in branch.valid()}


def _assemble(cfg: _Settings, w: float, followed, iterations, stability):
    """The column at ``ω = w`` from its two followed branches (in :data:`BRANCHES` order) and their counts:
    ``(grid rows, line row, guides for the next ω)`` — α_c, α_l and the ends."""
    from ..theory import eps_lin as _eps_lin

    grid_a = np.array(cfg.grid_a)
    p = cfg.params.replace(omega=w)
    branches = dict(zip(BRANCHES, followed))
    new_guides = {b: _guide(branches[b]) for b in branches}
    el = float(_eps_lin(p))
    sem, pos, g, a_c, a_l = tables(branches, el)
    g = g[g["alpha"].round(9).isin(np.round(grid_a, 9))]
    lo, hi = float(grid_a[0]), float(grid_a[-1])
    solver = _Counting(cfg.solver or default_solver(p))     # the refinement's solves, counted on the row
    if cfg.refine and (a_c is not None or a_l is not None):
        step = min(0.25 * float(np.min(np.diff(grid_a))), max(0.005, 20 * cfg.xtol))
        a_c, a_l, _, _ = refine_lines(p, branches, g, a_c, a_l, "positional", cfg.nodes, lo, hi, cfg.xtol, step, [],
                                 solver)
    c_bound, c_reason, l_bound, l_reason = reasons(g, branches, a_c, a_l, lo, hi, lo, hi)
    g = g.merge(sem[["alpha", "state"]].rename(columns={"state": "state_sem"}), on="alpha", how="left")
    g = g.merge(pos[["alpha", "state"]].rename(columns={"state": "state_pos"}), on="alpha", how="left")
    g.insert(0, "omega", w)
    ends = {b: branches[b].end for b in branches}
    row = dict(omega=w, alpha_c=a_c, alpha_c_bound=c_bound, alpha_c_reason=c_reason, alpha_l=a_l,
               alpha_l_bound=l_bound, alpha_l_reason=l_reason, eps_lin=el,
               end_semantic=ends["semantic"].alpha if ends["semantic"] else None,
               end_semantic_kind=ends["semantic"].kind.value if ends["semantic"] else "",
               end_positional=ends["positional"].alpha if ends["positional"] else None,
               end_positional_kind=ends["positional"].kind.value if ends["positional"] else "",
               begin_semantic=_alpha(branches["semantic"].begin),
               begin_positional=_alpha(branches["positional"].begin),
               solves=sum(br.solves for br in branches.values()),
               iterations=sum(iterations) + solver.iterations,
               stability_evaluations=sum(stability) + solver.stability,
               refined=bool(cfg.refine), nodes=cfg.nodes, stability_margin=cfg.stability_margin)
    row["coarse_states"] = coarse_states(branches)
    return g, row, new_guides


class _Counting:
    """The point solver, counting map iterations and growth-factor evaluations (the cost of a column)."""

    def __init__(self, solve):
        self.solve, self.iterations, self.stability = solve, 0, 0
        self._lock = threading.Lock()     # the two branches may run at once (lockstep)

    def __call__(self, params, alpha, branch, **kw):
        s = self.solve(params, alpha, branch, **kw)
        with self._lock:
            self.iterations += int(getattr(s, "iterations", 0) or 0)
            self.stability += int(getattr(s, "stability", None) is not None)
        return s


def _alpha(end) -> str:
    return "" if end is None else f"{end.alpha:.4g} ({end.kind.value})"
