"""Branch ends of the QMC engine (MODEL.md §8): a failed semantic point followed DOWN in α from where the
branch exists (:func:`start_by_descent`); where the descent stops, the record of where the branch ends
(:func:`branch_end_record`)."""

from __future__ import annotations

import time
from dataclasses import replace

import numpy as np

from .ladder_starts import climb, ladder_base, ladder_points
from .job import Job
from .ladder import LADDER_FROM, Ladder
from .qmc_config import QMCConfig
from .restarts import RETRY
from .scrambles import aligned_mean
from .status import Status


DOWN_FACTOR = 1.5
""":func:`start_by_descent` follows a failed semantic point at α down from max(α × this, 2 ×
``LADDER_FROM``) (the model's starts are fitted at α ≤ 2; at r = 2, r* = 3 the full-signal start converges
at α = 4, 4.5)."""


DOWN_BRACKET_TOL = 1e-2
"""The descent stops once the branch's end is bracketed within this (relative: upper/lower − 1)."""


DOWN_MAX_STEPS = 24
"""Most steps of one descent (from α = 4 to 0.1 at ratio 1.5: 10; a bisection from ratio 1.5 to 1 %: 6)."""


DOWN_EXTEND_RESIDUAL = 1e-3
"""A descent step that ends ``max_steps`` with every residual below this iterates once more before it counts as
failed (:func:`extend_slow`; measured: 3.6e-5 at α = 3, which converges; beyond the end, at α = 2.75, 7e-3 –
1.3e-2)."""


DOWN_MAX_WALL = 1800.0
"""Most seconds the descents of one batch may take, all together (checked between steps)."""


def down_key(job: Job, i: int) -> tuple:
    """The model of point ``i`` (ω, σ, λ): points of one model share a descent (:func:`start_by_descent`)."""
    return (float(job.om[i]), float(job.sg[i]), float(job.lm[i]))


def down_top(job: Job, i: int) -> float:
    """Where the descent to point ``i`` starts when no point above it was reached: max(``DOWN_FACTOR`` × α, 4)."""
    return float(max(DOWN_FACTOR * job.al[i], 2.0 * LADDER_FROM))


def start_by_descent(job: Job, cold: list[int], sols: list, xs: np.ndarray, hist: tuple,
                            cfg: QMCConfig, progress=None):
    """Semantic points of ``cold`` that still failed (``RETRY``) after the other starts, at α ≤
    ``LADDER_FROM`` or where the upward continuation (:func:`start_by_alpha_ladder`) found no point at its start:
    the semantic branch exists at large α and ends at a smaller one, so each is solved at max(``DOWN_FACTOR`` ×
    α, 2 × ``LADDER_FROM``) (:func:`ladder_base`, its own starts) and followed DOWN in α to the point
    (:func:`climb`, :class:`.ladder.Ladder` descending in bracket mode: after a failed step it bisects between
    the last success and the failure, never steps past a failure nor repeats one — the target once excepted —
    and stops at a bracket of ``DOWN_BRACKET_TOL``, or at ``DOWN_MAX_STEPS`` / ``DOWN_MAX_WALL``; every step on
    all ``cfg.points``, no coarse stage, and from the scrambles' mean state of the last step. Measured at r = 2,
    r* = 3: the step from α = 4 to 3.5 fails on one scramble at 1024 × 4 points; at 4096 × 4 the steps 4 → 3.5
    → 3 converge from the mean, while from each scramble's own state 3.614 → 3.266 and → 3.436 failed).

    Points of one model (:func:`down_key`) share the descent, largest α first: the next one continues from the
    last one reached, and once one stops short, the branch ends above every smaller α of that model, which
    get its bracket without a solve (a descent cannot help them). A point whose solve at its start fails is
    not followed (no descent: said in the note). Where the descent gets there, that is the solution
    (``iteration["start"]``: ``continuation from α = … (n steps)``); where it stops,
    ``iteration["branch_end"]`` = {``between``: [b, a] or None, ``from``, ``status`` (:class:`.ladder.LadderEnd`
    value), ``steps``, ``tried``, ``points``, ``scrambles``, ``note``} and ``iteration["continuation"]`` the
    note. Measured at r = 2, r* = 3, L = 2 (docs/notes/2026-12-05-theory-general.md, "A firmer `collapsed` …" and "The descent
    in α near a branch end"). ``progress``: every step (:func:`climb`)."""
    todo = [i for i in cold if job.branch == "semantic" and sols[i].status in RETRY
            and (job.al[i] <= LADDER_FROM or not (sols[i].iteration or {}).get("continuation_started", False))]
    if not todo:
        return sols, xs, hist
    pending: dict = {}
    for i in sorted(todo, key=lambda i: -job.al[i]):
        pending.setdefault(down_key(job, i), []).append(i)
    reached: dict = {}                 # model → (α, mean state) of its last point reached
    deadline = time.monotonic() + DOWN_MAX_WALL
    while pending:
        heads = {key: pts.pop(0) for key, pts in pending.items()}
        if time.monotonic() >= deadline:
            why = f"the descents' wall cap ({DOWN_MAX_WALL:g} s) was spent"
            for key in list(pending):
                for i in [heads[key]] + pending.pop(key):
                    sols[i] = with_end(sols[i], skipped_end(job, i, cfg, why))
            break
        sols, xs, hist, lads = descend(job, list(heads.values()), [reached.get(key) for key in heads], sols, xs,
                                        hist, cfg, deadline, progress)
        for (key, i), lad in zip(heads.items(), lads):
            if lad.reached:
                reached[key] = (float(job.al[i]), np.repeat(aligned_mean(xs[i], job.params), cfg.scrambles, 0))
                continue
            end = branch_end_record(lad, cfg)
            sols[i] = with_end(sols[i], end)
            why = f"the descent for α = {float(job.al[i]):g} stopped: {end['note']}"
            for i2 in list(pending[key]):  # started: the branch ends above (or a cap): every smaller α of the
                if lad.started or down_top(job, i2) == lad.origin:      # model; not: those from that start
                    pending[key].remove(i2)
                    sols[i2] = with_end(sols[i2], skipped_end(job, i2, cfg, why, end))
        pending = {key: pts for key, pts in pending.items() if pts}
    return sols, xs, hist


def descend(job: Job, todo: list[int], starts_at: list, sols: list, xs: np.ndarray, hist: tuple,
             cfg: QMCConfig, deadline: float, progress):
    """One round of :func:`start_by_descent`: each point of ``todo`` from ``starts_at[j]`` ((α, state)
    of a point reached above it) or, where None, from its own solve at max(``DOWN_FACTOR`` × α, 4); the
    ladders stop at ``deadline`` (``time.monotonic``). Returns (sols, xs, hist, ladders)."""
    sub = ladder_points(job, todo)
    full = replace(cfg, coarse=0, target=0.0)      # every step on all the points: the branch's end is soft
    origin = np.array([s[0] if s is not None else down_top(job, i) for s, i in zip(starts_at, todo)])
    ok = np.array([s is not None for s in starts_at])
    state = np.zeros((len(todo), cfg.scrambles, xs.shape[-1]))
    groups: dict = {}
    for j, a in enumerate(origin):
        if starts_at[j] is not None:
            state[j] = starts_at[j][1]
        else:
            groups.setdefault(float(a), []).append(j)
    for a, js in groups.items():
        g, st = ladder_base(sub(np.asarray(js), a), full, progress)
        for k_, j in enumerate(js):
            ok[j], state[j] = g[k_].status.ok, np.repeat(aligned_mean(st[k_], job.params),
                                                                         cfg.scrambles, 0)
    lads = [Ladder(float(job.al[i]), origin=float(origin[j]), started=bool(ok[j]), bracket_tol=DOWN_BRACKET_TOL,
                   max_steps=DOWN_MAX_STEPS, max_wall=deadline - time.monotonic()) for j, i in enumerate(todo)]
    sols, xs, hist = climb(sub, lads, todo, state, sols, xs, hist, cfg, low=full, from_mean=job.params,
                            progress=progress, extend=DOWN_EXTEND_RESIDUAL)
    return sols, xs, hist, lads


def branch_end_record(lad: Ladder, cfg: QMCConfig) -> dict:
    """``iteration["branch_end"]`` of a descent that did not reach its point (:func:`start_by_descent`)."""
    rec = {"between": None, "from": lad.origin, "status": lad.end.value, "steps": lad.steps,
           "tried": [list(t) for t in lad.tried], "failures": {f"{v:.6g}": w for v, w in lad.details.items()},
           "points": cfg.points, "scrambles": cfg.scrambles}
    size = f"{cfg.points} × {cfg.scrambles} QMC points"
    if not lad.started:
        return {**rec, "note": f"no semantic fixed point at α = {lad.origin:g} either (its own starts failed): "
                               "no descent"}
    end = lad.end
    cap = (f"step cap {lad.max_steps}" if end is Status.STEP_CAP else
           f"wall cap {lad.max_wall:.0f} s" if end is Status.WALL_CAP else None)
    if lad.failed is None:
        return {**rec, "note": f"continuation from α = {lad.origin:g} stopped at α = {lad.a:g} ({cap}, no step "
                               "failed)"}
    lo, hi = lad.bracket
    tail = f", {cap}: the bracket is wider than {DOWN_BRACKET_TOL:g}" if cap else ""
    if lad.failed in lad.partial:      # some scrambles still had a fixed point: the path broke, not the branch
        return {**rec, "between": [lo, hi], "partial": True,
                "note": (f"the continuation from α = {lad.origin:g} lost the semantic branch between α = {lo:.4g} "
                         f"and {hi:.4g}: at {lo:.4g} only some scrambles failed ({lad.details.get(lad.failed)}), "
                         f"so the branch may go on below; not an end of the branch ({size}{tail}; more QMC "
                         "points may carry the continuation further)")}
    return {**rec, "between": [lo, hi], "partial": False,
            "note": (f"the semantic branch, followed down from α = {lad.origin:g}, ends between α = {lo:.4g} and "
                     f"{hi:.4g} (no fixed point at {lo:.4g} from the one at {hi:.4g}, {size}{tail})")}


def skipped_end(job: Job, i: int, cfg: QMCConfig, why: str, end: dict | None = None) -> dict:
    """The ``branch_end`` of a point whose descent was not run: ``why``; ``end`` the record it inherits."""
    base = {"between": None, "from": None, "status": Status.NOT_TRIED.value, "steps": 0, "tried": [],
            "failures": {}, "points": cfg.points, "scrambles": cfg.scrambles} if end is None else {
                **end, "steps": 0, "tried": [], "failures": {}}
    return {**base, "status": Status.NOT_TRIED.value, "note": f"no descent for α = {float(job.al[i]):g}: {why}"}


def with_end(sol, end: dict):
    return replace(sol, iteration={**(sol.iteration or {}), "branch_end": end, "continuation": end["note"]})
