"""The general theory engine (MODEL.md §8): batched fixed points for any L, r, r*, A, P on JAX, with
randomized-QMC expectations, integration error bars from independent scrambles, and provenance.

``solve_batch(params, alphas, branch, omegas=…, sigmas=…, lams=…)`` solves a batch of points that share the
structure (L, r, r*, A, P) together: the map over the (point, scramble) rows is ONE jit-compiled, vmapped
function; rows that have converged (or failed) drop out and the active ones are padded to a power of two
(``bucket``), so a frozen point costs nothing. Two stages: converge on the first ``QMCConfig.coarse`` points,
then on all. float64 is requested explicitly (``jax.enable_x64`` around every computation, no global switch).
Each (point, scramble) is an independent fixed point on its own point set; a point's value is the mean over
its scrambles and ``*_err`` their standard error.

The engine is split into one module per concept; this module is the orchestration: :func:`solve_batch` runs
the solve (:func:`.batch.solve_core`) and then the verdicts that solve again (free verdict, pinned stability).
The names callers import from here are re-exported from their homes.
"""

from __future__ import annotations

from typing import Sequence

import jax

from ..model import ModelParams
from . import resolution
from .batch import as_batch, solve_core
from .branch_end import (DOWN_BRACKET_TOL, DOWN_EXTEND_RESIDUAL, DOWN_FACTOR, DOWN_MAX_STEPS, DOWN_MAX_WALL,
                         start_by_descent)
from .collapse import zero_q_record
from .ladder_starts import SCALE_RATIO, start_by_alpha_ladder, start_by_scale_ladder
from .free_verdict import apply as free_verdict_apply
from .general_solution import GeneralSolution
from .job import SCALARS, Job, admissible, collect
from .onset_hook import ZERO_FLOOR
from .qmc_config import COARSE_RTOL, DAMPING, FULL_PROX_EVERY, QMCConfig, default_damping
from .qmc_map import (BRANCHES, MAP_AXES, MAX_SAMPLES, MIN_BUCKET, PINNED, bucket, compiled_map, even_hats,
                      padded_rows, pin_hats, qmc_points, signal_rank, teacher_pin)
from .refine import refine
from .restarts import RETRY, other_starts, restart_failed
from .scrambles import aligned_mean, aligned_scrambles
from .significance import DEFINING, RESOLUTION_SHRINK, SIGNIFICANCE_K, SPREAD_LIMIT, overlap_significance
from .stability_general import with_stability
from .starts import default_init, start_vector
from .state import OrderParams

# the former private names, for tests outside tests/theory (test_exported_programs, test_precision) not yet moved
_compiled_map = compiled_map
_points = qmc_points

__all__ = ["solve_batch", "solve", "QMCConfig", "GeneralSolution", "BRANCHES", "SCALARS", "PINNED", "DEFINING",
           "FULL_PROX_EVERY", "SIGNIFICANCE_K", "SPREAD_LIMIT", "RESOLUTION_SHRINK", "COARSE_RTOL", "DAMPING",
           "SCALE_RATIO", "DOWN_FACTOR", "DOWN_BRACKET_TOL", "DOWN_MAX_STEPS", "DOWN_EXTEND_RESIDUAL",
           "DOWN_MAX_WALL", "ZERO_FLOOR", "MAX_SAMPLES", "MAP_AXES", "MIN_BUCKET", "RETRY", "default_init",
           "start_vector", "default_damping", "teacher_pin", "pin_hats", "signal_rank", "even_hats", "compiled_map",
           "bucket", "padded_rows", "qmc_points", "aligned_scrambles", "aligned_mean", "overlap_significance",
           "zero_q_record", "as_batch", "solve_core", "Job", "admissible", "collect", "other_starts",
           "restart_failed", "start_by_alpha_ladder", "start_by_scale_ladder", "start_by_descent", "refine"]


def solve_batch(params: ModelParams, alphas: Sequence[float] | float, branch: str = "semantic", *,
                omegas=None, sigmas=None, lams=None, init: OrderParams | Sequence[OrderParams] | None = None,
                qmc_config: QMCConfig | None = None, rtol: float = 1e-5, max_steps: int = 200,
                damping: float | None = None, anderson: int = 5,
                full_prox_every: int = FULL_PROX_EVERY,
                significance: float = SIGNIFICANCE_K, even: bool | None = None,
                backtrack: int | None = None, stability: bool = True, free_verdict: bool = True,
                symmetric: bool | None = None,
                progress: resolution.ProgressCallback | None = None) -> list[GeneralSolution]:
    """Solve the fixed point of MODEL.md §8 at a batch of points (α, ω, σ, λ) sharing (L, r, r*, A, P).

    ``omegas``, ``sigmas``, ``lams`` default to ``params``'; each may be one number or one per α. ``init``:
    one state for all points, or one per point (default :func:`default_init`, the model start at each point's
    ω, σ, λ, α; a point that fails from it — ``RETRY`` — is solved again from the reference start,
    :func:`other_starts`, and ``iteration["start"]`` says which start the result came from). Returns one
    :class:`GeneralSolution` per point, with its own status.

    ``qmc_config``: the integrator's size; default :meth:`QMCConfig.default` (4096 × 4, grown per point until
    the relative standard errors are below 5e-3/3, :mod:`.resolution`). A config with ``target = 0`` keeps
    its size.

    ``full_prox_every``: the QMC points are fixed during a stage, so most evaluations run ONE warm Newton per
    sample from its previous minimiser (:func:`prox_general.prox_warm`); the global multi-start prox runs on
    the first evaluation of each stage, at least every ``full_prox_every`` evaluations, and on the evaluation
    that certifies the fixed point (``fixed_point.iterate``: a point converges only on a full evaluation, so
    the returned point is a fixed point of the global-prox map). 1: every evaluation full (the scheme before).

    ``significance``: k of the test that a pinned branch's defining overlap is non-zero
    (:func:`overlap_significance`); a converged point that fails it is reported ``NOT_SIGNIFICANT`` (NaN
    values, the iterate in ``last``), never as a branch point. 0 switches the test off.

    ``even``: the reflection ansatz (:func:`even_hats`) — a pinned branch's fixed point is sought among the
    states even in the student directions its signal does not use. Default (None): on for pinned branches
    with such directions at r > 1 (r > rank of the signal), off otherwise; recorded in the provenance.

    ``damping``: weight of the new map value; default (None) :func:`default_damping` (0.6, lowered where the
    positional encodings are larger than the paper's).

    ``backtrack``: the safeguard of ``fixed_point.iterate`` — per row, up to this many halvings of the damping
    when an evaluation is invalid (back to the last valid iterate) or a mode oscillates with a growing
    residual; 0 switches it off; default (None): ``routing.default_backtrack`` (on at r > 1, off at r = 1).
    The damping in use at the end is in ``GeneralSolution.iteration``.

    ``stability``: on a pinned branch, the growth factor of the pinned direction at every converged point
    (:func:`stability_general.pinned_growth`, on the final QMC size; one batched map call) goes into
    ``GeneralSolution.stability``; a point that did not converge gets a record with ``stable = None`` and the
    reason; the free branch None (no pinned direction).

    ``free_verdict``: on the free branch, a point that ended ``max_steps`` or converged within reach of a
    pinned subspace is compared with that pinned branch at the same α on the same QMC points
    (:func:`free_verdict.apply`: one pinned solve per branch and size, with its stability); where the free
    iterate sits on a converged, stable pinned point and its pinned overlap is an integration artefact, the
    status is ``ON_PINNED`` (no values; the pinned point's values in ``verdict``); else the status stays, with
    the evidence in ``verdict``.

    ``symmetric``: on the positional branch (default None: on there, off elsewhere), M̂ is projected onto the
    subspace fixed by the token exchanges that fix every start's M (:func:`symmetry.stabiliser_projector`;
    none: no projection). The exact map keeps that subspace (it is equivariant), so its fixed points there
    are fixed points; the projection only removes the QMC noise across it. Needed where the positional
    branch leaves q = 0 along a degenerate direction (L = 3, A = 0.4 I + 0.2 J, P = I: M ⟂ (1, 1, 1), a
    plane in which the map is isotropic to order |M|⁵): without it every scramble drifted along the plane
    and λ = 0.09, α = 2 ended ``max_steps`` (docs/notes/2026-12-05-theory-general.md, "The engine next to a q = 0 onset").
    ``iteration["m_symmetry"]`` records the exchanges (None: no projection).

    ``progress``: called with a :class:`resolution.Progress` when the first size starts, whenever the error
    control starts a larger size, and at the end (the library prints nothing itself).
    """
    sols = solve_core(params, alphas, branch, omegas=omegas, sigmas=sigmas, lams=lams, init=init,
                      qmc_config=qmc_config, rtol=rtol, max_steps=max_steps, damping=damping, anderson=anderson,
                      full_prox_every=full_prox_every, significance=significance, even=even, backtrack=backtrack,
                      symmetric=symmetric, progress=progress)
    with jax.enable_x64(True):
        if free_verdict and branch == "free":
            sols = free_verdict_apply(sols, max_steps=max_steps, k_se=significance or SIGNIFICANCE_K)
        if stability and branch != "free":
            sols = with_stability(sols)
    if progress is not None:
        target = (QMCConfig.default() if qmc_config is None else qmc_config).target
        progress(resolution.final_progress(sols, target))
    return sols


def solve(params: ModelParams, alpha: float, branch: str = "semantic", **kw) -> GeneralSolution:
    """One point (a batch of one): see :func:`solve_batch`."""
    return solve_batch(params, [alpha], branch, **kw)[0]
