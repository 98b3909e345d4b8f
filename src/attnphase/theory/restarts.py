"""Retries and restarts of the QMC engine (MODEL.md §8): a point that failed from its default start is solved
again from the next start (:func:`other_starts`); a scramble that failed where its point's other scrambles
converged restarts from their mean (:func:`restart_failed`, part of the safeguard)."""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np

from ..model import ModelParams
from . import fixed_point, resolution, starts
from .qmc_config import QMCConfig
from .scrambles import aligned_mean
from .starts import start_vector
from .status import Status


RETRY = (Status.MAX_STEPS, Status.INVALID_STATE, Status.DIVERGED)
"""Statuses after which a point solved from its default start is solved again from the next of
:func:`starts.start_candidates` (the other statuses are verdicts: converged, not_significant, collapsed)."""


def other_starts(job, free: list[int], sols: list, xs: np.ndarray, hist: tuple, cfg: QMCConfig,
                  progress=None):
    """Points of ``free`` (solved from the default start) whose solve failed (``RETRY``) go through the next
    start of :func:`starts.start_candidates` (one batch per start); a retry's result replaces the first only
    if it is not a failure itself. ``iteration["start"]`` records the start of every returned point.
    ``progress``: a ``"start"`` report before each batch."""
    sols = [replace(s, iteration={**(s.iteration or {}), "start": "model" if i in free else "given"})
            for i, s in enumerate(sols)]
    S = cfg.scrambles
    dX, dF = list(hist[0]), list(hist[1])
    for n in range(1, 4):
        todo, x0, names = [], [], []
        for i in free:
            if sols[i].status not in RETRY:
                continue
            p = job.point_params(i)
            cand = starts.start_candidates(p, job.branch, float(job.al[i]))
            if n < len(cand):
                todo.append(i)
                names.append(cand[n][0])
                x0.append(start_vector(cand[n][1]))
        if not todo:
            break
        if progress is not None:
            progress(resolution.Progress("start", cfg.points, cfg.scrambles, math.nan, cfg.target, note=(
                f"{len(todo)} point(s) failed: solving again from start {n + 1} ({', '.join(sorted(set(names)))})")))
        new, nx, nh = job.run(np.asarray(todo), np.repeat(np.stack(x0)[:, None, :], S, axis=1), cfg, cfg.stages)
        for j, i in enumerate(todo):
            if new[j].status in RETRY:
                continue
            sols[i] = replace(new[j], iteration={**new[j].iteration, "start": names[j]})
            xs[i] = nx[j]
            dX[i * S:(i + 1) * S], dF[i * S:(i + 1) * S] = nh[0][j * S:(j + 1) * S], nh[1][j * S:(j + 1) * S]
    return sols, xs, (dX, dF)


def restart_failed(run: fixed_point.Run, F, residual, admissible, S: int, params: ModelParams,
                    job) -> fixed_point.Run:
    """Part of the safeguard (``backtrack``): a scramble whose iteration failed (invalid state, diverged,
    max_steps) while other scrambles of the same point converged restarts ONCE from the mean of those (aligned
    to one gauge, :func:`aligned_scrambles`; the same map up to QMC noise, so their fixed point is the best
    start there is), at the lowest damping they used; certified on the full map as always. Measured: the free
    r = 2 point at α = 2.3 on 1024 × 4 points, where one scramble ran out of halvings from the default start
    (docs/notes/2026-12-05-theory-general.md, "Rank 2 on the defaults"). The restart's evaluations add to the row's count;
    ``run.restarted`` marks the rows. Returns ``run`` updated in place."""
    conv = np.array([st is Status.CONVERGED for st in run.status])
    run.restarted = np.zeros(len(conv), bool)
    rows, starts, damps = [], [], []
    for j in range(len(conv) // S):
        sl = slice(j * S, (j + 1) * S)
        if conv[sl].any() and not conv[sl].all():
            good = run.x[sl][conv[sl]]
            start = aligned_mean(good, params)[0]
            d0 = float(np.min(run.damping[sl][conv[sl]]))
            for i in np.nonzero(~conv[sl])[0] + j * S:
                rows.append(i)
                starts.append(start)
                damps.append(d0)
    if not rows:
        return run
    rows = np.asarray(rows)
    sub = fixed_point.iterate(lambda Xa, idx, full: F(Xa, rows[idx], full), np.stack(starts),
                              lambda X, Y: residual(X, Y, rows), rtol=job.rtol, max_steps=job.max_steps,
                              damping=np.asarray(damps), anderson=job.anderson,
                              admissible=lambda v, i: admissible(v, rows[i]), compact=True,
                              full_every=job.full_prox_every, certify=True, backtrack=job.backtrack,
                              jump_rtol=job.jump_rtol)
    run.x[rows], run.status[rows], run.residual[rows] = sub.x, sub.status, sub.residual
    if run.at_jump is not None and sub.at_jump is not None:
        run.at_jump[rows] = sub.at_jump
    run.iterations[rows] += sub.iterations
    run.full_calls[rows] += sub.full_calls
    run.damping[rows], run.halvings[rows] = sub.damping, run.halvings[rows] + sub.halvings
    for key, v in sub.aux.items():
        run.aux[key][rows] = v
    for i, row in enumerate(rows):
        run.history[0][row], run.history[1][row] = sub.history[0][i], sub.history[1][i]
    run.restarted[rows] = True
    return run
