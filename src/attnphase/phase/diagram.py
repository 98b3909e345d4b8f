"""The (α, ω) phase diagram (MODEL.md §6 "Transition"): both pinned branches on a grid, by continuation in α
within each ω and across ω from the previous ω's solutions (one engine: :mod:`.continuation`).

Speed (docs/notes/benchmarks-log.md, "40 × 40 diagram"): the ω columns are split into ``workers`` interleaved chains
(chain k holds ω_k, ω_{k+n}, …, each column guided by its chain's previous ω) run in worker processes with one
BLAS/XLA thread each; the growth factor of the pinned direction is evaluated only where it can make a point
``unstable`` (``stability_margin``)."""

from __future__ import annotations

import os
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Callable, Sequence

import numpy as np

from ..errors import ParameterError
from ..model import ModelParams
from .continuation import MAX_STEPS, PointSolver, default_solver, follow_branch
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


def phase_diagram(params: ModelParams, omegas: Sequence[float] = DEFAULT_OMEGAS,
                  alphas: Sequence[float] = DEFAULT_ALPHAS, *, nodes: int | None = DIAGRAM_NODES,
                  progress: Callable[[float, str, int, int], None] | None = None, refine: bool = False,
                  xtol: float = 1e-3, max_steps: int = MAX_STEPS, min_step: float | None = None,
                  reuse: dict[float, dict[str, object]] | None = None, solver: PointSolver | None = None,
                  workers: int | None = None, stability_margin: float | None = STABILITY_MARGIN,
                  qmc_config: Any = None):
    """Tidy (α, ω) phase diagram.

    Returns ``(grid, lines)``: ``grid`` one row per (ω, α) (:data:`GRID_COLUMNS`; ``state_sem``/``state_pos``
    are :class:`~attnphase.phase.continuation.PointState` values — a cell beyond a branch's end carries the
    end's kind, ``not converged`` only where the solver failed; saddles past an ``unstable`` end are not
    solved, they are not used); ``lines`` one row per ω with alpha_c, alpha_l
    (grid interpolation, or Brent to ``xtol`` with ``refine``), their bounds (``"> 2"``) and reasons, and both
    branches' ends. ``min_step``: resolution of the ends (default: a quarter of the α spacing). ``reuse``:
    ω → {branch: :class:`~.continuation.Branch`} already computed on the same α grid (e.g.
    ``transition(...).branches``).
    ``workers``: number of worker processes (interleaved ω chains, module docstring); None: 2 when there are
    at least 8 ω, the default solver and 2 CPUs, else 1 (in this process, ω in increasing order). The workers
    are spawned (they import the calling script again): a script that calls this with more than one worker
    needs the usual ``if __name__ == "__main__":`` guard.
    ``stability_margin``: see :func:`~.continuation.follow_branch` (None: the growth factor at every point).
    ``progress(ω, branch, done, total)``: per α in this process, per finished column with workers.
    ``qmc_config``: the QMC engine's size where the model is not the split rule's (default
    :func:`~.continuation.phase_qmc`); the default ``solver`` is :func:`~.continuation.default_solver`.
    """
    import pandas as pd

    omegas = sorted(float(w) for w in omegas)
    for w in omegas:
        if not 0.0 <= w <= 1.0:
            raise ParameterError("omegas", "values in [0, 1]", w)
    grid_a = np.array(sorted(float(a) for a in alphas))
    if grid_a.size < 2 or (grid_a <= 0).any() or not np.isfinite(grid_a).all():
        raise ParameterError("alphas", "at least two finite values > 0", list(grid_a))
    if workers is None:
        workers = 2 if (solver is None and len(omegas) >= 8 and (os.cpu_count() or 1) >= 2) else 1
    if not (isinstance(workers, int) and workers >= 1):
        raise ParameterError("workers", "an integer >= 1", workers)
    workers = min(workers, len(omegas))
    if solver is None and qmc_config is not None:
        solver = default_solver(params, qmc_config)
    cfg = _Settings(params, tuple(float(a) for a in grid_a), nodes, bool(refine), xtol, max_steps,
                    0.25 * float(np.min(np.diff(grid_a))) if min_step is None else min_step,
                    solver, stability_margin)
    chains = [omegas[k::workers] for k in range(workers)]
    if workers == 1:
        results = _run_chain(cfg, omegas, reuse or {}, progress)
    else:
        results = _run_parallel(cfg, chains, reuse or {}, progress)
    results.sort(key=lambda r: r[1]["omega"])
    for frame, row in results:
        row["workers"] = workers
    grid = pd.concat([f for f, _ in results], ignore_index=True)[GRID_COLUMNS]
    return grid, pd.DataFrame([r for _, r in results])


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
    """Interleaved chains in worker processes (spawned: the parent has JAX loaded). A chain's next column is
    sent when its previous one is back, with that column's valid points as guides."""
    import multiprocessing as mp
    from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait

    n_a = len(cfg.grid_a)
    out = []
    with _one_thread_env():
        pool = ProcessPoolExecutor(max_workers=len(chains), mp_context=mp.get_context("spawn"))
    with pool:
        running = {}
        for k, chain in enumerate(chains):
            with _one_thread_env():
                running[pool.submit(_column, cfg, chain[0], {"semantic": {}, "positional": {}},
                                    reuse.get(chain[0]), None)] = (k, 0)
        while running:
            done, _ = wait(running, return_when=FIRST_COMPLETED)
            for fut in done:
                k, i = running.pop(fut)
                frame, row, guides = fut.result()
                out.append((frame, row))
                if progress:
                    for b in ("semantic", "positional"):
                        progress(row["omega"], b, n_a, n_a)
                if i + 1 < len(chains[k]):
                    w = chains[k][i + 1]
                    running[pool.submit(_column, cfg, w, guides, reuse.get(w), None)] = (k, i + 1)
    return out


def _column(cfg: _Settings, w: float, guides: dict, have: dict | None, progress):
    """One ω: both branches followed over the α grid (guided by ``guides``, the previous ω's valid points),
    α_c, α_l and the ends. Returns ``(grid rows, line row, guides for the next ω)``."""
    from ..theory import eps_lin as _eps_lin

    grid_a = np.array(cfg.grid_a)
    p = cfg.params.replace(omega=w)
    solver = _Counting(cfg.solver or default_solver(p))
    branches = {}
    for b in ("semantic", "positional"):
        order = list(grid_a[::-1]) if b == "semantic" else list(grid_a)
        br = (have or {}).get(b)
        if br is not None and {round(x.alpha, 9) for x in br} >= {round(a, 9) for a in order}:
            branches[b] = br
            if progress:
                progress(w, b, len(order), len(order))
            continue
        cb = (lambda i, b=b: progress(w, b, i + 1, len(grid_a))) if progress else None
        branches[b] = follow_branch(p, order, b, nodes=cfg.nodes, guide=guides[b] or None, progress=cb,
                                    max_steps=cfg.max_steps, min_step=cfg.min_step, solver=solver,
                                    saddles=False, stability_margin=cfg.stability_margin)
    new_guides = {b: {round(x.alpha, 9): x.solution for x in branches[b].valid()} for b in branches}
    el = float(_eps_lin(p))
    sem, pos, g, a_c, a_l = tables(branches, el)
    g = g[g["alpha"].round(9).isin(np.round(grid_a, 9))]
    lo, hi = float(grid_a[0]), float(grid_a[-1])
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
               iterations=solver.iterations, stability_evaluations=solver.stability,
               refined=bool(cfg.refine), nodes=cfg.nodes, stability_margin=cfg.stability_margin)
    return g, row, new_guides


class _Counting:
    """The point solver, counting map iterations and growth-factor evaluations (the cost of a column)."""

    def __init__(self, solve):
        self.solve, self.iterations, self.stability = solve, 0, 0

    def __call__(self, params, alpha, branch, **kw):
        s = self.solve(params, alpha, branch, **kw)
        self.iterations += int(getattr(s, "iterations", 0) or 0)
        self.stability += int(getattr(s, "stability", None) is not None)
        return s


def _alpha(end) -> str:
    return "" if end is None else f"{end.alpha:.4g} ({end.kind.value})"
