"""The QMC engine's solve of one batch (MODEL.md §8), the verdicts aside: :func:`solve_core` validates the
batch, iterates it (:class:`.job.Job`), gives failed points the other starts (:data:`START_STRATEGIES`: other
model starts, ladders from a solved neighbour) and grows the QMC size under error control.
:func:`.engine.solve_batch` adds the verdicts that call it (free verdict, pinned stability); nothing here calls
them."""

from __future__ import annotations

import math
from dataclasses import replace
from typing import Sequence

import jax
import numpy as np

from ..errors import ParameterError, check_int, check_range
from ..model import ModelParams
from . import resolution
from .branch_end import start_by_descent
from .ladder_starts import start_by_alpha_ladder, start_by_scale_ladder
from .general_solution import GeneralSolution
from .job import Job
from .qmc_config import FULL_PROX_EVERY, QMCConfig, default_damping
from .qmc_map import BRANCHES, signal_rank
from .refine import refine
from .restarts import other_starts
from .routing import default_backtrack
from .significance import SIGNIFICANCE_K
from .starts import default_init, start_vector
from .state import OrderParams, unflatten
from .symmetry import stabiliser_projector


START_STRATEGIES = (other_starts, start_by_scale_ladder, start_by_alpha_ladder, start_by_descent)
"""What a point that failed from the model's start (a cold start: no ``init``) tries next, in this order, each
``strategy(job, cold, sols, xs, hist, cfg, progress) -> (sols, xs, hist)`` acting only on the points still
failed: the other model starts (:mod:`.restarts`), ladders from a solved neighbour in the encodings' scale and
up in α (:mod:`.ladder_starts`), the descent from above in α (:mod:`.branch_end`, which records where the
semantic branch ends when it cannot get there). Starts of a point solve, not continuations of a branch (that
is ``phase.continuation.follow_branch``): a warm-started point (``init`` given) tries none of them."""


def as_batch(name, values, B):
    """``values`` (one number, or one per point) as an array of the batch's ``B`` points; ParameterError else."""
    a = np.atleast_1d(np.asarray(values, dtype=np.float64))
    if a.size == 1:
        a = np.full(B, a[0])
    if a.shape != (B,):
        raise ParameterError(name, f"a number or a sequence of {B} numbers (one per alpha)", values)
    return a


def solve_core(params: ModelParams, alphas: Sequence[float] | float, branch: str = "semantic", *,
               omegas=None, sigmas=None, lams=None, init: OrderParams | Sequence[OrderParams] | None = None,
               qmc_config: QMCConfig | None = None, rtol: float = 1e-5, max_steps: int = 200,
               damping: float | None = None, anderson: int = 5,
               full_prox_every: int = FULL_PROX_EVERY,
               significance: float = SIGNIFICANCE_K, even: bool | None = None,
               backtrack: int | None = None,
               symmetric: bool | None = None,
               progress: resolution.ProgressCallback | None = None) -> list[GeneralSolution]:
    """The fixed points of MODEL.md §8 at a batch of points sharing (L, r, r*, A, P), without the verdicts that
    solve again (the free verdict, the pinned stability: :func:`.engine.solve_batch` runs them after this):
    validation, the first solve, the :data:`START_STRATEGIES` for the points that failed from the model's starts
    and the error control. The arguments are :func:`.engine.solve_batch`'s; ``progress``
    gets every report but the final one."""
    if not isinstance(params, ModelParams):
        raise ParameterError("params", "a ModelParams", type(params).__name__)
    if branch not in BRANCHES:
        raise ParameterError("branch", f"one of {', '.join(BRANCHES)}", branch)
    qmc_config = QMCConfig.default() if qmc_config is None else qmc_config
    if not isinstance(qmc_config, QMCConfig):
        raise ParameterError("qmc_config", "a QMCConfig (or None for the default)", type(qmc_config).__name__)
    if qmc_config.max_points is None:
        qmc_config = replace(qmc_config, max_points=resolution.default_max_points(params.L, params.r))
    al = np.atleast_1d(np.asarray(alphas, dtype=np.float64))
    B = al.size
    for a in al:
        check_range("alpha", a, lo=0.0, lo_open=True)
    om = as_batch("omegas", params.omega if omegas is None else omegas, B)
    sg = as_batch("sigmas", params.sigma if sigmas is None else sigmas, B)
    lm = as_batch("lams", params.lam if lams is None else lams, B)
    for i in range(B):
        check_range("omega", om[i], lo=0.0, hi=1.0)
        check_range("sigma", sg[i], lo=0.0, lo_open=True)
        check_range("lam", lm[i], lo=0.0)
    full_prox_every = check_int("full_prox_every", full_prox_every, 1)
    backtrack = default_backtrack(params) if backtrack is None else check_int("backtrack", backtrack, 0)
    significance = check_range("significance", significance, lo=0.0)
    rho = signal_rank(branch, params.r, params.k, params.r_star)
    if even is None:
        even = rho is not None and params.r > max(rho, 1)
    elif even and (rho is None or params.r <= rho):
        raise ParameterError("even", "False for this branch and rank (no student direction free of signal)", even)
    S = qmc_config.scrambles
    inits = init if isinstance(init, (list, tuple)) and init and isinstance(init[0], OrderParams) else [init] * B
    if len(inits) != B:
        raise ParameterError("init", f"one OrderParams or {B} of them", len(inits))
    x0 = np.stack([start_vector(default_init(params.replace(omega=float(om[i]), sigma=float(sg[i]),
                                                            lam=float(lm[i])), branch, al[i])
                                if inits[i] is None else inits[i]) for i in range(B)])
    m_sym = None
    if symmetric or (symmetric is None and branch == "positional"):
        m_sym = stabiliser_projector(params, [unflatten(x, params.r, params.k, params.r_star).M for x in x0])
    auto_damping = damping is None
    damping = default_damping(params, branch) if auto_damping else check_range("damping", damping, lo=0.0,
                                                                             lo_open=True, hi=1.0)
    job = Job(params, branch, al, om, sg, lm, rtol, max_steps, damping, anderson, full_prox_every,
              significance, bool(even), backtrack, auto_damping=auto_damping,
              m_proj=None if m_sym is None else tuple(map(tuple, np.round(m_sym[0], 15).tolist())),
              m_fixed_by=None if m_sym is None else tuple(m_sym[1]))
    if progress is not None:
        progress(resolution.Progress("solve", qmc_config.points, qmc_config.scrambles, math.nan,
                                     qmc_config.target, points_pending=B))
    with jax.enable_x64(True):
        sols, xs, hist = job.run(np.arange(B), np.repeat(x0[:, None, :], S, axis=1), qmc_config,
                                 qmc_config.stages)
        cold = [i for i in range(B) if inits[i] is None]
        for strategy in START_STRATEGIES:
            sols, xs, hist = strategy(job, cold, sols, xs, hist, qmc_config, progress)
        if qmc_config.target > 0:
            sols = refine(job, sols, xs, hist, qmc_config, progress)
    return sols
